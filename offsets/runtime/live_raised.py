"""Part of the live check (`live.py`): this thread's state while an exception of the check's own is
being raised, which JITs read (`current_exception` from 3.12; `curexc_type`, `curexc_value` and
`curexc_traceback` before). CPython clears the raised exception before any Python code runs, so
the package's C extension `offsets._raised` (offsets/_raised.c) makes this one read: it sets the
exception, writes the thread state's bytes to the check's pipe, and clears it again. Each field,
read in those bytes where the table puts it, must be the exception (its type, itself, its
traceback), which occurs there once. Where the extension is not built for this interpreter
(a checkout run by another Python), nothing is read.
"""
from __future__ import annotations

import sys

from ..proofs.prover import Prover


class _Probe(Exception):
    """The exception the check raises: of its own type, so no other field holds it or its type."""


def check(c) -> None:
    c.attempt("PyThreadState while an exception is raised", _raised, c)


def _raised(c) -> None:
    try:
        from .. import _raised as ext
    except ImportError:
        raise LookupError("offsets._raised is not built for this interpreter (`pip install` builds it)") from None
    from .live import _read_all

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
    words = [int.from_bytes(data[i:i + c.psize], sys.byteorder) for i in range(0, size - c.psize + 1)]
    if any(words.count(t) != 1 for t in truth):
        raise LookupError("the exception is held in the thread state other than once")

    def read(at: int, n: int) -> bytes:
        if not 0 <= at <= size - n:
            raise ValueError(f"{n} bytes at {at} lie past the thread state's {size}")
        return data[at:at + n]

    snapshot = Prover(c.view, read, c.psize, sys.byteorder, c.r, faults=(ValueError,))
    snapshot.expect(f"PyThreadState.{', '.join(fields)} while an exception of the check's own is raised", truth,
                    [snapshot.field(0, "PyThreadState", f) for f in fields])
    del exc, tb
