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
        rva, size = self.data_directory(0)
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

    def data_directory(self, index: int) -> tuple:
        """(RVA, size) of an image's data directory `index` (0 exports, 2 resources, 6 debug), or (0, 0)."""
        if not self.image:
            raise PeError(f"{self.what}: an object file has no data directories")
        (magic,) = self._unpack("<H", self.optional)
        directories = self.optional + (112 if magic == 0x20B else 96)
        (count,) = self._unpack("<I", directories - 4)
        return self._unpack("<II", directories + 8 * index) if index < count else (0, 0)

    @property
    def pointer_size(self) -> int:
        """8 for a PE32+ image (64-bit), 4 for PE32."""
        (magic,) = self._unpack("<H", self.optional)
        return 8 if magic == 0x20B else 4

    def codeview(self) -> Optional[str]:
        """The image's build-id: its CodeView (RSDS) record's GUID and age, as symbol servers key a PDB
        (`codeview`); None without one."""
        return codeview(self.read_rva, *self.data_directory(6))

    def file_version(self) -> Optional[tuple]:
        """The four 16-bit parts of the fixed file version (VS_FIXEDFILEINFO's dwFileVersionMS/LS) of
        the image's version resource, or None without one."""
        rva, size = self.data_directory(2)
        s = next((x for x in self.sections if rva and x.rva <= rva < x.rva + max(x.virtual_size, x.raw_size)), None)
        if s is None:
            return None
        data = self.section_bytes(s)[rva - s.rva:rva - s.rva + size]
        at = data.find(struct.pack("<I", 0xFEEF04BD))
        if at < 0 or at + 16 > len(data):
            return None
        ms, ls = struct.unpack_from("<II", data, at + 8)
        return ms >> 16, ms & 0xFFFF, ls >> 16, ls & 0xFFFF

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


#: The C type of each export the anchors read whose size an export does not carry: `Py_Version` is
#: an `unsigned long`, 4 bytes on Windows.
EXPORT_SIZES = {"Py_Version": 4}


class _Symbol:
    def __init__(self, value: int, size: Optional[int]) -> None:
        self.value, self.size = value, size


class ImageView:
    """A PE image as `anchors.compare_binary` reads a binary: its exports as symbols (their RVA as
    the address) and its file's bytes by RVA."""

    byteorder = "little"

    def __init__(self, coff: Coff) -> None:
        self.coff, self.path = coff, coff.what
        self._exports = coff.exports()

    def symbol(self, name: str):
        rva = self._exports.get(name)
        return None if rva is None else _Symbol(rva, EXPORT_SIZES.get(name))

    def file_bytes(self, rva: int, n: int) -> Optional[bytes]:
        try:
            return self.coff.read_rva(rva, n)
        except PeError:
            return None

    def pointer(self, rva: int) -> Optional[int]:
        """The RVA a pointer stored at `rva` points to (the image's own pointers hold the address at
        its preferred base), or None."""
        raw = self.file_bytes(rva, 8)
        if raw is None:
            return None
        value = int.from_bytes(raw, "little") - self.coff.image_base
        return value if value >= 0 else None

    def string(self, rva: int) -> Optional[str]:
        try:
            return self.coff.rva_string(rva)
        except PeError:
            return None


def codeview(read_rva, rva: int, size: int) -> Optional[str]:
    """The build-id of an image whose debug directory is (`rva`, `size`) and whose bytes at an RVA
    `read_rva(rva, n)` gives (a file's sections, or the image as the loader mapped it): its CodeView
    (RSDS) record's GUID and age, as symbol servers key a PDB (`%08X%04X%04X` of the GUID's first
    three parts, its last 8 bytes in hex, the age in hex); None without one."""
    for i in range(min(size // 28, 64) if rva else 0):
        kind, data_size, data_rva = struct.unpack_from("<12xIIII", read_rva(rva + 28 * i, 28))[:3]
        if kind == 2 and data_size >= 24 and data_rva:          # IMAGE_DEBUG_TYPE_CODEVIEW
            record = read_rva(data_rva, 24)
            if record[:4] == b"RSDS":
                d1, d2, d3 = struct.unpack_from("<IHH", record, 4)
                (age,) = struct.unpack_from("<I", record, 20)
                return f"{d1:08X}{d2:04X}{d3:04X}{record[12:20].hex().upper()}{age:X}"
    return None


def loaded_codeview(read) -> Optional[str]:
    """`codeview` of an image as the loader mapped it, `read(offset, n)` reading from its base: its
    headers, then its debug directory, each read bounded by the image's own size."""
    head = read(0, 1024)
    (pe,) = struct.unpack_from("<I", head, 0x3C)
    if head[:2] != b"MZ" or pe > 1024 - 24 - 112 or head[pe:pe + 4] != b"PE\0\0":
        raise PeError("the loaded image has no PE header")
    optional = pe + 24
    (magic,) = struct.unpack_from("<H", head, optional)
    (image_size,) = struct.unpack_from("<I", head, optional + 56)
    directories = optional + (112 if magic == 0x20B else 96)
    (count,) = struct.unpack_from("<I", head, directories - 4)
    if count <= 6 or directories + 56 > len(head):
        return None
    rva, size = struct.unpack_from("<II", head, directories + 48)

    def read_rva(at: int, n: int) -> bytes:
        if at < 0 or at + n > image_size:
            raise PeError(f"the loaded image has no {n} bytes at RVA {at:#x} (its size: {image_size:#x})")
        return read(at, n)
    return codeview(read_rva, rva, size)


def read(path) -> Coff:
    with open(path, "rb") as fh:
        return Coff(fh.read(), str(path))


def is_coff(head: bytes) -> bool:
    """Whether a file starting with `head` is a PE image or a COFF object of a known machine."""
    return head[:2] == b"MZ" or (len(head) >= 2 and struct.unpack_from("<H", head)[0] in MACHINES)
