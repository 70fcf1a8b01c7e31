"""The C API on a real free-threaded CPython: upstream 3.13.15 built with --disable-gil by
scripts/build-cpython into $OFFSETS_CACHE/build/upstream-3.13.15-free-threaded/prefix.

A venv of that interpreter gets `pip install .` of this checkout (compiling offsets/_offsets.c for
it), as tests/test_capi.py does for the pyenv builds. Then, inside it:
- `import offsets._offsets` leaves `sys._is_gil_enabled()` False (CPython's own truth: an extension
  without Py_mod_gil turns the GIL back on, with a RuntimeWarning);
- 16 threads look a name up through the capsule and through offsets.get() while another switches
  tables with use_table() (tests/jitext/race_use_table.py): no wrong answer, no error, no crash;
- tests/jitext (run-time reads of live objects) and examples/jitdemo (compile-time constants with
  their proof, and run-time answers; a generator's frame owner against FRAME_OWNED_BY_GENERATOR)
  agree with Python, with the GIL still off;
- isolated sub-interpreters import the capsule at once and share its answers;
- the C PyOffsets_Get() cost per call is printed (the goal, at most 30 ns, is `make bench`'s).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from offsets.data_cache import folder as cache_folder

ROOT = Path(__file__).resolve().parents[2]
PYTHON = cache_folder() / "build" / "upstream-3.13.15-free-threaded" / "prefix" / "bin" / "python3.13t"


def _capi_tests():
    spec = importlib.util.spec_from_file_location("_capi_tests", ROOT / "tests" / "test_capi.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


capi = _capi_tests()


@pytest.fixture(scope="module")
def venv():
    if not PYTHON.is_file():
        pytest.fail(f"{PYTHON} is missing: `make prove` builds it (scripts/build-cpython)")
    vpy, ext = capi.prepared_venv(PYTHON, "3.13.15t")
    return vpy, ext


def env(**extra) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OFFSETS_STRICT", "PYTHON_GIL")}
    e.update(extra)
    return e


def in_venv(vpy: Path, code: str, tmp_path: Path, **extra) -> str:
    proc = subprocess.run([str(vpy), "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env(**extra))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_importing_the_capsule_keeps_the_gil_off(venv, tmp_path):
    vpy, _ = venv
    out = in_venv(vpy, "import sys, warnings\nwarnings.simplefilter('error')\n"
                       "assert not sys._is_gil_enabled()\nimport offsets._offsets as c\n"
                       "print(sys._is_gil_enabled(), c._identity()[0])", tmp_path)
    gil, table = out.split()
    assert gil == "False", out
    assert table.startswith("cpython-3.13.15-freethreaded-"), out


@pytest.mark.parametrize("python_shim", [True, False], ids=["capsule-alone", "capsule-and-offsets.get"])
def test_use_table_races_without_the_gil(venv, tmp_path, python_shim):
    """capsule-alone: 16 C threads, the Python side made atomic by race_use_table's shim (the capsule's
    own switch); capsule-and-offsets.get: 8 C and 8 Python threads, offsets.runtime as it is."""
    vpy, _ = venv
    got = capi.race_in(vpy, tmp_path, env(), threads=16, switches=20, python_shim=python_shim)
    assert got["gil_enabled"] is False, got
    assert got["switches"] == 20 and got["lookups"] > 1000, got
    assert got["wrong"] == [] and got["errors"] == [], got


def test_jit_extension_and_worked_example_without_the_gil(venv, tmp_path):
    vpy, ext = venv
    got = capi.check_in(vpy, ext, tmp_path)
    assert capi.REQUIRED <= set(got["checked"]), got
    assert capi.LISTITER in got["checked"], got
    assert got["gil_enabled"] is False, got
    demo = capi.build_and_run_example(vpy, tmp_path)
    assert demo["gil_enabled"] is False, demo
    assert demo["compiled_for"].startswith("cpython-3.13.15-freethreaded-"), demo
    # a suspended generator's frame owner, read both ways, is FRAME_OWNED_BY_GENERATOR of the table
    # (1: Include/internal/pycore_frame.h), as the interpreter has it: the frame is the generator's
    assert demo["checked"][3] == capi.OWNER, demo
    assert "a generator's frame owner is FRAME_OWNED_BY_GENERATOR" in got["checked"], got


def test_sub_interpreters_without_the_gil(venv, tmp_path):
    """Isolated sub-interpreters import the capsule at once and share the process's
    answers (tests/jitext/subinterpreters.py, as on the GIL builds), with the GIL still off."""
    vpy, _ = venv
    out = in_venv(vpy, f"import json, runpy, sys; from pathlib import Path\n"
                       f"m = runpy.run_path({str(capi.SUBINTERPRETERS)!r}, run_name='subs')\n"
                       f"got = m['main'](Path({str(tmp_path)!r}), {capi.SUBINTERPRETER_COUNT})\n"
                       f"got['gil_enabled'] = sys._is_gil_enabled()\nprint(json.dumps(got))", tmp_path)
    got = json.loads(out.strip().splitlines()[-1])
    capi.check_subinterpreters(got)
    assert got["gil_enabled"] is False and {s["gil"] for s in got["subs"]} == {"own"}, got


def test_c_lookup_cost_is_reported(venv, tmp_path):
    vpy, _ = venv
    ns = float(in_venv(vpy, "import offsets._offsets as c\n"
                            "print(min(c._bench_get('PyListObject.ob_item', 2_000_000) for _ in range(5)))", tmp_path))
    print(f"free-threaded 3.13.15: PyOffsets_Get() {ns:.1f} ns per call (goal <= 30 ns, `make bench`)")
    assert ns > 0
