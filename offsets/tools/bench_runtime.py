"""The runtime's part of `make bench`: what `offsets` costs the process that uses it.

- `import offsets` over a bare interpreter start: medians of many interleaved runs (goal < 5 ms);
- the first lookup, which picks and loads the table (reported, no goal);
- `offsets.get(name)` per call, as a ratio to a plain dict lookup of the same key (goal < 3x);
- `offsets.constant(name)` per call, as a ratio to the same dict lookup (goal < 2x);
- the C `PyOffsets_Get(name)` per call, through pyoffsets.h and the capsule (goal <= 30 ns: a JIT may
  ask at run time where it cannot compile the offset in),
  and `PyOffsets_Constant(name, &value)` as a ratio to it (goal: the same speed, <= 1.2x);
- a build no table ships (the shipped tables hidden): the first `get()`, which makes and installs
  this build's own table from its headers (goal <= 2 s, once), and every later process's first
  `get()`, as a ratio to the first `get()` with a shipped table (goal: the same, <= 1.5x).

    python -m offsets.tools.bench_runtime         # or run() / report() from the `make bench` driver
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from . import command_line

NAME = "PyListObject.ob_item"
CONSTANT = "Py_TPFLAGS_HEAPTYPE"
GOALS = {"import_ms": 5.0, "get_ratio": 3.0, "constant_ratio": 2.0, "c_get_ns": 30.0, "c_constant_ratio": 1.2,
         "own_first_s": 2.0, "own_later_ratio": 1.5}


#: Children may write .pyc files (PYTHONDONTWRITEBYTECODE would make every run compile the source,
#: which measures the compiler, not the import).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(args) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t0


def import_cost(runs: int = 41) -> dict:
    """Median wall time of `python -c "import offsets"` minus `python -c "pass"` (interleaved), and
    the cumulative `-X importtime` of the offsets package itself."""
    bare, imp = [], []
    _wall([sys.executable, "-c", "import offsets.runtime, offsets.layout.compact, offsets.errors"])   # warm .pyc
    for _ in range(runs):
        bare.append(_wall([sys.executable, "-c", "pass"]))
        imp.append(_wall([sys.executable, "-c", "import offsets"]))
    trace = subprocess.run([sys.executable, "-X", "importtime", "-c", "import offsets"], capture_output=True,
                           text=True, check=True, env=ENV).stderr
    own = [int(line.split("|")[1]) for line in trace.splitlines()
           if line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == "offsets"]
    first = subprocess.run([sys.executable, "-c",
                            "import time, offsets; t = time.perf_counter(); offsets.get(%r); "
                            "print((time.perf_counter() - t) * 1e3)" % NAME],
                           capture_output=True, text=True, check=True, env=ENV).stdout
    return {"import_ms": (statistics.median(imp) - statistics.median(bare)) * 1e3,
            "bare_start_ms": statistics.median(bare) * 1e3,
            "importtime_ms": own[0] / 1e3 if own else float("nan"),
            "first_get_ms": float(first)}


def get_ratio(number: int = 1_000_000, repeat: int = 7) -> dict:
    """ns per `get(name)` and per `d[name]` (both local names), and per `offsets.get(name)`."""
    import timeit

    import offsets

    from offsets import runtime

    get, constant = offsets.get, offsets.constant
    get(NAME)
    constant(CONSTANT)
    d = {NAME: get(NAME)}
    bound = runtime.RUNTIME.offsets.__getitem__     # what get was before it had a docstring (_lookup.c)
    env = {"get": get, "constant": constant, "d": d, "n": NAME, "k": CONSTANT, "offsets": offsets, "bound": bound}
    best = {}
    for label, stmt in (("dict", "d[n]"), ("get", "get(n)"), ("offsets.get", "offsets.get(n)"),
                        ("constant", "constant(k)"), ("bound", "bound(n)")):
        best[label] = min(timeit.repeat(stmt, globals=env, number=number, repeat=repeat)) / number * 1e9
    return {"dict_ns": best["dict"], "get_ns": best["get"], "attr_get_ns": best["offsets.get"],
            "get_ratio": best["get"] / best["dict"], "attr_get_ratio": best["offsets.get"] / best["dict"],
            "constant_ns": best["constant"], "constant_ratio": best["constant"] / best["dict"],
            "bound_ns": best["bound"], "get_vs_bound": best["get"] / best["bound"]}


def c_get(number: int = 5_000_000, repeat: int = 5) -> dict:
    try:
        from .. import _offsets
    except ImportError as e:
        return {"c_get_ns": float("nan"), "c_error": f"offsets._offsets is not built ({e}): pip install ."}
    get, constant = [], []
    for _ in range(repeat):     # interleaved, so that both see the same machine
        get.append(_offsets._bench_get(NAME, number))
        constant.append(_offsets._bench_constant(CONSTANT, number))
    return {"c_get_ns": min(get), "c_constant_ns": min(constant), "c_constant_ratio": min(constant) / min(get)}


#: A process's first get(), timed inside it; HIDE makes the build one that no table ships: neither
#: the index nor the build-id file (which a first lookup reads first) names one.
FIRST_GET = ("import time, offsets, offsets.runtime as r\n{hide}"
             "t = time.perf_counter(); offsets.get(%r); dt = time.perf_counter() - t\n"
             "print(dt, r.build().detail.startswith('made'))" % NAME)
HIDE = ("r.RUNTIME.index = lambda: {'tables': [], 'aliases': {}}\n"
        "r.RUNTIME.build_id_entries = lambda build_id: None\n")


def _first_get(hide: bool, tables: str) -> tuple:
    env = dict(ENV, OFFSETS_TABLES=tables, OFFSETS_AUTOSCAN="1")
    out = subprocess.run([sys.executable, "-c", FIRST_GET.format(hide=HIDE if hide else "")], capture_output=True,
                         text=True, check=True, env=env).stdout.split()
    return float(out[0]), out[1] == "True"


def unshipped(runs: int = 7) -> dict:
    """First get() on a build no table ships: once (the table is made) and in every later process."""
    import tempfile

    with tempfile.TemporaryDirectory() as tables, tempfile.TemporaryDirectory() as none:
        made, was_made = _first_get(True, tables)
        later = [_first_get(True, tables)[0] for _ in range(runs)]
        shipped = [_first_get(False, none)[0] for _ in range(runs)]      # no own table there to rank first
    return {"own_first_s": made, "own_made": was_made, "own_later_ms": statistics.median(later) * 1e3,
            "shipped_first_ms": statistics.median(shipped) * 1e3,
            "own_later_ratio": statistics.median(later) / statistics.median(shipped)}


def run() -> dict:
    results = {}
    results.update(import_cost())
    results.update(get_ratio())
    results.update(c_get())
    results.update(unshipped())
    return results


def report(r: dict) -> str:
    def verdict(key):
        if key == "own_first_s" and not r["own_made"]:
            return "NOT MEASURED"
        return "ok" if r[key] < GOALS[key] else "OVER GOAL"

    lines = [f"runtime ({sys.implementation.name} {sys.version.split()[0]}, lookups of {NAME}):",
             f"  import offsets over a bare start   {r['import_ms']:7.2f} ms   (goal < {GOALS['import_ms']:g} ms: "
             f"{verdict('import_ms')}; bare start {r['bare_start_ms']:.1f} ms; -X importtime of offsets "
             f"{r['importtime_ms']:.2f} ms)",
             f"  first lookup (picks, loads table)  {r['first_get_ms']:7.2f} ms",
             f"  offsets.get() / dict lookup        {r['get_ratio']:7.2f} x    (goal < {GOALS['get_ratio']:g}x: "
             f"{verdict('get_ratio')}; {r['get_ns']:.1f} ns vs {r['dict_ns']:.1f} ns; as offsets.get(...) with the "
             f"attribute lookup {r['attr_get_ratio']:.2f}x; {r['get_vs_bound']:.2f}x the bound dict.__getitem__ "
             f"it is as fast as, {r['bound_ns']:.1f} ns)",
             f"  offsets.constant() / dict lookup   {r['constant_ratio']:7.2f} x    (goal < {GOALS['constant_ratio']:g}x: "
             f"{verdict('constant_ratio')}; {r['constant_ns']:.1f} ns, {CONSTANT})"]
    if r["c_get_ns"] == r["c_get_ns"]:
        lines.append(f"  C PyOffsets_Get() per call         {r['c_get_ns']:7.1f} ns   (goal < {GOALS['c_get_ns']:g} ns: "
                     f"{verdict('c_get_ns')})")
        lines.append(f"  C PyOffsets_Constant() / _Get()    {r['c_constant_ratio']:7.2f} x    (goal < "
                     f"{GOALS['c_constant_ratio']:g}x: {verdict('c_constant_ratio')}; {r['c_constant_ns']:.1f} ns)")
    else:
        lines.append(f"  C PyOffsets_Get(): not measured: {r['c_error']}")
    lines += [f"  build no table ships: first get() {r['own_first_s']:7.2f} s    (goal <= {GOALS['own_first_s']:g} s, "
              f"once: {verdict('own_first_s')}; {'made and installed its own table' if r['own_made'] else 'NO TABLE MADE'})",
              f"    every later process's first get() {r['own_later_ratio']:5.2f} x    of a shipped table's "
              f"(goal <= {GOALS['own_later_ratio']:g}x: {verdict('own_later_ratio')}; {r['own_later_ms']:.1f} ms vs "
              f"{r['shipped_first_ms']:.1f} ms)"]
    return "\n".join(lines)


EXAMPLES = """  python -m offsets.tools.bench_runtime         import, first lookup and per-call costs of the runtime
"""


def main(argv=None) -> int:
    command_line.no_arguments("bench_runtime", __doc__, EXAMPLES, argv)
    print(report(run()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
