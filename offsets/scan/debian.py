"""Fetch Debian packages by name into the cache, without touching the system's apt setup.

Each (architecture, suite) pair gets its own apt state under the cache: a deb822 sources file
copied from the machine's own Debian entry, its own lists and its own archive cache. Packages are
unpacked with `dpkg-deb -x`; source packages with `dpkg-source -x`.
"""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from .. import atomic_write, children, data_cache
from ..cache_lock import serialized
from ..errors import FetchError
from ..progress import say

SUITES = ("bullseye", "bookworm", "trixie", "sid", "experimental")
#: The packages holding Debian's interpreter binaries of each config, and their files ({minor},
#: {multiarch}): the executable is linked statically, libpython serves embedders and extensions.
#: Debian ships no free-threaded interpreter (those tables are derived: docs/identity.md).
BINARIES = {
    "release": (("python{minor}-minimal", "usr/bin/python{minor}"),
                ("libpython{minor}", "usr/lib/{multiarch}/libpython{minor}.so.1.0")),
    "debug": (("python{minor}-dbg", "usr/bin/python{minor}d"),
              ("libpython{minor}-dbg", "usr/lib/{multiarch}/libpython{minor}d.so.1.0")),
}


def _debian_entry() -> dict:
    """The machine's own Debian archive entry (URIs, Signed-By), from its deb822 sources."""
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for stanza in path.read_text().split("\n\n"):
            fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
            uris = fields.get("URIs", "")
            if "/debian" in uris and "security" not in uris and "debian-security" not in fields.get("Suites", ""):
                return fields
    legacy = Path("/etc/apt/sources.list")
    if legacy.exists():
        m = re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)\s", legacy.read_text(), re.M)
        if m:
            return {"URIs": m.group(1)}
    raise FetchError("no Debian archive entry in /etc/apt/sources.list.d/*.sources; fetching Debian packages "
                     "needs a Debian machine (or put the inputs in place and pass their paths)")


def _apt(arch: str, suite: str) -> list[str]:
    """apt-get options for an isolated state for (arch, suite), created and updated on first use."""
    if suite not in SUITES:
        raise FetchError(f"unknown Debian suite {suite!r}; known: {', '.join(SUITES)}")
    if shutil.which("apt-get") is None:
        raise FetchError("apt-get is not installed: fetching Debian packages needs a Debian machine")
    root = data_cache.folder() / "apt" / f"{suite}-{arch}"
    opts = ["-oDir::Etc::SourceList=/dev/null", f"-oDir::Etc::SourceParts={root}/parts",
            f"-oDir::State::Lists={root}/lists", f"-oDir::Cache={root}/cache",
            f"-oAPT::Architecture={arch}", f"-oAPT::Architectures={arch}",
            # the host's own installed versions (say linux-libc-dev from bookworm-security) must not
            # become the candidate: only the suite's archive counts
            "-oDir::State::status=/dev/null",
            "-oAPT::Sandbox::User=root", "-qq"]
    stamp = root / "updated"
    if not stamp.exists():
        entry = _debian_entry()
        (root / "parts").mkdir(parents=True, exist_ok=True)
        (root / "lists/partial").mkdir(parents=True, exist_ok=True)
        (root / "cache/archives/partial").mkdir(parents=True, exist_ok=True)
        signed = f"Signed-By: {entry['Signed-By']}\n" if entry.get("Signed-By") else ""
        sources = f"Types: deb deb-src\nURIs: {entry['URIs']}\nSuites: {suite}\nComponents: main\n{signed}".encode()
        # replaced, never written in place: CI's cache holds the machine's files as hard links
        if not atomic_write.unchanged(root / "parts/x.sources", sources):
            atomic_write.replace(root / "parts/x.sources", sources, mode=0o644)
        say(f"apt-get update for {suite}/{arch}")
        _run(["apt-get", *opts, "update"], f"apt-get update for {suite}/{arch}")
        stamp.write_text("")
    return opts


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    proc = children.run(cmd, what, FetchError, cwd=cwd)
    if proc.returncode:
        lines = [l for l in (proc.stderr or proc.stdout).splitlines() if l.startswith("E:")] or \
            (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        raise FetchError(f"{what} failed: {lines[0] if lines else 'exit ' + str(proc.returncode)}")
    return proc.stdout


def _fetch(args: list[str], what: str, arch: str, suite: str, cwd: Path) -> str:
    """`apt-get ARGS` over the suite's private state; where it fails, the suite's lists are updated
    and it runs once more (lists fetched days ago name files sid has since replaced: a 404)."""
    try:
        return _run(["apt-get", *_apt(arch, suite), *args], what, cwd=cwd)
    except FetchError:
        (data_cache.folder() / "apt" / f"{suite}-{arch}" / "updated").unlink(missing_ok=True)
        return _run(["apt-get", *_apt(arch, suite), *args], what, cwd=cwd)


@serialized("debs/fetch")   # one process fills the download cache at a time
def download(packages: list[str], arch: str, suite: str) -> list[Path]:
    """Download the .deb files of `packages` (name or name=version) for `arch` from `suite`."""
    dest = data_cache.folder() / "debs" / f"{suite}-{arch}"
    dest.mkdir(parents=True, exist_ok=True)
    found = []
    for pkg in packages:
        name, _, version = pkg.partition("=")
        # apt-get download spells an epoch `1%3a`; a pinned version takes only its own file
        pattern = f"{name}_{version.replace(':', '%3a')}_*.deb" if version else f"{name}_*.deb"
        have = sorted(dest.glob(pattern))
        if not have:
            say(f"downloading {pkg} ({suite}/{arch})")
            _fetch(["download", pkg], f"downloading {pkg} for {arch} from {suite}", arch, suite, dest)
            have = sorted(dest.glob(pattern))
        if not have:
            raise FetchError(f"downloading {pkg} for {arch} from {suite} gave no .deb file")
        found.append(have[-1])
    return found


@serialized("debs/fetch")
def unpacked(packages: list[str], arch: str, suite: str) -> Path:
    """A directory where the .deb files of `packages` are unpacked together (a small sysroot)."""
    debs = download(packages, arch, suite)
    key = hashlib.sha256("\n".join(d.name for d in debs).encode()).hexdigest()[:16]
    root = data_cache.folder() / "roots" / f"{suite}-{arch}-{key}"
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for deb in debs:
            say(f"unpacking {deb.name}")
            _run(["dpkg-deb", "-x", str(deb), str(root)], f"unpacking {deb.name}")
        (root / ".complete").write_text("\n".join(d.name for d in debs) + "\n")
    return root


def _source_dsc(package: str, suite: str, version: str | None) -> Path:
    """The .dsc of source package `package` (at `version` if given), downloaded with its files."""
    dest = data_cache.folder() / "sources" / suite
    dest.mkdir(parents=True, exist_ok=True)
    spec = f"{package}={version}" if version else package
    prefix = f"{package}_{version.split(':')[-1]}." if version else f"{package}_"
    dscs = sorted(dest.glob(f"{prefix}*dsc"))
    if not dscs:
        say(f"downloading source package {spec} ({suite})")
        _fetch(["source", "--download-only", spec], f"downloading source {spec} from {suite}", "amd64", suite, dest)
        dscs = sorted(dest.glob(f"{prefix}*dsc"))
    if not dscs:
        raise FetchError(f"source {spec} from {suite}: no .dsc downloaded")
    return dscs[-1]


@serialized("debs/fetch")
def orig_tarball(package: str, suite: str, version: str) -> Path:
    """The pristine upstream tarball (`PACKAGE_UPSTREAM.orig.tar.*`) inside source package `package`=`version`."""
    dsc = _source_dsc(package, suite, version)
    upstream = version.split(":")[-1].rsplit("-", 1)[0]
    tarballs = sorted(dsc.parent.glob(f"{package}_{upstream}.orig.tar.*"))
    if not tarballs:
        raise FetchError(f"source {package}={version} from {suite} has no {package}_{upstream}.orig.tar.* file")
    return tarballs[0]


def _unpacked_from_dsc(tree: Path) -> bool:
    """Whether `tree` is a source package that `source` unpacked, not `orig`'s pristine tarball beside it."""
    try:
        return (tree / ".complete").read_text().strip().endswith(".dsc")
    except OSError:
        return False


@serialized("debs/fetch")
def source(package: str, suite: str, version: str | None = None) -> Path:
    """The unpacked Debian source package `package` (at `version` if given) from `suite`."""
    dest = data_cache.folder() / "sources" / suite
    dest.mkdir(parents=True, exist_ok=True)
    trees = sorted(p for p in dest.glob(f"{package}-*") if _unpacked_from_dsc(p))
    if version:
        upstream = version.split(":")[-1].rsplit("-", 1)[0]
        trees = [p for p in trees if p.name == f"{package}-{upstream}"]
    if trees:
        return trees[-1]
    dsc = _source_dsc(package, suite, version)
    upstream = dsc.name[len(package) + 1:-4].rsplit("-", 1)[0]
    tree = dest / f"{package}-{upstream}"
    shutil.rmtree(tree, ignore_errors=True)
    say(f"unpacking {dsc.name}")
    _run(["dpkg-source", "--no-check", "-x", dsc.name, tree.name], f"unpacking {dsc.name}", cwd=dest)
    (tree / ".complete").write_text(dsc.name + "\n")
    return tree


@serialized("debs/fetch")
def orig(package: str, suite: str, version: str) -> Path:
    """The pristine upstream sources inside Debian's source package `package` at `version`: its
    orig tarball unpacked as it is, without Debian's patches (python.org's release, byte for byte)."""
    tarball = orig_tarball(package, suite, version)
    upstream = version.split(":")[-1].rsplit("-", 1)[0]
    tree = tarball.parent / f"{package}-{upstream}-orig"
    if (tree / ".complete").exists():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    say(f"unpacking {tarball.name} (pristine, no Debian patches)")
    _run(["tar", "-xf", str(tarball), "-C", str(tree), "--strip-components=1"], f"unpacking {tarball.name}")
    (tree / ".complete").write_text(tarball.name + "\n")
    return tree
