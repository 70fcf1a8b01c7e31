"""Every tool of the checkout that runs as `python -m offsets.tools.X` answers `--help` with its usage
and examples and starts no work (a bench that ran on `--help` took minutes), and refuses an argument
it does not take with one line and exit status 2."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "offsets" / "tools"
RUNNABLE = sorted(p.stem for p in TOOLS.glob("*.py") if 'if __name__ == "__main__":' in p.read_text())


def test_the_runnable_tools_are_found():
    assert {"bench", "bench_startup", "regenerate", "windows_wine"} <= set(RUNNABLE), RUNNABLE


@pytest.mark.parametrize("tool", RUNNABLE)
def test_help_prints_usage_and_examples_and_runs_nothing(tool):
    proc = subprocess.run([sys.executable, "-m", f"offsets.tools.{tool}", "--help"], capture_output=True,
                          text=True, timeout=120, cwd=TOOLS.parent.parent)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    assert proc.stdout.startswith(f"usage: python -m offsets.tools.{tool}"), proc.stdout[:300]
    examples = proc.stdout.split("\nexamples:\n", 1)
    assert len(examples) == 2 and f"python -m offsets.tools.{tool}" in examples[1], proc.stdout[-600:]


@pytest.mark.parametrize("tool", RUNNABLE)
def test_an_unknown_option_is_one_line_and_exit_2(tool):
    proc = subprocess.run([sys.executable, "-m", f"offsets.tools.{tool}", "--no-such-option"], capture_output=True,
                          text=True, timeout=120, cwd=TOOLS.parent.parent)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout[-600:]
    assert proc.stderr.splitlines()[-1] == (f"python -m offsets.tools.{tool}: error: unrecognized arguments: "
                                            "--no-such-option"), proc.stderr[-600:]
