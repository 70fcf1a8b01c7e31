"""`make bench`'s JIT-needs figures: on each foreign build (foreign_builds.py), what the runtime alone
(`pip install cpython-offsets`, its C extensions compiled for that interpreter: no scanner importable,
no own tables, `OFFSETS_AUTOSCAN=0`) answers of the
JIT-needs list of that version (tests/data/jit_needs.yaml: the fields real JITs and C extensions
read, and the constants they compile in), as counts: exact / proven / refused / absent in that
version; and every answered number checked against the build's own (its binary's DWARF, gcc over
its headers): wrong must be 0.

Goals (issues 26 and 27), as ratios of the names the version has (the list less those absent):
the builds of the same code as a shipped table (another pyconfig.h, no headers, python.org's
configured elsewhere) exact for at least 99%; a rebuild (another build-id) without headers answered
for at least 90% (exact or proven live).

    python -m offsets.tools.bench_needs
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import command_line, foreign_builds
from .verdict import verdict

CHECKOUT = Path(__file__).resolve().parents[2]
EXACT_GOAL, ANSWERED_GOAL = 0.99, 0.90


def _needs():
    """tests/jit_needs.py (the list and its checks live with the tests; this is a checkout's tool)."""
    tests = str(CHECKOUT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import jit_needs

    return jit_needs


def measure(case) -> dict:
    """One case: the runtime's answers to its version's needs, counted, and checked against its truth."""
    from ..scan import build_inputs

    jn = _needs()
    python = case.make()
    minor = ".".join(case.version.split(".")[:2])
    wanted = jn.names(minor, case.free_threaded)
    constants = jn.names(minor, case.free_threaded, "constants")
    base = foreign_builds.pyenv_prefix(case.pyenv) / "bin" / f"python{minor}" if case.pyenv else python
    with tempfile.TemporaryDirectory(prefix="offsets-installed-") as work:
        got = jn.answers(python, wanted + constants, package=installed(python, base, Path(work)))
    truth = case.truth()
    dwarf, gcc = jn.truth(truth.binary, build_inputs.from_python(str(base)),
                          [n for n in wanted + constants if got[n][0] != "absent"])
    bad, unchecked = jn.wrong(got, dwarf, gcc)
    return {"case": case, "python": python, "table": got["__table__"], "counts": jn.tally(got), "names": len(wanted),
            "constants": jn.tally(got, constants=True), "wrong": bad, "unchecked": unchecked}


def installed(python, headers_of, work: Path) -> Path:
    """A folder holding the checkout's package as `pip install` lays it out for `python`: its modules
    and data, and its C extensions compiled by gcc for that interpreter against the headers of
    `headers_of` (the same release with its headers: a wheel is built where they are; where it has
    none, the package without them)."""
    def var(name: str) -> str:
        return subprocess.run([str(headers_of if name == "INCLUDEPY" else python), "-c",
                               f"import sysconfig; print(sysconfig.get_config_var({name!r}))"],
                              capture_output=True, text=True, check=True).stdout.strip()

    include, suffix = var("INCLUDEPY"), var("EXT_SUFFIX")
    shutil.copytree(CHECKOUT / "offsets", work / "offsets", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    if not (Path(include) / "Python.h").is_file():
        return work         # no headers to build against: the package without its extensions
    for source in sorted((CHECKOUT / "offsets").glob("_*.c")):
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", f"-I{include}", f"-I{CHECKOUT / 'headers'}", str(source),
                        "-o", str(work / "offsets" / f"{source.stem}{suffix}")], check=True, capture_output=True)
    return work


def report(rows: list) -> str:
    lines = ["JIT-needs list (tests/data/jit_needs.yaml) on builds no shipped table was made from, the runtime alone "
             "(its C extensions built for each interpreter; no scanner, no own tables, OFFSETS_AUTOSCAN=0):"]
    for r in rows:
        c = r["counts"]
        has = r["names"] - c["absent"]
        rebuilt = "rebuilt" in r["case"].name
        share = (c["exact"] + c["proven"]) / has if rebuilt else c["exact"] / has
        goal = ANSWERED_GOAL if rebuilt else EXACT_GOAL
        what = "answered" if rebuilt else "exact"
        table = r["table"][0] or "no table"
        lines.append(f"  {r['case'].name} ({table}, {r['table'][1]}):")
        lines.append(f"    {r['names']} names, {c['absent']} absent in that version; exact {c['exact']}, proven "
                     f"{c['proven']}, refused {c['refused']}" + (f", errors {c['error']}" if c["error"] else ""))
        lines.append(f"    {what} {share:6.1%} of the {has} the version has (goal >= {goal:.0%}: "
                     f"{verdict(1 - share, round(1 - goal, 6))}); wrong {len(r['wrong'])} (goal 0: "
                     f"{verdict(len(r['wrong']), 0)})" + (f"; {len(r['unchecked'])} answers no truth could check"
                                                           if r["unchecked"] else ""))
        k = r["constants"]
        lines.append(f"    constants: {sum(k.values())}, {k['absent']} absent in that version; exact {k['exact']}, "
                     f"proven {k['proven']}, refused {k['refused']}" + (f", errors {k['error']}" if k["error"] else ""))
        lines += [f"      WRONG {w}" for w in r["wrong"][:10]]
    return "\n".join(lines)


def run() -> list:
    return [measure(c) for c in foreign_builds.cases()]


EXAMPLES = """  python -m offsets.tools.bench_needs           the JIT-needs counts on each foreign build, checked against DWARF and gcc
"""


def main(argv=None) -> int:
    command_line.no_arguments("bench_needs", __doc__, EXAMPLES, argv)
    print(report(run()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
