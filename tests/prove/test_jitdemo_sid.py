"""The worked example (examples/jitdemo) on Debian sid's own 3.14 and 3.15, run through sid's libc
loader, as tests/test_capi.py runs it on pyenv's 3.8-3.13 and test_capi_freethreaded.py on
python.org's free-threaded 3.13.15.

jitdemo is compiled here with gcc against sid's installed headers and the committed header of
that very build (generated/pyoffsets_cpython-3.1X.Y-debian-x86_64-linux-gnu.h, with its
PYOFFSETS_CHECK_LAYOUT proof), and the capsule against the same headers. Inside sid's interpreter
it reads a suspended generator's frame `owner` at the compile-time and at the run-time offsets
and compares it with FRAME_OWNED_BY_GENERATOR from the table, both ways; the interpreter's own
truth is that the frame is the generator's.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import realbuilds
from test_subinterpreters import capsule_package

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "jitdemo"


def build_jitdemo(python: Path, minor: str, work: Path) -> Path:
    """jitdemo compiled for sid's python`minor` against the committed header of its build; the
    directory holding it (and demo.py)."""
    root = realbuilds.sid_root(minor)
    version = realbuilds.run_in(python, "import platform; print(platform.python_version())").strip()
    header = f"pyoffsets_cpython-{version}-debian-x86_64-linux-gnu.h"
    assert (ROOT / "generated" / header).is_file(), f"no committed {header}: `make tables`"
    out = work / "jitdemo"
    shutil.copytree(EXAMPLE, out, ignore=shutil.ignore_patterns("build", "*.so", "__pycache__"))
    suffix = realbuilds.run_in(python, "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))").strip()
    include = root / "usr" / "include"
    # what offsets.include_dirs() writes for a build (runtime/headers.py), here for sid's, whose
    # interpreter cannot run this checkout's setup: pyoffsets_build.h naming the build's header
    (out / "pyoffsets_build.h").write_text(f'#include "{header}"\n')
    proc = subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror",
                           "-Wno-missing-field-initializers", "-Wno-unused-parameter", "-Wno-cast-function-type",
                           f"-I{ROOT / 'headers'}", f"-I{ROOT / 'generated'}", f"-I{out}", f"-I{include / f'python{minor}'}",
                           f"-I{include}", f'-DPYOFFSETS_BUILD_HEADER="{header}"', str(out / "jitdemo.c"),
                           "-o", str(out / f"jitdemo{suffix}")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("minor", ["3.14", "3.15"])
def test_worked_example_reads_the_frame_owner_on_sid(minor, tmp_path):
    py = realbuilds.sid_python(minor)
    pkg = capsule_package(py, minor, tmp_path)
    demo = build_jitdemo(py, minor, tmp_path)
    got = json.loads(realbuilds.run_in(py, (demo / "demo.py").read_text(), env={"PYTHONPATH": f"{pkg}:{demo}"},
                                       cwd=demo).strip().splitlines()[-1])
    assert got["python"].startswith(minor + "."), got
    assert got["compiled_for"] == f"cpython-{got['python']}-debian-x86_64-linux-gnu", got
    # FRAME_OWNED_BY_GENERATOR is 1 in 3.14 and 3.15 (Include/internal/pycore_interpframe_structs.h)
    assert "suspended generator's frame owner == FRAME_OWNED_BY_GENERATOR (1)" in got["checked"], got
    # walk()'s frames are sys._getframe()'s chain (demo.py compares them), 3.14+'s shim owners skipped
    assert "walk(): the frames sys._getframe() shows, shims and incomplete frames skipped" in got["checked"], got
