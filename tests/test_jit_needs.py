"""The JIT-needs list (tests/data/jit_needs.yaml, tests/jit_needs.py) asked of real interpreters: in
every pyenv CPython 3.8-3.13, the runtime alone answers each name and constant of that version's
list, and every answer equals the build's own number: gcc's offsetof/sizeof and the constant's value
over its installed headers, and its libpython's DWARF (which also holds the structs of .c files).
0 wrong; and every name the shipped table has is answered, exact (that table is exactly these builds')."""
from __future__ import annotations

import pytest

import jit_needs
from conftest import REPO, committed_table, missing_input, pyenv_python

MINORS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")


def _build(minor: str):
    """(interpreter, version, its shipped table, its libpython, BuildInputs of its headers)."""
    from offsets.scan import build_inputs

    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv has no CPython {minor} (`pyenv install {minor}`)")
    b = build_inputs.from_python(str(python))
    table = REPO / "generated" / f"cpython-{b.version}-x86_64-linux-gnu.yaml"
    if not table.is_file():
        missing_input(f"no committed table for pyenv's CPython {b.version}: generated/{table.name}")
    lib = python.parent.parent / "lib" / f"libpython{minor}.so.1.0"
    if not lib.is_file():
        missing_input(f"pyenv's CPython {b.version} has no shared libpython with DWARF ({lib})")
    return python, b.version, committed_table(table), lib, b


@pytest.mark.slow
@pytest.mark.parametrize("minor", MINORS)
def test_every_answer_to_the_needs_list_is_the_compilers(minor):
    python, version, table, lib, b = _build(minor)
    has, absent = jit_needs.split(table)
    got = jit_needs.answers(python, has + absent)
    counts, constants = jit_needs.tally(got), jit_needs.tally(got, constants=True)
    dwarf, gcc = jit_needs.truth(lib, b, has)
    bad, unchecked = jit_needs.wrong(got, dwarf, gcc)
    fields = [n for n in has + absent if not n.startswith(jit_needs.CONST)]
    print(f"\nCPython {version}: {len(fields)} names read in this version, {sum(n in fields for n in has)} in its "
          f"table; answered {counts}; constants {constants}; checked against gcc ({len(gcc)}) and "
          f"DWARF ({len(dwarf)}): {len(bad)} wrong")
    assert got["__table__"] == [table.build.table_name, "exact"]
    assert not bad, "\n".join(bad[:40])
    assert not unchecked, f"answers neither gcc nor DWARF could check: {unchecked[:20]}"
    assert counts["error"] == 0, [(n, a) for n, a in got.items() if a[0] == "error"][:10]
    # the names the table has are answered, exactly; the others are unknown to it, and said so: absent,
    # or refused by another table of the minor that has them (never answered: the live check did not read them)
    assert sorted(n for n, a in got.items() if a[0] == "exact") == sorted(has)
    assert sorted(n for n, a in got.items() if a[0] in ("absent", "refused")) == sorted(absent)
    assert all("is not exactly this build's table" in got[n][1] for n in absent if got[n][0] == "refused")
    # the list is what the issue measured: hundreds of names, nearly all of them in the tables
    assert len(fields) > 250 and constants["exact"] > 20
    assert len(has) >= 0.9 * (len(has) + len(absent))


@pytest.mark.slow
def test_a_wrong_answer_is_reported_with_both_numbers():
    """The check itself: an answer moved by 8 bytes, a struct size off by 8 and a constant off by one
    are all reported."""
    python, version, table, lib, b = _build("3.12")
    names = ["PyListObject.ob_item", "PyTupleObject", "listiterobject.it_index", "const:Py_TPFLAGS_HEAPTYPE"]
    got = jit_needs.answers(python, names)
    dwarf, gcc = jit_needs.truth(lib, b, names)
    assert jit_needs.wrong(got, dwarf, gcc) == ([], [])
    moved = dict(got)
    moved["PyListObject.ob_item"] = [got["PyListObject.ob_item"][0], got["PyListObject.ob_item"][1] + 8, None, None]
    moved["PyTupleObject"] = [got["PyTupleObject"][0], got["PyTupleObject"][1] + 8, None, None]
    moved["listiterobject.it_index"] = ["proven", got["listiterobject.it_index"][1] - 8, None, None]
    flag = got["const:Py_TPFLAGS_HEAPTYPE"][1]
    moved["const:Py_TPFLAGS_HEAPTYPE"] = ["exact", flag + 1, None, None]
    bad, _ = jit_needs.wrong(moved, dwarf, gcc)
    assert f"const:Py_TPFLAGS_HEAPTYPE: runtime says {flag + 1} (exact), gcc says {flag}" in bad
    item, size = got["PyListObject.ob_item"][1], got["PyTupleObject"][1]
    assert f"PyListObject.ob_item: runtime says {item + 8} (exact), gcc says {item}" in bad
    assert f"PyTupleObject: runtime says {size + 8} (exact), gcc says {size}" in bad
    assert any(b.startswith("listiterobject.it_index: runtime says") and "DWARF says" in b for b in bad)
    assert "listiterobject.it_index" not in gcc        # a struct of a .c file: DWARF alone knows it


def test_a_name_absent_in_a_version_is_said_so(monkeypatch):
    """The loader on a list of two names read where their versions say: 3.13 removed
    PyThreadState.cframe (the 3.12 table has it, the 3.13 table does not), so in 3.13 it is absent
    in that version, not an error; a name read only from 3.13 on is no need of 3.12."""
    doc = {"schema": 1, "projects": {}, "needs": {
        "PyThreadState.cframe": {"greenlet": {"at": "x.cpp:1", "versions": "3.11-3.13"}},
        "PyThreadState.current_frame": {"greenlet": {"at": "x.cpp:2", "versions": "3.13-3.15",
                                                     "free-threaded": "3.14"}}}}
    monkeypatch.setattr(jit_needs, "load", lambda: doc)
    assert jit_needs.names("3.12") == ["PyThreadState.cframe"]
    assert jit_needs.names("3.13") == ["PyThreadState.cframe", "PyThreadState.current_frame"]
    assert jit_needs.names("3.13", free_threaded=True) == ["PyThreadState.cframe"]
    assert jit_needs.split(REPO / "generated" / "cpython-3.12.1-x86_64-linux-gnu.yaml") == (["PyThreadState.cframe"], [])
    assert jit_needs.split(REPO / "generated" / "cpython-3.13.0-x86_64-linux-gnu.yaml") == (
        ["PyThreadState.current_frame"], ["PyThreadState.cframe"])


def test_the_committed_list_says_where_each_name_is_read():
    """Every name of the committed list has, per project, a place and the versions it is read in
    (release minors, or only free-threaded ones: Py_GIL_DISABLED code)."""
    doc = jit_needs.load()
    assert set(doc["projects"]) == {"cinderx", "cython", "dynamo", "greenlet", "mypyc", "nuitka", "numba", "pyston"}
    for name, readers in doc["needs"].items():
        assert readers, name
        for project, r in readers.items():
            assert project in doc["projects"] and r["at"], (name, project)
            assert jit_needs._minors(r["versions"]) or jit_needs._minors(r.get("free-threaded", "")), (name, project)
