"""Proofs carry through the type system: a struct member whose type is a struct (by value) is
that struct, laid out as that struct is everywhere in the table (docs/identity.md, "Proofs carry
through the type system").

Real offsets add up: where struct S has a member P of struct type T, the real offset of S's P.x
is the real offset of P in S plus the real offset of x in T, and the table's offsets add up the
same way (checked here for every pair used). A read proves one real offset. So, for (S, P, T):

- (S, P.x) and (S, P) proven  =>  (T, x) proven;
- (T, x) and (S, P) proven    =>  (S, P.x) proven;
- (S, P.x) and (T, x) proven  =>  (S, P) proven (the difference of two real offsets).

Each needs two proven facts: a read of a nested field alone proves neither part, since another
build could move the member and the field inside it by amounts that cancel. Applied until
nothing new follows.
"""
from __future__ import annotations

_QUALIFIERS = ("const ", "volatile ", "struct ", "union ")


def by_value(type_spelling: str):
    """The struct name a member's type names by value, or None (a pointer, array or function)."""
    t = type_spelling or ""
    if any(c in t for c in "*[("):
        return None
    changed = True
    while changed:
        changed = False
        for q in _QUALIFIERS:
            if t.startswith(q):
                t, changed = t[len(q):], True
    return t.strip() or None


def _members(key: str, fields: dict, resolve) -> list:
    """[(P, T key, [(x, offset of P.x in S)])] of every by-value struct member P of a struct whose
    rows are `fields`, each with the fields of T it has (relative paths)."""
    inside: dict = {}       # member path -> [(path relative to it, offset)], in the rows' order
    for path, row in fields.items():
        dot = path.find(".")
        while dot != -1:
            inside.setdefault(path[:dot], []).append((path[dot + 1:], row[0]))
            dot = path.find(".", dot + 1)
    out = []
    for path, row in fields.items():
        inner = inside.get(path)
        name = by_value(row[2]) if inner else None
        if name is None:
            continue
        t = resolve(name)
        if t is None or t == key:
            continue
        out.append((path, t, inner))
    return out


def carry(resolve, fields, proven: set, members: dict = None) -> set:
    """`proven` (a set of (struct key, path) and (struct key, None)) with everything the rules
    above add. `resolve(name)` gives a struct key (None if the table has none), `fields(key)` its
    rows (path -> (offset, size, type, ...)); `members`, each struct's by-value members as found
    here, kept by a caller that carries over the same table again."""
    out = set(proven)
    members = {} if members is None else members

    def members_of(key):
        """[(P, T, [(x, "P.x")])]: each by-value member P of `key` whose type T's rows add up with
        its own, with the paths x of T whose rows do."""
        if key not in members:
            found = []
            try:
                rows = fields(key)
                for p, t, inner in _members(key, rows, resolve):
                    try:
                        t_fields = fields(t)
                    except (KeyError, LookupError, ValueError):
                        continue
                    base = rows[p][0]
                    pairs = [(x, f"{p}.{x}") for x, at in inner
                             if x in t_fields and at == base + t_fields[x][0]]   # else T is another struct here
                    if pairs:
                        found.append((p, t, pairs))
            except (KeyError, LookupError, ValueError):
                found = []
            members[key] = found
        return members[key]

    changed = True
    while changed:
        changed = False
        for s in sorted({k for k, _ in out}):
            for p, t, pairs in members_of(s):
                member = (s, p) in out
                for x, px in pairs:
                    if member + ((s, px) in out) + ((t, x) in out) != 2:
                        continue       # two of the three facts prove the third
                    out.update(((s, p), (s, px), (t, x)))
                    changed = member = True
    return out


def carry_table(table, proven: set) -> set:
    """`carry` over a runtime `Loaded` table (or anything with `resolve_struct` and `fields`)."""
    return carry(table.resolve_struct, table.fields, proven)
