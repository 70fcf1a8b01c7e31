"""Part of the live check (`runner.py`): `PyType_Spec` and `PyType_Slot`, as `PyType_FromSpec` reads
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
from .toolkit import c_function as _api, words_holding as _words


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
    slot_id = (c.constants().get("Py_tp_del") or [None, None])[1]
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
    c.attempt("Py_buffer.suboffsets and internal", suboffsets, c)


def _made_type(c, name: bytes, slots: list):
    """A type of the check's own, made by PyType_FromSpec of `slots` ((slot id, function) pairs), or
    None where the table's PyType_Spec and PyType_Slot are not the stable ABI's."""
    import ctypes


    Slot, Spec = _layouts()
    if not (_same(c, "PyType_Spec", Spec) and _same(c, "PyType_Slot", Slot)):
        return None
    c.view.take_used()
    table = (Slot * (len(slots) + 1))(*[Slot(i, f) for i, f in slots], Slot(0, None))
    spec = Spec(name, c.psize * 2, 0, 0, table)
    return _api("PyType_FromSpec", ctypes.py_object, ctypes.c_void_p)(ctypes.addressof(spec))


#: the exporter's name: tp_name points into it up to 3.11, so it lives as long as this module
EXPORTER = b"offsets.buffer_probe"
#: each exporter's bf_getbuffer and the bytes it exports, kept as long as this module: the type can
#: outlive the check (until a collection), and anyone may make an instance of it meanwhile
_KEPT: list = []


def suboffsets(c) -> None:
    """`Py_buffer.suboffsets` and `internal`, which no builtin exporter fills: an exporter of the check's
    own (`bf_getbuffer` a ctypes function that has `PyBuffer_FillInfo` fill the view, then sets one
    field where the table has it), read back by `memoryview`: suboffsets it copies value by value
    (`memoryview.suboffsets`), `internal` it keeps in its own view. Run only where every other field
    of Py_buffer and its size are proven: the two fields left are the two words after `strides`,
    each given a pointer to an array of negative suboffsets (no indirection), whichever it is. Not run
    in a sub-interpreter, where a ctypes callback may wait for the GIL its thread holds."""
    import ctypes


    if _api("PyInterpreterState_Get", ctypes.c_void_p)() != _api("PyInterpreterState_Main", ctypes.c_void_p)():
        # a ctypes callback takes the GIL through this thread's main-interpreter state (PyGILState_Ensure):
        # from a sub-interpreter of 3.9 that waits for a GIL this thread holds
        raise LookupError("a ctypes callback cannot be called in a sub-interpreter")
    key = c.view.key("Py_buffer")
    others = ("buf", "obj", "len", "itemsize", "readonly", "ndim", "format", "shape", "strides")
    if key is None or not all((key, f) in c.r.proven for f in others) or (key, None) not in c.r.proven:
        raise LookupError("Py_buffer's other fields and its size are not proven")
    getbuffer = (c.constants().get("Py_bf_getbuffer") or [None, None])[1]
    at_view = c.need("PyMemoryViewObject", "view")
    rows = {f: c.view.need("Py_buffer", f) for f in ("suboffsets", "internal")}
    c.view.take_used()
    if not isinstance(getbuffer, int) or any(r[1] != c.psize for r in rows.values()):
        raise LookupError("no Py_bf_getbuffer, or Py_buffer's suboffsets and internal are not pointers")
    fill = _api("PyBuffer_FillInfo", ctypes.c_int, ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p,
                ctypes.c_ssize_t, ctypes.c_int, ctypes.c_int)
    data = ctypes.create_string_buffer(b"offsets", 8)
    marks = {"suboffsets": (ctypes.c_ssize_t * 2)(-7, -7), "internal": (ctypes.c_ssize_t * 2)(-9, -9)}
    setting = []

    def get(obj, view, flags):
        if fill(view, obj, ctypes.addressof(data), 8, 1, flags):
            return -1
        if setting:
            ctypes.c_void_p.from_address(view + rows[setting[0]][0]).value = ctypes.addressof(marks[setting[0]])
        return 0
    callback = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p, ctypes.c_int)(get)
    _KEPT.append((callback, data, marks))
    tp = _made_type(c, EXPORTER, [(getbuffer, ctypes.cast(callback, ctypes.c_void_p).value)])
    if tp is None:
        raise LookupError("the table's PyType_Spec or PyType_Slot is not the stable ABI's")
    exporter, got = tp(), []
    for field in ("suboffsets", "internal"):
        setting[:] = [field]
        view = memoryview(exporter)
        try:
            got.append([view.suboffsets, c.ptr(id(view) + at_view, rows["internal"][0])])
        finally:
            view.release()
    c.view.used.update({(key, "suboffsets"), (key, "internal")})
    c.expect("Py_buffer.suboffsets, internal: what an exporter sets in each, as memoryview copies it",
             [[(-7,), 0], [(), ctypes.addressof(marks["internal"])]], got)
    del exporter, tp
