"""Part of the live check (`runner.py`): type objects' fields that no slot or member shows, each
against what the interpreter says or does:

- `tp_vectorcall_offset` of the function, builtin, method-descriptor and bound-method types is
  `offsetof(S, vectorcall)` of their instances' struct (their source initializers say so), so the
  value read in each type object proves both where the type keeps it and where S has `vectorcall`;
- `tp_vectorcall` (3.12+): what `PyVectorcall_Function` gives for a type object (a type's type is
  `type`, whose instances keep their vectorcall function there), counted where it occurs once in the
  type object;
- `tp_methods`: the PyMethodDef array each of a type's method descriptors points into, in order up to
  a NULL name (its stride is sizeof(PyMethodDef));
- `tp_subclasses` of a class with five subclasses: a dict of five entries (their weak references);
- `tp_version_tag`: a class's tag is given by a lookup, is 0 (3.12+) or unchanged after the class is
  changed, and another lookup gives a new one;
- `tp_doc` of builtin types ends with their `__doc__`; `sizeof(PyTypeObject)` is what
  `type.__sizeof__` says of a static type.
"""
from __future__ import annotations

import sys
from .toolkit import words_holding as _words


class _Sample:
    def method(self):
        return self


def _sample():
    return None


#: (type, the struct of its instances) whose type object says where that struct keeps `vectorcall`
def _vectorcall_types() -> list:
    return [(type(_sample), "PyFunctionObject"), (type(len), "PyCFunctionObject"),
            (type(list.__dict__["append"]), "PyMethodDescrObject"), (type(_Sample().method), "PyMethodObject")]


def vectorcall_offsets(c) -> None:
    pairs = [(t, s) for t, s in _vectorcall_types() if c.off(s, "vectorcall") is not None]
    if not pairs:
        raise LookupError("no struct with a vectorcall field in the table")
    c.expect("PyTypeObject.tp_vectorcall_offset of " + ", ".join(t.__name__ for t, _ in pairs) +
             " is offsetof(S, vectorcall) of their instances' struct",
             [c.field(id(t), "PyTypeObject", "tp_vectorcall_offset", signed=True) for t, _ in pairs],
             [c.off(s, "vectorcall") for _, s in pairs])


def vectorcall(c) -> None:
    import ctypes


    if sys.version_info < (3, 12):
        raise LookupError("PyVectorcall_Function is not exported before 3.12")
    function = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyVectorcall_Function", ctypes.pythonapi))
    checked = 0
    for t in (list, dict, tuple, range, bool, float, set, frozenset, str, int, type):
        value = function(t) or 0
        where = _words(c, id(t), id(t) + type(t).__basicsize__, value) if value else []
        if len(where) != 1:     # none, or a value that says nothing of which word it is
            continue
        c.expect(f"PyTypeObject.tp_vectorcall of {t.__name__} (where PyVectorcall_Function's value is, once in "
                 "the type)", where[0] - id(t), c.need("PyTypeObject", "tp_vectorcall"))
        checked += 1
    if not checked:
        raise LookupError("no type whose vectorcall function occurs once in it")


def methods(c) -> None:
    for t in (list, dict, str):
        base = c.field(id(t), "PyTypeObject", "tp_methods")
        names, step = c.names(base, "PyMethodDef", "ml_name"), c.size("PyMethodDef")
        descriptors = {k: v for k, v in t.__dict__.items() if type(v) is type(list.__dict__["append"])}
        c.expect(f"PyTypeObject.tp_methods of {t.__name__}, sizeof(PyMethodDef): each method descriptor's "
                 "PyMethodDef is the entry of its name", {k: True for k in descriptors},
                 {k: k in names and c.field(id(d), "PyMethodDescrObject", "d_method") == base + names.index(k) * step
                  for k, d in descriptors.items()})


def subclasses(c) -> None:
    class Base:
        pass
    kids = [type(f"Kid{i}", (Base,), {}) for i in range(5)]

    def one():
        d = c.field(id(Base), "PyTypeObject", "tp_subclasses")
        c.expect("PyTypeObject.tp_subclasses of a class with 5 subclasses: a dict of 5", [id(dict), len(kids)],
                 [c.field(d, "PyObject", "ob_type"), c.field(d, "PyDictObject", "ma_used")])
    c.run("PyTypeObject.tp_subclasses", one)
    del kids


def version_tag(c) -> None:
    class Tagged:
        pass

    def tag():
        getattr(Tagged, "no_such_attribute", None)      # a lookup through the type cache gives it a tag
        return c.field(id(Tagged), "PyTypeObject", "tp_version_tag")

    def one():
        first = tag()
        Tagged.changed = 1                              # PyType_Modified: the tag is cleared
        cleared = c.field(id(Tagged), "PyTypeObject", "tp_version_tag")
        second = tag()
        c.expect("PyTypeObject.tp_version_tag: given by a lookup, cleared (3.12+) or kept (no longer valid) once "
                 "the class changes, then a new one", [True, True, True],
                 [first != 0, cleared in (0, first), second not in (0, first)])
    c.run("PyTypeObject.tp_version_tag", one)


def docs(c) -> None:
    types = (list, dict, int)
    c.run("PyTypeObject.tp_doc", lambda: c.expect(
        "PyTypeObject.tp_doc of list, dict and int ends with their __doc__", [True] * len(types),
        [c.cstring(c.field(id(t), "PyTypeObject", "tp_doc"), 8192).decode("utf-8", "replace").endswith(t.__doc__)
         for t in types]))
    c.run("sizeof(PyTypeObject)", lambda: c.expect(
        "sizeof(PyTypeObject) (type.__sizeof__ of a static type)", type.__sizeof__(list), c.size("PyTypeObject")))


def check(c) -> None:
    for fn in (vectorcall_offsets, vectorcall, methods, subclasses, version_tag, docs):
        c.attempt(fn.__name__, fn, c)
