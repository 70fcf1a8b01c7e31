"""ELF files with the standard library only: the header, segments, GNU build-id, symbols, and the
bytes of a virtual address as the file holds them.

Profilers run this inside their own environments, so it needs neither pyelftools nor a compiler.
Only what identifying a CPython and reading its memory needs is read, and every count and offset
taken from the file is checked against the file's size before it is used (a damaged or hostile
file is an `ElfError`, never a huge read).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Optional

from ..errors import OffsetsError
from ..regular_file import open_regular
from ..layout import identity, targets
from . import elf_id

#: ELF machine numbers -> the triple tables name that CPU by (layout/targets.py).
MACHINES = {targets.abi(t).elf_number: t for t in targets.ELF_TARGETS}
PT_LOAD, PT_DYNAMIC, PT_NOTE = 1, 2, 4
#: The dynamic section's tags `linked_names` reads: libraries needed, library search paths, the strings.
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 15, 29
SHT_SYMTAB, SHT_DYNSYM = 2, 11
STT_OBJECT, STT_FUNC = 1, 2
#: A function every CPython's interpreter binary defines (the executable, or its libpython), and no
#: other binary does: how the binary holding the interpreter is told from the others.
INTERPRETER_SYMBOL = "Py_Initialize"
#: The most of a file read for symbols (a debug libpython's .symtab is a few MB).
MAX_TABLE_BYTES = 64 << 20


class ElfError(OffsetsError):
    """A file is not an ELF this reader understands, or is damaged."""


@dataclass(frozen=True)
class Segment:
    """A PT_LOAD segment: file bytes [offset, offset+filesz) at [vaddr, vaddr+memsz)."""

    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: int


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    kind: int       # STT_OBJECT 1, STT_FUNC 2, ...
    defined: bool


class Elf:
    """One ELF file, read on demand. `path` is only for messages when `f` (an open binary file) is given."""

    def __init__(self, path: str, f=None) -> None:
        self.path = path
        self._f = f if f is not None else open_regular(path)
        self._owned = f is None
        try:
            self.size = os.fstat(self._f.fileno()).st_size
            self._header()
        except BaseException:
            self.close()
            raise
        self._symbols: Optional[dict] = None
        self._triple: Optional[str] = None

    def close(self) -> None:
        if self._owned:
            self._f.close()

    def __enter__(self) -> "Elf":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ raw reads
    def read(self, offset: int, n: int) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.size:
            raise ElfError(f"{self.path}: {n} bytes at file offset {offset:#x} lie outside the file "
                           f"({self.size} bytes)")
        self._f.seek(offset)
        data = self._f.read(n)
        if len(data) != n:
            raise ElfError(f"{self.path}: short read at {offset:#x}")
        return data

    def _header(self) -> None:
        ident = self.read(0, 16) if self.size >= 16 else b""
        if ident[:4] != b"\x7fELF":
            raise ElfError(f"{self.path} is not an ELF file")
        if ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ElfError(f"{self.path}: unknown ELF class {ident[4]} or data encoding {ident[5]}")
        self.bits = 64 if ident[4] == 2 else 32
        self.pointer_size = self.bits // 8
        self.endian = "<" if ident[5] == 1 else ">"
        self.byteorder = "little" if ident[5] == 1 else "big"
        e = self.endian
        if self.bits == 64:
            (self.type, self.machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum,
             shstrndx) = struct.unpack(e + "HHIQQQIHHHHHH", self.read(16, 48))
        else:
            (self.type, self.machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum,
             shstrndx) = struct.unpack(e + "HHIIIIIHHHHHH", self.read(16, 36))
        self.segments, self.notes_at = [], []
        self.dynamic = None
        pfmt = e + ("IIQQQQQQ" if self.bits == 64 else "IIIIIIII")
        if phnum and phentsize < struct.calcsize(pfmt):
            raise ElfError(f"{self.path}: program headers of {phentsize} bytes are too small")
        for i in range(phnum):
            raw = struct.unpack(pfmt, self.read(phoff + i * phentsize, struct.calcsize(pfmt)))
            if self.bits == 64:
                ptype, flags, offset, vaddr, _, filesz, memsz, _ = raw
            else:
                ptype, offset, vaddr, _, filesz, memsz, flags, _ = raw
            if ptype == PT_LOAD:
                self.segments.append(Segment(offset, vaddr, filesz, memsz, flags))
            elif ptype == PT_NOTE:
                self.notes_at.append((offset, filesz))
            elif ptype == PT_DYNAMIC:
                self.dynamic = (offset, filesz)
        self.sections = []
        sfmt = e + ("IIQQQQIIQQ" if self.bits == 64 else "IIIIIIIIII")
        if shnum and shoff and shentsize >= struct.calcsize(sfmt) and shoff + shnum * shentsize <= self.size:
            for i in range(shnum):
                name, stype, _, addr, offset, size, link, _, _, entsize = \
                    struct.unpack(sfmt, self.read(shoff + i * shentsize, struct.calcsize(sfmt)))
                self.sections.append((stype, offset, size, link, entsize, addr))

    @property
    def triple(self) -> Optional[str]:
        """The target triple tables use for this CPU and C library (None: a CPU no table is made
        for): a Linux binary that does not need glibc's `libc.so.6` is not glibc's (`links_glibc`)."""
        t = MACHINES.get(self.machine)
        if t is not None and self._triple is None:
            self._triple = identity.with_c_library(t, self.links_glibc())     # its dynamic section, read once
        return t and self._triple

    # ------------------------------------------------------------------ the GNU build-id
    def build_id(self) -> Optional[str]:
        """The GNU build-id (hex), from the PT_NOTE segments (present in stripped files too)."""
        for offset, size in self.notes_at:
            if size <= elf_id.MAX_NOTES:
                found = elf_id.build_id_in_notes(self.read(offset, size), self.endian)
                if found:
                    return found
        return None

    # ------------------------------------------------------------------ symbols
    def symbols(self) -> dict:
        """name -> Symbol, of .dynsym and (when the file has one) .symtab; a defined symbol wins."""
        if self._symbols is None:
            found: dict = {}
            for stype in (SHT_DYNSYM, SHT_SYMTAB):
                for sec in self.sections:
                    if sec[0] == stype:
                        self._read_symtab(sec, found)
            self._symbols = found
        return self._symbols

    def _read_symtab(self, sec: tuple, found: dict) -> None:
        _, offset, size, link, entsize, _ = sec
        if not 0 <= link < len(self.sections):
            return
        str_off, str_size = self.sections[link][1], self.sections[link][2]
        if size > MAX_TABLE_BYTES or str_size > MAX_TABLE_BYTES:
            raise ElfError(f"{self.path}: a symbol table of {size} bytes is larger than this reader takes")
        fmt = self.endian + ("IBBHQQ" if self.bits == 64 else "IIIBBH")
        width = struct.calcsize(fmt)
        if entsize < width:
            return
        data, names = self.read(offset, size), self.read(str_off, str_size)
        for at in range(0, len(data) - width + 1, entsize):
            raw = struct.unpack_from(fmt, data, at)
            if self.bits == 64:
                name_off, info, _, shndx, value, sym_size = raw
            else:
                name_off, value, sym_size, info, _, shndx = raw
            if not name_off or name_off >= len(names):
                continue
            end = names.find(b"\0", name_off)
            name = names[name_off:end if end >= 0 else len(names)].decode("ascii", "replace")
            sym = Symbol(name, value, sym_size, info & 0xF, shndx != 0)
            old = found.get(name)
            if old is None or (sym.defined and not old.defined):
                found[name] = sym

    def functions(self, names) -> dict:
        """name -> value of each of `names` that .dynsym and .symtab define as a function of one value
        (static functions too; a name two symbols give different values, as two files' static
        functions of one name may be, is left out)."""
        return self.defined(names, STT_FUNC)

    def defined(self, names, kind: int) -> dict:
        """name -> value of each of `names` that .dynsym and .symtab define as a symbol of `kind`
        (STT_FUNC, STT_OBJECT) of one value, static ones too. Reads only the entries that carry
        those names: a string table's tail may hold a name inside a longer one, so every place it
        ends is tried."""
        values: dict = {}
        fmt = self.endian + ("IBBHQQ" if self.bits == 64 else "IIIBBH")
        width = struct.calcsize(fmt)
        for sec in self.sections:
            stype, offset, size, link, entsize, _ = sec
            if stype not in (SHT_DYNSYM, SHT_SYMTAB) or entsize < width or not 0 <= link < len(self.sections):
                continue
            str_off, str_size = self.sections[link][1], self.sections[link][2]
            if size > MAX_TABLE_BYTES or str_size > MAX_TABLE_BYTES:
                raise ElfError(f"{self.path}: a symbol table of {size} bytes is larger than this reader takes")
            data, strings = self.read(offset, size), self.read(str_off, str_size)
            for name in names:
                raw = name.encode() + b"\0"
                at = strings.find(raw)
                while at >= 0:
                    key = struct.pack(self.endian + "I", at)
                    hit = data.find(key)
                    while hit >= 0:
                        if hit % entsize == 0 and hit + width <= len(data):
                            entry = struct.unpack_from(fmt, data, hit)
                            if self.bits == 64:
                                _, info, _, shndx, value, _ = entry
                            else:
                                _, value, _, info, _, shndx = entry
                            if shndx != 0 and info & 0xF == kind:       # defined, of that kind
                                values.setdefault(name, set()).add(value)
                        hit = data.find(key, hit + 1)
                    at = strings.find(raw, at + 1)
        return {n: v.pop() for n, v in values.items() if len(v) == 1}

    def symbol(self, name: str) -> Optional[Symbol]:
        """The defined symbol `name`, or None."""
        s = self.symbols().get(name)
        return s if s is not None and s.defined else None

    # ------------------------------------------------------------------ the dynamic section
    def linked_names(self) -> dict:
        """The dynamic section's DT_NEEDED, DT_RPATH and DT_RUNPATH strings, tag -> [string] in order
        ({} for a file without one, or whose section or string table lies outside the file)."""
        if self.dynamic is None or self.dynamic[1] > MAX_TABLE_BYTES:
            return {}
        fmt = self.endian + ("qQ" if self.bits == 64 else "iI")
        step = struct.calcsize(fmt)
        raw = self.read(self.dynamic[0], self.dynamic[1])
        entries = []
        for at in range(0, len(raw) - step + 1, step):
            tag, value = struct.unpack_from(fmt, raw, at)
            if tag == DT_NULL:
                break
            entries.append((tag, value))
        table = dict((t, v) for t, v in entries if t in (DT_STRTAB, DT_STRSZ))
        if DT_STRTAB not in table or not 0 < table.get(DT_STRSZ, 0) <= MAX_TABLE_BYTES:
            return {}
        strings = self.file_bytes(table[DT_STRTAB], table[DT_STRSZ])
        if strings is None:
            return {}
        out: dict = {}
        for tag, value in entries:
            if tag in (DT_NEEDED, DT_RPATH, DT_RUNPATH) and value < len(strings):
                end = strings.find(b"\0", value)
                out.setdefault(tag, []).append(strings[value:end if end >= 0 else None].decode(errors="replace"))
        return out

    def links_glibc(self) -> bool:
        """Whether this file needs glibc (`libc.so.6`, the soname of every glibc since 2.0): Alpine's
        musl is `libc.musl-<cpu>.so.1`, and a static binary (zig's musl ones) needs none, so its C
        library is not known to be glibc (`identity.with_c_library`)."""
        return "libc.so.6" in self.linked_names().get(DT_NEEDED, [])

    # ------------------------------------------------------------------ bytes at virtual addresses
    def file_bytes(self, vaddr: int, n: int) -> Optional[bytes]:
        """The `n` bytes the file gives the image at `vaddr` (zeros past a segment's file part: .bss),
        or None when `vaddr` is in no segment. Pointers in them are not relocated."""
        for s in self.segments:
            if s.vaddr <= vaddr and vaddr + n <= s.vaddr + s.memsz:
                start = vaddr - s.vaddr
                have = max(0, min(n, s.filesz - start))
                return (self.read(s.offset + start, have) if have else b"") + b"\0" * (n - have)
        return None

    def first_vaddr(self) -> int:
        """The lowest address the file's segments load at (0 for a shared object or a PIE)."""
        return min((s.vaddr for s in self.segments), default=0) & ~0xFFF

    def rodata_strings(self, pattern) -> list:
        """Every match of the compiled bytes regex `pattern` in the file's read-only loaded segments
        (flags without PF_W), as bytes; for version strings."""
        out = []
        for s in self.segments:
            if s.flags & 2 or s.filesz > MAX_TABLE_BYTES * 2:
                continue
            out += pattern.findall(self.read(s.offset, s.filesz))
        return out


def build_id_of(path: str) -> Optional[str]:
    """The GNU build-id of the ELF file at `path` (hex), or None when it has none."""
    with Elf(path) as f:
        return f.build_id()
