"""Part of the live check (`runner.py`), 3.8-3.10: a code object's opcache. After a code object has
run often enough (1024 calls), the interpreter gives it an array of `_PyOpcache` entries, one per
LOAD_GLOBAL in the order of its code, and a LOAD_GLOBAL that runs fills its entry with the object it
found and the versions of the globals and builtins dicts it found it in.

A function of this module's own, run in a namespace of its own, loads a builtin and a global; its
two entries are read through the table against what it loaded and the dicts' versions (read as the
table says, each a check of its own), and `optimized`, 1 in a filled entry, is the only byte that is 1
in both. Two entries prove the stride; the first entry's object is at
offset 0, which pins the union and the struct it is read through at 0 (proofs/pinch.py, `at_zero`).
"""
from __future__ import annotations

import sys

SOURCE = "def loads():\n    return len, marker\n"
#: calls before 3.8-3.10 make a code object's opcache (ceval.c's opcache_min_runs), and a few more
RUNS = 1024 + 8


def check(c) -> None:
    if c.off("PyCodeObject", "co_opcache") is not None:
        c.attempt("_PyOpcache", opcache, c)


def opcache(c) -> None:
    import builtins

    marker = object()
    ns = {"marker": marker}
    exec(SOURCE, ns)        # noqa: S102 - our own text
    fn = ns["loads"]
    for _ in range(RUNS):
        fn()
    versions = [c.field(id(d), "PyDictObject", "ma_version_tag") for d in (ns, builtins.__dict__)]
    c.view.take_used()      # checked by a check of their own
    entries = c.field(id(fn.__code__), "PyCodeObject", "co_opcache")
    if not entries:
        raise LookupError("the code object has no opcache")
    step = c.size("_PyOpcache")
    got = [[c.field(entries + i * step, "_PyOpcache", f) for f in ("u.lg.ptr", "u.lg.globals_ver",
                                                                   "u.lg.builtins_ver")] for i in (0, 1)]
    read = [c.view.need("_PyOpcache", f) for f in ("u.lg.ptr", "u.lg.globals_ver", "u.lg.builtins_ver")]
    if not c.expect("_PyOpcache entries of a code object's 2 LOAD_GLOBALs (PyCodeObject.co_opcache): the objects "
                    "loaded, the globals' and builtins' versions", [[id(len)] + versions, [id(marker)] + versions], got):
        return
    # optimized: 1 once an entry is filled, the only byte of both entries that is 1 in both, but for the
    # bytes of the fields just proven (the versions are the same in both entries, and may hold a 1)
    images = [c.read(entries + i * step, step) for i in (0, 1)]
    ones = [p for p in range(step) if images[0][p] == images[1][p] == 1 and
            not any(at <= p < at + n for at, n in read)]
    if len(ones) == 1:
        c.expect("_PyOpcache.optimized (the only byte that is 1 in both entries)", ones[0],
                 c.need("_PyOpcache", "optimized"))
