"""Tables for the drift tools (`diff`, `history`, `report`): read from the package's compact data
(`offsets/data/compact/`) wherever it was made from the very YAML file asked for, else from YAML.

A compact table names the sha256 of the YAML it was made from; a YAML file whose digest matches is
read as its compact table (tests/test_committed_tables.py checks that both load to the same
`Table`), decoding only the structs asked for when a tool names them. Any other YAML file, or
compact data of another format, is read as YAML, announced on stderr when there are many.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Iterable, Optional, Sequence

from ..errors import OffsetsError
from ..layout.model import Table


def _digest(path: Path) -> str:
    from ..regular_file import open_regular

    with open_regular(path) as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


def _compact(yml: Path) -> Optional[tuple]:
    """The header and layout pool of the compact table made from `yml`, if there is one."""
    from ..layout.compact import COMPACT_DIR
    from ..layout.compact_read import open_table

    path = yml if yml.suffix == ".jsonl" else COMPACT_DIR / (yml.stem + ".jsonl")   # a shipped one
    try:
        head, pool = open_table(str(path))
        if path != yml and head.get("source_sha256") != _digest(yml):
            return None
    except (OSError, OffsetsError, ValueError, KeyError):
        return None
    return head, pool


def _only(head: dict, pool, names: Iterable[str]) -> Table:
    """The compact table with only the structs `names` (STRUCT or STRUCT.FIELD) resolve to."""
    from ..layout.compact import table_of
    from ..layout.names import aliases, split, struct_key

    known = pool.names(head["names"])
    chosen = {struct_key(split(name)[0], head["structs"], known, aliases()) for name in names}
    constants = any("." not in name and struct_key(name, head["structs"], known, aliases()) is None for name in names)
    return table_of(head, pool, chosen - {None}, constants)


def load(paths: Sequence, names: Optional[Iterable[str]] = None) -> list[Table]:
    """The tables at `paths`; with `names`, each holds only the structs those names resolve to
    (enough for them, and only for them: a name none resolves to is for `load` without `names`)."""
    from .history import load_table

    names = list(names) if names is not None else None
    tables: list = [None] * len(paths)
    slow = []
    for i, p in enumerate(paths):
        found = _compact(Path(p))
        if found is None:
            slow.append(i)
        elif names is None:
            from ..layout.compact import table_of

            tables[i] = table_of(*found)
        else:
            tables[i] = _only(*found, names)
    if len(slow) > 3:
        print(f"offsets: reading {len(slow)} tables from YAML (no compact data made from them)", file=sys.stderr,
              flush=True)
    for i in slow:
        tables[i] = load_table(paths[i])
    return tables


def load_one(path) -> Table:
    """One whole table (for `diff`)."""
    if not Path(path).is_file():
        from .history import load_table

        return load_table(path)     # its error
    (table,) = load([path])
    return table


def names_found(tables: Sequence[Table], names: Iterable[str]) -> bool:
    """Whether every struct of `names` is in at least one of `tables` (else: load them whole, so that
    the error lists the closest names)."""
    from ..errors import UnknownNameError
    from ..layout.names import find_struct, split

    from .history import _constant

    for name in names:
        struct = split(name)[0]
        for t in tables:
            try:
                find_struct(t, struct)
                break
            except UnknownNameError:
                if _constant(t, name) is not None:
                    break
        else:
            return False
    return True

