"""Part of the live check (`runner.py`): more objects' fields, each against what the object or the
interpreter says of it: dict views' dict, NameError's name, a METH_METHOD builtin's defining class,
a str subclass's own data (not compact), a UCS4 str's wstr (up to 3.11), static strs, an object's
weak references in the order `weakref.getweakrefs` lists them, typing's lazily evaluated bounds,
constraints, defaults and alias values (the one function `gc.get_referents` finds in each), a
generic function's type parameters, a class's `__slots__`, a getset's doc, getter and setter, a
traceback's given line, a keys object's lookup function (up to 3.10) and reference count (one for
each dict sharing it), instance dicts' values count, the GC's links between three objects made in
a row (`gc.get_objects` lists them in that order) and its oldest generation's list and count.

Every object read is held by this check while it reads.
"""
from __future__ import annotations

import sys

from .toolkit import holding as _ids, this_interp as _interp, this_runtime as _runtime

METH_METHOD = 0x0200


def views(c) -> None:
    d = {"k": 1}
    for view in (d.keys(), d.values(), d.items()):
        _ids(c, "_PyDictViewObject", view, (("dv_dict", d),))


def exceptions(c) -> None:
    if sys.version_info >= (3, 10):
        n = NameError("x", name="".join(["some", "name"]))
        _ids(c, "PyNameErrorObject", n, (("name", n.name),))


def _method_method():
    """A bound builtin method whose PyMethodDef has METH_METHOD (its PyCMethodObject knows its class),
    with the class, or None."""
    import ctypes
    import os

    flags = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(("PyCFunction_GetFlags", ctypes.pythonapi))
    candidates = []
    if "array" in sys.modules:
        a = sys.modules["array"].array("i")
        candidates.append((a.__reduce_ex__, type(a)))
    with os.scandir(os.path.dirname(os.path.abspath(__file__))) as entries:
        entry = next(entries, None)
    if entry is not None:
        candidates.append((entry.is_dir, type(entry)))
    for bound, cls in candidates:
        if flags(bound) & METH_METHOD:
            return bound, cls
    return None


def cmethod(c) -> None:
    found = _method_method()
    if found is None:
        raise LookupError("no METH_METHOD builtin here")
    bound, cls = found
    _ids(c, "PyCMethodObject", bound, (("mm_class", cls),))


def strings(c) -> None:
    """A str subclass's instance is not compact: its characters are at data.any."""
    class Text(str):
        pass
    texts = [Text("".join(["sub", "class"])), Text("".join(["lat", "\xe9", "1"]))]

    def data():
        c.expect("PyUnicodeObject.data.any of 2 str subclass instances", [t.encode("latin-1") for t in texts],
                 [c.read(c.field(id(t), "PyUnicodeObject", "data.any"), len(t)) for t in texts])
    c.run("PyUnicodeObject.data.any", data)
    if c.off("PyASCIIObject", "state.statically_allocated") is not None:     # 3.12+
        c.run("PyASCIIObject.state.statically_allocated", _static_strings, c)
    if c.off("PyASCIIObject", "wstr") is not None:
        wide, latin = "".join(["wide", "\U0001F600"]), "".join(["lat", "\xe9"])

        def wstr():     # up to 3.11, with a 4-byte wchar_t: a UCS4 str's wstr is its own data
            import ctypes

            if ctypes.sizeof(ctypes.c_wchar) != 4:
                raise LookupError("wchar_t is not 4 bytes")
            c.expect("PyASCIIObject.wstr, PyCompactUnicodeObject.wstr_length of a UCS4 and a Latin-1 str",
                     [[id(wide) + c.size("PyCompactUnicodeObject"), 0], [len(wide), 0]],
                     [[c.field(id(s), "PyASCIIObject", "wstr") for s in (wide, latin)],
                      [c.field(id(s), "PyCompactUnicodeObject", "wstr_length") for s in (wide, latin)]])
        c.run("PyASCIIObject.wstr", wstr)
    if c.off("PyASCIIObject", "state.ready") is not None:     # up to 3.11
        plain = "".join(["com", "pact"])
        c.run("PyASCIIObject.state.ready", lambda: c.expect(
            "PyASCIIObject.state.ready, compact of a compact and a subclass's str", [[1, 1], [1, 0]],
            [[c.field(id(s), "PyASCIIObject", "state.ready"), c.field(id(s), "PyASCIIObject", "state.compact")]
             for s in (plain, texts[0])]))


def _static_strings(c) -> None:
    """A str the runtime holds in its own static data (an identifier, a one-character or the empty
    str) is statically allocated; one made here, interned or not, is not."""

    runtime = _runtime()
    if runtime is None:
        raise LookupError("_PyRuntime is not exported")
    texts = ["__init__", "a", "", "".join(["dyn", "amic"]), sys.intern("".join(["inter", "ned"]))]
    size = c.size("_PyRuntimeState")
    c.view.take_used()
    c.expect("PyASCIIObject.state.statically_allocated of strs in _PyRuntime's static objects and of others",
             [int(0 <= id(s) - runtime < size) for s in texts],
             [c.field(id(s), "PyASCIIObject", "state.statically_allocated") for s in texts])


def split_values(c) -> None:
    """3.13+: the values of an instance dict count its attributes (PyDictValues.size)."""
    if c.off("PyDictValues", "size") is None:
        raise LookupError("no PyDictValues.size")

    class Few:
        def __init__(self, n):
            for i in range(n):
                setattr(self, f"a{i}", i)
    insts = [Few(2), Few(3), Few(1)]
    dicts = [i.__dict__ for i in insts]
    c.expect("PyDictValues.size of 3 instance dicts", [len(d) for d in dicts],
             [c.field(c.field(id(d), "PyDictObject", "ma_values"), "PyDictValues", "size") for d in dicts])


def weakrefs(c) -> None:
    """An object's weak references are a list from its tp_weaklist along wr_next (and back along
    wr_prev), in the order weakref.getweakrefs lists them."""
    import weakref

    class Target:
        pass
    target = Target()
    callbacks = [lambda r: None, lambda r: None, lambda r: None]
    refs = [weakref.ref(target, cb) for cb in callbacks]
    order = weakref.getweakrefs(target)

    def links():
        after = [id(r) for r in order[1:]] + [0]
        before = [0] + [id(r) for r in order[:-1]]
        c.expect("PyWeakReference.wr_next, wr_prev of 3 weak references (weakref.getweakrefs)", [after, before],
                 [[c.field(id(r), "PyWeakReference", "wr_next") for r in order],
                  [c.field(id(r), "PyWeakReference", "wr_prev") for r in order]])
    c.run("PyWeakReference.wr_next", links)
    del refs


#: 3.12+: generic functions and an alias, whose bounds, constraints, defaults and values are
#: evaluated lazily by a function of their own
TYPING_312 = "def generic[B: int, C: (str, bytes)](): pass\ntype Alias = list[int]\n"
TYPING_313 = "def defaults[D = int, *E = *tuple[int], **F = [int]](): pass\n"


def typing_lazy(c) -> None:
    if sys.version_info < (3, 12):
        return
    import gc
    import typing

    ns: dict = {}
    exec(TYPING_312 + (TYPING_313 if sys.version_info >= (3, 13) else ""), ns)     # noqa: S102 - our own text
    func = type(typing_lazy)

    def evaluator(obj):
        found = [r for r in gc.get_referents(obj) if type(r) is func]
        return found[0] if len(found) == 1 else None
    b, cons = ns["generic"].__type_params__
    _ids(c, "PyFunctionObject", ns["generic"], (("func_typeparams", ns["generic"].__type_params__),))
    _ids(c, "typevarobject", b, (("evaluate_bound", evaluator(b)),))
    _ids(c, "typevarobject", cons, (("evaluate_constraints", evaluator(cons)),))
    _ids(c, "typealiasobject", ns["Alias"], (("compute_value", evaluator(ns["Alias"])),))
    p, ts = typing.ParamSpec("P", bound=int), typing.TypeVarTuple("".join(["T", "s"]))
    _ids(c, "paramspecobject", p, (("bound", p.__bound__),))
    _ids(c, "typevartupleobject", ts, (("name", ts.__name__),))
    if sys.version_info >= (3, 13):
        for struct, param in zip(("typevarobject", "typevartupleobject", "paramspecobject"),
                                 ns["defaults"].__type_params__):
            _ids(c, struct, param, (("evaluate_default", evaluator(param)),))
        given = [typing.TypeVar("G", default=int), typing.TypeVarTuple("H", default=tuple),
                 typing.ParamSpec("I", default=dict)]
        for struct, param in zip(("typevarobject", "typevartupleobject", "paramspecobject"), given):
            _ids(c, struct, param, (("default_value", param.__default__),))


def slots(c) -> None:
    """A class's __slots__ names, kept sorted in a tuple of its own (PyHeapTypeObject.ht_slots)."""
    class Slotted:
        __slots__ = ("zeta", "alpha", "mid")

    def one():
        t = c.field(id(Slotted), "PyHeapTypeObject", "ht_slots")
        n = c.field(t, "PyVarObject", "ob_size")
        at = c.need("PyTupleObject", "ob_item")
        c.expect("PyHeapTypeObject.ht_slots: a tuple of the __slots__ names, sorted",
                 [id(tuple), sorted(id(s) for s in Slotted.__slots__)],
                 [c.field(t, "PyObject", "ob_type"), sorted(c.ptr(t, at + i * c.psize) for i in range(min(n, 8)))])
    c.run("PyHeapTypeObject.ht_slots", one)


def getset(c) -> None:
    """A getset's doc; its getter, which int's `real` and `numerator` share (longobject.c: each is the
    int itself) and `imag` has another of; its setter, none for a read-only one (setting `int.real`
    raises), one for a function's `__name__`."""
    names = ("real", "numerator", "imag")
    ds = [int.__dict__[n] for n in names] + [type(getset).__dict__["__name__"]]

    def one():
        defs = [c.field(id(d), "PyGetSetDescrObject", "d_getset") for d in ds]
        get = [c.field(d, "PyGetSetDef", "get") for d in defs]
        put = [c.field(d, "PyGetSetDef", "set") for d in defs]
        c.expect("PyGetSetDef.doc (a getset descriptor's __doc__), get (real's is numerator's, not imag's), "
                 "set (none for int.real, one for a function's __name__)",
                 [ds[0].__doc__.encode(), True, True, 0, True],
                 [c.cstring(c.field(defs[0], "PyGetSetDef", "doc"), 1024), get[0] == get[1] != 0,
                  get[0] != get[2], put[0], put[3] != 0])
    c.run("PyGetSetDef", one)


def made_tracebacks(c) -> None:
    """A traceback made by `types.TracebackType` keeps the line it was given (tb_lineno)."""
    import types

    frame = sys._getframe()
    tbs = [types.TracebackType(None, frame, 0, line) for line in (12345, 23456)]
    c.expect("PyTracebackObject.tb_lineno of tracebacks made with lines 12345 and 23456", [12345, 23456],
             [c.field(id(t), "PyTracebackObject", "tb_lineno", signed=True) for t in tbs])


def lookups(c) -> None:
    """Up to 3.10: a keys object's lookup function (dk_lookup) is one for str-only keys never deleted
    (two such dicts share it), another once one is deleted, another for other keys, another for split
    dicts."""
    if c.off("PyDictKeysObject", "dk_lookup") is None:
        raise LookupError("no PyDictKeysObject.dk_lookup (3.11+)")

    class Split:
        def __init__(self):
            self.a = 1
    deleted = {"a": 1, "b": 2}
    del deleted["a"]
    dicts = [{"x": 1}, {"y": 2}, deleted, {1.5: 1}, Split().__dict__]
    f = [c.field(c.field(id(d), "PyDictObject", "ma_keys"), "PyDictKeysObject", "dk_lookup") for d in dicts]
    c.expect("PyDictKeysObject.dk_lookup: str-only keys share one, a deletion, other keys and split dicts have "
             "others", [True, 4], [f[0] == f[1] != 0, len(set(f[1:]))])


def keys_refcnt(c) -> None:
    """A dict's own keys have one reference; the keys a class's instance dicts share have one from the
    class and one from each dict."""
    if c.t.build.on("Py_GIL_DISABLED"):
        raise LookupError("a free-threaded build shares keys otherwise")

    class Shared:
        def __init__(self):
            self.a, self.b = 1, 2
    general, insts = {1.5: 1}, [Shared() for _ in range(3)]
    dicts = [i.__dict__ for i in insts]

    def refcnt(d):
        return c.field(c.field(id(d), "PyDictObject", "ma_keys"), "PyDictKeysObject", "dk_refcnt", signed=True)
    got = [refcnt(general), refcnt(dicts[0])]
    insts.append(Shared())
    dicts.append(insts[-1].__dict__)
    got.append(refcnt(dicts[0]))
    c.expect("PyDictKeysObject.dk_refcnt of a dict's own keys, and of keys shared by 3 and then 4 instance dicts",
             [1, 4, 5], got)


def gc_links(c) -> None:
    """Three lists made in a row follow each other in the youngest generation (gc.get_objects(0) in its
    order): each one's PyGC_Head, just before it, links to the next (_gc_next) and back (_gc_prev, less
    its two flag bits)."""
    import gc

    if c.t.build.on("Py_GIL_DISABLED"):
        raise LookupError("a free-threaded build has no PyGC_Head")
    # the collector is left as it is (turning it off and on again could undo another thread's
    # gc.disable()): a collection between the reads moves the lists out of the youngest generation,
    # and then they are not in a row there, and nothing is compared
    a, b, d = [], [], []
    head = c.size("PyGC_Head")
    got = [[c.field(id(x) - head, "PyGC_Head", "_gc_next") for x in (a, b)],
           [c.field(id(x) - head, "PyGC_Head", "_gc_prev") & ~3 for x in (b, d)]]
    young = gc.get_objects(0)
    at = {id(o): i for i, o in enumerate(young) if o is a or o is b or o is d}
    if [at.get(id(x)) for x in (b, d)] != [at.get(id(a), -9) + 1, at.get(id(a), -9) + 2]:
        raise LookupError("the three lists are not in a row in the youngest generation")
    c.expect("PyGC_Head._gc_next, _gc_prev of three lists made in a row (gc.get_objects(0))",
             [[id(b) - head, id(d) - head], [id(a) - head, id(b) - head]], got)
    del young


def generations(c) -> None:
    """The oldest generation's list starts at the first object `gc.get_objects(2)` lists, and counts what
    `gc.get_count()` says. Read in that entry of PyInterpreterState.gc.generations, its first member
    (head._gc_next, at 0) and its last (count, ending the struct) pin the entry, as its stride is proven
    by its three thresholds (capi.py): every field of gc_generation is then where the table says."""
    import gc

    if c.t.build.on("Py_GIL_DISABLED") or sys.version_info >= (3, 14):
        raise LookupError("generations of another kind")
    rows = c.t.fields(c.t.resolve_struct("gc_generation")) if c.t.resolve_struct("gc_generation") else {}
    if not {"head._gc_next", "count"} <= set(rows):
        raise LookupError("no gc_generation.head._gc_next or count")
    ends = sorted(r[0] + r[1] for r in rows.values())
    # the bounds hold only where the table has head._gc_next at 0 and count alone ending the struct
    pinned = rows["head._gc_next"][0] == 0 and rows["count"][0] + rows["count"][1] == ends[-1] == \
        c.t.size(c.t.resolve_struct("gc_generation")) and ends[-2] < ends[-1]

    if not gc.get_count()[2] and gc.isenabled() and "t" not in getattr(sys, "abiflags", ""):
        # a collection of the younger generations counts one in the oldest; only where the collector
        # runs of itself anyway (never where the program turned it off), and never where it stops the
        # world (a free-threaded interpreter, whatever the table: docs/identity.md)
        gc.collect(1)
    entry = _interp() + c.need("PyInterpreterState", "gc.generations") + 2 * c.size("gc_generation")
    head = c.size("PyGC_Head")
    for _ in range(3):      # the reads allocate: a collection of the younger generations meanwhile counts one more
        oldest, counts = gc.get_objects(2), gc.get_count()
        if not oldest or not counts[2]:
            raise LookupError("the oldest generation is empty or counts nothing")
        got = [c.field(entry, "gc_generation", "head._gc_next"), c.field(entry, "gc_generation", "count")]
        if gc.get_count()[2] == counts[2]:
            break
    if not pinned:      # compared all the same (a wrong table fails), but nothing is proven by it
        c.view.take_used()
    c.expect("gc_generation.head._gc_next, count of the oldest generation (gc.get_objects(2)[0]'s PyGC_Head, "
             "gc.get_count()[2])" + ("" if pinned else " (its table's layout cannot be pinned)"),
             [id(oldest[0]) - head, counts[2]], got)
    del oldest


def gc_heads(c) -> None:
    """The collector's own list heads: `gc.generation0` points to the youngest generation's head (the
    first entry of the proven `gc.generations`), and the permanent generation, empty where
    `gc.get_freeze_count()` is 0, is a head that points to itself both ways: the only such pair of
    words in the collector's state but for the generations' own heads (where their stride puts them)."""
    import gc


    if c.t.build.on("Py_GIL_DISABLED") or sys.version_info >= (3, 14):
        raise LookupError("generations of another kind")
    key = c.view.key("PyInterpreterState")
    if (key, "gc.generations") not in c.r.proven or (c.view.key("gc_generation"), None) not in c.r.proven:
        raise LookupError("PyInterpreterState.gc.generations and sizeof(gc_generation) are not proven")
    interp = _interp()
    young, step = interp + c.need("PyInterpreterState", "gc.generations"), c.size("gc_generation")
    c.view.take_used()
    c.run("PyInterpreterState.gc.generation0", lambda: c.expect(
        "PyInterpreterState.gc.generation0: the youngest generation's head", young,
        c.field(interp, "PyInterpreterState", "gc.generation0")))
    if gc.get_freeze_count():
        raise LookupError("objects are frozen: the permanent generation is not empty")
    start, size = c.view.need("PyInterpreterState", "gc")
    c.view.take_used()
    image, p = c.read(interp + start, size), c.psize
    heads = {young + i * step for i in range(len(gc.get_threshold()))}
    pairs = [interp + start + i for i in range(0, size - 2 * p + 1, p)
             if int.from_bytes(image[i:i + p], sys.byteorder) == interp + start + i ==
             int.from_bytes(image[i + p:i + 2 * p], sys.byteorder) and interp + start + i not in heads]
    if len(pairs) != 1:
        raise LookupError(f"{len(pairs)} heads point to themselves in the collector's state")
    at = interp + c.need("PyInterpreterState", "gc.permanent_generation.head._gc_next")
    c.expect("PyInterpreterState.gc.permanent_generation.head: the only other head that points to itself "
             "(gc.get_freeze_count() 0)", [pairs[0], pairs[0]],
             [at, c.field(interp, "PyInterpreterState", "gc.permanent_generation.head._gc_prev")])


def check(c) -> None:
    for fn in (views, exceptions, cmethod, strings, weakrefs, typing_lazy, slots, getset, made_tracebacks, lookups,
               keys_refcnt, split_values, gc_links, generations, gc_heads):
        c.attempt(fn.__name__, fn, c)
