"""Part of the live check (`runner.py`): states Python code never sees, read by the package's C
extension `offsets._raised` (offsets/_raised.c).

This thread's state while an exception of the check's own is being raised, which JITs read
(`current_exception` from 3.12; `curexc_type`, `curexc_value` and `curexc_traceback` before).
CPython clears the raised exception before any Python code runs, so the extension makes this one
read: it sets the exception, writes the thread state's bytes to the check's pipe, and clears it. Each field,
read in those bytes where the table puts it, must be the exception (its type, itself, its
traceback), which occurs there once.

The interpreter's state while its eval-frame function (PEP 523, which frame evaluators set) is one
of the extension's, 3.9-3.12 with a GIL: `eval_frame` must hold that function's address, which
occurs once in the whole state.

Where the extension is not built for this interpreter (a checkout run by another Python), nothing
is read.
"""
from __future__ import annotations

import sys

from ...proofs.prover import Prover
from .toolkit import read_all as _read_all


class _Probe(Exception):
    """The exception the check raises: of its own type, so no other field holds it or its type."""


def check(c) -> None:
    c.attempt("PyThreadState while an exception is raised", _raised, c)
    c.attempt("PyInterpreterState while its eval-frame function is not CPython's own", _eval_frame, c)


#: the most of a state written to the check's pipe at once (it holds 64 KB)
CHUNK = 32768


def _extension():
    try:
        from ... import _raised as ext
    except ImportError:
        raise LookupError("offsets._raised is not built for this interpreter (`pip install` builds it)") from None
    return ext


def _eval_frame(c) -> None:
    """3.9-3.12, builds with a GIL: the interpreter's state read while its eval-frame function is one
    of the extension's (or a JIT's, where one is set): the table's `eval_frame` must hold that
    function's address, which occurs once in the whole state."""

    ext = _extension()
    size = c.view.bound("PyInterpreterState")
    if not size or size > 1 << 22:
        raise LookupError("no PyInterpreterState of a size the check reads in the table")
    data, seen = b"", set()
    for start in range(0, size, CHUNK):
        got = ext.eval_frame_state(c.mem.wfd, start, min(CHUNK, size - start))
        if got is None:
            raise LookupError("read on 3.9-3.12 with a GIL (3.13 counts each change of it as a rare event)")
        written, function = got
        if written != min(CHUNK, size - start):
            if written > 0:
                _read_all(c.mem.rfd, written)
            raise LookupError(f"the interpreter state could not be read whole ({written} at {start})")
        data += _read_all(c.mem.rfd, written)
        seen.add(function)
    if len(seen) != 1:
        raise LookupError("the eval-frame function changed while the state was read")
    function = seen.pop()
    if not c.held_once(data, function):
        raise LookupError("the eval-frame function is held in the interpreter state other than once")
    snapshot = _snapshot(c, data)
    snapshot.expect("PyInterpreterState.eval_frame while it is a function of the check's own", function,
                    snapshot.field(0, "PyInterpreterState", "eval_frame"))


def _snapshot(c, data: bytes) -> Prover:
    """A prover of the bytes `data` (at 0), recording in the check's result."""
    def read(at: int, n: int) -> bytes:
        if not 0 <= at <= len(data) - n:
            raise ValueError(f"{n} bytes at {at} lie past the {len(data)} read")
        return data[at:at + n]

    return Prover(c.view, read, c.psize, sys.byteorder, c.r, faults=(ValueError,))


def _raised(c) -> None:

    ext = _extension()
    size = c.view.bound("PyThreadState")
    if not size or size > 4096:
        raise LookupError("no PyThreadState of a size the check reads in the table")
    try:
        raise _Probe("offsets: the thread state while an exception is raised")
    except _Probe as e:
        exc = e
    tb = exc.__traceback__
    got = ext.raised_state(exc, c.mem.wfd, size)
    if got != size:
        if got > 0:
            _read_all(c.mem.rfd, got)
        raise LookupError(f"the thread state could not be read whole ({got})")
    data = _read_all(c.mem.rfd, size)
    fields = ("current_exception",) if sys.version_info >= (3, 12) else ("curexc_type", "curexc_value", "curexc_traceback")
    truth = [id(exc)] if fields == ("current_exception",) else [id(type(exc)), id(exc), id(tb)]
    if not all(c.held_once(data, t) for t in truth):
        raise LookupError("the exception is held in the thread state other than once")
    snapshot = _snapshot(c, data)
    snapshot.expect(f"PyThreadState.{', '.join(fields)} while an exception of the check's own is raised", truth,
                    [snapshot.field(0, "PyThreadState", f) for f in fields])
    del exc, tb
