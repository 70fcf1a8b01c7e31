"""The per-build headers prove what they define where it is visible: gcc, against pyenv's own 3.12.1 and
3.13.0 headers, compiles each committed generated header in the smallest unit a JIT would write
(Python.h, and the one internal header concerned with Py_BUILD_CORE) clean, and fails it when one
number is wrong: an offset of _PyListIterObject (internal), of PyFunctionObject and of PyGenObject
(public), a public constant and an internal enumerator. A header for another interpreter stops at
its one #error. The truth is gcc over CPython's headers; the tampered numbers are the header's own,
changed by one.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import missing_input
from conftest import pyenv_python3

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "-o", "/dev/null"]

#: (what is tampered, the units' includes before the generated header, the switch, the assertion's name)
CASES = [
    ("_PyListIterObject.it_index", ["#define Py_BUILD_CORE 1", "#include <Python.h>", '#include "internal/pycore_list.h"'],
     "PYOFFSETS_CHECK_INTERNAL_LAYOUT", "_PyListIterObject.it_index"),
    ("PyFunctionObject.func_code", ["#include <Python.h>"], "PYOFFSETS_CHECK_LAYOUT", "PyFunctionObject.func_code"),
    ("PyGenObject.gi_weakreflist", ["#include <Python.h>"], "PYOFFSETS_CHECK_LAYOUT", "PyGenObject.gi_weakreflist"),
    ("Py_TPFLAGS_HEAPTYPE", ["#include <Python.h>"], "PYOFFSETS_CHECK_LAYOUT", "Py_TPFLAGS_HEAPTYPE"),
    ("FRAME_OWNED_BY_GENERATOR", ["#define Py_BUILD_CORE 1", "#include <Python.h>", '#include "internal/pycore_frame.h"'],
     "PYOFFSETS_CHECK_INTERNAL_LAYOUT", "FRAME_OWNED_BY_GENERATOR"),
]
VERSIONS = {"3.12": "cpython-3.12.1-x86_64-linux-gnu", "3.13": "cpython-3.13.0-x86_64-linux-gnu"}


def include_dir(version: str) -> Path:
    python = pyenv_python3(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} on this machine (`pyenv install {version}`)")
    return python.parent.parent / "include" / f"python{version}"


def compile_unit(tmp: Path, header: str, text: str, includes: list, switch: str, inc: Path) -> str:
    (tmp / header).write_text(text)
    src = tmp / "unit.c"
    src.write_text("\n".join(includes + [f"#define {switch} 1", f'#include "{header}"', "int pyoffsets_unit;", ""]))
    proc = subprocess.run(["gcc", *STRICT, f"-I{inc}", f"-I{tmp}", str(src)], capture_output=True, text=True)
    return proc.stderr if proc.returncode or proc.stderr else ""


def tampered(text: str, name: str) -> str:
    """The header with the macro that the assertion of `name` (its message) compares with one more."""
    pattern = re.compile(rf'^(PYOFFSETS_STATIC_ASSERT\(.* == )(\w+)(, "{re.escape(name)}"\);)$', re.M)
    m = pattern.search(text)
    assert m, f"the header asserts nothing named {name}"
    value = m.group(2)              # every assertion compares with the macro: give the macro another value
    macro = re.search(rf"^#define {value} (\S+)$", text, re.M)
    assert macro, value
    return text.replace(macro.group(0), f"#define {value} ({macro.group(1)} + 1)", 1)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_wrong_number_fails_the_smallest_unit_and_the_right_header_compiles_clean(version, case, tmp_path):
    what, includes, switch, name = case
    inc = include_dir(version)
    header = f"pyoffsets_{VERSIONS[version]}.h"
    text = (GENERATED / header).read_text()
    assert compile_unit(tmp_path, header, text, includes, switch, inc) == ""
    err = compile_unit(tmp_path, header, tampered(text, name), includes, switch, inc)
    assert f'"{name}"' in err and "static assert" in err, err[-2000:]


def test_every_assertion_compares_with_the_macro_a_jit_compiles(tmp_path):
    """A JIT compiles `PYOFFSETS_PyFunctionObject_func_code`, not a literal: each assertion names
    that macro, so a wrong macro (here one more than gcc's offsetof over 3.13.0's own headers) fails
    the unit, and no assertion compares with a bare number."""
    inc = include_dir("3.13")
    header = f"pyoffsets_{VERSIONS['3.13']}.h"
    text = (GENERATED / header).read_text()
    literal = re.findall(r'^PYOFFSETS_STATIC_ASSERT\((?:offsetof|sizeof)\(.*\) == \d+, ', text, re.M)
    assert not literal, literal[:3]
    macro = re.search(r"^#define PYOFFSETS_PyFunctionObject_func_code (\d+)$", text, re.M)
    wrong = text.replace(macro.group(0), f"#define PYOFFSETS_PyFunctionObject_func_code {int(macro.group(1)) + 1}")
    err = compile_unit(tmp_path, header, wrong, ["#include <Python.h>"], "PYOFFSETS_CHECK_LAYOUT", inc)
    assert '"PyFunctionObject.func_code"' in err and "static assert" in err, err[-2000:]


def test_a_header_for_another_interpreter_stops_at_its_one_error(tmp_path):
    inc = include_dir("3.13")
    header = f"pyoffsets_{VERSIONS['3.12']}.h"
    err = compile_unit(tmp_path, header, (GENERATED / header).read_text(), ["#include <Python.h>"],
                       "PYOFFSETS_CHECK_LAYOUT", inc)
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "is for CPython 3.12.1, not the one being compiled against" in errors[0], err


@pytest.mark.parametrize("version", VERSIONS)
def test_every_internal_struct_is_asserted_under_its_headers_real_guard(version, tmp_path):
    """The guards the table recorded are the ones gcc sees: each is defined once its header is included
    (with every internal header included, as the scan's unit has them), and every struct of the header
    is asserted (none left unasserted for want of a spelling)."""
    from offsets.layout import table_yaml
    from offsets.scan import build_inputs, units

    inc = include_dir(version)
    table = table_yaml.load(GENERATED / f"{VERSIONS[version]}.yaml")
    internal = {h: g for h, g in table.guards.items() if h.startswith("Include/internal/")}
    assert len(internal) > 50, internal
    b = build_inputs.from_python(str(pyenv_python3(version)))
    text = units.header_unit(b)[0].text
    src = tmp_path / "guards.c"
    src.write_text("#define Py_BUILD_CORE 1\n" + text + "".join(f"#ifndef {g}\n#error {h}: no {g}\n#endif\n"
                                                                for h, g in internal.items()))
    proc = subprocess.run(["gcc", "-std=gnu11", "-fsyntax-only", "-w", f"-I{inc}", f"-I{inc}/internal", str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = (GENERATED / f"pyoffsets_{VERSIONS[version]}.h").read_text().rstrip().splitlines()[-2]
    assert "C spelling" not in last and "without an include guard" not in last, last


def test_the_header_written_on_demand_is_the_one_make_tables_writes(tmp_path):
    """`python -m offsets --cflags` writes the running interpreter's header from its compact table: the
    same text as generated/ holds for that table, the banner's source aside; and a unit of Python.h
    and pyoffsets_build.h with the proof on compiles clean with those flags."""
    import sysconfig

    import offsets
    from offsets.runtime import headers

    name = f"pyoffsets_{offsets.build().table}.h"
    if not (GENERATED / name).exists():
        missing_input(f"no generated {name} (`make tables` makes it)")
    out = subprocess.run([sys.executable, "-m", "offsets", "--cflags", "--header-dir", str(tmp_path / "inc")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [f"-I{offsets.get_include()}", f"-I{tmp_path / 'inc'}"]
    written = (tmp_path / "inc" / name).read_text().splitlines()
    committed = (GENERATED / name).read_text().splitlines()
    assert written[3:] == committed[3:] and written[:1] == committed[:1]
    assert (tmp_path / "inc" / headers.BUILD_HEADER).read_text().endswith(f'#include "{name}"\n')
    src = tmp_path / "unit.c"
    src.write_text("#include <Python.h>\n#define PYOFFSETS_CHECK_LAYOUT 1\n#include \"pyoffsets_build.h\"\n"
                   "int unit = PYOFFSETS_listiterobject_it_index;\n")
    proc = subprocess.run(["gcc", *STRICT, f"-I{sysconfig.get_paths()['include']}", *out, str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr[-3000:]


BY_INPUTS = r"""
import json, sys
from offsets.runtime import binary
binary.interpreter = lambda: (None, None, "hidden by the test")   # no build-id: earned by its inputs
import offsets
from offsets.runtime import headers
from offsets.runtime.core import RUNTIME
headers.write(sys.argv[1], version=offsets.__version__)
print(json.dumps({"table": offsets.build().table, "by": RUNTIME.current().earning.by}))
"""


def test_a_table_earned_by_its_inputs_writes_the_same_header(tmp_path):
    """Without the build-id the table is earned struct by struct and constant by constant (its
    inputs): the header written then keeps every constant those inputs earn, the same text as
    generated/ holds (each constant goes through the earning rules as a named row)."""
    proc = subprocess.run([sys.executable, "-c", BY_INPUTS, str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["by"] == "inputs", out
    name = f"pyoffsets_{out['table']}.h"
    if not (GENERATED / name).exists():
        missing_input(f"no generated {name} (`make tables` makes it)")
    written = (tmp_path / name).read_text().splitlines()
    assert written[3:] == (GENERATED / name).read_text().splitlines()[3:]


def test_the_core_only_constants_are_those_gcc_values_otherwise_without_the_core(tmp_path):
    """3.15 (Debian sid's headers): with the table's `core_only` ignored, a unit without Py_BUILD_CORE
    fails exactly on those constants (gcc's static assertions); with it, the header compiles clean."""
    from dataclasses import replace

    from offsets.layout import c_header, table_yaml
    from test_c_headers_strict import inputs_of

    name = "cpython-3.15.2-debian-x86_64-linux-gnu"
    b = inputs_of(name)
    table = table_yaml.load(GENERATED / f"{name}.yaml")
    assert "_PyABIInfo_DEFAULT_FLAG_INTERNAL" in table.core_only     # 8 with Py_BUILD_CORE, 0 without
    flags = [f"-I{b.include_dir}", f"-I{b.include_root}", f"-I{b.pyconfig.parent}", f"-I{tmp_path}", *b.defines()]
    src = tmp_path / "unit.c"
    src.write_text(f'#include <Python.h>\n#define PYOFFSETS_CHECK_LAYOUT 1\n#include "{c_header.header_name(table)}"\n'
                   "int unit;\n")

    def failures(t) -> set:
        (tmp_path / c_header.header_name(t)).write_text(c_header.emit(t, "test"))
        proc = subprocess.run(["gcc", "-std=c11", "-c", "-o", "/dev/null", "-fmax-errors=0", *flags, str(src)],
                              capture_output=True, text=True)
        errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
        named = set(re.findall(r'static assertion failed: "([^"]+)"', proc.stderr))
        assert len(named) == len(errors), proc.stderr[-3000:]
        return named

    assert failures(table) == set()
    assert failures(replace(table, core_only=())) == set(table.core_only)
