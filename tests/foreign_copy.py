"""A pyenv CPython rebuilt, as far as any identity can tell: a copy of its prefix with `include/`
removed (as slim images do) and another GNU build-id on its libpython (the same code built again),
so that no shipped table is exact for it and only proofs answer. The copy's interpreter loads the
copied libpython (LD_LIBRARY_PATH: pyenv's executables name their own lib/ in RUNPATH)."""
from __future__ import annotations

import shutil
from pathlib import Path

BUILD_ID_NOTE = b"\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00"


def foreign_copy(python: Path, dest: Path):
    """(the copy's interpreter, the environment it needs) of pyenv's `python` (PREFIX/bin/python3.X)."""
    prefix, name = python.parent.parent, python.name
    minor = name[len("python"):]
    (dest / "bin").mkdir(parents=True)
    shutil.copy2(python, dest / "bin" / name)
    lib = dest / "lib" / f"python{minor}"
    lib.mkdir(parents=True)
    for entry in (prefix / "lib" / f"python{minor}").iterdir():
        if entry.name != "site-packages":
            (lib / entry.name).symlink_to(entry)
    (lib / "site-packages").mkdir()
    so = f"libpython{minor}.so.1.0"
    data = bytearray((prefix / "lib" / so).read_bytes())
    at = data.find(BUILD_ID_NOTE)
    assert at > 0, f"{so} has no 20-byte GNU build-id"
    for i in range(at + 16, at + 36):
        data[i] ^= 0x5A
    (dest / "lib" / so).write_bytes(bytes(data))
    return dest / "bin" / name, {"LD_LIBRARY_PATH": str(dest / "lib")}
