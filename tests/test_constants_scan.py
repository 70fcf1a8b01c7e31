"""The scanner's constants: every enumerator and integer-constant macro of CPython's own files,
with its value and C type, the other macros counted by why they are not constants.

Golden values on a tiny fake build (tests/fixtures/fakeconst: each macro exercises one rule; the
expected numbers are C's rules worked out by hand, and gcc compiles the same headers to the same
values in test_constants_verify.py), the `NAME@FILE` rule on two `.c` files, and on real headers
the independent reading of libclang's own preprocessing record: every macro it records in
CPython's files is a candidate, and the definition it records last is the one in effect.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import missing_input, pyenv_python

from offsets.layout import table_yaml
from offsets.scan import build_inputs as build, clang_scan, constant_probe, scanner, units
from offsets.scan.clang_scan import Unit

FAKE = Path(__file__).parent / "fixtures" / "fakeconst"


@pytest.fixture(scope="module")
def table():
    return scanner.scan(build.from_prefix(FAKE, target="x86_64-linux-gnu"), scanner.ScanOptions(use_cache=False))


def values(table) -> dict:
    return {n: (c.value, c.type, c.size, c.kind) for n, c in table.constants.items()}


def test_integer_constants_with_values_and_c_types(table):
    got = values(table)
    # C11 6.7.2.2: an enumeration constant has type int; 6.4.4.1: 1UL is unsigned long; uint32_t
    # is unsigned int on x86_64 (glibc); sizeof is size_t (unsigned long); (char)'a' is 97
    assert got == {
        "FRAME_OWNED_BY_THREAD": (0, "int", 4, "enum"), "FRAME_OWNED_BY_GENERATOR": (1, "int", 4, "enum"),
        "FRAME_OWNED_BY_FRAME_OBJECT": (2, "int", 4, "enum"), "FRAME_OWNED_BY_CSTACK": (3, "int", 4, "enum"),
        "NEGATIVE_ONE": (-1, "int", 4, "enum"), "AFTER_NEGATIVE": (0, "int", 4, "enum"),
        "NESTED_ENUMERATOR": (7, "int", 4, "enum"),
        "SHIFT": (30, "int", 4, "macro"), "FLAG": (512, "unsigned long", 8, "macro"),
        "MASK": (1 << 30, "unsigned int", 4, "macro"), "NEG": (-5, "long long", 8, "macro"),
        "CH": (97, "char", 1, "macro"), "BOOLY": (1, "_Bool", 1, "macro"), "MULTI": (3, "int", 4, "macro"),
        "LIMIT_ALIAS": (2 ** 31 - 1, "int", 4, "macro"), "BYTES": (16, "unsigned long", 8, "macro"),
        "P_AFTER_OPEN": (7, "int", 4, "macro"),
        "SHADOWED": (2, "int", 4, "macro"),       # the macro, not the enumerator: what C code sees
        "SIZEOF_VOID_P": (8, "int", 4, "macro"), "SIZEOF_LONG": (8, "int", 4, "macro"),
        "HAVE_FAKE_THING": (1, "int", 4, "macro"),
        "PY_MAJOR_VERSION": (3, "int", 4, "macro"), "PY_MINOR_VERSION": (99, "int", 4, "macro"),
        "PY_MICRO_VERSION": (1, "int", 4, "macro"), "PY_RELEASE_SERIAL": (0, "int", 4, "macro"),
    }
    assert table.constants["SIZEOF_LONG"].defined_in == "Include/pyconfig.h"
    assert table.constants["SHIFT"].defined_in == "Include/cpython/consts.h"


def test_other_macros_are_counted_by_reason():
    b = build.from_prefix(FAKE, target="x86_64-linux-gnu")
    r = clang_scan.parse_unit(units.header_unit(b)[0])
    assert r.left_out == {
        "EMPTY": "empty", "COMMENTED": "empty", "FN": "function-like", "STR": "string", "PY_VERSION": "string",
        "FLT": "floating", "PTR": "pointer", "STRUCTY": "other-type", "RUNTIME": "not-constant",
        "FOLDED": "not-constant",      # (int)(1.5 * 2) folds to 3, but is no integer constant expression
        "STMT": "not-expression", "OPEN": "not-expression", "CLOSE": "not-expression",
        "PRAG": "not-expression", "PY_RELEASE_LEVEL": "not-expression", "WIDE": "too-wide",
        "UINT8_MAX": "outside",        # stdint.h's definition is in effect: the C library's
        # under a conditional that asks which compiler reads it: clang's answer, not gcc's
        "CLANG_ONLY": "compiler-specific", "CLANG_ENUMERATOR": "compiler-specific",
        "WIDE_SEP": "compiler-specific",     # L'/' is a wchar_t, whose type is the compiler's
    }
    # a name #undef'd again, one in a comment and one in an inactive branch are no macros at the end
    assert not {"GONE", "IN_COMMENT", "INACTIVE"} & (set(r.left_out) | set(r.constants))


def test_counts_are_in_the_table_and_survive_yaml(table):
    assert table.constants_left_out == {"empty": 2, "function-like": 1, "string": 2, "floating": 1, "pointer": 1,
                                        "other-type": 1, "not-constant": 2, "not-expression": 5, "too-wide": 1,
                                        "outside": 1, "compiler-specific": 3}
    assert table_yaml.loads(table_yaml.dumps(table)) == table


def _unit(root: Path, name: str) -> Unit:
    return Unit(name=name, path=str(root / name), args=("-x", "c", "-std=gnu11", "-ferror-limit=0"),
                roots=((f"{root}/", ""),), owned=(f"{root}/Modules/",))


def test_a_name_of_two_values_is_qualified_by_file_or_unit(tmp_path):
    mods = tmp_path / "Modules"
    mods.mkdir()
    (mods / "shared.h").write_text("#define SHARED_VALUE (SIZE * 2)\n#define SAME 1\n")
    (mods / "a.c").write_text('#define SIZE 8\n#include "shared.h"\nint a;\n')
    (mods / "b.c").write_text('#define SIZE 16\n#include "shared.h"\nint b;\n')
    results = [clang_scan.parse_unit(_unit(tmp_path, f"Modules/{n}.c")) for n in "ab"]
    constants, left_out = scanner.merge_constants(results)
    got = {n: (c.value, c.defined_in) for n, c in constants.items()}
    assert got == {"SIZE@Modules/a.c": (8, "Modules/a.c"), "SIZE@Modules/b.c": (16, "Modules/b.c"),
                   # one header valued differently by the units including it: NAME@UNIT
                   "SHARED_VALUE@Modules/a.c": (16, "Modules/shared.h"),
                   "SHARED_VALUE@Modules/b.c": (32, "Modules/shared.h"),
                   "SAME": (1, "Modules/shared.h")}
    assert left_out == {}


def test_unit_cache_keeps_constants(tmp_path):
    from offsets.scan import unit_cache

    b = build.from_prefix(FAKE, target="x86_64-linux-gnu")
    r = clang_scan.parse_unit(units.header_unit(b)[0])
    unit_cache.write(tmp_path, "k", r)
    back = unit_cache.read(tmp_path, "k")
    assert back.constants == r.constants and back.left_out == r.left_out and back.constants


# ---------------------------------------------------------------------------------------------
# Real headers: libclang's own record of every macro definition, an independent reading


def _record(unit: Unit) -> dict:
    """name -> (file, line) of the last definition libclang's preprocessing record holds of each
    macro, in the order the preprocessor met them (the unit's text alone, no probes)."""
    import clang.cindex as ci

    opts = ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES | ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
    tu = ci.Index.create().parse(unit.path, args=list(unit.args), unsaved_files=[(unit.path, unit.text)],
                                 options=opts)
    last = {}
    for c in tu.cursor.get_children():
        if c.kind == ci.CursorKind.MACRO_DEFINITION and c.location.file is not None:
            last[c.spelling] = (c.location.file.name, c.location.line)
    return last


@pytest.mark.parametrize("minor", ["3.8", "3.13"])
def test_every_recorded_macro_of_cpythons_files_is_a_candidate(minor):
    exe = pyenv_python(minor)
    if exe is None:
        missing_input(f"pyenv's CPython {minor}")
    b = build.from_python(str(exe))
    unit = units.header_unit(b)[0]
    record = _record(unit)
    own = {n: at for n, at in record.items() if at[0].startswith(unit.owned)}
    app = constant_probe.appendix(clang_scan.macro_text.own_files(unit.path, unit.text, unit.args, unit.owned))
    assert own and set(own) <= set(app.names), sorted(set(own) - set(app.names))[:10]
    r = clang_scan.parse_unit(unit)
    # a constant's file is the one of the definition libclang's record holds last
    macros = {n: c for n, c in r.constants.items() if c.kind == "macro"}
    w = clang_scan._Walker(unit, clang_scan._cindex())
    assert len(macros) > 300
    wrong = {n: (c.defined_in, record.get(n)) for n, c in macros.items()
             if record.get(n) is None or w.relpath(record[n][0]) != c.defined_in}
    assert not wrong
    # and a macro recorded last outside CPython's files is never one of its constants
    assert not {n for n, at in record.items() if not at[0].startswith(unit.owned)} & set(macros)


def test_probe_order_changes_nothing():
    """Each probe's errors stay on its own lines: the candidates in reverse order give the same answers."""
    exe = pyenv_python("3.13")
    if exe is None:
        missing_input("pyenv's CPython 3.13")
    unit = units.header_unit(build.from_python(str(exe)))[0]
    forward = clang_scan.parse_unit(unit)
    real = constant_probe.candidates

    def backward(own):
        evaluated, names, files, at = real(own)
        return evaluated[::-1], names[::-1], files, at

    constant_probe.candidates = backward
    try:
        reverse = clang_scan.parse_unit(unit)
    finally:
        constant_probe.candidates = real
    assert reverse.constants == forward.constants and reverse.left_out == forward.left_out
    assert len(forward.left_out) > 500
