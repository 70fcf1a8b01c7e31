"""The cache CI's `make test` starts from: what was fetched by name, and nothing that was made.

A warm cache decides which code runs: a path taken only on a miss (identity.py's digests' memo,
issue 25) broke on a fresh machine while CI, whose cache held the memo, passed. So `.ci/run` gives
`make test` a cache of its own, seeded from the machine's cache (resolved as offsets does:
$OFFSETS_CACHE, else $XDG_CACHE_HOME/offsets, else ~/.cache/offsets) with the complete fetched
entries of `FETCHED` only; the folders of `COMPUTED` (and the configured trees in `sources/`) are
made again by the run. Downloads are hard-linked: apt, dpkg-deb, dpkg-source and tar only read
them, and a new download is a new file. Unpacked trees are copied: tests read them with compilers
and scanners, and a write into a tree through a hard link would change the machine's copy.

    python3 .ci/cache.py new         # prints WORK, a new folder beside the machine's cache (hard links)
    python3 .ci/cache.py seed WORK   # WORK/cache: the seeded cache; WORK/seeded.json: what was linked
    python3 .ci/cache.py back WORK   # after the run: what it fetched and the machine lacks goes there;
                                     # fails if a linked download changed
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from offsets import cache_lock  # noqa: E402
from offsets.layout.identity import cache_dir  # noqa: E402

#: Folders of fetched data (docs/contributing.md, "The caches"), each with the rule for its complete entries.
FETCHED = ("apt", "debs", "roots", "sources", "clang-include", "pypi")
#: Folders of what the code makes from its inputs: never seeded.
COMPUTED = ("scan", "dwarf", "plans", "digests", "pyconfig", "process-headers", "generated", "regenerate",
            "tables", "venvs", "wheels", "compiles", "results", "foreign", "build", "remote-readers.md", "include",
            "proofs", "cut", "finish", "windows", "macos")
#: The cache locks the fetches take (offsets/scan/debian.py, clang_headers.py): held on the
#: machine's cache while entries are taken from it or given to it, so none is half-made.
LOCKS = ("debs/fetch", "clang-include/fetch")
#: A work folder (`new`) older than this is a killed run's, and removed.
STALE_SECONDS = 86400


def entries(cache: Path):
    """(relative path, "file" or "tree") of every complete fetched entry of `cache`."""
    for apt in _dirs(cache / "apt"):
        if (apt / "updated").is_file():            # debian._apt: made last, after `apt-get update`
            yield _rel(apt, cache), "apt"
    for d in _dirs(cache / "debs"):
        yield from ((_rel(f, cache), "file") for f in sorted(d.glob("*.deb")) if f.is_file())
    for root in _dirs(cache / "roots"):
        if (root / ".complete").is_file():
            yield _rel(root, cache), "tree"
    for suite in _dirs(cache / "sources"):
        for p in sorted(suite.iterdir()):
            if p.name.startswith("."):
                continue
            if p.is_file():                        # .dsc, its tarballs and signatures
                yield _rel(p, cache), "file"
            elif (p / ".complete").is_file() and "-configure-" not in p.name:   # matrix._configured_pyconfig's: made
                yield _rel(p, cache), "tree"
    pypi = cache / "pypi"
    if pypi.is_dir():                              # sdists pip downloaded (renamed into place whole)
        yield from ((_rel(f, cache), "file") for f in sorted(pypi.glob("*.tar.gz")) if f.is_file())
    for d in _dirs(cache / "clang-include"):
        if (d / ".complete").is_file():
            yield _rel(d, cache), "tree"


def _dirs(folder: Path) -> list:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")) if folder.is_dir() else []


def _rel(p: Path, cache: Path) -> str:
    return str(p.relative_to(cache))


def _link(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:                                # another file system: a copy
        shutil.copy2(src, dest)


def _copy_tree(src: Path, dest: Path, top_files=None) -> None:
    """A copy of the unpacked tree `src` (its links as links); `top_files`: the only files kept at
    its top (a root's packages unpack into folders; a file beside them was made there later)."""
    dest.mkdir(parents=True)
    for p in sorted(src.iterdir()):
        if p.is_dir() and not p.is_symlink():
            shutil.copytree(p, dest / p.name, symlinks=True)
        elif top_files is None or p.name in top_files or p.is_symlink():
            shutil.copy2(p, dest / p.name, follow_symlinks=False)


def _seed_apt(src: Path, dest: Path, linked: dict) -> None:
    """An apt state: its folders, and its indexes linked (its `lock` files are apt's own, made on use)."""
    for d, subdirs, files in os.walk(src):
        here = dest / Path(d).relative_to(src)
        here.mkdir(parents=True, exist_ok=True)
        for name in files:
            if name != "lock":
                _link(Path(d) / name, here / name)
                linked[str((here / name))] = _stamp(Path(d) / name)


def _stamp(p: Path) -> list:
    st = os.stat(p)
    return [str(p), st.st_size, st.st_mtime_ns]


def seed(work: Path, shared: Path) -> dict:
    """Fill `work`/cache from `shared`; returns {kind: count}."""
    cold = work / "cache"
    cold.mkdir(parents=True)
    linked, counts = {}, {}
    with _locked(shared):
        for rel, kind in entries(shared):
            src, dest = shared / rel, cold / rel
            if kind == "apt":
                _seed_apt(src, dest, linked)
            elif kind == "file":
                _link(src, dest)
                linked[str(dest)] = _stamp(src)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                _copy_tree(src, dest, {".complete"} if rel.startswith("roots/") else None)
            counts[kind] = counts.get(kind, 0) + 1
    (work / "seeded.json").write_text(json.dumps(linked))
    return counts


def back(work: Path, shared: Path) -> tuple:
    """Move what the run in `work` fetched, complete, and `shared` lacks, into `shared`. Returns
    (the entries moved, the linked downloads of `shared` whose size or time changed)."""
    cold = work / "cache"
    moved = []
    with _locked(shared):
        have = {rel for rel, _ in entries(shared)}
        for rel, kind in list(entries(cold)):
            dest = shared / rel
            if rel in have:
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.exists():                      # a half-made one (its maker died): the fetch redoes those too
                shutil.rmtree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
            try:
                os.rename(cold / rel, dest)
            except OSError:                        # another file system
                (shutil.copytree(cold / rel, dest, symlinks=True) if kind != "file" else shutil.copy2(cold / rel, dest))
            moved.append(rel)
    changed = []
    seeded = work / "seeded.json"
    for src, size, mtime in (json.loads(seeded.read_text()) if seeded.is_file() else {}).values():
        try:
            st = os.stat(src)
        except OSError:
            continue                               # removed since (a fetch redoing a half-made entry)
        if (st.st_size, st.st_mtime_ns) != (size, mtime):
            changed.append(src)
    return moved, changed


class _locked:
    """The fetches' cache locks (`LOCKS`) of the cache `shared`, held together."""

    def __init__(self, shared: Path) -> None:
        self.shared, self.held = shared, []

    def __enter__(self):
        saved = os.environ.get("OFFSETS_CACHE")
        os.environ["OFFSETS_CACHE"] = str(self.shared)     # cache_lock locks the cache it resolves
        try:
            for name in LOCKS:
                lock = cache_lock.held(name)
                lock.__enter__()
                self.held.append(lock)
        finally:
            if saved is None:
                os.environ.pop("OFFSETS_CACHE")
            else:
                os.environ["OFFSETS_CACHE"] = saved
        return self

    def __exit__(self, *exc) -> None:
        for lock in reversed(self.held):
            lock.__exit__(None, None, None)


def main(argv: list) -> int:
    if argv[:1] not in (["new"], ["seed"], ["back"]) or len(argv) != (1 if argv[0] == "new" else 2):
        print("usage: python3 .ci/cache.py new | seed WORK | back WORK", file=sys.stderr)
        return 2
    shared = cache_dir()
    if shared is None:
        print("ci cache: no cache directory (HOME unset): set OFFSETS_CACHE", file=sys.stderr)
        return 2
    shared = Path(shared)
    if argv[0] == "new":
        shared.mkdir(parents=True, exist_ok=True)
        for old in shared.parent.glob(f"{shared.name}-ci.*"):     # a killed run's (CI's limit: 90 minutes)
            if old.is_dir() and old.stat().st_mtime < time.time() - STALE_SECONDS:
                shutil.rmtree(old, ignore_errors=True)
        print(tempfile.mkdtemp(prefix=f"{shared.name}-ci.", dir=shared.parent))
        return 0
    work = Path(argv[1])
    if argv[0] == "seed":
        counts = seed(work, shared)
        print(f"ci cache: {work / 'cache'} seeded from {shared} with what was fetched: "
              + (", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing"), file=sys.stderr)
        return 0
    moved, changed = back(work, shared)
    print(f"ci cache: {len(moved)} fetched entr{'y' if len(moved) == 1 else 'ies'} of the run moved to {shared}"
          + "".join(f"\n  {m}" for m in moved), file=sys.stderr)
    if changed:
        print("ci cache: downloads of the machine's cache changed through CI's hard links:"
              + "".join(f"\n  {c}" for c in changed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
