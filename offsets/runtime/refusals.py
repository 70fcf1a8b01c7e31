"""What a refusal says: a name no table has (the close names, or the tables that do have it), a
name the table in use does not earn, no table at all, and how to make this build's own table.
Imported at the first refusal, never by a lookup that is answered."""
from __future__ import annotations

from ..errors import NoMatchingTable, OffsetsError, UnknownNameError, close_matches
from ..layout.build_identity import BuildIdentity
from .tables import Loaded, load_shipped

def how_to_scan(identity) -> str:
    """What to do when no table answers: the scan command for the build `identity()` gives."""
    from .autoscan import scan_command

    try:
        command = scan_command(identity())
    except Exception:        # noqa: BLE001 - a refusal must never fail while saying what to do
        command = "offsets scan --python PYTHON --install"
    return (f"make this build's own table with `{command}` (needs its C headers, e.g. the python3.X-dev "
            f"package), or load one with offsets.use_table('table.yaml')")


def no_match(me: BuildIdentity, entries: list, why: str, identity) -> NoMatchingTable:
    """No table fits build `me`: why, the shipped tables, and what to do."""
    shipped = ", ".join(e["name"] for e in sorted(entries, key=lambda e: (e["triple"], e["hexversion"], e["name"])))
    return NoMatchingTable(f"no table fits {me.describe()}{': ' + why if why else ''}; shipped: {shipped or 'none'}; "
                           + how_to_scan(identity))


class ShippedNames:
    """Every struct key and other name of the shipped tables, gathered at the first unknown name
    (and again if the index changes), so that most unknown names cost a set lookup instead of
    reading every shipped table's head."""

    __slots__ = ("index", "known")

    def __init__(self) -> None:
        self.index, self.known = None, frozenset()

    def has(self, struct: str, index: dict) -> bool:
        """Whether some shipped table may resolve `struct`: it, or a name its alias group gives, is
        one of some table's keys or other names (`names.struct_key` resolves no other)."""
        if self.index is not index:
            known: set = set()
            for e in index["tables"]:
                other = load_shipped(e)
                known.update(other.order)
                known.update(other.names)
            self.index, self.known = index, frozenset(known)
        return struct in self.known or any(c in self.known for c in index["aliases"].get(struct, ()))


def tables_having(struct: str, index: dict, names: ShippedNames) -> tuple:
    """(which kind of table has `struct`: other shipped tables that have it, and where it is
    defined, or '' when none does; those tables as (name, hexversion) pairs): what a refusal of an
    unknown name says instead of unrelated names."""
    found = []
    try:
        if not names.has(struct, index):
            return "", []
        for e in index["tables"]:
            other = load_shipped(e)
            key = other.resolve_struct(struct)
            if key is not None:
                found.append((e["name"], other.row(key).defined_in.rsplit(":", 1)[0], e["hexversion"]))
    except OffsetsError:
        return "", []
    if not found:
        return "", []
    files = sorted({f for _, f, _ in found})
    kind = ("a struct of the source tree: only a table made with the build's sources (or its libpython's DWARF) has "
            "it" if not any(f.startswith("Include/") for f in files) else "a struct of its headers")
    names_ = [n for n, _, _ in found]
    return ((f"{struct} is {kind} ({', '.join(files[:3])}); tables that have it: {', '.join(names_[:4])}"
             + (f" and {len(names_) - 4} more" if len(names_) > 4 else "")), [(n, h) for n, _, h in found])


def unknown_struct(t: Loaded, name: str, struct: str, index: dict, names: ShippedNames) -> UnknownNameError:
    """`struct` of `name` is none of table `t`'s: ambiguous without its file, gone since this
    version, only in other kinds of table, or unknown (its close names, searched when shown)."""
    qualified = t.qualified(struct)
    if qualified:
        from ..errors import AmbiguousNameError

        return AmbiguousNameError(name, qualified, where=t.where())
    elsewhere, having = tables_having(struct, index, names)
    if elsewhere:
        from . import suggest

        gone = suggest.gone(t, struct, having)
        if gone:
            path = name[len(struct) + 1:]
            now = suggest.where_now(t, path)
            here = f"; {' and '.join(now)} {'has' if len(now) == 1 else 'have'} a field of that name" if now else ""
            return UnknownNameError(name, now, where=f"{t.where()}: {gone}{here}; {elsewhere}")
        return UnknownNameError(name, [], where=f"{t.where()}: no table this build can use has it; {elsewhere}")
    return UnknownNameError(name, lambda: close_matches(struct, t.struct_names(), 0.6), where=t.where())


def field_suggestions(t: Loaded, key: str, name: str, path: str) -> list:
    """What a refusal of an unknown field suggests: the same member renamed in a neighbouring minor
    version (suggest.renamed), then the closest names."""
    from . import suggest

    struct = t.split(name)[0]
    close = suggest.renamed(t, key, path)
    close += [p for p in close_matches(path, list(t.fields(key)), 0.5) if p not in close]
    return [f"{struct}.{p}" for p in close]


def not_earned(t: Loaded, name: str, head: Loaded, identity) -> NoMatchingTable:
    """Table `t` has `name` but earns no answer for it: why (the live check's summary, and why this
    build's own table was not made, which the chain's `head` keeps), and what to do."""
    check = t.earning.check
    seen = f"; live check: {check.summary()}" if check is not None else ""
    struct, _ = t.split(name)
    key = t.resolve_struct(struct)
    why = t.earning.why_not(t, key) if key is not None else t.earning.why
    not_made = head.not_made
    return NoMatchingTable(f"{name}: not answered: {t.name} is not exactly this build's table for it ({why}) and "
                           f"the live check did not read this{seen}{'; ' + not_made if not_made else ''}; "
                           f"{how_to_scan(identity)}")
