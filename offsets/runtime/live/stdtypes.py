"""Part of the live check (`runner.py`): more of the standard types' objects, each field against what
the object says of itself (attributes, `__reduce__`, `sys.getsizeof`, `hash`), or against the C
API (`PyCFunction_GetFlags`, `PyModule_GetDef`); every object read is held by this check.

Buffers (a memoryview's `Py_buffer`), iterators, tracebacks, exceptions' attributes, functions'
and builtins' weak references, PyMethodDef and PyModuleDef, dict keys' sizes and kinds, split
dicts' values, a code object's code units, interned strings, typing's objects (3.12+), the
thread state's async-generator hooks, context and coroutine origin depth, its data stack, and the
interpreter's PyConfig strings.
"""
from __future__ import annotations

import sys

from .toolkit import holding as _ids, wide_string


def buffers(c) -> None:
    """A memoryview's Py_buffer (PyMemoryViewObject.view), in two views whose shapes differ."""
    data = bytearray(range(24))
    views = [memoryview(data), memoryview(data).cast("i", shape=[2, 3])]

    def view():
        base = [id(m) + c.need("PyMemoryViewObject", "view") for m in views]
        c.expect("Py_buffer.obj, len, itemsize, ndim, readonly of 2 memoryviews",
                 [[id(data), m.nbytes, m.itemsize, m.ndim, int(m.readonly)] for m in views],
                 [[c.field(b, "Py_buffer", f) for f in ("obj", "len", "itemsize", "ndim", "readonly")] for b in base])
        start = c.field(id(data), "PyByteArrayObject", "ob_start")
        c.view.take_used()
        c.expect("Py_buffer.buf, format, shape, strides", [[start, m.format.encode(), list(m.shape), list(m.strides)]
                                                           for m in views],
                 [[c.field(b, "Py_buffer", "buf"), c.cstring(c.field(b, "Py_buffer", "format")),
                   [c.int(c.field(b, "Py_buffer", "shape") + i * c.psize, c.psize) for i in range(m.ndim)],
                   [c.int(c.field(b, "Py_buffer", "strides") + i * c.psize, c.psize) for i in range(m.ndim)]]
                  for b, m in zip(base, views)])
    c.run("Py_buffer", view)
    del views


def iterators(c) -> None:
    """Iterators' positions and what they iterate, as their `__reduce__` says."""
    class Seq:
        def __getitem__(self, i):
            if i < 5:
                return i
            raise IndexError(i)
    tup, seq, fn, sentinel = (1, 2, 3, 4), Seq(), (lambda: 1), object()
    its = {"_PyTupleIterObject": (iter(tup), 2), "seqiterobject": (iter(seq), 3), "listiterobject": (iter([1, 2]), 1)}
    for struct, (it, steps) in its.items():
        for _ in range(steps):
            next(it)
        _, (seq_obj,), index = it.__reduce__()[:3]
        c.run(struct, lambda s=struct, it=it, o=seq_obj, n=index: c.expect(
            f"{s}.it_seq, it_index (its __reduce__)", [id(o), n],
            [c.field(id(it), s, "it_seq"), c.field(id(it), s, "it_index", signed=True)]))
    call = iter(fn, sentinel)
    _ids(c, "calliterobject", call, (("it_callable", fn), ("it_sentinel", sentinel)))
    rng = iter(range(3, 40, 7))
    next(rng)

    def range_iter():
        # range(3, 40, 7) after one step: up to 3.11 start and len stay and index counts; since, they move
        want = [10, 7, 5] if c.off("_PyRangeIterObject", "index") is None else [3, 7, 6, 1]
        fields = ("start", "step", "len", "index")[:len(want)]
        c.expect("_PyRangeIterObject.start, step, len (, index) after one step", want,
                 [c.field(id(rng), "_PyRangeIterObject", f, signed=True) for f in fields])
    c.run("_PyRangeIterObject", range_iter)


def tracebacks(c) -> None:
    def inner():
        raise KeyError(1)

    def outer():
        inner()
    try:
        outer()
    except KeyError as e:
        tb = e.__traceback__
    tbs = [tb, tb.tb_next, tb.tb_next.tb_next]
    for t in tbs:
        _ids(c, "PyTracebackObject", t, (("tb_frame", t.tb_frame), ("tb_next", t.tb_next)))
    c.run("PyTracebackObject.tb_lasti", lambda: c.expect(
        "PyTracebackObject.tb_lasti of 3 tracebacks", [t.tb_lasti for t in tbs],
        [c.field(id(t), "PyTracebackObject", "tb_lasti", signed=True) for t in tbs]))
    if sys.version_info >= (3, 10):
        err = AttributeError("x", name="attr", obj=tbs)
        _ids(c, "PyAttributeErrorObject", err, (("name", err.name), ("obj", err.obj)))


def callables(c) -> None:
    """Functions' and builtins' weak references and docs, PyMethodDef through the C API, the vectorcall
    functions (3.12+), modules' PyModuleDef."""
    import ctypes
    import weakref

    def documented():
        """a docstring"""

    refs = [weakref.ref(documented), weakref.ref(len)]
    _ids(c, "PyFunctionObject", documented, (("func_doc", documented.__doc__), ("func_weakreflist", refs[0])))
    _ids(c, "PyCFunctionObject", len, (("m_weakreflist", refs[1]),))
    api = ctypes.pythonapi
    flags = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(("PyCFunction_GetFlags", api))
    function = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyCFunction_GetFunction", api))
    builtins = [len, [].append, sys.getrecursionlimit, dict.fromkeys]

    def method_def():
        defs = [c.field(id(f), "PyCFunctionObject", "m_ml") for f in builtins]
        c.expect("PyMethodDef.ml_flags, ml_meth (PyCFunction_GetFlags, PyCFunction_GetFunction)",
                 [[flags(f), function(f)] for f in builtins],
                 [[c.field(d, "PyMethodDef", "ml_flags"), c.field(d, "PyMethodDef", "ml_meth")] for d in defs])
        docs = [c.cstring(c.field(d, "PyMethodDef", "ml_doc"), 4096).decode("utf-8", "replace") for d in defs[:1]]
        c.expect("PyMethodDef.ml_doc holds the builtin's __doc__", [True], [len.__doc__ in docs[0]])
    c.run("PyMethodDef", method_def)
    if sys.version_info >= (3, 12):
        vectorcall = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyVectorcall_Function", api))
        for struct, f in (("PyFunctionObject", documented), ("PyCFunctionObject", len)):
            c.run(f"{struct}.vectorcall", lambda s=struct, f=f: c.expect(
                f"{s}.vectorcall (PyVectorcall_Function)", vectorcall(f), c.field(id(f), s, "vectorcall")))
    import math

    get_def = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyModule_GetDef", api))

    def module_def():
        d = get_def(math)
        c.expect("PyModuleObject.md_def (PyModule_GetDef)", d, c.field(id(math), "PyModuleObject", "md_def"))
        c.expect("PyModuleDef.m_name", b"math", c.cstring(c.field(d, "PyModuleDef", "m_name")))
        first = c.cstring(c.field(c.field(d, "PyModuleDef", "m_methods"), "PyMethodDef", "ml_name"))
        c.expect("PyModuleDef.m_methods: a function of the module", True, hasattr(math, first.decode()))
    c.run("PyModuleDef", module_def)
    del refs


def dict_keys(c) -> None:
    """Keys objects' kinds and sizes (what dict.__sizeof__ counts), split dicts' values."""
    class Split:
        def __init__(self):
            self.a, self.b = object(), object()
    general, text, inst = {1.5: 1, 2.5: 2}, {"x": 1, "y": 2, "z": 3}, Split()
    split = inst.__dict__
    kinds = c.t.build.hexversion >= 0x030B0000 and c.off("PyDictKeysObject", "dk_kind") is not None

    def sizes():
        for d, entry in ((general, "PyDictKeyEntry"), (text, "PyDictUnicodeEntry" if kinds else "PyDictKeyEntry")):
            k = c.field(id(d), "PyDictObject", "ma_keys")
            if kinds:
                n = 1 << c.field(k, "PyDictKeysObject", "dk_log2_size")
                index_bytes = 1 << c.field(k, "PyDictKeysObject", "dk_log2_index_bytes")
            else:
                n = c.field(k, "PyDictKeysObject", "dk_size")
                index_bytes = n * (1 if n <= 0xff else 2 if n <= 0xffff else 4)
            usable = (n << 1) // 3
            c.expect(f"sizeof(PyDictKeysObject), sizeof({entry}), dk_usable (dict.__sizeof__)",
                     [d.__sizeof__(), usable - len(d)],
                     [c.size("PyDictObject") + c.size("PyDictKeysObject") + index_bytes + usable * c.size(entry),
                      c.field(k, "PyDictKeysObject", "dk_usable", signed=True)])
    c.run("PyDictKeysObject sizes", sizes)
    if kinds:
        c.run("PyDictKeysObject.dk_kind", lambda: c.expect(
            "PyDictKeysObject.dk_kind of a general, a str-keyed and a split dict", [0, 1, 2],
            [c.field(c.field(id(d), "PyDictObject", "ma_keys"), "PyDictKeysObject", "dk_kind")
             for d in (general, text, split)]))

        def unicode_entries():
            k = c.field(id(text), "PyDictObject", "ma_keys")
            entries = k + c.need("PyDictKeysObject", "dk_indices") + (1 << c.field(k, "PyDictKeysObject",
                                                                                 "dk_log2_index_bytes"))
            step = c.size("PyDictUnicodeEntry")
            c.expect("PyDictUnicodeEntry.me_key, me_value", [[id(key), id(v)] for key, v in text.items()],
                     [[c.field(entries + i * step, "PyDictUnicodeEntry", f) for f in ("me_key", "me_value")]
                      for i in range(len(text))])
        c.run("PyDictUnicodeEntry", unicode_entries)

        def values():
            v = c.field(id(split), "PyDictObject", "ma_values")
            at = v + c.need("PyDictValues", "values")
            c.expect("PyDictObject.ma_values -> PyDictValues.values of a split dict", [id(inst.a), id(inst.b)],
                     [c.ptr(at, i * c.psize) for i in range(2)])
        c.run("PyDictValues", values)


def small(c) -> None:
    """A list's allocation, a bytes' cached hash, interned strs, a fresh code object's code units."""
    lst = [1, 2, 3]
    lst.append(4)
    c.run("PyListObject.allocated", lambda: c.expect(
        "PyListObject.allocated (list.__sizeof__)", lst.__sizeof__(),
        c.size("PyListObject") + c.field(id(lst), "PyListObject", "allocated") * c.psize))
    data = bytes(range(30, 60))
    h = hash(data)
    c.run("PyBytesObject.ob_shash", lambda: c.expect("PyBytesObject.ob_shash (hash)", h,
                                                     c.field(id(data), "PyBytesObject", "ob_shash", signed=True)))
    plain, interned = "".join(["not", "interned"]), sys.intern("".join(["offsets", "interned"]))
    c.run("PyASCIIObject.state.interned", lambda: c.expect(
        "PyASCIIObject.state.interned of an interned str and another", [True, 0],
        [c.field(id(interned), "PyASCIIObject", "state.interned") > 0, c.field(id(plain), "PyASCIIObject",
                                                                             "state.interned")]))
    code = compile("x = y + 1", "<offsets>", "exec")
    raw = code.co_code

    def units():
        at = id(code) + c.need("PyCodeObject", "co_code_adaptive")
        n = c.size("_Py_CODEUNIT")
        # opcode 0 is CACHE, whose unit the adaptive code keeps a counter in
        real = [i for i in range(len(raw) // 2) if raw[2 * i]]
        c.expect("_Py_CODEUNIT.op.code, op.arg of a code object never run", [[raw[2 * i], raw[2 * i + 1]] for i in real],
                 [[c.int(at + i * n + c.need("_Py_CODEUNIT", "op.code"), 1),
                   c.int(at + i * n + c.need("_Py_CODEUNIT", "op.arg"), 1)] for i in real])
    c.run("_Py_CODEUNIT", units)


def typing_objects(c) -> None:
    """3.12+: TypeVar, ParamSpec and TypeAliasType objects (Objects/typevarobject.c)."""
    if sys.version_info < (3, 12):
        return
    import typing

    t1, t2 = typing.TypeVar("T1", bound=int, covariant=True), typing.TypeVar("T2", str, bytes, contravariant=True)
    for t in (t1, t2):
        _ids(c, "typevarobject", t, (("name", t.__name__), ("bound", t.__bound__ if t is t1 else None),
                                     ("constraints", t.__constraints__ if t is t2 else None)))
    c.run("typevarobject flags", lambda: c.expect(
        "typevarobject.covariant, contravariant, infer_variance", [[1, 0, 0], [0, 1, 0]],
        [[c.field(id(t), "typevarobject", f) for f in ("covariant", "contravariant", "infer_variance")]
         for t in (t1, t2)]))
    p = typing.ParamSpec("P", infer_variance=True)
    _ids(c, "paramspecobject", p, (("name", p.__name__),))
    c.run("paramspecobject flags", lambda: c.expect(
        "paramspecobject.covariant, contravariant, infer_variance", [0, 0, 1],
        [c.field(id(p), "paramspecobject", f) for f in ("covariant", "contravariant", "infer_variance")]))
    alias = typing.TypeAliasType("Alias", int, type_params=(t1,))
    _ids(c, "typealiasobject", alias, (("name", alias.__name__), ("type_params", alias.__type_params__),
                                       ("value", alias.__value__), ("module", alias.__module__)))


def thread_hooks(c) -> None:
    """The thread state's async-generator hooks, context, coroutine origin depth and data stack."""
    import contextvars
    import ctypes

    ts = ctypes.PYFUNCTYPE(ctypes.c_void_p)(("PyThreadState_Get", ctypes.pythonapi))()
    old = sys.get_asyncgen_hooks()

    def first(agen):
        return None

    def final(agen):
        return None
    sys.set_asyncgen_hooks(firstiter=first, finalizer=final)
    try:
        got = [c.field(ts, "PyThreadState", "async_gen_firstiter"), c.field(ts, "PyThreadState", "async_gen_finalizer")]
    except LookupError:
        got = None
    finally:
        sys.set_asyncgen_hooks(*old)
    if got is not None:
        c.expect("PyThreadState.async_gen_firstiter, async_gen_finalizer (sys.set_asyncgen_hooks)",
                 [id(first), id(final)], got)
    depth = sys.get_coroutine_origin_tracking_depth()
    sys.set_coroutine_origin_tracking_depth(depth + 7)
    try:
        got = c.field(ts, "PyThreadState", "coroutine_origin_tracking_depth")
    except LookupError:
        got = None
    finally:
        sys.set_coroutine_origin_tracking_depth(depth)
    if got is not None:
        c.expect("PyThreadState.coroutine_origin_tracking_depth", depth + 7, got)
    ctx = contextvars.Context()
    c.run("PyThreadState.context", lambda: ctx.run(lambda: c.expect(
        "PyThreadState.context inside Context.run", id(ctx), c.field(ts, "PyThreadState", "context"))))
    try:
        raise LookupError("handled")
    except LookupError:
        c.run("PyThreadState.exc_state", lambda: c.expect(
            "PyThreadState.exc_info is its exc_state outside generators", ts + c.need("PyThreadState", "exc_state"),
            c.field(ts, "PyThreadState", "exc_info")))

    def datastack():
        frame = c.field(id(sys._getframe()), "PyFrameObject", "f_frame")
        chunk = c.field(ts, "PyThreadState", "datastack_chunk")
        top, limit = c.field(ts, "PyThreadState", "datastack_top"), c.field(ts, "PyThreadState", "datastack_limit")
        c.expect("this frame is in the thread's data stack: chunk.data <= frame < top <= limit = chunk + size",
                 [True, True, True],
                 [chunk + c.need("_PyStackChunk", "data") <= frame < top, top <= limit,
                  limit == chunk + c.field(chunk, "_PyStackChunk", "size")])
    c.run("PyThreadState.datastack_chunk", datastack)


def config(c) -> None:
    """The interpreter's PyConfig: its paths, as sys says them."""
    import ctypes

    interp = ctypes.PYFUNCTYPE(ctypes.c_void_p)(("PyInterpreterState_Get", ctypes.pythonapi))()
    base = interp + c.need("PyInterpreterState", "config")
    # not prefix and exec_prefix, which site.py sets to a venv's in 3.9 and 3.10
    names = ("base_prefix", "base_exec_prefix", "executable", "platlibdir", "base_executable")
    truths = [getattr(sys, n, None) for n in names]

    def strings_in_config():
        """offset -> the wide string each pointer-sized word of the PyConfig (and a little past it)
        points to, where it points to one: where each string the config holds is."""
        found = {}
        for off in range(0, c.size("PyConfig") + 64, c.psize):
            word = c.ptr(base, off)
            if word > 4096:
                try:
                    found[off] = wide_string(c, word, 512)
                except c.faults:
                    pass
        return found

    def strings():
        found = strings_in_config()
        c.view.take_used()
        for name, truth in zip(names, truths):
            if truth is None:
                continue
            where = [off for off, text in found.items() if text == truth]
            off = c.need("PyConfig", name)
            if off in where and len(where) > 1:      # another field of the same value: it says nothing of which
                c.skip(f"PyConfig.{name}", "its value is that of another field too")
                continue
            c.expect(f"PyConfig.{name} (sys.{name}, the only field of that value)", truth,
                     wide_string(c, c.field(base, "PyConfig", name)))
        if hasattr(sys, "orig_argv"):      # 3.10+: the command line as given
            argv = base + c.need("PyConfig", "orig_argv")
            n = c.field(argv, "PyWideStringList", "length", signed=True)
            items = c.field(argv, "PyWideStringList", "items")
            # the first 64 arguments, and 4096 characters of each: `wide_string` reads no more
            c.expect("PyConfig.orig_argv, a PyWideStringList (sys.orig_argv)", [a[:4096] for a in sys.orig_argv[:64]],
                     [wide_string(c, c.ptr(items, i * c.psize)) for i in range(min(n, 64))])
    c.run("PyConfig", strings)


def arrays(c) -> None:
    """The array module's arrayobject and arraydescr (from its DWARF), in a live array."""
    import array
    import weakref

    a = array.array("i", [7, -8, 9, 10])
    ref = weakref.ref(a)

    def one():
        d = c.field(id(a), "arrayobject", "ob_descr")
        # array.__sizeof__ is its basic size and its allocated items
        c.expect("arrayobject.ob_item, ob_base.ob_size, allocated (array.__sizeof__), weakreflist",
                 [a.tobytes(), len(a), (a.__sizeof__() - type(a).__basicsize__) // a.itemsize, id(ref)],
                 [c.read(c.field(id(a), "arrayobject", "ob_item"), len(a) * a.itemsize),
                  c.field(id(a), "arrayobject", "ob_base.ob_size"),
                  c.field(id(a), "arrayobject", "allocated"), c.field(id(a), "arrayobject", "weakreflist")])
        c.expect("arraydescr.typecode, itemsize (through arrayobject.ob_descr)", [ord("i"), a.itemsize],
                 [c.field(d, "arraydescr", "typecode"), c.field(d, "arraydescr", "itemsize")])
    c.run("arrayobject", one)


def generators(c) -> None:
    """A generator's own exception state while it handles one, its weak references; a coroutine's
    qualified name and origin."""
    import weakref

    ts = __import__("ctypes").PYFUNCTYPE(__import__("ctypes").c_void_p)(("PyThreadState_Get",
                                                                         __import__("ctypes").pythonapi))()
    seen = []

    def gen():
        try:
            raise LookupError("in a generator")
        except LookupError as e:
            item = c.field(ts, "PyThreadState", "exc_info")
            seen.append((item, e, c.field(item, "_PyErr_StackItem", "exc_value"),
                         c.field(item, "_PyErr_StackItem", "previous_item")))
            yield 1
    g = gen()
    ref = weakref.ref(g)
    c.run("PyGenObject.gi_exc_state", lambda: (next(g), c.expect(
        "PyThreadState.exc_info is the running generator's gi_exc_state, holding its exception",
        [id(g) + c.need("PyGenObject", "gi_exc_state"), id(seen[0][1]),
         ts + c.need("PyThreadState", "exc_state")],
        [seen[0][0], seen[0][2], seen[0][3]])))
    _ids(c, "PyGenObject", g, (("gi_weakreflist", ref), ("gi_code", getattr(g, "gi_code", None)),
                               ("gi_frame", g.gi_frame)))
    if c.off("PyFrameObject", "f_gen") is not None:       # up to 3.10: the frame object of a generator knows it
        _ids(c, "PyFrameObject", g.gi_frame, (("f_gen", g),))
    depth = sys.get_coroutine_origin_tracking_depth()
    sys.set_coroutine_origin_tracking_depth(2)
    try:
        async def coro_fn():
            return 1
        coro = coro_fn()
    finally:
        sys.set_coroutine_origin_tracking_depth(depth)
    _ids(c, "PyCoroObject", coro, (("cr_qualname", coro.__qualname__), ("cr_origin_or_finalizer", coro.cr_origin)))
    coro.close()
    del seen


def frames_and_types(c) -> None:
    """A frame's owner and a module frame's locals; a function type's vectorcall offset; a class's
    cached keys; compact strs' data right after their struct; code objects' locals-plus counts."""
    f = sys._getframe()
    if c.off("PyFrameObject", "f_frame") is not None:
        module = f
        while module.f_back is not None:
            module = module.f_back

        def gen():
            yield sys._getframe()
        g = gen()
        inner = next(g)
        c.run("_PyInterpreterFrame.owner, f_locals", lambda: c.expect(
            "_PyInterpreterFrame.owner of a thread's and a generator's frame, f_locals of the outermost frame",
            [[c.t and 0, 1], id(module.f_locals) if module.f_code.co_flags & 1 == 0 else None],
            [[c.field(c.field(id(x), "PyFrameObject", "f_frame"), "_PyInterpreterFrame", "owner") for x in (f, inner)],
             c.field(c.field(id(module), "PyFrameObject", "f_frame"), "_PyInterpreterFrame", "f_locals")
             if module.f_code.co_flags & 1 == 0 else None]))
        del g, inner

    def vectorcall_offset():
        c.expect("PyTypeObject.tp_vectorcall_offset of function is offsetof(PyFunctionObject, vectorcall)",
                 c.need("PyFunctionObject", "vectorcall"),
                 c.field(id(type(frames_and_types)), "PyTypeObject", "tp_vectorcall_offset"))
    if ("PyFunctionObject", "vectorcall") in c.r.proven:
        c.run("PyTypeObject.tp_vectorcall_offset", vectorcall_offset)

    class Cached:
        def __init__(self):
            self.x = 1
    inst = Cached()
    c.run("PyHeapTypeObject.ht_cached_keys", lambda: c.expect(
        "PyHeapTypeObject.ht_cached_keys: the keys of its instances' split dicts", c.field(id(inst.__dict__),
                                                                                        "PyDictObject", "ma_keys"),
        c.field(id(Cached), "PyHeapTypeObject", "ht_cached_keys")) if c.field(id(inst.__dict__), "PyDictObject",
                                                                              "ma_values") else None)
    texts = ["".join(["offsets", "!"]), "".join(["\u0100", "wide"])]
    c.run("sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject)", lambda: c.expect(
        "a compact str's characters follow its struct: sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject)",
        [texts[0].encode("ascii"), texts[1].encode("utf-16-le" if sys.byteorder == "little" else "utf-16-be")],
        [c.read(id(texts[0]) + c.size("PyASCIIObject"), len(texts[0])),
         c.read(id(texts[1]) + c.size("PyCompactUnicodeObject"), 2 * len(texts[1]))]))
    codes = [frames_and_types.__code__, arrays.__code__, generators.__code__]

    def locals_plus():
        c.expect("PyCodeObject.co_nlocalsplus (names of locals, cells and free variables)",
                 [len(set(co.co_varnames + co.co_cellvars + co.co_freevars)) for co in codes],
                 [c.field(id(co), "PyCodeObject", "co_nlocalsplus") for co in codes])
    c.run("PyCodeObject.co_nlocalsplus", locals_plus)


def check(c) -> None:
    for fn in (buffers, iterators, tracebacks, callables, dict_keys, small, typing_objects, thread_hooks, config,
               arrays, generators, frames_and_types):
        c.attempt(fn.__name__, fn, c)
