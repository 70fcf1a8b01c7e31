"""Shared preambles (offsets/scan/preamble.py): units that start with the same text parse it once, and
the tables do not change by a byte.

The truth for the sharing scan is the scan that parses every unit whole (libclang over each file
from its first line, the scanner as it was before preambles): full builds with their source trees
(Debian's 3.11.2, 247 units, the one `make bench` measures, and 3.13.5), both scans without cache,
in `make prove` for their cost (tests/prove/test_preamble_full_builds.py); here the rules, each on
a tree made to break it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from offsets.scan import preamble, scanner


def write(tmp_path: Path, text: str, name: str = "unit.c") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_preamble_ends_with_the_include_of_python_h(tmp_path):
    path = write(tmp_path, '/* a comment */\n#define PY_SSIZE_T_CLEAN\n#  include "Python.h"  // why\n'
                           '#include "pycore_object.h"\nstatic int x;\n')
    assert preamble.preamble_text(path) == "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"


def test_a_conditional_around_python_h_ends_with_its_endif(tmp_path):
    path = write(tmp_path, "#ifndef Py_BUILD_CORE_BUILTIN\n#  define Py_BUILD_CORE_MODULE 1\n#endif\n"
                           "#if 1\n#include <Python.h>\n#endif\nint x;\n")
    assert preamble.preamble_text(path) == ("#ifndef Py_BUILD_CORE_BUILTIN\n#define Py_BUILD_CORE_MODULE 1\n#endif\n"
                                            "#if 1\n#include <Python.h>\n#endif\n")


@pytest.mark.parametrize("text", [
    'static const char v[] = "2.1";\n#include "Python.h"\n',     # code first (_curses_panel.c)
    '#pragma once\n#include "Python.h"\n',                        # a directive other than these
    '#define H "Python.h"\n#include H\n',                         # a computed include
    '#include "beside.h"\n#include "Python.h"\n',                 # a header beside the file
    '#define X 1\n',                                              # never includes Python.h
    '#if 1\n#include "Python.h"\n',                               # an unclosed conditional
])
def test_no_preamble(tmp_path, text):
    write(tmp_path, "", "beside.h")
    assert preamble.preamble_text(write(tmp_path, text)) is None


def test_strings_are_not_comments(tmp_path):
    path = write(tmp_path, '#define URL "http://x/*y*/"\n#include <Python.h>\n')
    assert preamble.preamble_text(path) == '#define URL "http://x/*y*/"\n#include <Python.h>\n'


def test_a_start_through_a_header_beside_the_file_leaves_its_guard_out(tmp_path):
    write(tmp_path, "#ifndef MOD_H\n#define MOD_H\n#define PY_SSIZE_T_CLEAN\n#include \"Python.h\"\n"
                    "typedef struct { int a; } Mod;\n#endif\n", "module.h")
    start = preamble.read_start(write(tmp_path, '#include "module.h"\n#include "structmember.h"\n'))
    assert start.text == "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"
    assert start.left_out == {"MOD_H"} and start.assigned == {"MOD_H", "PY_SSIZE_T_CLEAN"}


def test_a_define_no_build_header_mentions_is_left_out(tmp_path):
    path = write(tmp_path, '#define MODULE_VERSION "1.0"\n#define PY_SSIZE_T_CLEAN\n#include "Python.h"\n')
    start = preamble.read_start(path, lambda name: name != "MODULE_VERSION")
    assert start.text == "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n" and start.left_out == {"MODULE_VERSION"}
    assert preamble.preamble_text(path) == '#define MODULE_VERSION "1.0"\n#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n'


def test_a_start_whose_second_run_could_take_another_branch_has_no_preamble(tmp_path):
    # the second run finds A defined, so it would define B where the first did not
    assert preamble.read_start(write(tmp_path, "#ifdef A\n#define B\n#endif\n#define A\n#include <Python.h>\n")) is None


# A build whose Python.h defines HAVE_POLL_H, as pyconfig.h does. The start `#ifdef HAVE_POLL_H` /
# `#define USE_POLL` skips the define when it first runs, but would take it when run again after a
# preamble of that start, and the unit's own text then lays `struct pick` out differently.
_PYTHON_H = "#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#define HAVE_POLL_H 1\n#endif\n"
_SELECT = ("#ifdef HAVE_POLL_H\n#define USE_POLL\n#endif\n#include \"Python.h\"\n"
           "#ifdef USE_POLL\nstruct pick { char a; };\n#else\nstruct pick { long a; long b; };\n#endif\n")


def _tree_units(tmp_path, texts: dict, python_h: str = _PYTHON_H, args: tuple = ()) -> list:
    from offsets.scan.clang_scan import Unit

    (tmp_path / "inc").mkdir(parents=True, exist_ok=True)
    (tmp_path / "inc/Python.h").write_text(python_h)
    (tmp_path / "src").mkdir()
    units = []
    for name, text in texts.items():
        path = tmp_path / "src" / name
        path.write_text(text)
        units.append(Unit(f"src/{name}", str(path), ("-xc", "--target=x86_64-linux-gnu", f"-I{tmp_path}/inc", *args),
                          ((f"{tmp_path}/", ""),), (f"{tmp_path}/src/",)))
    return units


def _layouts(units, share: bool) -> dict:
    results = scanner.parse_units(units, scanner.ScanOptions(use_cache=False, jobs=1, share_preambles=share))
    structs, _, _ = scanner.merge(results)
    return {k: (s.size, [(f.path, f.offset) for f in s.fields]) for k, s in structs.items()}


def test_a_start_its_preamble_would_change_is_parsed_whole(tmp_path):
    units = _tree_units(tmp_path, {f"select{i}.c": _SELECT.replace("pick", f"pick{i}") for i in range(3)})
    jobs, uses = preamble.plan(units, str(tmp_path))
    assert len(jobs) == 1 and all(use is not None for use in uses)
    shared = preamble.build(jobs[0])
    assert "HAVE_POLL_H" in shared.assigned and all(preamble.usable(shared, use) is None for use in uses)
    whole = _layouts(units, share=False)
    assert whole["pick0"][0] == 16          # the truth: USE_POLL stays undefined
    assert _layouts(units, share=True) == whole


# 3.13's pyport.h undefines Py_BUILD_CORE_MODULE, which most module starts define, but only under
# Py_LIMITED_API: a directive its conditional skipped did not run.
_LIMITED_H = ("#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#ifdef Py_LIMITED_API\n#  undef Py_BUILD_CORE_MODULE\n"
              "#endif\n#endif\n")
_MODULE = ("#ifndef Py_BUILD_CORE_BUILTIN\n#define Py_BUILD_CORE_MODULE 1\n#endif\n#include \"Python.h\"\n"
           "#ifdef Py_BUILD_CORE_MODULE\nstruct mod%d { char a; };\n#else\nstruct mod%d { long a; long b; };\n#endif\n")


@pytest.mark.parametrize("limited", [False, True])
def test_a_directive_its_conditional_skipped_did_not_run(tmp_path, limited):
    units = _tree_units(tmp_path, {f"m{i}.c": _MODULE % (i, i) for i in range(3)}, python_h=_LIMITED_H,
                        args=("-DPy_LIMITED_API=0x030d0000",) if limited else ())
    jobs, uses = preamble.plan(units, str(tmp_path))
    shared = preamble.build(jobs[0])
    assert all((preamble.usable(shared, use) is None) == limited for use in uses)
    whole = _layouts(units, share=False)
    assert whole["mod0"][0] == (16 if limited else 1)
    assert _layouts(units, share=True) == whole


def test_units_share_a_preamble_their_second_run_cannot_change(tmp_path):
    plain = '#define MODULE_VERSION "1"\n#include "Python.h"\nstruct s%d { char c; long l; };\n'
    units = _tree_units(tmp_path, {f"u{i}.c": plain % i for i in range(3)})
    jobs, uses = preamble.plan(units, str(tmp_path))
    shared = preamble.build(jobs[0])
    assert jobs[0][0] == "#include <Python.h>\n" and all(preamble.usable(shared, use) for use in uses)
    assert _layouts(units, share=True) == _layouts(units, share=False)


def test_a_start_testing_where_it_is_read_has_no_preamble(tmp_path):
    # the first run is in the preamble's header, line 1; the second in the file, line 2
    assert preamble.read_start(write(tmp_path, "\n#if __LINE__ == 2\n#define X\n#endif\n#include <Python.h>\n")) is None


def test_a_preamble_whose_files_read_where_they_are_included_from_shares_nothing(tmp_path):
    level = "#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#if __INCLUDE_LEVEL__ > 1\n#endif\n#endif\n"
    units = _tree_units(tmp_path, {f"u{i}.c": '#include "Python.h"\n' for i in range(3)}, python_h=level)
    jobs, _ = preamble.plan(units, str(tmp_path))
    assert len(jobs) == 1 and preamble.build(jobs[0]) is None


def test_a_left_out_define_that_pasting_could_spell_is_not_left_out(tmp_path):
    # no build header names WIDE, but Python.h pastes it together: the preamble would lack it
    pasting = ("#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\n#define CAT(a, b) a ## b\n"
               "#if CAT(WI, DE) + 0 > 4\n#define PICK_T long\n#else\n#define PICK_T char\n#endif\n#endif\n")
    units = _tree_units(tmp_path, {f"w{i}.c": "#define WIDE 8\n#include \"Python.h\"\nstruct pick%d { PICK_T a; };\n" % i
                                   for i in range(3)}, python_h=pasting)
    jobs, uses = preamble.plan(units, str(tmp_path))
    assert jobs[0][0] == "#include <Python.h>\n" and all(use.left_out == {"WIDE"} for use in uses)
    shared = preamble.build(jobs[0])
    assert "WIDE" in shared.mentioned and all(preamble.usable(shared, use) is None for use in uses)
    whole = _layouts(units, share=False)
    assert whole["pick0"][0] == 8
    assert _layouts(units, share=True) == whole


def test_a_start_including_an_unguarded_header_shares_nothing(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc/once.h").write_text("typedef int once_t;\n")
    units = _tree_units(tmp_path, {f"u{i}.c": '#include <once.h>\n#include "Python.h"\n' for i in range(3)})
    jobs, _ = preamble.plan(units, str(tmp_path))
    assert len(jobs) == 1 and preamble.build(jobs[0]) is None
