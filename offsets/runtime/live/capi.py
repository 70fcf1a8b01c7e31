"""Part of the live check (`runner.py`): what CPython's C API says, against a raw read of the same
field through the table (called through ctypes, in this thread, with every object passed held by
this check).

- `PyType_GetSlot` for every slot of typeslots.h (`Py_tp_*`, `Py_nb_*`, `Py_sq_*`, `Py_mp_*`,
  `Py_am_*`, `Py_bf_*`; its numbers are the table's constants, which the limited API never
  renumbers), on a class that fills most of them (3.9: heap types only) and on builtin types;
- the interpreter's id, the thread state's frame, the frame's code and back link, the eval-frame
  function, the recursion limits, the exception being handled, and up to 3.11 the trace and profile
  functions (from 3.12 `sys.settrace`/`sys.setprofile` instrument every code object of the
  interpreter: docs/identity.md, "What the live check never does").

A slot's value is taken as proof of its offset only where it occurs once among the words where the
field can be (the heap type object, whose suites are inside it; a static type's suite, from where
its pointer points to 8 words past the table's end of it): a table that moved the field onto another
slot of the same value (two NULLs, or one function serving two slots) cannot pass.
"""
from __future__ import annotations

import sys
from .toolkit import c_function as _api, may_trace, words_holding as _words


#: slot prefix -> (the PyTypeObject field pointing to its suite, the suite's struct)
SUITES = {"tp": (None, "PyTypeObject"), "nb": ("tp_as_number", "PyNumberMethods"),
          "sq": ("tp_as_sequence", "PySequenceMethods"), "mp": ("tp_as_mapping", "PyMappingMethods"),
          "am": ("tp_as_async", "PyAsyncMethods"), "bf": ("tp_as_buffer", "PyBufferProcs")}


def _rich_class():
    """A class whose slots are (nearly) all filled, each with a function of its own."""
    ns = {}
    for name in ("add sub mul mod divmod pow lshift rshift and xor or floordiv truediv matmul iadd isub imul imod "
                 "ipow ilshift irshift iand ixor ior ifloordiv itruediv imatmul neg pos abs invert int float index "
                 "bool len getitem setitem delitem contains iter next call repr str hash eq lt get set delete "
                 "init await aiter anext getattr setattr delattr del buffer release_buffer").split():
        ns[f"__{name}__"] = (lambda self, *a: 0)
    return type("Rich", (), ns)


def _generator():
    yield 1


def slots(c) -> None:
    """Every slot of typeslots.h through `PyType_GetSlot`, against a read of the same field."""
    import ctypes

    get_slot = _api("PyType_GetSlot", ctypes.c_void_p, ctypes.py_object, ctypes.c_int)
    ids = {name: row.value for name, row in c.constants().items() if name[:3] == "Py_" and name[5:6] == "_" and
           name[3:5] in SUITES and isinstance(row.value, int)}
    if not ids:
        raise LookupError("the table has no Py_tp_* slot constants")
    rich = _rich_class()
    generator = type(_generator())      # its PyAsyncMethods has am_send (3.10+)
    types = [rich] + ([list, dict, int, str, type, object, bytes, memoryview, property, generator]
                      if sys.version_info >= (3, 10) else [])
    seen = set()
    for tp in types:
        start, end = id(tp), id(tp) + type(tp).__basicsize__
        for name, slot in sorted(ids.items()):
            prefix, field = name[3:5], name[3:]
            if name in seen:
                continue
            try:
                value = get_slot(tp, slot) or 0
            except SystemError:     # a static type before 3.10
                break
            if not value:
                continue
            pointer, struct = SUITES[prefix]

            def one():
                base = id(tp)
                if pointer is not None:
                    base = c.field(id(tp), "PyTypeObject", pointer)
                    if not base:
                        raise LookupError(f"{tp.__name__}.{pointer} is NULL")
                off = c.need(struct, field)
                lo, hi = start, end
                if not start <= base < end:
                    # a static type's suite is a static struct of its own: the words from where it
                    # starts to past where the table ends it (8 more words than the table has)
                    lo, hi = base, base + c.size(struct) + 8 * c.psize
                where = _words(c, lo, hi, value)
                if base + off in where and len(where) > 1:
                    raise LookupError(f"{field}'s value is not once in {tp.__name__}")
                c.expect(f"PyType_GetSlot({tp.__name__}, {name}) == {struct}.{field}", value,
                         c.ptr(base, off))
                seen.add(name)
            c.run(f"{struct}.{field} of {tp.__name__}", one)


def suites(c) -> None:
    """A heap type's suites are its own: `tp_as_number` points to its `as_number`, and so on."""
    rich = _rich_class()
    for prefix, (pointer, struct) in sorted(SUITES.items()):
        if pointer is None:
            continue
        member = pointer.replace("tp_", "")
        c.run(f"PyHeapTypeObject.{member}", lambda p=pointer, m=member: c.expect(
            f"PyTypeObject.{p} of a class is its PyHeapTypeObject.{m}", id(rich) + c.need("PyHeapTypeObject", m),
            c.field(id(rich), "PyTypeObject", p)))


def _states():
    """(this thread's PyThreadState *, its PyInterpreterState *) from the C API."""
    import ctypes

    ts = _api("PyThreadState_Get", ctypes.c_void_p)()
    try:
        interp = _api("PyThreadState_GetInterpreter", ctypes.c_void_p, ctypes.c_void_p)(ts)   # 3.9+
    except AttributeError:
        interp = _api("PyInterpreterState_Head", ctypes.c_void_p)()
    return ts, interp


def interpreter(c) -> None:
    """The interpreter's id (only where it is not 0: the main interpreter's 0 is too common a value
    to say where it is), the eval-frame function, the GC's state and the recursion limit."""
    import ctypes
    import gc

    ts, interp = _states()
    ident = _api("PyInterpreterState_GetID", ctypes.c_int64, ctypes.c_void_p)(interp)
    if ident:
        c.run("PyInterpreterState.id", lambda: c.expect("PyInterpreterState.id (PyInterpreterState_GetID)", ident,
                                                        c.field(interp, "PyInterpreterState", "id", signed=True)))

    def eval_frame():
        try:
            get = _api("_PyInterpreterState_GetEvalFrameFunc", ctypes.c_void_p, ctypes.c_void_p)
        except AttributeError:
            raise LookupError("no _PyInterpreterState_GetEvalFrameFunc") from None
        raw = c.field(interp, "PyInterpreterState", "eval_frame")
        if not raw and sys.version_info >= (3, 11):     # 3.11+ keep NULL for the default function
            raise LookupError("the eval-frame function is the default one, kept as NULL")
        c.expect("PyInterpreterState.eval_frame (_PyInterpreterState_GetEvalFrameFunc)", get(interp), raw)
    c.run("PyInterpreterState.eval_frame", eval_frame)

    def gc_state():
        at = interp + c.need("PyInterpreterState", "gc.generations")
        step, threshold = c.size("gc_generation"), c.need("gc_generation", "threshold")
        c.expect("PyInterpreterState.gc (gc.get_threshold, isenabled, get_debug)",
                 [list(gc.get_threshold()), gc.isenabled(), gc.get_debug()],
                 [[c.int(at + i * step + threshold, 4, signed=True) for i in range(len(gc.get_threshold()))],
                  bool(c.field(interp, "PyInterpreterState", "gc.enabled")),
                  c.field(interp, "PyInterpreterState", "gc.debug")])
    c.run("PyInterpreterState.gc", gc_state)
    c.run("recursion limit", lambda: c.expect("the recursion limit (sys.getrecursionlimit)", sys.getrecursionlimit(),
                                              c.field(interp, "PyInterpreterState", "ceval.recursion_limit")))


def thread(c) -> None:
    """The thread state: its recursion counters one call apart, the exception being handled, the
    trace and profile functions after sys.settrace/sys.setprofile (up to 3.11, where they are this
    thread's alone), and the frames it runs."""
    ts, _ = _states()
    for path, step in (("recursion_depth", 1), ("py_recursion_remaining", -1), ("recursion_remaining", -1)):
        def depth(p=path, step=step):
            off = c.need("PyThreadState", p)

            def at(n):
                return c.int(ts + off, 4, signed=True) if n == 0 else at(n - 1)
            got = [at(n) for n in (0, 1, 2)]
            c.expect(f"PyThreadState.{p} one Python call apart", [got[0] + step, got[0] + 2 * step], got[1:])
        c.run(f"PyThreadState.{path}", depth)
    for path in ("py_recursion_limit", "recursion_limit"):
        c.run(f"PyThreadState.{path}", lambda p=path: c.expect(
            f"PyThreadState.{p} (sys.getrecursionlimit)", sys.getrecursionlimit(),
            c.field(ts, "PyThreadState", p, signed=True)))

    def handled():
        try:
            raise LookupError("the exception being handled")
        except LookupError as e:
            item = c.field(ts, "PyThreadState", "exc_info")
            c.expect("PyThreadState.exc_info -> _PyErr_StackItem.exc_value while handling", id(e),
                     c.field(item, "_PyErr_StackItem", "exc_value"))
            if c.off("_PyErr_StackItem", "exc_type") is not None:
                c.expect("_PyErr_StackItem.exc_type, exc_traceback", [id(type(e)), id(e.__traceback__)],
                         [c.field(item, "_PyErr_StackItem", "exc_type"),
                          c.field(item, "_PyErr_StackItem", "exc_traceback")])
    c.run("the exception being handled", handled)
    c.run("trace and profile functions", _tracing, c, ts)
    c.run("frames", _frames, c)


def _no_trace(*args):
    return None


def _tracing(c, ts: int) -> None:

    may_trace()
    def profiler(*args):
        return None
    for what, setter, fn in (("profile", sys.setprofile, profiler), ("trace", sys.settrace, _no_trace)):
        setter(fn)
        try:
            got = [c.field(ts, "PyThreadState", f"c_{what}obj"), bool(c.field(ts, "PyThreadState", f"c_{what}func"))]
        finally:
            setter(None)
        c.expect(f"PyThreadState.c_{what}obj, c_{what}func after sys.set{what}", [id(fn), True], got)


def _frames(c) -> None:
    """This function's frame and its caller's, through the frame objects (3.11+: their
    _PyInterpreterFrame), against the frame objects' attributes."""
    f = sys._getframe()
    back = f.f_back
    f.f_trace = _no_trace
    lines, opcodes = f.f_trace_lines, f.f_trace_opcodes
    f.f_trace_lines, f.f_trace_opcodes = False, True
    try:
        flags = [c.field(id(f), "PyFrameObject", "f_trace"), c.field(id(f), "PyFrameObject", "f_trace_lines"),
                 c.field(id(f), "PyFrameObject", "f_trace_opcodes")]
    finally:
        f.f_trace_lines, f.f_trace_opcodes = lines, opcodes
        f.f_trace = None
    c.expect("PyFrameObject.f_trace, f_trace_lines, f_trace_opcodes", [id(_no_trace), 0, 1], flags)
    if c.off("PyFrameObject", "f_frame") is None:      # up to 3.10: the frame object is the frame
        frame, struct = id(f), "PyFrameObject"
        c.expect("PyFrameObject.f_back", id(back), c.field(frame, struct, "f_back"))
        pairs = (("f_code", f.f_code), ("f_globals", f.f_globals), ("f_builtins", f.f_builtins))
    else:
        frame, struct = c.field(id(f), "PyFrameObject", "f_frame"), "_PyInterpreterFrame"
        previous = c.field(frame, struct, "previous")
        c.expect("_PyInterpreterFrame.frame_obj, previous -> frame_obj", [id(f), id(back)],
                 [c.field(frame, struct, "frame_obj"), c.field(previous, struct, "frame_obj")])
        pairs = (("f_executable", f.f_code), ("f_code", f.f_code), ("f_globals", f.f_globals),
                 ("f_builtins", f.f_builtins), ("f_funcobj", _frames), ("f_func", _frames))
    for path, want in pairs:
        if c.off(struct, path) is not None:
            c.expect(f"{struct}.{path}", id(want), c.field(frame, struct, path))


def dicts(c) -> None:
    """A dict's keys object: its entries are where dk_indices and the table's sizes put them, each
    holding its key, value and hash; and its version changes when a value does."""
    general = {1.5: "a", (2,): "b", 3.5: "c"}

    def keys():
        k = c.field(id(general), "PyDictObject", "ma_keys")
        c.expect("PyDictKeysObject.dk_nentries", len(general), c.field(k, "PyDictKeysObject", "dk_nentries"))
        indices = k + c.need("PyDictKeysObject", "dk_indices")
        if c.off("PyDictKeysObject", "dk_log2_size") is not None:
            c.field(k, "PyDictKeysObject", "dk_log2_size")
            entries = indices + (1 << c.field(k, "PyDictKeysObject", "dk_log2_index_bytes"))
        else:
            size = c.field(k, "PyDictKeysObject", "dk_size")
            entries = indices + size * (1 if size <= 0xff else 2 if size <= 0xffff else 4 if size <= 0xffffffff else 8)
        step = c.size("PyDictKeyEntry")
        got = [[c.field(entries + i * step, "PyDictKeyEntry", "me_key"),
                c.field(entries + i * step, "PyDictKeyEntry", "me_value"),
                c.field(entries + i * step, "PyDictKeyEntry", "me_hash", signed=True)] for i in range(len(general))]
        c.expect("PyDictKeysObject entries (dk_indices, size, PyDictKeyEntry)",
                 [[id(key), id(v), hash(key)] for key, v in general.items()], got)
    c.run("PyDictKeysObject", keys)

    def version():
        before = c.field(id(general), "PyDictObject", "ma_version_tag")
        same = c.field(id(general), "PyDictObject", "ma_version_tag")
        general[1.5] = "changed"
        after = c.field(id(general), "PyDictObject", "ma_version_tag")
        c.expect("PyDictObject.ma_version_tag changes when a value does, not when read", [True, True],
                 [before == same, after > before])
    c.run("PyDictObject.ma_version_tag", version)


def check(c) -> None:
    try:
        import ctypes  # noqa: F401
    except ImportError as e:
        c.skip("the C API", f"no ctypes: {e}")
        return
    c.run("PyType_GetSlot", slots, c)
    suites(c)
    c.run("the interpreter", interpreter, c)
    c.run("the thread state", thread, c)
    dicts(c)
