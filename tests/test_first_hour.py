"""A JIT author's first hour, as a test: the extension of docs/c-api.md ("Your first extension"), its
pyproject.toml, setup.py and myjit.c exactly as the doc's blocks have them, built the ordinary way
(`pip install .` with build isolation, in a fresh venv of pyenv's 3.8 and 3.13) against the wheel
of `cpython-offsets` made from this checkout, with no checkout on any include path; then the doc's
command imports it and reads a list iterator's index through it. The truth is the interpreter: the
iterator advanced once holds 1, as the doc's comment says.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

import result_memo
from conftest import missing_input, pyenv_python3
from doc_blocks import block
from test_capi import ROOT, prepared_venv, run

DOC = "docs/c-api.md"
FILES = {"pyproject.toml": block(DOC, "toml", "[build-system]"), "setup.py": block(DOC, "python", "from setuptools import"),
         "myjit.c": block(DOC, "c", "PyInit_myjit")}
COMMANDS = block(DOC, "", "import myjit").splitlines()


def wheel_for(version: str) -> Path:
    """The directory holding the wheel of this checkout for pyenv's `version` (built once per source
    digest, offline, in test_capi's venv of that version)."""
    from offsets import cache_lock

    python = pyenv_python3(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} on this machine (`pyenv install {version}`)")
    vpy, _ = prepared_venv(python, version)
    venv = vpy.parent.parent
    out = venv / "wheelhouse"
    with cache_lock.held(f"venvs/{version}"):
        if not list(out.glob("cpython_offsets-*.whl")):
            run([vpy, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "--no-build-isolation",
                 "--no-index", "-w", out, venv / "src"])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("version", ("3.8", "3.13"))
def test_the_docs_first_extension_builds_isolated_and_reads_a_list_iterator(version, tmp_path):
    """Remembered once passed (tests/result_memo.py) under the package, this test, the doc, the wheel
    and the interpreter with its libpython (CI's cache of its own runs it every time)."""
    wheels = wheel_for(version)
    python = Path(pyenv_python3(version)).resolve()
    files = [Path(__file__).resolve(), ROOT / DOC, *sorted(wheels.glob("cpython_offsets-*.whl")), python,
             *sorted(python.parent.parent.glob("lib/libpython*.so*"))]
    if result_memo.passed_before("first-hour-extension", files, version):
        return
    project = tmp_path / "myjit"
    project.mkdir()
    for name, text in FILES.items():
        (project / name).write_text(text)
    venv = tmp_path / "venv"
    run([pyenv_python3(version), "-m", "venv", venv])
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OFFSETS_"))}
    env.update(OFFSETS_CACHE=str(tmp_path / "cache"), OFFSETS_AUTOSCAN="0", PIP_DISABLE_PIP_VERSION_CHECK="1")
    install = COMMANDS[0].split("#")[0].strip()
    assert install == "pip install .", COMMANDS
    # the doc's command; the checkout's wheel is where pip finds cpython-offsets (setuptools comes from PyPI)
    proc = subprocess.run([str(py), "-m", *shlex.split(install), "-v", "--find-links", str(wheels)], cwd=project,
                          env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    compiles = [line for line in log.splitlines() if re.search(r"\b(gcc|cc|x86_64-linux-gnu-gcc)\b.* -c ", line)]
    assert compiles, log[-3000:]
    for line in compiles:
        includes = re.findall(r"-I\s*(\S+)", line)
        assert includes and not any(str(ROOT) in i for i in includes), line
        assert any(i.endswith("offsets/include") for i in includes), line      # the installed pyoffsets.h
    listed = run([py, "-m", "pip", "list", "--format=freeze"], env=env)
    assert re.search(r"^cpython-offsets==", listed, re.M) and re.search(r"^myjit==0\.1$", listed, re.M), listed
    # what a build system that runs no Python asks: the same directories, from the installed runtime alone
    flags = run([py, "-m", "offsets", "--cflags"], cwd=tmp_path, env=env).split()
    dirs = [Path(f[2:]) for f in flags]
    assert [f[:2] for f in flags] == ["-I", "-I"] and (dirs[0] / "pyoffsets.h").is_file(), flags
    assert (dirs[1] / "pyoffsets_build.h").is_file() and not any(str(ROOT) in str(d) for d in dirs), flags
    command, _, want = COMMANDS[1].partition("#")
    args = shlex.split(command)
    assert args[:2] == ["python", "-c"], command
    got = run([py, *args[1:]], cwd=tmp_path, env=env).strip()
    assert got == want.strip() == "1", (got, want)
    result_memo.passed("first-hour-extension", files, version)
