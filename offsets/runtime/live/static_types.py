"""Part of the live check (`runner.py`), 3.12+: the interpreter's state of each static builtin type
(`PyInterpreterState.types.builtins`, an array of `static_builtin_state`; 3.13+
`types.builtins.initialized` of `managed_static_type_state`), which holds what such a type keeps per
interpreter: its dict, its subclasses, its weak references. A static type's `tp_subclasses` holds its
index there, plus one.

Each entry read is checked against the type itself: its `type` is the type, its `tp_dict` the dict
its `__dict__` proxies (`gc.get_referents`), its `tp_weaklist` the first of `weakref.getweakrefs`,
and `int`'s `tp_subclasses` a dict (bool). A read of an array's entry proves only a sum of offsets;
these pin all of them:

- entries at two indices or more prove the array's stride, sizeof(entry);
- in one entry the first member (at 0) and the last (ending at sizeof(entry), no padding after it)
  are read: real(array) + real(first) = table(array) with real(first) >= 0, and real(array) +
  real(last) = table(array) + table(last) with real(last) <= sizeof(entry) - its size = table(last).

So the array is where the table says, and each member read is at its table offset in the entry.
"""
from __future__ import annotations

import sys
from .toolkit import this_interp as _interp


def check(c) -> None:
    if sys.version_info >= (3, 12):
        c.attempt("static builtin types' states", states, c)


def states(c) -> None:
    import gc
    import weakref


    key = c.t.resolve_struct("PyInterpreterState")
    fields = c.t.fields(key)
    path = next((p for p in ("types.builtins.initialized", "types.builtins") if p in fields), None)
    if path is None or "[" not in fields[path][2]:
        raise LookupError("no array of static types' states in PyInterpreterState")
    entry = c.t.resolve_struct(fields[path][2].split("[")[0].replace("struct ", "").strip())
    if entry is None:
        raise LookupError(f"no struct {fields[path][2]}")
    rows = c.t.fields(entry)
    if not {"type", "tp_dict", "tp_subclasses", "tp_weaklist"} <= set(rows):
        raise LookupError(f"{entry} lacks a field read here")
    ends = sorted(r[0] + r[1] for r in rows.values())
    # the bounds hold only where the table has type at 0 and tp_weaklist alone ending the struct
    pinned = rows["type"][0] == 0 and rows["tp_weaklist"][0] + rows["tp_weaklist"][1] == c.t.size(entry) == \
        ends[-1] and ends[-2] < ends[-1]
    types = [dict, list, int, float]
    refs = [weakref.ref(t) for t in types]     # each type's weak reference list is not empty
    heads = [weakref.getweakrefs(t)[0] for t in types]
    dicts = [gc.get_referents(t.__dict__)[0] for t in types]
    index = [c.field(id(t), "PyTypeObject", "tp_subclasses") - 1 for t in types]
    c.view.take_used()
    if len(set(index)) != len(types) or not all(0 <= i < 1000 for i in index):
        raise LookupError("the static types' indices are not distinct small numbers")
    base, step = _interp() + c.need("PyInterpreterState", path), c.size(entry)
    got = [[c.field(base + i * step, entry, f) for f in ("type", "tp_dict", "tp_weaklist")] for i in index]
    subclass_type = c.field(c.field(base + index[2] * step, entry, "tp_subclasses"), "PyObject", "ob_type")
    truth = [[[id(t), id(d), id(h)] for t, d, h in zip(types, dicts, heads)], id(dict)]
    what = (f"PyInterpreterState.{path}[tp_subclasses - 1] of dict, list, int and float: {entry}.type, "
            "tp_dict, tp_weaklist (first and last members), int's tp_subclasses a dict")
    if not pinned:      # compared all the same (a wrong table fails), but nothing is proven by it
        c.view.take_used()
        what += f" ({entry}'s layout in the table cannot be pinned)"
    c.expect(what, truth, [got, subclass_type])
    del refs
