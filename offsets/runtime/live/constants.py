"""The live check of constants: does a table's value of a constant agree with what this very
interpreter shows? Each check compares a constant of the table's headers (`Include/`) with a
truth the process itself holds, and proves the constants it compared when it passes:

- `opcode.opmap`, `opcode.HAVE_ARGUMENT`, `opcode.EXTENDED_ARG` against the opcode macros, and the
  inline cache sizes `opcode` gives (3.11+) against `INLINE_CACHE_ENTRIES_*`;
- `dis.COMPILER_FLAG_NAMES` (what `inspect.CO_*` are made of) against `CO_*`;
- `sys.int_info.bits_per_digit` against `PyLong_SHIFT` (`PyLong_BASE`, `PyLong_MASK`);
- `__flags__` of built-in types against `Py_TPFLAGS_*`: the bits a type has and lacks, and the one
  "fast subclass" bit of each built-in;
- 3.11+: the `owner` byte of a suspended generator's frame, of the running frame and of a frame
  object that outlived its call, read through the table's offsets, against
  `FRAME_OWNED_BY_GENERATOR`, `_THREAD` and `_FRAME_OBJECT`.

Run on the first `offsets.constant()` of a table that is not exactly this build's (and by
`offsets verify` on the running interpreter's table); memory is read as `toolkit.py` reads it (run by `runner.check_constants`).
"""
from __future__ import annotations

import sys

from ...proofs.result import Result
from .toolkit import Checker, Fault, Memory, need

#: (type, flags it has, flags it lacks); a flag the table lacks is not checked.
TYPE_FLAGS = (
    (lambda: int, ("LONG_SUBCLASS", "BASETYPE", "READY", "IMMUTABLETYPE"), ("HEAPTYPE", "HAVE_GC", "LIST_SUBCLASS")),
    (lambda: bool, ("LONG_SUBCLASS", "READY"), ("BASETYPE", "HEAPTYPE")),
    (lambda: list, ("LIST_SUBCLASS", "HAVE_GC", "BASETYPE", "SEQUENCE"), ("HEAPTYPE", "MAPPING", "TUPLE_SUBCLASS")),
    (lambda: tuple, ("TUPLE_SUBCLASS", "SEQUENCE"), ("MAPPING", "LIST_SUBCLASS")),
    (lambda: bytes, ("BYTES_SUBCLASS",), ("UNICODE_SUBCLASS", "HAVE_GC")),
    (lambda: str, ("UNICODE_SUBCLASS",), ("BYTES_SUBCLASS", "HAVE_GC")),
    (lambda: dict, ("DICT_SUBCLASS", "MAPPING", "HAVE_GC"), ("SEQUENCE",)),
    (lambda: BaseException, ("BASE_EXC_SUBCLASS",), ("TYPE_SUBCLASS",)),
    (lambda: type, ("TYPE_SUBCLASS",), ("BASE_EXC_SUBCLASS",)),
    (lambda: _Heap, ("HEAPTYPE", "BASETYPE", "HAVE_GC"), ("IMMUTABLETYPE", "LONG_SUBCLASS")),
    (lambda: type(_Heap.method), ("METHOD_DESCRIPTOR", "HAVE_VECTORCALL", "_Py_TPFLAGS_HAVE_VECTORCALL"), ()),
)
FAST_SUBCLASSES = (("int", "LONG_SUBCLASS"), ("list", "LIST_SUBCLASS"), ("tuple", "TUPLE_SUBCLASS"),
                   ("bytes", "BYTES_SUBCLASS"), ("str", "UNICODE_SUBCLASS"), ("dict", "DICT_SUBCLASS"),
                   ("BaseException", "BASE_EXC_SUBCLASS"), ("type", "TYPE_SUBCLASS"))


class _Heap:
    def method(self):
        return self


class _Constants(Checker):
    def __init__(self, table, mem, result, rows: dict, mark: str) -> None:
        super().__init__(table, mem, result)
        self.rows, self.proven_mark = rows, mark

    def const(self, name: str) -> int:
        """The table's value of a header constant (LookupError if it has none), marked as used."""
        row = self.rows.get(name)
        if row is None or not row.defined_in.startswith("Include/"):
            raise LookupError(f"{name} not among the table's header constants")
        self.mark(self.proven_mark, name)
        return row.value

    def has(self, name: str) -> bool:
        row = self.rows.get(name)
        return row is not None and row.defined_in.startswith("Include/")


def _opcodes(c: _Constants) -> None:
    import opcode

    def opmap():
        names = [n for n in sorted(opcode.opmap) if c.has(n)]
        if len(names) < 10:
            raise LookupError(f"only {len(names)} of opcode.opmap's names among the table's constants")
        for n in names:
            c.expect(f"opcode.opmap[{n!r}]", opcode.opmap[n], c.const(n))
        for n in ("HAVE_ARGUMENT", "EXTENDED_ARG"):
            if c.has(n) and hasattr(opcode, n):
                c.expect(f"opcode.{n}", getattr(opcode, n), c.const(n))

    def cache_entries():
        entries = getattr(opcode, "_inline_cache_entries", None)
        if entries is None:
            raise LookupError("this interpreter's opcode module has no inline cache sizes (before 3.11)")
        if not isinstance(entries, dict):       # 3.11, 3.12: a list indexed by opcode
            entries = {n: entries[v] for n, v in opcode.opmap.items() if v < len(entries)}
        names = [n for n in sorted(entries) if c.has(f"INLINE_CACHE_ENTRIES_{n}")]
        if not names:
            raise LookupError("no INLINE_CACHE_ENTRIES_* among the table's constants")
        for n in names:
            c.expect(f"opcode._inline_cache_entries[{n!r}]", entries[n], c.const(f"INLINE_CACHE_ENTRIES_{n}"))

    c.run("opcode.opmap", opmap)
    c.run("inline cache sizes", cache_entries)


def _code_flags(c: _Constants) -> None:
    def flags():
        import dis

        names = {f"CO_{n}": v for v, n in dis.COMPILER_FLAG_NAMES.items() if c.has(f"CO_{n}")}
        if not names:
            raise LookupError("no CO_* among the table's constants")
        for n, v in sorted(names.items()):
            c.expect(f"dis.COMPILER_FLAG_NAMES ({n})", v, c.const(n))

    c.run("code flags", flags)


def _long(c: _Constants) -> None:
    def digits():
        bits = sys.int_info.bits_per_digit
        c.expect("sys.int_info.bits_per_digit == PyLong_SHIFT", bits, c.const("PyLong_SHIFT"))
        for name, want in (("PyLong_BASE", 1 << bits), ("PyLong_MASK", (1 << bits) - 1)):
            if c.has(name):
                c.expect(f"{name} of sys.int_info", want, c.const(name))

    c.run("PyLong_SHIFT", digits)


def _type_flags(c: _Constants) -> None:
    def flag(name: str):
        for full in (f"Py_TPFLAGS_{name}", name):
            if c.has(full):
                return full, c.const(full)
        return None, None

    def each():
        checked = 0
        for get_type, have, lack in TYPE_FLAGS:
            t = get_type()
            for names, want in ((have, True), (lack, False)):
                for name in names:
                    full, value = flag(name)
                    if full is None or not value:
                        c.used = []     # a flag the build defines as 0 has no bit to show
                        continue
                    checked += 1
                    c.expect(f"{t.__name__}.__flags__ has {full}'s bits", want, t.__flags__ & value == value)
        if not checked:
            raise LookupError("no Py_TPFLAGS_* among the table's constants")

    def fast_subclasses():
        for name, f in FAST_SUBCLASSES:
            bits = {g: flag(g)[1] for _, g in FAST_SUBCLASSES}      # every one of them is used
            if None in bits.values():
                raise LookupError("the table lacks a Py_TPFLAGS_*_SUBCLASS")
            mask = 0
            for v in bits.values():
                mask |= v
            t = getattr(__import__("builtins"), name)
            c.expect(f"{name}.__flags__'s one fast subclass bit is Py_TPFLAGS_{f}", t.__flags__ & mask, bits[f])

    c.run("type flags", each)
    c.run("fast subclass bits", fast_subclasses)


def _gen():
    yield 1


def _outlived():
    return sys._getframe()


def _frame_owners(c: _Constants) -> None:
    def owner_of(frame_addr: int) -> int:
        return c.read_field(frame_addr, "_PyInterpreterFrame", "owner")

    def generator():
        g = _gen()
        next(g)
        base = need(c.off("PyGenObject", "gi_iframe"), "PyGenObject.gi_iframe")
        c.expect("a suspended generator's frame owner", c.const("FRAME_OWNED_BY_GENERATOR"), owner_of(id(g) + base))

    def running():
        frame = sys._getframe()
        c.expect("the running frame's owner", c.const("FRAME_OWNED_BY_THREAD"),
                 owner_of(c.read_field(id(frame), "PyFrameObject", "f_frame")))

    def outlived():
        frame = _outlived()
        c.expect("the owner of a frame object that outlived its call", c.const("FRAME_OWNED_BY_FRAME_OBJECT"),
                 owner_of(c.read_field(id(frame), "PyFrameObject", "f_frame")))

    for what, fn in (("generator frame owner", generator), ("running frame owner", running),
                     ("frame object's frame owner", outlived)):
        c.run(what, fn)


def check(table, rows: dict, mark: str) -> Result:
    """Run every constant check the table allows; never raises for a wrong table. `ok` needs no
    failure and at least one pass. `rows`: the table's constants (name -> row, `runtime/constants.of`);
    each one seen is marked proven as (`mark`, name)."""
    result = _ConstantsResult()
    mem = Memory()
    try:
        c = _Constants(table, mem, result, rows, mark)
        for part in (_long, _opcodes, _code_flags, _type_flags, _frame_owners):
            part(c)
    finally:
        mem.close()
    return result


class _ConstantsResult(Result):
    @property
    def ok(self) -> bool:
        return not self.failed and bool(self.passed)


__all__ = ["check", "Fault"]
