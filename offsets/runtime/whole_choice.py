"""The whole way a lookup takes where the build-id's table alone does not answer (core.py): this
interpreter's whole identity, the choice among every table (`select`: choice.py's one rule), the
chain that earns a name (its autoscan and the nearer tables' proofs), switching tables, and the
answers beyond `get` and `sizeof`. Each function takes the runtime object (`core.Runtime`), whose
methods of the same names call them, so that a first lookup by build-id imports none of this.
"""

import sys

from .earning import strict_mode


def identity(rt):
    """This interpreter's identity (identity.running(), without the whole headers' digests, which
    only a struct without a dependency set needs: `whole_inputs`), its installed headers to compare
    dependency sets with (`files`), and the build-id of the binary holding it (binary.py; `where`
    names the binary, or why it has no build-id), computed once."""
    with rt.lock:
        if rt.me is None:
            from ..layout import identity
            from ..layout.build_identity import BuildIdentity, once
            from . import binary

            d = identity.running(with_inputs=False)
            include, cflags = d["include"], d["cflags"]
            d["binary"], build_id, d["build_id_why"] = binary.interpreter()
            rt.me = BuildIdentity.of_running(
                d, files=identity.InstalledFiles(include, cflags, d["multiarch"] or None), build_id=build_id,
                whole_inputs=once(lambda: identity.installed_inputs(include, cflags)))
        return rt.me


def select(rt, me, entries: list, load=None, check=None, strict: bool = False, autoscan=None):
    """(table, Match) for identity `me` among `entries` (selection.choose: choice.py's one rule,
    which remote/choose.py calls too). Where the chain answers a struct exactly in none of its
    tables, the lookup makes this build's own table then (`autoscan_for`), once."""
    from .match import Match
    from .refusals import no_match
    from .selection import choose
    from .tables import _load_entry

    t, kind, detail, proof = choose(me, entries, load or _load_entry, check or rt.prove, strict, autoscan,
                                    refusal=lambda why: no_match(me, entries, why, rt.identity))
    return t, Match(t.name, kind, detail, t.source, t.build, proof, loaded=t, runtime=rt)


def current(rt):
    """The table in use, chosen by `select` (now, if it is not yet)."""
    with rt.lock:
        if rt.state is None or rt.state[1] is None:
            from .selection import own_table_now
            from .tables import installed_entries

            me = rt.identity()
            entries = installed_entries(me) + rt.index()["tables"]
            rt.install(*rt.select(me, entries, strict=strict_mode(),
                                  autoscan=lambda: own_table_now(me, rt.prove)))
        return rt.state[0]


def install(rt, table, match, first_runtime) -> None:
    """Switch tables: the answer caches are emptied under the lock, so no thread keeps an old
    answer. The C API's (where `rt` is `first_runtime`, the interpreter's) are kept where `select`
    chose the build-id's table the first lookup began with (`Runtime.first`): the capsule already
    holds that table, as this Match describes it."""
    with rt.lock:
        if match._runtime is None:
            match._runtime = rt
        before = rt.state
        rt.state = (table, match)
        rt.offsets.clear()
        rt.sizes.clear()
        rt.constants.clear()
        c = sys.modules.get("offsets._offsets") if rt is first_runtime else None      # the C API answers for it
        same = (before is not None and before[1] is None and before[0].source == table.source
                and match.kind == "exact")
        if c is not None and not same:
            c._reset(match)


def lookup(rt, name, what: str):
    """(table, struct key, field path) that answers `name` among the table in use and its
    fallbacks (`Runtime.lookup`, once the build-id's table alone has not): the first table that
    earns it; else the first that has it, whose refusal says why."""
    t = rt.current()
    chain = [t] + t.fallbacks
    got, key, _ = rt.earned_in(chain, name, what != "sizeof")
    if got is not None:
        return got, key, got.split(name)[1]
    resolve = rt.resolver(name, True)
    for table in [t] + t.fallbacks:     # as they are now: the nearer tables' proofs were loaded meanwhile
        found = resolve(table)
        if found is not None:
            return (table, *found)
    raise rt.unknown_struct(t, name, t.split(name)[0])


def resolver(rt, name: str, field: bool):
    """resolve(table) -> (struct key, field path) of `name` in a table, or None; a name that
    means several layouts there raises (only a qualified name answers). Without `field` (a
    size), the path is None, as a proof of the size records it; a name with a field path
    resolves nowhere here (the lookup then says it is a field)."""
    def resolve(table):
        struct, path = table.split(name)
        key = table.resolve_struct(struct)
        if key is None:
            if table.qualified(struct):
                raise rt.unknown_struct(table, name, struct)
            return None
        return (key, path) if field else (key, None) if not path else None
    return resolve


def earned_in(rt, chain: list, name: str, field) -> tuple:
    """(table, struct key, 'exact' | 'proven') of the first table that earns `name`'s answer
    (choice.earned_by over `chain`); where some table of the chain has it but none exactly,
    this build's own table made now (the autoscan the chain's first table keeps, tried once);
    then the proofs of the nearer tables of its minor (`near`, loaded as they are needed);
    (None, None, None) when none earns it. A name no table of the chain has is unknown: it
    starts no scan."""
    from . import choice

    resolve = rt.resolver(name, field)
    exact_only = strict_mode()
    t, key, how = choice.earned_by(chain, resolve, exact_only=True)
    if t is not None:
        return t, key, how
    head = chain[0] if chain else None
    known = any(resolve(c) is not None for c in chain)
    made = rt.autoscan_for(head) if head is not None and known else None
    if made is not None:
        chain = [made] + chain
        t, key, how = choice.earned_by([made], resolve, exact_only=True)
        if t is not None:
            return t, key, how
    if exact_only:
        return None, None, None
    t, key, how = choice.earned_by(chain, resolve)
    if t is not None or head is None:
        return t, key, how
    from .selection import nearer

    return nearer(head, rt.identity(), rt.prove, resolve) or (None, None, None)


def autoscan_for(rt, head):
    """This build's own table, made now because some struct is exact in no table of the chain
    (once: the chain's first table keeps the attempt), put first among its fallbacks and in
    use from now on; or None."""
    scan = head.autoscan
    if scan is None:
        return None
    made = scan()       # under the lock; a child forked meanwhile keeps `autoscan` and waits for this table
    head.autoscan = None
    if isinstance(made, str):
        head.not_made = f"its own table was not made now: {made}"
        state = rt.state
        if state is not None and state[0] is head:
            state[1].detail += f"; {head.not_made}"
        return None
    t, earn = made[:2]
    how = made[2] if len(made) == 3 else "made from this interpreter's own headers now"
    t.earning, t.own = earn, True
    t.fallbacks, t.near, head.fallbacks = [head] + head.fallbacks, head.near, []
    from .match import Match

    rt.install(t, Match(t.name, "exact", f"{how}: {earn.why}", t.source, t.build, loaded=t, runtime=rt))
    return t


def field(rt, name: str, earned_field):
    """The field STRUCT.FIELD as `earned_field` (a `model.Field` with `earned`)."""
    with rt.lock:
        rt.offsets.__getitem__(name)          # the same errors as get()
        t, key, path = rt.lookup(name, "field")
        o, size, type_, bo, bw, al, fl = t.fields(key)[path]
        return earned_field(path=path, offset=o, size=size, type=type_, bit_offset=bo, bit_width=bw,
                            array_len=al, flexible=bool(fl), earned=t.earned(key, path))


def constant(rt, name, prove_constants):
    """(table, row, how it is earned) of a constant, or the error to raise (constants.py), its
    proof by `prove_constants`."""
    from . import constants

    t, row = constants.find(rt.current(), name)
    how = constants.earned(t, row, prove_constants)
    if how is None:
        raise constants.refused(t, name)
    return t, row, how
