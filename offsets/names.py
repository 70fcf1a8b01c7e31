"""Names users ask for: `struct` or `struct.field.path`, resolved through tags, typedefs and the
reviewed alias file (`data/aliases.yaml`), with the closest known names suggested on a miss.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

from .errors import UnknownNameError, close_matches
from .model import Field, Struct, Table


@lru_cache(maxsize=1)
def aliases() -> dict[str, list[str]]:
    """Every name -> the other names of the same struct (both directions of the alias file)."""
    import yaml

    data = yaml.safe_load(resources.files("offsets").joinpath("data/aliases.yaml").read_text()) or {}
    groups: dict[str, list[str]] = {}
    for canonical, others in data.items():
        group = [canonical, *others]
        for name in group:
            groups[name] = [n for n in group if n != name]
    return groups


def split(name: str) -> tuple[str, str]:
    """`PyASCIIObject.state.kind` -> (`PyASCIIObject`, `state.kind`); a bare struct -> (name, '')."""
    struct, _, path = name.partition(".")
    return struct, path


def find_struct(table: Table, struct: str) -> Struct:
    for candidate in (struct, *aliases().get(struct, ())):
        key = table.names.get(candidate, candidate)
        if key in table.structs:
            return table.structs[key]
    known = list(table.structs) + list(table.names)
    raise UnknownNameError(struct, close_matches(struct, known, 0.6),
                           where=f"CPython {table.build.version} ({table.build.target.triple})")


def resolve(table: Table, name: str) -> tuple[Struct, Field | None]:
    """The struct, and the field if `name` has a path, for a user's name; `UnknownNameError` if none."""
    struct, path = split(name)
    s = find_struct(table, struct)
    if not path:
        return s, None
    for f in s.fields:
        if f.path == path:
            return s, f
    paths = [f.path for f in s.fields]
    close = close_matches(path, paths, 0.5)
    raise UnknownNameError(name, [f"{struct}.{p}" for p in close], where=f"struct {s.name}")
