"""`make bench`'s startup figures: what the first lookup costs every process that loads a JIT (a
`.pth` file or `-X presite` runs it in every interpreter a deployment starts), as a ratio to a bare interpreter start measured in the same run:

    python -c "import offsets; offsets.get('PyListObject.ob_item')"    over    python -c pass

Each figure is the median over interleaved runs of the CPU time (user + system, from wait4) of each
child: the machine's other load stretches wall times, not CPU times (wall-time medians are printed
too). How much a shared machine moves it shows beside it: the middle half of the ratios of each run
to the bare start run just before it. Three builds, all of the interpreter the bench runs on (its base prefix: pyenv's 3.11.7 here,
which ships a table):

- a shipped build, as first measured (2.27x before the runtime's imports were cut): that interpreter itself, with its own
  site-packages and this checkout on PYTHONPATH (goal: 1.1x, issue 46);
- a build no table ships: a copy of it (build_copy.py) with one more line in Python.h and a libpython
  of its own under another build-id, whose
  site-packages runs the base's (so its bare start does the same work) and has this checkout and the
  scanner's packages on its path: its very first run makes its own table (reported in seconds, no
  goal: about a second warm), then the ratio once the table exists (goal: 1.3x);
- a build matched by its build-id alone: a copy of it whose include directory is removed (as slim
  images ship it), loading the same libpython (goal: 1.1x);
- the first two again in instructions executed (valgrind's callgrind, where it is installed: `make
  bench` installs it), one run each: CPU time moves with the machine's load, instructions do not,
  so they show a change too small for the CPU figures' noise; and, for the shipped build, where its
  extra instructions go: importing the runtime (how many modules, how much bytecode), the lookup
  itself, and the exit that frees what they made;
- the C API's first lookup on the shipped build, both ways (goal: 1.1x, as the Python one): a
  `PyOffsets_Get` through pyoffsets.h in `offsets._offsets`, whose import is what a JIT's
  `PyCapsule_Import` of the capsule does;
- for reference, no goal: a shipped copy whose site-packages holds only this checkout's path, the
  lightest bare start there is, against which every module offsets imports counts;
- the package as `pip install` puts it, in a venv of the same interpreter (issue 46's own setup: a
  bare start that imports no more than a venv's): the ratio (goal: 1.1x) and the first lookup's CPU
  time over the bare start (goal: 1 ms), and beside it the floor under that figure: importing the
  package and its C extension alone (`import offsets._lookup`), which every first lookup does, and
  the same lookup read by that extension alone, none of the runtime imported (what a first lookup
  all in C would cost);
- a rebuild no table is exact for (foreign_builds.rebuilt: pyenv's 3.9.18, 3.12.1 and 3.13.0 without
  include/ and with another build-id), where the first lookup is answered by proofs: once the
  binary's proof is kept (its first run checks it), the ratio (goal: 3x; 5.8x when first measured
  on 3.12.1, nearly all of it the live check).

    python -m offsets.tools.bench_startup [--rebuilt [RUNS] | --pip [RUNS]]
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from . import build_copy, command_line

NAME = "PyListObject.ob_item"
LOOKUP = f"import offsets; offsets.get({NAME!r})"
#: The C API's first lookup: PyOffsets_Get(NAME) through pyoffsets.h in offsets._offsets, whose import
#: is what PyCapsule_Import("offsets._offsets._C_API") does in a JIT's extension.
C_LOOKUP = f"from offsets import _offsets; _offsets._bench_get({NAME!r}, 1)"
#: issue 46: the first lookup on a shipped build and on one matched by build-id alone
GOAL = 1.1
#: a build no table ships, once its own table exists
OWN_GOAL = 1.3
#: issue 46: the first lookup's CPU time over a bare start, where pip installed the package in a venv
GOAL_MS = 1.0
#: what every first lookup imports before it does anything: the floor under GOAL_MS
FLOOR = "import offsets._lookup"
#: the same lookup read by _lookup's C alone, none of the runtime imported: what a first lookup all in C
#: would cost (no goal; the build-id's shipped table, as the first lookup reads it)
C_ALONE = ("import os, offsets._lookup as c; d = os.path.join(os.path.dirname(c.__file__), 'data', 'compact', ''); "
           "e, _, s = c.build_id_entries(d + 'build_ids.txt', c.image()[1]); "
           "c.struct_row(c.open_table(d + e[0]['file'], e[0]['head_sha256'], d + 'layouts.jsonl', s), "
           f"{NAME.split('.')[0]!r})")
#: where the first lookup is answered by proofs (issue 27)
PROVEN_GOAL = 3.0
REBUILT = ("3.9.18", "3.12.1", "3.13.0")
CHECKOUT = Path(__file__).resolve().parents[2]


def _env(tables: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OFFSETS_", "PYTHON")) or k == "OFFSETS_CACHE"}
    env.update(OFFSETS_TABLES=str(tables), **extra)
    return env


def _one(argv: list, env: dict, cwd: str) -> tuple:
    """(CPU seconds, wall seconds) of one run of argv."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(map(str, argv))} failed (exit {os.waitstatus_to_exitcode(status)})")
    return usage.ru_utime + usage.ru_stime, wall


def ratio(python: Path, env: dict, cwd: str, runs: int, lookup: str = LOOKUP) -> dict:
    """The lookup's start (`lookup`) over a bare start, interleaved `runs` times (after one warm-up of each)."""
    bare, look = [], []
    _one([python, "-c", lookup], env, cwd)                # warm: .pyc files, the digest memo
    for _ in range(runs):
        bare.append(_one([python, "-c", "pass"], env, cwd))
        look.append(_one([python, "-c", lookup], env, cwd))
    cpu_b, cpu_l = statistics.median(c for c, _ in bare), statistics.median(c for c, _ in look)
    wall_b, wall_l = statistics.median(w for _, w in bare), statistics.median(w for _, w in look)
    pairs = sorted(l[0] / b[0] for b, l in zip(bare, look))      # each lookup over the bare start just before it
    quarter = len(pairs) // 4
    extra = statistics.median(l[0] - b[0] for b, l in zip(bare, look))    # the lookup's own CPU time, run by run
    return {"bare_ms": cpu_b * 1e3, "lookup_ms": cpu_l * 1e3, "ratio": cpu_l / cpu_b, "wall_ratio": wall_l / wall_b,
            "pairs": (pairs[quarter], pairs[-1 - quarter]), "extra_ms": extra * 1e3}


def _count(valgrind: str, python: Path, env: dict, cwd: str, code: str) -> int:
    """Instructions executed by `python -c code` under valgrind's callgrind, under one hash seed."""
    out = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", str(python), "-c", code],
                         env=dict(env, PYTHONHASHSEED="0"), cwd=cwd,     # one hash seed: one count
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode or not found:
        raise RuntimeError(f"valgrind {python} -c {code!r} failed: {out.stderr.strip()[-300:]}")
    return int(found.group(1))


def instructions(python: Path, env: dict, cwd: str, lookup: str = LOOKUP) -> Optional[dict]:
    """The lookup's start over a bare start in instructions executed (valgrind's callgrind), one run
    of each under one hash seed: unlike CPU time, the same from run to run within a few in ten
    thousand, so a change of a tenth of a millisecond shows. None where valgrind is not installed."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    bare, look = _count(valgrind, python, env, cwd, "pass"), _count(valgrind, python, env, cwd, lookup)
    return {"bare": bare, "lookup": look, "ratio": look / bare}


#: What a child that imports the runtime prints of the modules it imported: name -> bytecode bytes
#: (0 for an extension module).
MODULES = """import sys, os, json, importlib.util
before = set(sys.modules)
%s
out = {}
for name in sorted(set(sys.modules) - before):
    f = getattr(sys.modules[name], "__file__", None) or ""
    if name.split(".")[0] == "offsets" and f:
        pyc = importlib.util.cache_from_source(f) if f.endswith(".py") else None
        out[name] = os.path.getsize(pyc) if pyc and os.path.exists(pyc) else 0
print(json.dumps(out))"""


def where_it_goes(python: Path, env: dict, cwd: str, counted: dict) -> Optional[dict]:
    """Where a first lookup's extra instructions (`counted`: `instructions`' figures) go: importing
    the runtime (`imports`: the modules of offsets it imports, and their bytecode bytes), the lookup
    itself (`lookup`), and the exit freeing what both made (`exit`). Three more counts, each child
    ending in os._exit(0), which skips the exit: the bare start's, after the imports, after the
    lookup. None where valgrind is not installed."""
    valgrind = shutil.which("valgrind")
    if valgrind is None or counted is None:
        return None
    cut = "; import os; os._exit(0)"
    bare, imported, looked = (_count(valgrind, python, env, cwd, code + cut)
                              for code in ("pass", "import offsets.runtime", LOOKUP))
    shown = subprocess.run([str(python), "-c", MODULES % LOOKUP], env=env, cwd=cwd, capture_output=True, text=True)
    if shown.returncode:
        raise RuntimeError(f"{python}: the first lookup's modules: {shown.stderr.strip()[-300:]}")
    modules = json.loads(shown.stdout.splitlines()[-1])
    return {"imports": imported - bare, "lookup": looked - imported,
            "exit": (counted["lookup"] - counted["bare"]) - (looked - bare), "modules": modules}


def c_api(python: Path, env: dict, cwd: str, runs: int) -> dict:
    """The C API's first lookup (`C_LOOKUP`) over a bare start, as `ratio` and `instructions`
    measure the Python one; {"error": why} where offsets._offsets is not built for `python`."""
    probe = subprocess.run([str(python), "-c", "import offsets._offsets"], env=env, cwd=cwd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if probe.returncode:
        return {"error": f"offsets._offsets does not import ({probe.stderr.strip().splitlines()[-1:]}): pip install ."}
    out = ratio(python, env, cwd, runs, C_LOOKUP)
    out["instructions"] = instructions(python, env, cwd, C_LOOKUP)
    return out


def run(runs: int = 41) -> dict:
    base = Path(sys.base_prefix)
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        subprocess.run([str(build_copy.base_python(base)), "-m", "compileall", "-q", str(CHECKOUT / "offsets")],
                       check=True, stdout=subprocess.DEVNULL, env=_env(work / "tables"))      # .pyc, as installed
        shipped_env = _env(work / "t0", PYTHONPATH=str(CHECKOUT))
        results = {"shipped": ratio(build_copy.base_python(base), shipped_env, str(work), runs)}
        results["shipped"]["instructions"] = instructions(build_copy.base_python(base), shipped_env, str(work))
        results["shipped"]["parts"] = where_it_goes(build_copy.base_python(base), shipped_env, str(work),
                                                    results["shipped"]["instructions"])
        results["c_api"] = c_api(build_copy.base_python(base), shipped_env, str(work), runs)
        # the scanner's packages (to make its table), and the base's site-packages as a site directory (its
        # .pth files run): the copy's bare start does what the base's does, as the first measurement had it
        scanner = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
        own_site = [p for p in (base / "lib" / f"python{build_copy.VERSION}" / "site-packages",) if p.is_dir()]
        unshipped = build_copy.copy_build(base, work / "unshipped", unshipped=True, paths=[CHECKOUT, *scanner],
                                          site_dirs=own_site)
        first = _one([unshipped, "-c", LOOKUP], _env(work / "t2"), str(work))
        made = list((work / "t2").glob("*.jsonl"))
        results["unshipped"] = ratio(unshipped, _env(work / "t2"), str(work), runs)
        results["unshipped"].update(first_s=first[1], made=len(made) == 1)
        shipped = build_copy.copy_build(base, work / "shipped", unshipped=False, paths=[CHECKOUT])
        results["bare_site"] = ratio(shipped, _env(work / "t1"), str(work), runs)
        # the shipped build's own libpython, its headers gone (a slim image): only its build-id vouches
        slim = build_copy.copy_build(base, work / "slim", unshipped=False, paths=[CHECKOUT], site_dirs=own_site)
        shutil.rmtree(work / "slim" / "include")
        results["build_id"] = ratio(slim, _env(work / "t3"), str(work), runs)
        results["build_id"]["instructions"] = instructions(slim, _env(work / "t3"), str(work))
        results["pip"] = pip_installed(work / "pip", runs)
        results["rebuilt"] = rebuilt_ratios(work, runs)
    return results


def package_files() -> list:
    """What `pip install .` builds from: the package, its C sources, headers and metadata."""
    files = [CHECKOUT / n for n in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md")]
    files += [CHECKOUT / "headers" / "pyoffsets.h"]
    files += [p for p in (CHECKOUT / "offsets").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".so", ".pyc")]
    return sorted(p for p in files if p.exists())


def pip_installed(work: Path, runs: int) -> dict:
    """The first lookup where `pip install` put the package (byte-compiled, its C extensions built) in
    a venv of the interpreter the bench runs on, whose bare start is a venv's: `ratio` (its
    `extra_ms` is the first lookup's CPU time), with `floor` and `c_alone`, the same of FLOOR and of
    C_ALONE (None where this build-id is in no shipped table), and `package`, the folder the venv
    imports offsets from; or
    {"error": why} where pip could not install it (offline: the wheel built by this venv's setuptools)."""
    src = work / "src"         # a copy, so that no build/ litters the checkout
    for f in package_files():
        dest = src / f.relative_to(CHECKOUT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)
    venv = work / "venv"
    subprocess.run([str(build_copy.base_python(Path(sys.base_prefix))), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    python, wheels = venv / "bin" / "python", work / "wheels"
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    for step, argv in (("pip wheel", ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", wheels, src]),
                       ("pip install", ["--python", python, "install", "--no-deps", "--no-index",
                                        "--find-links", wheels, "cpython-offsets"])):
        got = subprocess.run(pip + [str(a) for a in argv], capture_output=True, text=True)
        if got.returncode:
            said = [line for line in got.stderr.splitlines() if line.lower().startswith("error")] or ["?"]
            return {"error": f"{step} failed: {said[-1]}"}
    env = _env(work / "t5")
    where = subprocess.run([str(python), "-c", "import offsets, sys; sys.stdout.write(offsets.__file__)"], env=env,
                           cwd=str(work), capture_output=True, text=True, check=True).stdout
    out = ratio(python, env, str(work), runs)
    out.update(floor=ratio(python, env, str(work), runs, FLOOR), package=os.path.dirname(where))
    try:
        out["c_alone"] = ratio(python, env, str(work), runs, C_ALONE)
    except RuntimeError:                # this interpreter's build-id is in no shipped table
        out["c_alone"] = None
    return out


def rebuilt_ratios(work: Path, runs: int) -> dict:
    """version -> the first lookup's ratio on its rebuild (foreign_builds.rebuilt), the runtime alone."""
    from . import foreign_builds

    out = {}
    for version in REBUILT:
        python = foreign_builds.rebuilt(version)
        subprocess.run([str(python), "-m", "compileall", "-q", str(CHECKOUT / "offsets")], check=True,
                       stdout=subprocess.DEVNULL, env=_env(work / "t4"))
        out[version] = ratio(python, _env(work / "t4", PYTHONPATH=str(CHECKOUT), OFFSETS_AUTOSCAN="0"), str(work), runs)
    return out


def _line(label: str, x: dict, goal: float = GOAL) -> str:
    verdict = "ok" if x["ratio"] <= goal else "OVER GOAL"
    spread = (f"; each run over the bare start before it: {x['pairs'][0]:.2f}-{x['pairs'][1]:.2f}x, the middle half"
              if "pairs" in x else "")
    return (f"  {label:<44} {x['ratio']:5.2f}x  (goal <= {goal}x: {verdict}; {x['lookup_ms']:.1f} ms vs "
            f"{x['bare_ms']:.1f} ms CPU; wall {x['wall_ratio']:.2f}x{spread})")


def _counted(label: str, x: dict) -> str:
    n = x.get("instructions")
    if n is None:
        return f"    {label}: instructions not counted (no valgrind: apt-get install valgrind)"
    return (f"    {label}, in instructions executed  {n['ratio']:5.3f}x  (goal <= {GOAL}x: "
            f"{'ok' if n['ratio'] <= GOAL else 'OVER GOAL'}; {n['lookup'] / 1e6:.1f}M vs {n['bare'] / 1e6:.1f}M, "
            f"valgrind: the same from run to run)")


def _parts(p: Optional[dict]) -> list:
    """Where the shipped build's extra instructions go (`where_it_goes`), a line; none where not counted."""
    if p is None:
        return []
    m = p["modules"]
    return [f"    where they go: importing {len(m)} modules of offsets ({sum(m.values()) / 1024:.0f} KB of bytecode) "
            f"{p['imports'] / 1e6:.1f}M, the lookup {p['lookup'] / 1e6:.1f}M, the exit {p['exit'] / 1e6:.1f}M"]


def report(r: dict) -> str:
    u, b = r["unshipped"], r["bare_site"]
    return "\n".join([
        f"startup: `python -c \"{LOOKUP}\"` over `python -c pass`, CPU time, medians ({sys.version.split()[0]}):",
        _line("a shipped build (2.27x when first measured)", r["shipped"]),
        _counted("the same", r["shipped"]),
        *_parts(r["shipped"].get("parts")),
        _line("a build matched by its build-id alone (no headers)", r["build_id"]),
        _counted("the same", r["build_id"]),
        *c_api_report(r.get("c_api")),
        _line("a build no table ships, once its table exists", u, OWN_GOAL),
        f"    its very first lookup (makes its table)    {u['first_s']:5.2f} s   "
        f"({'made and installed its table' if u['made'] else 'NO TABLE MADE'}; once per build and machine)",
        f"  for reference, a shipped build whose site-packages holds nothing: {b['ratio']:.2f}x "
        f"({b['lookup_ms']:.1f} ms vs {b['bare_ms']:.1f} ms CPU; no goal: every module offsets imports counts there)"]
        + pip_report(r.get("pip")) + rebuilt_report(r.get("rebuilt", {})))


def c_api_report(got) -> list:
    """The C API's first lookup, as the shipped build's lines say the Python one (none: not measured)."""
    label = "the C API's first PyOffsets_Get (shipped)"
    if got is None:
        return []
    if "error" in got:
        return [f"  {label}: not measured: {got['error']}"]
    return [_line(label, got), _counted("the same", got)]


def pip_report(got) -> list:
    """The package as pip installs it (`pip_installed`): its ratio, the first lookup in ms, and the
    floor under that figure (none: not measured)."""
    label = "the package as pip installs it, in a venv"
    if got is None:
        return []
    if "error" in got:
        return [f"  {label}: not measured: {got['error']}"]
    ms, floor = got["extra_ms"], got["floor"]["extra_ms"]
    c = got.get("c_alone")
    return [_line(label, got),
            f"    its first lookup, CPU time over the bare start before it  {ms:5.2f} ms  (goal <= {GOAL_MS} ms: "
            f"{'ok' if ms <= GOAL_MS else 'OVER GOAL'}); the floor under it, `{FLOOR}` alone: {floor:.2f} ms",
            "    the same lookup read by the C extension alone, none of the runtime imported (no goal): "
            + (f"{c['extra_ms']:.2f} ms" if c else "not measured: this build-id is in no shipped table")]


def rebuilt_report(got: dict) -> list:
    return [f"  pyenv {v} rebuilt, no include/ (proven; goal <= {PROVEN_GOAL}x: "
            f"{'ok' if x['ratio'] <= PROVEN_GOAL else 'OVER GOAL'}) {x['ratio']:5.2f}x  ({x['lookup_ms']:.1f} ms vs "
            f"{x['bare_ms']:.1f} ms CPU; wall {x['wall_ratio']:.2f}x)" for v, x in got.items()]


EXAMPLES = """  python -m offsets.tools.bench_startup              every startup figure (what `make bench` prints)
  python -m offsets.tools.bench_startup --rebuilt    only the rebuilds answered by proofs (21 runs each)
  python -m offsets.tools.bench_startup --rebuilt 5  the same, 5 runs each
  python -m offsets.tools.bench_startup --pip        only the package as pip installs it, in a venv (41 runs)
"""


def main(argv=None) -> int:
    p = command_line.parser("bench_startup", __doc__, EXAMPLES)
    p.add_argument("--rebuilt", nargs="?", type=int, const=21, metavar="RUNS",
                   help="only the rebuilds' figures, RUNS runs each (default 21)")
    p.add_argument("--pip", nargs="?", type=int, const=41, metavar="RUNS",
                   help="only the figures of the package as pip installs it, RUNS runs each (default 41)")
    args = p.parse_args(argv)
    if args.pip is not None:
        with tempfile.TemporaryDirectory() as work:
            got = pip_installed(Path(work), args.pip)
        print("\n".join(pip_report(got)))
        return 0 if "error" not in got else 1
    if args.rebuilt is not None:
        with tempfile.TemporaryDirectory() as work:
            got = rebuilt_ratios(Path(work), args.rebuilt)
        print("\n".join(rebuilt_report(got)))
        return 0
    print(report(run()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
