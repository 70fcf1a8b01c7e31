"""Sub-interpreters with their own GIL on Debian sid's own 3.14, as
tests/test_capi.py does on pyenv's 3.12 and 3.13: the capsule, compiled here against sid's
installed 3.14 headers, is imported by several isolated sub-interpreters at once
(tests/jitext/subinterpreters.py), which share the process's answers and agree with the main
interpreter's offsets.get() (itself proven on sid's builds by test_debug_offsets.py)."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import realbuilds

ROOT = Path(__file__).resolve().parents[2]


def _capi_tests():
    spec = importlib.util.spec_from_file_location("_capi_tests", ROOT / "tests" / "test_capi.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def capsule_package(python: Path, minor: str, work: Path) -> Path:
    """A copy of the package whose offsets._offsets is compiled for sid's python`minor` (its own
    installed headers, -Werror), as `pip install .` would; the directory to put on PYTHONPATH."""
    root = realbuilds.sid_root(minor)
    pkg = work / "pkg"
    shutil.copytree(ROOT / "offsets", pkg / "offsets", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    suffix = realbuilds.run_in(python, "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))").strip()
    include = root / "usr" / "include"
    proc = subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", f"-I{ROOT / 'headers'}",
                           f"-I{include / f'python{minor}'}", f"-I{include}", str(ROOT / "offsets" / "_offsets.c"),
                           "-o", str(pkg / "offsets" / f"_offsets{suffix}")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return pkg


def test_sub_interpreters_on_sid_3_14(tmp_path):
    py = realbuilds.sid_python("3.14")
    pkg = capsule_package(py, "3.14", tmp_path)
    capi = _capi_tests()
    code = ("import json, runpy, sys; from pathlib import Path\n"
            f"m = runpy.run_path({str(capi.SUBINTERPRETERS)!r}, run_name='subs')\n"
            f"print(json.dumps(m['main'](Path(sys.argv[1]), {capi.SUBINTERPRETER_COUNT})))\n")
    got = json.loads(realbuilds.run_in(py, code, str(tmp_path), env={"PYTHONPATH": str(pkg)},
                                    cwd=tmp_path).strip().splitlines()[-1])
    capi.check_subinterpreters(got)
    assert {s["gil"] for s in got["subs"]} == {"own"}, got["subs"]
    assert got["main"]["identity"][0].startswith("cpython-3.14.10-debian-"), got["main"]
