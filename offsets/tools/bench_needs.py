"""`make bench`'s JIT-needs figures: on each foreign build (foreign_builds.py), what the runtime alone
(`pip install cpython-offsets`: no scanner importable, no own tables, `OFFSETS_AUTOSCAN=0`) answers of the
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

import sys
from pathlib import Path

from . import foreign_builds
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
    got = jn.answers(python, wanted + constants)
    truth = case.truth()
    base = foreign_builds.pyenv_prefix(case.pyenv) / "bin" / f"python{minor}" if case.pyenv else python
    dwarf, gcc = jn.truth(truth.binary, build_inputs.from_python(str(base)),
                          [n for n in wanted + constants if got[n][0] != "absent"])
    bad, unchecked = jn.wrong(got, dwarf, gcc)
    return {"case": case, "python": python, "table": got["__table__"], "counts": jn.tally(got), "names": len(wanted),
            "constants": jn.tally(got, constants=True), "wrong": bad, "unchecked": unchecked}


def report(rows: list) -> str:
    lines = ["JIT-needs list (tests/data/jit_needs.yaml) on builds no shipped table was made from, the runtime alone "
             "(no scanner, no own tables, OFFSETS_AUTOSCAN=0):"]
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


def main() -> int:
    print(report(run()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
