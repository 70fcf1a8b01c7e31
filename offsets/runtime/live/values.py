"""Part of the live check (`runner.py`): objects of this process read through the table, each field
against what Python says about the same object (an attribute, `type()`, `len()`, `id()`).

Every truth is an object this check holds a reference to while it reads (the sample objects and
the values compared are kept in locals), so no read is of an object that could be freed meanwhile,
in a free-threaded build too. An object-valued field is compared by address (`id`); an integer
field is read in several objects whose values differ, so that a table whose offset is that of
another field of the same value fails.
"""
from __future__ import annotations

import sys
from .toolkit import holding as _ids


#: The structs whose object header is checked through their own paths (`S.ob_base.ob_type` ...),
#: by a sample object of each; with `PyObject.ob_type` proven this proves where the header is
#: (`proofs/embedding.py`).
def _samples() -> list:
    def gen():
        yield 1

    class Heap:
        def method(self):
            return self

    def cell():
        x = [1]

        def inner():
            return x
        return inner.__closure__[0]

    out = [("PyTupleObject", (1, 2, 3)), ("PyListObject", [1, 2]), ("PyDictObject", {"a": 1}),
           ("PySetObject", {1, 2}), ("PyFloatObject", 2.5), ("PyComplexObject", 1j), ("PyBytesObject", b"abc"),
           ("PyByteArrayObject", bytearray(b"ab")), ("PyLongObject", 2 ** 80), ("PyASCIIObject", "abc"),
           ("PyCompactUnicodeObject", "\u0100x"), ("PyUnicodeObject", "\u0100y"), ("PyTypeObject", list),
           ("PyHeapTypeObject", Heap),
           ("PyCodeObject", _sample.__code__), ("PyFunctionObject", _sample), ("PyMethodObject", Heap().method),
           ("PyCFunctionObject", len), ("PyCellObject", cell()), ("PyModuleObject", sys),
           ("PyGenObject", gen()), ("PyFrameObject", sys._getframe()), ("PySliceObject", slice(1, 2, 3)),
           ("PyBaseExceptionObject", ValueError(1)), ("PyOSErrorObject", OSError(2, "x")),
           ("propertyobject", property(len)), ("listiterobject", iter([1])), ("PyMemoryViewObject", memoryview(b"x")),
           ("PyMemberDescrObject", type(_sample.__code__).__dict__["co_argcount"]
            if "co_argcount" in type(_sample.__code__).__dict__ else None),
           ("PyMethodDescrObject", list.__dict__["append"]), ("PyGetSetDescrObject", type(_sample).__dict__["__name__"]),
           ("PyWrapperDescrObject", object.__dict__["__init__"]), ("PyCMethodObject", None)]
    return [(s, o) for s, o in out if o is not None]


def _sample(a, b=1, *args, c=3, **kw):
    x = a + b

    def inner():
        return x
    return inner


def _sample2(p, /, q, *, r, s=2):
    import os
    t = u = v = p
    return os, t, u, v, q, r, s


def _header_path(c, struct: str, suffix: str):
    """The table's shortest path in `struct` to its object header's `suffix` (ob_type, ob_size)."""
    key = c.t.resolve_struct(struct)
    if key is None:
        return None
    paths = [p for p in c.t.fields(key) if p.split(".")[-1] == suffix]
    return min(paths, key=lambda p: (p.count("."), p)) if paths else None


def headers(c) -> None:
    """Each sample object's header through its own struct: its type, and a var-sized one's size."""
    for struct, obj in _samples():
        path = _header_path(c, struct, "ob_type")
        if path is None:
            c.skip(f"{struct} header", "no ob_type path in the table")
            continue
        c.run(f"{struct}.{path}", lambda: c.expect(f"{struct}.{path} of a {type(obj).__name__}", id(type(obj)),
                                                    c.field(id(obj), struct, path)))
    tup, lst, data = (object(), None, 3, 4), [1, 2, 3, 4, 5], b"offsets"

    def var():
        c.expect("PyVarObject.ob_size of a tuple, a list and bytes", [len(tup), len(lst), len(data)],
                 [c.field(id(o), "PyVarObject", "ob_size") for o in (tup, lst, data)])
        c.expect("PyVarObject.ob_base.ob_type of a tuple", id(tuple), c.field(id(tup), "PyVarObject", "ob_base.ob_type"))
        for struct, obj in (("PyTupleObject", tup), ("PyListObject", lst), ("PyBytesObject", data)):
            c.expect(f"{struct}.ob_base.ob_size", len(obj), c.field(id(obj), struct, "ob_base.ob_size"))
    c.run("PyVarObject", var)


def code_objects(c) -> None:
    """Code objects' fields against their attributes (several code objects, whose counts differ)."""
    codes = [_sample.__code__, _sample2.__code__, _samples.__code__, headers.__code__]
    ints = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_flags",
            "co_firstlineno")
    objs = ("co_consts", "co_names", "co_filename", "co_name", "co_qualname", "co_linetable", "co_exceptiontable",
            "co_lnotab", "co_varnames", "co_freevars", "co_cellvars", "co_code")
    key = c.t.resolve_struct("PyCodeObject")
    fields = c.t.fields(key) if key else {}
    for name in ints:
        if name in fields:
            c.run(f"PyCodeObject.{name}", lambda n=name: c.expect(
                f"PyCodeObject.{n} of {len(codes)} code objects", [getattr(co, n) for co in codes],
                [c.field(id(co), "PyCodeObject", n) for co in codes]))
    for name in objs:
        if name not in fields or not fields[name][2].endswith("*"):
            continue
        truths = [getattr(co, name, None) for co in codes]
        if any(t is None for t in truths):
            continue
        if name == "co_code" and fields[name][2].startswith("_Py_CODEUNIT"):
            continue
        c.run(f"PyCodeObject.{name}", lambda n=name, truths=truths: c.expect(
            f"PyCodeObject.{n} of {len(codes)} code objects", [id(t) for t in truths],
            [c.field(id(co), "PyCodeObject", n) for co in codes]))
    if "co_nfreevars" in fields:
        c.run("PyCodeObject.co_nfreevars", lambda: c.expect(
            "PyCodeObject.co_nfreevars, co_ncellvars", [[len(co.co_freevars), len(co.co_cellvars)] for co in codes],
            [[c.field(id(co), "PyCodeObject", "co_nfreevars"), c.field(id(co), "PyCodeObject", "co_ncellvars")]
             for co in codes]))


def functions(c) -> None:
    """Functions, bound methods, builtin functions and their PyMethodDef."""
    f = _sample
    f.__dict__["x"] = 1
    annotations = f.__annotations__
    kwdefaults = f.__kwdefaults__
    pairs = (("func_code", f.__code__), ("func_globals", f.__globals__), ("func_name", f.__name__),
             ("func_qualname", f.__qualname__), ("func_defaults", f.__defaults__), ("func_kwdefaults", kwdefaults),
             ("func_doc", f.__doc__), ("func_dict", f.__dict__), ("func_module", f.__module__),
             ("func_annotations", annotations), ("func_builtins", getattr(f, "__builtins__", None)))
    inner = _sample(1)
    _ids(c, "PyFunctionObject", f, pairs)
    _ids(c, "PyFunctionObject", inner, (("func_closure", inner.__closure__),))

    class K:
        def m(self):
            return self
    bound = K().m
    _ids(c, "PyMethodObject", bound, (("im_func", bound.__func__), ("im_self", bound.__self__)))
    builtin = [].append
    _ids(c, "PyCFunctionObject", len, (("m_self", len.__self__), ("m_module", len.__module__)))
    _ids(c, "PyCFunctionObject", builtin, (("m_self", builtin.__self__),))

    def method_def():
        names = []
        for fn in (len, builtin, sys.getrecursionlimit):
            ml = c.field(id(fn), "PyCFunctionObject", "m_ml")
            names.append(c.cstring(c.ptr(ml, c.need("PyMethodDef", "ml_name"))).decode("ascii", "replace"))
        c.expect("PyCFunctionObject.m_ml -> PyMethodDef.ml_name", [len.__name__, "append", "getrecursionlimit"], names)
    c.run("PyMethodDef.ml_name", method_def)


def others(c) -> None:
    """Slices, exceptions, cells, modules, properties, descriptors, weak references."""
    import weakref

    s = slice(object(), [], "x")
    _ids(c, "PySliceObject", s, (("start", s.start), ("stop", s.stop), ("step", s.step)))
    try:
        raise KeyError("k")
    except KeyError as e:
        err = e
    err.__cause__ = ValueError("cause")
    err.__context__ = TypeError("context")
    _ids(c, "PyBaseExceptionObject", err, (("args", err.args), ("traceback", err.__traceback__),
                                           ("cause", err.__cause__), ("context", err.__context__),
                                           ("dict", err.__dict__)))
    c.run("PyBaseExceptionObject.suppress_context", lambda: c.expect(
        "PyBaseExceptionObject.suppress_context", [1, 0],
        [c.field(id(err), "PyBaseExceptionObject", "suppress_context"),
         c.field(id(err.__context__), "PyBaseExceptionObject", "suppress_context")]))
    ose = OSError(2, "no such", "file-a", 0, "file-b")
    _ids(c, "PyOSErrorObject", ose, (("myerrno", ose.errno), ("strerror", ose.strerror),
                                     ("filename", ose.filename), ("filename2", ose.filename2)))
    stop = StopIteration(object())
    _ids(c, "PyStopIterationObject", stop, (("value", stop.value),))
    cell = _sample(5).__closure__[0]
    _ids(c, "PyCellObject", cell, (("ob_ref", cell.cell_contents),))
    _ids(c, "PyModuleObject", sys, (("md_dict", sys.__dict__),))
    prop = property(len, setattr, delattr, "doc")
    _ids(c, "propertyobject", prop, (("prop_get", prop.fget), ("prop_set", prop.fset), ("prop_del", prop.fdel),
                                     ("prop_doc", prop.__doc__)))
    descr = list.__dict__["append"]
    qualname = descr.__qualname__
    _ids(c, "PyDescrObject", descr, (("d_type", descr.__objclass__), ("d_name", descr.__name__),
                                     ("d_qualname", qualname)))
    _ids(c, "PyMethodDescrObject", descr, (("d_common.d_type", descr.__objclass__),
                                           ("d_common.d_name", descr.__name__)))

    def method_descr():
        ml = c.field(id(descr), "PyMethodDescrObject", "d_method")
        c.expect("PyMethodDescrObject.d_method -> PyMethodDef.ml_name", b"append",
                 c.cstring(c.ptr(ml, c.need("PyMethodDef", "ml_name"))))
    c.run("PyMethodDescrObject.d_method", method_descr)
    getset = type(_sample).__dict__["__name__"]

    def getset_descr():
        gs = c.field(id(getset), "PyGetSetDescrObject", "d_getset")
        c.expect("PyGetSetDescrObject.d_getset -> PyGetSetDef.name", b"__name__",
                 c.cstring(c.ptr(gs, c.need("PyGetSetDef", "name"))))
    c.run("PyGetSetDescrObject.d_getset", getset_descr)
    wrapper = object.__dict__["__init__"]

    def wrapper_descr():
        base = c.field(id(wrapper), "PyWrapperDescrObject", "d_base")
        c.expect("PyWrapperDescrObject.d_base -> wrapperbase.name", b"__init__",
                 c.cstring(c.ptr(base, c.need("wrapperbase", "name"))))
    c.run("PyWrapperDescrObject.d_base", wrapper_descr)

    class Target:
        pass
    target, callback = Target(), (lambda r: None)
    ref = weakref.ref(target, callback)
    _ids(c, "PyWeakReference", ref, (("wr_object", target), ("wr_callback", callback)))
    h = hash(ref)
    c.run("PyWeakReference.hash", lambda: c.expect("PyWeakReference.hash", h,
                                                   c.field(id(ref), "PyWeakReference", "hash", signed=True)))
    del h


def numbers(c) -> None:
    """Floats, complex numbers, bytearrays, sets (fill, used, mask)."""
    import struct as st

    z = complex(1.25, -3.5)

    def cval():
        at = id(z) + c.need("PyComplexObject", "cval.real", "cval")
        imag = id(z) + c.need("PyComplexObject", "cval.imag")
        c.expect("PyComplexObject.cval", (z.real, z.imag), (st.unpack("d", c.read(at, 8))[0],
                                                            st.unpack("d", c.read(imag, 8))[0]))
    c.run("PyComplexObject.cval", cval)
    ba = bytearray(b"offsets!")

    def bytearray_():
        start = c.field(id(ba), "PyByteArrayObject", "ob_start")
        c.expect("PyByteArrayObject.ob_start and ob_bytes", [bytes(ba), start],
                 [c.read(start, len(ba)), c.field(id(ba), "PyByteArrayObject", "ob_bytes")])
        alloc = c.field(id(ba), "PyByteArrayObject", "ob_alloc")     # 3.15 allocates the size exactly
        c.expect("PyByteArrayObject.ob_alloc", True, len(ba) <= alloc <= 2 * len(ba) + 64)
    c.run("PyByteArrayObject", bytearray_)
    sets = [set(range(n)) for n in (3, 9, 40)]
    for s in sets:
        s.discard(1)     # a deleted entry stays as a dummy: fill counts it, used does not

    def set_():
        c.expect("PySetObject.used", [len(s) for s in sets], [c.field(id(s), "PySetObject", "used") for s in sets])
        c.expect("PySetObject.fill", [len(s) + 1 for s in sets], [c.field(id(s), "PySetObject", "fill") for s in sets])
        small = c.need("PySetObject", "smalltable")
        c.expect("PySetObject.table of a small set is its smalltable", id(sets[0]) + small,
                 c.field(id(sets[0]), "PySetObject", "table"))
        c.view.take_used()
        # a set's table is its own small table, or one of mask + 1 entries: what sys.getsizeof counts
        tables = [c.field(id(s), "PySetObject", "table") != id(s) + small for s in sets]
        c.view.take_used()
        c.expect("PySetObject.mask (sys.getsizeof)", [s.__sizeof__() for s in sets],
                 [c.size("PySetObject") + big * (c.field(id(s), "PySetObject", "mask") + 1) * c.size("setentry")
                  for s, big in zip(sets, tables)])
    c.run("PySetObject", set_)
    del sets


def unicode(c) -> None:
    """str objects of every kind: length, hash, kind, ascii, compact, and the UTF-8 cache."""
    texts = ["".join(["ascii", "!"]), "".join(["lat", "\xe9"]), "".join(["bmp", "\u0100"]),
             "".join(["astral", "\U0001F600"])]
    kinds = [1, 1, 2, 4]

    def state():
        for bit, want in (("state.kind", kinds), ("state.ascii", [1, 0, 0, 0]), ("state.compact", [1, 1, 1, 1])):
            c.expect(f"PyASCIIObject.{bit} of 4 strs", want, [c.field(id(s), "PyASCIIObject", bit) for s in texts])
        c.expect("PyASCIIObject.length", [len(s) for s in texts],
                 [c.field(id(s), "PyASCIIObject", "length") for s in texts])
        hashes = [hash(s) for s in texts]
        c.expect("PyASCIIObject.hash", hashes, [c.field(id(s), "PyASCIIObject", "hash", signed=True) for s in texts])
    c.run("PyASCIIObject", state)

    def utf8():
        s = texts[1]
        import codecs

        try:
            codecs.lookup(s)     # PyUnicode_AsUTF8 of the name fills the str's UTF-8 cache
        except LookupError:
            pass
        n = c.field(id(s), "PyCompactUnicodeObject", "utf8_length")
        got = c.field(id(s), "PyCompactUnicodeObject", "utf8")
        if got == 0:
            raise LookupError("the UTF-8 form of the str is not cached")
        c.expect("PyCompactUnicodeObject.utf8, utf8_length", s.encode("utf-8"), c.read(got, n))
    c.run("PyCompactUnicodeObject.utf8", utf8)


def type_objects(c) -> None:
    """Type objects' fields that are no slot, against what the types say of themselves (several
    types, whose values differ), and the GC header's size (`sys.getsizeof` counts it)."""
    import gc
    import weakref

    class Plain:
        pass

    class Slotted:
        __slots__ = ("a", "b")

    class Sub(Plain):
        x = 1
    types = [Plain, Slotted, Sub, list, dict, OSError, type]
    for path, attr in (("tp_dictoffset", "__dictoffset__"), ("tp_weaklistoffset", "__weakrefoffset__"),
                       ("tp_itemsize", "__itemsize__")):
        c.run(f"PyTypeObject.{path}", lambda p=path, a=attr: c.expect(
            f"PyTypeObject.{p} of {len(types)} types ({a})", [getattr(t, a) for t in types],
            [c.field(id(t), "PyTypeObject", p, signed=True) for t in types]))
    c.run("PyTypeObject.tp_bases", lambda: c.expect(
        "PyTypeObject.tp_bases", [id(t.__bases__) for t in types], [c.field(id(t), "PyTypeObject", "tp_bases")
                                                                   for t in types]))
    heap = [Plain, Slotted, Sub]
    dicts = [gc.get_referents(t.__dict__)[0] for t in heap]      # a mappingproxy refers to the type's dict
    c.run("PyTypeObject.tp_dict", lambda: c.expect(
        "PyTypeObject.tp_dict of 3 classes", [id(d) for d in dicts], [c.field(id(t), "PyTypeObject", "tp_dict")
                                                                      for t in heap]))
    refs = [weakref.ref(t) for t in heap]
    c.run("PyTypeObject.tp_weaklist", lambda: c.expect(
        "PyTypeObject.tp_weaklist of 3 classes (their weak references)", [id(r) for r in refs],
        [c.field(id(t), "PyTypeObject", "tp_weaklist") for t in heap]))
    lst = [1, 2]
    if gc.is_tracked(lst) and not c.t.build.on("Py_GIL_DISABLED"):   # free-threaded: no PyGC_Head
        c.run("sizeof(PyGC_Head)", lambda: c.expect("sizeof(PyGC_Head) (sys.getsizeof of a list less its __sizeof__)",
                                                    sys.getsizeof(lst) - lst.__sizeof__(), c.size("PyGC_Head")))
    del dicts, refs


def check(c) -> None:
    for fn in (headers, code_objects, functions, others, numbers, unicode, type_objects):
        fn(c)
