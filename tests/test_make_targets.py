"""What each make target installs: `make run` what running needs, `make test` the rest.

Read from `make -n -B TARGET` (every command the target would run, nothing run): a newcomer who only
wants the main job installs gcc and the scan extra, not a browser, clang, cross compilers or dtrace.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Packages only the tests (and, for the first three, `make tables`/`make bench`) use.
NOT_FOR_RUNNING = ("dpkg-dev", "gcc-aarch64-linux-gnu", "systemtap-sdt-dev", "clang", "g++-aarch64-linux-gnu",
                   "chromium", "'.[test]'", "gcc-powerpc64le-linux-gnu", "gcc-s390x-linux-gnu",
                   "gcc-riscv64-linux-gnu", "libc6-dev-s390x-cross", "qemu-user")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def commands(target: str) -> str:
    proc = subprocess.run(["make", "-n", "-B", target], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def installs(text: str, package: str) -> bool:
    """Whether a command of `text` installs `package` (a Debian package, or a pip requirement as written)."""
    return any(("apt-get install" in ln or "pip install" in ln) and package in re.split(r"[\s;]+", ln)
               for ln in text.splitlines())


def test_make_run_installs_only_what_running_needs():
    run = commands("run")
    assert installs(run, "gcc") and installs(run, "'.[scan]'")
    assert [p for p in NOT_FOR_RUNNING if installs(run, p)] == []


def test_make_test_installs_the_rest():
    test = commands("test")
    assert [p for p in NOT_FOR_RUNNING + ("gcc", "'.[scan]'") if not installs(test, p)] == []
    tables = commands("tables")
    assert [p for p in NOT_FOR_RUNNING[:3] if not installs(tables, p)] == []
    assert not installs(tables, "chromium") and not installs(tables, "'.[test]'")
