"""Starts that a preamble would change, found by an adversarial review of offsets/scan/preamble.py.

Each case builds three units whose layouts the parse of each unit whole fixes (the truth: libclang
over every file from its first line), and checks that the scan sharing preambles gives the same
ones. The first sixteen failed before the rule that now refuses them, except `-include`, which
passed only because libclang does not include it again after the precompiled header (units with
it are now parsed whole); the four after them were refused already. A second review found the last
twelve: nine failed before the rules they needed; `#pragma pack`, `--include` and `--imacros` did not.
"""
from __future__ import annotations

import pytest

import test_preamble as t

PH = "#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n%s\n#endif\n"
CHAR = PH % "typedef char pick_t;"
MODULE_H = '#ifndef MOD_H\n#define MOD_H\n#define MODE 1\n#include "Python.h"\n#endif\n'
# the unit's own struct: 1 byte where the macro is defined, 16 where it is not
IF = "#ifdef MACRO\nstruct s{i} { char a; };\n#else\nstruct s{i} { long a; long b; };\n#endif\n"
IF_PYTHON_H, IF_MODE, IF_AGAIN = (IF.replace("MACRO", m) for m in ("Py_PYTHON_H", "MODE", "AGAIN"))
PICK = "struct s{i} { pick_t a; };\n"
SELECT = t._SELECT.replace("pick", "pick{i}")
PICK_BY = PH % "#if {cond}\ntypedef long pick_t;\n#else\ntypedef char pick_t;\n#endif"
POLL = PH % "%s\ntypedef char pick_t;"
PRE_H = {"inc/pre.h": "#ifdef Py_PYTHON_H\n#define MODE 1\n#endif\n"}

CASES = {
    # (python_h, unit text with {i}, args, other files)
    "a guard the unit defines first": (CHAR, '#define MOD_H\n#include "module.h"\n' + IF_PYTHON_H, (),
                                       {"src/module.h": MODULE_H}),
    "a guard the command line defines": (CHAR, '#include "module.h"\n' + IF_PYTHON_H, ("-DMOD_H",),
                                         {"src/module.h": MODULE_H}),
    "one guard for two headers": (CHAR, '#include "a.h"\n' + IF_PYTHON_H, (),
                                  {"src/a.h": '#ifndef G_H\n#define G_H\n#include "b.h"\n#endif\n',
                                   "src/b.h": MODULE_H.replace("MOD_H", "G_H")}),
    "__has_include of a name beside the file": (
        PICK_BY.format(cond="defined(WANT_LONG)"),
        '#if __has_include("local_cfg.h")\n#define WANT_LONG 1\n#endif\n#include "Python.h"\n' + PICK, (),
        {"src/local_cfg.h": "\n"}),
    "a tested -D that names what Python.h defines": (
        PH % "#define OTHER 1\ntypedef char pick_t;", '#if LEVEL\n#define MODE 1\n#endif\n#include "Python.h"\n' + IF_MODE,
        ("-DLEVEL=OTHER",), {}),
    "a tested -D that names what the start defines": (
        CHAR, '#if LEVEL\n#define MODE 1\n#endif\n#if 1\n#define OTHER 1\n#endif\n#include "Python.h"\n' + IF_MODE,
        ("-DLEVEL=OTHER",), {}),
    "a kept -D that names a left-out define": (PICK_BY.format(cond="Py_X + 0 > 4"),
                                              '#define MYVAL 8\n#include "Python.h"\n' + PICK, ("-DPy_X=MYVAL",), {}),
    "an -include": (CHAR, '#include "Python.h"\n' + IF_MODE, ("-include", "{tmp}/inc/pre.h"), PRE_H),
    "a keyword a predefined macro spells": (PH % "typedef __SIZE_TYPE__ pick_t;",
                                            '#define long short\n#include "Python.h"\n' + PICK, (), {}),
    "a define spelled as a digraph": (PH % "%:define HAVE_POLL_H 1\ntypedef char pick_t;", SELECT, (), {}),
    "a name split by a line splice": (PH % "#define HAVE_POLL\\\n_H 1\ntypedef char pick_t;", SELECT, (), {}),
    "#pragma once in dead code": ("#if 0\n#pragma once\n#endif\n#ifdef Py_PYTHON_H\n#define AGAIN 1\n#endif\n"
                                  "#define Py_PYTHON_H\n", '#include "Python.h"\n' + IF_AGAIN, (), {}),
    "a guard with an #else": ("#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#else\n#define AGAIN 1\n#endif\n",
                              '#include "Python.h"\n' + IF_AGAIN, (), {}),
    "a guard undefined at the end": ("#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#ifdef ONCE\n#define AGAIN 1\n#endif\n"
                                     "#define ONCE 1\n#undef Py_PYTHON_H\n#endif\n", '#include "Python.h"\n' + IF_AGAIN, (), {}),
    "__INCLUDE_LEVEL__ pasted together": (
        PICK_BY.format(cond="CAT(__INCLUDE_, LEVEL__) > 1").replace("\n#if CAT", "\n#define CAT(a, b) a ## b\n#if CAT"),
        '#include "module.h"\n' + PICK, (), {"src/module.h": '#ifndef MOD_H\n#define MOD_H\n#include "Python.h"\n#endif\n'}),
    "__BASE_FILE__ pasted together": (PH % "#define CAT(a, b) a ## b\ntypedef char pick_t[sizeof(CAT(__BASE_, FILE__))];",
                                      '#include "Python.h"\n' + PICK, (), {}),
    "a start testing Python.h's guard": (CHAR, '#ifdef Py_PYTHON_H\n#define AGAIN 1\n#endif\n#include "Python.h"\n' + IF_AGAIN,
                                          (), {}),
    "an #elif of what Python.h defines": (PH % "#define HAVE_B 1",
                                          "#if defined(HAVE_A)\n#elif defined(HAVE_B)\n#define MODE 1\n#endif\n"
                                          '#include "Python.h"\n' + IF_MODE, (), {}),
    "a tested macro a header of the start defines": (
        PH % "#define OTHER 1", '#include <cfg.h>\n#if LEVEL\n#define MODE 1\n#endif\n#include "Python.h"\n' + IF_MODE, (),
        {"inc/cfg.h": "#ifndef CFG_H\n#define CFG_H\n#define LEVEL OTHER\n#endif\n"}),
    "a left-out -D that Python.h pastes": (PH % "#define CAT(a,b) a##b\n#if CAT(MY,VAL) > 4\n#define MODE 1\n#endif",
                                           '#include "Python.h"\n' + IF_MODE, ("-DMYVAL=8",), {}),
    # a second review: files clang reads otherwise than a regular expression does, arguments that
    # define macros in other spellings, a word a predefined macro spells
    "a splice with a space after the backslash": (POLL % "#define HAVE_POLL\\ \n_H 1", SELECT, (), {}),
    "a splice with CRLF": (POLL % "#define HAVE_POLL\\\r\n_H 1", SELECT, (), {}),
    "CR line ends in a header": (POLL % '#include "cfg.h"', SELECT, (), {"inc/cfg.h": "#define A 1\r#define HAVE_POLL_H 1\r"}),
    "a define hidden by a comment in its line, a fake one commented out": (
        POLL % "#if 0\n/*\n#define HAVE_POLL_H 1\n*/\n#endif\n# /**/ define HAVE_POLL_H 1", SELECT, (), {}),
    "a define after a comment, a fake one commented out": (
        POLL % "#if 0\n/*\n#define HAVE_POLL_H 1\n*/\n#endif\n/**/ #define HAVE_POLL_H 1", SELECT, (), {}),
    "a guard undefined through a spaced splice": (
        "#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#ifdef ONCE\n#define AGAIN 1\n#endif\n"
        "#define ONCE 1\n#undef Py_PYTHON\\ \n_H\n#endif\n", '#include "Python.h"\n' + IF_AGAIN, (), {}),
    "-Wp,-D of a tested macro": (PH % "#define OTHER 1\ntypedef char pick_t;",
                                 '#if LEVEL\n#define MODE 1\n#endif\n#include "Python.h"\n' + IF_MODE, ("-Wp,-DLEVEL=OTHER",), {}),
    "--define-macro of a tested macro": (PH % "#define OTHER 1\ntypedef char pick_t;",
                                         '#if LEVEL\n#define MODE 1\n#endif\n#include "Python.h"\n' + IF_MODE,
                                         ("--define-macro=LEVEL=OTHER",), {}),
    "a word a predefined macro spells (__seg_fs)": (PH % "typedef struct { char c; int __seg_fs *p; } pick_t;",
                                                    '#define address_space(n) aligned(16)\n#include "Python.h"\n' + PICK,
                                                    (), {}),
    "#pragma pack left pushed by Python.h": (PH % "#pragma pack(push,1)",
                                             '#include "Python.h"\nstruct s{i} { char c; long l; };\n', (), {}),
    "--include": (CHAR, '#include "Python.h"\n' + IF_MODE, ("--include={tmp}/inc/pre.h",), PRE_H),
    "--imacros": (CHAR, '#include "Python.h"\n' + IF_MODE, ("--imacros={tmp}/inc/pre.h",), PRE_H),
}


@pytest.mark.parametrize("case", CASES)
def test_sharing_gives_what_the_whole_parse_gives(tmp_path, case):
    python_h, text, args, others = CASES[case]
    units = t._tree_units(tmp_path, {f"u{i}.c": text.replace("{i}", str(i)) for i in range(3)}, python_h=python_h,
                          args=tuple(a.replace("{tmp}", str(tmp_path)) for a in args))
    for rel, body in others.items():
        (tmp_path / rel).write_bytes(body.encode())
    whole = t._layouts(units, share=False)
    assert t._layouts(units, share=True) == whole
