"""Layouts from DWARF: a second, independent reader of struct layouts, for builds without sources.

`read(binary)` takes every complete struct and union from the DWARF of a binary (a plain ELF with
`.debug_info`, or a stripped one with its separate debug file, passed in or found by build-id;
DWARF 2 to 5, compressed sections, dwz supplementary files) and returns the same model the scanner
does: key = first typedef name else tag, `offsetof` designators, anonymous members flattened,
absolute byte offsets, bitfields windowed exactly as `clang_scan` does. `fill` adds to a table the
structs only DWARF has (origin "dwarf"); `compare` cross-checks the structs both have.

This module opens the files and holds the API; `dwarf_read` turns DIEs into the model and
`dwarf_raw` walks the units fast. A libpython is read in seconds (each header struct once, not
once per unit); results are cached by the files' sha256 and the reader's code (`code_key`) under
`$OFFSETS_CACHE/dwarf/`.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import time
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Iterable, Optional, Union

from .. import __version__, data_cache
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from . import code_key, storage
from .dwarf_read import TREE_DIRS, Reader
from .targets import target
from ..errors import BuildError, VerifyError
from ..layout.compact import struct_from_row, struct_row
from ..layout.model import Struct, Table

#: The code a cached read comes from (`code_key`): this module and all it imports (the reader, the model,
#: the entry's form).
READER_CODE = ("offsets.scan.dwarf",)

__all__ = ["TREE_DIRS", "DwarfInfo", "Comparison", "read", "read_structs", "check_target", "compare",
           "compare_report", "compare_keys", "fill", "build_id", "has_dwarf", "debug_file_for"]


@dataclass(frozen=True)
class DwarfInfo:
    """What a binary's DWARF says: structs by name, other names for them, and what was dropped."""

    structs: dict
    names: dict
    conflicts: tuple[str, ...]
    digest: str                     # sha256 over the binary (and its debug file)
    units: int                      # compile (and partial) units read
    seconds: float                  # time the read took (0 when it came from the cache)
    binary: str = ""                # the binary's file name
    machine: str = ""               # its ELF header's e_machine (EM_X86_64...), read on every call


@dataclass(frozen=True)
class Comparison:
    """The result of `compare`: what was compared, what disagreed, what only one side has."""

    structs: int
    fields: int
    mismatches: tuple[str, ...]
    one_sided: tuple[str, ...]          # fields only one side has, in a struct both have
    not_compared: tuple[str, ...]       # same name, different definitions (file differs)


# --------------------------------------------------------------------------------------------
# Opening the DWARF


def _digest(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return "sha256:" + h.hexdigest()


def build_id(path) -> Optional[str]:
    """The GNU build-id of an ELF file as hex, or None (remote/elf.py: the one reader of build-ids)."""
    from ..remote.elf import ElfError, build_id_of

    try:
        return build_id_of(str(path))
    except (ElfError, OSError) as e:
        raise BuildError(f"{path}: not a readable ELF file ({e})") from None


def has_dwarf(path) -> bool:
    """Whether the ELF file at `path` carries DWARF itself (not only a link to a debug file)."""
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            return any(elf.get_section_by_name(n) is not None for n in (".debug_info", ".zdebug_info"))
    except ELFError as e:
        raise BuildError(f"{path}: not a readable ELF file ({e})") from None


def debug_file_for(binary, root=None) -> Optional[Path]:
    """The separate debug file of `binary`, found by its build-id under `root`/usr/lib/debug/
    (root: an unpacked package tree), else under any directory above the binary (so an unpacked
    Debian tree is searched) and the system's /usr/lib/debug; None if there is none."""
    bid = build_id(binary)
    if not bid:
        return None
    rel = Path(".build-id") / bid[:2] / f"{bid[2:]}.debug"
    if root is not None:
        bases = [Path(root) / "usr/lib/debug"]
    else:
        from ..remote.process_root import resolve

        bases = [p / d for p in Path(resolve(binary)).parents for d in ("usr/lib/debug", "lib/debug")]
    for base in bases:
        if (base / rel).is_file():
            return base / rel
    return None


def _open_dwarf(path: Path):
    """A pyelftools DWARFInfo for `path`, following a dwz supplementary file next to it or under
    the same root (Debian's `/usr/lib/debug/.dwz/...` resolved inside the unpacked tree)."""
    def loader(name):
        name = os.fsdecode(name)        # bytes up to pyelftools 0.32 (the last for Python 3.9), str from 0.33
        candidates = [Path(name)] if not os.path.isabs(name) else []
        candidates.append(path.parent / name.lstrip("/"))
        if os.path.isabs(name):
            # walk up from the debug file: an unpacked Debian tree holds /usr/lib/debug/... below it
            for parent in path.parents:
                candidates.append(parent / name.lstrip("/"))
            candidates.append(Path(name))
        for c in candidates:
            if c.is_file():
                return open(c, "rb")
        raise BuildError(f"{path}: its DWARF refers to the supplementary file {name}, which is not "
                         f"there; unpack the package that holds it next to the debug file")

    stream = open(path, "rb")
    try:
        elf = ELFFile(stream, stream_loader=loader)
        if not elf.has_dwarf_info() or elf.get_section_by_name(".debug_info") is None \
                and elf.get_section_by_name(".zdebug_info") is None:
            raise BuildError(f"{path} has no DWARF (.debug_info); pass its separate debug file "
                             f"(Debian: the -dbg/-dbgsym package, usr/lib/debug/.build-id/)")
        machine = elf["e_machine"]
        info = elf.get_dwarf_info(follow_links=True)
    except ELFError as e:
        stream.close()
        raise BuildError(f"{path}: not a readable ELF file ({e})") from None
    except BaseException:
        stream.close()
        raise
    return info, machine, stream


def _read_uncached(binary: Path, debug_file: Optional[Path], thorough: bool) -> tuple:
    info, machine, stream = _open_dwarf(debug_file or binary)
    try:
        r = Reader(machine, thorough)
        infos = [info]
        if info.supplementary_dwarfinfo is not None:
            infos.insert(0, info.supplementary_dwarfinfo)
        for di in infos:
            for cu in di.iter_CUs():
                r.read_unit(cu)
        structs, names, conflicts = r.result()
        return structs, names, tuple(conflicts), r.units
    finally:
        stream.close()


def _not_a_file(path: Path) -> str:
    return "is not a regular file" if path.exists() else "does not exist"


def read(binary, debug_file=None, use_cache: bool = True, thorough: bool = False) -> DwarfInfo:
    """Every complete struct and union in the DWARF of `binary` (or of `debug_file`, its separate
    debug info), as the model. Cached by content under `$OFFSETS_CACHE/dwarf/`.

    A definition met again in another unit at the same place (kind, name, file, line, column, size)
    is read once; `thorough` reads it in every unit and keeps apart any that differ (slower: it is
    how the shortcut is proven harmless, see tests/test_dwarf.py)."""
    binary = Path(binary)
    if not binary.is_file():
        raise BuildError(f"{binary} {_not_a_file(binary)} (expected an ELF binary with DWARF, e.g. libpython3.X.so)")
    debug = Path(debug_file) if debug_file else None
    if debug is not None and not debug.is_file():
        raise BuildError(f"debug file {debug} {_not_a_file(debug)}")
    if debug is None and not has_dwarf(binary):
        debug = debug_file_for(binary)   # None: _open_dwarf says what to pass
    if debug is not None:
        want, got = build_id(binary), build_id(debug)
        if want and got != want:
            raise BuildError(f"debug file {debug} is for build-id {got}, but {binary.name} has build-id {want}: "
                             f"pass the debug file of this very binary (usr/lib/debug/.build-id/{want[:2]}/{want[2:]}.debug)")
    digest = _digest([binary] + ([debug] if debug else []))
    store = data_cache.generation(data_cache.folder() / "dwarf", _reader_key())
    mode = "-thorough" if thorough else ""
    path = store / f"{digest.split(':')[1]}{mode}.json"
    mine = {"binary": binary.name, "machine": _machine(binary)}
    if use_cache:
        cached = _load_cached(path, digest)
        if cached is not None:
            return replace(cached, **mine)
    start = time.perf_counter()
    structs, names, conflicts, units = _read_uncached(binary, debug, thorough)
    result = DwarfInfo(structs, names, conflicts, digest, units, round(time.perf_counter() - start, 2), **mine)
    if use_cache:

        data_cache.store(path, path.stem, {"structs": [[k, struct_row(s)] for k, s in structs.items()],
                                           "names": names, "conflicts": list(conflicts), "units": units})
    return result


def _reader_key() -> str:
    """What a saved read depends on besides the files: the package's version, the listing rules, the
    reader's code and pyelftools' version."""
    blob = "\0".join([__version__, storage.digest(), code_key.digest(*READER_CODE), metadata.version("pyelftools")])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _machine(path: Path) -> str:
    """The e_machine of ELF file `path` (EM_X86_64, EM_AARCH64, EM_386...)."""
    with open(path, "rb") as stream:
        try:
            return ELFFile(stream)["e_machine"]
        except ELFError as e:
            raise BuildError(f"{path}: not a readable ELF file ({e})") from None


def check_target(table: Table, info: DwarfInfo) -> None:
    """`BuildError` unless `info`'s binary is for the CPU of `table`'s target."""

    want = target(table.build.target.triple).elf_machine
    if info.machine != want:
        raise BuildError(f"{info.binary} is for {info.machine}, the table for {table.build.target.triple} "
                         f"({want}): pass a binary of the table's own build")


def _load_cached(path: Path, digest: str) -> Optional[DwarfInfo]:
    """A saved read (`data_cache`: plain data, checked), or None."""

    doc = data_cache.load(path, path.stem)
    try:
        structs = {k: struct_from_row(row) for k, row in doc["structs"]}
        names, units = dict(doc["names"]), doc["units"]
        conflicts = tuple(doc["conflicts"])
    except Exception:       # noqa: BLE001 - not a saved read: read again
        return None
    if not all(isinstance(k, str) for k in structs) or type(units) is not int:
        return None
    return DwarfInfo(structs, names, conflicts, digest, units, 0.0)


def read_structs(binary, debug_file=None) -> dict:
    """`read(...).structs`: struct name -> `Struct` (origin "dwarf")."""
    return read(binary, debug_file).structs


# --------------------------------------------------------------------------------------------
# Using it with a libclang table


def _as_info(dwarf: Union[DwarfInfo, dict], table: Table) -> tuple[dict, dict]:
    if isinstance(dwarf, DwarfInfo):
        check_target(table, dwarf)
        return dwarf.structs, dwarf.names
    return dwarf, {}


def _in_tree(s: Struct) -> bool:
    return s.defined_in.split("/", 1)[0] in TREE_DIRS


def _file(s: Struct) -> str:
    """The file a struct is defined in, normalized (clang keeps `mimalloc/../mimalloc-stats.h`)."""
    return posixpath.normpath(s.defined_in.rsplit(":", 1)[0])


def _counterpart(table: Table, name: str, s: Struct, aliases: dict) -> Optional[str]:
    """The table's struct that is the same C type as DWARF's `name` (same name, same file)."""
    base = name.split("@", 1)[0]
    candidates = [base] + [a for a, t in aliases.items() if t == name]
    for c in candidates:
        key = c if c in table.structs else table.names.get(c)
        if key is not None:
            return key
    return None


def compare_keys(table: Table, dwarf: Union[DwarfInfo, dict]) -> list[str]:
    """The table's structs that `compare_report` checks against `dwarf` (same C type, same file)."""
    structs, aliases = _as_info(dwarf, table)
    keys = []
    for name, d in structs.items():
        key = _counterpart(table, name, d, aliases)
        if key is not None and _file(table.structs[key]) == _file(d):
            keys.append(key)
    return keys


#: Why a record's alignment is not compared with DWARF's (`compare_report`'s `not_compared`).
NO_PACKING = "DWARF records no packing, and its members sit where an unpacked record's would"


def compare_report(table: Table, dwarf: Union[DwarfInfo, dict]) -> Comparison:
    """Check every struct both `table` and `dwarf` have: kind, size, alignment, and every common
    field's offset, size, bits and array length. Structs DWARF lacks (declared but unused in the
    binary) are fine; structs of the same name defined in different files are not compared."""
    structs, aliases = _as_info(dwarf, table)
    n_structs = n_fields = 0
    mismatches, one_sided, not_compared = [], [], []
    for name, d in structs.items():
        key = _counterpart(table, name, d, aliases)
        if key is None:
            continue
        c = table.structs[key]
        if _file(c) != _file(d):
            not_compared.append(f"{key}: libclang has it from {c.defined_in}, DWARF {name} from {d.defined_in}")
            continue
        n_structs += 1
        for what, a, b in (("kind", c.kind, d.kind), ("size", c.size, d.size), ("align", c.align, d.align)):
            if what == "align" and a < b and c.size == d.size:
                # DWARF records no `packed`: a packed record whose members all sit where an unpacked
                # one's would (tracemalloc_frame on a 32-bit CPU) looks unpacked there, so DWARF's
                # alignment is only an upper bound (gcc's `_Alignof` decides: check/probe.py)
                not_compared.append(f"{key}: align {a} by libclang, at most {b} by DWARF ({NO_PACKING})")
            elif a != b:
                mismatches.append(f"{key}: {what} is {a} by libclang but {b} by DWARF")
        dfields = {f.path: f for f in d.fields}
        cfields = {f.path: f for f in c.fields}
        for path, cf in cfields.items():
            df = dfields.get(path)
            if df is None:
                one_sided.append(f"{key}.{path}: only libclang has it")
                continue
            n_fields += 1
            for what in ("offset", "size", "bit_offset", "bit_width", "array_len", "flexible"):
                a, b = getattr(cf, what), getattr(df, what)
                if a != b:
                    mismatches.append(f"{key}.{path}: {what} is {a} by libclang but {b} by DWARF")
        one_sided += [f"{key}.{p}: only DWARF has it" for p in dfields if p not in cfields]
    return Comparison(n_structs, n_fields, tuple(mismatches), tuple(one_sided), tuple(not_compared))


def compare(table: Table, dwarf: Union[DwarfInfo, dict]) -> tuple[int, list[str]]:
    """(fields compared, mismatches) between a libclang table and DWARF; see `compare_report`."""
    r = compare_report(table, dwarf)
    return r.fields, list(r.mismatches)


def _qualify_plain(table: Table, structs: dict) -> Table:
    """`table` with every plain name that DWARF shows to mean several layouts in the build (DWARF
    keys it `name@file`: a header's struct and a `.c` file's of the same name) qualified by its
    own file too, so that neither meaning is answered unqualified (qualify.py)."""
    new, names = dict(table.structs), dict(table.names)
    for base in sorted({k.split("@", 1)[0] for k in structs if "@" in k}):
        if base in new:
            s = new.pop(base)
            key = f"{base}@{_file(s)}"
            new[key] = replace(s, name=key)
            names = {a: (key if t == base else t) for a, t in names.items()}
        elif base in names:
            target = names.pop(base)
            names.setdefault(f"{base}@{_file(new[target])}", target)
    if new == table.structs and names == table.names:
        return table
    return replace(table, structs=dict(sorted(new.items())), names=dict(sorted(names.items())))


def fill(table: Table, dwarf: Union[DwarfInfo, dict]) -> Table:
    """`table` plus the structs of the CPython tree that only DWARF has (origin "dwarf"), and
    their other names. Structs of system headers are left out; nothing the table has is changed,
    but a plain name DWARF shows to mean two layouts, which is qualified (`_qualify_plain`)."""
    structs, aliases = _as_info(dwarf, table)
    table = _qualify_plain(table, structs)
    new = dict(table.structs)
    names = dict(table.names)
    for name, s in structs.items():
        if not _in_tree(s) or _counterpart(table, name, s, aliases) is not None:
            continue
        if name in new or name in names:
            continue
        new[name] = s
    for alias, target in aliases.items():
        if target in new and new[target].origin == "dwarf" and target not in table.structs \
                and alias not in new and alias not in names:
            names[alias] = target
    for name, s in structs.items():
        # a typedef a .c file makes of a struct the headers define names that struct: GCState is
        # `struct _gc_runtime_state` (DWARF keys the struct by its first typedef name)
        key = _counterpart(table, name, s, aliases) if _in_tree(s) else None
        if key is not None and "@" not in name and name not in new and name not in names \
                and _file(table.structs[key]) == _file(s):
            names[name] = key
    inputs = dict(table.build.inputs)
    if isinstance(dwarf, DwarfInfo):
        inputs["dwarf"] = dwarf.digest
    build = replace(table.build, inputs=inputs)
    return replace(table, build=build, structs=dict(sorted(new.items())), names=dict(sorted(names.items())))


#: The extension modules whose structs C extensions read (Cython's array support: arrayobject,
#: arraydescr); reviewed by hand: every module's objects would add about 80 KB a table to the package.
EXTENSION_MODULES = ("array",)


def extension_modules(binary, names=EXTENSION_MODULES) -> list:
    """The extension modules `names` built beside the interpreter `binary` (its prefix's
    `lib/python3.X/lib-dynload/NAME.*.so`) that carry DWARF (`names` None: every one)."""
    import re

    path = Path(binary).resolve()
    m = re.search(r"python(\d+\.\d+)", path.name)
    if m is None:
        return []
    folder = path.parent.parent / "lib" / f"python{m.group(1)}" / "lib-dynload"
    found = sorted(folder.glob("*.so")) if folder.is_dir() else []
    return [p for p in found if (names is None or p.name.split(".", 1)[0] in names) and has_dwarf(p)]


def fill_extensions(table: Table, binary, names=EXTENSION_MODULES) -> tuple[Table, int]:
    """`table` plus the `.c` structs of the extension modules `names` built beside `binary`
    (`extension_modules`: arrayobject and arraydescr of the array module), after a cross-check of
    every struct a module and the table both have: (the filled table, fields compared). A name
    that two modules (or a module and the table) use for different structs is only added qualified
    by its file (`module_state@Modules/_bisectmodule.c`)."""
    found: dict = {}            # name -> {file: Struct}
    compared = 0
    for so in extension_modules(binary, names):
        info = read(so)
        n, mismatches = compare(table, info)
        if mismatches:
            raise VerifyError(f"DWARF of {so.name} disagrees with the table on {len(mismatches)} field(s), "
                              f"first: {mismatches[0]}")
        compared += n
        for name, s in info.structs.items():
            if _in_tree(s) and _counterpart(table, name, s, info.names) is None:
                found.setdefault(name.split("@", 1)[0], {}).setdefault(_file(s), s)
    found = _objects_and_theirs(found)
    new, names = dict(table.structs), dict(table.names)
    for name, by_file in sorted(found.items()):
        plain = len(by_file) == 1 and name not in new and name not in names
        for file, s in sorted(by_file.items()):
            key = name if plain else f"{name}@{file}"
            if key not in new and key not in names:
                new[key] = replace(s, name=key)
    return replace(table, structs=dict(sorted(new.items())), names=dict(sorted(names.items()))), compared


def _objects_and_theirs(found: dict) -> dict:
    """Of the extension modules' structs (name -> {file: Struct}), the objects' (a struct whose first
    member is the object header, `ob_base`) and the structs their fields name, in the same file:
    what a C extension reads of them (`arrayobject` and its `arraydescr`), not every library's
    internals (expat's, the hash functions')."""
    import re

    keep: dict = {}
    for name, by_file in found.items():
        for file, s in by_file.items():
            if s.fields and s.fields[0].path == "ob_base" and s.fields[0].offset == 0:
                keep.setdefault(name, {})[file] = s
                for f in s.fields:
                    for word in re.findall(r"\w+", f.type):
                        if word in found and file in found[word]:
                            keep.setdefault(word, {})[file] = found[word][file]
    return keep


def _agreeing(table: Table, binary) -> tuple[DwarfInfo, int]:
    """`binary`'s DWARF and the fields it shares with `table`, all agreeing; else a `VerifyError`."""
    info = read(binary)
    compared, mismatches = compare(table, info)
    if mismatches:
        raise VerifyError(f"DWARF of {Path(binary).name} disagrees with libclang on {len(mismatches)} "
                          f"field(s), first: {mismatches[0]}")
    return info, compared


def checked(table: Table, binary) -> int:
    """The fields of `table` that `binary`'s DWARF checked (every struct both have); any
    disagreement is a `VerifyError`."""
    return _agreeing(table, binary)[1]


def checked_fill(table: Table, binary) -> tuple[Table, int]:
    """`table` filled from `binary`'s DWARF after a cross-check of every struct both have:
    (the filled table, fields compared). Any disagreement is a `VerifyError`: nothing is filled."""
    info, compared = _agreeing(table, binary)
    return fill(table, info), compared
