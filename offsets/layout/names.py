"""Names users ask for: `struct` or `struct.field.path`, resolved through tags, typedefs and the
reviewed alias file (`data/aliases.yaml`), with the closest known names suggested on a miss.

A name that means several layouts in one build is only answered qualified by the file that
defines it (qualify.py): `block@Modules/_collectionsmodule.c.leftlink`; the plain name raises
`AmbiguousNameError` listing the qualified forms.
"""
from __future__ import annotations

from ..errors import AmbiguousNameError, UnknownNameError, close_matches

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:       # the runtime resolves names without importing the model (dataclasses)
    from .model import Constant, Field, Struct, Table


def alias_groups(raw: dict) -> dict[str, list[str]]:
    """`data/aliases.yaml` (canonical -> others) as every name -> the other names of its struct."""
    groups: dict[str, list[str]] = {}
    for canonical, others in (raw or {}).items():
        group = [canonical, *others]
        for name in group:
            groups[name] = [n for n in group if n != name]
    return groups


_aliases: list = []


def aliases() -> dict[str, list[str]]:
    """Every name -> the other names of the same struct (both directions of the alias file; without
    pyyaml, as the runtime alone installs, the same groups from the compact index made of it); read once."""
    if not _aliases:
        _aliases.append(_read_aliases())
    return _aliases[0]


def _read_aliases() -> dict[str, list[str]]:
    import os

    data = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")   # 3.8: no resources.files
    try:
        import yaml
    except ImportError:
        import json

        with open(os.path.join(data, "compact", "index.json"), encoding="utf-8") as f:
            return json.load(f)["aliases"]
    with open(os.path.join(data, "aliases.yaml"), encoding="utf-8") as f:
        return alias_groups(yaml.safe_load(f))


def struct_key(name: str, structs, names: dict, groups: dict):
    """The key among `structs` of a struct, typedef, tag or alias name (`names`: a table's other
    names -> key; `groups`: `aliases()`); None if it has none. Every lookup goes through here: the
    model's tables (`find_struct`), the runtime's compact tables and the drift tools'."""
    for candidate in (name, *groups.get(name, ())):
        key = names.get(candidate, candidate)
        if key in structs:
            return key
    return None


def split(name: str, known=None) -> tuple[str, str]:
    """`PyASCIIObject.state.kind` -> (`PyASCIIObject`, `state.kind`); a bare struct -> (name, '').
    A qualified name's file has dots of its own (`block@Modules/_collectionsmodule.c.leftlink`):
    its struct part is the longest prefix that `known(prefix)` accepts, else one ending `.c`/`.h`."""
    if "@" not in name:
        struct, _, path = name.partition(".")
        return struct, path
    at = name.index("@")
    cuts = [i for i in range(len(name), at, -1) if i == len(name) or name[i] == "."]
    for i in cuts:
        if known is not None and known(name[:i]):
            return name[:i], name[i + 1:]
    for i in cuts:
        if name[:i].endswith((".c", ".h")):
            return name[:i], name[i + 1:]
    return name, ""


def qualified_forms(name: str, keys, groups: dict = None) -> list[str]:
    """The qualified names `name@FILE` (or of its aliases) among `keys`: what a name that means
    several layouts must be asked as."""
    if "@" in name:
        return []
    prefixes = tuple(f"{c}@" for c in (name, *(aliases() if groups is None else groups).get(name, ())))
    return sorted({k for k in keys if k.startswith(prefixes)})


def find_struct(table: Table, struct: str) -> Struct:
    key = struct_key(struct, table.structs, table.names, aliases())
    if key is not None:
        return table.structs[key]
    known = list(table.structs) + list(table.names)
    where = f"CPython {table.build.version} ({table.build.target.triple})"
    qualified = qualified_forms(struct, known)
    if qualified:
        raise AmbiguousNameError(struct, qualified, where=where)
    raise UnknownNameError(struct, close_matches(struct, known, 0.6), where=where)


def resolve(table: Table, name: str) -> tuple[Struct, Field | None]:
    """The struct, and the field if `name` has a path, for a user's name; `UnknownNameError` if none."""
    struct, path = split(name, lambda s: s in table.structs or s in table.names)
    s = find_struct(table, struct)
    if not path:
        return s, None
    for f in s.fields:
        if f.path == path:
            return s, f
    paths = [f.path for f in s.fields]
    close = close_matches(path, paths, 0.5)
    raise UnknownNameError(name, [f"{struct}.{p}" for p in close], where=f"struct {s.name}")


def find_constant(table: Table, name: str) -> Constant:
    """The constant `name` (or an alias of it) of a table; `AmbiguousNameError` for a name of two
    values there (ask for `NAME@FILE`), else `UnknownNameError` with the closest names."""
    for candidate in (name, *aliases().get(name, ())):
        if candidate in table.constants:
            return table.constants[candidate]
    where = f"CPython {table.build.version} ({table.build.target.triple})"
    qualified = sorted(k for k in table.constants if k.startswith(name + "@"))
    if qualified:
        raise AmbiguousNameError(name, qualified, where=where, what="values")
    raise UnknownNameError(name, close_matches(name, list(table.constants), 0.7), where=f"{where} as a constant")
