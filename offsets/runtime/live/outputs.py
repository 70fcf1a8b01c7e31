"""Part of the live check (`runner.py`): structs the C API fills in memory this check owns, read back
through the table. The check never writes a field itself (a table that is wrong would make it write
another one): it gives zeroed (or patterned) buffers larger than any such struct, and reads what the
interpreter wrote there.

- `PyStatus`, returned by value (into a buffer of 256 bytes) by `PyStatus_Ok`, `PyStatus_Error` and
  `PyStatus_Exit`: its type, the message and the exit code given;
- `PyCompilerFlags`, whose `cf_flags` the compiler ORs the future features of the code it compiles
  into (`from __future__ import annotations`: the table's CO_FUTURE_ANNOTATIONS);
- `Py_buffer`, which `PyObject_GetBuffer` of bytes fills field by field in a buffer filled with 0xAA
  (where the pattern starts again is its size), its shape and strides pointing to its own fields;
- 3.12-3.13 `_PyUnicodeWriter`: `_PyUnicodeWriter_Init` zeroes sizeof(_PyUnicodeWriter) bytes of a
  buffer filled with 0xAA (where the zeros end is its size), and writing a str into a fresh writer
  keeps that very str as its buffer.
"""
from __future__ import annotations

import sys

#: larger than any of these structs in any CPython
ROOM = 256


def check(c) -> None:
    for fn in (status, compiler_flags, feature_version, buffer_size, unicode_writer, writer_lengths):
        c.attempt(fn.__name__, fn, c)


def status(c) -> None:
    import ctypes

    class Room(ctypes.Structure):       # returned in memory, as PyStatus is (more than 16 bytes)
        _fields_ = [("raw", ctypes.c_char * ROOM)]
    api = ctypes.pythonapi
    k = {n: row.value for n, row in c.constants().items() if n.startswith("_PyStatus_TYPE_")}
    if c.t.resolve_struct("PyStatus") is None or len(k) < 3:
        raise LookupError("no PyStatus or _PyStatus_TYPE_* in the table")
    message = ctypes.create_string_buffer(b"offsets: a status")
    ok = ctypes.PYFUNCTYPE(Room)(("PyStatus_Ok", api))()
    error = ctypes.PYFUNCTYPE(Room, ctypes.c_void_p)(("PyStatus_Error", api))(ctypes.addressof(message))
    leave = ctypes.PYFUNCTYPE(Room, ctypes.c_int)(("PyStatus_Exit", api))(37)
    held = (ok, error, leave)
    at = [ctypes.addressof(h) for h in held]
    c.expect("PyStatus._type, err_msg, exitcode (PyStatus_Ok, PyStatus_Error, PyStatus_Exit(37))",
             [[k.get("_PyStatus_TYPE_OK"), k.get("_PyStatus_TYPE_ERROR"), k.get("_PyStatus_TYPE_EXIT")],
              ctypes.addressof(message), 37],
             [[c.field(a, "PyStatus", "_type") for a in at], c.field(at[1], "PyStatus", "err_msg"),
              c.field(at[2], "PyStatus", "exitcode", signed=True)])
    del held, message


def compiler_flags(c) -> None:
    import ctypes

    future = c.constants().get("CO_FUTURE_ANNOTATIONS")
    if future is None or c.t.resolve_struct("PyCompilerFlags") is None:
        raise LookupError("no CO_FUTURE_ANNOTATIONS or PyCompilerFlags in the table")
    compile_ = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p,
                                 ctypes.c_int)(("Py_CompileStringExFlags", ctypes.pythonapi))
    flags = ctypes.create_string_buffer(ROOM)
    compile_(b"from __future__ import annotations\n", b"<offsets flags>", 257, ctypes.addressof(flags), -1)
    c.expect("PyCompilerFlags.cf_flags: the compiler ORs in the future feature it compiled "
             "(CO_FUTURE_ANNOTATIONS)", future[1], c.field(ctypes.addressof(flags), "PyCompilerFlags", "cf_flags"))
    del flags


def feature_version(c) -> None:
    """The parser reads `cf_feature_version` where the compiler is asked for an AST (PyCF_ONLY_AST):
    `async def` is refused as of 3.4 and parsed as of 3.7."""
    import ctypes

    only_ast = c.constants().get("PyCF_ONLY_AST")
    if only_ast is None or c.t.resolve_struct("PyCompilerFlags") is None:
        raise LookupError("no PyCF_ONLY_AST or PyCompilerFlags in the table")
    compile_ = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p,
                                 ctypes.c_int)(("Py_CompileStringExFlags", ctypes.pythonapi))
    got = []
    for minor in (4, 7):
        flags = ctypes.create_string_buffer(ROOM)       # the ints only: nothing in it is read as a pointer
        at = ctypes.addressof(flags)
        for path, value in (("cf_flags", only_ast[1]), ("cf_feature_version", minor)):
            off, width = c.view.need("PyCompilerFlags", path)
            if width != 4 or off + 4 > ROOM:
                raise LookupError(f"PyCompilerFlags.{path} is not an int of the check's buffer")
            ctypes.memmove(at + off, value.to_bytes(4, sys.byteorder), 4)
        try:
            got.append(type(compile_(b"async def f(): pass\n", b"<offsets feature>", 257, at, -1)).__name__)
        except SyntaxError:
            got.append("SyntaxError")
        del flags
    c.expect("PyCompilerFlags.cf_feature_version: an AST of `async def` refused for 3.4, made for 3.7",
             ["SyntaxError", "Module"], got)


def writer_lengths(c) -> None:
    """3.12-3.13: a fresh `_PyUnicodeWriter` given `overallocate` writes a str into a buffer of its own a
    quarter longer (half on Windows; not the str itself, as it keeps it otherwise); given `min_length`, one character
    into a buffer of that length. Each set where the table has it, in a writer of the check's own,
    only where that is not the proven `buffer` (which stays NULL, so the writer makes its buffer anew)."""
    import ctypes

    if not (3, 12) <= sys.version_info < (3, 14) or c.t.resolve_struct("_PyUnicodeWriter") is None:
        raise LookupError("_PyUnicodeWriter's functions are read here in 3.12 and 3.13")
    api = ctypes.pythonapi
    init = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("_PyUnicodeWriter_Init", api))
    write = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.py_object)(("_PyUnicodeWriter_WriteStr", api))
    write_char = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32)(("_PyUnicodeWriter_WriteChar", api))
    dealloc = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("_PyUnicodeWriter_Dealloc", api))
    buffer = c.view.need("_PyUnicodeWriter", "buffer")
    key = c.view.key("_PyUnicodeWriter")
    c.view.take_used()
    if (key, "buffer") not in c.r.proven:
        raise LookupError("_PyUnicodeWriter.buffer is not proven")
    text = "".join(["offsets ", "writer ", "lengths"])
    got = []
    for path, value, size, fill in (("overallocate", 1, 1, lambda at: write(at, text)),
                                    ("min_length", 77, 8, lambda at: write_char(at, ord("x")))):
        off, width = c.view.need("_PyUnicodeWriter", path)
        if width != size or off + size > ROOM or not (off + size <= buffer[0] or off >= sum(buffer)):
            raise LookupError(f"_PyUnicodeWriter.{path} is not where the check can set it")
        writer = ctypes.create_string_buffer(ROOM)
        at = ctypes.addressof(writer)
        init(at)
        ctypes.memmove(at + off, value.to_bytes(size, sys.byteorder), size)
        try:
            fill(at)
            made = ctypes.cast(ctypes.c_void_p(c.ptr(at, buffer[0])), ctypes.py_object).value
            got.append(None if made is text else len(made))
        finally:
            dealloc(at)
        del writer
    c.view.used.add((key, "buffer"))
    factor = 2 if sys.platform == "win32" else 4     # unicodeobject.c's OVERALLOCATE_FACTOR (MS_WINDOWS: 2)
    c.expect(f"_PyUnicodeWriter.overallocate, min_length: a str written into a buffer 1/{factor} longer, one "
             "character into one of min_length", [len(text) + len(text) // factor, 77], got)


#: PyBUF_FULL_RO: the format, shape and strides too (every field of a Py_buffer)
FULL_RO = 0x0100 | 0x0004 | 0x0008 | 0x0010 | 0x0018


def buffer_size(c) -> None:
    """`PyObject_GetBuffer` of bytes fills a Py_buffer field by field (PyBuffer_FillInfo: all eleven),
    in a buffer filled with 0xAA: where the pattern starts again is its size; its shape and strides
    point to its own len and itemsize."""
    import ctypes

    api = ctypes.pythonapi
    get = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p, ctypes.c_int)(("PyObject_GetBuffer", api))
    release = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("PyBuffer_Release", api))
    data = bytes(range(40, 72))
    view = ctypes.create_string_buffer(b"\xaa" * ROOM, ROOM)
    at = ctypes.addressof(view)
    get(data, at, FULL_RO)
    try:
        filled = bytes(view.raw).index(b"\xaa" * 8)
        c.expect("sizeof(Py_buffer) (what PyObject_GetBuffer of bytes fills), Py_buffer.shape, strides (its own len "
                 "and itemsize)", [filled, at + c.need("Py_buffer", "len"), at + c.need("Py_buffer", "itemsize")],
                 [c.size("Py_buffer"), c.field(at, "Py_buffer", "shape"), c.field(at, "Py_buffer", "strides")])
    finally:
        release(at)
    del view


def unicode_writer(c) -> None:
    import ctypes

    if not (3, 12) <= sys.version_info < (3, 14) or c.t.resolve_struct("_PyUnicodeWriter") is None:
        raise LookupError("_PyUnicodeWriter's functions are read here in 3.12 and 3.13")
    api = ctypes.pythonapi
    init = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("_PyUnicodeWriter_Init", api))
    write = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.py_object)(("_PyUnicodeWriter_WriteStr", api))
    dealloc = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("_PyUnicodeWriter_Dealloc", api))
    writer = ctypes.create_string_buffer(b"\xaa" * ROOM, ROOM)
    at = ctypes.addressof(writer)
    init(at)
    zeroed = bytes(writer.raw).index(b"\xaa" * 8)
    text = "".join(["offsets ", "writer"])
    write(at, text)
    try:
        c.expect("sizeof(_PyUnicodeWriter) (what _PyUnicodeWriter_Init zeroes), _PyUnicodeWriter.buffer (the str "
                 "written into a fresh writer)", [zeroed, id(text)],
                 [c.size("_PyUnicodeWriter"), c.field(at, "_PyUnicodeWriter", "buffer")])
    finally:
        dealloc(at)
    del writer
