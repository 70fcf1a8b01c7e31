"""A table as the proofs read it: struct name -> fields and size, by the table's own name rules,
with what was read collected (`used`), so that a passing check proves exactly that."""
from __future__ import annotations

from ..layout.compact_read import FieldRow

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (the proven path's first lookup)
if TYPE_CHECKING:
    from typing import Callable, Optional


class View:
    """A table as name lookups: `fields(struct)` (path -> rows.FieldRow) and `size(struct)`,
    None where the table has no such struct. `used` collects what was read, for `proven`."""

    def __init__(self, resolve: Callable[[str], Optional[str]], fields: Callable[[str], dict],
                 size: Callable[[str], int]) -> None:
        self._resolve, self._fields, self._size = resolve, fields, size
        self.used: set = set()

    @classmethod
    def of_table(cls, table) -> "View":
        """A `model.Table`."""
        from ..layout.names import aliases, struct_key

        def fields(key):
            return {f.path: FieldRow((f.offset, f.size, f.type, f.bit_offset, f.bit_width, f.array_len, int(f.flexible)))
                    for f in table.structs[key].fields}
        return cls(lambda n: struct_key(n, table.structs, table.names, aliases()), fields,
                   lambda k: table.structs[k].size)

    @classmethod
    def of_loaded(cls, t) -> "View":
        """A runtime `Loaded` table (compact)."""
        return cls(t.resolve_struct, t.fields, t.size)

    def key(self, struct: str) -> Optional[str]:
        return self._resolve(struct)

    def fields(self, struct: str) -> Optional[dict]:
        key = self._resolve(struct)
        return None if key is None else self._fields(key)

    def row(self, struct: str, *paths: str):
        """(path, row) of the first of `paths` the struct has, or None."""
        fields = self.fields(struct)
        for p in paths if fields else ():
            if p in fields:
                self.used.add((self._resolve(struct), p))
                return p, fields[p]
        return None

    def off(self, struct: str, *paths: str) -> Optional[int]:
        found = self.row(struct, *paths)
        return None if found is None else found[1][0]

    def need(self, struct: str, *paths: str) -> tuple:
        """(offset, size) of the first of `paths`; LookupError naming them when the table has none."""
        found = self.row(struct, *paths)
        if found is None:
            raise LookupError(f"{struct}.{'|'.join(paths)} is not in the table")
        return found[1][0], found[1][1]

    def size(self, struct: str) -> Optional[int]:
        key = self._resolve(struct)
        if key is None:
            return None
        self.used.add((key, None))
        return self._size(key)

    def bound(self, struct: str) -> Optional[int]:
        """The struct's size as the table gives it, not collected in `used`: where a check stops
        reading, which it does not prove."""
        key = self._resolve(struct)
        return None if key is None else self._size(key)

    def take_used(self) -> list:
        used, self.used = self.used, set()
        return list(used)
