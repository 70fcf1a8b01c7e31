"""The YAML table reader's result remembered across tests and runs, under a key of the text it read.

Reading a large table through the YAML reader (strict parsing, the schema, the model's checks) takes
about 3 s; the tests read the same committed tables, and copies of them, over a thousand times.
`install()` (tests/conftest.py) makes `table_yaml.loads` remember each table it built under the
sha256 of the package's files (tests/result_memo.py) and of the text; the same text read by the same
code is the same `Table` (texts under 64 kB, which read fast, are not remembered). Only a table that loaded is remembered: a text the reader refuses is read
again each time and raises as it does unremembered. Entries are pickles under
`$OFFSETS_CACHE/results/tables/`, read back by an unpickler that builds nothing but the layout
model's classes (a planted or damaged entry is a miss). `real_loads` is the reader itself, for the
tests of the reader (tests/test_committed_tables.py, tests/test_table_memo.py).
"""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import time
from functools import lru_cache
from pathlib import Path

from offsets import atomic_write
from offsets.layout import table_yaml
from offsets.layout.identity import cache_dir

from result_memo import package_digest

real_loads = table_yaml.loads
#: texts shorter than this are read again each time (they read fast; the fuzz tests make thousands)
SMALLEST = 64 * 1024
#: the classes an entry may hold (everything else in a table is a builtin value pickle makes itself)
MODEL = "offsets.layout.model"


class _ModelOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if module != MODEL:
            raise pickle.UnpicklingError(f"{module}.{name} is not a layout model class")
        return super().find_class(module, name)


@lru_cache(maxsize=1)
def _folder() -> Path:
    """The session's cache (a test that sets its own OFFSETS_CACHE later still uses this one)."""
    return Path(cache_dir()) / "results" / "tables"


def _key(text: str) -> str:
    return hashlib.sha256(f"{package_digest()}\0{text}".encode()).hexdigest()


@lru_cache(maxsize=8)
def _recalled(key: str) -> bytes | None:
    path = _folder() / f"{key}.pickle"
    try:
        blob = path.read_bytes()
        os.utime(path)          # in use: kept by prune()
        return blob
    except OSError:
        return None


def _table_of(blob: bytes):
    try:
        table = _ModelOnly(io.BytesIO(blob)).load()
    except Exception:       # a damaged or planted entry: a miss
        return None
    return table if type(table) is table_yaml.Table else None


def loads(text: str, origin: str = "table"):
    """`table_yaml.loads`, the table built once per text and package."""
    if len(text) < SMALLEST:
        return real_loads(text, origin)
    key = _key(text)
    blob = _recalled(key)
    table = None if blob is None else _table_of(blob)
    if table is not None:
        return table
    table = real_loads(text, origin)
    atomic_write.replace(_folder() / f"{key}.pickle", pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL))
    _recalled.cache_clear()
    return table


def prune(days: float = 2) -> None:
    """Remove entries unused for `days` (those of older package files, mostly)."""
    now = time.time()
    for p in _folder().glob("*.pickle"):
        try:
            if now - p.stat().st_mtime > days * 86400:
                p.unlink()
        except OSError:
            pass


def install() -> None:
    _folder()
    prune()
    table_yaml.loads = loads
