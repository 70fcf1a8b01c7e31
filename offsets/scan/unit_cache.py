"""The scan cache's entries: one translation unit's result as plain data (`data_cache`).

The doc holds the result's structs as `compact.struct_row`s, its constants as
`compact.constant_row`s and the macros it left out, its names, flags, pointer size and the files it
read with their digests; a doc of another shape, or whose structs break a model
invariant, is a miss and the unit is parsed again.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from .. import data_cache

SUFFIX = ".json"


def encode(result) -> dict:
    from ..layout.compact import constant_row, struct_row

    return {"name": result.name, "structs": [[k, struct_row(s)] for k, s in result.structs.items()],
            "names": result.names, "flags": result.flags, "pointer_size": result.pointer_size,
            "files": result.files, "constants": [constant_row(c) for c in result.constants.values()],
            "left_out": result.left_out}


def decode(doc):
    """The `UnitResult` of a doc, or None if it is not one `encode` made."""
    from .clang_scan import UnitResult
    from ..layout.compact import constant_from_row, struct_from_row

    try:
        structs = {}
        for k, row in doc["structs"]:
            if not isinstance(k, str):
                return None
            structs[k] = struct_from_row(row)
        constants = {c.name: c for c in map(constant_from_row, doc["constants"])}
        if not all(isinstance(doc[part], dict) for part in ("names", "flags", "files", "left_out")):
            return None
        if not all(isinstance(k, str) and isinstance(v, str) for part in ("files", "left_out")
                   for k, v in doc[part].items()):
            return None
        return UnitResult(doc["name"], structs, dict(doc["names"]), dict(doc["flags"]), doc["pointer_size"],
                          dict(doc["files"]), constants, dict(doc["left_out"]))
    except Exception:       # noqa: BLE001 - any shape but the one encode writes: a miss
        return None


def read(store: Path, key: str) -> Optional[object]:
    doc = data_cache.load(store / (key + SUFFIX), key)
    return None if doc is None else decode(doc)


def write(store: Path, key: str, result) -> None:
    data_cache.store(store / (key + SUFFIX), key, encode(result))


def file_digest(path) -> str:
    """`sha256:...` of a file an entry read; OSError for a missing, special or huge file."""
    return "sha256:" + data_cache.file_sha256(path)
