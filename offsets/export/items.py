"""What an export holds: items (a field's offset and size, or a struct's size), grouped in
sections, for one or more tables, each keyed by its version and the build-ids of its binaries.

`--fields debug-offsets` is CPython's own `_Py_DebugOffsets` (3.13+), sections and names as CPython
spells them (`interpreter_frame.previous`), for every table, those before 3.13 included: each name
means the struct field `data/debug_offsets.json` says (`interpreter_frame.previous` is
`_PyInterpreterFrame.previous`). `--fields A,B` lists names of the table itself: `STRUCT.FIELD` (a
field) or `STRUCT` (its size). An item a table lacks is absent (`ABSENT`).

An item is (offset, size): a field's byte offset in its struct and its size; a struct's size item
(`interpreter_frame.size`, or `STRUCT`) is (0, sizeof): the whole struct.

A layout is found by the build-id of a binary (exact), or by version, triple and config (`release`,
`debug`, `freethreaded`, `freethreaded-debug`: the table name's words, `config_of`): that lookup answers only
where every layout exported for the three agrees on every item and constant, and nothing otherwise;
by version alone, where every layout of that version agrees (`mark_by_version`). A version names
builds of several CPUs and configs, whose layouts differ: a lookup never picks one of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

from ..errors import OffsetsError, UnknownNameError

#: What an absent item's offset and size are, in every language (the largest u64).
ABSENT = (1 << 64) - 1
DEBUG_OFFSETS = "debug-offsets"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ExportError(OffsetsError):
    """An export that cannot be made as asked (a name no language can spell, no table)."""


@dataclass(frozen=True)
class Item:
    section: str        # `interpreter_frame`, or a struct name
    name: str           # `previous`, a field path with `__` for dots, or `size`
    what: tuple         # ("offset", struct, path) or ("size", struct): what it means in a table


@dataclass(frozen=True)
class Layout:
    """One table's values of the items, and its identity."""

    table: str
    version: str
    hexversion: int
    triple: str         # the target: x86_64-linux-gnu, x86_64-pc-windows-msvc, ...
    config: str         # release, debug, freethreaded, freethreaded-debug (`config_of`)
    build_ids: tuple
    values: dict        # (section, name) -> (offset, size), or None when the table lacks it
    constants: dict     # name -> value (the build's, where the table has them)
    by_version: bool = False    # the answer of a lookup by (hexversion, triple, config): `mark_by_version`
    by_hexversion: bool = False     # the answer of a lookup by hexversion alone: `mark_by_version`


def items_of(fields: str) -> list:
    """The items `--fields` asks for: `debug-offsets`, or a comma-separated list of names."""
    if fields == DEBUG_OFFSETS:
        from ..runtime.live.toolkit import debug_offsets

        out = []
        for member, meaning in sorted(debug_offsets().items()):
            section, _, name = member.partition(".")
            out.append(Item(section, name, tuple(meaning)))
        return out
    out = []
    for name in (n.strip() for n in fields.split(",")):
        if not name:
            continue
        struct, _, path = name.partition(".")
        if not _IDENT.fullmatch(struct) or (path and not all(_IDENT.fullmatch(p) for p in path.split("."))):
            raise ExportError(f"--fields: {name!r} is not STRUCT or STRUCT.FIELD of plain C names (a name qualified "
                              f"by its file, NAME@FILE, cannot be spelled in every language)")
        out.append(Item(struct, path.replace(".", "__") if path else "size",
                        ("offset", struct, path) if path else ("size", struct)))
    if not out:
        raise ExportError("--fields names nothing")
    seen = set()
    for it in out:
        if (it.section, it.name) in seen:
            raise ExportError(f"--fields names {it.section}.{it.name} twice")
        seen.add((it.section, it.name))
    return out


def value(table, what: tuple) -> Optional[tuple]:
    """(offset, size) of an item's meaning in a `model.Table`, or None when the table lacks it."""
    from ..layout.names import find_struct

    try:
        s = find_struct(table, what[1])
    except UnknownNameError:
        return None
    if what[0] == "size":
        return 0, s.size
    for f in s.fields:
        if f.path == what[2]:
            return f.offset, f.size
    return None


def layout_of(table, items: list, constants: tuple = ()) -> Layout:
    b = table.build
    found = {name: v for name, v in ((n, constant_of(table, n)) for n in constants) if v is not None}
    return Layout(b.table_name, b.version, b.hexversion, b.target.triple, config_of(b.config),
                  tuple(sorted(x.build_id for x in b.binaries)),
                  {(it.section, it.name): value(table, it.what) for it in items}, found)


def config_of(config) -> str:
    """A build's layout flags as one word: `release`, `debug`, `freethreaded`, `freethreaded-debug`
    (the table name's words), with any other layout flag set after them (`release-Py_TRACE_REFS`),
    so no two builds of other layout flags share a word."""
    from ..layout.identity import IMPLIED, LAYOUT_FLAGS, config_words

    words = config_words(config) or ["release"]
    implied = {f for flag in LAYOUT_FLAGS if config.get(flag) for f in IMPLIED.get(flag, ())}
    named = ("Py_DEBUG", "Py_GIL_DISABLED")
    return "-".join(words + [f for f in LAYOUT_FLAGS if config.get(f) and f not in named and f not in implied])


def mark_by_version(layouts: list) -> list:
    """`layouts`, marked with what a lookup by version answers: `by_version` on the first of each
    (hexversion, triple, config), `by_hexversion` on the first of each hexversion, each only where
    every layout of its key has the same items and constants. Where two differ (a debug build beside
    a release one, another CPU, a vendor's build beside upstream's), none is marked: only the
    build-id, or more of the key, tells them apart."""
    def firsts(key) -> set:
        groups: dict = {}
        for lay in layouts:
            groups.setdefault(key(lay), []).append(lay)
        return {id(g[0]) for g in groups.values()
                if all(lay.values == g[0].values and lay.constants == g[0].constants for lay in g)}

    full, bare = firsts(lambda l: (l.hexversion, l.triple, l.config)), firsts(lambda l: l.hexversion)
    return [replace(lay, by_version=id(lay) in full, by_hexversion=id(lay) in bare) for lay in layouts]


def none_unknown(items: list, layouts: list) -> None:
    """`--fields` names only what some table exported has: an item absent from every one is a
    misspelt name (ExportError naming them), not a column of ABSENT."""
    unknown = [it for it in items if all(lay.values[(it.section, it.name)] is None for lay in layouts)]
    if unknown:
        names = ", ".join(it.section + ("" if it.what[0] == "size" else "." + it.what[2]) for it in unknown)
        raise ExportError(f"--fields: no table exported has {names} (`offsets show STRUCT -t TABLE` lists a "
                          f"struct's fields)")


def constant_of(table, name: str):
    """A constant's value in a table (its constants), or None where the table has none."""
    constants = getattr(table, "constants", None)
    if not constants or name not in constants:
        return None
    c = constants[name]
    return getattr(c, "value", c)


def sections(items: list) -> list:
    """[(section, [names...])] in the order of the items."""
    out: dict = {}
    for it in items:
        out.setdefault(it.section, []).append(it.name)
    return list(out.items())


def ident(name: str) -> str:
    """A table name as an identifier: `cpython_3_14_10_debian_x86_64_linux_gnu`."""
    return re.sub(r"[^A-Za-z0-9]", "_", name)
