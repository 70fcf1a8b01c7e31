"""Cache entries as plain JSON data with a digest: a damaged, planted or foreign entry is a miss.

Every cache under $OFFSETS_CACHE that a scan reads goes through here (the scan's units,
`unit_cache`; the source plans, `sources.py`; the DWARF reads, `dwarf.py`). They were pickle, so a
planted file ran code during a normal scan. An entry is the sha256 of its body, a newline, and the
body: JSON `{"key": KEY, "doc": ...}`; `load` returns the doc only if the digest and the key agree
(the caller then checks the doc's shape, and any surprise is a miss too). Entries are written to a
unique temporary file renamed into place (`atomic_write.replace`); a cache that cannot be written
only costs time.

A cache keyed on the code that made its entries (`scan/code_key.py`) gains a set of entries each
time that code changes, and the old ones are never read again by this code. Such a cache keeps
each code's entries in a folder of their own, a *generation* (`generation`): when a new one is
made, the generations no scan has used for `STALE_DAYS` are removed (another checkout on the same
machine, with other code, keeps using its own meanwhile).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from .atomic_write import replace
from .errors import BuildError
from .regular_file import open_regular, read_most

#: The largest entry read (a 3.13 header unit's is about 3 MB, a DWARF read about 10 MB).
MAX_ENTRY_BYTES = 256 * 1024 * 1024
#: The largest file whose digest a cache check computes (a larger one, or a device: a miss).
MAX_FILE_BYTES = 256 * 1024 * 1024
#: A generation of a cache that no scan used for this many days is removed when a new one is made.
STALE_DAYS = 7
#: The file whose time says when a generation was last used.
USED = ".used"


def folder() -> Path:
    """The cache's folder (`identity.cache_dir`: `$OFFSETS_CACHE`, else `$XDG_CACHE_HOME/offsets`,
    else `~/.cache/offsets`), for what fetches and scans keep there; a `BuildError` when there is
    none (the runtime, which can do without, asks `identity.cache_dir` itself)."""
    from .layout.identity import cache_dir

    found = cache_dir()
    if found is None:
        raise BuildError("no cache directory: HOME is unset and the password database has no home for this user; "
                         "set OFFSETS_CACHE to a writable directory")
    return Path(found)


def generation(root: Path, name: str) -> Path:
    """`root/name`, the folder of one generation of a cache, marked as used now; when it is new,
    the other generations under `root` no one used for `STALE_DAYS` are removed first (`prune`)."""
    here = root / name
    try:
        if not here.is_dir():
            prune(root, keep=name)
            here.mkdir(parents=True, exist_ok=True)
        (here / USED).touch()
    except OSError:
        pass            # a cache that cannot be written only costs time
    return here


def prune(root: Path, keep: str, days: float = STALE_DAYS) -> list:
    """Remove what under `root` (but `keep`) no one used for `days`: a generation's folder by its
    `USED` stamp (or its own time without one), a file (an entry of a layout before generations)
    by its time. Returns the names removed; anything that cannot be removed is left."""
    limit = time.time() - days * 86400
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for e in entries:
        if e.name == keep or e.name.startswith(".") or e.is_symlink():
            continue
        try:
            if e.is_dir():
                stamp = os.path.join(e.path, USED)
                if (os.stat(stamp) if os.path.exists(stamp) else e.stat()).st_mtime < limit:
                    shutil.rmtree(e.path)
                    removed.append(e.name)
            elif e.is_file() and e.stat().st_mtime < limit:
                os.unlink(e.path)
                removed.append(e.name)
        except OSError:
            continue
    return sorted(removed)


def dumps(key: str, doc) -> bytes:
    body = json.dumps({"key": key, "doc": doc}, separators=(",", ":")).encode()
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def loads(key: str, data: bytes):
    """The doc of an intact entry for `key`, else None."""
    digest, _, body = data.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    try:
        entry = json.loads(body)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    return entry.get("doc")


def load(path: Path, key: str):
    try:
        with open_regular(path) as f:
            data = read_most(f, MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    return loads(key, data) if len(data) <= MAX_ENTRY_BYTES else None


def store(path: Path, key: str, doc) -> None:
    try:
        replace(path, dumps(key, doc))
    except OSError:
        pass


def file_sha256(path) -> str:
    """The hex sha256 of a regular file of at most `MAX_FILE_BYTES`; OSError for anything else."""
    with open_regular(path) as f:
        st = os.fstat(f.fileno())
        if st.st_size > MAX_FILE_BYTES:
            raise OSError(f"{path}: not a regular file of at most {MAX_FILE_BYTES} bytes")
        h = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
