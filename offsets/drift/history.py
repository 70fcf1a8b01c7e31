"""One name across many tables: the offset and size of a field (or the size of a struct, or a
constant's value and type) in every shipped table, grouped by config and target, ordered by
version, with the changes marked (`FRAME_OWNED_BY_CSTACK`: 3 up to 3.13, 4 from 3.14).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from ..errors import TableError, UnknownNameError
from ..layout.model import Build, Table


@lru_cache(maxsize=64)
def _load(path: str, mtime_ns: int, size: int) -> Table:
    if path.endswith(".jsonl"):
        from ..layout.compact import load
    else:
        from ..layout.table_yaml import load
    return load(Path(path))


def load_table(path) -> Table:
    """A YAML table (`table_yaml.load`), or a compact one (`.jsonl`, `compact.load`), remembered
    while the file is unchanged (a process may read it often)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise TableError(f"cannot read table {p}: {e.strerror}") from None
    return _load(str(p.resolve()), st.st_mtime_ns, st.st_size)


def table_paths(directory=None) -> list[Path]:
    """The `cpython-*.yaml` tables in `directory`, by name; without one, the tables the package
    ships (its compact tables, made from a checkout's generated/)."""
    if not directory:
        from ..layout.compact import COMPACT_DIR

        shipped = sorted(COMPACT_DIR.glob("cpython-*.jsonl"))
        if not shipped:
            raise TableError(f"the package ships no tables (no {COMPACT_DIR}/cpython-*.jsonl): reinstall cpython-offsets, "
                             f"or pass --tables DIR (a directory of tables, like a checkout's generated/)")
        return shipped
    d = Path(directory)
    if not d.is_dir():
        raise TableError(f"no table directory {d}: pass --tables DIR (a directory of tables, like generated/)")
    paths = sorted(d.glob("cpython-*.yaml"))
    if not paths:
        raise TableError(f"{d} holds no cpython-*.yaml tables: run `make tables`, or pass --tables DIR")
    return paths


def group_key(b: Build) -> tuple[str, str]:
    return (b.config_name, b.target.triple)


def ordered(tables: Sequence[Table]) -> list[Table]:
    """By config, target, then version (hexversion, so 3.9 comes before 3.10)."""
    return sorted(tables, key=lambda t: (group_key(t.build), t.build.hexversion, t.build.vendor))


@dataclass(frozen=True)
class Point:
    """The name in one table: where it is (None if absent) and how it differs from the row before."""

    build: Build
    struct: Optional[str]            # the struct's name in this table (aliases can differ)
    offset: Optional[int]            # None for a struct, or when absent
    size: Optional[int]
    bits: Optional[tuple[int, int]]
    type: Optional[str]
    change: str = ""                 # '', 'appears', 'gone', or what changed: 'offset 16 -> 24, ...'
    value: Optional[int] = None      # a constant's

    @property
    def present(self) -> bool:
        return self.size is not None


def _point(table: Table, name: str) -> Point:
    from ..layout.names import resolve

    try:
        s, f = resolve(table, name)
    except UnknownNameError:
        c = _constant(table, name)
        if c is not None:
            return Point(table.build, c.name, None, c.size, None, c.type, value=c.value)
        return Point(table.build, None, None, None, None, None)
    if f is None:
        return Point(table.build, s.name, None, s.size, None, None)
    bits = (f.bit_offset, f.bit_width) if f.is_bitfield else None
    return Point(table.build, s.name, f.offset, f.size, bits, f.type)


def _constant(table: Table, name: str):
    """The constant `name` (or one of its aliases) of a table, or None."""
    from ..layout.names import aliases

    if "." in name:
        return None
    for candidate in (name, *aliases().get(name, ())):
        if candidate in table.constants:
            return table.constants[candidate]
    return None


def _change(a: Point, b: Point) -> str:
    if a.present != b.present:
        return "appears" if b.present else "gone"
    if not b.present:
        return ""
    parts = [f"{what} {x} -> {y}" for what, x, y in
             (("value", a.value, b.value), ("offset", a.offset, b.offset), ("size", a.size, b.size),
              ("type", a.type, b.type))
             if x != y]
    if a.bits != b.bits:
        parts.append(f"bits {a.bits and '%d+%d' % a.bits} -> {b.bits and '%d+%d' % b.bits}")
    return ", ".join(parts)


def history(name: str, tables: Sequence[Table]) -> dict[tuple[str, str], list[Point]]:
    """(config, triple) -> the name's points in version order; `UnknownNameError` if no table has it."""
    groups: dict[tuple[str, str], list[Point]] = {}
    for t in ordered(tables):
        p = _point(t, name)
        rows = groups.setdefault(group_key(t.build), [])
        if rows:
            p = Point(p.build, p.struct, p.offset, p.size, p.bits, p.type, _change(rows[-1], p), p.value)
        rows.append(p)
    if not any(p.present for rows in groups.values() for p in rows):
        from ..layout.names import resolve

        newest = max(tables, key=lambda t: t.build.hexversion)
        try:
            resolve(newest, name)
        except UnknownNameError as e:
            from ..errors import close_matches

            suggestions = e.suggestions or close_matches(name, list(newest.constants), 0.7)
            raise UnknownNameError(name, suggestions, where=f"any of the {len(tables)} tables") from None
    return groups


def format_text(name: str, groups: dict[tuple[str, str], list[Point]]) -> str:
    """A block per config and target: version, offset, size, type; `*` marks a change."""
    is_constant = any(p.value is not None for rows in groups.values() for p in rows)
    is_struct = all(p.offset is None for rows in groups.values() for p in rows)
    what = "value and type" if is_constant else "size of the struct" if is_struct else "offset and size"
    out = [f"{name}: {what} in "
           f"{sum(map(len, groups.values()))} tables (* = changed from the version above)"]
    for (config, triple), rows in groups.items():
        out.append(f"{config} {triple}")
        width = max(len(p.build.release) for p in rows)
        for p in rows:
            mark = "*" if p.change else " "
            if not p.present:
                out.append(f" {mark} {p.build.release:<{width}}  -" + (f"      ({p.change})" if p.change else ""))
                continue
            if is_constant:
                cells = f"value {p.value:>6}  {p.type} ({p.size} bytes)"
                if p.struct != name:
                    cells += f"  [as {p.struct}]"
                if p.change:
                    cells += f"  ({p.change})"
                out.append(f" {mark} {p.build.release:<{width}}  {cells}")
                continue
            cells = f"size {p.size:>4}" if is_struct else f"offset {p.offset:>4}  size {p.size:>3}"
            if p.bits:
                cells += f"  bits {p.bits[0]}+{p.bits[1]}"
            if p.type:
                cells += f"  {p.type}"
            requested = name.split(".", 1)[0]
            if p.struct != requested:
                cells += f"  [as {p.struct}]"
            if p.change:
                cells += f"  ({p.change})"
            out.append(f" {mark} {p.build.release:<{width}}  {cells}")
    return "\n".join(out) + "\n"
