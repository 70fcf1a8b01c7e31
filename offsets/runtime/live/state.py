"""Part of the live check (`runner.py`): the interpreter's and the runtime's own pointers, each compared
with `id()` of the object it must point at (or the address the C API or the binary's symbols give):
the runtime, the import machinery (`_frozen_importlib`, `builtins.__import__`), the callables the
specializer caches (`isinstance`, `len`, `list.append`), the typing types (3.12+: `_typing`'s
TypeVar, ParamSpec...), a freed slice kept for reuse, the small ints (up to 3.10); the frozen
modules' table, whose names are what `_imp.is_frozen` says are frozen; a single-phase extension
module's PyModuleDef, which keeps the PyInit_ function its shared object exports.

Every object compared is held by this check while it reads; nothing is written.
"""
from __future__ import annotations

import sys
from .toolkit import this_interp as _interp, this_runtime as _runtime


def _pointers(c, interp: int, pairs) -> None:
    """Each (path, object) the table has: the interpreter's field at `path` holds that object."""
    key = c.t.resolve_struct("PyInterpreterState")
    fields = c.t.fields(key) if key else {}
    for paths, obj in pairs:
        path = next((p for p in paths if p in fields), None)
        if path is None or obj is None:
            continue
        c.run(f"PyInterpreterState.{path}", lambda p=path, o=obj: c.expect(
            f"PyInterpreterState.{p} is {o!r:.60}", id(o), c.field(interp, "PyInterpreterState", p)))


def interpreter(c) -> None:
    import builtins

    interp = _interp()
    runtime = _runtime()
    if runtime is not None:
        c.run("PyInterpreterState.runtime", lambda: c.expect(
            "PyInterpreterState.runtime is &_PyRuntime", runtime, c.field(interp, "PyInterpreterState", "runtime")))
    object().__reduce_ex__(2)       # fills cached_objects.objreduce (3.12+)
    pairs = [(("imports.importlib", "importlib"), sys.modules.get("_frozen_importlib")),
             (("imports.import_func", "import_func"), builtins.__import__),
             (("callable_cache.isinstance",), isinstance), (("callable_cache.len",), len),
             (("callable_cache.list_append",), list.__dict__["append"]),
             (("callable_cache.object__getattribute__",), object.__dict__["__getattribute__"]),
             (("cached_objects.objreduce",), object.__dict__["__reduce__"])]
    if sys.version_info >= (3, 12):
        import _typing

        pairs += [((f"cached_objects.{f}",), getattr(_typing, name, None)) for f, name in (
            ("generic_type", "Generic"), ("typevar_type", "TypeVar"), ("typevartuple_type", "TypeVarTuple"),
            ("paramspec_type", "ParamSpec"), ("paramspecargs_type", "ParamSpecArgs"),
            ("paramspeckwargs_type", "ParamSpecKwargs"))]
    _pointers(c, interp, pairs)
    c.run("PyInterpreterState.slice_cache", _slice_cache, c, interp)


def _slice_cache(c, interp: int) -> None:
    """A slice freed while the interpreter's one-slice cache is empty is kept there."""
    if c.t.build.on("Py_GIL_DISABLED"):
        raise LookupError("a free-threaded build keeps its free lists per thread")
    path = _path(c, ("slice_cache", "object_state.freelists.slices.slice_cache"))
    kept = slice(object(), object(), object())   # takes the cached slice, if any: the cache is empty now
    address = id(kept)
    del kept
    c.expect(f"PyInterpreterState.{path} holds the slice just freed", address,
             c.field(interp, "PyInterpreterState", path))


def _float_freelist(c, interp: int) -> None:
    """A float just freed heads the interpreter's float free list (linked through their types), counted."""
    items = _path(c, ("float_state.free_list", "object_state.freelists.floats.items"))
    counts = _path(c, ("float_state.numfree", "object_state.freelists.floats.numfree"))
    width = c.view.need("PyInterpreterState", counts)[1]
    start, length = _span(c, interp, items, counts)
    head = interp + c.need("PyInterpreterState", items) - start
    count = interp + c.need("PyInterpreterState", counts) - start
    x = float(len(items)) + 0.25
    address = id(x)
    before = c.read(start, length)
    del x
    after = c.read(start, length)
    c.expect(f"PyInterpreterState.{items}, {counts}: a float freed heads its list, counted",
             [address, _word(before, count, width) + 1], [_word(after, head, c.psize), _word(after, count, width)])


def frozen(c) -> None:
    """The frozen modules' table, an array of struct _frozen up to a NULL name: up to 3.10
    `PyImport_FrozenModules` (each name one `_imp.is_frozen` says is frozen), since
    `_PyImport_FrozenBootstrap` (the first names `_imp._frozen_module_names` lists, in its order)."""
    import ctypes
    import _imp

    listed = getattr(_imp, "_frozen_module_names", None)
    symbol = "_PyImport_FrozenBootstrap" if listed else "PyImport_FrozenModules"
    try:
        table = ctypes.c_void_p.in_dll(ctypes.pythonapi, symbol).value
    except ValueError:
        raise LookupError(f"{symbol} is not exported") from None
    if not table:
        raise LookupError(f"{symbol} is NULL")
    names = c.names(table, "_frozen", "name", 256)
    if listed:
        truth = listed()[:len(names)] if len(names) >= 2 else ["at least two modules"]
    else:
        truth = [n for n in names if _imp.is_frozen(n)] or ["at least one module"]
    c.expect(f"struct _frozen.name, sizeof(struct _frozen) ({symbol}: its frozen modules)", truth, names)


#: (what, the interpreter's paths of its free list and count: up to 3.12, 3.13+), for lists and dicts,
#: whose free lists are arrays of the objects freed, counted
ARRAY_FREELISTS = (("a list", ("list.free_list", "object_state.freelists.lists.items"),
                    ("list.numfree", "object_state.freelists.lists.numfree")),
                   ("a dict", ("dict_state.free_list", "object_state.freelists.dicts.items"),
                    ("dict_state.numfree", "object_state.freelists.dicts.numfree")))


def freelists(c) -> None:
    """Objects just freed go to the interpreter's free lists: a list or dict at the end of its array
    (one more counted), a 7-item tuple at the head of the 7-item tuples' linked list. Read with
    nothing allocated in between (ints and bytes only), where another thread could take them only in
    between two reads."""
    if c.t.build.on("Py_GIL_DISABLED"):
        raise LookupError("a free-threaded build keeps its free lists per thread")
    interp = _interp()
    for what, items, counts in ARRAY_FREELISTS:
        c.run(f"the free list of {what}", _array_freelist, c, interp, what, items, counts)
    c.run("the free list of 7-item tuples", _tuple_freelist, c, interp)
    c.run("the free list of floats", _float_freelist, c, interp)


def _path(c, paths):
    key = c.t.resolve_struct("PyInterpreterState")
    found = next((p for p in paths if p in c.t.fields(key)), None)
    if found is None:
        raise LookupError(f"none of {', '.join(paths)} in PyInterpreterState")
    return found


def _span(c, interp: int, items: str, counts: str):
    """(start, length) of the interpreter's bytes that hold a free list and its count, both whole."""
    (ia, isize), (ca, csize) = (c.view.need("PyInterpreterState", p) for p in (items, counts))
    lo, hi = min(ia, ca), max(ia + isize, ca + csize)
    if hi - lo > 4096:
        raise LookupError(f"{items} and {counts} are more than a page apart")
    return interp + lo, hi - lo


def _word(image: bytes, at: int, n: int) -> int:
    return int.from_bytes(image[at:at + n], sys.byteorder)


def _array_freelist(c, interp: int, what: str, items, counts) -> None:
    items, counts = _path(c, items), _path(c, counts)
    width = c.view.need("PyInterpreterState", counts)[1]
    start, length = _span(c, interp, items, counts)
    at_items = interp + c.need("PyInterpreterState", items) - start
    at_n = interp + c.need("PyInterpreterState", counts) - start
    # a full free list (80 entries) counts no more frees: a few taken from it first, kept till the end
    room = [[] for _ in range(4)] if what == "a list" else [{} for _ in range(4)]
    # each image is read right after a free: nothing allocated in between but ints and bytes
    a, b = ([], []) if what == "a list" else ({}, {})
    first_id, second_id = id(a), id(b)
    del a
    after_one = c.read(start, length)
    del b
    after_two = c.read(start, length)
    n = _word(after_one, at_n, width)
    c.expect(f"PyInterpreterState.{items}, {counts}: {what} freed is counted, at the end of the array",
             [first_id, n + 1, second_id],
             [_word(after_one, at_items + (n - 1) * c.psize, c.psize) if n else None, _word(after_two, at_n, width),
              _word(after_two, at_items + n * c.psize, c.psize)])
    del room


def _tuple_freelist(c, interp: int) -> None:
    """A 7-item tuple freed heads its list, counted; and one of the most items a list keeps, in the last
    entry of both arrays (so the free lists' struct reaches to their end: pinch.after_member)."""
    items = _path(c, ("tuple.free_list", "object_state.freelists.tuples.items"))
    counts = _path(c, ("tuple.numfree", "object_state.freelists.tuples.numfree"))
    row = c.view.row("PyInterpreterState", counts)[1]
    last = row.array_len - 1 if row.array_len else None
    shift = 1 if sys.version_info >= (3, 11) else 0     # up to 3.10 entry 0 is the empty tuple's
    start, length = _span(c, interp, items, counts)
    key = c.view.key("PyInterpreterState")
    for size in (7, None if last is None else last + shift):
        if size is None:
            continue
        index = size - shift
        head = interp + c.need("PyInterpreterState", items) + index * c.psize - start
        count = interp + c.need("PyInterpreterState", counts) + index * 4 - start
        o = object()
        t = tuple([o] * size)
        address = id(t)
        before = c.read(start, length)
        del t
        after = c.read(start, length)
        if index == last:      # the last element of each array read (pinch.after_member)
            c.view.used.update({(key, f"{items}[-1]"), (key, f"{counts}[-1]")})
        c.expect(f"PyInterpreterState.{items}[{index}], {counts}[{index}]: a {size}-item tuple freed heads its "
                 "list, counted",
                 [address, _word(before, count, 4) + 1], [_word(after, head, c.psize), _word(after, count, 4)])


def small_ints(c) -> None:
    """Up to 3.10: the interpreter's small ints, -5 to 256, each the object Python gives for it."""
    if c.off("PyInterpreterState", "small_ints") is None:
        raise LookupError("no PyInterpreterState.small_ints")
    interp, values = _interp(), [-5, -1, 0, 1, 7, 256]
    at = c.need("PyInterpreterState", "small_ints")
    c.expect("PyInterpreterState.small_ints[] (-5 to 256): the int objects themselves", [id(v) for v in values],
             [c.ptr(interp, at + (v + 5) * c.psize) for v in values])


def module_init(c) -> None:
    """A single-phase extension module's PyModuleDef keeps its PyInit_ function (m_base.m_init), the
    symbol its shared object exports: `_ctypes` (this check's own), single-phase up to 3.12
    (PyInit__ctypes returns PyModule_Create's module; a multi-phase one returns its def, which keeps
    no m_init, slots or not)."""
    import ctypes

    if sys.version_info >= (3, 13):
        raise LookupError("_ctypes is a multi-phase module since 3.13")
    module = sys.modules.get("_ctypes")
    path = getattr(module, "__file__", None) or ""
    if not path.endswith(".so"):
        raise LookupError("_ctypes is not a shared object here")
    get_def = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyModule_GetDef", ctypes.pythonapi))
    init = ctypes.cast(ctypes.CDLL(path).PyInit__ctypes, ctypes.c_void_p).value
    c.expect("PyModuleDef.m_base.m_init of _ctypes is its PyInit__ctypes", init,
             c.field(get_def(module), "PyModuleDef", "m_base.m_init"))


def check(c) -> None:
    c.attempt("the interpreter's free lists", freelists, c)
    c.attempt("PyInterpreterState.small_ints", small_ints, c)
    c.attempt("PyModuleDef.m_base.m_init", module_init, c)
    c.attempt("the interpreter's pointers", interpreter, c)
    c.attempt("the frozen modules", frozen, c)
