"""One name, one layout: a name that means different layouts in one build is only answered qualified.

A scan meets the same name in many places: as a typedef (`BLOCK` in expat's `xmlparse.c`, 16
bytes), as a tag (`struct BLOCK`, the deque block of `_collectionsmodule.c`, 528 bytes), in two `.c`
files, or in one header laid out differently by the units that include it. When a name, typedef or
tag alike, stands for more than one layout, no plain entry is made for it: each meaning gets
`NAME@FILE` (`block@Modules/_collectionsmodule.c`, `BLOCK@Modules/expat/xmlparse.c`), or
`NAME@UNIT` for one header laid out per unit, and a plain lookup lists those (layout/names.py, runtime/__init__.py).

`merge` is the one merge of both readers (the libclang scanner's units, `dwarf_read`'s
definitions); a `Policy` says what differs between them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from ..layout.model import Struct


@dataclass
class Definition:
    """One layout at one place: the struct, every name it was given (the first is its key), and
    the units (or binaries) that saw it."""

    struct: Struct
    names: list = field(default_factory=list)
    units: list = field(default_factory=list)

    @property
    def file(self) -> str:
        return self.struct.defined_in.rsplit(":", 1)[0]


def shape(s: Struct) -> tuple:
    return s.kind, s.size, s.align, s.fields


def layout(s: Struct) -> tuple:
    """`shape` without the fields' type spellings."""
    return (s.kind, s.size, s.align, tuple((f.path, f.offset, f.size, f.bit_offset, f.bit_width,
                                            f.array_len, f.flexible) for f in s.fields))


@dataclass(frozen=True)
class Policy:
    """How a reader's definitions merge.

    `shape`: what makes two definitions one layout. `units_known`: whether the reader knows the
    units that saw each definition; if so, one place (header path:line) laid out differently by
    different units gives `NAME@UNIT` each, else the name is dropped there (with the reason), since
    nothing says which layout applies."""

    shape: Callable[[Struct], tuple]
    units_known: bool
    reader: str


#: libclang: every unit's structs with their type spellings; a header laid out per unit is kept per unit.
CLANG = Policy(shape, units_known=True, reader="libclang")
#: DWARF: layouts compared without type spellings (as dwarf_read always has); a definition is read
#: once per place, not per unit, so a place of two layouts is dropped.
DWARF = Policy(layout, units_known=False, reader="DWARF")


def merge(entries: Iterable[tuple[str, dict, dict]], policy: Policy) -> tuple[dict, dict, list[str]]:
    """One struct per name across `entries` (unit, struct key -> Struct, other name -> key), in
    order: (structs by key, other names -> key, conflicts). See the module's docstring."""
    conflicts: list = []
    if not policy.units_known:
        entries, conflicts = _one_layout_per_place(entries, policy)
    c = Collector(policy.shape)
    for unit, structs, names in entries:
        c.add(unit, structs, names)
    structs, names, more = c.result()
    return structs, names, sorted(set(conflicts + more))


def _one_layout_per_place(entries, policy: Policy) -> tuple[list, list[str]]:
    """`entries` with each struct key that has two layouts at one place (path:line) left out there,
    and a conflict saying so (sizes of the first two layouts met). A key's other names go with it."""
    placed: dict = {}          # (key, defined_in) -> (unit, Struct), or None once dropped
    others: dict = {}          # (key, defined_in) -> its other names, in the order met
    conflicts: list = []
    for unit, structs, names in entries:
        aliases: dict = {}
        for alias, key in names.items():
            aliases.setdefault(key, []).append(alias)
        for key, s in structs.items():
            at = (key, s.defined_in)
            old = placed.get(at)
            if old is not None and policy.shape(old[1]) != policy.shape(s):
                conflicts.append(f"{key}: two layouts at {s.defined_in} (sizes {old[1].size} and {s.size}): "
                                 f"dropped, the {policy.reader} does not say which one applies")
                placed[at] = None
                continue
            placed.setdefault(at, (unit, s))
            mine = others.setdefault(at, [])
            mine += [n for n in aliases.get(key, []) if n not in mine]
    kept = [(got[0], {key: got[1]}, {n: key for n in others[(key, where)]})
            for (key, where), got in placed.items() if got is not None]
    return kept, conflicts


class Collector:
    """Definitions gathered unit by unit: `add(unit, structs, names)` with one unit's struct keys
    and aliases, then `result()`."""

    def __init__(self, shape=shape) -> None:
        self.shape = shape       # what makes two definitions one layout
        self.defs: dict = {}     # (defined_in, shape) -> Definition

    def add(self, unit: str, structs: dict, names: dict) -> None:
        for key, s in structs.items():
            d = self.defs.setdefault((s.defined_in, self.shape(s)), Definition(s))
            d.units.append(unit)
            if key not in d.names:
                d.names.append(key)
        for alias, target in names.items():
            s = structs.get(target)
            if s is not None:
                d = self.defs[(s.defined_in, self.shape(s))]
                if alias not in d.names:
                    d.names.append(alias)

    def result(self) -> tuple[dict, dict, list[str]]:
        """(structs by key, other names -> key, conflicts): see the module's docstring."""
        meanings: dict = {}      # name -> {shape: [Definition]}
        for d in self.defs.values():
            for n in d.names:
                meanings.setdefault(n, {}).setdefault(self.shape(d.struct), []).append(d)
        ambiguous = {n for n, m in meanings.items() if len(m) > 1}
        conflicts: set = set()
        place: dict = {}          # (name, id(definition)) -> what qualifies it
        for n in sorted(ambiguous):
            defs = [d for ds in meanings[n].values() for d in ds]
            files = [d.file for d in defs]
            for d in defs:
                where = d.file
                if files.count(where) > 1 and len({self.shape(x.struct) for x in defs if x.file == where}) > 1:
                    where = min(d.units)
                    conflicts.add(f"{n}: {d.struct.defined_in} lays out differently in the units that include it; "
                                  f"as {n}@{where} in {', '.join(sorted(d.units))}")
                place[(n, id(d))] = where
            if len(set(files)) > 1:
                conflicts.add(f"{n}: defined differently in {', '.join(sorted(set(files)))}")

        def name_of(n: str, d: Definition) -> str:
            return f"{n}@{place[(n, id(d))]}" if n in ambiguous else n

        structs: dict = {}
        names: dict = {}
        for d in self.defs.values():      # in the order the units were given: the first place wins
            key = name_of(d.names[0], d)
            if key not in structs:
                structs[key] = replace(d.struct, name=key)
            elif self.shape(structs[key]) != self.shape(d.struct):
                continue   # cannot happen: a key of two shapes is ambiguous, hence qualified apart
            for n in d.names[1:]:
                alias = name_of(n, d)
                if alias != key:
                    names.setdefault(alias, key)
        names = {a: k for a, k in names.items() if a not in structs}
        return dict(sorted(structs.items())), dict(sorted(names.items())), sorted(conflicts)


def constant_shape(c) -> tuple:
    """What makes two constants one: a constant has one name (no aliases), and its value."""
    return c.name.split("@", 1)[0], c.value, c.type, c.size, c.kind


def merge_constants(entries: Iterable[tuple[str, dict]]) -> dict:
    """One constant per name across units (unit, name -> Constant), a name of two values kept as
    `NAME@FILE` (or `NAME@UNIT` for one file valued differently by the units including it), as
    `merge` keeps structs; the conflicts are in the qualified names themselves."""
    c = Collector(constant_shape)
    for unit, constants in entries:
        c.add(unit, constants, {})
    return c.result()[0]


def candidates(name: str, keys) -> list[str]:
    """The qualified forms `name@...` among `keys` (a table's struct keys and other names)."""
    prefix = name + "@"
    return sorted(k for k in keys if k.startswith(prefix))
