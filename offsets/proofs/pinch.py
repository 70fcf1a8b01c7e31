"""A struct member's offset held between two bounds that C's layout rules give, where one read alone
proves only a sum (docs/identity.md, "Proven through the type system").

Where struct S has a member P of struct type T right after its header h (the member at offset 0,
an object's `ob_base`), a read of S's `P.x0`, x0 being T's first member (offset 0 in T), proves
the real offsets add up: real(P) + real(x0) = table(P). Two rules of C hold in every build:

- no member starts before offset 0, so real(x0) >= 0, and real(P) <= table(P);
- members do not overlap, and h is at 0, so P starts at or after h's end: real(P) >= real size
  of h, which is table(P) where h's size is proven and the table puts P right after it.

So real(P) = table(P) (and real(x0) = 0), and the type-system rule (embedding.py) carries the rest.
Nothing is assumed of the order of members: h is at 0 by a proof, and every other member is after it.

And where a field proven at offset 0 is nested (`u.lg.ptr`), the real offsets along its path add up
to 0 and none is negative: each member on the path is at 0 (`at_zero`). A header type's size lies
between the end of its last proven field and the first proven member after it (`header_sizes`).
"""
from __future__ import annotations

from .embedding import by_value


def _structs(fields, proven: set):
    """(struct key, its rows) of each struct something of which is proven."""
    for s in sorted({k for k, _ in proven}):
        try:
            yield s, fields(s)
        except (KeyError, LookupError, ValueError):
            continue


def pinch(resolve, fields, size, proven: set, shapes: dict = None) -> set:
    """`proven` with each member pinned as above; `resolve`, `fields` as embedding.carry takes them,
    `size(key)` a struct's size; `shapes`, each struct's members grouped as `after_member` finds
    them, kept by a caller that pinches over the same table again."""
    out = set(proven)
    for s, rows in _structs(fields, proven):
        heads = [(p, r) for p, r in rows.items() if r[0] == 0 and "." not in p and (s, p) in out]
        for head, hrow in heads:
            head_type = resolve(by_value(hrow[2]) or "")
            if head_type is None or (head_type, None) not in out or size(head_type) != hrow[1]:
                continue        # the header's own size is not proven
            for p, row in rows.items():
                if "." in p or p == head or row[0] != hrow[1] or (s, p) in out:
                    continue
                t = resolve(by_value(row[2]) or "")
                if t is None:
                    continue
                try:
                    firsts = [x for x, r in fields(t).items() if r[0] == 0 and "." not in x]
                except (KeyError, LookupError, ValueError):
                    continue
                for x in firsts:
                    inner = rows.get(f"{p}.{x}")
                    if inner is not None and inner[0] == row[0] and (s, f"{p}.{x}") in out:
                        out.add((s, p))
                        break
    out |= after_member(fields, out, shapes)
    return out | at_zero(fields, out) | header_sizes(resolve, fields, size, out)


#: C's integer types (and CPython's and the C library's names of them): their size is their alignment
INTEGERS = {"char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int", "unsigned",
            "long", "unsigned long", "long long", "unsigned long long", "_Bool", "size_t", "ssize_t", "Py_ssize_t",
            "Py_hash_t", "Py_uhash_t", "intptr_t", "uintptr_t", "digit", "wchar_t"} | \
    {f"{u}int{n}_t" for u in ("", "u") for n in (8, 16, 32, 64)}


def _integer_or_pointer(spelling: str) -> bool:
    t = spelling.replace("const ", "").replace("volatile ", "").strip()
    return t.endswith("*") or t in INTEGERS


def _scalar(rows: dict, path: str, parents=None) -> bool:
    """An int or a pointer, no array: its size is its type's, and so is its alignment. `parents`: the
    paths of `rows` that have members (found here where not given)."""
    if parents is not None:
        return path not in parents and _integer_or_pointer(rows[path][2])
    return _integer_or_pointer(rows[path][2]) and not any(p.startswith(path + ".") for p in rows)


def _scalar_array(rows: dict, path: str) -> bool:
    """An array of ints or pointers whose length the table says."""
    r = rows[path]
    return "[" in r[2] and _integer_or_pointer(r[2].split("[")[0]) and bool(_element(r))


def _read_to_end(s: str, rows: dict, path: str, proven: set) -> bool:
    """A proven array of ints or pointers whose last element (by the table's length) was read too: the
    check that read it marks `PATH[-1]`. Its real data reaches to where the table ends it."""
    return (s, path) in proven and (s, f"{path}[-1]") in proven and _scalar_array(rows, path)


def _element(row):
    """The size of one element of an array row, None where the table does not say how many."""
    return row[1] // row[5] if len(row) > 5 and row[5] else None


def after_member(fields, proven: set, shapes: dict = None) -> set:
    """A member P right after a member m, whose first field is read at the table's offset of P:
    real(P) <= table(P) (no field of P starts before P). And what of P was read lies past what of m
    was read, so P is after m (members do not overlap): past the end of m's proven ints and pointers
    (m's own, where m is one: their sizes their types'), at a multiple of the alignment of the widest
    scalar read in P (an array's: its element's), which the table's offset is the first of: real(P) =
    table(P) (PyASCIIObject.state after hash, read through state.interned; 3.13's dicts free list
    after the lists', whose count ends where padding to a pointer's alignment begins)."""
    out = set()
    shapes = {} if shapes is None else shapes
    paths: dict = {}
    for k, p in proven:
        if p:
            paths.setdefault(k, []).append(p)
    for s, rows in _structs(fields, proven):
        if s not in shapes:
            groups: dict = {}      # the members of S, and of each struct member of S, each group a struct's
            for p, r in rows.items():
                groups.setdefault(p.rpartition(".")[0], []).append((r[0], p))
            shapes[s] = ({k: sorted(v) for k, v in groups.items()}, {p.rpartition(".")[0] for p in rows})
        groups, parents = shapes[s]
        below: dict = {}       # path -> the proven paths inside it
        for p in sorted(paths.get(s, ())):
            if p in rows:
                parts = p.split(".")
                for i in range(1, len(parts)):
                    below.setdefault(".".join(parts[:i]), []).append(p)
        for parent, members in groups.items():
            if parent == "" or parent in below:
                out |= _after(s, rows, members, proven, below, parents)
    return out


def _after(s: str, rows: dict, members: list, proven: set, below: dict, parents: set) -> set:
    """`after_member` within one struct's members (sorted by offset), whose rows are S's; `below`: the
    proven paths inside each path, `parents`: the paths that have members."""
    out = set()
    for (prev_at, prev), (at, p) in zip(members, members[1:]):
        if (s, p) in proven or p not in below or prev_at + rows[prev][1] > at:
            continue        # proven already, nothing of it read, or a union's members (they overlap)
        reads = [rows[q] for q in below[p] if _scalar(rows, q, parents) or _scalar_array(rows, q)]
        if not any(r[0] == at for r in reads):
            continue
        if _scalar(rows, prev, parents):
            ends = [prev_at + rows[prev][1]] if (s, prev) in proven else []
        else:
            ends = [rows[q][0] + rows[q][1] for q in below.get(prev, ())
                    if _scalar(rows, q, parents) or _read_to_end(s, rows, q, proven)]
        if _read_to_end(s, rows, prev, proven):
            ends.append(prev_at + rows[prev][1])
        if not ends:
            continue
        align = max(min(r[1] if "[" not in r[2] else _element(r), 8) for r in reads)
        if at == -(-max(ends) // align) * align:
            out.add((s, p))
    return out


def header_sizes(resolve, fields, size, proven: set) -> set:
    """The size of an object's header type, held between the end of its last proven field (a scalar,
    its size the target's) and the first proven member of a struct that holds it at 0 (members do not
    overlap): sizeof(PyVarObject) is where ob_size ends, and where PyTupleObject's ob_item starts."""
    out = set()
    for s, rows in _structs(fields, proven):
        for head, hrow in rows.items():
            if hrow[0] != 0 or "." in head or (s, head) not in proven:
                continue
            t = resolve(by_value(hrow[2]) or "")
            if t is None or (t, None) in proven or t == s:
                continue
            try:
                inner = fields(t)
            except (KeyError, LookupError, ValueError):
                continue
            ends = [r[0] + r[1] for x, r in inner.items() if (t, x) in proven and _scalar(inner, x)]
            starts = [r[0] for m, r in rows.items() if (s, m) in proven and r[0] > 0 and m != head and
                      not m.startswith(head + ".")]
            if ends and starts and max(ends) == min(starts) == size(t) == hrow[1]:
                out.add((t, None))
    return out


def at_zero(fields, proven: set) -> set:
    """Every member on the path of a proven field at offset 0: real offsets are never negative, so
    where they add up to 0 each is 0 (`u.lg.ptr` at 0 proves `u` and `u.lg` at 0)."""
    out = set()
    for s, path in proven:
        if not path or "." not in path:
            continue
        try:
            rows = fields(s)
        except (KeyError, LookupError, ValueError):
            continue
        if path not in rows or rows[path][0] != 0:
            continue
        parts = path.split(".")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            if prefix in rows and rows[prefix][0] == 0:
                out.add((s, prefix))
    return out


def carry_and_pinch(table, proven: set) -> set:
    """The type-system rule and the pinch above, over a runtime `Loaded` table, until nothing new follows;
    without the marks of arrays read to their last element (`PATH[-1]`, no field of the table)."""
    from .embedding import carry

    members: dict = {}      # the table's by-value members, found once for every round
    shapes: dict = {}       # and its structs' members grouped
    while True:
        more = pinch(table.resolve_struct, table.fields, table.size,
                     carry(table.resolve_struct, table.fields, proven, members), shapes)
        if more == proven:
            return unmarked(more)
        proven = more


def unmarked(proven: set) -> set:
    """`proven` without the marks of arrays read to their last element (`PATH[-1]`, no field of the table)."""
    return {(key, path) for key, path in proven if not (path or "").endswith("[-1]")}
