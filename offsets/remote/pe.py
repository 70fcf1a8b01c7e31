"""Microsoft's object and image files read from their bytes: a COFF object's symbols (what mingw-w64
gcc's probes of a Windows table are read from, check/probe.py) and a PE image's sections and exports
(python.org's `python3X.dll`, checked without running it: tests/prove/).

Only what those two jobs need, from the PE/COFF specification: the COFF file header, the section
table, the symbol table and its string table; a PE image's optional header (its data directories)
and its export directory. Every read is bounds-checked: a short or malformed file is a `PeError`.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional

from ..errors import OffsetsError

class PeError(OffsetsError):
    """A file is not a PE image or COFF object this reader understands, or is damaged."""


#: IMAGE_FILE_MACHINE_* -> the CPU word of a triple
MACHINES = {0x8664: "x86_64", 0xAA64: "aarch64", 0x14C: "i686"}
_SECTION = struct.Struct("<8sIIIIIIHHI")
_SYMBOL = struct.Struct("<8sIhHBB")


@dataclass(frozen=True)
class Section:
    name: str
    virtual_size: int
    rva: int
    raw_size: int
    raw_offset: int


class Coff:
    """A COFF object (`gcc -c` for a Windows target) or a PE image (`python313.dll`)."""

    def __init__(self, data: bytes, what: str = "file") -> None:
        self.data, self.what = data, what
        start = 0
        if data[:2] == b"MZ":               # an image: the PE signature's offset is at 0x3c
            (pe,) = self._unpack("<I", 0x3C)
            if data[pe:pe + 4] != b"PE\0\0":
                raise PeError(f"{what}: an MZ file without a PE signature")
            start = pe + 4
        self.image = start != 0
        self.machine, nsections, _, self.symtab, self.nsymbols, opt_size, _ = self._unpack("<HHIIIHH", start)
        self.optional = start + 20
        table = self.optional + opt_size
        self.sections = []
        for i in range(nsections):
            name, vsize, rva, raw_size, raw_offset, *_ = self._unpack(_SECTION, table + 40 * i)
            self.sections.append(Section(self._section_name(name), vsize, rva, raw_size, raw_offset))

    def _unpack(self, fmt, at: int) -> tuple:
        s = fmt if isinstance(fmt, struct.Struct) else struct.Struct(fmt)
        if at < 0 or at + s.size > len(self.data):
            raise PeError(f"{self.what}: truncated (needs {s.size} bytes at {at:#x}, has {len(self.data)})")
        return s.unpack_from(self.data, at)

    def _string(self, at: int) -> str:
        end = self.data.find(b"\0", at)
        if at >= len(self.data) or end < 0:
            raise PeError(f"{self.what}: a name at {at:#x} runs past the end")
        return self.data[at:end].decode("latin-1")

    def _section_name(self, raw: bytes) -> str:
        name = raw.rstrip(b"\0").decode("latin-1")
        if name.startswith("/") and name[1:].isdigit() and self.symtab:   # a long name in the string table
            return self._string(self.symtab + _SYMBOL.size * self.nsymbols + int(name[1:]))
        return name

    @property
    def cpu(self) -> Optional[str]:
        return MACHINES.get(self.machine)

    def section(self, name: str) -> Optional[Section]:
        return next((s for s in self.sections if s.name == name), None)

    def section_bytes(self, s: Section) -> bytes:
        if s.raw_offset + s.raw_size > len(self.data):
            raise PeError(f"{self.what}: section {s.name} runs past the end of the file")
        return self.data[s.raw_offset:s.raw_offset + s.raw_size]

    # an object's symbols

    def symbols(self) -> dict:
        """name -> (section index from 0, value) of each symbol defined in a section."""
        out, i = {}, 0
        strings = self.symtab + _SYMBOL.size * self.nsymbols
        while i < self.nsymbols:
            raw, value, number, _, _, naux = self._unpack(_SYMBOL, self.symtab + _SYMBOL.size * i)
            name = self._string(strings + struct.unpack_from("<I", raw, 4)[0]) if raw[:4] == b"\0\0\0\0" \
                else raw.rstrip(b"\0").decode("latin-1")
            if number > 0:
                out[name] = (number - 1, value)
            i += 1 + naux
        return out

    def symbol_bytes(self, names) -> dict:
        """The bytes of each named data symbol of an object, from its value to the next symbol of its
        section or the section's end (COFF symbols carry no size; the probes are compiled with
        `-fdata-sections`, a section each)."""
        syms = self.symbols()
        starts: dict = {}
        for sec, value in syms.values():
            starts.setdefault(sec, set()).add(value)
        out = {}
        for name in names:
            if name not in syms:
                continue
            sec, value = syms[name]
            if sec >= len(self.sections):
                raise PeError(f"{self.what}: symbol {name} is in section {sec + 1}, which does not exist")
            s = self.sections[sec]
            end = min([v for v in starts[sec] if v > value] + [s.raw_size])
            out[name] = self.section_bytes(s)[value:end]
        return out

    # an image's data

    def read_rva(self, rva: int, size: int) -> bytes:
        """`size` bytes of the image at relative virtual address `rva` (zeros past a section's file data)."""
        for s in self.sections:
            if s.rva <= rva and rva + size <= s.rva + max(s.virtual_size, s.raw_size):
                data = self.section_bytes(s)[rva - s.rva:rva - s.rva + size]
                return data + bytes(size - len(data))
        raise PeError(f"{self.what}: no section holds {size} bytes at RVA {rva:#x}")

    def exports(self) -> dict:
        """name -> RVA of each export of an image (forwarders included as their RVA)."""
        if not self.image:
            raise PeError(f"{self.what}: an object file has no exports")
        (magic,) = self._unpack("<H", self.optional)
        directories = self.optional + (112 if magic == 0x20B else 96)
        rva, size = self._unpack("<II", directories)
        if not rva:
            return {}
        d = self.read_rva(rva, 40)
        _, _, _, _, _, _, nfunctions, nnames, functions, names, ordinals = struct.unpack("<IIHHIIIIIII", d)
        out = {}
        for i in range(nnames):
            (name_rva,) = struct.unpack("<I", self.read_rva(names + 4 * i, 4))
            (ordinal,) = struct.unpack("<H", self.read_rva(ordinals + 2 * i, 2))
            if ordinal >= nfunctions:
                raise PeError(f"{self.what}: export {i} has ordinal {ordinal} of {nfunctions}")
            (func,) = struct.unpack("<I", self.read_rva(functions + 4 * ordinal, 4))
            out[self.rva_string(name_rva)] = func
        return out

    @property
    def image_base(self) -> int:
        """The address an image prefers to be loaded at (its own pointers hold addresses there)."""
        (magic,) = self._unpack("<H", self.optional)
        return self._unpack("<Q", self.optional + 24)[0] if magic == 0x20B else self._unpack("<I", self.optional + 28)[0]

    def rva_string(self, rva: int) -> str:
        for s in self.sections:
            if s.rva <= rva < s.rva + s.raw_size:
                data = self.section_bytes(s)
                end = data.find(b"\0", rva - s.rva)
                if end >= 0:
                    return data[rva - s.rva:end].decode("latin-1")
        raise PeError(f"{self.what}: no name at RVA {rva:#x}")


def read(path) -> Coff:
    with open(path, "rb") as fh:
        return Coff(fh.read(), str(path))


def is_coff(head: bytes) -> bool:
    """Whether a file starting with `head` is a PE image or a COFF object of a known machine."""
    return head[:2] == b"MZ" or (len(head) >= 2 and struct.unpack_from("<H", head)[0] in MACHINES)
