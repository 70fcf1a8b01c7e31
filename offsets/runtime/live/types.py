"""Part of the live check (`runner.py`): every type object reachable in this process (the builtins and
every type `object.__subclasses__()` reaches, the types of loaded modules, and their static bases)
against its own record of its layout (proofs/types.py); each one held by this check while it is read."""
from __future__ import annotations

import sys

from ...proofs import types as type_proof


def reachable() -> list:
    """Every type reachable from `object` and from the loaded modules (a list: it holds them)."""
    seen, todo = {}, [object]
    for module in list(sys.modules.values()):
        try:
            todo += [v for v in list(vars(module).values()) if isinstance(v, type)]
        except TypeError:
            continue
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen[id(t)] = t
        try:
            todo += type.__subclasses__(t) + list(t.__mro__)
        except TypeError:
            continue
    return list(seen.values())


HEAPTYPE = 1 << 9      # Py_TPFLAGS_HEAPTYPE


def name_of(t) -> str:
    """What a type's tp_name is, as Python shows it: `list`, `types.GenericAlias` (a static type's
    __module__ is the part of tp_name before its last dot), `array.array` (a heap type's, from its dict)."""
    if t.__flags__ & HEAPTYPE:
        module = t.__dict__.get("__module__")
        module = module if isinstance(module, str) else "builtins"
    else:
        module = t.__module__
    return t.__name__ if module == "builtins" else f"{module}.{t.__name__}"


def check(c, shipped: dict) -> None:
    """`shipped`: tp_name -> type record of the table's minor (`tables.type_records`), as the runner hands it."""
    records = type_proof.records(shipped)
    found = [t for t in reachable() if name_of(t) in records]
    by_address = {id(t): t for t in found}
    member = type(type.__dict__["__basicsize__"])

    def descriptors(address):
        return {k: v for k, v in by_address[address].__dict__.items() if type(v) is member}
    type_proof.check(c, [(id(t), name_of(t)) for t in found], records, descriptors)
