"""Starts that a preamble would change, found by an adversarial review of offsets/scan/preamble.py.

Each builds three units whose layouts the parse of each unit whole fixes (the truth, libclang over
every file from its first line), and checks that the scan sharing preambles gives the same ones.
The first sixteen failed before the rule that now refuses them, except `-include`, which passed
only because libclang does not include it again after the precompiled header (units with it are
now parsed whole); the last three were refused already. Each name says what the case is.
"""
from __future__ import annotations

import test_preamble as t
from offsets.scan import preamble

PH = "#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n%s\n#endif\n"


def run(tmp_path, texts, python_h, args=(), extra=None):
    """Scan the units with and without shared preambles: the same layouts."""
    units = t._tree_units(tmp_path, texts, python_h=python_h, args=args)
    if extra:
        for rel, txt in extra.items():
            p = tmp_path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(txt)
    jobs, uses = preamble.plan(units, str(tmp_path / "w"))
    (tmp_path / "w").mkdir(exist_ok=True)
    info = {"jobs": len(jobs), "uses": [u is not None for u in uses]}
    if jobs:
        sh = preamble.build(jobs[0])
        info["built"] = sh is not None
        info["usable"] = [bool(preamble.usable(sh, u)) if u else None for u in uses]
    whole = t._layouts(units, share=False)
    shared = t._layouts(units, share=True)
    assert shared == whole, (info, whole, shared)


U = "%s\nstruct s%d { pick_t a; };\n"


# (a) unit defines guard of its local header before including it
def test_a_guard_the_unit_defines_first(tmp_path):
    ph = PH % "typedef char pick_t;"
    extra = {"src/module.h": "#ifndef MOD_H\n#define MOD_H\n#define MODE 1\n#include \"Python.h\"\n#endif\n"}
    body = "#define MOD_H\n#include \"module.h\"\n#ifdef Py_PYTHON_H\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph, extra=extra)


# (a2) -D of local header guard
def test_a_guard_the_command_line_defines(tmp_path):
    ph = PH % "typedef char pick_t;"
    extra = {"src/module.h": "#ifndef MOD_H\n#define MOD_H\n#define MODE 1\n#include \"Python.h\"\n#endif\n"}
    body = "#include \"module.h\"\n#ifdef Py_PYTHON_H\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph, args=("-DMOD_H",), extra=extra)


# (a3) nested local headers sharing a guard name
def test_one_guard_for_two_headers(tmp_path):
    ph = PH % "typedef char pick_t;"
    extra = {"src/a.h": "#ifndef G_H\n#define G_H\n#include \"b.h\"\n#endif\n",
             "src/b.h": "#ifndef G_H\n#define G_H\n#define MODE 1\n#include \"Python.h\"\n#endif\n"}
    body = "#include \"a.h\"\n#ifdef Py_PYTHON_H\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph, extra=extra)


# (b) __has_include with quotes: relative to the file
def test_has_include_of_a_name_beside_the_file(tmp_path):
    ph = PH % "#ifdef WANT_LONG\ntypedef long pick_t;\n#else\ntypedef char pick_t;\n#endif"
    extra = {"src/local_cfg.h": "\n"}
    body = "#if __has_include(\"local_cfg.h\")\n#define WANT_LONG 1\n#endif\n#include \"Python.h\"\n"
    run(tmp_path, {f"u{i}.c": U % (body, i) for i in range(3)}, ph, extra=extra)


# (c) tested macro from -D whose body names a macro Python.h defines
def test_a_tested_d_names_what_python_h_defines(tmp_path):
    ph = PH % "#define OTHER 1\ntypedef char pick_t;"
    body = "#if LEVEL\n#define MODE 1\n#endif\n#include \"Python.h\"\n#ifdef MODE\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph, args=("-DLEVEL=OTHER",))


# (c2) tested macro from -D whose body names a macro the start defines later
def test_a_tested_d_names_what_the_start_defines(tmp_path):
    ph = PH % "typedef char pick_t;"
    body = "#if LEVEL\n#define MODE 1\n#endif\n#if 1\n#define OTHER 1\n#endif\n#include \"Python.h\"\n#ifdef MODE\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph, args=("-DLEVEL=OTHER",))


# (d) kept -D whose value names a left-out define
def test_a_kept_d_names_a_left_out_define(tmp_path):
    ph = PH % "#if Py_X + 0 > 4\ntypedef long pick_t;\n#else\ntypedef char pick_t;\n#endif"
    body = "#define MYVAL 8\n#include \"Python.h\"\n"
    run(tmp_path, {f"u{i}.c": U % (body, i) for i in range(3)}, ph, args=("-DPy_X=MYVAL",))


# (e) -include of an unguarded header: units with -include are parsed whole
def test_a_dash_include_is_not_included_again(tmp_path):
    ph = PH % "typedef char pick_t;"
    extra = {"inc/pre.h": "#ifdef Py_PYTHON_H\n#define MODE 1\n#endif\n"}
    body = "#include \"Python.h\"\n#ifdef MODE\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph, args=("-include", str(tmp_path / "inc/pre.h")), extra=extra)


# (f) keyword macro vs predefined macro body
def test_a_keyword_a_predefined_macro_spells(tmp_path):
    ph = PH % "typedef __SIZE_TYPE__ pick_t;"
    body = "#define long short\n#include \"Python.h\"\n"
    run(tmp_path, {f"u{i}.c": U % (body, i) for i in range(3)}, ph)


# (g) digraph define in Python.h
def test_a_define_spelled_as_a_digraph(tmp_path):
    ph = PH % "%:define HAVE_POLL_H 1\ntypedef char pick_t;"
    run(tmp_path, {f"select{i}.c": t._SELECT.replace("pick", f"pick{i}") for i in range(3)}, ph)


# (h) line continuation splitting a name in Python.h
def test_a_name_split_by_a_line_splice(tmp_path):
    ph = PH % "#define HAVE_POLL\\\n_H 1\ntypedef char pick_t;"
    run(tmp_path, {f"select{i}.c": t._SELECT.replace("pick", f"pick{i}") for i in range(3)}, ph)


# (i) pragma once inside #if 0
def test_pragma_once_in_dead_code(tmp_path):
    ph = "#if 0\n#pragma once\n#endif\n#ifdef Py_PYTHON_H\n#define AGAIN 1\n#endif\n#define Py_PYTHON_H\n"
    body = "#include \"Python.h\"\n#ifdef AGAIN\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph)


# (j) guard with #else
def test_a_guard_with_an_else(tmp_path):
    ph = "#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#else\n#define AGAIN 1\n#endif\n"
    body = "#include \"Python.h\"\n#ifdef AGAIN\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph)


# (k) guard undefined at end
def test_a_guard_undefined_at_the_end(tmp_path):
    ph = "#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#ifdef ONCE\n#define AGAIN 1\n#endif\n#define ONCE 1\n#undef Py_PYTHON_H\n#endif\n"
    body = "#include \"Python.h\"\n#ifdef AGAIN\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph)


# (l) pasted __INCLUDE_LEVEL__ with local-header descent
def test_include_level_pasted_together(tmp_path):
    ph = PH % "#define CAT(a, b) a ## b\n#if CAT(__INCLUDE_, LEVEL__) > 1\ntypedef long pick_t;\n#else\ntypedef char pick_t;\n#endif"
    extra = {"src/module.h": "#ifndef MOD_H\n#define MOD_H\n#include \"Python.h\"\n#endif\n"}
    run(tmp_path, {f"u{i}.c": U % ("#include \"module.h\"\n", i) for i in range(3)}, ph, extra=extra)


# (m) pasted __BASE_FILE__
def test_base_file_pasted_together(tmp_path):
    ph = PH % "#define CAT(a, b) a ## b\ntypedef char pick_t[sizeof(CAT(__BASE_, FILE__))];"
    run(tmp_path, {f"u{i}.c": U % ("#include \"Python.h\"\n", i) for i in range(3)}, ph)


B = "#include \"Python.h\"\n#ifdef MODE\nstruct s%d { char a; };\n#else\nstruct s%d { long a; long b; };\n#endif\n"


# refused already: an #elif of a macro Python.h defines
def test_an_elif_of_what_python_h_defines(tmp_path):
    ph = PH % "#define HAVE_B 1"
    body = "#if defined(HAVE_A)\n#elif defined(HAVE_B)\n#define MODE 1\n#endif\n" + B
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph)


# refused already: a tested macro a header of the start defines as what Python.h defines
def test_a_tested_macro_a_header_of_the_start_defines(tmp_path):
    ph = PH % "#define OTHER 1"
    extra = {"inc/cfg.h": "#ifndef CFG_H\n#define CFG_H\n#define LEVEL OTHER\n#endif\n"}
    body = "#include <cfg.h>\n#if LEVEL\n#define MODE 1\n#endif\n" + B
    run(tmp_path, {f"u{i}.c": body % (i, i) for i in range(3)}, ph, extra=extra)


# refused already: a left-out -D that Python.h pastes together
def test_a_left_out_d_python_h_pastes(tmp_path):
    ph = PH % "#define CAT(a,b) a##b\n#if CAT(MY,VAL) > 4\n#define MODE 1\n#endif"
    run(tmp_path, {f"u{i}.c": B % (i, i) for i in range(3)}, ph, args=("-DMYVAL=8",))
