"""Shared preambles (offsets/scan/preamble.py): units that start with the same text parse it once, and
the tables do not change by a byte.

The truth for the sharing scan is the scan that parses every unit whole (libclang over each file
from its first line, the scanner as it was before preambles): a full Debian 3.11.2 build with its
source tree (247 units, the one `make bench` measures), both scans without cache.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import result_memo
from offsets.scan import build_inputs as build, preamble, scanner, sources
from offsets.layout import table_yaml


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


@pytest.mark.slow
def test_a_full_build_scans_byte_identical_with_and_without_shared_preambles(debian311, monkeypatch):
    """Remembered across runs (tests/result_memo.py) while the package, libclang, the units and
    every file they read are unchanged: a warm run re-hashes those files instead of parsing twice."""
    b = build.from_source(debian311.tree, debian311.pyconfig("amd64", "x86_64-linux-gnu"))
    unit_list, _, source_digest = sources.source_units(b)
    key = result_memo.key_of("preamble-byte-identical", repr(b), b.defines(),
                             source_digest, [(u.name, u.path, u.args, u.text) for u in unit_list])
    same = result_memo.recall(key)
    if same is None:
        files = result_memo.spy_files_read(monkeypatch)
        shared = scanner.scan(b, scanner.ScanOptions(use_cache=False, share_preambles=True))
        whole = scanner.scan(b, scanner.ScanOptions(use_cache=False, share_preambles=False))
        assert table_yaml.dumps(shared) == table_yaml.dumps(whole)
        same = {"PyODictObject": shared.structs["PyODictObject"].defined_in}
        result_memo.remember(key, files, same)
    # the sharing was real: most units start with Python.h, and a typedef in Python.h names a
    # struct of a .c file (PyODictObject, Objects/odictobject.c) only the unit's own text completes
    units = [u for u in unit_list if u.text is None]
    assert sum(preamble.preamble_text(u.path) is not None for u in units) > 0.8 * len(units)
    assert same["PyODictObject"].startswith("Objects/odictobject.c:")
