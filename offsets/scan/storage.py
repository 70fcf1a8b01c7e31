"""Members listed, not expanded: static object storage (data/storage.yaml), and C library types.

A member whose type is a struct or union of a system header (the C library's `pthread_cond_t`,
`struct timespec`, a system expat's structs, the compiler's own) is listed with its offset, size
and type, but its private members are not: a scan would take them from the C library headers of
the machine that scans, not the build's (glibc's `pthread_cond_t.__data.__g_size` is 8 bytes
further in Debian 12's headers than in sid's, which built 3.14.10). The member's own offset and
size are CPython's layout and are kept; sizes of C library types are ABI, and both readers and gcc
check them.
Both readers (clang_scan.py and dwarf_read.py) apply the same rules, so their tables compare.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from importlib import resources
from typing import Optional

import yaml

#: Bumped when a listing rule above changes (part of `digest()`, hence of every cache key).
RULES = 2


@lru_cache(maxsize=1)
def _text() -> str:
    return resources.files("offsets").joinpath("data/storage.yaml").read_text()


@lru_cache(maxsize=1)
def depths() -> dict[str, int]:
    """Struct tag -> how many member levels its own entry lists."""
    return {str(k): int(v) for k, v in (yaml.safe_load(_text()) or {}).items()}


def depth(tag: Optional[str]) -> Optional[int]:
    """The member depth a struct with this tag is listed to, or None (fully expanded)."""
    return depths().get(tag) if tag else None


#: Where the C library's and the compiler's headers are installed (a DWARF `defined_in` keeps such
#: a file's absolute path; clang_scan asks the unit's -isystem directories instead).
SYSTEM_DIRS = re.compile(r"/usr/(local/)?include/|/usr/lib/(gcc|gcc-cross|llvm[^/]*|clang)/|/usr/[a-z0-9_]+-linux-gnu[a-z]*/include/")


def system_header(defined_in: Optional[str]) -> bool:
    """Whether a definition at `defined_in` (`/usr/include/x86_64-linux-gnu/bits/...:10`; empty for
    a builtin type) is the C library's or compiler's, so a member of its type is not expanded."""
    return not defined_in or SYSTEM_DIRS.match(defined_in) is not None


def digest() -> str:
    """Part of every cache key: a changed rule must not reuse old results."""
    return hashlib.sha256(f"{RULES}\n{_text()}".encode()).hexdigest()[:16]
