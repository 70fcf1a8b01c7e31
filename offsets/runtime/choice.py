"""Which tables a build consults, in which order: the one choice (docs/identity.md), for the running
interpreter (`runtime.select`) and for another process or a binary (`remote/choose.py`) alike.

1. The tables that record the build's build-id (exact for every struct), then the tables of its
   version, hexversion, layout flags, target and pointer size, each exact struct by struct
   (earning.py): its own tables first, then the same vendor, then those with dependency data, then
   the most structs. A name is answered by the first of them that has it exactly.
2. When none of them has it exactly: this build's own table, made now (the runtime's autoscan), once.
3. Then what a proof read in the build's memory: the first table of 1 whose proof read it, else the
   nearest table of the same minor version, flags, target and pointer size whose proof passes.
   Without any table of 1, that nearest table is the one in use, and its proof must pass before
   it answers anything. `strict` allows exact answers only.
"""
from __future__ import annotations

from ..layout import identity
from ..layout.build_identity import BuildIdentity
from .earning import earning, entry_build  # noqa: F401 - entry_build: choice.entry_build


class Chosen:
    """The table in use (a `tables.Loaded`, the others of the chain in its `fallbacks`) and how:
    `kind` exact or proven, `by` what made its answers so, `detail` for people, `proof` when one ran."""

    def __init__(self, table, kind: str, by: str, detail: str, proof=None) -> None:
        self.table, self.kind, self.by, self.detail, self.proof = table, kind, by, detail, proof


def _rank(t) -> tuple:
    e = t.earning
    return (e.by == "build-id", t.own, e.same_vendor, t.head.get("depends") is not None,
            len(t.order))


def same_build(me: BuildIdentity, entries: list, load, prover=None) -> tuple:
    """(the tables of step 1, each with its earning, best first; why each other table of this
    version is not one)."""
    chain, why = [], []
    for e in entries:
        if e["hexversion"] != me.hexversion:
            continue
        earn = earning(entry_build(e), me, prover)
        if earn.exact:
            t = load(e)
            earn.build = t.build           # the table's own build (its binaries' sources, its inputs)
            t.earning = earn
            t.own = bool(e.get("own"))
            chain.append(t)
        elif e["triple"] == me.triple:
            why.append(f"{e['name']}: {earn.why}")
    chain.sort(key=_rank, reverse=True)
    return chain, why


def near(me: BuildIdentity, entries: list) -> list:
    """The entries of the same minor version, layout flags, target and pointer size, nearest first
    (patch level, then the same vendor)."""
    mine = (me.flags, me.triple, me.pointer_size)
    found = [e for e in entries if e["hexversion"] >> 16 == me.hexversion >> 16
             and (identity.flag_set(e["config"]), e["triple"], e["pointer_size"]) == mine]
    return sorted(found, key=lambda e: (abs(e["hexversion"] - me.hexversion),
                                        (e.get("vendor") or identity.UPSTREAM) != me.vendor, -e["hexversion"], e["name"]))


def exact_chain(me: BuildIdentity, entries: list, load, prover=None, strict: bool = False):
    """Step 1: the chain of tables build `me` consults (`load(entry)` gives a `tables.Loaded`;
    `prover(t)` proves a table in the build's memory, default the live check), as a `Chosen` whose
    table is the first, or (None, why each table of this version is not one)."""
    chain, why = same_build(me, entries, load, prover)
    if not chain:
        return None, why
    t = chain[0]
    t.fallbacks = chain[1:]
    t.near = [] if strict else [e for e in near(me, entries) if e["hexversion"] != me.hexversion]
    return Chosen(t, "exact", t.earning.by, f"{t.build.describe()} for {me.describe()}: {t.earning.why}"), why


def proven(me: BuildIdentity, entries: list, load, prover=None, strict: bool = False, why=(), check: str = "the live check",
           refusal=None) -> Chosen:
    """Step 3 without a chain: the nearest table whose proof (`check`, for people) passes, or
    `refusal(why)` (a NoMatchingTable) saying why none does."""
    candidates = near(me, entries)
    if candidates and strict:
        raise refusal("OFFSETS_STRICT allows exact tables only, and none is exactly this build "
                      f"({'; '.join(why) or 'no table of this version'}); nearest: "
                      f"{', '.join(e['name'] for e in candidates)}")
    failures = []
    for i, e in enumerate(candidates):
        t = load(e)
        t.earning = earn = earning(entry_build(e), me, prover)
        result = t.prove()
        if result.ok:
            t.near = candidates[i + 1:]
            return Chosen(t, "proven", "memory", f"table of {earn.build.describe()} for {me.describe()}: "
                                                 f"not exact ({earn.why}); it answers only the {len(earn.proven)} "
                                                 f"fields and sizes {check} read ({result.summary()})", result)
        failures.append(f"{e['name']} failed {check}: {result.summary()}")
    raise refusal("; ".join(failures + list(why)) or
                  "none is of this minor version with these layout flags, target and pointer size")


def earned_by(chain: list, resolve, exact_only: bool = False):
    """(table, key, how) of the first table of `chain` that answers a name exactly, else (unless
    `exact_only`) of the first whose proof read it: `resolve(table)` gives (key, path) or None,
    `how` is 'exact' or 'proven'; (None, None, None) when none does."""
    found = [(t, *got) for t in chain for got in [resolve(t)] if got is not None]
    for t, key, path in found:
        if t.exact(key):
            return t, key, "exact"
    if not exact_only:
        for t, key, path in found:
            if t.earned(key, path) == "proven":
                return t, key, "proven"
    return None, None, None

