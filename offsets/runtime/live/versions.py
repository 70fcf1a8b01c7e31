"""Part of the live check (`runner.py`), 3.12+: the version numbers the specializing interpreter gives
out, each read where the table says and compared with what giving them out means:

- code objects made one after another get increasing `co_version`s (a few apart at most);
- a function whose calls were specialized has its code's version (`func_version`);
- a dict whose global lookups were specialized gets a keys version (`dk_version`), a later one a
  greater one, and the interpreter's next one (`dict_state.next_keys_version`) is past both;
- a class whose subscription was specialized keeps the `__getitem__` called and its version.

The code run is this module's own text, in namespaces of its own; nothing else is changed.
"""
from __future__ import annotations

import sys

#: a function whose global lookups and calls the specializer specializes after a few runs
SOURCE = "def callee():\n    return len\ndef caller():\n    for _ in range(32):\n        callee()\n"
#: a class whose subscription the specializer caches in the class (PyHeapTypeObject._spec_cache)
SUBSCRIPT = ("class Indexed:\n    def __getitem__(self, i):\n        return i\n"
             "def subscript(o):\n    for _ in range(32):\n        o[0]\n")


def check(c) -> None:
    if sys.version_info < (3, 12):
        return
    for fn in (code_versions, specialized):
        c.attempt(fn.__name__, fn, c)


def code_versions(c) -> None:
    codes = [compile("0", "<offsets version>", "eval") for _ in range(3)]
    v = [c.field(id(co), "PyCodeObject", "co_version") for co in codes]
    c.expect("PyCodeObject.co_version of 3 code objects made one after another: increasing, a few apart",
             [True, True], [0 < v[1] - v[0] <= 8, 0 < v[2] - v[1] <= 8])


def specialized(c) -> None:
    import ctypes

    if c.t.build.on("Py_GIL_DISABLED"):
        raise LookupError("a free-threaded build does not specialize (3.13)")
    interp = ctypes.PYFUNCTYPE(ctypes.c_void_p)(("PyInterpreterState_Get", ctypes.pythonapi))()
    spaces = []
    for _ in range(2):
        ns: dict = {}
        exec(SOURCE, ns)        # noqa: S102 - our own text
        ns["caller"]()
        spaces.append(ns)

    def one():
        fv = [c.field(id(ns["callee"]), "PyFunctionObject", "func_version") for ns in spaces]
        cv = [c.field(id(ns["callee"].__code__), "PyCodeObject", "co_version") for ns in spaces]
        c.expect("PyFunctionObject.func_version of specialized calls is their code's co_version", cv, fv)
    c.run("PyFunctionObject.func_version", one)

    def keys():
        v = [c.field(c.field(id(ns), "PyDictObject", "ma_keys"), "PyDictKeysObject", "dk_version") for ns in spaces]
        later = c.field(interp, "PyInterpreterState", "dict_state.next_keys_version")
        c.expect("PyDictKeysObject.dk_version of 2 namespaces specialized one after the other, "
                 "PyInterpreterState.dict_state.next_keys_version past both", [True, True],
                 [0 < v[0] < v[1], v[1] < later <= v[1] + 4096])
    c.run("PyDictKeysObject.dk_version", keys)
    if c.off("PyHeapTypeObject", "_spec_cache.getitem") is not None:
        c.run("PyHeapTypeObject._spec_cache", _spec_cache, c)


def _spec_cache(c) -> None:
    ns: dict = {}
    exec(SUBSCRIPT, ns)        # noqa: S102 - our own text
    cls = ns["Indexed"]
    ns["subscript"](cls())
    getitem = cls.__dict__["__getitem__"]
    c.expect("PyHeapTypeObject._spec_cache.getitem, getitem_version: the __getitem__ a specialized "
             "subscription calls, and its func_version",
             [id(getitem), c.field(id(getitem), "PyFunctionObject", "func_version")],
             [c.field(id(cls), "PyHeapTypeObject", "_spec_cache.getitem"),
              c.field(id(cls), "PyHeapTypeObject", "_spec_cache.getitem_version")])
