"""`make bench`'s runtime figures run cold here, so that a change to the first lookup cannot leave
one measuring something else: the build no table ships makes its own table at its first get()
(the build-id file, which a first lookup reads first, hides the shipped table too), and its later
processes answer from it."""
from __future__ import annotations

from offsets.tools import bench_runtime


def test_the_build_no_table_ships_makes_its_table_and_later_processes_use_it():
    got = bench_runtime.unshipped(runs=1)
    assert got["own_made"], got
    assert got["own_later_ms"] > 0 and got["shipped_first_ms"] > 0
    assert "NO TABLE MADE" not in bench_runtime.report({**_rest(), **got})


def test_a_bench_that_made_no_table_is_not_called_ok():
    got = {"own_first_s": 0.0, "own_made": False, "own_later_ms": 1.0, "shipped_first_ms": 1.0, "own_later_ratio": 1.0}
    line = next(x for x in bench_runtime.report({**_rest(), **got}).splitlines() if "no table ships" in x)
    assert "NOT MEASURED" in line and "NO TABLE MADE" in line and ": ok" not in line


def _rest() -> dict:
    """The other figures of a report, as any number (only the unshipped build's lines are asked about)."""
    nan = float("nan")
    return dict(import_ms=1.0, bare_start_ms=10.0, importtime_ms=0.1, first_get_ms=1.0, get_ratio=1.5, get_ns=25.0,
                dict_ns=17.0, attr_get_ratio=2.0, get_vs_bound=0.8, bound_ns=30.0, constant_ratio=1.1,
                constant_ns=20.0, c_get_ns=nan, c_error="not built", c_constant_ratio=nan, c_constant_ns=nan)
