"""The named records the runtime reads a table's rows as: a struct, a field, a constant.

Each is a tuple (cheap to make, as a table's reader makes one per row it decodes) whose items also
have names, so no reader counts positions.
"""

#: Offsets and sizes stay below 2 GiB: no CPython struct comes near, and a C `int` holds them.
MAX_BYTES = 2 ** 31 - 1
#: The largest alignment a table may state (a page; CPython's largest is 64).
MAX_ALIGN = 4096


def _item(i: int, doc: str):
    return property(lambda self: self[i], doc=doc)


class FieldRow(tuple):
    """Where a field lies: (offset, size, type, bit_offset, bit_width, array_len, flexible)."""

    __slots__ = ()
    offset = _item(0, "byte offset in its struct")
    size = _item(1, "bytes")
    type = _item(2, "its C type's spelling")
    bit_offset = _item(3, "a bit-field's first bit in its unit, else None")
    bit_width = _item(4, "a bit-field's width in bits, else None")
    array_len = _item(5, "an array's element count, else None")
    flexible = _item(6, "1 for a flexible array member, else 0")


class StructRow(tuple):
    """A struct as one row: (name, kind, size, align, defined_in, origin, fields, c_type); `fields` is
    path -> FieldRow once `Loaded.row` has decoded it, `c_type` None unless the table records it."""

    __slots__ = ()
    name = _item(0, "its key in the table")
    kind = _item(1, "'struct' or 'union'")
    size = _item(2, "sizeof, in bytes")
    align = _item(3, "alignof, in bytes")
    defined_in = _item(4, "FILE:LINE of its definition")
    origin = _item(5, "'clang' or 'dwarf'")
    fields = _item(6, "its fields")

    @property
    def c_type(self):
        """How C names it (`struct _gil_runtime_state`), where the table records it; else None."""
        return self[7] if len(self) > 7 else None


class ConstantRow(tuple):
    """A constant: (name, value, type, size, defined_in, kind)."""

    __slots__ = ()
    name = _item(0, "its name (`NAME@FILE` where several files define it)")
    value = _item(1, "its integer value")
    type = _item(2, "its C integer type, or None for int")
    size = _item(3, "its type's size in bytes")
    defined_in = _item(4, "the file that defines it")
    kind = _item(5, "'macro' or 'enum'")
