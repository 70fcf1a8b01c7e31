"""Part of the live check (`runner.py`): frames and code objects, each field against what Python says
of the same frame or code object:

- a frame's locals mapping (code run by `exec` with a locals dict of its own), its link back to the
  frame that called it once it outlives it (`f_back`), and up to 3.10 its fast locals, value stack,
  line at creation (up to 3.9), block count, whether it is running, and a suspended generator's
  stack top;
- 3.11+: a suspended generator's last instruction (`f_lasti` from its code's first unit), where it
  returns to from `yield from` (3.12+), stack top and state (`gi_running`, `gi_suspended`, finished:
  the table's FRAME_* constants); a frame's line while a trace function handles a line event; 3.12
  the code of the entry frames of C calls into Python (the interpreter's trampoline);
- 3.11+: a code object's first traceable instruction (where `co_code`'s RESUME is), its frame size
  (locals, stack and the frame's specials), the names and kinds of its locals, cells and free
  variables; up to 3.9 the range of a line's instructions `_PyCode_CheckLineNumber` gives (PyAddrPair).

Every frame read is held by this check (a frame object, or a generator whose frame it is).
"""
from __future__ import annotations

import sys

from .toolkit import holding as _ids, image, may_trace, only, this_interp as _interp

#: exec'd with globals and locals of its own: its frame's f_locals is the locals dict
LOCALS_SOURCE = "seen.append(read(sys._getframe()))\n"


def f_locals(c) -> None:
    struct = "PyFrameObject" if c.off("PyFrameObject", "f_frame") is None else "_PyInterpreterFrame"
    seen: list = []

    def read(frame):
        if struct == "PyFrameObject":
            return c.field(id(frame), struct, "f_locals")
        return c.field(c.field(id(frame), "PyFrameObject", "f_frame"), struct, "f_locals")
    g, loc = {"sys": sys, "seen": seen, "read": read}, {}
    exec(LOCALS_SOURCE, g, loc)      # noqa: S102 - our own text
    c.expect(f"{struct}.f_locals of code exec'd with a locals dict", [id(loc)], seen)


def _outlived():
    return sys._getframe()


def f_back(c) -> None:
    """A frame object that outlives its frame keeps the frame object it returned to (3.11+; up to
    3.10 every frame has it)."""
    frame = _outlived()
    _ids(c, "PyFrameObject", frame, (("f_back", frame.f_back),))


def _plain_gen(a, b):
    yield a


def _loop_gen(items, extra):
    for x in items:
        yield x


def _try_gen(a):
    try:
        try:
            yield a
        finally:
            pass
    finally:
        pass


def _frame_id():
    return id(sys._getframe())


def zombie_frame(c) -> None:
    """Up to 3.10: a code object keeps the frame of its last call for the next (co_zombieframe)."""
    if c.off("PyCodeObject", "co_zombieframe") is None:
        raise LookupError("no PyCodeObject.co_zombieframe")
    code = type(_frame_id.__code__)
    fn = type(_frame_id)(code.replace(_frame_id.__code__), globals())    # a code object never run
    address = fn()
    c.expect("PyCodeObject.co_zombieframe: the frame of its one call", address,
             c.field(id(fn.__code__), "PyCodeObject", "co_zombieframe"))


def old_frames(c) -> None:
    """Up to 3.10 (the frame object is the frame): fast locals, value stack, f_lineno as made,
    the block count, f_executing, and a suspended generator's f_stacktop."""
    if c.off("PyFrameObject", "f_localsplus") is None or c.off("PyFrameObject", "f_frame") is not None:
        raise LookupError("not a frame object with its own locals (3.11+)")
    first, second = object(), object()
    items = [first, second]
    gens = [_plain_gen(first, second), _loop_gen(items, second), _try_gen(first)]
    for g in gens:
        next(g)
    frames = [g.gi_frame for g in gens]
    here = sys._getframe()

    def locals_plus():
        at = c.need("PyFrameObject", "f_localsplus")
        c.expect("PyFrameObject.f_localsplus[0] of 2 suspended generators' frames", [id(first), id(items)],
                 [c.ptr(id(f), at) for f in frames[:2]])
    c.run("PyFrameObject.f_localsplus", locals_plus)

    def stack():
        at = c.need("PyFrameObject", "f_localsplus")
        base = [id(f) + at + (len(f.f_code.co_varnames) + len(f.f_code.co_cellvars) + len(f.f_code.co_freevars))
                * c.psize for f in frames[:2]]
        c.expect("PyFrameObject.f_valuestack (after the fast locals), f_stacktop of a generator suspended at a "
                 "yield and one in a for loop (its iterator on the stack)", [base, [base[0], base[1] + c.psize]],
                 [[c.field(id(f), "PyFrameObject", "f_valuestack") for f in frames[:2]],
                  [c.field(id(f), "PyFrameObject", "f_stacktop") for f in frames[:2]]])
    c.run("PyFrameObject.f_valuestack", stack)
    c.run("PyFrameObject.f_iblock", lambda: c.expect(
        "PyFrameObject.f_iblock of generators suspended in 0, 0 and 2 try blocks", [0, 0, 2],
        [c.field(id(f), "PyFrameObject", "f_iblock", signed=True) for f in frames]))
    c.run("PyFrameObject.f_executing", lambda: c.expect(
        "PyFrameObject.f_executing of a running frame and of suspended generators' frames", [1, 0, 0],
        [c.field(id(f), "PyFrameObject", "f_executing") for f in (here, frames[0], frames[1])]))
    if sys.version_info >= (3, 10):     # 3.10 keeps 0 there until a trace function sets it
        return
    c.run("PyFrameObject.f_lineno", lambda: c.expect(
        "PyFrameObject.f_lineno of frames never traced: their code's first line",
        [f.f_code.co_firstlineno for f in frames], [c.field(id(f), "PyFrameObject", "f_lineno") for f in frames]))
    del frames, gens


def _blocks_gen(items):
    for x in items:
        try:
            try:
                yield x
            finally:
                pass
        finally:
            pass


def block_stack(c) -> None:
    """Up to 3.10: a generator suspended in two try blocks in a for loop has them on its block stack,
    as its code's SETUP_FINALLYs say (their opcode, handler, and the loop's iterator under them).

    One entry read proves only a sum (the array's offset and the field's in PyTryBlock); the array is
    pinched: its first entry's first field is read at the table's offset of the array, so the array is
    at or before it; and it is after f_executing (proven: read as it runs), for anything of it read
    lies past f_executing's end, and at a multiple of PyTryBlock's alignment (its ints': 4), which the
    table's offset is the first after f_executing's end. Entries at two indices prove the stride."""
    import dis

    rows = c.t.fields(c.t.resolve_struct("PyFrameObject")) if c.t.resolve_struct("PyFrameObject") else {}
    if "f_blockstack" not in rows or "f_executing" not in rows or c.t.resolve_struct("PyTryBlock") is None:
        raise LookupError("no PyFrameObject.f_blockstack in the table")
    g = _blocks_gen([object()])
    next(g)
    f = g.gi_frame
    setups = [i for i in dis.get_instructions(g.gi_code) if i.opname == "SETUP_FINALLY"]
    at, step = c.need("PyFrameObject", "f_blockstack"), c.size("PyTryBlock")
    got = [[c.field(id(f) + at + i * step, "PyTryBlock", x, signed=True) for x in ("b_type", "b_handler", "b_level")]
           for i in range(len(setups))]
    end = rows["f_executing"][0] + rows["f_executing"][1]
    pinned = (("PyFrameObject", "f_executing") in c.r.proven and id(f) % 8 == 0 and at == (end + 3) // 4 * 4 and
              c.off("PyTryBlock", "b_type") == 0 and len(setups) >= 2)
    if not pinned:
        c.view.take_used()
    c.expect("PyFrameObject.f_blockstack[], PyTryBlock.b_type, b_handler, b_level of a generator in two try "
             "blocks in a for loop (its SETUP_FINALLYs, the iterator under them)" + ("" if pinned else
                                                                                   " (not pinned: proves nothing)"),
             [[i.opcode, i.argval, 1] for i in setups], got)


def generators(c) -> None:
    """3.11+: a suspended generator's last instruction and the states a generator goes through."""
    if c.off("PyGenObject", "gi_frame_state") is None:
        raise LookupError("no PyGenObject.gi_frame_state")
    k = {n: row.value for n, row in c.constants().items() if n.startswith("FRAME_")}
    states: list = []

    def gen():
        states.append(c.field(id(g), "PyGenObject", "gi_frame_state", signed=True))
        yield 1
        yield 2
    g, done = gen(), gen()
    fresh = c.field(id(g), "PyGenObject", "gi_frame_state", signed=True)
    next(g)
    suspended = c.field(id(g), "PyGenObject", "gi_frame_state", signed=True)
    list(done)
    finished = c.field(id(done), "PyGenObject", "gi_frame_state", signed=True)
    c.expect("PyGenObject.gi_frame_state created, running, suspended, exhausted (FRAME_*: its frame cleared)",
             [k.get("FRAME_CREATED"), k.get("FRAME_EXECUTING"), k.get("FRAME_SUSPENDED"), k.get("FRAME_CLEARED")],
             [fresh, states[0], suspended, finished])
    if c.off("_PyInterpreterFrame", "stacktop") is not None:
        gens = [_plain_gen(1, 2), _loop_gen([1], 2)]
        for x in gens:
            next(x)
        c.run("_PyInterpreterFrame.stacktop", lambda: c.expect(
            "_PyInterpreterFrame.stacktop of generators suspended at a yield and in a for loop (its locals, and the "
            "loop's iterator)", [2, 3 + 1],
            [c.field(c.field(id(x.gi_frame), "PyFrameObject", "f_frame"), "_PyInterpreterFrame", "stacktop",
                     signed=True) for x in gens]))
    if c.off("_PyInterpreterFrame", "return_offset") is not None:
        c.run("_PyInterpreterFrame.return_offset", _return_offset, c)
    if c.off("_PyInterpreterFrame", "prev_instr") is not None:
        frame = c.field(id(g.gi_frame), "PyFrameObject", "f_frame")
        c.expect("_PyInterpreterFrame.prev_instr of a suspended generator (its frame's f_lasti)",
                 id(g.gi_code) + c.need("PyCodeObject", "co_code_adaptive") + g.gi_frame.f_lasti,
                 c.field(frame, "_PyInterpreterFrame", "prev_instr"))
    del g, done


#: generators that delegate to another, at two stack depths
DELEGATES = ("def inner():\n    yield 1\n    yield 2\n"
             "def plain():\n    yield from inner()\n"
             "def deeper():\n    return [1, 2, (yield from inner())]\n")


def _return_offset(c) -> None:
    """3.12+: a generator suspended in `yield from` returns past its SEND: its frame's return_offset is
    SEND's argument (3.13+: and the SEND and its cache before it)."""
    import dis
    import opcode

    ns: dict = {}
    exec(DELEGATES, ns)      # noqa: S102 - our own text
    gens = [ns["plain"](), ns["deeper"]()]
    for g in gens:
        next(g)
    extra = 0 if sys.version_info < (3, 13) else 1 + sum(getattr(opcode, "_cache_format", {}).get("SEND", {}).values())
    want = [next(i.arg for i in dis.get_instructions(g.gi_code) if i.opname == "SEND") + extra for g in gens]
    c.expect("_PyInterpreterFrame.return_offset of generators suspended in yield from (SEND's argument)", want,
             [c.field(c.field(id(g.gi_frame), "PyFrameObject", "f_frame"), "_PyInterpreterFrame", "return_offset")
              for g in gens])


def trampoline(c) -> None:
    """3.12: each C call into Python starts with an entry frame on the C stack
    (FRAME_OWNED_BY_CSTACK), whose code is the interpreter's trampoline code object."""

    if c.off("PyInterpreterState", "interpreter_trampoline") is None:
        raise LookupError("no PyInterpreterState.interpreter_trampoline")
    cstack = c.constants().get("FRAME_OWNED_BY_CSTACK")
    if cstack is None:
        raise LookupError("no FRAME_OWNED_BY_CSTACK in the table")
    frame, codes = c.field(id(sys._getframe()), "PyFrameObject", "f_frame"), []
    for _ in range(10000):
        if not frame:
            break
        if c.field(frame, "_PyInterpreterFrame", "owner") == cstack[1]:
            codes.append(c.field(frame, "_PyInterpreterFrame", "f_code"))
        frame = c.field(frame, "_PyInterpreterFrame", "previous")
    if not codes:
        raise LookupError("no entry frame below this one")
    code = c.field(_interp(), "PyInterpreterState", "interpreter_trampoline")
    c.expect("PyInterpreterState.interpreter_trampoline: the code of every entry frame (FRAME_OWNED_BY_CSTACK), "
             "a code object", [code] * len(codes) + [id(type(trampoline.__code__))],
             codes + [c.field(code, "PyObject", "ob_type")])


def _traced(a):
    b = a + 1
    return b


def traced_lineno(c) -> None:
    """3.11 (not later: `toolkit.may_trace`): while a trace function handles a 'line' event, the
    frame keeps its line (f_lineno; 0 otherwise)."""
    if c.off("PyFrameObject", "f_frame") is None:
        raise LookupError("up to 3.10 f_lineno is checked as the frame was made")

    may_trace()
    seen: list = []

    def trace(frame, event, arg):
        if frame.f_code is _traced.__code__:
            if event == "line":
                seen.append((frame.f_lineno, c.field(id(frame), "PyFrameObject", "f_lineno")))
            return trace
        return None
    sys.settrace(trace)
    try:
        _traced(1)
    finally:
        sys.settrace(None)
    if len(seen) < 2:
        raise LookupError("no line events")
    c.expect("PyFrameObject.f_lineno while a trace function handles a line event", [t for t, _ in seen],
             [r for _, r in seen])


def expat_lineno(c) -> None:
    """3.11+: a frame that C code adds to a traceback (`_PyTraceback_Add`, as pyexpat does for a
    handler that raised) keeps the line it was given (f_lineno), which `frame.f_lineno` returns; the
    only 4-byte place in the frame object holding it."""
    if c.off("PyFrameObject", "f_frame") is None:
        raise LookupError("up to 3.10 f_lineno is checked as the frame was made")
    try:
        import pyexpat
    except ImportError:
        raise LookupError("no pyexpat in this interpreter") from None

    class Raised(Exception):
        pass

    def start(name, attrs):
        raise Raised
    parser = pyexpat.ParserCreate()
    parser.StartElementHandler = start
    try:
        parser.Parse(b"<a/>", True)
    except Raised as e:
        tb = e.__traceback__
    else:
        raise LookupError("the handler's exception did not come back")
    while tb is not None and tb.tb_frame.f_code.co_filename.endswith(".py"):
        tb = tb.tb_next
    if tb is None:
        raise LookupError("no frame of pyexpat's in the traceback")
    frame = tb.tb_frame
    line = frame.f_lineno
    raw = c.read(id(frame), frame.__sizeof__())
    if [int.from_bytes(raw[i:i + 4], sys.byteorder, signed=True) for i in range(0, len(raw) - 3, 4)].count(line) != 1:
        raise LookupError(f"{line} is not once in the frame object")
    c.expect(f"PyFrameObject.f_lineno of the frame pyexpat adds to a traceback ({frame.f_code.co_name})", line,
             c.field(id(frame), "PyFrameObject", "f_lineno", signed=True))


def fast_as_locals(c) -> None:
    """3.11-3.12: a frame whose locals were asked for as a dict says so (f_fast_as_locals)."""

    if c.off("PyFrameObject", "f_fast_as_locals") is None:
        raise LookupError("no PyFrameObject.f_fast_as_locals")
    frame = sys._getframe()
    n = c.size("PyFrameObject")
    c.view.take_used()
    images = [image(c, id(frame), n)]
    frame.f_locals
    images.append(image(c, id(frame), n))
    only(c, "PyFrameObject", "f_fast_as_locals", images, lambda v: v == [0, 1])


def _three_lines(a):
    b = a + 1
    c = b * 2
    return c


def address_pair(c) -> None:
    """Up to 3.9: `_PyCode_CheckLineNumber` gives the range of instructions of a line in a PyAddrPair of
    the caller's (a buffer of this check's, larger than any), as `dis.findlinestarts` bounds it."""
    import ctypes
    import dis

    if c.t.resolve_struct("PyAddrPair") is None:
        raise LookupError("no PyAddrPair (3.10+)")
    try:
        check = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_int, ctypes.c_void_p)(
            ("_PyCode_CheckLineNumber", ctypes.pythonapi))
    except AttributeError:
        raise LookupError("no _PyCode_CheckLineNumber") from None
    code = _three_lines.__code__
    starts = sorted(s for s, _ in dis.findlinestarts(code))
    if len(starts) < 3:
        raise LookupError("fewer than 3 lines")
    buffer = ctypes.create_string_buffer(256)
    check(code, starts[1], ctypes.addressof(buffer))
    at = ctypes.addressof(buffer)
    c.expect("PyAddrPair.ap_lower, ap_upper (_PyCode_CheckLineNumber: the second line's instructions)",
             [starts[1], starts[2]], [c.field(at, "PyAddrPair", "ap_lower", signed=True),
                                      c.field(at, "PyAddrPair", "ap_upper", signed=True)])
    del buffer


def _cells(a):
    b = a + 1

    def inner():
        return a, b
    return inner


def _cells_gen(a):
    yield lambda: a


def code_objects(c) -> None:
    """3.11+: a code object's _co_firsttraceable, co_framesize, co_localsplusnames, co_localspluskinds."""
    import opcode

    if sys.version_info < (3, 11):
        raise LookupError("a code object with locals-plus (3.11+)")
    codes = [_cells.__code__, _cells(1).__code__, _cells_gen.__code__, _loop_gen.__code__, _plain_gen.__code__]
    resume = opcode.opmap["RESUME"]
    first = [next(i // 2 for i in range(0, len(co.co_code), 2) if co.co_code[i] == resume) for co in codes]
    k = {n: row.value for n, row in c.constants().items() if n.startswith("CO_FAST_")}
    if "_co_firsttraceable" in c.t.fields(c.t.resolve_struct("PyCodeObject")):
        c.run("PyCodeObject._co_firsttraceable", lambda: c.expect(
            f"PyCodeObject._co_firsttraceable (where co_code's RESUME is) of {len(codes)} code objects", first,
            [c.field(id(co), "PyCodeObject", "_co_firsttraceable", signed=True) for co in codes]))

    def names(co):
        cells = [n for n in co.co_cellvars if n not in co.co_varnames]
        return list(co.co_varnames) + cells + list(co.co_freevars)

    def framesize():
        specials = c.need("_PyInterpreterFrame", "localsplus") // c.psize
        c.expect(f"PyCodeObject.co_framesize (locals, stack and the frame's {specials} specials)",
                 [len(names(co)) + co.co_stacksize + specials for co in codes],
                 [c.field(id(co), "PyCodeObject", "co_framesize", signed=True) for co in codes])
    c.run("PyCodeObject.co_framesize", framesize)

    def localsplus():
        at = c.need("PyTupleObject", "ob_item")
        tuples = [c.field(id(co), "PyCodeObject", "co_localsplusnames") for co in codes]
        c.expect("PyCodeObject.co_localsplusnames: the names of locals, cells and free variables",
                 [[id(n) for n in names(co)] for co in codes],
                 [[c.ptr(t, at + i * c.psize) for i in range(min(len(names(co)), 64))] for t, co in zip(tuples, codes)])
        want = [bytes((k["CO_FAST_LOCAL"] if n in co.co_varnames else 0) | (k["CO_FAST_CELL"] if n in co.co_cellvars
                                                                            else 0) |
                      (k["CO_FAST_FREE"] if n in co.co_freevars else 0) for n in names(co)) for co in codes]
        sval = c.need("PyBytesObject", "ob_sval")
        kinds = [c.field(id(co), "PyCodeObject", "co_localspluskinds") for co in codes]
        mask = k["CO_FAST_LOCAL"] | k["CO_FAST_CELL"] | k["CO_FAST_FREE"]      # 3.14 adds the arguments' kinds
        c.expect("PyCodeObject.co_localspluskinds: a bytes object of their kinds (CO_FAST_LOCAL, CELL, FREE)", want,
                 [bytes(x & mask for x in c.read(b + sval, len(w))) if w else b"" for b, w in zip(kinds, want)])
    c.run("PyCodeObject.co_localsplusnames", localsplus)


def check(c) -> None:
    for fn in (f_locals, f_back, zombie_frame, old_frames, block_stack, generators, traced_lineno, expat_lineno,
               fast_as_locals, address_pair, trampoline, code_objects):
        c.attempt(fn.__name__, fn, c)
