"""An ELF image's GNU build-id, from its header, program headers and notes, through a reader of
either its file (file offsets) or its loaded image (addresses): `elf.py` reads files with it, the
runtime its own process's libpython (runtime/binary.py). Standard library only, and light: every
process that loads a JIT may read its build-id at its first lookup.
"""
import os
import struct

PT_LOAD, PT_NOTE = 1, 4
NT_GNU_BUILD_ID = 3
#: The most program headers and note bytes read (a damaged header is refused, never a huge read).
MAX_PHNUM, MAX_NOTES = 256, 1 << 16


def is_libpython(path: str) -> bool:
    """Whether a file is named as a libpython is (`libpython3.13.so.1.0`, `libpython3.14t.so`): a
    second one mapped beside the interpreter's binary makes it ambiguous, in process
    (runtime/binary.py) and out (remote/identify.py). (No `re`: it costs every process that loads a
    JIT milliseconds to import.)"""
    name = os.path.basename(path)
    return name.startswith("libpython") and name[9:10].isdigit() and ".so" in name


def header(data: bytes):
    """(bits, endian, e_phoff, e_phentsize, e_phnum) of an ELF header's first 64 bytes, or None."""
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    bits, e = (64 if data[4] == 2 else 32), ("<" if data[5] == 1 else ">")
    if bits == 64:
        if len(data) < 64:
            return None
        phoff, = struct.unpack_from(e + "Q", data, 32)
        phentsize, phnum = struct.unpack_from(e + "HH", data, 54)
    else:
        phoff, = struct.unpack_from(e + "I", data, 28)
        phentsize, phnum = struct.unpack_from(e + "HH", data, 42)
    return bits, e, phoff, phentsize, phnum


def program_headers(hdr, data: bytes) -> list:
    """(type, flags, offset, vaddr, filesz, memsz) of each program header in `data`, the bytes at
    e_phoff (`hdr`: `header`'s answer)."""
    bits, e, _, size, n = hdr
    fmt = e + ("IIQQQQQQ" if bits == 64 else "IIIIIIII")
    if n > MAX_PHNUM or (n and size < struct.calcsize(fmt)) or len(data) < n * size:
        return []
    out = []
    for i in range(n):
        raw = struct.unpack_from(fmt, data, i * size)
        if bits == 64:
            ptype, flags, offset, vaddr, _, filesz, memsz, _ = raw
        else:
            ptype, offset, vaddr, _, filesz, memsz, flags, _ = raw
        out.append((ptype, flags, offset, vaddr, filesz, memsz))
    return out


def build_id_in_notes(data: bytes, endian: str):
    """The GNU build-id (hex) among the notes `data` holds, or None."""
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from(endian + "III", data, at)
        name_end = at + 12 + namesz
        desc = (name_end + 3) & ~3
        if desc + descsz > len(data):
            return None
        if ntype == NT_GNU_BUILD_ID and data[at + 12:name_end].rstrip(b"\0") == b"GNU":
            return data[desc:desc + descsz].hex() or None
        at = (desc + descsz + 3) & ~3
    return None


def build_id(read, loaded: bool):
    """The GNU build-id of the image `read(where, n)` gives: its file (`where`: file offsets), or,
    `loaded`, the image as loaded (`where`: addresses from its lowest segment's page, which is the
    start of the file in every image a linker makes). None when there is none, or it cannot be read."""
    hdr = header(read(0, 64))
    if hdr is None:
        return None
    phdrs = program_headers(hdr, read(hdr[2], hdr[3] * hdr[4]))
    loads = [p for p in phdrs if p[0] == PT_LOAD]
    base = min((p[3] for p in loads), default=0) & ~0xFFF
    for ptype, _, offset, vaddr, filesz, _ in phdrs:
        if ptype == PT_NOTE and 0 < filesz <= MAX_NOTES:
            found = build_id_in_notes(read(vaddr - base if loaded else offset, filesz), hdr[1])
            if found:
                return found
    return None
