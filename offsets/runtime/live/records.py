"""Part of the live check (`runner.py`): tables of `offsetof` the compiler left in the interpreter's own
binary, each entry naming its field, against the table:

- typeobject.c's slotdefs, where each wrapper descriptor's `d_base` points: every entry is a slot's
  name and `offsetof(PyTypeObject, tp_getattr)` (or of PyHeapTypeObject's suite member); the entries
  of `__getattribute__`/`__getattr__` and `__setattr__`/`__delattr__` with no function and no wrapper
  are the legacy `tp_getattr` and `tp_setattr` slots, whose values no type fills;
- 3.13+: initconfig.c's PYCONFIG_SPEC, each entry `{"base_prefix", offsetof(PyConfig, base_prefix),
  type}`: found in the binary's read-only data as the entry that points to the string
  `base_exec_prefix`, and walked from there while its names are identifiers.

Entries are read through the table's layout of their struct; a record is only compared where its name
is the table's field's. The binary's image is read from this process's memory (`/proc/self/mem`),
bounded by its mappings; nothing is written.
"""
from __future__ import annotations

import re

#: how far from the entry found to walk
MAX_ENTRIES = 400
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_LEGACY = {"__getattribute__": "tp_getattr", "__getattr__": "tp_getattr", "__setattr__": "tp_setattr",
           "__delattr__": "tp_setattr"}


def _name(c, entry: int, at: int):
    """The identifier an entry's name pointer points to, or None."""
    try:
        p = c.ptr(entry, at)
        text = c.cstring(p, 80) if p else b""
    except c.faults:
        return None
    return text.decode() if _IDENT.match(text) else None


def _walk(c, struct: str, known: int) -> dict:
    """name -> [entry address] of the array of `struct` around the entry at `known`, in both directions
    while entries have identifier names."""
    step, at = c.size(struct), c.need(struct, "name")
    out: dict = {}
    for direction in (1, -1):
        for k in range(0 if direction == 1 else 1, MAX_ENTRIES):
            entry = known + direction * k * step
            name = _name(c, entry, at)
            if name is None:
                break
            out.setdefault(name, []).append(entry)
    return out


def slotdefs(c) -> None:
    descr = object.__dict__["__repr__"]
    key = c.t.resolve_struct("pytype_slotdef") or c.t.resolve_struct("wrapperbase")
    if key is None:
        raise LookupError("no wrapperbase in the table")
    base = c.field(id(descr), "PyWrapperDescrObject", "d_base")
    entries = _walk(c, key, base)
    legacy = {}
    for name, field in _LEGACY.items():
        for e in entries.get(name, ()):
            if not c.field(e, key, "function") and not c.field(e, key, "wrapper"):
                legacy.setdefault(field, []).append(c.field(e, key, "offset", signed=True))
    if not legacy:
        raise LookupError("no legacy slots among the slot definitions")
    c.expect("slotdefs' offsetof(PyTypeObject, tp_getattr|tp_setattr) (the legacy slots' entries)",
             legacy, {f: [c.need("PyTypeObject", f)] * len(v) for f, v in legacy.items()})


def _image_ranges():
    """(start, end) of the read-only mappings of the ELF that holds the interpreter."""
    from ..binary import _maps

    maps = _maps()
    here = [m for m in maps if m[0] <= id(int) < m[1]]
    if not here:
        return []
    inode, path = here[0][3], here[0][4]
    return [(lo, hi) for lo, hi, _, ino, p in maps if ino == inode and p == path]


def _images(ranges, limit: int = 64 << 20) -> list:
    """(start, bytes) of each range, read from this process's memory (a range it cannot read is left out)."""
    out = []
    with open("/proc/self/mem", "rb", buffering=0) as mem:
        for lo, hi in ranges:
            if hi - lo > limit:
                continue
            try:
                mem.seek(lo)
                out.append((lo, mem.read(hi - lo)))
            except (OSError, ValueError, OverflowError):
                continue
    return out


def _find(images, needle: bytes) -> list:
    return [lo + m.start() for lo, data in images for m in re.finditer(re.escape(needle), data)]


def config_spec(c) -> None:
    key = c.t.resolve_struct("PyConfigSpec")
    if key is None:
        raise LookupError("no PyConfigSpec in the table (before 3.13)")
    ranges = _image_ranges()
    if not ranges:
        raise LookupError("the interpreter's binary is not mapped")
    images = _images(ranges)
    strings = [a + 1 for a in _find(images, b"\0base_exec_prefix\0")]
    pointers = [a for s in strings for a in _find(images, s.to_bytes(c.psize, c.byteorder))]
    del images
    if len(pointers) != 1:
        raise LookupError(f"{len(pointers)} pointers to the string base_exec_prefix in the binary")
    entries = _walk(c, key, pointers[0] - c.need(key, "name"))
    fields = c.t.fields(c.t.resolve_struct("PyConfig"))
    named = {n: e[0] for n, e in entries.items() if n in fields and len(e) == 1}
    if len(named) < 8:
        raise LookupError("too few of PyConfig's fields among the entries found")
    c.expect(f"PYCONFIG_SPEC's offsetof(PyConfig, ...) of {len(named)} fields",
             {n: c.field(e, key, "offset") for n, e in named.items()},
             {n: c.need("PyConfig", n) for n in named})


def check(c) -> None:
    c.attempt("slotdefs", slotdefs, c)
    c.attempt("PYCONFIG_SPEC", config_spec, c)
