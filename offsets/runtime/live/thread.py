"""Part of the live check (`runner.py`): this thread's state, read in states Python puts it in. A
counter is found by what it does: the thread state is read whole at each moment, and the table's
offset must be the only place (of the field's size) whose values go as the interpreter says:

- `tracing`: up to 3.11, 1 inside a profile function, 0 outside it; up to 3.10 `use_tracing`: 1
  while a profile function is set, 0 while it runs and when none is (from 3.12 a profile function
  instruments the whole interpreter, so none is set: `may_trace`; `tracing` is then one more after
  each `PyThreadState_EnterTracing`, one less after each `PyThreadState_LeaveTracing`);
- `c_recursion_remaining` (3.12+): one less at each level of nested lists whose repr is taken;
- `context_ver` (3.12+): one more at each entry to and exit from a `Context.run`;
- `trash.delete_nesting` (3.12): 0 outside a deallocation, and two more in the finalizer of an object
  two list levels deeper;
- up to 3.10 the interpreter's `ceval.tracing_possible`: one more while this thread has a trace function.

And the links the thread keeps: its C frames end at its own `root_cframe` (3.11-3.12), and a call
deep enough to need a new data stack chunk links it to the one before (`_PyStackChunk.previous`),
which keeps where its frames ended (`top`: the end of the calling frame, `co_framesize` words).
Nothing the check reads is freed meanwhile (the thread state is this thread's own).
"""
from __future__ import annotations

import sys
from .toolkit import image, may_trace, only


def _ts() -> int:
    import ctypes

    return ctypes.PYFUNCTYPE(ctypes.c_void_p)(("PyThreadState_Get", ctypes.pythonapi))()


def _state(c, path=None) -> tuple:
    """(this thread's PyThreadState *, its size in the table); LookupError where the table has no `path`."""
    if path is not None and c.off("PyThreadState", path) is None:
        raise LookupError(f"no PyThreadState.{path}")
    ts, n = _ts(), c.size("PyThreadState")
    c.view.take_used()
    return ts, n


def tracing(c) -> None:
    if sys.version_info >= (3, 12):
        c.run("PyThreadState.tracing", entered_tracing, c)
        return
    may_trace()
    ts, n = _state(c)
    inside: list = []

    def profile(frame, event, arg):
        if not inside:
            inside.append(image(c, ts, n))
    before = image(c, ts, n)
    sys.setprofile(profile)
    try:
        during = image(c, ts, n)
    finally:
        sys.setprofile(None)
    after = image(c, ts, n)
    if not inside:
        raise LookupError("the profile function was not called")
    images = [before, during, inside[0], after]
    c.run("PyThreadState.tracing", only, c, "PyThreadState", "tracing", images, lambda v: v == [0, 0, 1, 0])
    if c.off("PyInterpreterState", "ceval.tracing_possible") is not None:     # up to 3.10
        c.run("PyInterpreterState.ceval.tracing_possible", _tracing_possible, c)
    if c.off("PyThreadState", "use_tracing") is not None:
        c.run("PyThreadState.use_tracing", only, c, "PyThreadState", "use_tracing", images,
              lambda v: v == [0, 1, 0, 0])


def entered_tracing(c) -> None:
    """3.12+: `PyThreadState_EnterTracing` (this thread's own state: its events are not monitored
    meanwhile) one more each time, `PyThreadState_LeaveTracing` one less."""
    import ctypes

    def api(name):
        return ctypes.PYFUNCTYPE(None, ctypes.c_void_p)((name, ctypes.pythonapi))
    enter, leave = api("PyThreadState_EnterTracing"), api("PyThreadState_LeaveTracing")
    ts, n = _state(c)
    images = [image(c, ts, n)]
    entered = 0
    try:
        for _ in range(2):
            enter(ts)
            entered += 1
            images.append(image(c, ts, n))
        for _ in range(2):
            leave(ts)
            entered -= 1
            images.append(image(c, ts, n))
    finally:
        for _ in range(entered):
            leave(ts)
    only(c, "PyThreadState", "tracing", images,
         lambda v: v[0] >= 0 and [x - v[0] for x in v] == [0, 1, 2, 1, 0])


def _tracing_possible(c) -> None:
    """Up to 3.10: the interpreter counts its threads with a trace function."""
    may_trace()
    interp = c.field(_ts(), "PyThreadState", "interp")
    n = c.size("PyInterpreterState")
    c.view.take_used()
    if n > 65536:
        raise LookupError("the interpreter state is too large to read whole")
    images = [image(c, interp, n)]
    sys.settrace(lambda *a: None)
    try:
        images.append(image(c, interp, n))
    finally:
        sys.settrace(None)
    images.append(image(c, interp, n))
    only(c, "PyInterpreterState", "ceval.tracing_possible", images, lambda v: v[1] == v[0] + 1 == v[2] + 1)


def c_recursion(c) -> None:
    ts, n = _state(c, "c_recursion_remaining")
    images: list = []

    class Leaf:
        def __repr__(self):
            images.append(image(c, ts, n))
            return "leaf"
    repr([Leaf()]), repr([[Leaf()]]), repr([[[Leaf()]]])

    def goes(v):
        step = v[0] - v[1]
        return 0 < step <= 8 and v[1] - v[2] == step
    only(c, "PyThreadState", "c_recursion_remaining", images, goes)


def context_ver(c) -> None:
    import contextvars

    ts, n = _state(c, "context_ver")
    images = [image(c, ts, n)]
    contextvars.Context().run(lambda: images.append(image(c, ts, n)))
    images.append(image(c, ts, n))
    only(c, "PyThreadState", "context_ver", images, lambda v: v[1] == v[0] + 1 and v[2] == v[1] + 1)


def delete_nesting(c) -> None:
    ts, n = _state(c, "trash.delete_nesting")
    images = [image(c, ts, n)]

    class Dying:
        def __del__(self):
            images.append(image(c, ts, n))
    shallow, deep = [[Dying()]], [[[[Dying()]]]]
    del shallow
    del deep
    only(c, "PyThreadState", "trash.delete_nesting", images,
          lambda v: len(v) == 3 and v[0] == 0 and v[1] > 0 and v[2] == v[1] + 2)


def root_cframe(c) -> None:
    """3.11-3.12: the C frames of this thread, from PyThreadState.cframe along _PyCFrame.previous,
    end at its root_cframe."""
    if c.off("PyThreadState", "root_cframe") is None:
        raise LookupError("no PyThreadState.root_cframe")
    ts = _ts()
    p, seen = c.field(ts, "PyThreadState", "cframe"), 0
    while seen < 10000:
        back = c.field(p, "_PyCFrame", "previous")
        if not back:
            break
        p, seen = back, seen + 1
    c.expect("the C frames along _PyCFrame.previous end at PyThreadState.root_cframe",
             ts + c.need("PyThreadState", "root_cframe"), p)


def stack_chunks(c) -> None:
    """3.11+: a call deep enough to need a new data stack chunk, which links to the one before. And
    where a call of its own opened the new chunk (its frame the chunk's first; the check's reads may
    open and drop one before), the chunk before keeps where its frames ended (`top`, in words from
    its `data`): at the end of the calling frame, `co_framesize` words from where `frame.f_frame`
    puts its `_PyInterpreterFrame`: the data stack's top when the call was pushed."""
    if c.off("PyThreadState", "datastack_chunk") is None:
        raise LookupError("no PyThreadState.datastack_chunk")
    ts = _ts()
    first = c.field(ts, "PyThreadState", "datastack_chunk")
    room = sys.getrecursionlimit() - len(_depth()) - 50
    linked: list = []

    def down(n):
        chunk = c.field(ts, "PyThreadState", "datastack_chunk")
        if chunk != first:
            # only a chunk this call's own frame opened is read: a chunk the check's own calls opened
            # (as `c.field` above may) is freed when they return, and reading it is a fault
            me = sys._getframe()
            if c.field(id(me), "PyFrameObject", "f_frame") == chunk + c.need("_PyStackChunk", "data"):
                linked.append(c.expect("_PyStackChunk.previous of a new data stack chunk is the one before",
                                       first, c.field(chunk, "_PyStackChunk", "previous")))
                c.run("_PyStackChunk.top", chunk_top, c, first, me.f_back)
                return
        if n < room:
            down(n + 1)
    down(0)
    if not linked:
        raise LookupError("no new data stack chunk opened by a call of its own within the recursion limit")


def chunk_top(c, first: int, caller) -> None:
    """`stack_chunks`' `top` of chunk `first`, read in a call that opened the next one (`caller`'s
    frame the last of `first`)."""
    end = c.field(id(caller), "PyFrameObject", "f_frame") + _frame_words(c, caller.f_code) * c.psize
    c.expect("_PyStackChunk.top of the chunk before a new one: the end of the last frame in it, in words",
             (end - first - c.need("_PyStackChunk", "data")) // c.psize, c.field(first, "_PyStackChunk", "top"))


def _frame_words(c, code) -> int:
    """The data stack words a call of `code` takes: `co_framesize` (3.12+); in 3.11 its locals,
    its stack and the frame's own words, `(sizeof(_PyInterpreterFrame) - 1) / sizeof(PyObject *)`."""
    if c.off("PyCodeObject", "co_framesize") is not None:
        return c.field(id(code), "PyCodeObject", "co_framesize")
    size = c.size("_PyInterpreterFrame")
    if size is None:
        raise LookupError("no sizeof(_PyInterpreterFrame)")
    return c.field(id(code), "PyCodeObject", "co_nlocalsplus") + c.field(id(code), "PyCodeObject", "co_stacksize") + \
        (size - 1) // c.psize


def _depth() -> list:
    frames, f = [], sys._getframe()
    while f is not None:
        frames.append(f)
        f = f.f_back
    return frames


def check(c) -> None:
    for fn in (tracing, c_recursion, context_ver, delete_nesting, root_cframe, stack_chunks):
        c.attempt(fn.__name__, fn, c)
