"""clang's builtin headers (`stddef.h`, `limits.h`, `stdatomic.h`...), which the libclang wheel lacks.

They must be clang's own, of libclang's major version (gcc's `stdatomic.h` breaks 3.11's
`pycore_atomic.h`). Looked for in `$OFFSETS_CLANG_INCLUDE`, then in an installed
`libclang-common-N-dev`, then fetched from Debian by package name into the cache.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from .errors import BuildError, FetchError

#: The libclang major version pinned in pyproject.toml; its builtin headers must match.
CLANG_MAJOR = 16


def _valid(d: Path) -> bool:
    return (d / "stddef.h").is_file() and (d / "stdatomic.h").is_file() and (d / "limits.h").is_file()


@lru_cache(maxsize=1)
def builtin_include() -> Path:
    """The directory of clang's builtin headers to put first on the include path."""
    env = os.environ.get("OFFSETS_CLANG_INCLUDE")
    if env:
        if not _valid(Path(env)):
            raise BuildError(f"OFFSETS_CLANG_INCLUDE={env} holds no clang builtin headers (stddef.h, stdatomic.h)")
        return Path(env)
    rel = Path(f"usr/lib/llvm-{CLANG_MAJOR}/lib/clang/{CLANG_MAJOR}/include")
    if _valid(Path("/") / rel):
        return Path("/") / rel
    from . import debian

    try:
        # an architecture-independent package: any architecture's index serves
        root = debian.unpacked([f"libclang-common-{CLANG_MAJOR}-dev"], arch="amd64", suite="bookworm")
    except FetchError as e:
        raise BuildError(f"clang's builtin headers are missing and could not be fetched ({e}); "
                         f"install libclang-common-{CLANG_MAJOR}-dev or set OFFSETS_CLANG_INCLUDE") from None
    if not _valid(root / rel):
        raise BuildError(f"libclang-common-{CLANG_MAJOR}-dev unpacked in {root} has no {rel}")
    return root / rel
