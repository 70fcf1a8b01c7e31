"""The scan cache's entries: one translation unit's result as plain JSON data, checked on reading.

An entry is `sha256 of the body` + newline + the body (JSON: the entry's own key, the result's
structs as `compact.struct_row`s, names, flags, pointer size, files read). Nothing in it is code
(the cache was pickle, so a planted file ran code during a scan); an entry whose digest, key or
shape is wrong, or whose structs break a model invariant, is a miss and the unit is parsed again.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional

SUFFIX = ".json"
#: The largest entry read (the header unit of a 3.13 build is about 3 MB).
MAX_ENTRY_BYTES = 64 * 1024 * 1024


def encode(key: str, result) -> bytes:
    from .compact import struct_row

    body = json.dumps({"key": key, "name": result.name,
                       "structs": [[k, struct_row(s)] for k, s in result.structs.items()],
                       "names": result.names, "flags": result.flags, "pointer_size": result.pointer_size,
                       "files": result.files}, separators=(",", ":")).encode()
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def decode(key: str, data: bytes):
    """The `UnitResult` an entry holds, or None if it is not an intact entry for `key`."""
    from .clang_scan import UnitResult
    from .compact import struct_from_row

    digest, _, body = data.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    try:
        doc = json.loads(body)
        if doc["key"] != key:
            return None
        structs = {}
        for k, row in doc["structs"]:
            if not isinstance(k, str):
                return None
            structs[k] = struct_from_row(row)
        for part in ("names", "flags", "files"):
            if not isinstance(doc[part], dict):
                return None
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in doc["files"].items()):
            return None
        return UnitResult(doc["name"], structs, dict(doc["names"]), dict(doc["flags"]), doc["pointer_size"],
                          dict(doc["files"]))
    except Exception:       # any shape but the one encode writes: a miss
        return None


def read(store: Path, key: str) -> Optional[object]:
    try:
        with open(store / (key + SUFFIX), "rb") as f:
            data = f.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    return decode(key, data) if len(data) <= MAX_ENTRY_BYTES else None


def write(store: Path, key: str, result) -> None:
    """Store an entry (atomically: a unique temporary file renamed into place); a failure is ignored,
    as a cache that cannot be written only costs time."""
    try:
        store.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=store, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(encode(key, result))
            os.replace(tmp, store / (key + SUFFIX))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


#: The largest file whose digest an entry's check computes (a larger one makes the entry a miss).
MAX_FILE_BYTES = 256 * 1024 * 1024


def file_digest(path) -> str:
    """`sha256:...` of a regular file of at most `MAX_FILE_BYTES`; OSError for anything else."""
    import stat

    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            raise OSError(f"{path}: not a regular file of at most {MAX_FILE_BYTES} bytes")
        h = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()
