"""The drift tools' part of `make bench`: `history`, `report` and `diff` over the committed tables,
each as a ratio to a bare `offsets --help` start measured in the same run, with its goal (about a
second: an answer at the prompt, or in a CI step, should not wait on loading every table).

    python -m offsets.tools.bench_drift
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import command_line
from .regenerate import repository
from .verdict import verdict


def cases(tables: Path) -> tuple:
    """(label, command line, goal in seconds) over the committed tables in `tables`."""
    return (("history listiterobject.it_index (all tables)", ["history", "listiterobject.it_index"], 1.0),
            ("report -s PyObject -s PyFrameObject (all)", ["report", "-s", "PyObject", "-s", "PyFrameObject",
                                                           "-o", os.devnull], 3.0),
            ("diff of two tables (3.12.1 -> 3.13.0)", ["diff", str(tables / "cpython-3.12.1-x86_64-linux-gnu.yaml"),
                                                       str(tables / "cpython-3.13.0-x86_64-linux-gnu.yaml")], 0.5))


def _wall(args: list, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "offsets", *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


EXAMPLES = """  python -m offsets.tools.bench_drift           history, report and diff over generated/, against `offsets --help`
"""


def main(argv=None, runs: int = 5) -> int:
    command_line.no_arguments("bench_drift", __doc__, EXAMPLES, argv)
    generated = repository() / "generated"    # `make bench` runs in the checkout
    tables = len(list(generated.glob("cpython-*.yaml")))
    base = _wall(["--help"], runs)
    print(f"drift tools ({tables} committed tables; medians of {runs} runs; `offsets --help` takes {base:.2f} s):")
    for label, args, goal in cases(generated):
        t = _wall(args, runs)
        print(f"  {label:<46} {t:6.2f} s = {t / base:5.1f}x `offsets --help` (goal <= {goal:g} s: {verdict(t, goal)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
