"""`make bench`'s startup figures in instructions (valgrind): counted for real, the same from run to
run where CPU time is not, and reported with their verdict, or said to be missing."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import c_extension_built
from offsets.tools import bench_startup

CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (make bench installs it)")
def test_the_instructions_of_a_first_lookup_are_counted_and_repeat(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT), "OFFSETS_TABLES": str(tmp_path / "none")}
    first = bench_startup.instructions(Path(sys.executable), env, str(tmp_path))
    again = bench_startup.instructions(Path(sys.executable), env, str(tmp_path))
    assert first["lookup"] > first["bare"] > 10_000_000 and first["ratio"] > 1
    assert abs(first["lookup"] - again["lookup"]) < first["lookup"] * 0.002      # CPU time varies by percents
    assert abs(first["bare"] - again["bare"]) < first["bare"] * 0.002


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (make bench installs it)")
def test_where_a_first_lookups_instructions_go_is_counted(tmp_path):
    """Importing the runtime, the lookup and the exit each cost instructions; the modules are those
    of offsets the first lookup imports, each Python one with its bytecode."""
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT), "OFFSETS_TABLES": str(tmp_path / "none")}
    counted = bench_startup.instructions(Path(sys.executable), env, str(tmp_path))
    got = bench_startup.where_it_goes(Path(sys.executable), env, str(tmp_path), counted)
    assert got["imports"] > 1_000_000 and got["lookup"] > 100_000 and got["exit"] > 100_000, got
    assert got["imports"] + got["lookup"] + got["exit"] == counted["lookup"] - counted["bare"]
    modules = got["modules"]
    assert {"offsets", "offsets.runtime", "offsets.runtime.core"} <= set(modules)
    assert not any(name.startswith(("offsets.scan", "offsets.check", "offsets.cli")) for name in modules)
    assert all(size > 0 for name, size in modules.items() if name != "offsets._lookup"), modules


def test_the_report_gives_the_count_and_its_verdict_or_why_there_is_none():
    cpu = {"ratio": 1.2, "lookup_ms": 12.0, "bare_ms": 10.0, "wall_ratio": 1.2}
    counted = dict(cpu, instructions={"bare": 100_000_000, "lookup": 105_000_000, "ratio": 1.05})
    uncounted = dict(cpu, instructions=None)
    text = bench_startup.report({"shipped": counted, "build_id": uncounted, "bare_site": cpu,
                                 "unshipped": dict(cpu, first_s=1.0, made=True)})
    assert "in instructions executed  1.050x  (goal <= 1.1x: ok; 105.0M vs 100.0M" in text
    assert "instructions not counted (no valgrind" in text


def test_the_report_says_where_the_instructions_go():
    cpu = {"ratio": 1.2, "lookup_ms": 12.0, "bare_ms": 10.0, "wall_ratio": 1.2}
    parts = {"imports": 3_000_000, "lookup": 1_500_000, "exit": 500_000,
             "modules": {"offsets": 4096, "offsets.runtime": 8192, "offsets._lookup": 0}}
    shipped = dict(cpu, instructions={"bare": 100_000_000, "lookup": 105_000_000, "ratio": 1.05}, parts=parts)
    text = bench_startup.report({"shipped": shipped, "build_id": cpu, "bare_site": cpu,
                                 "unshipped": dict(cpu, first_s=1.0, made=True)})
    assert ("where they go: importing 3 modules of offsets (12 KB of bytecode) 3.0M, the lookup 1.5M, "
            "the exit 0.5M") in text


def test_the_c_api_first_lookup_is_reported_or_said_not_measured():
    cpu = {"ratio": 1.2, "lookup_ms": 12.0, "bare_ms": 10.0, "wall_ratio": 1.2}
    base = {"shipped": cpu, "build_id": cpu, "bare_site": cpu, "unshipped": dict(cpu, first_s=1.0, made=True)}
    measured = dict(cpu, ratio=1.08, instructions={"bare": 100_000_000, "lookup": 112_000_000, "ratio": 1.12})
    text = bench_startup.report(dict(base, c_api=measured))
    line = next(x for x in text.splitlines() if "the C API's first PyOffsets_Get (shipped)" in x)
    assert "1.08x  (goal <= 1.1x: ok; 12.0 ms vs 10.0 ms CPU" in line
    assert "in instructions executed  1.120x  (goal <= 1.1x: OVER GOAL; 112.0M vs 100.0M" in text
    text = bench_startup.report(dict(base, c_api={"error": "offsets._offsets does not import"}))
    assert "the C API's first PyOffsets_Get (shipped): not measured: offsets._offsets does not import" in text


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (make bench installs it)")
def test_the_c_api_first_lookup_is_counted(tmp_path):
    c_extension_built()
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT), "OFFSETS_TABLES": str(tmp_path / "none")}
    got = bench_startup.c_api(Path(sys.executable), env, str(tmp_path), runs=1)
    assert "error" not in got, got
    assert got["instructions"]["lookup"] > got["instructions"]["bare"] and got["ratio"] > 0


def test_each_cpu_figure_shows_how_much_its_runs_move(tmp_path):
    """The middle half of the ratios of each run to the bare start before it: two quartiles around
    the medians' ratio where the runs are alike (here: the same program twice), printed beside it."""
    env = {**os.environ, "OFFSETS_TABLES": str(tmp_path / "none")}
    got = bench_startup.ratio(Path(sys.executable), env, str(tmp_path), 8, lookup="pass")
    low, high = got["pairs"]
    assert 0.5 < low <= high < 2.0
    line = bench_startup._line("a build", dict(got, ratio=1.05, pairs=(1.02, 1.09)))
    assert "1.05x  (goal <= 1.1x: ok;" in line and "each run over the bare start before it: 1.02-1.09x, the middle half" in line


def test_a_lookups_own_cpu_time_is_its_runs_over_the_bare_start_before_each(tmp_path):
    """`extra_ms`: the median of each run's CPU time less the bare start's before it, about the
    medians' difference for a program that does more, and small beside it for the same program."""
    env = {**os.environ, "OFFSETS_TABLES": str(tmp_path / "none")}
    same = bench_startup.ratio(Path(sys.executable), env, str(tmp_path), 4, lookup="pass")
    more = bench_startup.ratio(Path(sys.executable), env, str(tmp_path), 4, lookup="sum(range(3_000_000))")
    work = more["lookup_ms"] - more["bare_ms"]
    assert 0.5 * work < more["extra_ms"] < 2 * work and abs(same["extra_ms"]) < 0.25 * more["extra_ms"]


def test_the_package_as_pip_installs_it_is_reported_with_its_floor_or_said_not_measured():
    cpu = {"ratio": 1.25, "lookup_ms": 12.5, "bare_ms": 10.0, "wall_ratio": 1.2, "pairs": (1.2, 1.3)}
    got = dict(cpu, extra_ms=2.5, floor=dict(cpu, ratio=1.04, extra_ms=0.4), package="venv/offsets",
               c_alone=dict(cpu, extra_ms=0.9))
    over = bench_startup.pip_report(got)
    assert over[2] == ("    the same lookup read by the C extension alone, none of the runtime imported (no goal): "
                       "0.90 ms")
    assert bench_startup.pip_report(dict(got, c_alone=None))[2].endswith(
        "not measured: this build-id is in no shipped table")
    assert "the package as pip installs it, in a venv" in over[0] and "1.25x  (goal <= 1.1x: OVER GOAL;" in over[0]
    assert ("2.50 ms  (goal <= 1.0 ms: OVER GOAL); the floor under it, `import offsets._lookup` alone: 0.40 ms"
            in over[1])
    ok = bench_startup.pip_report(dict(got, ratio=1.08, extra_ms=0.9))
    assert "1.08x  (goal <= 1.1x: ok;" in ok[0] and "0.90 ms  (goal <= 1.0 ms: ok)" in ok[1]
    assert bench_startup.pip_report({"error": "pip wheel failed: no setuptools"}) == [
        "  the package as pip installs it, in a venv: not measured: pip wheel failed: no setuptools"]
    base = {"shipped": cpu, "build_id": cpu, "bare_site": cpu, "unshipped": dict(cpu, first_s=1.0, made=True)}
    assert over[1] in bench_startup.report(dict(base, pip=got)).splitlines()
    assert "pip installs it" not in bench_startup.report(base)
