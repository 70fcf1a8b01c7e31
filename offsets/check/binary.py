"""The binary check: read a table's layouts in an interpreter binary's own initialized data.

A CPython binary carries, in the bytes its file gives its image (no DWARF needed, stripped binaries
too, any CPU), facts about its layouts that no scanner wrote: each exported type object's
`tp_basicsize`, `Py_Version` (3.11+) and, 3.13+, the whole `_Py_DebugOffsets` inside `_PyRuntime`'s
initializer (`remote/anchors.py`). Each is read at the offsets the table gives for `PyTypeObject`
and `_PyRuntimeState`, and compared with the sizes and offsets the table gives for the structs they
describe. A table that passes is recorded with the binary's GNU build-id (`build.binaries`), the
identity `offsets identify` matches a process by.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import replace
from pathlib import Path

from ..errors import BuildError
from ..layout.model import Binary
from ..remote import anchors
from ..remote.elf import INTERPRETER_SYMBOL, Elf, ElfError, build_id_of
from ..remote.process_root import resolve
from .outcome import Check

#: A binary check that compared fewer values than this proves too little to record the binary.
MIN_COMPARED = 5


def binary_check(table, path: Path):
    """`verify.Check` of `table` against the interpreter binary at `path`; `BuildError` when the
    file is not an interpreter binary of the table's CPU, or offers too little to compare."""
    b = table.build
    try:
        elf = Elf(str(path))
    except (OSError, ElfError) as e:
        raise BuildError(f"binary check: cannot read {path}: {e}") from None
    with elf:
        if (elf.triple, elf.pointer_size) != (b.target.triple, b.target.pointer_size):
            raise BuildError(f"binary check: {path} is for {elf.triple or f'ELF machine {elf.machine}'} with "
                             f"{elf.pointer_size}-byte pointers, the table for {b.target.triple}")
        if elf.symbol(INTERPRETER_SYMBOL) is None:
            raise BuildError(f"binary check: {path} defines no {INTERPRETER_SYMBOL}: not a binary holding the "
                             f"interpreter")
        view = anchors.View.of_table(table)
        try:
            found = anchors.compare_binary(view, elf, b.hexversion)
        except LookupError as e:
            raise BuildError(f"binary check: {e}") from None
        mismatches = [f"{what}: the binary holds {in_binary!r}, the table gives {in_table!r}"
                      for what, in_binary, in_table, _ in found if in_binary != in_table]
        structs = {k for *_, used in found for k, _ in used}
        compared = len(found)
        build_id = elf.build_id()
    if compared < MIN_COMPARED:
        raise BuildError(f"binary check: {path} offers {compared} values to compare with the table (fewer than "
                         f"{MIN_COMPARED}): not enough to vouch for it")
    return Check(f"binary {path.name}", f"{path.name} (build-id {build_id})", len(structs), compared, tuple(mismatches),
                 unit="values of its type objects, Py_Version and _Py_DebugOffsets")


def with_binaries(table, found: list):
    """`table` recording the build-id of each binary (path, file, source) of `found`."""
    binaries = []
    for path, file, source in found:
        build_id = build_id_of(str(path))
        if build_id is None:
            raise BuildError(f"{path} has no GNU build-id note: it cannot identify its build")
        binaries.append(Binary(build_id, file, source))
    return replace(table, build=replace(table.build, binaries=tuple(sorted(binaries, key=lambda x: x.file))))


def interpreter_binaries(prefix: Path, minor: str) -> list:
    """The interpreter binaries installed in `prefix` (its executables and libpythons that define
    Py_Initialize), as (the file to read, its name relative to the prefix). Under another process's
    root, its directories are resolved within that root (process_root)."""
    found = []
    for pattern in (f"bin/python{minor}*", f"lib/libpython{minor}*.so*", f"lib/*/libpython{minor}*.so*"):
        for name, path in _listed(prefix, pattern):
            if os.path.islink(path) or not os.path.isfile(path) or path.endswith("-config"):
                continue
            real = Path(resolve(path))
            try:
                with Elf(str(real)) as elf:
                    if elf.symbol(INTERPRETER_SYMBOL) is None:
                        continue
            except (OSError, ElfError):
                continue
            found.append((real, name))
    return found


def _listed(prefix: Path, pattern: str) -> list:
    """(name under `prefix`, path) of the files `pattern` matches, sorted: as glob, but each directory
    resolved first (within the process's root, for a prefix under one), so a linked directory is
    listed as the process sees it."""
    *folders, last = pattern.split("/")
    level = [("", resolve(prefix))]
    for part in folders:
        level = [(f"{rel}{name}/", resolve(os.path.join(d, name))) for rel, d in level for name in _names(d, part)]
    return sorted((rel + name, os.path.join(d, name)) for rel, d in level for name in _names(d, last))


def _names(folder: str, pattern: str) -> list:
    try:
        return sorted(fnmatch.filter((n for n in os.listdir(folder) if not n.startswith(".")), pattern))
    except OSError:
        return []
