"""Typed reads of another process's memory through a table: a struct's field at an address, the
type of an object, a `str`, a `bytes`; each object checked against the type object the binary
exports (an address the table did not give), so a torn read or a wrong table is an error, never a
made-up name.

`earned` (a table's `Loaded.earned`) makes every field read one the table has earned for this
build: a proven table answers only what the check in the process read.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..errors import NoMatchingTable, NotInTable, RemoteReadError
from .anchors import View

#: The most characters read of one str (a file name or a function name).
MAX_STR = 4096


class Reader:
    """`memory` (memory.Memory) read through `table` (runtime.tables.Loaded); `symbols`: name ->
    address in the process of what the binary exports (identify's `Identity.symbols`)."""

    def __init__(self, memory, table, symbols: dict, earned: Optional[Callable] = None) -> None:
        self.mem, self.t, self.symbols = memory, table, symbols
        self.view = View.of_loaded(table)
        self._earned = earned
        self.psize = memory.pointer_size
        self._cache: dict = {}

    # ------------------------------------------------------------------ the table
    def _cached(self, key: tuple, look, what: str):
        """`look()` (a lookup through the view, None when the table lacks it), remembered with what it
        used, which is recorded again on every later use; refused unless earned."""
        got = self._cache.get(key)
        if got is None:
            before, self.view.used = self.view.used, set()
            try:
                found = look()
            finally:
                used, self.view.used = list(self.view.used), before | self.view.used
            if found is None:
                raise NotInTable(f"{what} is not in table {self.t.name}")
            self._check_earned(used, what)
            got = self._cache[key] = (found, used)
        else:
            self.view.used.update(got[1])
        return got[0]

    def _row(self, struct: str, paths: tuple):
        return self._cached((struct, paths), lambda: self.view.row(struct, *paths), f"{struct}.{'|'.join(paths)}")

    def _check_earned(self, used: list, what: str) -> None:
        if self._earned is None:
            return
        for k, p in used:
            if self._earned(k, p) is None:
                raise NoMatchingTable(f"{what}: not answered: table {self.t.name} is not exactly this build's and the "
                                      f"check in the process did not read it")

    def has(self, struct: str, *paths: str) -> bool:
        """Whether the table has one of `paths` in `struct` (nothing is read or recorded)."""
        found = self.view.row(struct, *paths)
        self.view.take_used()
        return found is not None

    def offset(self, struct: str, *paths: str) -> int:
        return self._row(struct, paths)[1][0]

    def size(self, struct: str) -> int:
        return self._cached(("sizeof", struct), lambda: self.view.size(struct), f"sizeof({struct})")

    def take_used(self) -> list:
        return self.view.take_used()

    # ------------------------------------------------------------------ memory
    def field(self, address: int, struct: str, *paths: str, signed: bool = False) -> int:
        """The integer value of the first of `paths` the struct has, at the object at `address`."""
        path, row = self._row(struct, paths)
        offset, size, _type, bit_offset, bit_width = row[:5]
        if size not in (1, 2, 4, 8):
            raise NotInTable(f"{struct}.{path} is {size} bytes, not an integer")
        value = self.mem.uint(address + offset, size)
        if bit_width is not None:
            return (value >> bit_offset) & ((1 << bit_width) - 1)
        if signed and value >> (8 * size - 1):
            value -= 1 << (8 * size)
        return value

    def pointer(self, address: int, struct: str, *paths: str) -> int:
        return self.field(address, struct, *paths)

    def symbol(self, name: str) -> int:
        address = self.symbols.get(name)
        if not address:
            raise NotInTable(f"the binary exports no {name}")
        return address

    def ob_type(self, address: int) -> int:
        return self.field(address, "PyObject", "ob_type")

    def is_a(self, address: int, type_symbol: str) -> bool:
        return bool(address) and self.ob_type(address) == self.symbol(type_symbol)

    def expect_type(self, address: int, type_symbol: str, what: str) -> None:
        """RemoteReadError unless the object at `address` is of the type the binary exports as `type_symbol`."""
        if not address:
            raise RemoteReadError(f"{what} is NULL")
        got = self.ob_type(address)
        if got != self.symbol(type_symbol):
            raise RemoteReadError(f"{what} at {address:#x} is not a {type_symbol} object (its type is at {got:#x}, "
                                  f"{type_symbol} at {self.symbol(type_symbol):#x}): the process changed while being "
                                  f"read, or the table does not describe it")

    def bytes_of(self, address: int, what: str, limit: int = 1 << 20) -> bytes:
        """The contents of the `bytes` object at `address`."""
        self.expect_type(address, "PyBytes_Type", what)
        n = self.field(address, "PyBytesObject", "ob_base.ob_size", "ob_size", signed=True)
        if not 0 <= n <= limit:
            raise RemoteReadError(f"{what}: a bytes object of {n} bytes")
        return self.mem.read(address + self.offset("PyBytesObject", "ob_sval"), n) if n else b""

    def str_of(self, address: int, what: str) -> str:
        """The value of the compact `str` at `address` (names and file names always are)."""
        self.expect_type(address, "PyUnicode_Type", what)
        length = self.field(address, "PyASCIIObject", "length", signed=True)
        if not 0 <= length <= MAX_STR:
            raise RemoteReadError(f"{what}: a str of {length} characters")
        if not self.field(address, "PyASCIIObject", "state.compact"):
            raise RemoteReadError(f"{what}: not a compact str")
        if self.field(address, "PyASCIIObject", "state.ascii"):
            data = address + self.size("PyASCIIObject")
            return self.mem.read(data, length).decode("ascii", "replace") if length else ""
        kind = self.field(address, "PyASCIIObject", "state.kind")
        width = self.char_width(kind)
        data = address + self.size("PyCompactUnicodeObject")
        raw = self.mem.read(data, length * width) if length else b""
        codec = {1: "latin-1", 2: "utf-16-le" if self.mem.byteorder == "little" else "utf-16-be",
                 4: "utf-32-le" if self.mem.byteorder == "little" else "utf-32-be"}[width]
        return raw.decode(codec, "replace")

    def constant(self, name: str):
        """The value of an enumerator or integer macro of the build (the table's constants, through
        `runtime.constants`), or None where the table has no such constant; refused like a field
        when the table has not earned it."""
        from ..runtime import constants as known

        try:
            table, row = known.find(self.t, name)
        except KeyError:
            return None
        if self._earned is not None and known.earned(table, row) is None:
            raise NoMatchingTable(f"{name}: not answered: table {self.t.name} is not exactly this build's and the "
                                  f"check in the process did not see this constant")
        return row.value

    def char_width(self, kind: int) -> int:
        """Bytes per character of a str of `kind`: the build's `PyUnicode_1BYTE_KIND` ... constants."""
        for name, width in (("PyUnicode_1BYTE_KIND", 1), ("PyUnicode_2BYTE_KIND", 2), ("PyUnicode_4BYTE_KIND", 4)):
            value = self.constant(name)
            if value is not None and value == kind:
                return width
        raise NotInTable(f"str kind {kind}: table {self.t.name} has no PyUnicode_*_KIND constants to read it by")
