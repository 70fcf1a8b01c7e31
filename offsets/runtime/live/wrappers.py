"""Part of the live check (`runner.py`): builtin types' slots against the wrapper descriptors the
interpreter made of them. `list.__add__` is a wrapper descriptor whose `d_wrapped` is the very
function in list's `tp_as_sequence->sq_concat` (PyType_Ready makes one for each slot a static type
fills), so where that function occurs once among the words of the suite, its place is the slot's.
This reaches static types' suites where PyType_GetSlot cannot (before 3.10), and
`PyWrapperDescrObject.d_wrapped` with them.
"""
from __future__ import annotations

from .toolkit import words_holding as _words

#: (type, its wrapper's name, the PyTypeObject field pointing to the suite, the suite's struct, the slot)
WRAPPED = (
    (list, "__len__", "tp_as_sequence", "PySequenceMethods", "sq_length"),
    (list, "__add__", "tp_as_sequence", "PySequenceMethods", "sq_concat"),
    (list, "__mul__", "tp_as_sequence", "PySequenceMethods", "sq_repeat"),
    (list, "__iadd__", "tp_as_sequence", "PySequenceMethods", "sq_inplace_concat"),
    (list, "__imul__", "tp_as_sequence", "PySequenceMethods", "sq_inplace_repeat"),
    (list, "__contains__", "tp_as_sequence", "PySequenceMethods", "sq_contains"),
    (tuple, "__len__", "tp_as_sequence", "PySequenceMethods", "sq_length"),
    (dict, "__len__", "tp_as_mapping", "PyMappingMethods", "mp_length"),
    (dict, "__getitem__", "tp_as_mapping", "PyMappingMethods", "mp_subscript"),
    (int, "__add__", "tp_as_number", "PyNumberMethods", "nb_add"),
    (float, "__mul__", "tp_as_number", "PyNumberMethods", "nb_multiply"),
)


def check(c) -> None:
    wrapper = type(object.__dict__["__init__"])
    for tp, name, pointer, struct, field in WRAPPED:
        descr = tp.__dict__.get(name)
        if type(descr) is not wrapper:
            continue
        c.attempt(f"{tp.__name__}.{name}", _one, c, tp, descr, pointer, struct, field)


def _one(c, tp, descr, pointer: str, struct: str, field: str) -> None:
    wrapped = c.field(id(descr), "PyWrapperDescrObject", "d_wrapped")
    suite = c.field(id(tp), "PyTypeObject", pointer)
    read = c.view.take_used()
    if not suite:
        raise LookupError(f"{tp.__name__}.{pointer} is NULL")
    where = _words(c, suite, suite + c.size(struct) + 8 * c.psize, wrapped)
    c.view.take_used()
    if len(where) > 1:      # one function serving two slots of the suite says nothing of which
        raise LookupError(f"{tp.__name__}.{descr.__name__}'s function is more than once in its suite")
    # none: the function is not in the type's own suite, whose slot made this wrapper: the table's
    # d_wrapped (or the suite's pointer) is not where the table says
    c.view.used.update(read)
    c.expect(f"{struct}.{field} of {tp.__name__}: where {descr.__name__}'s PyWrapperDescrObject.d_wrapped is, "
             f"once in {tp.__name__}'s {pointer}", [1, c.need(struct, field)],
             [len(where), where[0] - suite if where else None])
