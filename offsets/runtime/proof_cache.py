"""The live check's results, kept per binary: a proof of a build's layout is a fact about the ELF
file that holds the interpreter, not about one process, so a passing check is kept in
`$OFFSETS_CACHE/proofs/` and read back by every later process of the same binary instead of
checking again (the first lookup where no table is exact costs about one interpreter start more,
not the check's tens of milliseconds).

An entry is keyed by everything the check's result depends on:
- the binary: the file mapped where this interpreter's `list` type object is (libpython, or the
  executable of a static build), by path, device, inode, size, mtime and ctime, and its GNU
  build-id;
- the table: its file and the shipped layout pool, by path, size and mtime;
- the check's code and data: the bytes of `proofs/*.py`, `runtime/live*.py` and the shipped type
  records (`data/compact/types.json`);
- the interpreter's version and flags.
Any change is a miss. Only a passing check is kept (a failure is checked again next time: it may
have been a reason of that process), and an entry that is damaged or of another key is a miss.
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
CODE = ("proofs", "runtime/live.py", "runtime/live_capi.py", "runtime/live_stdtypes.py", "runtime/live_types.py",
        "runtime/live_values.py",
        "data/compact/types.json", "data/debug_offsets.json")
REVISION = 1


def binary_of(address: int):
    """The path of the file mapped at `address` in this process (/proc/self/maps), or None."""
    try:
        with open("/proc/self/maps", "rb") as f:
            for line in f:
                span, _, rest = line.partition(b" ")
                lo, _, hi = span.partition(b"-")
                if int(lo, 16) <= address < int(hi, 16):
                    path = rest.split(None, 4)[-1].strip() if len(rest.split(None, 4)) == 5 else b""
                    return os.fsdecode(path) if path.startswith(b"/") else None
    except (OSError, ValueError):
        return None
    return None


def build_id(path: str):
    """The GNU build-id note of the ELF file at `path` (hex), found through its program headers;
    None if it has none. Without the struct module (an extension module to load in some builds)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
                return None
            wide, order = head[4] == 2, "little" if head[5] == 1 else "big"

            def num(data, at, n):
                return int.from_bytes(data[at:at + n], order)
            phoff = num(head, 32, 8) if wide else num(head, 28, 4)
            phentsize, phnum = (num(head, 54, 2), num(head, 56, 2)) if wide else (num(head, 42, 2), num(head, 44, 2))
            f.seek(phoff)
            table = f.read(phentsize * min(phnum, 256))
            for ph in (table[i:i + phentsize] for i in range(0, len(table) - phentsize + 1, phentsize)):
                if num(ph, 0, 4) != 4:      # PT_NOTE
                    continue
                off, size = (num(ph, 8, 8), num(ph, 32, 8)) if wide else (num(ph, 4, 4), num(ph, 16, 4))
                f.seek(off)
                notes, at = f.read(min(size, 1 << 16)), 0
                while at + 12 <= len(notes):
                    namesz, descsz, kind = num(notes, at, 4), num(notes, at + 4, 4), num(notes, at + 8, 4)
                    desc = at + 12 + ((namesz + 3) & ~3)
                    if kind == 3 and notes[at + 12:at + 12 + namesz].rstrip(b"\0") == b"GNU":    # NT_GNU_BUILD_ID
                        return notes[desc:desc + descsz].hex()
                    at = desc + ((descsz + 3) & ~3)
    except OSError:
        return None
    return None


def _stat(path: str) -> str:
    st = os.stat(path)
    return "%s\0%d\0%d\0%d\0%d\0%d" % (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def key(table):
    """The cache key of the live check of `table` in this process, or None when the binary cannot be
    named (no /proc, an anonymous mapping)."""
    binary = binary_of(id(list))
    if binary is None:
        return None
    h = sha256(("%d\0%s\0%s\0%s\0" % (REVISION, sys.version, sys.abiflags if hasattr(sys, "abiflags") else "",
                                        build_id(binary))).encode())
    try:
        h.update(_stat(binary).encode())
        h.update(_stat(table.source).encode())
        pool = os.path.join(os.path.dirname(table.source), "layouts.jsonl")
        if os.path.exists(pool):
            h.update(_stat(pool).encode())
        for rel in CODE:
            path = os.path.join(PACKAGE_DIR, rel)
            files = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".py")) \
                if os.path.isdir(path) else [path]
            for p in files:
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

    path = _entry(k)
    try:
        with open(path, "rb") as f:
            doc = loads(f.read(1 << 24))
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
    """The live check of `table` (`live.check`), from the cache when this binary passed it before."""
    k = key(table)
    found = load(k) if k else None
    if found is not None:
        return found
    from .live import check as run

    result = run(table)
    if k and result.ok:
        store(k, result)
    return result
