"""What a CPython binary says about its own layouts, whatever table is asked: the truths a table is
checked against in a binary file (`check/binary.py`) and in another process's memory (`proof.py`).

- Its exported type objects: each one's `tp_basicsize` is the size of its instance struct (the
  same expectations as the in-process live check, `runtime/live/toolkit.BASICSIZE`, by the same labels).
- 3.11+: `Py_Version`, the hexversion.
- 3.13+: `_PyRuntime.debug_offsets`, CPython's own `_Py_DebugOffsets`: a cookie, the version, and
  member by member the offsets and sizes of the structs a debugger reads
  (`data/debug_offsets.json` says which member describes which field).

A table is read through a `View`: struct name -> fields and size, by the table's own name rules.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..proofs.view import View  # noqa: F401 - read as anchors.View by the remote side

#: The exported type object of each live-check label: its tp_basicsize is what `__basicsize__`
#: says in process (`live.BASICSIZE` gives the struct and the expectation of each label).
TYPE_SYMBOLS = {
    "list": "PyList_Type", "dict": "PyDict_Type", "set": "PySet_Type", "float": "PyFloat_Type",
    "complex": "PyComplex_Type", "bytearray": "PyByteArray_Type", "type": "PyType_Type", "str": "PyUnicode_Type",
    "BaseException": "_PyExc_BaseException", "OSError": "_PyExc_OSError", "slice": "PySlice_Type",
    "property": "PyProperty_Type", "list_iterator": "PyListIter_Type", "function": "PyFunction_Type",
    "method": "PyMethod_Type", "cell": "PyCell_Type", "module": "PyModule_Type", "tuple": "PyTuple_Type",
    "int": "PyLong_Type", "bytes": "PyBytes_Type", "memoryview": "PyMemoryView_Type", "code": "PyCode_Type",
    "frame": "PyFrame_Type", "generator": "PyGen_Type",
}
COOKIE = b"xdebugpy"


def basicsize_expectations():
    """(label, type symbol, struct, expectations) of every type object a binary may export."""
    from ..runtime.live.toolkit import BASICSIZE

    return [(label, TYPE_SYMBOLS[label], struct, exps) for label, _, struct, exps in BASICSIZE if label in TYPE_SYMBOLS]


def expected_basicsize(view: View, struct: str, expectations) -> Optional[tuple]:
    """(spelling, value) of the first expectation whose terms the table has (see `toolkit.BASICSIZE`):
    what `tp_basicsize` of the struct's type must be; None if the table has none of them."""
    for terms in expectations:
        values, words = [], []
        for term in terms:
            if isinstance(term, int):
                values.append(term)
                words.append(str(term))
            elif term == "size":
                values.append(view.size(struct))
                words.append(f"sizeof({struct})")
            elif term.startswith("@"):
                other, _, path = term[1:].partition(".")
                values.append(view.off(other, path))
                words.append(f"offsetof({other}, {path})")
            else:
                values.append(view.off(struct, term))
                words.append(f"offsetof({struct}, {term})")
        if None not in values:
            return " + ".join(words), sum(values)
        view.take_used()
    return None


def debug_offsets_members() -> dict:
    """`data/debug_offsets.json`: `_Py_DebugOffsets` member -> ["size", STRUCT] or ["offset", STRUCT, PATH]."""
    from ..runtime.live.toolkit import debug_offsets

    return debug_offsets()


def compare_debug_offsets(view: View, read: Callable[[int, int], bytes], byteorder: str, hexversion: int):
    """Compare a `_Py_DebugOffsets` (read(offset within it, size) -> bytes, `byteorder` its
    integers') with the table: [(what, its value, the table's value, what the table used)], each
    member the table can say something about; the cookie and version first. [] when the table has
    no `_Py_DebugOffsets`."""
    fields = view.fields("_Py_DebugOffsets")
    if fields is None:
        return []
    out = []
    if "cookie" in fields:
        out.append(("_Py_DebugOffsets.cookie", read(fields["cookie"][0], len(COOKIE)), COOKIE, []))
    if "version" in fields:
        off, size = fields["version"][:2]
        out.append(("_Py_DebugOffsets.version", int.from_bytes(read(off, size), byteorder), hexversion, []))
    view.take_used()
    for name, meaning in sorted(debug_offsets_members().items()):
        if name not in fields:
            continue
        mine = view.size(meaning[1]) if meaning[0] == "size" else view.off(meaning[1], meaning[2])
        used = view.take_used()
        if mine is None:
            continue
        off, size = fields[name][:2]
        out.append((f"_Py_DebugOffsets.{name}", int.from_bytes(read(off, size), byteorder), mine,
                    used + [(view.key("_Py_DebugOffsets"), name)]))
    return out


def compare_binary(view: View, elf, hexversion: int, runtime_address=None) -> list:
    """Everything the interpreter binary `elf` (an `elf.Elf`) holds in its file data that the table
    can be compared with: [(what, in the binary, in the table, what the table used)]. `Py_Version`;
    each exported type object's tp_basicsize; 3.13+ the `_Py_DebugOffsets` of `_PyRuntime`'s
    initializer."""
    out = []
    version = elf.symbol("Py_Version")
    if version is not None and version.size in (4, 8):
        out.append(("Py_Version", int.from_bytes(elf.file_bytes(version.value, version.size), elf.byteorder),
                    hexversion, []))
    tp = view.row("PyTypeObject", "tp_basicsize")
    tp_used = view.take_used()
    for label, symbol, struct, expectations in basicsize_expectations() if tp else ():
        sym = elf.symbol(symbol)
        expected = expected_basicsize(view, struct, expectations) if sym is not None else None
        used = view.take_used()
        raw = None if expected is None else elf.file_bytes(sym.value + tp[1][0], tp[1][1])
        if raw is not None:
            out.append((f"{symbol}.tp_basicsize == {expected[0]}", int.from_bytes(raw, elf.byteorder), expected[1],
                        tp_used + used))
    runtime = elf.symbol("_PyRuntime")
    at = view.off("_PyRuntimeState", "debug_offsets")
    rt_used = view.take_used()
    if at is not None and runtime is not None:
        def read(offset, n):
            got = elf.file_bytes(runtime.value + at + offset, n)
            if got is None:
                raise LookupError(f"_PyRuntime of {elf.path} is shorter than its _Py_DebugOffsets")
            return got
        for what, in_binary, in_table, used in compare_debug_offsets(view, read, elf.byteorder, hexversion):
            out.append((what, in_binary, in_table, rt_used + used))
    return out
