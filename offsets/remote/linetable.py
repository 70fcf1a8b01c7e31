"""Line numbers from a code object's line table, in each version's own format: the logic of CPython's
`PyCode_Addr2Line` for that version (Objects/codeobject.c), over the table's bytes read from the
process. Addresses are byte offsets into the bytecode, as `PyCode_Addr2Line` takes them.

- 3.8, 3.9 (`co_lnotab`): pairs (bytecode increment, signed line increment);
- 3.10 (`co_linetable`, PEP 626): pairs (bytecode length of the range, signed line delta), -128
  for a range with no line;
- 3.11+ (`co_linetable`, PEP 657's location table): entries whose first byte has bit 7 set, its
  bits 3-6 a code (15: no location; 14: long form; 13: no columns; 10-12: one line, delta 0-2;
  0-9: short form, same line) and bits 0-2 the length in code units minus one, followed by the
  varints of that form.
"""
from __future__ import annotations

#: Bytes per bytecode unit: CPython's wordcode (3.6+) gives every instruction and cache entry two
#: bytes, which line tables and instruction pointers count in (sizeof(_Py_CODEUNIT) where a
#: table has that union, 3.12+).
CODE_UNIT = 2


def lnotab_line(table: bytes, firstlineno: int, address: int) -> int:
    """3.8 and 3.9."""
    line, at = firstlineno, 0
    for i in range(0, len(table) - 1, 2):
        at += table[i]
        if at > address:
            break
        line += table[i + 1] - 256 if table[i + 1] > 127 else table[i + 1]
    return line


def linetable_310_line(table: bytes, firstlineno: int, address: int) -> int:
    """3.10; -1 for an address in a range without a line or past the end."""
    if address < 0:
        return firstlineno
    line, end = firstlineno, 0
    for i in range(0, len(table) - 1, 2):
        start, end = end, end + table[i]
        delta = table[i + 1] - 256 if table[i + 1] > 127 else table[i + 1]
        here = -1
        if delta != -128:
            line += delta
            here = line
        if start <= address < end:
            return here
    return -1


def _varint(table: bytes, i: int) -> tuple:
    read = table[i]
    value, shift, i = read & 63, 0, i + 1
    while read & 64:
        read = table[i]
        i += 1
        shift += 6
        value |= (read & 63) << shift
    return value, i


def _signed_varint(table: bytes, i: int) -> int:
    value, _ = _varint(table, i)
    return -(value >> 1) if value & 1 else value >> 1


def location_line(table: bytes, firstlineno: int, address: int, code_unit: int = CODE_UNIT) -> int:
    """3.11 and later; -1 for an address with no line (or past the end)."""
    if address < 0:
        return firstlineno
    line, end, i, n = firstlineno, 0, 0, len(table)
    while i < n:
        first = table[i]
        if not first & 128:
            raise ValueError(f"location table byte {i} does not start an entry")
        code = (first >> 3) & 15
        if code in (13, 14):
            line += _signed_varint(table, i + 1)
        elif code in (10, 11, 12):
            line += code - 10
        start, end = end, end + ((first & 7) + 1) * code_unit
        if start <= address < end:
            return -1 if code == 15 else line
        i += 1
        while i < n and not table[i] & 128:
            i += 1
    return -1


def line_of(hexversion: int, table: bytes, firstlineno: int, address: int, code_unit: int = CODE_UNIT) -> int:
    """The line of bytecode byte `address` of a code object of CPython `hexversion`."""
    if hexversion >= 0x030B0000:
        return location_line(table, firstlineno, address, code_unit)
    if hexversion >= 0x030A0000:
        return linetable_310_line(table, firstlineno, address)
    return lnotab_line(table, firstlineno, address)
