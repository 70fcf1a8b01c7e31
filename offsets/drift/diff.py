"""The differ: two tables in, the list of layout changes between them out (pure, no I/O).

Structs are matched by name through the table's own other names (tags, typedefs) and the reviewed
alias file, so `listiterobject` (3.11) and `_PyListIterObject` (3.12) are one struct. Fields are
matched by their `offsetof` path; a removed and an added field with the same offset, size, type
and bits (and no other candidate) are reported as probably renamed. Anonymous members are
flattened by the scanner, so a field that moves into an anonymous union at the same offset
(`PyObject.ob_refcnt` in 3.12) keeps its path and is not reported.

Constants (enumerators and integer macros) are matched by name, through the alias file too
(`_Py_TPFLAGS_HAVE_VECTORCALL` in 3.8 is `Py_TPFLAGS_HAVE_VECTORCALL` in 3.12), and reported
added, removed, with a changed value (`FRAME_OWNED_BY_CSTACK` 3 -> 4 in 3.14) or a changed type.

A watch list (`struct`, `struct.field` or a constant's name per line, `#` comments) limits the
verdict to the names a JIT reads; every watched name must exist in one of the two tables.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from ..errors import UnknownNameError, close_matches
from ..layout.model import Field, Struct, Table

#: Every kind of change, in the order they are listed within a struct; then a constant's.
KINDS = ("struct-added", "struct-removed", "struct-renamed", "kind", "size", "align",
         "field-removed", "renamed", "field-added", "moved", "resized", "retyped", "bits",
         "constant-added", "constant-removed", "constant-renamed", "constant-changed", "constant-retyped")
CONSTANT_KINDS = KINDS[-5:]

#: Kinds that are news, not drift: the layout (or value) is the same, only a name differs.
INFO_KINDS = ("struct-renamed", "constant-renamed")


@dataclass(frozen=True)
class Change:
    """One difference. `struct` is the struct's name in the new table (the old one if it was
    removed), `old_struct` its name in the old table (None if added). `field` is the field's path
    (the old path for a removed field). `old` and `new` are the values before and after: an int
    (offset, size, alignment), a str (type, kind, path, struct name), a (bit_offset, bit_width)
    pair or None (bits), a `Field` (field added/removed) or a `Struct` (struct added/removed).
    """

    kind: str
    struct: str
    old_struct: Optional[str]
    field: Optional[str] = None
    old: object = None
    new: object = None

    @property
    def name(self) -> str:
        return f"{self.struct}.{self.field}" if self.field else self.struct

    @property
    def is_drift(self) -> bool:
        return self.kind not in INFO_KINDS

    @property
    def is_constant(self) -> bool:
        """A change of a constant: `struct` is then the constant's name (`old_struct` its old one)."""
        return self.kind in CONSTANT_KINDS


def struct_names(table: Table, key: str, names_of: Optional[dict] = None) -> list[str]:
    """Every name `key`'s struct goes by: itself, the table's tags/typedefs for it, their aliases
    (`names_of`: the table's names by struct, when the caller asks for many structs)."""
    from ..layout.names import aliases

    own = [key] + (sorted(names_of.get(key, ())) if names_of is not None
                   else sorted(a for a, t in table.names.items() if t == key))
    out = list(own)
    for n in own:
        out += [a for a in aliases().get(n, ()) if a not in out]
    return out


def match_structs(old: Table, new: Table) -> list[tuple[Optional[str], Optional[str]]]:
    """(old key, new key) pairs: matched structs, then removed (new None), then added (old None)."""
    pairs, taken = [], set()
    removed = []
    names_of: dict = {}
    for alias, target in old.names.items():
        names_of.setdefault(target, []).append(alias)
    for key in sorted(old.structs):
        found = None
        for name in struct_names(old, key, names_of):
            candidate = name if name in new.structs else new.names.get(name)
            if candidate is not None and candidate not in taken:
                found = candidate
                break
        if found is None:
            removed.append(key)
        else:
            taken.add(found)
            pairs.append((key, found))
    added = [k for k in sorted(new.structs) if k not in taken]
    return pairs + [(k, None) for k in removed] + [(None, k) for k in added]


def _signature(f: Field) -> tuple:
    return (f.offset, f.size, f.type, f.bit_offset, f.bit_width, f.array_len, f.flexible)


def _bits(f: Field):
    return (f.bit_offset, f.bit_width) if f.is_bitfield else None


def _type(f: Field) -> str:
    return f.type + (" (flexible)" if f.flexible else "")


def diff_struct(o: Struct, n: Struct) -> list[Change]:
    """The changes from struct `o` (old table) to `n` (new table), struct-level ones first."""
    out: list[Change] = []

    def add(kind, field=None, old=None, new=None):
        out.append(Change(kind, n.name, o.name, field, old, new))

    if o.name != n.name:
        add("struct-renamed", old=o.name, new=n.name)
    for kind, a, b in (("kind", o.kind, n.kind), ("size", o.size, n.size), ("align", o.align, n.align)):
        if a != b:
            add(kind, old=a, new=b)
    old_fields = {f.path: f for f in o.fields}
    new_fields = {f.path: f for f in n.fields}
    gone = [f for f in o.fields if f.path not in new_fields]
    born = [f for f in n.fields if f.path not in old_fields]
    by_sig: dict[tuple, tuple[list, list]] = {}
    for side, fields in ((0, gone), (1, born)):
        for f in fields:
            by_sig.setdefault(_signature(f), ([], []))[side].append(f)
    renamed_from = {b[0].path: a[0].path for a, b in by_sig.values() if len(a) == 1 and len(b) == 1}
    was_renamed = set(renamed_from.values())
    for f in gone:
        if f.path not in was_renamed:
            add("field-removed", f.path, old=f)
    for f in n.fields:
        if f.path in renamed_from:
            add("renamed", f.path, old=renamed_from[f.path], new=f.path)
            continue
        before = old_fields.get(f.path)
        if before is None:
            add("field-added", f.path, new=f)
            continue
        if before.offset != f.offset:
            add("moved", f.path, before.offset, f.offset)
        if before.size != f.size:
            add("resized", f.path, before.size, f.size)
        if (before.type, before.array_len, before.flexible) != (f.type, f.array_len, f.flexible):
            a, b = _type(before), _type(f)
            if a == b:  # same spelling, different length: say so
                a, b = f"{a} (length {before.array_len})", f"{b} (length {f.array_len})"
            add("retyped", f.path, a, b)
        if _bits(before) != _bits(f):
            add("bits", f.path, _bits(before), _bits(f))
    return out


def diff(old: Table, new: Table) -> list[Change]:
    """Every change from `old` to `new`, ordered by struct name, then as `diff_struct` lists them;
    then the constants', by name."""
    changes: list[Change] = []
    for o, n in match_structs(old, new):
        if o is not None and n is not None:
            changes += diff_struct(old.structs[o], new.structs[n])
        elif n is None:
            changes.append(Change("struct-removed", o, o, old=old.structs[o]))
        else:
            changes.append(Change("struct-added", n, None, new=new.structs[n]))
    changes = sorted(changes, key=lambda c: c.struct)  # stable: each struct's own order is kept
    return changes + sorted(diff_constants(old, new), key=lambda c: c.struct)


def constant_key(name: str, constants, groups: dict):
    """The key among `constants` of a constant's name or one of its aliases (`groups`), or None."""
    for candidate in (name, *groups.get(name, ())):
        if candidate in constants:
            return candidate
    return None


def match_constants(old: Table, new: Table) -> list[tuple[Optional[str], Optional[str]]]:
    """(old name, new name) pairs: matched (by name or alias), removed (new None), added (old None)."""
    from ..layout.names import aliases

    groups, pairs, taken = aliases(), [], set()
    for name in sorted(old.constants):
        found = constant_key(name, new.constants, groups)
        found = found if found not in taken else None
        if found is not None:
            taken.add(found)
        pairs.append((name, found))
    return pairs + [(None, n) for n in sorted(new.constants) if n not in taken]


def diff_constants(old: Table, new: Table) -> list[Change]:
    out = []
    for o, n in match_constants(old, new):
        a, b = old.constants.get(o), new.constants.get(n)
        if b is None:
            out.append(Change("constant-removed", o, o, old=a))
        elif a is None:
            out.append(Change("constant-added", n, None, new=b))
        else:
            if o != n:
                out.append(Change("constant-renamed", n, o, old=o, new=n))
            if a.value != b.value:
                out.append(Change("constant-changed", n, o, old=a.value, new=b.value))
            if (a.type, a.size) != (b.type, b.size):
                out.append(Change("constant-retyped", n, o, old=f"{a.type} ({a.size} bytes)",
                                  new=f"{b.type} ({b.size} bytes)"))
    return out


# -- watch lists ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Watch:
    """One watched name: as written (and where), the struct's key in each table, the field path;
    for a constant, its name in each table (`constant`; the struct keys are then None)."""

    name: str
    line: int
    old_struct: Optional[str]
    new_struct: Optional[str]
    path: Optional[str]
    constant: bool = False


def parse_watch(text: str) -> list[tuple[int, str]]:
    """(line number, name) for each name in a watch file: one per line, `#` starts a comment."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if name:
            out.append((number, name))
    return out


def resolve_watch(entries: Iterable[tuple[int, str]], old: Table, new: Table, where: str = "watch list") -> list[Watch]:
    """Each name resolved in both tables (a struct found in one is followed to its match in the
    other); `UnknownNameError` with the closest names if neither table has it."""
    from ..layout.names import find_struct, split

    pairs = [(o, n) for o, n in match_structs(old, new) if o and n]
    new_of, old_of = dict(pairs), {n: o for o, n in pairs}
    versions = f"neither CPython {old.build.version} nor {new.build.version} has it"
    from ..layout.names import aliases

    groups = aliases()
    constant_pairs = [p for p in match_constants(old, new) if p[0] and p[1]]
    out = []
    for line, name in entries:
        struct, path = split(name)
        if not path and "." not in name:
            o = constant_key(name, old.constants, groups)
            n = constant_key(name, new.constants, groups)
            o = o or next((a for a, b in constant_pairs if b == n), None)
            n = n or next((b for a, b in constant_pairs if a == o), None)
            if (o or n) and not any(struct_key_or_none(t, name) for t in (old, new)):
                out.append(Watch(name, line, o, n, None, constant=True))
                continue
        keys, error = {}, None
        for side, table in (("old", old), ("new", new)):
            try:
                keys[side] = find_struct(table, struct).name
            except UnknownNameError as e:
                error = e
        o = keys.get("old") or old_of.get(keys.get("new"))
        n = keys.get("new") or new_of.get(keys.get("old"))
        if o is None and n is None:
            known = list(old.constants) + list(new.constants)
            suggestions = error.suggestions or close_matches(name, known, 0.7)
            raise UnknownNameError(name, suggestions, where=f"{where} line {line} ({versions})")
        if path:
            paths = [f.path for key, t in ((o, old), (n, new)) if key for f in t.structs[key].fields]
            if path not in paths:
                close = close_matches(path, list(dict.fromkeys(paths)), 0.5)
                raise UnknownNameError(name, [f"{struct}.{c}" for c in close],
                                       where=f"{where} line {line} ({versions})")
        out.append(Watch(name, line, o, n, path or None))
    return out


def struct_key_or_none(table: Table, name: str):
    from ..layout.names import aliases, struct_key

    return struct_key(name, table.structs, table.names, aliases())


def watchers(change: Change, watches: Iterable[Watch]) -> list[Watch]:
    """The watched names `change` concerns (a struct-wide change concerns every field of it)."""
    out = []
    if change.is_constant:
        new_name = None if change.kind == "constant-removed" else change.struct
        return [w for w in watches if w.constant and ((w.old_struct and w.old_struct == change.old_struct)
                                                      or (w.new_struct and w.new_struct == new_name))]
    new_struct = None if change.kind == "struct-removed" else change.struct
    for w in watches:
        if w.constant:
            continue
        if not ((w.old_struct and w.old_struct == change.old_struct)
                or (w.new_struct and w.new_struct == new_struct)):
            continue
        if w.path is None or change.kind in ("struct-added", "struct-removed"):
            out.append(w)
            continue
        paths = {change.field}
        if change.kind == "renamed":
            paths.add(change.old)
        if any(p and (p == w.path or p.startswith(w.path + ".")) for p in paths):
            out.append(w)
    return out
