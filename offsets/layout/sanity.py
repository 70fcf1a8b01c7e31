"""The nonsense rules of the layout model: values no C compiler could have produced.

`model.py`'s constructors check each value (integers, ranges, version, pointer size); every
reader of a table file (`table_yaml`, `compact`) also checks each struct's layout as a whole
(`check_table`), so a table that breaks a rule cannot be loaded. (Tests still build deliberately
wrong layouts in memory, to show that gcc, DWARF and the live check catch them.) Every message
names the offending entry. The rules (docs/table-format.md, "Invariants"):

- numbers are integers (not 24.0, not true) below `MAX_BYTES`; alignments at most `MAX_ALIGN`;
- a version agrees with its hexversion (major, minor, micro, release level and serial);
- a known CPU's pointer size agrees with the triple (x86_64 8, i686 4 ...);
- a field lies within its struct and within the named member it belongs to; in a struct, a
  field (bitfields and flexible arrays aside) overlaps no other field of its level, unless it
  starts where an earlier one starts (the next member of an anonymous union, flattened) or comes
  after one that did (that member's own members);
- in a struct that is not packed, a field's offset is a multiple of its type's alignment, where
  that alignment is known (pointers, C's fixed-size scalars, structs of the same table).
"""
from __future__ import annotations

from ..errors import ModelError
# the limits a row's numbers stay within, and the C integer types a constant can have: the reader checks them too
from .compact_read import INTEGER_TYPES, MAX_ALIGN, MAX_BYTES   # noqa: F401

_VERSION = r"(\d+)\.(\d+)\.(\d+)(?:(a|b|rc)(\d+))?\+?$"
_LEVELS = {"a": 0xA, "b": 0xB, "rc": 0xC, None: 0xF}
#: C types whose alignment is their size (capped at the target's largest scalar alignment: targets.py).
_SCALARS = frozenset({
    "char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int", "long",
    "unsigned long", "long long", "unsigned long long", "_Bool", "float", "double", "size_t", "ssize_t",
    "Py_ssize_t", "Py_hash_t", "Py_uhash_t", "intptr_t", "uintptr_t", "Py_UCS1", "Py_UCS2", "Py_UCS4",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t"})


_compiled: dict = {}


def _pattern(text: str):
    """A compiled regular expression: `re` is imported when a rule first needs it, not by the
    runtime's loading of a table (check_row needs only the bounds above)."""
    got = _compiled.get(text)
    if got is None:
        import re

        got = _compiled[text] = re.compile(text)
    return got


def integer(value, what: str, low: int = 0, high: int = MAX_BYTES) -> None:
    """`value` is an int (not a bool, not a float) within [low, high]."""
    if type(value) is not int:
        raise ModelError(f"{what}: {type(value).__name__} {short(value)} is not an integer")
    if not low <= value <= high:
        raise ModelError(f"{what}: {value} is outside {low}..{high}")


def short(value) -> str:
    """A value for a message: a scalar's repr (cut at 40 characters), else its type's name."""
    text = repr(value) if isinstance(value, (int, float, str, bool, type(None))) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def check_version(version: str, hexversion: int) -> None:
    integer(hexversion, "hexversion", 0, 2 ** 32 - 1)
    m = _pattern(_VERSION).match(version) if isinstance(version, str) else None
    if m is None:
        raise ModelError(f"version {short(version)} is not MAJOR.MINOR.MICRO[a|b|rcN]")
    major, minor, micro, level, serial = m.groups()
    want = (int(major) << 24 | int(minor) << 16 | int(micro) << 8 | _LEVELS[level] << 4 | int(serial or 0))
    if want != hexversion:
        raise ModelError(f"version {version} does not match hexversion {hexversion:#010x} "
                         f"(that version is {want:#010x})")


def check_target(triple: str, pointer_size: int) -> None:
    from . import targets       # here, not at the top: the runtime's loading of a table needs no target

    integer(pointer_size, f"target {triple}: pointer_size", 4, 8)
    want = targets.pointer_size(triple)
    if want is not None and want != pointer_size:
        raise ModelError(f"target {triple}: pointer size {pointer_size} contradicts the triple "
                         f"({str(triple).split('-')[0]} has {want}-byte pointers)")


#: The widths each integer type has on the targets CPython's tables are for (LP64 and ILP32).
_WIDTHS = {"_Bool": (1,), "char": (1,), "signed char": (1,), "unsigned char": (1,), "short": (2,),
           "unsigned short": (2,), "int": (4,), "unsigned int": (4,), "long": (4, 8), "unsigned long": (4, 8),
           "long long": (8,), "unsigned long long": (8,)}
_CONSTANT_NAME = r"[A-Za-z_]\w*(?:@[^\s@]+)?"


def check_constant(c) -> None:
    """A constant's name, type and size are C's, and its value fits them."""
    if not isinstance(c.name, str) or not _pattern(_CONSTANT_NAME).fullmatch(c.name):
        raise ModelError(f"constant {short(c.name)}: not a C identifier (or NAME@FILE)")
    where = f"constant {c.name!r}"
    if not isinstance(c.type, str) or c.type not in INTEGER_TYPES:
        raise ModelError(f"{where}: type {short(c.type)} is not one of C's integer types")
    if not isinstance(c.defined_in, str) or not c.defined_in:
        raise ModelError(f"{where}: defined_in {short(c.defined_in)} is not a file name")
    if type(c.size) is not int or c.size not in _WIDTHS[c.type]:
        raise ModelError(f"{where}: size {short(c.size)} is not the width of a {c.type}")
    signed = INTEGER_TYPES[c.type]
    low = -(1 << (8 * c.size - 1)) if signed is not False else 0
    high = (1 << (8 * c.size - (1 if signed else 0))) - 1
    if c.type == "_Bool":
        high = 1
    if type(c.value) is not int or not low <= c.value <= high:
        raise ModelError(f"{where}: value {short(c.value)} does not fit a {c.size}-byte {c.type}")


def check_field(f) -> None:
    if not isinstance(f.path, str) or not isinstance(f.type, str):
        raise ModelError(f"field {short(f.path)}: path and type are strings")
    where = f"field {f.path!r}"
    for key in ("offset", "size"):
        integer(getattr(f, key), f"{where}: {key}")
    for key in ("bit_offset", "bit_width", "array_len"):
        if getattr(f, key) is not None:
            integer(getattr(f, key), f"{where}: {key}")
    if type(f.flexible) is not bool:
        raise ModelError(f"{where}: flexible is {short(f.flexible)}, not true or false")


def check_table(table) -> None:
    """The layout rules of every struct of a table that was read from a file."""
    unions = {name for name, s in table.structs.items() if s.kind == "union"}
    unions |= {alias for alias, target in table.names.items() if target in unions}
    for s in table.structs.values():
        check_struct(s, unions)
    check_alignment(table)


def check_struct(s, unions=frozenset()) -> None:
    """Fields within their parents, siblings not overlapping (`unions`: the union types' names)."""
    where = f"struct {s.name!r}"
    by_path = {f.path: f for f in s.fields}
    last: dict = {}     # parent path -> [end of the sibling before, offsets siblings started at, siblings]
    for f in s.fields:
        parent_path, _, _ = f.path.rpartition(".")
        parent = by_path.get(parent_path) if parent_path else None
        if parent is not None and not parent.flexible and not (
                parent.offset <= f.offset and f.offset + f.size <= parent.offset + parent.size):
            raise ModelError(f"{where}: field {f.path!r} ({f.offset}..{f.offset + f.size}) lies outside "
                             f"{parent_path!r} ({parent.offset}..{parent.offset + parent.size})")
        if f.is_bitfield or f.flexible or (s.kind == "union" and not parent_path) or _in_union(parent, unions):
            continue
        end, starts, before = last.setdefault(parent_path, [0, set(), []])
        if f.offset < end and f.offset not in starts:
            other = next((g for g in before if g.offset < f.offset + f.size and f.offset < g.offset + g.size), None)
            if other is not None:
                raise ModelError(f"{where}: field {f.path!r} ({f.offset}..{f.offset + f.size}) overlaps "
                                 f"{other.path!r} ({other.offset}..{other.offset + other.size})")
        else:           # in order, or a restart: the next member of an anonymous union begins
            last[parent_path][0] = f.offset + f.size
        starts.add(f.offset)
        before.append(f)


def _in_union(parent, unions) -> bool:
    """Whether a named member is of a union type (spelled `union ...`, or a typedef of a union)."""
    return parent is not None and (parent.type.startswith("union ") or parent.type in unions)


_QUALIFIERS = r"\b(?:const|volatile)\b|\s*\[\d*\]"


def natural_align(f, target, struct_aligns: dict, abi=None):
    """The alignment a field's type needs in a struct for `target` (a `model.Target`: its ABI's
    rule, targets.py), where it is known; None otherwise. `abi`: the target's row of targets.py, where
    the caller has looked it up already."""
    if f.is_bitfield or f.flexible:
        return None
    t = _element_type(f.type)
    if abi is None:
        from . import targets

        abi = targets.abi(target.triple)
    if t.endswith("*"):
        return abi and abi.member_align(target.pointer_size)
    count = f.array_len or 1
    if t in _SCALARS and f.size % count == 0 and f.size // count in (1, 2, 4, 8):
        return abi and abi.member_align(f.size // count)      # i686: 8-byte scalars align to 4, arm to 8
    if t.startswith(("struct ", "union ")):
        t = t.partition(" ")[2]
    return struct_aligns.get(t)


_ELEMENT_TYPES: dict = {}       # a field's type spelling -> its element type, unqualified


def _element_type(t: str) -> str:
    """An array's element type, without const and volatile (`const char *[4]` -> `char *`)."""
    got = _ELEMENT_TYPES.get(t)
    if got is None:
        got = t
        if "[" in t or "const" in t or "volatile" in t:
            got = " ".join(_pattern(_QUALIFIERS).sub(" ", t).split())
        if len(_ELEMENT_TYPES) < 65536:
            _ELEMENT_TYPES[t] = got
    return got


def check_alignment(table) -> None:
    """Every field whose type's alignment is known sits at a multiple of it, as far as its struct
    and the members it is nested in are aligned themselves (a packed struct asks nothing)."""
    from . import targets

    structs = table.structs
    aligns = {name: s.align for name, s in structs.items()}
    aligns.update((alias, structs[target].align) for alias, target in table.names.items() if target in structs)
    target = table.build.target
    abi = targets.abi(target.triple)
    for s in structs.values():
        bound = {"": s.align}            # path -> the alignment its members can count on
        for f in s.fields:
            outer = bound.get(f.path.rpartition(".")[0], s.align)
            own = natural_align(f, target, aligns, abi)
            want = outer if own is None else min(own, outer)
            bound[f.path] = want
            if own is not None and f.offset % want:
                raise ModelError(f"struct {s.name!r}: field {f.path!r} at offset {f.offset} is not a multiple "
                                 f"of its alignment {want} ({f.type})")
