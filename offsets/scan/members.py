"""From a record's members to its `offsetof` fields: the one rule both readers follow (clang_scan.py
from libclang, dwarf_read.py from DWARF), so that their tables compare.

A reader describes each member of a record as a `Member`; `flatten` lists them in order:
- an unnamed bitfield is padding, not a field;
- an anonymous struct or union's members take its place (no name of its own in their paths);
- a bitfield is read from its storage unit (`Field.bitfield`, in the reader's `big_endian` byte
  order), a flexible array member has size 0;
- a named struct or union member is listed, then its own members under `NAME.`, unless the reader
  says it is a leaf (a C library type, storage.py) or the record is static object storage, whose
  entry lists `levels` member levels (data/storage.yaml).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import LayoutError
from ..layout.model import Field


@dataclass(frozen=True)
class Member:
    """One member of a record as a reader gives it."""

    name: str                       # '' for an anonymous member or an unnamed bitfield
    bits: int                       # offset from the start of its record, in bits
    type: str                       # how C spells its type
    size: Optional[int]             # bytes; None where the reader knows none (an incomplete type)
    width: Optional[int] = None     # a bitfield's width in bits
    flexible: bool = False          # a flexible array member
    array_len: Optional[int] = None
    nested: object = None           # the reader's handle of the record a struct or union member is
    anonymous: bool = False         # an anonymous struct or union, flattened into its parent


def flatten(reader, record, where: str, levels: Optional[int] = None) -> list:
    """The `Field`s of `record` (a handle of `reader`, which has `members(handle)`, a list of
    `Member`, and `leaf(handle)`, true for a record whose members are not listed); `where` names
    the record in errors, `levels` limits how deep named members go (None: all the way)."""
    out: list = []
    _append(reader, record, 0, "", out, where, levels)
    return out


def _append(reader, record, base_bits: int, prefix: str, out: list, where: str, levels: Optional[int]) -> None:
    for m in reader.members(record):
        if m.width is not None and not m.name:
            continue
        bits = base_bits + m.bits
        if m.anonymous:
            _append(reader, m.nested, bits, prefix, out, where, levels)
            continue
        if not m.name:
            raise LayoutError(f"{where}: unnamed member of type {m.type!r} that is not an anonymous struct or union")
        path = prefix + m.name
        if m.width is None and bits % 8:
            raise LayoutError(f"{where}: field {path!r} starts at bit {bits}, not on a byte")
        if m.flexible:
            out.append(Field(path, bits // 8, 0, m.type, flexible=True))
            continue
        if m.size is None:
            raise LayoutError(f"{where}: field {path!r} has incomplete type {m.type!r}")
        if m.width is not None:
            out.append(Field.bitfield(path, bits, m.width, m.size, m.type, reader.big_endian))
            continue
        out.append(Field(path, bits // 8, m.size, m.type, array_len=m.array_len))
        if m.nested is not None and (levels is None or levels > 1) and not reader.leaf(m.nested):
            _append(reader, m.nested, bits, path + ".", out, where, None if levels is None else levels - 1)
