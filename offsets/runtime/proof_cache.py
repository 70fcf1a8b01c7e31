"""The live check's results, kept per binary: a proof of a build's layout is a fact about the ELF
file that holds the interpreter, not about one process, so a passing check is kept in
`$OFFSETS_CACHE/proofs/` and read back by every later process of the same binary instead of
checking again (the first lookup where no table is exact costs about one interpreter start more,
not the check's tens of milliseconds).

An entry is keyed by everything the check's result depends on:
- the binary: the ELF file that holds the interpreter (runtime/binary.py: libpython, or the
  executable of a static build), by path, device, inode, size, mtime and ctime, and its GNU
  build-id as its image in this process has it;
- the table: its file and the shipped layout pool, by path, size and mtime;
- the check's code and data: the bytes of `proofs/*.py`, `runtime/live/*.py` and the shipped type
  records (`data/compact/types.json`);
- the interpreter's version and flags.
Any change is a miss. Only a passing check is kept (a failure is checked again next time: it may
have been a reason of that process), and an entry that is damaged (it carries the sha256 of its
content: `identity._write_memo`), not a regular file, or of another key is a miss, made again.
"""
from __future__ import annotations

import os
import sys

try:        # the interpreter's own sha256, without hashlib's OpenSSL start-up (a third of a lookup's time)
    from _sha2 import sha256
except ImportError:
    try:
        from _sha256 import sha256
    except ImportError:
        from hashlib import sha256

from ..layout import identity

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the files whose bytes the check's results depend on, relative to the package
#: (a folder's .py files, whose names start with the part after its last "/", if any: every
#: `runtime/live/*.py`, so that a new module of the check is part of the key without being listed)
CODE = ("proofs/", "runtime/live/", "runtime/binary.py", "remote/elf.py", "remote/elf_id.py", "data/compact/types.json",
        "data/debug_offsets.json")
REVISION = 1


def binary_of():
    """The path of the ELF file that holds this interpreter and its build-id, read as the runtime's
    identity reads them (runtime/binary.py: the mapping of `id(int)`, the note in its loaded image);
    (None, None) when there is none to name."""
    from .binary import interpreter

    path, build_id, _ = interpreter()
    return path, build_id


def _stat(path: str) -> str:
    st = os.stat(path)
    return "%s\0%d\0%d\0%d\0%d\0%d" % (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


#: the check's C extension (runtime/live/raised.py): its source in a checkout, and what was built of it
EXTENSION = "_raised."


def code_files() -> list:
    """The paths of `CODE`'s files, and of the check's C extension's."""
    out = sorted(os.path.join(PACKAGE_DIR, n) for n in os.listdir(PACKAGE_DIR) if n.startswith(EXTENSION))
    for rel in CODE:
        path = os.path.join(PACKAGE_DIR, rel)
        if os.path.isfile(path):
            out.append(path)
            continue
        folder, start = os.path.split(path)
        out += sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.startswith(start) and n.endswith(".py"))
    return out


def key(table):
    """The cache key of the live check of `table` in this process, or None when the binary cannot be
    named (no /proc, an anonymous mapping)."""
    binary, build_id = binary_of()
    if binary is None:
        return None
    h = sha256(("%d\0%s\0%s\0%s\0" % (REVISION, sys.version, sys.abiflags if hasattr(sys, "abiflags") else "",
                                        build_id)).encode())
    try:
        h.update(_stat(binary).encode())
        h.update(_stat(table.source).encode())
        pool = os.path.join(os.path.dirname(table.source), "layouts.jsonl")
        if os.path.exists(pool):
            h.update(_stat(pool).encode())
        for p in code_files():
                with open(p, "rb") as f:
                    h.update(p.encode() + b"\0" + f.read())
    except OSError:
        return None
    return h.hexdigest()


def _entry(k: str):
    cache = identity.cache_dir()
    return os.path.join(cache, "proofs", k[:32] + ".json") if cache else None


def load(k: str):
    """The `Result` kept under key `k`, or None."""
    from ..layout.json_read import loads
    from ..proofs.result import Result

    kept = identity._read_memo(_entry(k))
    if kept is None:
        return None
    try:
        doc = loads(kept)
        if doc.get("key") != k:
            return None
        r = Result()
        r.passed, r.skipped = list(doc["passed"]), list(doc["skipped"])
        r.proven = {(s, p) for s, p in doc["proven"]}
        r.cached = True
        return r if r.ok else None
    except (OSError, TypeError, ValueError, KeyError, AttributeError):
        return None


def store(k: str, result) -> None:
    import json

    path = _entry(k)
    if path is None:
        return
    doc = {"key": k, "passed": result.passed, "skipped": result.skipped,
           "proven": sorted(([s, p] for s, p in result.proven), key=str)}
    identity._write_memo(path, json.dumps(doc).encode())     # whole or not at all, standard library only


def check(table):
    """The live check of `table` (`live.runner.check`), from the cache when this binary passed it
    before: the prover the runtime hands every table it chooses."""
    k = key(table)
    found = load(k) if k else None
    if found is not None:
        return found
    from .live import runner

    result = runner.check(table)
    if k and result.ok:
        store(k, result)
    return result
