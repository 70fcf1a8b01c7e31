"""A merged table's last steps, remembered: each type's own record of its layout (`type_records`)
and every struct's and constant's dependency set (`depends`).

An entry (`data_cache`, in a generation of the code that makes it: `code_key`) is keyed on that
code, on the table it annotates (its structs, names and constants, as the unit cache writes them)
and on everything else the steps read: the build's pyconfig.h, compile flags and source tree, the
units' arguments, the files the parse read, which files the index reads (`depends.index_inputs`)
and which the type records read, with the alias groups. It holds the digest of each of those files
and is used only while every one is unchanged. A doc of another shape, or whose sets break a model
invariant, is a miss, and the steps run again: a hit gives the table a run gives.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Optional

from .. import __version__, data_cache
from . import code_key, depends, type_records
from ..layout.model import Dependencies, DependencySet

#: The code an entry comes from (`code_key`).
CODE = ("offsets.scan.finish", "offsets.scan.depends", "offsets.scan.type_records")
SUFFIX = ".json"
#: The keys a type record may have (`type_records.read`).
RECORD_KEYS = frozenset(("basicsize", "itemsize", "members", "symbol"))


def finish(table, b, unit_list: list, files_read: Iterable[str], sources: list = (), prepared: Optional[dict] = None,
           use_cache: bool = True):
    """`table` with its type records (a build with sources: of its `sources`, the tree's
    `type_records.source_files`; `prepared`: what `type_records.prepare_tree` made of them while the
    units parsed) and its dependency sets. A Windows build's table has none: its PC/pyconfig.h
    defines most macros once per `#ifdef` branch (`SIZEOF_VOID_P` 8 and 4), which the text reading
    of the sets (a later definition wins) does not tell apart, so its structs' identity is not known."""
    if b.target.system == "windows":
        return table
    files_read = set(files_read)
    inputs = depends.index_inputs(b, unit_list, files_read)
    sources = list(sources)
    if not use_cache:
        return _finish(table, b, unit_list, inputs, sources, prepared)
    store = data_cache.generation(data_cache.folder() / "finish", _generation())
    key = _key(table, b, unit_list, files_read, inputs, sources)
    read = [*inputs[0].values(), *map(str, sources)]
    hit = _cached(store, key, table, read)
    if hit is not None:
        return hit
    if b.source and prepared is None:
        prepared = type_records.prepare_tree((b.source, sources))
    # each file's digest before the steps read it (the sources': of the bytes read), so a file
    # changed meanwhile is a miss next time
    digests = _digests(inputs[0].values())
    if digests is not None and b.source:
        digests.update({p: got[0] for p, got in prepared.items()})
        digests = digests if len(digests) == len(set(read)) else None      # a source could not be read
    out = _finish(table, b, unit_list, inputs, sources, prepared)
    if digests is not None:
        data_cache.store(store / (key + SUFFIX), key, encode(out, digests))
    return out


def _finish(table, b, unit_list: list, inputs: tuple, sources: list, prepared: Optional[dict]):
    if b.source:
        table = replace(table, types=type_records.read(b.source, table, sources, prepared))
    return depends.with_sets(table, *depends.of_table(table, b, unit_list, inputs))


def _generation() -> str:
    blob = json.dumps([__version__, code_key.digest(*CODE)])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _key(table, b, unit_list: list, files_read: set, inputs: tuple, sources: list) -> str:
    from ..layout.compact import constant_row, struct_row
    from ..layout.names import aliases

    blob = json.dumps([__version__, code_key.digest(*CODE), sorted(aliases().items()),
                       [[k, struct_row(s)] for k, s in table.structs.items()], list(table.names.items()),
                       [constant_row(c) for c in table.constants.values()],
                       str(b.pyconfig_h), b.cflags, None if b.source is None else str(b.source),
                       [[u.roots, u.args] for u in unit_list], sorted(files_read),
                       sorted(inputs[0].items()), inputs[1], [str(p) for p in sources]])
    return hashlib.sha256(blob.encode()).hexdigest()


def _digests(paths: Iterable[str]) -> Optional[dict]:
    """path -> digest of each file, or None if one cannot be read (then nothing is remembered)."""
    try:
        return {p: depends.file_digest(p) for p in paths}
    except OSError:
        return None


def _cached(store: Path, key: str, table, read: list):
    """The finished table of the entry `key` if every file it read still has the same content."""
    doc = data_cache.load(store / (key + SUFFIX), key)
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict) or set(doc["files"]) != set(read):
        return None
    if _digests(read) != doc["files"]:
        return None
    return decode(doc, table)


def encode(table, digests: dict) -> dict:
    deps = table.dependencies

    def as_list(s: Optional[DependencySet]):
        return None if s is None else [list(s.macros), list(s.files)]

    return {"files": digests, "types": table.types, "macros": deps.macros, "digests": deps.files,
            "constants": [[f, as_list(s)] for f, s in deps.constants.items()],
            "structs": [[k, as_list(s.depends)] for k, s in table.structs.items()]}


def decode(doc: dict, table):
    """`table` finished as the doc says, or None if the doc is not one `encode` made of it."""
    def as_set(x) -> Optional[DependencySet]:
        if x is None:
            return None
        macros, files = x
        if not all(isinstance(n, str) for n in (*macros, *files)):
            raise ValueError("a name is a string")
        return DependencySet(tuple(macros), tuple(files))

    try:
        types = doc["types"]
        if not _records(types):
            return None
        deps = Dependencies(macros=dict(doc["macros"]), files=dict(doc["digests"]),
                            constants={f: as_set(s) for f, s in doc["constants"]})
        if any(s is None for s in deps.constants.values()):
            return None
        sets = {k: as_set(s) for k, s in doc["structs"]}
        if list(sets) != list(table.structs):
            return None
        return depends.with_sets(replace(table, types=types), deps, sets)
    except Exception:       # noqa: BLE001 - any shape but the one encode writes: a miss
        return None


def _records(types) -> bool:
    """Whether `types` has the shape of `type_records.read`'s answer."""
    if not isinstance(types, dict):
        return False
    for name, rec in types.items():
        if not isinstance(name, str) or not isinstance(rec, dict) or not set(rec) <= RECORD_KEYS:
            return False
        for size in ("basicsize", "itemsize"):
            for term in rec.get(size, ()):
                if not (isinstance(term, list) and len(term) == 4 and type(term[0]) is int
                        and term[1] in ("size", "offset", "pointer", "int")
                        and all(t is None or isinstance(t, str) for t in term[2:])):
                    return False
        for member in rec.get("members", ()):
            if not (isinstance(member, list) and len(member) == 5 and isinstance(member[0], str)
                    and all(type(v) is int for v in member[1:3]) and all(isinstance(v, str) for v in member[3:])):
                return False
        if not isinstance(rec.get("symbol", ""), str):
            return False
    return True
