"""The per-build C header of the running interpreter, written on demand from its exact table with the
standard library only: what a build without this repository's checkout includes (generated/ is not
in the wheel). `python -m offsets --cflags` prints the include flags; `offsets.include_dirs()` gives
the directories to a setup.py.

The directory holds `pyoffsets_<table>.h` (layout/c_header.py, the text `make tables` writes into
generated/ for a shipped table, banner aside) and `pyoffsets_build.h`, which includes it: a JIT
source includes `pyoffsets_build.h` and compiles against any build's header (its macros follow the
canonical names of data/aliases.yaml too). Only a table that is exactly this build's is written,
and only its exact answers: a compile-time number must be earned as a run-time one is.
"""
from __future__ import annotations

import os
import sys

from ..errors import OffsetsError

#: The name a JIT source includes: it includes the header of the build it was written for.
BUILD_HEADER = "pyoffsets_build.h"


def header_table():
    """The table in use, with only what it answers exactly (`OffsetsError` if that is nothing)."""
    from . import build, current_table
    from .core import RUNTIME, prove_constants_here
    from .constants import earned
    from ..layout.compact_read import ConstantRow

    t = RUNTIME.current()
    exact = [k for k in t.order if t.exact(k)]
    if not exact:
        raise OffsetsError(f"{build().table} is not exactly this build's table ({t.earning.why}): a compile-time "
                           f"header would hold numbers nothing earned; make this build's own table first "
                           f"(offsets scan --python {sys.executable} --install, with cpython-offsets[scan])")
    table = current_table()
    from dataclasses import replace

    kept = {n: c for n, c in table.constants.items()
            if earned(t, ConstantRow((c.name, c.value, c.type, c.size, c.defined_in, c.kind)), prove_constants_here) == "exact"}
    core = None if table.core_only is None else tuple(n for n in table.core_only if n in kept)
    return replace(table, constants=kept, core_only=core)


def default_directory(table_name: str) -> str:
    from ..layout.identity import cache_dir

    cache = cache_dir()
    if cache is None:
        raise OffsetsError("there is no cache directory (HOME is unset): give one (--header-dir DIR, or OFFSETS_CACHE)")
    return os.path.join(cache, "include", table_name)


def write(directory: str = None, *, version: str) -> str:
    """Write this build's header and `pyoffsets_build.h` into `directory` (default: the cache's
    `include/<table>/`), each only if its text changed; the directory. `version`: the offsets that
    writes it (`offsets.__version__`, handed down by the package's top)."""
    from .. import atomic_write
    from ..layout import c_header

    table = header_table()
    name = c_header.header_name(table)
    directory = directory or default_directory(table.build.table_name)
    text = c_header.emit(table, f"the table {table.build.table_name} of offsets {version} "
                                "(python -m offsets --cflags)")
    build = (f"/* {BUILD_HEADER}: the per-build header of {table.build.table_name}, the interpreter that ran "
             f"`python -m offsets --cflags`; do not edit. */\n#include \"{name}\"\n")
    try:
        os.makedirs(directory, exist_ok=True)
        atomic_write.write(os.path.join(directory, name), text, if_changed=True)
        atomic_write.write(os.path.join(directory, BUILD_HEADER), build, if_changed=True)
    except OSError as e:
        raise OffsetsError(f"cannot write the per-build header into {directory} ({e.strerror}): "
                           f"give a writable directory (--header-dir DIR)") from None
    return directory


def include_dirs(directory: str = None, *, version: str) -> list:
    """[the directory of pyoffsets.h, the directory of this build's header]: a setup.py's
    `include_dirs` (the header is written now if it is not there yet); `offsets.include_dirs()`."""
    from . import get_include

    return [get_include(), write(directory, version=version)]


USAGE = ("usage: python -m offsets --cflags [--header-dir DIR]   (the -I flags of pyoffsets.h and of this "
         "build's pyoffsets_build.h)\n       python -m offsets --include-dirs [--header-dir DIR]   (the same "
         "directories, one a line)")


def main(argv: list, version: str) -> int:
    """`python -m offsets --cflags | --include-dirs [--header-dir DIR]` (any Python 3.8+, runtime only)."""
    args = list(argv)
    directory = None
    if "--header-dir" in args:
        i = args.index("--header-dir")
        if i + 1 >= len(args):
            print(USAGE, file=sys.stderr)
            return 2
        directory = args.pop(i + 1)
        args.pop(i)
    if args not in (["--cflags"], ["--include-dirs"]):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        dirs = include_dirs(directory, version=version)
    except OffsetsError as e:
        print(f"offsets: error: {e}", file=sys.stderr)
        return e.exit_code
    print(" ".join(f"-I{d}" for d in dirs) if args == ["--cflags"] else "\n".join(dirs))
    return 0
