"""What the bits mean in the running interpreter: its integer constants, earned like its offsets.

    offsets.constant("FRAME_OWNED_BY_CSTACK")        # 3 on 3.13, 4 on 3.14
    offsets.constant_info("Py_TPFLAGS_HEAPTYPE")     # value, C type, size, signedness, where, earned

A constant is answered **exact** under the rule of structs (earning.py: by build-id; by the set of
its header, one of pyconfig.h by its own value there; by package), or **proven**
when the live check of constants (`live/constants.py`, which the runtime hands in: `opcode.opmap`, `dis`'s compiler flags and
cache sizes, `sys.int_info`, built-in types' `__flags__`, a generator's frame owner read through
the table) saw this very value in this process; otherwise it is refused. `constant` is the
`__getitem__` of a dict filled on demand, as `get` is.
"""
from __future__ import annotations

from ..errors import AmbiguousNameError, NoMatchingTable, UnknownNameError, close_matches

#: What the live check of constants marks as proven: (PROVEN, name).
PROVEN = "#constant"


class EarnedConstant:
    """A constant as the runtime answers it (a plain class: the way to an answer imports no
    dataclasses, which every process that loads a JIT would pay for)."""

    __slots__ = ("name", "value", "type", "size", "defined_in", "kind", "earned")

    def __init__(self, name: str, value: int, type: str, size: int, defined_in: str, kind: str, earned: str):
        self.name, self.value, self.type, self.size = name, value, type, size    # type: C's (int, unsigned long...)
        self.defined_in, self.kind, self.earned = defined_in, kind, earned      # the file in effect; macro or enum

    @property
    def signed(self) -> "bool | None":
        """Whether its type is signed; None for plain `char` (the target's)."""
        from ..layout.compact_read import INTEGER_TYPES

        return INTEGER_TYPES[self.type]

    def _tuple(self) -> tuple:
        return tuple(getattr(self, k) for k in self.__slots__)

    def __eq__(self, other) -> bool:
        return isinstance(other, EarnedConstant) and self._tuple() == other._tuple()

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __repr__(self) -> str:
        return "EarnedConstant(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


def of(t) -> dict:
    """A loaded table's constants: name -> rows.ConstantRow, decoded and checked once (kept on the table)."""
    got = t._constants
    if got is None:
        rows = t.pool.constants(t.head.get("constants"), t.head.get("constant_sizes") or {})
        got = t._constants = {row.name: row for row in rows}
    return got


def _qualified(t) -> frozenset:
    """The names of `t`'s constants that have qualified forms only (`NAME@FILE`), found once (kept
    on the table): the names `find` looks for them under."""
    got = t._qualified_constants
    if got is None:
        got = t._qualified_constants = frozenset(k.split("@", 1)[0] for k in of(t) if "@" in k)
    return got


def earned(t, row, check=None) -> "str | None":
    """'exact', 'proven' or None for a constant row of table `t`; `check(t)` proves its constants
    when no proof of them is kept (the runtime hands the live check of constants)."""
    if t.earning.constant(t, row):
        return "exact"
    done = prove(t, check)
    return "proven" if done is not None and done.ok and (PROVEN, row.name) in done.proven else None


def prove(t, check=None):
    """The proof of table `t`'s constants: the one kept on its `Earning` beside the structs' check
    (another process's: remote/choose.py), else `check(t)`, run once per table for the constants
    that are not exact and kept; None when there is neither."""
    e = t.earning
    done = e.constants_check
    if done is None and check is not None:
        done = e.constants_check = check(t)
    return done


def find(t, name: str):
    """(table, row) of `name` in `t` or its fallbacks; UnknownNameError (a KeyError), or
    AmbiguousNameError for a name of several values there (ask for `NAME@FILE`)."""
    for table in [t] + list(t.fallbacks):
        rows = of(table)
        row = rows.get(name)
        if row is not None:
            return table, row
        qualified = sorted(k for k in rows if k.startswith(name + "@")) if name in _qualified(table) else None
        if qualified:
            raise AmbiguousNameError(name, qualified, where=table.where(), what="values")
    known = of(t)
    if not known:
        raise UnknownNameError(name, [], where=f"{t.where()}, which has no constants (made by an older "
                                                f"offsets: rescan it with `offsets scan --install`)")
    raise UnknownNameError(name, lambda: close_matches(name, list(known), 0.7), where=f"{t.where()} as a constant")


def refused(t, name: str) -> NoMatchingTable:
    check = t.earning.constants_check
    seen = f"; live check of constants: {check.summary()}" if check is not None else ""
    return NoMatchingTable(f"{name}: not answered: {t.name} is not exactly this build's table ({t.earning.why}) "
                           f"and the live check did not see this constant{seen}; make this build's own table "
                           f"with `offsets scan --python PY --install`")
