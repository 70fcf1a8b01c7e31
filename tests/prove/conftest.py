"""Fixtures of `make prove`: real builds no table ships (see realbuilds.py).

`make test` does not collect this directory (pyproject's `--ignore=tests/prove`); `make prove`
runs `pytest tests/prove`, which compiles CPython and fetches Debian sid's interpreters on first
use (cached in $OFFSETS_CACHE). Nothing here skips: a missing input is a failure.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import realbuilds  # noqa: E402
from debug_offsets import Headers  # noqa: E402


def _tests_conftest():
    """tests/conftest.py: under `pytest tests/prove` the name `conftest` is this file, while the
    test files of tests/ that prove tests load (test_capi.py) import its rules by that name."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("_tests_conftest", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_rules = _tests_conftest()
missing_input, missing_tool, c_extension_built = _rules.missing_input, _rules.missing_tool, _rules.c_extension_built
pyenv_python3, pyenv_python, fetched = _rules.pyenv_python3, _rules.pyenv_python, _rules.fetched
REPO = _rules.REPO      # tests/runtime_child.py's, which the dependency cut's tests load
committed_table = _rules.committed_table
dwarf_fields, pyenv_dwarf, PYENV_MINORS = _rules.dwarf_fields, _rules.pyenv_dwarf, _rules.PYENV_MINORS


@pytest.fixture(scope="session")
def sid_python():
    """sid_python(minor) -> the wrapper that runs Debian sid's python`minor` (3.13, 3.14, 3.15)."""
    return realbuilds.sid_python


@pytest.fixture(scope="session")
def upstream_python():
    """upstream_python(config) -> bin/python3.13[t] of upstream 3.13.15 ("release" or "free-threaded")."""
    return realbuilds.upstream_python


@pytest.fixture(scope="session")
def interpreter():
    """interpreter("sid-3.13" | "upstream-3.13.15-release" | ...) -> path of that interpreter."""
    return realbuilds.interpreter


_DESCRIBE = "import json, sysconfig; print(json.dumps([sysconfig.get_paths()['include'], " \
            "sysconfig.get_config_var('PY_CORE_CFLAGS') or '', sysconfig.get_config_var('prefix')]))"


@pytest.fixture(scope="session")
def headers_of():
    """headers_of(python) -> `Headers`: that interpreter's installed headers, compiled with its core defines."""
    cache: dict = {}

    def get(python: Path) -> Headers:
        if python not in cache:
            include, cflags, _ = json.loads(realbuilds.run_in(python, _DESCRIBE))
            include = Path(include)
            if not (include / "internal").is_dir():
                raise AssertionError(f"{python}'s include directory {include} has no internal/ headers")
            # Debian's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h> from two levels up
            cache[python] = Headers(include, cflags, (include.parent,))
        return cache[python]

    return get


@pytest.fixture(scope="session")
def installed_tables(tmp_path_factory):
    """installed_tables(python) -> the OFFSETS_TABLES directory where `offsets scan --python PY
    --install`, run from the project's environment, put PY's own table (once per session)."""
    cache: dict = {}

    def get(python: Path) -> Path:
        if python not in cache:
            help_text = subprocess.run([sys.executable, "-m", "offsets", "scan", "--help"],
                                       capture_output=True, text=True).stdout
            if "--install" not in help_text:
                pytest.fail("`offsets scan` has no --install option: cannot install "
                            f"{python}'s own table")
            out = tmp_path_factory.mktemp("tables")
            proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "--python", str(python), "--install"],
                                  capture_output=True, text=True, env={**realbuilds.clean_env(), "OFFSETS_TABLES": str(out)})
            if proc.returncode:
                pytest.fail(f"offsets scan --python {python} --install failed (exit {proc.returncode}):\n"
                            f"{proc.stderr.strip()[-3000:]}")
            if not any(out.rglob("*.jsonl")):
                pytest.fail(f"offsets scan --python {python} --install put no compact table into OFFSETS_TABLES={out}")
            cache[python] = out
        return cache[python]

    return get
