"""Which table answers for this interpreter: choice.py's one rule over its own and the shipped
tables, with this build's own table made now where none of its version is exact (autoscan.py)."""
from __future__ import annotations

from . import choice
from ..layout.build_identity import BuildIdentity
from .earning import earning, entry_build
from .tables import Loaded, _load_entry, installed_entries


def choose(me: BuildIdentity, entries: list, load, check, strict: bool, autoscan, refusal) -> tuple:
    """(table, kind, detail, proof) for identity `me` among `entries` (own tables first, then
    shipped): the tables exact by build-id or struct by struct, in a chain (kind 'exact'); else,
    with none of this version, one made now by `autoscan()` (when given: it returns (Loaded,
    Earning[, how it was made]), or a str saying why it made none); else, unless `strict`, the
    nearest table of the same minor version, flags and target whose live `check` passes, answering
    only what that check proved (kind 'proven'). `refusal(why)` is raised otherwise."""
    def loaded(e):
        t = load(e)
        t.own = bool(e.get("own"))
        return t

    chosen, why = choice.exact_chain(me, entries, loaded, check, strict)
    if chosen is not None:
        t = chosen.table
        t.autoscan = autoscan
        return t, "exact", chosen.detail, None
    not_made = ""
    if autoscan is not None:
        made = autoscan()
        if not isinstance(made, str):
            t, earn, how = made if len(made) == 3 else (*made, "made from this interpreter's own headers now")
            t.earning = earn
            t.own = True
            return t, "exact", f"{how}: {earn.why}", None
        not_made = f"; its own table was not made now: {made}"
        why = [*why, f"its own table was not made now: {made}"]
    chosen = choice.proven(me, entries, loaded, check, strict, why, refusal=refusal)
    return chosen.table, "proven", chosen.detail + not_made, chosen.proof


def own_table_now(me: BuildIdentity, prover):
    """This build's own table made now (autoscan.make), or why not; one made before for this very
    build (by its build-id, or by all of its inputs) is taken instead."""
    from . import autoscan

    def exact_installed():
        for e in installed_entries(me):
            earn = earning(entry_build(e), me, prover)
            if earn.by == "build-id" or (earn.by == "inputs" and earn.whole()):
                return _load_entry(e), earn
        return None

    return autoscan.make(me, exact_installed)


def nearer(head: Loaded, me: BuildIdentity, prover, resolve):
    """(table, struct key, how) of the first of the nearer tables of its minor that `head` keeps
    (`near`, loaded now and put among its fallbacks) whose proof earns `resolve`'s name; else None."""
    while head.near:
        e = head.near.pop(0)
        nt = _load_entry(e)
        nt.earning = earning(entry_build(e), me, prover)
        head.fallbacks.append(nt)
        t, key, how = choice.earned_by([nt], resolve)
        if t is not None:
            return t, key, how
    return None
