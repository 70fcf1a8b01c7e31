"""Which CPython build a process runs, or a binary is: read from the binary itself, never from a
version string someone typed.

- **The binary**: of the files the process maps (`/proc/PID/maps`, read through `/proc/PID/root`,
  so containers work), the one that defines `Py_Initialize`: the executable, a `libpython`, or the
  program a dynamic loader started (`ld-linux ... python3.14`: `/proc/PID/exe` is then the loader).
- **Its GNU build-id**, the strongest identity there is (`elf.py`).
- **The version**: `Py_Version` (3.11+) in the binary; before 3.11, the text `Py_GetVersion()` wrote
  into the binary's data at start-up (`3.10.13 (main, ...`), read in the process; for a bare file,
  `patchlevel.h` of its installed headers or its distributor's package version.
- **Free-threaded and debug**, from what the binary defines: `_Py_MergeZeroLocalRefcount` only
  exists with `Py_GIL_DISABLED`, `_Py_NegativeRefcount` with `Py_REF_DEBUG` (which only
  `--with-pydebug` turns on, with `Py_DEBUG`), `_Py_PrintReferences` with `Py_TRACE_REFS`, the
  statistics functions with `Py_STATS`.
- **CPU and pointer size**: the ELF header.
- **A Windows DLL** (`python313.dll`): the same, from its PE image (`pe_identify.py`).
- **Installed beside it** (`installed.py`): prefix, header digests, the core's defines, the vendor.

`choose.py` then picks the table and says how it is earned.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

from ..errors import NotPython, ProcessError
from . import process_root
from ..layout import identity
from ..layout.build_identity import BuildIdentity
from . import anchors, installed, linked, pe_identify, procfs
from .elf import INTERPRETER_SYMBOL, Elf, ElfError
from .elf_id import is_libpython

#: Symbols only a build with the flag defines (object.c, specialize.c, the free-threaded refcounting).
FLAG_SYMBOLS = {
    "Py_GIL_DISABLED": ("_Py_MergeZeroLocalRefcount",),
    "Py_REF_DEBUG": ("_Py_NegativeRefcount",),
    "Py_TRACE_REFS": ("_Py_PrintReferences",),
    "Py_STATS": ("_Py_StatsClear", "_Py_PrintSpecializationStats", "_py_stats_struct"),
}
#: What a reader needs the address of: the runtime, and the type objects it checks objects against.
NEEDED_SYMBOLS = ("_PyRuntime", "PyCode_Type", "PyUnicode_Type", "PyBytes_Type", "PyDict_Type", "PyGen_Type",
                  "PyCoro_Type", "PyAsyncGen_Type") + tuple(anchors.TYPE_SYMBOLS.values())
#: Files that look like an interpreter binary are looked at first.
LIKELY = re.compile(r"(?:lib)?python\d")
#: `Py_GetVersion()`'s text: the version, a space, the build info in parentheses.
VERSION_TEXT = re.compile(rb"(?<![0-9.])(3\.(\d{1,2})\.\d{1,3}(?:(?:a|b|rc)\d{1,2})?\+?) \(")
#: The most of a binary's writable data searched for that text.
MAX_DATA_SEARCH = 32 << 20


@dataclass
class Identity:
    """A build as read from its binary (and, for a process, its memory)."""

    binary: str                   # as the process sees it (or the file given)
    build_id: Optional[str]
    version: Optional[str]
    hexversion: Optional[int]
    version_from: str
    config: dict
    triple: Optional[str]
    pointer_size: int
    byteorder: str
    pid: Optional[int] = None
    root: str = ""
    bias: int = 0                 # where the binary is loaded in the process (0 for a file)
    prefix: Optional[str] = None
    include: Optional[str] = None
    inputs: Optional[dict] = None
    #: its installed headers, read on demand (identity.InstalledFiles), None when there are none to read
    files: object = None
    #: the whole headers' digests (identity.installed_inputs), computed on demand
    whole_inputs: object = None
    vendor: Optional[str] = None
    vendor_evidence: str = ""
    #: addresses (in the process; in the file for a binary) of what the binary exports that a
    #: reader needs: `_PyRuntime`, the type objects (NEEDED_SYMBOLS)
    symbols: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    #: why there is no build-id, when there is none
    build_id_why: str = ""
    #: the executable given (`of_binary`) whose libpython this is, and where that was found (`linked`)
    loaded_by: Optional[str] = None
    found_by: Optional[str] = None
    #: where the binary is read from, when not `root + binary` (Found.opened)
    opened: str = ""
    #: `elf`, or `pe` for a Windows DLL (pe_identify.py)
    image: str = "elf"

    @property
    def binary_path(self) -> str:
        """The path to open the binary with: `root + binary`, or what the process maps when that file is gone."""
        return self.opened or self.root + self.binary

    @property
    def minor(self) -> Optional[str]:
        return None if self.version is None else ".".join(self.version.split(".")[:2])

    def me(self) -> BuildIdentity:
        """This build in the terms `runtime.earning.earning` compares a table's build with: its
        build-id, its installed headers (`files`, read under its root), their whole digests on demand."""
        return BuildIdentity(self.version, self.hexversion, self.config, self.triple, self.pointer_size, self.vendor,
                             build_id=self.build_id, files=self.files, whole_inputs=self.whole_inputs)

    def keys(self) -> dict:
        """The JSON keys `offsets identify --json` prints for the build (choose.py adds the table)."""
        return {"pid": self.pid, "binary": self.binary, "build_id": self.build_id,
                "build_id_why": self.build_id_why or (None if self.build_id else "the binary has no GNU build-id note"),
                "version": self.version,
                "hexversion": None if self.hexversion is None else f"{self.hexversion:#010x}",
                "version_from": self.version_from, "free_threaded": bool(self.config.get("Py_GIL_DISABLED")),
                "debug": bool(self.config.get("Py_DEBUG")), "config": dict(self.config),
                "target": self.triple, "pointer_size": self.pointer_size, "vendor": self.vendor or identity.UPSTREAM,
                "vendor_evidence": self.vendor_evidence, "prefix": self.prefix, "headers": self.include,
                "loaded_by": self.loaded_by, "found_by": self.found_by}


def hexversion_of(version: str) -> int:
    """`3.13.0rc1` -> 0x030d00c1, as patchlevel.h spells PY_VERSION_HEX."""
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(?:(a|b|rc)(\d+))?\+?", version)
    if m is None:
        raise ValueError(version)
    level = {"a": 0xA, "b": 0xB, "rc": 0xC, None: 0xF}[m.group(4)]
    major, minor, micro = (int(m.group(i)) for i in (1, 2, 3))
    return (major << 24) | (minor << 16) | (micro << 8) | (level << 4) | int(m.group(5) or 0)


def version_of_hex(h: int) -> str:
    level = {0xA: "a", 0xB: "b", 0xC: "rc"}.get((h >> 4) & 0xF)
    return f"{h >> 24}.{(h >> 16) & 0xFF}.{(h >> 8) & 0xFF}" + (f"{level}{h & 0xF}" if level else "")


def config_of(elf: Elf) -> dict:
    """The layout flags the binary's own symbols show (FLAG_SYMBOLS); Py_DEBUG with Py_REF_DEBUG."""
    found = {flag: any(elf.symbol(s) is not None for s in names) for flag, names in FLAG_SYMBOLS.items()}
    found["Py_DEBUG"] = found["Py_REF_DEBUG"]
    return {f: found[f] for f in identity.LAYOUT_FLAGS}


def _minor_from_name(path: str) -> Optional[str]:
    m = re.search(r"python(3\.\d+)", os.path.basename(path))
    return m.group(1) if m else None


# ---------------------------------------------------------------------------------------------
# the binary of a process


@dataclass
class Found:
    """The mapped file holding the interpreter: its path as the process sees it, the open ELF, and
    the address its lowest segment is loaded at minus the segment's own address (the load bias)."""

    path: str
    elf: Elf
    bias: int
    mappings: list
    bss: list       # the anonymous mapping right after its last one: its .bss beyond the file's pages
    #: the other libpythons the process maps (runtime/binary.py's rule): then which file runs the
    #: interpreter is not known from outside, and neither its build-id nor the files beside it vouch
    others: tuple = ()
    #: where it was read: through the process's root, or its /proc/PID/map_files entry when that file
    #: is gone or another (a libpython deleted or replaced by an upgrade under a running service)
    opened: str = ""


def interpreter_of(pid: int) -> Found:
    """The mapped ELF of process `pid` that defines Py_Initialize (NotPython if none does)."""
    maps = procfs.maps(pid)
    by_file: dict = {}
    for m in maps:
        if m.is_file:
            by_file.setdefault((m.path, m.inode), []).append(m)
    order = sorted(by_file, key=lambda k: (not LIKELY.search(os.path.basename(k[0])), k[0]))
    looked = 0
    for key in order:
        mappings = by_file[key]
        first = min(mappings, key=lambda m: m.offset)
        if first.offset != 0:
            continue
        try:
            f = procfs.open_mapped(pid, first)
        except ProcessError:
            if not procfs.exists(pid):
                raise
            continue
        try:
            elf = Elf(root_path(pid, key[0]), f)
        except (ElfError, OSError):
            f.close()
            continue
        looked += 1
        if elf.symbol(INTERPRETER_SYMBOL) is not None:
            end = max(m.end for m in mappings)
            bss = [m for m in maps if m.start == end and not m.path and m.inode == 0]
            others = tuple(sorted({p for p, inode in by_file if (p, inode) != key and is_libpython(p)}))
            return Found(key[0], elf, first.start - elf.first_vaddr(), mappings, bss, others, f.name)
        f.close()
    raise NotPython(f"process {pid} ({procfs.name(pid)}) is not a Python process: none of the {looked} ELF files it "
                    f"maps defines {INTERPRETER_SYMBOL}")


def root_path(pid: int, path: str) -> str:
    return procfs.root(pid) + path


def _version_text(found: Found, memory, minor: Optional[str]) -> Optional[str]:
    """The version at the start of `Py_GetVersion()`'s text in the binary's writable data (filled at
    start-up), read in the process; the one of the binary's minor when its name says it."""
    seen = set()
    for m in found.mappings + found.bss:
        if "w" not in m.perms or m.end - m.start > MAX_DATA_SEARCH:
            continue
        try:
            data = memory.read(m.start, m.end - m.start)
        except ProcessError:
            continue
        seen.update(v.decode() for v, mi in VERSION_TEXT.findall(data)
                    if minor is None or f"3.{mi.decode()}" == minor)
    return seen.pop() if len(seen) == 1 else None


def _patchlevel(root: str, include: Optional[str]) -> Optional[str]:
    if not include:
        return None
    try:
        with open(root + os.path.join(include, "patchlevel.h"), encoding="utf-8", errors="replace") as f:
            m = re.search(r'#define\s+PY_VERSION\s+"([^"]+)"', f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def _identity(found_path: str, elf: Elf, pid: Optional[int], root: str, bias: int, version_text) -> Identity:
    if elf.triple is None:
        raise NotPython(f"{found_path}: a CPython for ELF machine {elf.machine}, which no table is made for")
    config = config_of(elf)
    version, source = None, ""
    sym = elf.symbol("Py_Version")
    if sym is not None and sym.size in (4, 8):
        raw = elf.file_bytes(sym.value, sym.size)
        if raw is not None:
            version, source = version_of_hex(int.from_bytes(raw, elf.byteorder)), "Py_Version"
    minor = _minor_from_name(found_path) or (None if version is None else version.rsplit(".", 1)[0])
    if version is None and version_text is not None:
        version = version_text(minor)
        source = "Py_GetVersion() text in the process" if version else ""
    ident = Identity(binary=found_path, build_id=elf.build_id(), version=version,
                     hexversion=None if version is None else hexversion_of(version), version_from=source,
                     config=config, triple=elf.triple, pointer_size=elf.pointer_size, byteorder=elf.byteorder,
                     pid=pid, root=root, bias=bias)
    for name in NEEDED_SYMBOLS:
        sym = elf.symbol(name)
        if sym is not None:
            ident.symbols[name] = bias + sym.value
    minor = minor or (None if version is None else ident.minor)
    if minor is not None:
        have = installed.describe(root, found_path, minor, config, elf.triple)
        ident.prefix, ident.include, ident.files = have["prefix"], have["include"], have["files"]
        ident.whole_inputs = have["whole_inputs"]
        ident.vendor, ident.vendor_evidence = have["vendor"], have["vendor_evidence"]
        if have["note"]:
            ident.notes.append(have["note"])
        if version is None:
            level = _patchlevel(root, ident.include)
            pkg = re.match(r"\S+ (\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?)", ident.vendor or "")
            version, source = (level, "patchlevel.h of its headers") if level else \
                (pkg.group(1), "its package version") if pkg else (None, "")
            if version:
                ident.version, ident.hexversion, ident.version_from = version, hexversion_of(version), source
    if ident.version is None:
        ident.version_from = "not found (no Py_Version, no version text, no headers or package record)"
    return ident


def of_process(pid: int, memory=None) -> Identity:
    """The build process `pid` runs (`memory`: a `memory.Memory` of it, opened here if not given)."""
    from .memory import Memory

    procfs.check_pid(pid)
    if not procfs.exists(pid):
        raise procfs.gone(pid, started=False)
    found = interpreter_of(pid)
    with found.elf:
        mem = memory or Memory(pid, found.elf.byteorder, found.elf.pointer_size)
        try:
            ident = _identity(found.path, found.elf, pid, procfs.root(pid), found.bias,
                              lambda minor: _version_text(found, mem, minor))
            if found.opened != procfs.root(pid) + found.path:
                ident.opened = found.opened
            if found.others:
                _ambiguous(ident, found)
            return ident
        finally:
            if memory is None:
                mem.close()


def _ambiguous(ident: Identity, found: Found) -> None:
    """Another libpython is mapped beside the file read: no build-id and no installed files vouch for
    the build, only a check in the process's memory (which reads the file chosen) can."""
    ident.build_id_why = f"{found.path} defines {INTERPRETER_SYMBOL}, and {found.others[0]} is mapped too"
    ident.build_id, ident.files, ident.whole_inputs, ident.inputs = None, None, None, None
    ident.notes.append(f"{ident.build_id_why}: which one runs the interpreter is not known from outside, so "
                       "neither one's build-id nor the headers beside it are compared")


def of_binary(path: str) -> Identity:
    """The build of the interpreter binary at `path` (an executable or a libpython)."""
    real = process_root.resolve(path)
    if pe_identify.is_pe(real):
        keys = pe_identify.read(path, real, FLAG_SYMBOLS)
        h = keys["hexversion"]
        return Identity(version=None if h is None else version_of_hex(h), **keys)
    try:
        elf = Elf(real)
    except FileNotFoundError:
        raise NotPython(f"{path}: no such file") from None
    except (ElfError, OSError) as e:
        raise NotPython(f"{path} is not an interpreter binary: {e}") from None
    with elf:
        if elf.symbol(INTERPRETER_SYMBOL) is not None:
            root, seen = process_root.split(real) or ("", real)
            return _identity(seen, elf, None, root, 0, None)
        lib = linked.libpython(real, elf)
    if isinstance(lib, linked.NotFound):
        hint = ""
        if lib.needed:
            hint = (f" (it loads {', '.join(lib.needed)}, found in none of {', '.join(lib.searched)}: give that "
                    f"file, or set LD_LIBRARY_PATH as the program runs with)")
        elif re.search(r"python\d", os.path.basename(real)):
            hint = " (with --enable-shared the interpreter is in its libpython: give that file)"
        raise NotPython(f"{path} does not hold a CPython interpreter: it defines no {INTERPRETER_SYMBOL}{hint}")
    try:
        ident = of_binary(lib.path)
    except NotPython as e:
        raise NotPython(f"{path} loads {lib.path} ({lib.how}), which holds no interpreter either: {e}") from None
    ident.loaded_by, ident.found_by = path, lib.how
    return ident
