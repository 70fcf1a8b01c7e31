"""The differ and its formatters on tiny hand-built tables, with exact expected values and text;
then the differ on the real committed tables, against changes known from CPython's history."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import dwarf_fields, missing_input, pyenv_dwarf, pyenv_python3
from offsets.drift import diff as D
from offsets.drift import formats as F
from offsets.errors import UnknownNameError
from offsets.layout.model import Build, Field, Struct, Table, Target

REPO = Path(__file__).parent.parent
GENERATED = REPO / "generated"


def build(version="3.12.1", ft=False):
    major, minor, micro = map(int, version.split("."))
    return Build(version, (major << 24) | (minor << 16) | (micro << 8) | 0xF0,
                 {"Py_DEBUG": False, "Py_GIL_DISABLED": ft}, Target("x86_64-linux-gnu", 8))


def table(version, *structs, names=None, ft=False):
    return Table(build(version, ft), {"offsets": "0.1.0", "libclang": "16.0.6"},
                 {s.name: s for s in structs}, names or {})


def struct(name, size, *fields, align=8, kind="struct"):
    return Struct(name, kind, size, align, "Include/x.h:1", tuple(Field(*f) for f in fields))


OLD = table("3.11.7",
            struct("Obj", 24, ("ob_refcnt", 0, 8, "Py_ssize_t"), ("ob_type", 8, 8, "PyTypeObject *"),
                   ("flags", 16, 4, "unsigned int", 0, 3), ("kind", 16, 4, "unsigned int", 3, 2),
                   ("count", 20, 4, "int")),
            struct("Gone", 8, ("x", 0, 8, "long")),
            struct("listiterobject", 32, ("ob_base", 0, 16, "PyObject"), ("it_index", 16, 8, "Py_ssize_t"),
                   ("it_seq", 24, 8, "PyListObject *")),
            struct("_frame", 16, ("f_back", 0, 8, "struct _frame *"), ("f_code", 8, 8, "PyCodeObject *")))
NEW = table("3.12.1",
            struct("Obj", 32, ("ob_refcnt", 0, 8, "Py_ssize_t"), ("ob_type", 16, 8, "PyTypeObject *"),
                   ("flags", 8, 4, "unsigned int", 0, 4), ("kind", 8, 4, "unsigned int", 3, 2),
                   ("count", 24, 8, "long"), ("extra", 12, 4, "int")),
            struct("_PyListIterObject", 32, ("ob_base", 0, 16, "PyObject"), ("it_index", 16, 8, "Py_ssize_t"),
                   ("it_seq", 24, 8, "PyListObject *")),
            struct("PyFrameObject", 16, ("f_back", 0, 8, "PyFrameObject *"), ("f_executable", 8, 8, "PyCodeObject *")),
            struct("Born", 16, ("y", 0, 8, "long"), align=16, kind="union"),
            names={"_frame": "PyFrameObject"})


def C(kind, struct, old_struct, field=None, old=None, new=None):
    return D.Change(kind, struct, old_struct, field, old, new)


def test_every_kind_of_change_exactly():
    f = {s: {x.path: x for x in t.structs[s].fields} for t in (OLD, NEW) for s in t.structs}
    assert D.diff(OLD, NEW) == [
        C("struct-added", "Born", None, new=NEW.structs["Born"]),
        C("struct-removed", "Gone", "Gone", old=OLD.structs["Gone"]),
        C("size", "Obj", "Obj", old=24, new=32),
        C("moved", "Obj", "Obj", "ob_type", 8, 16),
        C("moved", "Obj", "Obj", "flags", 16, 8),
        C("bits", "Obj", "Obj", "flags", (0, 3), (0, 4)),
        C("moved", "Obj", "Obj", "kind", 16, 8),
        C("moved", "Obj", "Obj", "count", 20, 24),
        C("resized", "Obj", "Obj", "count", 4, 8),
        C("retyped", "Obj", "Obj", "count", "int", "long"),
        C("field-added", "Obj", "Obj", "extra", new=f["Obj"]["extra"]),
        C("struct-renamed", "PyFrameObject", "_frame", old="_frame", new="PyFrameObject"),
        C("retyped", "PyFrameObject", "_frame", "f_back", "struct _frame *", "PyFrameObject *"),
        C("renamed", "PyFrameObject", "_frame", "f_executable", "f_code", "f_executable"),
        C("struct-renamed", "_PyListIterObject", "listiterobject", old="listiterobject", new="_PyListIterObject"),
    ]


def test_same_table_no_change_and_alias_only_is_not_drift():
    assert D.diff(OLD, OLD) == []
    only_alias = [c for c in D.diff(OLD, NEW) if c.struct == "_PyListIterObject"]
    assert [c.kind for c in only_alias] == ["struct-renamed"] and not only_alias[0].is_drift


def test_ambiguous_rename_is_not_guessed():
    a = table("3.11.7", struct("S", 16, ("a", 0, 8, "long"), ("b", 8, 8, "long")))
    b = table("3.12.1", struct("S", 16, ("a", 0, 8, "long"), ("c", 8, 8, "long"), ("d", 8, 8, "long")))
    assert D.diff(a, b) == [C("field-removed", "S", "S", "b", old=a.structs["S"].fields[1]),
                            C("field-added", "S", "S", "c", new=b.structs["S"].fields[1]),
                            C("field-added", "S", "S", "d", new=b.structs["S"].fields[2])]


def test_align_kind_flexible_and_array_length():
    a = table("3.11.7", struct("S", 16, ("n", 0, 8, "long"), ("items", 8, 0, "long[]", None, None, None, True)))
    b = table("3.12.1", struct("S", 32, ("n", 0, 8, "long"), ("items", 16, 16, "long[2]", None, None, 2),
                               align=16, kind="union"))
    assert D.diff(a, b) == [C("kind", "S", "S", old="struct", new="union"), C("size", "S", "S", old=16, new=32),
                            C("align", "S", "S", old=8, new=16), C("moved", "S", "S", "items", 8, 16),
                            C("resized", "S", "S", "items", 0, 16),
                            C("retyped", "S", "S", "items", "long[] (flexible)", "long[2]")]


def test_array_length_change_with_the_same_spelling():
    """A typedef'd array (`arr_t`, `typedef long arr_t[N]`) keeps its spelling when N changes: the
    change says the lengths, and text output shows them."""
    a = table("3.11.7", struct("S", 40, ("n", 0, 8, "long"), ("v", 8, 32, "arr_t", None, None, 4)))
    b = table("3.12.1", struct("S", 72, ("n", 0, 8, "long"), ("v", 8, 64, "arr_t", None, None, 8)))
    changes = D.diff(a, b)
    assert changes == [C("size", "S", "S", old=40, new=72), C("resized", "S", "S", "v", 32, 64),
                       C("retyped", "S", "S", "v", "arr_t (length 4)", "arr_t (length 8)")]
    c = table("3.12.1", struct("S", 40, ("n", 0, 8, "long"), ("v", 8, 32, "arr_t", None, None, 4)))
    assert D.diff(a, c) == []
    assert "  ~ v: retyped: arr_t (length 4) -> arr_t (length 8)\n" in F.text(F.Report(a.build, b.build, changes))


def test_watching_a_parent_path_sees_changes_below_it():
    """`S.ob_base` watches `ob_base.ob_refcnt` too; `S.ob_base.ob_ref` is not a parent of `ob_refcnt`."""
    a = table("3.11.7", struct("S", 24, ("ob_base", 0, 16, "PyObject"), ("ob_base.ob_refcnt", 0, 8, "Py_ssize_t"),
                               ("ob_base.ob_ref", 8, 4, "int"), ("ob_base.ob_type", 8, 8, "PyTypeObject *"),
                               ("x", 16, 8, "long")))
    b = table("3.12.1", struct("S", 24, ("ob_base", 0, 16, "PyObject"), ("ob_base.ob_refcnt", 4, 4, "uint32_t"),
                               ("ob_base.ob_ref", 8, 4, "int"), ("ob_base.ob_type", 8, 8, "PyTypeObject *"),
                               ("x", 16, 8, "long")))
    changes = D.diff(a, b)
    assert [(c.kind, c.name) for c in changes] == [("moved", "S.ob_base.ob_refcnt"), ("resized", "S.ob_base.ob_refcnt"),
                                                   ("retyped", "S.ob_base.ob_refcnt")]
    parent = D.resolve_watch([(1, "S.ob_base")], a, b)
    assert [c for c in changes if D.watchers(c, parent)] == changes
    for other in ("S.ob_base.ob_ref", "S.ob_base.ob_type", "S.x"):
        assert [c for c in changes if D.watchers(c, D.resolve_watch([(1, other)], a, b))] == [], other
    assert F.Report(a.build, b.build, changes, parent, "jit.txt").exit_code == 1
    assert F.Report(a.build, b.build, changes, D.resolve_watch([(1, "S.ob_base.ob_ref")], a, b), "jit.txt").exit_code == 0


WATCH_FILE = """\
# fields my JIT reads
Obj.count          # the counter
listiterobject.it_index
PyFrameObject.f_back
Born
"""


def test_watch_parse_resolve_and_filter():
    entries = D.parse_watch(WATCH_FILE)
    assert entries == [(2, "Obj.count"), (3, "listiterobject.it_index"), (4, "PyFrameObject.f_back"), (5, "Born")]
    ws = D.resolve_watch(entries, OLD, NEW)
    assert ws == [D.Watch("Obj.count", 2, "Obj", "Obj", "count"),
                  D.Watch("listiterobject.it_index", 3, "listiterobject", "_PyListIterObject", "it_index"),
                  D.Watch("PyFrameObject.f_back", 4, "_frame", "PyFrameObject", "f_back"),
                  D.Watch("Born", 5, None, "Born", None)]
    watched = [(c.kind, c.name) for c in D.diff(OLD, NEW) if D.watchers(c, ws)]
    assert watched == [("struct-added", "Born"), ("moved", "Obj.count"), ("resized", "Obj.count"),
                       ("retyped", "Obj.count"), ("retyped", "PyFrameObject.f_back")]


def test_watch_renamed_field_by_its_old_name():
    ws = D.resolve_watch([(1, "PyFrameObject.f_code")], OLD, NEW)
    assert [(c.kind, c.old, c.new) for c in D.diff(OLD, NEW) if D.watchers(c, ws)] == \
        [("renamed", "f_code", "f_executable")]


def test_unknown_watch_name_is_an_error_with_suggestions():
    with pytest.raises(UnknownNameError) as e:
        D.resolve_watch([(7, "Obj.cuont")], OLD, NEW, where="jit.txt")
    assert e.value.suggestions == ["Obj.count"]
    assert str(e.value) == ("unknown name 'Obj.cuont' in jit.txt line 7 (neither CPython 3.11.7 nor 3.12.1 has it); "
                            "did you mean Obj.count?")


def small_report(watch=None):
    a = table("3.11.7", struct("S", 16, ("a", 0, 8, "long"), ("b", 8, 4, "int"), ("c", 12, 4, "int")),
              struct("T", 8, ("t", 0, 8, "long")), struct("listiterobject", 8, ("i", 0, 8, "long")))
    b = table("3.12.1", struct("S", 24, ("a", 0, 8, "long"), ("b", 16, 4, "int"), ("d", 12, 4, "int"),
                               ("e", 8, 4, "int|x")),
              struct("_PyListIterObject", 8, ("i", 0, 8, "long")))
    ws = D.resolve_watch(D.parse_watch(watch), a, b) if watch else None
    return F.Report(a.build, b.build, D.diff(a, b), ws, "jit.txt" if watch else None)


def test_text_exact():
    r = small_report()
    assert r.exit_code == 1
    assert F.text(r) == """\
CPython 3.11.7 (release, x86_64-linux-gnu) -> CPython 3.12.1 (release, x86_64-linux-gnu)
S
  ~ size 16 -> 24
  ~ b: moved: offset 8 -> 16
  ~ d: probably renamed from c (same offset, size and type)
  + e: added (offset 8, size 4, int|x)
T
  - struct removed (was 8 bytes, align 8)
_PyListIterObject
  = same struct, named listiterobject in the old table
5 change(s) in 2 struct(s)
"""
    assert F.text(r, colour=True).splitlines()[1:4] == [
        "\033[1mS\033[0m", "  \033[33m~\033[0m size 16 -> 24", "  \033[33m~\033[0m b: moved: offset 8 -> 16"]


def test_text_watch_and_no_drift():
    r = small_report("S.a\nlistiterobject\n")
    assert r.exit_code == 0
    assert F.text(r) == """\
CPython 3.11.7 (release, x86_64-linux-gnu) -> CPython 3.12.1 (release, x86_64-linux-gnu)
_PyListIterObject
  = same struct, named listiterobject in the old table
no drift in the 2 watched name(s); 5 other change(s) not watched
"""


def test_markdown_exact():
    assert F.markdown(small_report("S.b\nS.e\n")) == """\
### offsets: layout drift

CPython 3.11.7 (release, x86_64-linux-gnu) → CPython 3.12.1 (release, x86_64-linux-gnu)

| | struct | field | change |
|---|---|---|---|
| ~ | `S` | `b` | moved: offset 8 -> 16 |
| + | `S` | `e` | added (offset 8, size 4, int\\|x) |

**2 change(s) to watched names in 1 struct(s); 3 other change(s) not watched**
"""


def test_json_structure():
    doc = json.loads(F.as_json(small_report("S.b\n")))
    assert doc["format"] == "offsets-drift" and doc["version"] == 1 and doc["drift"] is True
    assert doc["old"] == {"version": "3.11.7", "vendor": "upstream", "config": "release", "triple": "x86_64-linux-gnu",
                          "pointer_size": 8,
                          "table": "cpython-3.11.7-x86_64-linux-gnu"}
    assert doc["watch"] == ["S.b"]
    assert doc["changes"][1] == {"kind": "moved", "struct": "S", "old_struct": "S", "field": "b", "old": 8, "new": 16,
                                 "drift": True, "watched": True, "watch": ["S.b"],
                                 "message": "S.b: moved: offset 8 -> 16"}
    assert doc["changes"][3]["new"] == {"offset": 8, "size": 4, "type": "int|x"}
    assert doc["changes"][4] == {"kind": "struct-removed", "struct": "T", "old_struct": "T", "field": None,
                                 "old": {"kind": "struct", "size": 8, "align": 8, "fields": 1}, "new": None,
                                 "drift": True, "watched": False, "watch": [],
                                 "message": "T: struct removed (was 8 bytes, align 8)"}
    assert [c["watched"] for c in doc["changes"]] == [False, True, False, False, False, False]


def test_github_annotations_exact():
    assert F.github(small_report("S.b  # moved\n")) == (
        "::error file=jit.txt,line=1,title=offsets%3A CPython 3.11.7 -> 3.12.1::S.b: moved: offset 8 -> 16\n"
        "::error title=offsets%3A CPython 3.11.7 -> 3.12.1::"
        "1 change(s) to watched names in 1 struct(s); 4 other change(s) not watched\n")
    assert F.github(small_report("T.t\n")).splitlines()[0] == \
        "::error file=jit.txt,line=1,title=offsets%3A CPython 3.11.7 -> 3.12.1::T: struct removed (was 8 bytes, align 8)"


# -- the real committed tables ---------------------------------------------------------------------

def committed(version, config=""):
    path = GENERATED / f"cpython-{version}-{config}x86_64-linux-gnu.yaml"
    if not path.exists():
        missing_input(f"{path.name} is not committed")
    from offsets.drift.history import load_table

    return load_table(path)


def of(changes, struct):
    return [(c.kind, c.field, c.old if not isinstance(c.old, (Field, Struct)) else None,
             c.new if not isinstance(c.new, (Field, Struct)) else None) for c in changes if c.struct == struct]


def test_frame_object_3_10_to_3_11():
    """What the differ finds between the committed tables, with every number and type taken from
    the DWARF of pyenv's libpython3.10 and 3.11 (gcc's record, not the tables)."""
    old, new = committed("3.10.13"), committed("3.11.7")
    changes = D.diff(old, new)
    o, n = dwarf_fields("3.10.13", "PyFrameObject"), dwarf_fields("3.11.7", "PyFrameObject")
    size = {v: pyenv_dwarf(v).structs["PyFrameObject"].size for v in ("3.10.13", "3.11.7")}
    # 3.11 moved the frame's state to _PyInterpreterFrame and made PyFrameObject a PyObject
    removed = ["ob_base.ob_base", "ob_base.ob_size", "f_code", "f_builtins", "f_globals", "f_locals", "f_valuestack",
               "f_stackdepth", "f_gen", "f_lasti", "f_iblock", "f_state", "f_blockstack", "f_localsplus"]
    renamed = {"ob_base.ob_refcnt": "ob_base.ob_base.ob_refcnt", "ob_base.ob_type": "ob_base.ob_base.ob_type"}
    added = ["f_frame", "f_fast_as_locals", "_f_frame_data"]
    assert sorted(removed) == sorted(set(o) - set(n) - set(renamed.values()))       # DWARF agrees on the names
    assert sorted(added) == sorted(set(n) - set(o) - set(renamed))
    moved = [("moved", p, o[p].offset, n[p].offset) for p in ("f_trace", "f_lineno", "f_trace_lines", "f_trace_opcodes")]
    assert of(changes, "PyFrameObject") == [
        ("size", None, size["3.10.13"], size["3.11.7"]),
        *[("field-removed", p, None, None) for p in removed],
        ("resized", "ob_base", o["ob_base"].size, n["ob_base"].size),
        ("retyped", "ob_base", o["ob_base"].type, n["ob_base"].type),
        *[("renamed", p, q, p) for p, q in renamed.items()],
        ("moved", "f_back", o["f_back"].offset, n["f_back"].offset),
        ("retyped", "f_back", o["f_back"].type, n["f_back"].type),
        ("field-added", "f_frame", None, None), *moved,
        ("field-added", "f_fast_as_locals", None, None), ("field-added", "_f_frame_data", None, None)]
    assert of(changes, "_PyInterpreterFrame") == [("struct-added", None, None, None)]
    assert "_PyInterpreterFrame" not in old.structs and "_PyInterpreterFrame" not in pyenv_dwarf("3.10.13").structs
    # and a live 3.10: its frame type's tp_basicsize is sizeof(PyFrameObject)
    py310 = pyenv_python3("3.10.13")
    if py310:
        out = subprocess.run([py310, "-c", "import sys; print(type(sys._getframe()).__basicsize__)"],
                             capture_output=True, text=True, check=True).stdout
        assert int(out) == size["3.10.13"]


def test_refcount_into_anonymous_union_3_11_to_3_12_is_not_a_move():
    changes = D.diff(committed("3.11.7"), committed("3.12.1"))
    assert of(changes, "PyObject") == [("field-added", "ob_refcnt_split", None, None)]
    # in every struct present in both, the object header's refcount is unchanged; the one exception
    # is PyLongObject, which stopped being a PyVarObject in 3.12 (ob_size became lv_tag)
    header_refcnt = [(c.kind, c.struct, c.field, c.old) for c in changes
                     if c.field and re.fullmatch(r"(ob_base\.)*ob_refcnt", c.field)]
    assert header_refcnt == [("renamed", "PyLongObject", "ob_base.ob_refcnt", "ob_base.ob_base.ob_refcnt")]
    assert of(changes, "PyLongObject")[:3] == [("field-removed", "ob_base.ob_base", None, None),
                                               ("field-removed", "ob_base.ob_size", None, None),
                                               ("resized", "ob_base", 24, 16)]


@pytest.fixture(scope="module")
def freethreaded_313(tmp_path_factory):
    """The committed free-threaded 3.13.0 table, or (until `make tables` makes it) a fresh scan."""
    path = GENERATED / "cpython-3.13.0-freethreaded-x86_64-linux-gnu.yaml"
    if not path.exists():
        py = pyenv_python3("3.13.0")
        if not py:
            missing_input("no committed free-threaded 3.13.0 table and no pyenv 3.13.0 to scan")
        out = tmp_path_factory.mktemp("ft")
        from offsets.cli import main

        assert main(["scan", "--python", str(py), "--config", "free-threaded", "-q", "-o", str(out)]) == 0
        path = out / "cpython-3.13.0-freethreaded-x86_64-linux-gnu.yaml"
    from offsets.drift.history import load_table

    return load_table(path)


def test_pyobject_grew_3_12_to_3_13_freethreaded(freethreaded_313, tmp_path, capsys):
    ft = freethreaded_313
    assert ft.build.config["Py_GIL_DISABLED"] is True
    changes = D.diff(committed("3.12.1"), ft)
    assert of(changes, "PyObject") == [
        ("size", None, 16, 32),
        ("field-removed", "ob_refcnt", None, None), ("field-removed", "ob_refcnt_split", None, None),
        ("field-added", "ob_tid", None, None), ("field-added", "_padding", None, None),
        ("field-added", "ob_mutex", None, None), ("field-added", "ob_mutex._bits", None, None),
        ("field-added", "ob_gc_bits", None, None), ("field-added", "ob_ref_local", None, None),
        ("field-added", "ob_ref_shared", None, None), ("moved", "ob_type", 8, 24)]
    # the command's verdict for a JIT that reads the refcount and the type
    watch = tmp_path / "jit.txt"
    watch.write_text("PyObject.ob_refcnt\nPyObject.ob_type\n")
    ft_path = GENERATED / "cpython-3.13.0-freethreaded-x86_64-linux-gnu.yaml"
    if not ft_path.exists():
        from offsets.layout.table_yaml import write

        write(ft, ft_path := tmp_path / ft_path.name)
    from offsets.cli import main

    code = main(["diff", str(GENERATED / "cpython-3.12.1-x86_64-linux-gnu.yaml"), str(ft_path), "--watch", str(watch)])
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[1:] == [
        "PyObject", "  - ob_refcnt: removed (was offset 0, size 8, Py_ssize_t)", "  ~ ob_type: moved: offset 8 -> 24",
        out.splitlines()[-1]]
    assert out.splitlines()[-1].startswith("2 change(s) to watched names in 1 struct(s); ")
