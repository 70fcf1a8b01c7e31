"""The binary check of a Windows table: read its layouts in python.org's `python3X.dll`, without running it.

What the DLL's own bytes say about its layouts (remote/pe.py reads them):
- from 3.10, its section `PyRuntim` holds `_PyRuntime` alone: the section's size is
  `sizeof(_PyRuntimeState)` (3.11+; 3.10's section is a part of it, so there it is only compared
  with `_PyRuntime`'s place);
- each exported static type object: its `tp_basicsize` (the same expectations as the ELF binary
  check, `remote/anchors.py`), and its `tp_name`, a pointer to the type's name, read at the
  table's offset of `tp_name` (a name that reads back is a proof of that offset no coincidence gives);
- `Py_Version` (3.11+), and from 3.13 every `_Py_DebugOffsets` slot at the start of `_PyRuntime`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..errors import BuildError
from ..layout import targets
from ..remote import anchors, pe
from .outcome import Check

def pe_check(table, path: Path, hexversion: Optional[int] = None) -> Check:
    """`verify.Check` of the Windows `table` against the DLL at `path` (of CPython `hexversion`,
    by default the table's: a table of another patch release of the same minor is checked against
    it with the DLL's own version); `BuildError` when it is not a DLL of the table's CPU, or not
    one holding the interpreter."""
    b = table.build
    hexversion = b.hexversion if hexversion is None else hexversion
    if hexversion >> 16 != b.hexversion >> 16:
        raise BuildError(f"PE check: the DLL is of CPython {hexversion >> 24}.{(hexversion >> 16) & 0xFF}, the table "
                         f"of {b.minor}")
    if targets.system(b.target.triple) != "windows":
        raise BuildError(f"PE check: {b.target.triple} is not a Windows target")
    try:
        image = pe.ImageView(pe.read(path))
    except (OSError, pe.PeError) as e:
        raise BuildError(f"PE check: cannot read {path}: {e}") from None
    if image.coff.cpu != b.target.triple.split("-")[0]:
        raise BuildError(f"PE check: {path} is for {image.coff.cpu or hex(image.coff.machine)}, the table for "
                         f"{b.target.triple}")
    if image.symbol("_PyRuntime") is None:
        raise BuildError(f"PE check: {path} exports no _PyRuntime: not the DLL holding the interpreter")
    view = anchors.View.of_table(table)
    found = [(what, got, want) for what, got, want, _ in anchors.compare_binary(view, image, hexversion)]
    found += runtime_section(view, image, hexversion)
    found += type_names(view, image) + item_sizes(view, image)
    mismatches = tuple(f"{what}: the DLL holds {got!r}, the table gives {want!r}" for what, got, want in found
                       if got != want)
    return Check(f"dll {Path(path).name}", f"{Path(path).name} (python.org's build)", 0, len(found), mismatches,
                 unit="values of its PyRuntim section, type objects, Py_Version and _Py_DebugOffsets")


def runtime_section(view, image: pe.ImageView, hexversion: int) -> list:
    """The `PyRuntim` section: where `_PyRuntime` is (its start), and from 3.11 its size."""
    s = image.coff.section("PyRuntim")
    if s is None:
        return []
    out = [("_PyRuntime is at the start of section PyRuntim", image.symbol("_PyRuntime").value, s.rva)]
    size = view.size("_PyRuntimeState")
    if size is not None and hexversion >= 0x030B0000:
        out.append(("size of section PyRuntim == sizeof(_PyRuntimeState)", s.virtual_size, size))
    return out


#: Type objects whose `tp_itemsize` is the size of one element of a struct's variable part (a field
#: of one element, the first of the paths the table has) or of a struct (None).
ITEMSIZE = {"PyTuple_Type": ("PyTupleObject", ("ob_item",)), "PyBytes_Type": ("PyBytesObject", ("ob_sval",)),
            "PyLong_Type": ("PyLongObject", ("long_value.ob_digit", "ob_digit")), "PyType_Type": ("PyMemberDef", None)}


def item_sizes(view, image: pe.ImageView) -> list:
    """Each `ITEMSIZE` type object's `tp_itemsize`, read at the table's offset of it, against the
    table's size of one element."""
    row = view.row("PyTypeObject", "tp_itemsize")
    if row is None:
        return []
    out = []
    for symbol, (struct, paths) in sorted(ITEMSIZE.items()):
        sym = image.symbol(symbol)
        if paths is None:
            want, what = view.size(struct), f"sizeof({struct})"
        else:
            found = view.row(struct, *paths)
            if found is None or not found[1][5]:        # no array of known length
                continue
            want, what = found[1][1] // found[1][5], f"the size of one {struct}.{found[0]}"
        raw = None if sym is None or want is None else image.file_bytes(sym.value + row[1][0], row[1][1])
        if raw is not None:
            out.append((f"{symbol}.tp_itemsize == {what}", int.from_bytes(raw, "little"), want))
    return out


def type_names(view, image: pe.ImageView) -> list:
    """Each exported type object's `tp_name`, read through the table's offset of it."""
    row = view.row("PyTypeObject", "tp_name")
    if row is None:
        return []
    offset = row[1][0]
    out = []
    for label, symbol in sorted(anchors.TYPE_SYMBOLS.items()):
        sym = image.symbol(symbol)
        if sym is None:
            continue
        at = image.pointer(sym.value + offset)
        name = None if at is None else image.string(at)
        out.append((f"{symbol}.tp_name", name, label))
    return out
