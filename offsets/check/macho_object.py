"""The data symbols of a Mach-O relocatable object (64-bit, little-endian: what zig cc makes for
macOS on arm64 and x86_64), as the probes read them back (check/probe.py).

A Mach-O symbol has no size: each one's bytes run to the next symbol of its section, or the
section's end. Its name carries a leading `_` (C's `p0` is `_p0`). A zero-fill section has no bytes
in the file: its symbols read as zeros.
"""
from __future__ import annotations

import struct
from pathlib import Path

from ..errors import BuildError

MAGIC_64 = b"\xcf\xfa\xed\xfe"     # MH_MAGIC_64, little-endian
_LC_SEGMENT_64, _LC_SYMTAB = 0x19, 0x2
_N_TYPE, _N_SECT = 0x0E, 0x0E
_ZEROFILL = (0x1, 0xC, 0x12)       # S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL


def is_macho(head: bytes) -> bool:
    """Whether a file starting with `head` is a 64-bit little-endian Mach-O file."""
    return head[:4] == MAGIC_64


def symbol_bytes(path: Path, names) -> dict:
    """C name -> the bytes of each of `names` that the object at `path` defines in a section."""
    data = Path(path).read_bytes()
    if not is_macho(data):
        raise BuildError(f"{path}: not a 64-bit little-endian Mach-O object")
    ncmds, = struct.unpack_from("<I", data, 16)
    sections, symtab, at = [], None, 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == _LC_SEGMENT_64:
            nsects, = struct.unpack_from("<I", data, at + 64)
            for i in range(nsects):
                s = at + 72 + 80 * i
                addr, length, offset = struct.unpack_from("<QQI", data, s + 32)
                flags, = struct.unpack_from("<I", data, s + 64)
                sections.append((addr, length, offset, (flags & 0xFF) in _ZEROFILL))
        elif cmd == _LC_SYMTAB:
            symtab = struct.unpack_from("<IIII", data, at + 8)
        at += size
    if symtab is None:              # an object that defines nothing
        return {}
    symoff, nsyms, stroff, _ = symtab
    syms = {}
    for i in range(nsyms):
        strx, ntype, sect, _, value = struct.unpack_from("<IBBHQ", data, symoff + 16 * i)
        if ntype & _N_TYPE != _N_SECT or not 1 <= sect <= len(sections):
            continue
        end = data.index(b"\0", stroff + strx)
        syms[data[stroff + strx:end].decode(errors="replace")] = (sect - 1, value)
    starts: dict = {}
    for sect, value in syms.values():
        starts.setdefault(sect, set()).add(value)
    out = {}
    for name in names:
        if "_" + name not in syms:
            continue
        sect, value = syms["_" + name]
        addr, length, offset, zerofill = sections[sect]
        end = min([v for v in starts[sect] if v > value] + [addr + length])
        out[name] = bytes(end - value) if zerofill else data[offset + value - addr:offset + end - addr]
    return out
