"""What an export holds: items (a field's offset and size, or a struct's size), grouped in
sections, for one or more tables, each keyed by its version and the build-ids of its binaries.

`--fields debug-offsets` is CPython's own `_Py_DebugOffsets` (3.13+), sections and names as CPython
spells them (`interpreter_frame.previous`), for every table, those before 3.13 included: each name
means the struct field `data/debug_offsets.json` says (`interpreter_frame.previous` is
`_PyInterpreterFrame.previous`). `--fields A,B` lists names of the table itself: `STRUCT.FIELD` (a
field) or `STRUCT` (its size). An item a table lacks is absent (`ABSENT`).

An item is (offset, size): a field's byte offset in its struct and its size; a struct's size item
(`interpreter_frame.size`, or `STRUCT`) is (0, sizeof): the whole struct.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
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
    build_ids: tuple
    values: dict        # (section, name) -> (offset, size), or None when the table lacks it
    constants: dict     # name -> value (the build's, where the table has them)


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
    return Layout(b.table_name, b.version, b.hexversion, tuple(sorted(x.build_id for x in b.binaries)),
                  {(it.section, it.name): value(table, it.what) for it in items}, found)


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
