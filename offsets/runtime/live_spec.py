"""Part of the live check (`live.py`): `PyType_Spec` and `PyType_Slot`, as `PyType_FromSpec` reads
them, and the `tp_del` slot it fills.

Both structs are of the stable ABI, laid out the same in every CPython 3 (`{name, basicsize,
itemsize, flags, slots}`, `{slot, pfunc}`): the check builds a spec of its own with ctypes in that
layout, and only where the table has that layout, so the interpreter never reads a spec laid out
after a wrong table. The type it makes has the name, sizes and `tp_del` the spec gives
(`__name__`, `__basicsize__`, `__itemsize__`, `PyType_GetSlot(Py_tp_del)`): so the interpreter read
each where the table has it. `tp_del` (the address of `Py_IncRef`, never called: no instance of
the type is made) is then read in the type object, where that value is in no other word of it.
"""
from __future__ import annotations

NAME, BASICSIZE, ITEMSIZE = b"offsets.spec_probe", 7, 3     # in pointers


def _layouts():
    import ctypes

    class Slot(ctypes.Structure):
        _fields_ = [("slot", ctypes.c_int), ("pfunc", ctypes.c_void_p)]

    class Spec(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("basicsize", ctypes.c_int), ("itemsize", ctypes.c_int),
                    ("flags", ctypes.c_uint), ("slots", ctypes.POINTER(Slot))]
    return Slot, Spec


def _same(c, struct: str, ctype) -> bool:
    """The table's struct is the ctypes one: the same fields at the same offsets and sizes, the same size."""
    fields = c.view.fields(struct)
    if fields is None:
        return False
    top = {p: r[:2] for p, r in fields.items() if "." not in p}
    mine = {name: (getattr(ctype, name).offset, getattr(ctype, name).size) for name, _ in ctype._fields_}
    import ctypes

    return top == mine and c.size(struct) == ctypes.sizeof(ctype)


def from_spec(c) -> None:
    import ctypes

    from .constants import of
    from .live_capi import _api, _words

    Slot, Spec = _layouts()
    if c.view.fields("PyType_Spec") is None or c.view.fields("PyType_Slot") is None:
        raise LookupError("no PyType_Spec or PyType_Slot in the table")
    c.view.take_used()
    # compared, not proven by it (nothing is marked used): a table of another layout fails here,
    # and the interpreter is never given a spec laid out after it
    same = [_same(c, "PyType_Spec", Spec), _same(c, "PyType_Slot", Slot)]
    c.view.take_used()
    if not c.expect("PyType_Spec, PyType_Slot: the stable ABI's layout", [True, True], same):
        return
    slot_id = (of(c.t).get("Py_tp_del") or [None, None])[1]
    if not isinstance(slot_id, int):
        raise LookupError("no Py_tp_del in the table")
    c.view.take_used()
    incref = ctypes.cast(ctypes.pythonapi.Py_IncRef, ctypes.c_void_p).value
    slots = (Slot * 2)(Slot(slot_id, incref), Slot(0, None))
    p = c.psize
    spec = Spec(NAME, BASICSIZE * p, ITEMSIZE * p, 0, slots)
    make = _api("PyType_FromSpec", ctypes.py_object, ctypes.c_void_p)
    tp = make(ctypes.addressof(spec))
    got = [tp.__module__ + "." + tp.__name__, tp.__basicsize__, tp.__itemsize__,
           _api("PyType_GetSlot", ctypes.c_void_p, ctypes.py_object, ctypes.c_int)(tp, slot_id)]
    c.view.used.update({(c.view.key("PyType_Spec"), f) for f in ("name", "basicsize", "itemsize", "slots")} |
                       {(c.view.key("PyType_Slot"), f) for f in ("slot", "pfunc")})
    c.expect("PyType_Spec.name, basicsize, itemsize, slots and PyType_Slot: the type PyType_FromSpec makes of "
             "the check's spec", [NAME.decode(), BASICSIZE * p, ITEMSIZE * p, incref], got)

    def tp_del():
        at = id(tp) + c.need("PyTypeObject", "tp_del")
        where = _words(c, id(tp), id(tp) + type(tp).__basicsize__, incref)
        if at in where and len(where) > 1:
            raise LookupError("tp_del's value is not once in the type object")
        c.expect("PyTypeObject.tp_del (PyType_GetSlot(Py_tp_del))", incref, c.field(id(tp), "PyTypeObject", "tp_del"))
    c.run("PyTypeObject.tp_del", tp_del)
    del tp


def check(c) -> None:
    c.attempt("PyType_FromSpec", from_spec, c)
