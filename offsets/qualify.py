"""One name, one layout: a name that means different layouts in one build is only answered qualified.

A scan meets the same name in many places: as a typedef (`BLOCK` in expat's `xmlparse.c`, 16
bytes), as a tag (`struct BLOCK`, the deque block of `_collectionsmodule.c`, 528 bytes), in two `.c`
files, or in one header laid out differently by the units that include it. When a name, typedef or
tag alike, stands for more than one layout, no plain entry is made for it: each meaning gets
`NAME@FILE` (`block@Modules/_collectionsmodule.c`, `BLOCK@Modules/expat/xmlparse.c`), or
`NAME@UNIT` for one header laid out per unit, and a plain lookup lists those (names.py, runtime.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .model import Struct


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


def candidates(name: str, keys) -> list[str]:
    """The qualified forms `name@...` among `keys` (a table's struct keys and other names)."""
    prefix = name + "@"
    return sorted(k for k in keys if k.startswith(prefix))
