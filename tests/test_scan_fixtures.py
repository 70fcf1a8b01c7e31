"""Golden tests of the scanner's rules on a tiny fake build (tests/fixtures/fakepy).

Expected numbers are the C layout rules worked out by hand for x86_64 (and checked by gcc in
test_probe_pyenv.py on real builds); each test names the rule it pins down.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import own_cache
from offsets.scan import build_inputs as build, scanner
from offsets.layout import table_yaml
from offsets.layout.names import resolve

FAKE = Path(__file__).parent / "fixtures" / "fakepy"


@pytest.fixture(scope="module")
def table():
    return scanner.scan(build.from_prefix(FAKE, target="x86_64-linux-gnu"),
                        scanner.ScanOptions(use_cache=False))


def fields(table, struct):
    return {f.path: (f.offset, f.size) for f in table.structs[struct].fields}


def test_build_is_read_from_the_builds_own_files(table):
    b = table.build
    assert (b.version, hex(b.hexversion)) == ("3.99.1", "0x36301f0")
    assert b.target.pointer_size == 8 and b.target.triple == "x86_64-linux-gnu"
    assert b.config["Py_DEBUG"] is False and b.inputs["source"] is None
    assert b.inputs["pyconfig_h"].startswith("sha256:")


def test_anonymous_union_member_is_flattened(table):
    assert fields(table, "PyObject") == {"ob_refcnt": (0, 8), "ob_refcnt_split": (0, 8), "ob_type": (8, 8)}
    assert table.structs["PyObject"].field("ob_refcnt_split").array_len == 2


def test_named_member_of_untagged_type_keeps_its_name(table):
    f = fields(table, "FakeUnicode")
    assert f["data"] == (32, 8) and f["data.any"] == (32, 8) and f["data.latin1"] == (32, 8)
    assert "any" not in f


def test_bitfields_and_unnamed_padding(table):
    s = table.structs["FakeUnicode"]
    got = {f.path: (f.offset, f.size, f.bit_offset, f.bit_width) for f in s.fields if f.is_bitfield}
    assert got == {"state.interned": (24, 4, 0, 2), "state.kind": (24, 4, 2, 3), "state.ascii": (24, 4, 8, 1)}


def test_nested_named_members_are_dotted_paths_with_absolute_offsets(table):
    f = fields(table, "_expr")
    assert f["kind"] == (0, 4) and f["v.Constant.kind"] == (16, 8) and f["v.Constant.value"] == (8, 8)
    assert f["v.UnaryOp.op"] == (8, 4) and f["lineno"] == (24, 4)
    assert fields(table, "PyVarObject")["ob_base.ob_type"] == (8, 8)


def test_typedef_names_the_struct_and_tags_become_aliases(table):
    s = table.structs["PyTypeObject"]
    assert (s.size, s.align, s.defined_in) == (40, 8, "Include/Python.h:45")
    assert table.names["_typeobject"] == "PyTypeObject" and table.names["PyTypeObjectAgain"] == "PyTypeObject"
    assert resolve(table, "_typeobject.ob_base.ob_base.ob_type")[1].offset == 8


def test_flexible_array_member_and_fixed_array(table):
    s = table.structs["PyTypeObject"]
    assert s.field("tp_items").flexible and s.field("tp_items").offset == 40 and s.field("tp_items").size == 0
    assert s.field("tp_flags_bytes").array_len == 3 and s.field("tp_flags_bytes").size == 3


def test_type_spellings_hold_no_paths(table):
    text = table_yaml.dumps(table)
    assert str(FAKE) not in text and "unnamed" not in text and "anonymous at" not in text
    assert table.structs["FakeUnicode"].field("state").type == "struct <anonymous>"


def test_yaml_round_trip_is_exact_and_deterministic(table, tmp_path):
    text = table_yaml.dumps(table)
    assert table_yaml.loads(text) == table
    again = scanner.scan(build.from_prefix(FAKE, target="x86_64-linux-gnu"), scanner.ScanOptions(use_cache=False))
    assert table_yaml.dumps(again) == text


def test_cached_rescan_gives_the_same_table(tmp_path, monkeypatch):
    own_cache(monkeypatch, tmp_path / "cache")
    tree = tmp_path / "fake"
    shutil.copytree(FAKE, tree)
    b = build.from_prefix(tree, target="x86_64-linux-gnu")
    first = table_yaml.dumps(scanner.scan(b))
    assert list((tmp_path / "cache" / "scan").glob("*/*.json"))     # in the scanner code's generation
    assert table_yaml.dumps(scanner.scan(b)) == first
    # a changed header invalidates the cached unit
    header = tree / "include" / "python3.99" / "Python.h"
    header.write_text(header.read_text().replace("int lineno;", "long lineno;"))
    changed = scanner.scan(build.from_prefix(tree, target="x86_64-linux-gnu"))
    assert changed.structs["_expr"].field("lineno").size == 8


def test_pyconfig_of_any_file_name(tmp_path, table):
    """`--pyconfig build/pyconfig-x86_64.h`: Python.h includes "pyconfig.h", so the scan includes a
    content-addressed copy of that name; the table is the one a file named pyconfig.h gives. The
    scan cache is empty, so the unit is parsed (tests/test_sources.py does the same with --source)."""
    import os
    import subprocess
    import sys

    from offsets.scan.clang_headers import builtin_include

    tree = tmp_path / "fake"
    shutil.copytree(FAKE, tree)
    odd = tmp_path / "build" / "pyconfig-x86_64.h"
    odd.parent.mkdir()
    (tree / "include" / "python3.99" / "pyconfig.h").rename(odd)
    out = tmp_path / "t.yaml"
    proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "-q", "--prefix", str(tree), "--pyconfig", str(odd),
                           "--target", "x86_64-linux-gnu", "-o", str(out)], capture_output=True, text=True,
                          env=dict(os.environ, OFFSETS_CACHE=str(tmp_path / "empty-cache"),
                                   OFFSETS_CLANG_INCLUDE=str(builtin_include())))
    assert proc.returncode == 0, proc.stderr
    got = table_yaml.load(out)
    assert got.build.inputs["pyconfig_h"] == table.build.inputs["pyconfig_h"]
    assert got.structs == table.structs and got.build.config == table.build.config


def test_an_unreached_header_is_listed_however_the_tree_is_named(tmp_path):
    """Headers are matched to the files libclang read by the file, not by how its path is spelled
    (a link to the tree, a `..` in the prefix)."""
    tree = tmp_path / "fake"
    shutil.copytree(FAKE, tree)
    (tree / "include/python3.99/cpython").mkdir(exist_ok=True)
    (tree / "include/python3.99/cpython/unused.h").write_text("struct unused { int a; };\n")
    (tmp_path / "link").symlink_to(tree)
    for prefix in (tree, tmp_path / "link", tmp_path / "link" / ".." / "fake"):
        t = scanner.scan(build.from_prefix(prefix, target="x86_64-linux-gnu"), scanner.ScanOptions(use_cache=False, jobs=1))
        assert [s for s in t.skipped if "not reached" in s] == \
            ["Include/cpython/unused.h: not reached from Python.h with this config"], prefix


def test_each_struct_records_how_c_names_it(table, tmp_path):
    """The tag where there is one (declared where the body is), else the typedef that defines it; gcc
    accepts each spelling after the fake Python.h and gives each the table's size."""
    import subprocess

    got = {k: s.c_type for k, s in table.structs.items()}
    assert got["PyObject"] == "struct _object"             # typedef struct _object {...} PyObject
    assert got["PyVarObject"] == "PyVarObject"             # typedef struct {...} PyVarObject: no tag
    assert got["_expr"] == "struct _expr"                  # a tag alone
    assert got["PyTypeObject"] == "struct _typeobject"     # its typedef comes before the body
    src = tmp_path / "spell.c"
    src.write_text('#include "Python.h"\n' + "".join(
        f'_Static_assert(sizeof({s.c_type}) == {s.size}, "{k}");\n' for k, s in table.structs.items()))
    proc = subprocess.run(["gcc", "-std=c11", "-fsyntax-only", f"-I{FAKE / 'include' / 'python3.99'}", str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr


def test_an_include_guard_is_the_first_ifndef_that_defines_its_own_name():
    from offsets.scan.macro_text import include_guard

    assert include_guard("#ifndef Py_INTERNAL_LIST_H\n#define Py_INTERNAL_LIST_H\n#endif\n") == "Py_INTERNAL_LIST_H"
    # 3.13's pycore_bytes_methods.h: a condition first, then the guard
    assert include_guard("#ifndef Py_LIMITED_API\n#ifndef Py_BYTES_CTYPE_H\n#define Py_BYTES_CTYPE_H\n") == \
        "Py_BYTES_CTYPE_H"
    assert include_guard("#ifndef SIZE\n#define SIZE 8\n#endif\n") is None       # a default, not a guard
    assert include_guard("#pragma once\nstruct s { int a; };\n") is None
