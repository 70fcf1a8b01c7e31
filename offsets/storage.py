"""Members listed, not expanded: static object storage (data/storage.yaml), and C library types.

A member whose type is a struct or union defined outside the CPython tree (the C library's
`pthread_cond_t`, `struct timespec`, a system expat's structs) is listed with its offset, size and
type, but its private members are not: they follow the C library headers of the machine that
scans, not the build's (glibc's `pthread_cond_t.__data` moved 8 bytes between Debian 12 and sid).
Both readers (clang_scan.py and dwarf_read.py) apply the same rules, so their tables compare.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from typing import Optional

#: The top-level directories of a CPython tree: a definition under one of them is CPython's.
TREE_DIRS = frozenset({"Include", "Objects", "Python", "Modules", "Parser", "Programs", "PC", "Lib", "Mac"})

#: Bumped when a listing rule above changes (part of `digest()`, hence of every cache key).
RULES = 2


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


def in_tree(defined_in: Optional[str]) -> bool:
    """Whether a definition at `defined_in` (tree-relative `Include/object.h:10`, or an absolute
    path outside the tree) is CPython's own, so a member of its type is expanded."""
    return bool(defined_in) and defined_in.split("/", 1)[0] in TREE_DIRS


def digest() -> str:
    """Part of every cache key: a changed rule must not reuse old results."""
    return hashlib.sha256(f"{RULES}\n{_text()}".encode()).hexdigest()[:16]
