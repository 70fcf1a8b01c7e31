"""Exact on the same release built anywhere (docs/identity.md, "How an answer is earned"): by the
binary's build-id, and struct by struct by the inputs its layout depends on. Each case is a real
interpreter the runtime runs in (offsets/tools/foreign_builds.py: pyenv copies configured or
patched otherwise, with a libpython of their own under another build-id), asked through the
runtime alone (tests/jit_needs.py: no scanner, no own tables, no autoscan), and each answer is
checked against the build's own truth: its libpython's DWARF (the code is pyenv's) and gcc over its
headers. What must not be exact (a struct whose header changed, and whatever holds it) is shown
refused or proven, never taken from the table.
"""
from __future__ import annotations

import json
import subprocess

import pytest

import jit_needs
from conftest import missing_input

VERSION = "3.12.1"
OLD_LIBC = ("HAVE_CLOSE_RANGE", "HAVE_MEMFD_CREATE")


def _case(make):
    from offsets.errors import BuildError

    try:
        return make()
    except BuildError as e:
        missing_input(str(e))


def _ask(python, names):
    got = jit_needs.answers(python, names)
    table, kind = got["__table__"]
    assert table is not None, kind
    return got


def _truth(names):
    from offsets.tools import foreign_builds

    lib = foreign_builds._libpython(foreign_builds.pyenv_prefix(VERSION), VERSION)
    dwarf, _ = jit_needs.truth(lib, None, names)
    return dwarf


def _identity(python) -> dict:
    code = ("import json; from offsets import runtime as r; m = r.running_identity(); b = r.build(); "
            "print(json.dumps({'build_id': m.build_id, 'binary': m.where['binary'], 'kind': b.kind, 'table': b.table, "
            "'detail': b.detail}))")
    out = subprocess.run([str(python), "-S", "-c", code], capture_output=True, text=True,
                         env=jit_needs.clean_env("/nonexistent-tables"))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_build_id_alone_makes_every_struct_exact_without_headers():
    """pyenv's libpython under the shipped table's recorded build-id, its include/ removed: every
    name the table has is exact, and equals the DWARF of that very libpython."""
    from offsets.remote.elf import build_id_of
    from offsets.tools import foreign_builds

    python = _case(lambda: foreign_builds.no_headers(VERSION))
    me = _identity(python)
    lib = foreign_builds._libpython(foreign_builds.pyenv_prefix(VERSION), VERSION)
    assert me["build_id"] == build_id_of(str(lib)) and "build-id" in me["detail"]      # truth: the file's note
    names = jit_needs.names("3.12")
    got = _ask(python, names)
    tally = jit_needs.tally(got)
    assert tally["refused"] == tally["proven"] == tally["error"] == 0 and tally["exact"] > 300
    bad, _ = jit_needs.wrong(got, _truth(names), {})
    assert not bad


def test_macros_no_struct_depends_on_leave_its_structs_exact():
    """What configure writes on an older C library (no HAVE_CLOSE_RANGE, HAVE_MEMFD_CREATE), with
    another build-id: only the headers vouch, and every struct of the needs list that has a
    dependency set is exact (no set holds those macros), equal to the binary's DWARF. What pyenv's
    table filled from DWARF (the `.c` structs, whose text is not at hand) has no set: it needs the
    whole build's pyconfig.h, so it is not exact here (proven, or refused saying so)."""
    from offsets.layout import table_yaml
    from offsets.tools import foreign_builds

    python = _case(lambda: foreign_builds.variant(VERSION, "old-libc-own-id", drop=OLD_LIBC))
    me = _identity(python)
    assert me["build_id"] and "build-id" not in me["detail"]
    names = jit_needs.names("3.12")
    got = _ask(python, names)
    table = table_yaml.load(jit_needs.ROOT / "generated" / f"{got['__table__'][0]}.yaml")
    assert all(table.structs[s].depends is None for s in {n.partition(".")[0] for n, a in got.items()
                                                             if a[0] == "refused"} if s in table.structs)
    with_sets = [n for n, a in got.items() if n != "__table__" and a[0] != "absent"
                 and (table.structs.get(n.partition(".")[0]) or table.structs[table.names[n.partition(".")[0]]]).depends]
    assert len(with_sets) > 400 and all(got[n][0] == "exact" for n in with_sets)
    bad, _ = jit_needs.wrong(got, _truth(names), {})
    assert not bad


def test_a_header_a_struct_reaches_makes_it_and_its_holders_not_exact():
    """cpython/listobject.h patched (a comment appended: the text differs, the layout does not, so
    the refusal is the rule's, not the compiler's): PyListObject, which that header defines, is not
    exact; a struct whose closure does not reach it (PyTupleObject, PyThreadState) stays exact."""
    from offsets.tools import foreign_builds

    python = _case(lambda: foreign_builds.variant(VERSION, "patched-listobject",
                                                  edit=(("cpython/listobject.h", "\n/* a distributor's patch */\n"),)))
    names = ["PyListObject.allocated", "PyListObject", "PyTupleObject.ob_item", "PyThreadState.interp",
             "PyTupleObject"]
    got = _ask(python, names)
    assert got["PyListObject.allocated"][0] in ("proven", "refused")
    if got["PyListObject.allocated"][0] == "refused":
        assert "Include/cpython/listobject.h" in got["PyListObject.allocated"][1]
    assert got["PyTupleObject.ob_item"][0] == got["PyThreadState.interp"][0] == got["PyTupleObject"][0] == "exact"
    bad, _ = jit_needs.wrong(got, _truth(names), {})
    assert not bad


@pytest.mark.parametrize("pid", [True, False], ids=["process", "binary"])
def test_another_process_is_read_by_the_same_rule(pid, tmp_path):
    """offsets identify of that old-libc build with another build-id: exact by its headers (out of
    process, the same rule: remote/choose.py calls runtime/choice.py); of the copy without headers
    but pyenv's libpython: exact by build-id."""
    import os
    import sys

    from offsets.tools import foreign_builds

    for python, by in ((_case(lambda: foreign_builds.variant(VERSION, "old-libc-own-id", drop=OLD_LIBC)), "headers"),
                       (_case(lambda: foreign_builds.no_headers(VERSION)), "build-id")):
        cmd = [sys.executable, "-m", "offsets", "identify", "--json"]
        proc = None
        if pid:
            proc = subprocess.Popen([str(python), "-S", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
            cmd += ["--pid", str(proc.pid)]
        else:
            cmd += ["--binary", str(python.parent.parent / "lib" / f"libpython{VERSION[:4]}.so.1.0")]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True,
                                 env={**os.environ, "OFFSETS_TABLES": str(tmp_path / "none")})
        finally:
            if proc is not None:
                proc.stdin.close()
                proc.wait()
        assert out.returncode == 0, out.stderr
        keys = json.loads(out.stdout)
        assert (keys["earned"], keys["earned_by"]) == ("exact", by), keys
