"""offsets/scan/debian.py unpacks a download only on a cache miss, which a warm machine, and CI (its
cache holds the downloads and their unpacked trees, .ci/cache.py), never has. Here each unpacking
step runs in an empty cache that holds only the downloads and apt's indexes, linked from the
session's cache: `unpacked` (dpkg-deb -x), `source` (dpkg-source -x, Debian's patches applied) and
`orig` (tar, the pristine tarball inside the source package). Then once more: a hit unpacks nothing.

The truths: dpkg-deb's own listing of the package (`--contents`); and the trees the session's cache
serves, which the miss must give again file for file, byte for byte.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import fetched, missing_tool
from offsets import data_cache
from offsets.scan import debian
from offsets.tools import matrix


def tree(root: Path) -> dict:
    """relative path -> sha256 of a file's bytes, or `-> TARGET` of a link, for everything under `root`."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p)
            else:
                with open(p, "rb") as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()
    return out


def downloads_only(tmp_path: Path, monkeypatch, *rels: str) -> Path:
    """An empty cache, made the one offsets uses, with `rels` of the session's cache linked in
    (a folder: each of its files)."""
    session = data_cache.folder()
    cache = tmp_path / "cache"
    for rel in rels:
        src, dest = session / rel, cache / rel
        if src.is_dir():
            shutil.copytree(src, dest, copy_function=os.link, ignore=shutil.ignore_patterns("lock"))
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.link(src, dest)
    monkeypatch.setenv("OFFSETS_CACHE", str(cache))
    return cache


def complete_stamp(root: Path) -> tuple:
    st = os.stat(root / ".complete")
    return st.st_ino, st.st_mtime_ns


@pytest.mark.slow
def test_a_package_unpacked_on_a_miss_holds_what_dpkg_lists(tmp_path, monkeypatch):
    if shutil.which("dpkg-deb") is None:
        missing_tool("dpkg-deb", "apt-get install dpkg")
    pkg, arch, suite = ["libpython3.11-dev"], "amd64", "bookworm"
    served = fetched("libpython3.11-dev", debian.unpacked, pkg, arch, suite)
    (deb,) = debian.download(pkg, arch, suite)
    session = data_cache.folder()
    cache = downloads_only(tmp_path, monkeypatch, f"apt/{suite}-{arch}", str(deb.relative_to(session)))
    root = debian.unpacked(pkg, arch, suite)
    assert root.is_relative_to(cache) and (root / ".complete").is_file()
    listing = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True).stdout
    listed = {}
    for line in listing.splitlines():
        mode, name = line.split()[0], line.split(None, 5)[5]
        if mode.startswith("l"):
            name, target = name.split(" -> ")
            listed[name[2:]] = "-> " + target
        elif mode.startswith("-"):
            listed[name[2:]] = "file"
    got = tree(root)
    assert got.pop(".complete") and {k: "file" if not v.startswith("->") else v for k, v in got.items()} == listed
    assert got == {k: v for k, v in tree(served).items() if k != ".complete"}
    stamp = complete_stamp(root)
    assert debian.unpacked(pkg, arch, suite) == root and complete_stamp(root) == stamp      # a hit


@pytest.mark.slow
def test_a_source_package_and_its_pristine_tarball_unpacked_on_a_miss_are_the_trees_a_hit_serves(
        debian311, tmp_path, monkeypatch):
    if shutil.which("dpkg-source") is None:
        missing_tool("dpkg-source", "apt-get install dpkg-dev")
    e = matrix.entry("3.13.5")
    served_orig = fetched("the pristine 3.13.5 tarball", debian.orig, e["source"], e["suite"], e["package_version"])
    session = data_cache.folder()
    rels = [f"apt/{s}-amd64" for s in ("bookworm", e["suite"])]
    for tree_dir in (debian311.tree, served_orig):        # the .dsc and its files beside each tree
        rels += [str(p.relative_to(session)) for p in tree_dir.parent.iterdir() if p.is_file()]
    downloads_only(tmp_path, monkeypatch, *sorted(set(rels)))
    for name, made, served in (("source", lambda: debian.source("python3.11", debian311.suite), debian311.tree),
                               ("orig", lambda: debian.orig(e["source"], e["suite"], e["package_version"]),
                                served_orig)):
        got = made()
        assert got != served and got.name == served.name, name
        assert tree(got) == tree(served), f"{name}: the tree unpacked on a miss is not the one the cache served"
        stamp = complete_stamp(got)
        assert made() == got and complete_stamp(got) == stamp, f"{name}: a hit unpacked again"


def test_a_hit_without_a_version_is_the_source_package_never_the_pristine_tree_beside_it(tmp_path, monkeypatch):
    """CI's cache held bookworm's python3.11-3.11.2 and, once a Windows table had read its PC/pyconfig.h,
    python3.11-3.11.2-orig too: `source("python3.11", "bookworm")` served the pristine tree (no debian/,
    Modules/expat kept), and three scanner tests failed. Each tree's `.complete` names what it was
    unpacked from, as `source` and `orig` write it."""
    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path / "cache"))
    dest = data_cache.folder() / "sources" / "bookworm"
    for name, made_from in (("pkg-1.0", "pkg_1.0-2.dsc"), ("pkg-1.0-orig", "pkg_1.0.orig.tar.gz"),
                            ("pkg-1.0-zzz", None)):
        (dest / name).mkdir(parents=True)
        if made_from:
            (dest / name / ".complete").write_text(made_from + "\n")
    assert debian.source("pkg", "bookworm") == dest / "pkg-1.0"
    assert debian.source("pkg", "bookworm", "1.0-2") == dest / "pkg-1.0"


def test_a_fetch_that_fails_on_stale_lists_updates_them_and_tries_once_more(tmp_path, monkeypatch):
    """sid replaces files within days, so lists fetched earlier name files the archive no longer
    has (404): the lists are updated and the fetch runs again, once; a second failure is the error.
    The state's files are replaced, never written in place: CI's cache holds the machine's as hard
    links (.ci/cache.py), and the machine's copy must not change."""
    from offsets.errors import FetchError

    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path))
    stamp = data_cache.folder() / "apt" / "sid-amd64" / "updated"
    stamp.parent.mkdir(parents=True)
    stamp.write_text("")                      # lists fetched before: no update is due
    sources = stamp.parent / "parts" / "x.sources"
    sources.parent.mkdir()
    machine = tmp_path / "machine-x.sources"
    machine.write_text("Types: deb\nURIs: http://old.example/debian\n")
    os.link(machine, sources)                 # as CI's cache links the machine's file
    ran, fails = [], {"download": 1}

    def run(cmd, what, cwd=None):
        verb = next(w for w in ("update", "download") if w in cmd)
        ran.append(verb)
        if fails.get(verb):
            fails[verb] -= 1
            raise FetchError(f"{what} failed: E: Failed to fetch .../musl_1.2.5-1_amd64.deb  404  Not Found")
        if verb == "download":
            (Path(cwd) / "musl_1.2.6-2_amd64.deb").write_bytes(b"")
        return ""

    monkeypatch.setattr(debian, "_run", run)
    monkeypatch.setattr(debian, "_debian_entry", lambda: {"URIs": "http://deb.debian.org/debian"})
    assert [p.name for p in debian.download(["musl"], "amd64", "sid")] == ["musl_1.2.6-2_amd64.deb"]
    assert ran == ["download", "update", "download"] and stamp.exists()
    assert "deb.debian.org" in sources.read_text() and "old.example" in machine.read_text()
    fails.update(download=2)
    (data_cache.folder() / "debs" / "sid-amd64" / "musl_1.2.6-2_amd64.deb").unlink()
    with pytest.raises(FetchError, match="404"):
        debian.download(["musl"], "amd64", "sid")
