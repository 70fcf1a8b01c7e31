"""`make bench`: the scanner's and the runtime's costs, each as a ratio to a floor measured in the
same run (never an absolute time asserted anywhere).

Other processes (`bench_remote`): `offsets identify` and one stack sample of a 50-frame thread, as
ratios to pystack's dump of the same process.

Foreign builds (`bench_needs`): what the runtime alone answers of the JIT-needs list on builds no
shipped table was made from (foreign_builds.py), exact / proven / refused / absent, each answer
checked against the build's own DWARF and gcc.

Scanner: one full build (headers plus a source tree: Debian's python3.11 3.11.2, fetched into the
cache) scanned without cache, divided by libclang's bare parse of the same translation units with
the same flags and the same parallelism (no walk); the same scan with every unit parsed whole (no
shared preamble); then an unchanged rescan through the cache. Each goal is printed with "ok" or
"OVER GOAL".
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

from ..scan import preamble, scanner
from ..scan.clang_scan import parse_only
from . import bench_drift, bench_needs, bench_remote, bench_runtime, bench_startup, command_line, store_cost
from .matrix import _packaged_inputs, entry
from .verdict import verdict


def full_build():
    """Debian 3.11.2: libpython3.11-dev headers + the python3.11 source package (x86_64)."""
    return _packaged_inputs(entry("3.11.2"), "release", "x86_64-linux-gnu")


def _units(b):
    """Every unit the scan parses (both header units too), so the floor is of the same work."""
    return scanner.units_of(b)[0]


def _floor(unit_list, jobs: int) -> float:
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(parse_only, unit_list, chunksize=1))
    return time.perf_counter() - start


#: The scanner's goals: a full build with sources, no cache, faster than parsing each unit bare
#: (shared preambles earn the difference), as a ratio to the floor; the same rescanned through the
#: cache, in seconds.
SCAN_GOAL, CACHED_GOAL = 0.6, 1.0


def bench_scanner(rounds: int = 2) -> None:
    b = full_build()
    jobs = os.cpu_count() or 1
    unit_list = _units(b)
    print(f"scanner: CPython {b.version} {b.target.triple}, {len(unit_list)} translation units, {jobs} parallel parsers")
    floors, scans, whole = [], [], []
    table = None
    for _ in range(rounds):
        floors.append(_floor(unit_list, jobs))
        start = time.perf_counter()
        table = scanner.scan(b, scanner.ScanOptions(use_cache=False, jobs=jobs))
        scans.append(time.perf_counter() - start)
    start = time.perf_counter()
    scanner.scan(b, scanner.ScanOptions(use_cache=False, jobs=jobs, share_preambles=False))
    whole.append(time.perf_counter() - start)
    scanner.scan(b, scanner.ScanOptions(jobs=jobs))  # fill the cache
    start = time.perf_counter()
    scanner.scan(b, scanner.ScanOptions(jobs=jobs))
    cached = time.perf_counter() - start
    floor, scan = min(floors), min(scans)
    with tempfile.TemporaryDirectory() as workdir:
        builds, uses = preamble.plan([u for u in unit_list if u.text is None], workdir)
    print(f"  {sum(u is not None for u in uses)} of {len(unit_list)} units planned on {len(builds)} shared preambles")
    print(f"  floor (bare per-unit libclang parse, no walk): {floor:6.2f} s")
    print(f"  full scan, no cache, shared preambles:         {scan:6.2f} s = {scan / floor:.2f}x the floor "
          f"(goal <= {SCAN_GOAL}x: {verdict(scan / floor, SCAN_GOAL)})")
    print(f"  full scan, no cache, every unit parsed whole:  {whole[0]:6.2f} s = {whole[0] / floor:.2f}x the floor")
    print(f"  unchanged rescan, cached:                      {cached:6.2f} s (goal <= {CACHED_GOAL:g} s: "
          f"{verdict(cached, CACHED_GOAL)})")
    print(f"  found: {len(table.structs)} structs, {table.field_count} fields, {len(table.skipped)} skipped")


EXAMPLES = """  python -m offsets.tools.bench                 every figure of make bench (what `make bench` runs)
"""


def main(argv=None) -> int:
    command_line.no_arguments("bench", __doc__, EXAMPLES, argv)
    bench_scanner()
    bench_drift.main([])
    store_cost.main([])
    bench_remote.main([])
    status = bench_runtime.main([]) or 0
    status = bench_startup.main([]) or status
    return bench_needs.main([]) or status


if __name__ == "__main__":
    sys.exit(main())
