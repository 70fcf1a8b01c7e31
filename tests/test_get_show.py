"""`offsets get` and `offsets show` on the running interpreter's shipped table: their exact output,
with every number read back from live objects of this very interpreter (ctypes at the printed
offsets), not from the table."""
from __future__ import annotations

import ctypes
import platform
import re
import sys

from offsets.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    return out


def test_get_a_field_and_a_struct(capsys):
    out = run(capsys, "get", "listiterobject.it_index")
    assert re.fullmatch(r"\d+\n", out)
    it = iter([1, 2, 3, 4, 5])
    next(it), next(it), next(it)
    assert ctypes.c_ssize_t.from_address(id(it) + int(out)).value == 3     # the live iterator's index
    assert run(capsys, "get", "listiterobject") == f"{type(it).__basicsize__}\n"


def test_get_a_bitfield(capsys):
    """`OFFSET bits FIRST+WIDTH of SIZE bytes`: the bits hold a live string's kind (1, 2 or 4 bytes
    per character)."""
    out = run(capsys, "get", "PyASCIIObject.state.kind")
    m = re.fullmatch(r"(\d+) bits (\d+)\+(\d+) of (\d+) bytes\n", out)
    assert m, out
    offset, first, width, size = map(int, m.groups())
    for text, kind in (("plain ascii", 1), ("\u0100 two bytes", 2), ("\U0001f600 four", 4)):
        word = int.from_bytes(ctypes.string_at(id(text) + offset, size), sys.byteorder)
        assert word >> first & ((1 << width) - 1) == kind, text


def test_show_a_struct(capsys):
    """The heading (kind, name, size, align, where, which build) and one row per field."""
    lines = run(capsys, "show", "PyObject").splitlines()
    m = re.fullmatch(r"struct PyObject: size (\d+), align (\d+), Include/object\.h:\d+ "
                     r"\[CPython (\S+) (\S+) (\S+), from clang\]", lines[0])
    assert m, lines[0]
    assert (int(m[1]), int(m[2])) == (object.__basicsize__, ctypes.alignment(ctypes.c_void_p))
    assert m[3] == platform.python_version() and m[5].startswith(platform.machine())
    assert lines[1].split() == ["offset", "size", "field", "type"]
    rows = {f: (int(o), int(s), t) for o, s, f, t in (re.fullmatch(r"\s+(\d+)\s+(\d+)  (\S+)\s+(.+)", r).groups()
                                                      for r in lines[2:])}
    obj = object()
    off, size, _ = rows["ob_type"]
    assert size == ctypes.sizeof(ctypes.c_void_p)
    assert ctypes.c_void_p.from_address(id(obj) + off).value == id(object)
    off, size, _ = rows["ob_refcnt"] if "ob_refcnt" in rows else rows["ob_ref_local"]
    before = ctypes.c_ssize_t.from_address(id(obj) + off).value & ((1 << 8 * size) - 1)
    keep = [obj, obj]
    assert ctypes.c_ssize_t.from_address(id(obj) + off).value & ((1 << 8 * size) - 1) == before + len(keep)
    assert sum(s for o, s, t in rows.values()) >= object.__basicsize__


def test_show_verbose_says_what_checked_the_table_in_use(capsys):
    """`show -v` adds the table in use, what checked it (`offsets.build().checked_by`) and how the
    struct is earned here; the rows stay as they are."""
    import offsets

    plain = run(capsys, "show", "PyObject").splitlines()
    lines = run(capsys, "show", "PyObject", "-v").splitlines()
    m = offsets.build()
    assert lines[0] == plain[0] and lines[2:] == plain[1:]
    assert lines[1] == f"  table {m.table}, {m.kind}: {m.checked_by}; PyObject here: {m.earned('PyObject')}"
    assert "checked by " in lines[1]
