"""libclang's answers about a unit's constants, through the `clang.cindex` module clang_scan
loaded (this module imports no clang: clang_scan is still the one that talks to libclang, these
are its helpers for `constant_probe`'s questions): the diagnostics on the probes' lines, the types
and values of the probes' declarations, the enumerators of an owned enum, and the unit's
constants once they are all in.
"""
from __future__ import annotations

import ctypes
import os
from typing import Optional

from . import constant_probe, macro_text
from ..errors import ScanError
from ..layout.model import Constant


def register(ci) -> None:
    """Declare the evaluation calls clang.cindex's bindings lack."""
    lib = ci.conf.lib
    lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
    lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
    for name, restype in (("getKind", ctypes.c_int), ("isUnsignedInt", ctypes.c_uint),
                          ("getAsUnsigned", ctypes.c_ulonglong), ("getAsLongLong", ctypes.c_longlong),
                          ("dispose", None)):
        f = getattr(lib, "clang_EvalResult_" + name)
        f.argtypes, f.restype = [ctypes.c_void_p], restype


def where(ci, location) -> tuple:
    """(CXFile address or None, line) of a source location, where the macro was expanded."""
    f, line = ci.c_object_p(), ctypes.c_uint()
    ci.conf.lib.clang_getInstantiationLocation(location, ctypes.byref(f), ctypes.byref(line), None, None)
    return address(f), line.value


def address(pointer):
    return ctypes.cast(pointer, ctypes.c_void_p).value


def answer(ci, d, main, first: int, app, answers) -> bool:
    """Take diagnostic `d` as an answer to the probes from line `first` of the main file (`main`:
    its CXFile) on, if it is on one of their lines: an error on a probe line, or the note of a
    redefinition (where the definition in effect is; None when it has no file: the command line)."""
    lib = ci.conf.lib
    f, line = where(ci, lib.clang_getDiagnosticLocation(d))
    if f is None or f != main or line < first:
        return False
    k = line - first
    start = app.redefinitions_start
    if k >= start:
        if k - start < len(app.names):
            place = None
            notes = lib.clang_getChildDiagnostics(d)
            for i in range(lib.clang_getNumDiagnosticsInSet(notes)):
                at, at_line = where(ci, lib.clang_getDiagnosticLocation(ci.Diagnostic(lib.clang_getDiagnosticInSet(notes, i))))
                if at is not None:
                    name = answers.file_names.get(at)       # one string per file of this unit
                    if name is None:
                        name = answers.file_names[at] = ci.File(ctypes.cast(at, ci.c_object_p)).name
                    place = (name, at_line)
                    break
            answers.places[app.names[k - start]] = place
    else:
        answers.errors[k] = True
    return True


_INTEGER_KINDS = frozenset(("BOOL", "CHAR_U", "UCHAR", "USHORT", "UINT", "ULONG", "ULONGLONG", "UINT128", "CHAR_S",
                            "SCHAR", "SHORT", "INT", "LONG", "LONGLONG", "INT128", "ENUM"))
_FLOATING_KINDS = frozenset(("FLOAT", "DOUBLE", "LONGDOUBLE", "FLOAT128", "HALF", "FLOAT16", "IBM128", "COMPLEX"))


def _integer_type(ci, t) -> tuple:
    """(kind word, canonical spelling, size) of a probe's type: an enum's is its integer type's."""
    t = t.get_canonical()
    kind = t.kind.name
    if kind == "ENUM":
        t = t.get_declaration().enum_type.get_canonical()
        kind = t.kind.name
    if kind in _INTEGER_KINDS:
        return "integer", t.spelling, t.get_size()
    if kind == "POINTER":
        return "pointer", t.spelling, t.get_size()
    if kind in _FLOATING_KINDS:
        return "floating", t.spelling, t.get_size()
    if kind in ("CONSTANTARRAY", "INCOMPLETEARRAY") and t.element_type.get_canonical().kind.name in (
            "CHAR_S", "CHAR_U", "SCHAR", "UCHAR", "WCHAR", "CHAR16", "CHAR32", "INT", "USHORT", "UINT"):
        return "string", t.spelling, t.get_size()
    return "other", t.spelling, t.get_size()


def evaluate(ci, cursor) -> Optional[int]:
    """clang's value of a variable's initializer, if it is an integer."""
    lib = ci.conf.lib
    r = lib.clang_Cursor_Evaluate(cursor)
    if not r:
        return None
    try:
        if lib.clang_EvalResult_getKind(r) != 1:        # CXEval_Int
            return None
        if lib.clang_EvalResult_isUnsignedInt(r):
            return lib.clang_EvalResult_getAsUnsigned(r)
        return lib.clang_EvalResult_getAsLongLong(r)
    finally:
        lib.clang_EvalResult_dispose(r)



def take_type(ci, cursor, name: str, answers) -> None:
    """A type probe (`typedef __typeof__((NAME)) T;`): its type's kind, spelling and size."""
    i = int(name[len(constant_probe.TYPE_PREFIX):])
    answers.seen.add(i)
    answers.types[i] = _integer_type(ci, cursor.underlying_typedef_type)


def take_value(ci, cursor, name: str, answers) -> None:
    """A value probe (`static const T V = (NAME);`) of an integer type: clang's value of it."""
    i = int(name[len(constant_probe.VALUE_PREFIX):])
    t = answers.types.get(i)
    if t is not None and t[0] == "integer" and t[2] <= 8:
        value = evaluate(ci, cursor)
        if value is not None:
            answers.values[i] = value


def enumerators(ci, children, own_name, out: dict, left_out: dict) -> None:
    """The enumerators of an owned enum (`children`: its cursors) into `out`, name -> Constant;
    one under a conditional that asks which compiler reads it is left out."""
    int_kind, lib = ci.TypeKind.INT.value, ci.conf.lib
    for e in children:
        at = e.location
        file = at.file.name
        if macro_text.compiler_dependent(file, at.line):
            left_out[e.spelling] = "compiler-specific"
            continue
        t = e.type
        if t._kind_id == int_kind:          # C: an enumeration constant is an int
            spelling, size, value = "int", 4, lib.clang_getEnumConstantDeclValue(e)
        else:
            spelling, size, value = _integer_type(ci, t)[1:] + (e.enum_value,)
        out[e.spelling] = Constant(e.spelling, value, spelling, size, own_name(file), "enum")


def finish(unit: str, app, answers, enumerators_: dict, result, own_name, owned) -> None:
    """The unit's constants (a macro shadows an enumerator of its name) and the macros left out,
    into `result`; a `ScanError` if a probe's parse lost its place."""
    lost = constant_probe.lost(app, answers)
    if lost is not None:
        raise ScanError(f"{unit}: the constant probe of {lost} lost its place in the parse (its lines have "
                        f"neither a declaration nor an error): constants not trusted")
    read: list = []

    def files_read() -> set:        # made once, if a name needs it
        if not read:
            read.append({os.path.normpath(f) for f in result.files})
        return read[0]

    macros, left_out = constant_probe.classify(app, answers, files_read, own_name, owned)
    result.constants = dict(sorted({**enumerators_, **macros}.items()))
    result.left_out = {n: why for n, why in {**result.left_out, **left_out}.items() if n not in result.constants}
