"""Static object storage (data/storage.yaml): structs whose nested objects are listed, not expanded.

Both readers (clang_scan.py and dwarf_read.py) apply the same rule, so their tables compare.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from typing import Optional


@lru_cache(maxsize=1)
def _text() -> str:
    return resources.files("offsets").joinpath("data/storage.yaml").read_text()


@lru_cache(maxsize=1)
def depths() -> dict[str, int]:
    """Struct tag -> how many member levels its own entry lists."""
    import yaml

    return {str(k): int(v) for k, v in (yaml.safe_load(_text()) or {}).items()}


def depth(tag: Optional[str]) -> Optional[int]:
    """The member depth a struct with this tag is listed to, or None (fully expanded)."""
    return depths().get(tag) if tag else None


def digest() -> str:
    """Part of every cache key: a changed rule must not reuse old results."""
    return hashlib.sha256(_text().encode()).hexdigest()[:16]
