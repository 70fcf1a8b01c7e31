"""Python versions told truthfully: the `offsets` command (the scanner, the checks, the drift tools)
runs on `COMMAND_PYTHON` (3.9) and later and refuses an older interpreter with one line; the
runtime alone (`import offsets`, the C API) runs on 3.8 too (tests/test_capi.py, on pyenv's 3.8).

The truth is the interpreters themselves: pyenv's 3.8 is refused, and the scanner's own tests pass
on pyenv's 3.9 in a venv with the third-party packages pip picks for 3.9 (pyelftools 0.32 there,
which hands file names to the dwz loader as bytes, where 0.33 gives str).
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import result_memo
from conftest import PYENV_MINORS, missing_input, pyenv_python
from offsets.cli import COMMAND_PYTHON
from test_describe import files_of

REPO = Path(__file__).resolve().parent.parent
MINIMUM = ".".join(map(str, COMMAND_PYTHON))
OLDER = f"{COMMAND_PYTHON[0]}.{COMMAND_PYTHON[1] - 1}"
#: The scanner's tests that need nothing fetched: the golden fake build, the cache keys, the DWARF
#: reader on gcc's fixtures (dwz's included), and `offsets scan --python`'s describe step.
SCANNER_TESTS = ["tests/test_scan_fixtures.py", "tests/test_cache_keys.py", "tests/test_describe.py",
                 "tests/test_dwarf.py::test_fixture_layouts_match_gcc", "tests/test_dwarf.py::test_separate_debug_file",
                 "tests/test_dwarf.py::test_dwz_supplementary_file",
                 "tests/test_dwarf.py::test_fixture_agrees_with_the_libclang_scanner"]


def interpreter(minor: str) -> Path:
    exe = pyenv_python(minor)
    if exe is None:
        missing_input(f"pyenv has no CPython {minor} (`pyenv install {minor}`)")
    return exe


def test_the_command_refuses_an_older_python_with_one_line(tmp_path):
    exe = interpreter(OLDER)
    proc = subprocess.run([str(exe), "-m", "offsets", "scan", "--help"], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and f"needs Python {MINIMUM} or later" in proc.stderr, proc.stderr
    # the Makefile refuses it as the venv's interpreter before making anything
    venv = tmp_path / "venv"
    made = subprocess.run(["make", "-C", str(REPO), "venv", f"VENV_PYTHON={exe}", f"VENV={venv}"],
                          capture_output=True, text=True)
    ours = [ln for ln in made.stdout.splitlines() + made.stderr.splitlines() if not ln.startswith("make")]
    assert made.returncode == 2 and ours == [f"VENV_PYTHON={exe} is older than {MINIMUM}, which the scanner "
                                             f"needs: give VENV_PYTHON=python{MINIMUM} or later"]
    assert not venv.exists()
    assert f"sys.version_info < {COMMAND_PYTHON}" in (REPO / "Makefile").read_text()   # the same minimum


def third_party(extras=("scan", "test")) -> list[str]:
    """The requirements of `extras` as the installed package's metadata lists them (from pyproject.toml),
    without their markers and without this package itself."""
    found = []
    for req in metadata.requires("cpython-offsets") or ():
        spec, _, marker = req.partition(";")
        extra = re.search(r'extra == "([^"]+)"', marker)
        if extra and extra.group(1) in extras and not spec.strip().startswith("cpython-offsets"):
            found.append(spec.strip())
    return found


def command_venv(minor: str, extras=("scan", "test")) -> Path:
    """`bin/python` of a venv on pyenv's CPython `minor` with the `extras`' packages, made once per
    interpreter and requirement list under $OFFSETS_CACHE/venvs (one process makes it, the others wait)."""
    from offsets import cache_lock
    from offsets.layout.identity import cache_dir

    exe, reqs = interpreter(minor), third_party(extras)
    key = hashlib.sha256("\n".join([str(exe), *reqs]).encode()).hexdigest()[:16]
    venv = Path(cache_dir()) / "venvs" / f"command-{minor}-{key}"
    with cache_lock.held(f"venvs/command-{minor}"):
        if not (venv / ".ok").exists():
            subprocess.run([str(exe), "-m", "venv", "--clear", str(venv)], check=True, capture_output=True)
            pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                  "--disable-pip-version-check", *reqs], capture_output=True, text=True)
            assert pip.returncode == 0, pip.stderr[-3000:]
            (venv / ".ok").write_text("")
    return venv / "bin" / "python"


def minimum_venv() -> Path:
    """A venv on pyenv's `MINIMUM` with the scan and test extras' packages (command_venv)."""
    return command_venv(MINIMUM)


#: The newest CPython the command is tested on (pyenv's newest).
NEWEST = PYENV_MINORS[-1]


def command_python(minor: str) -> Path:
    """The `offsets` command's interpreter as a user installs it (`pip install 'cpython-offsets[scan]'`):
    "venv" is the one running the tests; `MINIMUM` is `minimum_venv()` (which
    `test_the_scanners_tests_pass_on_its_minimum_python` makes anyway, the test extra in it too);
    any other minor a venv on pyenv's with the scan extra alone."""
    if minor == "venv":
        return Path(sys.executable)
    return minimum_venv() if minor == MINIMUM else command_venv(minor, ("scan",))


def test_the_scanners_tests_pass_on_its_minimum_python():
    """Remembered once passed (tests/result_memo.py) under the package, every file of tests/, the
    interpreter and the venv's installed distributions."""
    python = minimum_venv()
    files = [p for p in sorted((REPO / "tests").rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    installed = sorted(p.name for p in python.parent.parent.glob("lib/python*/site-packages/*.dist-info"))
    parts = (str(python.resolve()), installed, SCANNER_TESTS)
    if result_memo.passed_before("scanner-tests-on-minimum-python", files, *parts):
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = str(REPO)      # the checkout's package, run by that interpreter
    proc = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           *SCANNER_TESTS], capture_output=True, text=True, cwd=REPO, env=env)
    version = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version.startswith(MINIMUM + ".")
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.fullmatch(r"\d+ passed in .*", summary), summary      # nothing skipped, nothing failed
    result_memo.passed("scanner-tests-on-minimum-python", files, *parts)


#: The runtime's minimum, as the package declares it (pyproject.toml's requires-python).
RUNTIME = tuple(int(x) for x in metadata.metadata("cpython-offsets")["Requires-Python"].lstrip(">=").split("."))
RUNTIME_MINORS = [m for m in PYENV_MINORS if tuple(map(int, m.split("."))) >= RUNTIME]
LOOKUP = ["PyTupleObject.ob_item", "PyListObject", "NoSuch.field"]


@pytest.mark.parametrize("minor", RUNTIME_MINORS)
def test_make_runs_lookup_answers_in_every_python_the_runtime_supports(minor, tmp_path):
    """`make run`'s second step, `PYTHONPATH=checkout PYTHON -m offsets.runtime NAMES`, run by pyenv's
    CPython `minor` (the oldest the runtime supports included) with an empty cache, as on a fresh
    machine, then again with whatever the first run kept there (which the second writes again
    nowhere). The truth: the interpreter's own `tuple.__basicsize__` (where ob_item starts) and
    `list.__basicsize__`; an unknown name is refused, exit 2."""
    exe = interpreter(minor)
    truth = subprocess.run([str(exe), "-c", "print(tuple.__basicsize__, list.__basicsize__)"], capture_output=True,
                           text=True, check=True).stdout.split()
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(REPO), OFFSETS_CACHE=str(cache))
    lookup = lambda: subprocess.run([str(exe), "-m", "offsets.runtime", *LOOKUP], capture_output=True,  # noqa: E731
                                    text=True, env=env, cwd=tmp_path)
    cold = lookup()
    kept = files_of(cache)
    warm = lookup()
    assert files_of(cache) == kept, "the second run wrote again what the first kept"
    assert cold.returncode == warm.returncode == 2, cold.stderr + warm.stderr
    assert warm.stdout == cold.stdout and cold.stderr == warm.stderr == ""
    lines = cold.stdout.splitlines()
    assert lines[0].startswith("table: cpython-") and "(exact:" in lines[0], lines[0]
    assert lines[1].split() == ["PyTupleObject.ob_item", truth[0], "exact"]
    assert lines[2].split() == ["PyListObject", truth[1], "exact", "(size)"]
    assert lines[3].split()[:3] == ["NoSuch.field", "-", "refused:"]
