"""Every type object's own record of its layout, against the table: a type's `tp_basicsize` and
`tp_itemsize` are what its source initializer says (`sizeof(PyListObject)`,
`offsetof(PyCodeObject, co_code_adaptive)`), and each `PyMemberDef` of its `tp_members` holds the
`offsetof` of the field its initializer names, as the compiler of this very build computed it.

Which struct and which field each of those is comes from the type records of the sources
(scan/type_records.py, shipped per minor version in `data/compact/types.json`); the values come from
the type objects in memory, read through the table. A size is proven where exactly one of its
terms is the table's (`sizeof(S) - sizeof(PyObject *)` proves sizeof(S)); a member's field where
the `PyMemberDef` read back has the record's name, type code and flags (else the record is not this
build's and nothing is compared) and its offset is the table's. A value that differs fails the check.

The type objects are found by each side: in this process from Python (`runtime/live/types.py`),
in another by the symbols its binary exports (`remote/proof.py`).
"""
from __future__ import annotations

#: Records written by hand, for the minors no sources were scanned for (3.12): reviewed against the
#: initializers of every CPython since 3.11 (`"code", offsetof(PyCodeObject, co_code_adaptive),
#: sizeof(_Py_CODEUNIT)`) or since 3.0 (the members of type, function, method and builtin
#: functions); a record of the scanned sources takes their place where there is one. Where the
#: table has no such struct (3.11's `_Py_CODEUNIT` is a typedef of uint16_t) or the member read back
#: has another type code or flags, it is not compared.
_T_OBJECT, _T_ULONG, _T_PYSSIZET, _READONLY = 6, 12, 19, 1
BY_HAND = {
    "code": {"symbol": "PyCode_Type", "itemsize": [[1, "size", "_Py_CODEUNIT", None]]},
    # tupleobject.c, unchanged since 3.0: the one item PyTupleObject declares is the first of ob_size
    "tuple": {"symbol": "PyTuple_Type", "basicsize": [[1, "size", "PyTupleObject", None], [-1, "pointer", None, None]],
              "itemsize": [[1, "pointer", None, None]]},
    # typeobject.c, funcobject.c, classobject.c and methodobject.c, unchanged since 3.0 (3.10 added __builtins__)
    "type": {"symbol": "PyType_Type", "members": [
        [name, code, _READONLY, "PyTypeObject", field] for name, code, field in (
            ("__basicsize__", _T_PYSSIZET, "tp_basicsize"), ("__itemsize__", _T_PYSSIZET, "tp_itemsize"),
            ("__flags__", _T_ULONG, "tp_flags"), ("__weakrefoffset__", _T_PYSSIZET, "tp_weaklistoffset"),
            ("__base__", _T_OBJECT, "tp_base"), ("__dictoffset__", _T_PYSSIZET, "tp_dictoffset"),
            ("__mro__", _T_OBJECT, "tp_mro"))]},
    "function": {"symbol": "PyFunction_Type", "members": [
        ["__closure__", _T_OBJECT, _READONLY, "PyFunctionObject", "func_closure"],
        ["__doc__", _T_OBJECT, 0, "PyFunctionObject", "func_doc"],
        ["__globals__", _T_OBJECT, _READONLY, "PyFunctionObject", "func_globals"],
        ["__module__", _T_OBJECT, 0, "PyFunctionObject", "func_module"],
        ["__builtins__", _T_OBJECT, _READONLY, "PyFunctionObject", "func_builtins"]]},
    "method": {"symbol": "PyMethod_Type", "members": [
        ["__func__", _T_OBJECT, _READONLY, "PyMethodObject", "im_func"],
        ["__self__", _T_OBJECT, _READONLY, "PyMethodObject", "im_self"]]},
    "builtin_function_or_method": {"symbol": "PyCFunction_Type", "members": [
        ["__module__", _T_OBJECT, 0, "PyCFunctionObject", "m_module"]]},
}


def records(shipped: dict) -> dict:
    """The records to prove with: `shipped` (those of the table's minor, runtime/tables.type_records),
    and BY_HAND for the types it lacks."""
    return {**BY_HAND, **shipped}


#: Py_RELATIVE_OFFSET (3.12+): an offset from the end of the base's instance, not from the object
RELATIVE = 8
#: the most members read of one type
MAX_MEMBERS = 200


def _size(p, terms):
    """(value, the table's terms in it) of a size record; None where the table lacks a term."""
    total, table_terms = 0, 0
    for coeff, kind, struct, path in terms:
        if kind == "int":
            total += coeff
            continue
        if kind == "pointer":
            total += coeff * p.psize
            continue
        value = p.size(struct) if kind == "size" else p.off(struct, path)
        if value is None:
            return None
        total += coeff * value
        table_terms += 1
    return total, table_terms


def _spell(terms) -> str:
    words = []
    for coeff, kind, struct, path in terms:
        word = {"int": str(abs(coeff)), "pointer": "sizeof(void *)", "size": f"sizeof({struct})",
                "offset": f"offsetof({struct}, {path})"}[kind]
        if kind != "int" and abs(coeff) != 1:
            word = f"{abs(coeff)} * {word}"
        words.append(("- " if coeff < 0 else "+ ") + word)
    return " ".join(words).lstrip("+ ")


def sizes(p, address: int, name: str, record: dict) -> None:
    """tp_basicsize and tp_itemsize of the type object at `address` against its record."""
    for key in ("basicsize", "itemsize"):
        terms = record.get(key)
        if terms is None:
            continue
        p.view.take_used()
        expected = _size(p, terms)
        if expected is None:
            p.skip(f"{name}.tp_{key}", "a struct or field of its record is not in the table")
            continue
        value, table_terms = expected
        if table_terms != 1:        # a sum of two sizes proves neither
            p.view.take_used()
        real = p.field(address, "PyTypeObject", f"tp_{key}", signed=True)
        p.expect(f"{name}.tp_{key} == {_spell(terms)}", real, value)


def members(p, address: int, name: str, record: dict, descriptors=None) -> int:
    """Each PyMemberDef of the type's tp_members against the field its record names; the number
    compared. `descriptors` (in this process): member name -> its descriptor, whose PyMemberDescrObject
    points to the very PyMemberDef read."""
    named = {m[0]: m for m in record.get("members", ())}
    if not named:
        return 0
    base = p.field(address, "PyTypeObject", "tp_members")
    if not base:
        p.view.take_used()
        return 0
    step, at_name = p.size("PyMemberDef"), p.need("PyMemberDef", "name")
    named_frame = p.view.take_used()     # what finding an entry and its name used
    at_type, at_offset, at_flags = (p.need("PyMemberDef", f) for f in ("type", "offset", "flags"))
    sizes = {f: p.view.row("PyMemberDef", f)[1][1] for f in ("type", "offset", "flags")}
    frame = named_frame + p.view.take_used()
    compared = 0
    for i in range(MAX_MEMBERS):
        entry = base + i * step
        text = p.ptr(entry + at_name)
        if not text:
            break
        member = p.cstring(text, 128).decode("utf-8", "replace")
        want = named.get(member)
        if want is None:
            continue
        code = p.int(entry + at_type, sizes["type"], signed=True)
        flags = p.int(entry + at_flags, sizes["flags"], signed=True)
        if (code, flags) != (want[1], want[2]) or flags & RELATIVE:
            p.skip(f"{name}.{member}", f"its PyMemberDef is of type {code}, flags {flags}; the record says "
                                        f"{want[1]}, {want[2]}")
            continue
        real = p.int(entry + at_offset, sizes["offset"], signed=True)
        if descriptors is not None and member in descriptors:
            d = descriptors[member]
            p.view.take_used()
            p.view.used.update(named_frame)
            p.expect(f"{name}.{member}: its descriptor's PyMemberDescrObject.d_member, and its name",
                     [entry, member], [p.field(id(d), "PyMemberDescrObject", "d_member"), d.__name__])
        p.view.take_used()
        p.view.used.update(frame)
        table = p.off(want[3], want[4])
        if table is None:
            p.skip(f"{name}.{member}", f"{want[3]}.{want[4]} is not in the table")
            continue
        p.expect(f"{name}.{member}: PyMemberDef.offset == offsetof({want[3]}, {want[4]})", real, table)
        compared += 1
    return compared


def check(p, found, records: dict, descriptors=None) -> int:
    """`found`: (address, tp_name) of type objects; each one its record names is checked (sizes and
    members). The number of types checked."""
    n = 0
    for address, name in found:
        record = records.get(name)
        if record is None:
            continue
        try:
            tp_name = p.cstring(p.ptr(address + p.need("PyTypeObject", "tp_name")), 128)
        except (LookupError, *p.faults):
            p.view.take_used()
            continue
        p.view.take_used()
        if tp_name.decode("utf-8", "replace") != name:
            continue            # not the type object the record is of
        n += 1
        p.run(f"type {name}", sizes, p, address, name, record)
        p.run(f"type {name}'s members", members, p, address, name, record,
              None if descriptors is None else descriptors(address))
    return n
