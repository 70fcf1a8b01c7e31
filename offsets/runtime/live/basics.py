"""Part of the live check: the first evidence, each used only where the table has the structs and
fields it needs:

1. `__basicsize__` of builtin types against the size (or the variable part's offset) of their structs
   (`toolkit.BASICSIZE`);
2. reads of real objects through the table's offsets (a list's items, a tuple's items, an int's
   digits, a type's name and flags, a function's code, an iterator's index, the thread state, the
   current frame's code object, the interpreter's `sys` dict and module dict...), compared with
   what Python says about the same objects;
3. on 3.13+, the interpreter's own `_Py_DebugOffsets` (the first member of the exported
   `_PyRuntime`), read with the table's layout of that struct and compared with the table's offsets
   of the fields it describes (which member describes which field: `data/debug_offsets.json`).
"""
from __future__ import annotations

import sys

from . import toolkit
from .toolkit import BASICSIZE, Checker, Fault, _sample, need, read_all


def basicsize(c: Checker) -> None:
    for label, get_type, struct, expectations in BASICSIZE:
        key = c.t.resolve_struct(struct)
        if key is None:
            c.skip(f"{label}.__basicsize__", f"no {struct} in the table")
            continue
        for terms in expectations:
            c.view.take_used()
            values = [_term(c, key, struct, term) for term in terms]
            if None not in values:
                spelled = " + ".join(f"offsetof({struct}, {t})" if isinstance(t, str) and t != "size" and t[0] != "@"
                                     else f"offsetof({t[1:].replace('.', ', ', 1)})" if isinstance(t, str) and t[0] == "@"
                                     else f"sizeof({struct})" if t == "size" else str(t) for t in terms)
                c.expect(f"{label}.__basicsize__ == {spelled}", get_type().__basicsize__, sum(values))
                break
        else:
            c.skip(f"{label}.__basicsize__", f"none of {expectations} in {struct}")


def _term(c: Checker, key: str, struct: str, term):
    if isinstance(term, int):
        return term
    if term == "size":
        return c.size(struct)
    if term.startswith("@"):
        other, _, path = term[1:].partition(".")
        return c.off(other, path)
    return c.off(struct, term)




def objects(c: Checker) -> None:
    m = c.mem
    lst = [object(), "a", 3.5]

    def header():
        c.expect("PyObject.ob_type of a list", id(list), c.read_field(id(lst), "PyObject", "ob_type"))
        c.expect("PyListObject ob_size", len(lst), c.read_field(id(lst), "PyListObject", "ob_base.ob_size"))
        refcnt = c.read_field(id(lst), "PyObject", "ob_refcnt")
        c.expect("PyObject.ob_refcnt of a list", sys.getrefcount(lst) - 1, refcnt)

    def list_items():
        items = c.ptr(id(lst), need(c.off("PyListObject", "ob_item"), "PyListObject.ob_item"))
        c.expect("PyListObject.ob_item[]", [id(x) for x in lst],
                 [c.ptr(items, i * c.psize) for i in range(len(lst))])

    tup = (object(), lst, "b")

    def tuple_items():
        off = need(c.off("PyTupleObject", "ob_item"), "PyTupleObject.ob_item")
        c.expect("PyTupleObject.ob_item[]", [id(x) for x in tup], [c.ptr(id(tup), off + i * c.psize) for i in range(3)])

    def long_digits():
        for value in (2 ** 100 + 12345, -(2 ** 70) - 7):
            c.expect(f"PyLongObject digits of {value}", value, _read_long(c, value))

    def float_value():
        import struct

        x = 1.5 + len(lst)
        off = need(c.off("PyFloatObject", "ob_fval"), "PyFloatObject.ob_fval")
        c.expect("PyFloatObject.ob_fval", x, struct.unpack("d", m.read(id(x) + off, 8))[0])

    def bytes_value():
        b = bytes(range(65, 75))
        off = need(c.off("PyBytesObject", "ob_sval"), "PyBytesObject.ob_sval")
        c.expect("PyBytesObject.ob_sval", b, m.read(id(b) + off, len(b)))

    def ascii_state():
        # the state bits are values.unicode's: four strs of three kinds (the few bits of one
        # str, read where a wrong table puts them, match by chance one time in eight)
        s = "".join(["offs", "ets"])
        c.expect("PyASCIIObject.length", len(s), c.read_field(id(s), "PyASCIIObject", "length"))

    class Heap:
        pass

    def type_object():
        c.expect("PyTypeObject.tp_basicsize of list", list.__basicsize__,
                 c.read_field(id(list), "PyTypeObject", "tp_basicsize"))
        c.expect("PyTypeObject.tp_flags of list", list.__flags__, c.read_field(id(list), "PyTypeObject", "tp_flags"))
        name = c.ptr(id(list), need(c.off("PyTypeObject", "tp_name"), "PyTypeObject.tp_name"))
        c.expect("PyTypeObject.tp_name of list", b"list", c.cstring(name))
        c.expect("PyTypeObject.tp_base of a class", id(object), c.read_field(id(Heap), "PyTypeObject", "tp_base"))
        c.expect("PyTypeObject.tp_mro of a class", id(Heap.__mro__), c.read_field(id(Heap), "PyTypeObject", "tp_mro"))
        c.expect("PyHeapTypeObject.ht_name", id(Heap.__name__), c.read_field(id(Heap), "PyHeapTypeObject", "ht_name"))
        c.expect("PyHeapTypeObject.ht_qualname", id(Heap.__qualname__),
                 c.read_field(id(Heap), "PyHeapTypeObject", "ht_qualname"))

    def function_object():
        f = _sample
        for path, want in (("func_code", f.__code__), ("func_globals", f.__globals__), ("func_name", f.__name__),
                           ("func_qualname", f.__qualname__), ("func_defaults", f.__defaults__)):
            c.expect(f"PyFunctionObject.{path}", id(want), c.read_field(id(f), "PyFunctionObject", path))

    def code_object():
        co = _sample.__code__
        for path, want in (("co_argcount", co.co_argcount), ("co_flags", co.co_flags),
                           ("co_firstlineno", co.co_firstlineno), ("co_name", id(co.co_name)),
                           ("co_filename", id(co.co_filename)), ("co_consts", id(co.co_consts)),
                           ("co_names", id(co.co_names))):
            c.expect(f"PyCodeObject.{path}", want, c.read_field(id(co), "PyCodeObject", path))

    def dict_object():
        d = {"x": 1, "y": 2}
        c.expect("PyDictObject.ma_used", len(d), c.read_field(id(d), "PyDictObject", "ma_used"))

    def list_iterator():
        it = iter(lst)
        for _ in range(3):
            next(it)
        c.expect("listiterobject.it_index after 3 steps", 3, c.read_field(id(it), "listiterobject", "it_index"))
        c.expect("listiterobject.it_seq", id(lst), c.read_field(id(it), "listiterobject", "it_seq"))

    for what, fn in (("PyObject header of a list", header), ("PyListObject.ob_item", list_items),
                     ("PyTupleObject.ob_item", tuple_items), ("PyLongObject digits", long_digits),
                     ("PyFloatObject", float_value), ("PyBytesObject", bytes_value),
                     ("PyASCIIObject state", ascii_state), ("PyTypeObject of list and of a class", type_object),
                     ("PyFunctionObject", function_object), ("PyCodeObject", code_object),
                     ("PyDictObject", dict_object), ("listiterobject", list_iterator)):
        c.run(what, fn)


def _read_long(c: Checker, value: int) -> int:
    shift, dsize = sys.int_info.bits_per_digit, sys.int_info.sizeof_digit
    addr = id(value)
    tagged = c.row("PyLongObject", "long_value.lv_tag")
    if tagged:   # 3.12+: ndigits << 3 | sign (0 positive, 1 zero, 2 negative)
        tag = c.read_field(addr, "PyLongObject", "long_value.lv_tag")
        ndigits, sign = tag >> 3, 1 - (tag & 3)
    else:
        size = c.read_field(addr, "PyLongObject", "ob_base.ob_size")
        size -= (1 << (8 * c.psize)) if size >> (8 * c.psize - 1) else 0
        ndigits, sign = abs(size), (size > 0) - (size < 0)
    if ndigits > 64:
        return f"{ndigits} digits"
    off = need(c.off("PyLongObject", "long_value.ob_digit", "ob_digit"), "PyLongObject digits")
    raw = c.mem.read(addr + off, ndigits * dsize)
    total = 0
    for i in reversed(range(ndigits)):
        total = (total << shift) | int.from_bytes(raw[i * dsize:(i + 1) * dsize], sys.byteorder)
    return sign * total


def thread_state(c: Checker) -> None:
    """PyThreadState and PyInterpreterState of this thread, and the frame being executed."""
    import ctypes
    import threading

    def api(name):   # own prototypes: setting restype on ctypes.pythonapi's would change them for everyone
        return ctypes.PYFUNCTYPE(ctypes.c_void_p)((name, ctypes.pythonapi))

    ts = api("PyThreadState_Get")()
    try:
        interp = api("PyInterpreterState_Get")()      # 3.9+
    except AttributeError:
        interp = api("PyInterpreterState_Head")()     # 3.8: the main interpreter, the only one here

    def thread():
        c.expect("PyThreadState.interp", interp, c.read_field(ts, "PyThreadState", "interp"))
        c.expect("PyThreadState.thread_id", threading.get_ident(), c.read_field(ts, "PyThreadState", "thread_id"))

    def thread_list():
        head = c.read_field(interp, "PyInterpreterState", "threads.head", "tstate_head")
        nxt = need(c.off("PyThreadState", "next"), "PyThreadState.next")
        seen, p = 0, head
        while p and p != ts and seen < 10000:
            p, seen = c.ptr(p, nxt), seen + 1
        c.expect("this thread state is on PyInterpreterState's thread list", ts, p)

    def interpreter():
        import builtins

        c.expect("PyInterpreterState.sysdict", id(sys.__dict__), c.read_field(interp, "PyInterpreterState", "sysdict"))
        c.expect("PyInterpreterState.builtins", id(builtins.__dict__),
                 c.read_field(interp, "PyInterpreterState", "builtins"))
        c.expect("PyInterpreterState modules", id(sys.modules),
                 c.read_field(interp, "PyInterpreterState", "imports.modules", "modules"))

    for what, fn in (("PyThreadState", thread), ("PyInterpreterState thread list", thread_list),
                     ("PyInterpreterState", interpreter)):
        c.run(what, fn)
    c.run("current frame through PyThreadState", lambda: _current_frame(c, ts))


def frame_path(t):
    """How the table gets from the thread state to the executing frame's code object: a list of
    (struct, field) hops, each field a pointer to the next struct's type, the last one the code
    object; None if the table cannot say. 3.13+: current_frame; 3.11-3.12: cframe, then
    current_frame; up to 3.10: frame."""
    for hops in (("current_frame",), ("cframe", "current_frame"), ("frame",)):
        struct, path = t.resolve_struct("PyThreadState"), []
        for f in hops:
            row = t.fields(struct).get(f) if struct else None
            if row is None or not row.type.endswith("*"):
                break
            path.append((struct, f))
            struct = t.resolve_struct(row.type.replace("struct ", "").rstrip("*").strip())
        else:
            for code in ("f_executable", "f_code"):
                if struct and code in t.fields(struct):
                    return path + [(struct, code)]
    return None


def _current_frame(c: Checker, ts: int) -> None:
    hops = frame_path(c.t)
    if hops is None:
        raise LookupError("no way from PyThreadState to the current frame in the table")
    # The hops that change as Python runs (the thread state's frame pointer, the C frame's
    # current frame) are copied here with bare C calls (the memory's `copier`: write(2), or
    # ReadProcessMemory): a Python-level call would push a frame.
    psize = c.psize
    copy, args, take = c.mem.copier(psize)
    addr, names = ts, []
    for struct, field in hops[:-1]:
        off = c.t.fields(c.t.resolve_struct(struct))[field][0]
        c.mark(c.t.resolve_struct(struct), field)
        got = take(copy(addr + off, *args)) if addr else None
        if got is None:
            raise Fault(f"no readable pointer at {struct}.{field}")
        addr = int.from_bytes(got, sys.byteorder)
        names.append(f"{struct}.{field}")
    code = sys._getframe().f_code
    struct, field = hops[-1]
    c.mark(struct, field)
    got = c.ptr(addr, c.t.fields(struct)[field][0]) if addr else 0
    c.expect(f"current frame's code via {' -> '.join(names + [struct + '.' + field])}", id(code), got)


def py_debug_offsets(c: Checker) -> None:
    """3.13+: `_PyRuntime.debug_offsets` against the table (skipped where the table lacks it)."""
    import ctypes

    if c.t.resolve_struct("_Py_DebugOffsets") is None:
        c.skip("_Py_DebugOffsets", "not in the table (CPython < 3.13)")
        return
    base_off = c.off("_PyRuntimeState", "debug_offsets")
    if base_off is None:
        c.skip("_Py_DebugOffsets", "no _PyRuntimeState.debug_offsets in the table")
        return
    try:
        runtime = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    except ValueError:
        c.skip("_Py_DebugOffsets", "_PyRuntime is not exported by this interpreter")
        return
    base = runtime + base_off
    fields = c.t.fields(c.t.resolve_struct("_Py_DebugOffsets"))
    cookie = fields.get("cookie")
    if cookie is not None:
        c.expect("_Py_DebugOffsets.cookie", b"xdebugpy", c.mem.read(base + cookie[0], 8))
    if "version" in fields:
        c.expect("_Py_DebugOffsets.version", sys.hexversion, c.mem.int(base + fields["version"][0], 8))
    for name, meaning in sorted(toolkit.debug_offsets().items()):
        if name not in fields:
            continue
        what = f"_Py_DebugOffsets.{name}"
        if meaning[0] == "size":
            mine = c.size(meaning[1])
        else:
            mine = c.off(meaning[1], meaning[2])
        if mine is None:
            c.skip(what, f"{'.'.join(meaning[1:])} not in the table")
            continue
        row = fields[name]
        c.expect(what, c.mem.int(base + row.offset, row.size), mine)
