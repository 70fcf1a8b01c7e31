"""The live check's toolkit: what every check module of `offsets.runtime.live` reads this process with.

- `Memory` reads this process's memory with write(2) into a pipe, which fails with EFAULT on a bad
  address instead of crashing (`Fault`), so a wrong table makes the check fail, never the process
  (on Windows, with ReadProcessMemory on itself, which fails as safely);
- `Checker` is a `proofs.prover.Prover` of this process: the table it proves (`t`), its memory, and
  what the table's side hands it (the table's constants: `constants()`);
- `need`, and the few readings several checks share: a C API function (`c_function`), this
  interpreter's state and `_PyRuntime` (`this_interp`, `this_runtime`), the fields of an object that
  hold other objects (`holding`), where a word is (`words_holding`), a struct's bytes (`image`), the
  one place that goes as a field does (`only`), whether a trace function may be set (`may_trace`);
- the expectations the remote check shares (`remote/anchors.py`): the types whose `__basicsize__`
  a struct determines (`BASICSIZE`) and what `_Py_DebugOffsets` describes (`debug_offsets`).

It imports nothing of the checks above it, nor of the runtime: a check is handed what it needs.
"""
from __future__ import annotations

import os
import sys

from ...proofs.prover import Prover
from ...proofs.result import Result
from ...proofs.view import View

#: Types whose `__basicsize__` a struct determines: (label, type getter, struct, expectations).
#: An expectation is a sum of terms: `size` (of the struct), a field path of the struct (its
#: offset), `@Struct.path` (an offset in another struct) or an int. The first expectation whose
#: terms the table has is the one checked (the variable part of var-sized objects moved over time).
BASICSIZE = (
    ("object", lambda: object, "PyObject", (("size",),)),
    ("list", lambda: list, "PyListObject", (("size",),)),
    ("dict", lambda: dict, "PyDictObject", (("size",),)),
    ("set", lambda: set, "PySetObject", (("size",),)),
    ("float", lambda: float, "PyFloatObject", (("size",),)),
    ("complex", lambda: complex, "PyComplexObject", (("size",),)),
    ("bytearray", lambda: bytearray, "PyByteArrayObject", (("size",),)),
    ("type", lambda: type, "PyHeapTypeObject", (("size",),)),
    ("str", lambda: str, "PyUnicodeObject", (("size",),)),
    ("BaseException", lambda: BaseException, "PyBaseExceptionObject", (("size",),)),
    ("OSError", lambda: OSError, "PyOSErrorObject", (("size",),)),
    ("slice", lambda: slice, "PySliceObject", (("size",),)),
    ("property", lambda: property, "propertyobject", (("size",),)),
    ("list_iterator", lambda: type(iter([])), "listiterobject", (("size",),)),
    ("function", lambda: type(_sample), "PyFunctionObject", (("size",),)),
    ("method", lambda: type(_Sample().method), "PyMethodObject", (("size",),)),
    ("cell", lambda: type(_cell()), "PyCellObject", (("size",),)),
    ("module", lambda: type(sys), "PyModuleObject", (("size",),)),
    ("tuple", lambda: tuple, "PyTupleObject", (("ob_item",),)),
    ("int", lambda: int, "PyLongObject", (("long_value.ob_digit",), ("ob_digit",))),
    ("bytes", lambda: bytes, "PyBytesObject", (("ob_sval", 1),)),
    ("memoryview", lambda: memoryview, "PyMemoryViewObject", (("ob_array",),)),
    ("code", lambda: type(_sample.__code__), "PyCodeObject", (("co_code_adaptive",), ("size",))),
    ("frame", lambda: type(sys._getframe()), "PyFrameObject",
     (("_f_frame_data", "@_PyInterpreterFrame.localsplus"), ("size",))),
    ("generator", lambda: type(_gen()), "PyGenObject", (("gi_iframe", "@_PyInterpreterFrame.localsplus"), ("size",))),
)

def debug_offsets() -> dict:
    """data/debug_offsets.json: `_Py_DebugOffsets` member -> ("size", struct) or ("offset", struct, path)."""
    import json

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "debug_offsets.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)["members"]


def _sample(a, b=1):
    return a + b


class _Sample:
    def method(self):
        return self


def _cell():
    x = 1

    def inner():
        return x
    return inner.__closure__[0]


def _gen():
    yield 1


class Fault(Exception):
    """An address that cannot be read."""


class PipeMemory:
    """Reads this process's memory without crashing on a bad address: write(2) to a pipe reports
    EFAULT for an unmapped address where a plain load would fault."""

    def __init__(self) -> None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        self.write = libc.write
        self.write.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
        self.write.restype = ctypes.c_ssize_t
        self.rfd, self.wfd = os.pipe()

    def close(self) -> None:
        os.close(self.rfd)
        os.close(self.wfd)

    def copier(self, n: int) -> tuple:
        """(copy, args, take): `copy(addr, *args)` copies n bytes at addr in one C call (no Python
        frame is pushed, so it can read the thread state's current frame), and `take(its result)`,
        called after, gives them, or None for an unreadable address."""
        from functools import partial

        def take(k):
            if k == n:
                return read_all(self.rfd, n)
            if k > 0:
                os.read(self.rfd, k)
            return None
        return partial(self.write, self.wfd), (n,), take

    def read(self, addr: int, n: int) -> bytes:
        if not addr or addr < 4096 or n <= 0 or n > 4096:
            raise Fault(f"no readable {n} bytes at {addr:#x}")
        k = self.write(self.wfd, addr, n)
        if k != n:
            if k > 0:
                os.read(self.rfd, k)
            raise Fault(f"no readable {n} bytes at {addr:#x}")
        return read_all(self.rfd, n)

    def int(self, addr: int, n: int, signed: bool = False) -> int:
        return int.from_bytes(self.read(addr, n), sys.byteorder, signed=signed)


class WindowsMemory:
    """Reads this process's memory on Windows without crashing on a bad address: ReadProcessMemory
    on the process itself fails (ERROR_PARTIAL_COPY, ERROR_NOACCESS) where a plain load would fault."""

    def __init__(self) -> None:
        import ctypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        self._read = kernel32.ReadProcessMemory
        self._read.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                               ctypes.POINTER(ctypes.c_size_t))
        self._read.restype = ctypes.c_int
        self._process = ctypes.c_void_p(-1)         # GetCurrentProcess()'s pseudo handle
        self._ctypes = ctypes
        # made once: a read allocates no Python object but the bytes it returns (the free-list
        # checks read right after a free, and an object made in between would take its place)
        self._buf, self._got = ctypes.create_string_buffer(4096), ctypes.c_size_t(0)
        self._got_ref, self._at = ctypes.byref(self._got), ctypes.addressof(self._buf)
        self._copy = ctypes.string_at

    def close(self) -> None:
        pass

    def copier(self, n: int) -> tuple:
        """(copy, args, take), as PipeMemory's."""
        from functools import partial

        ctypes = self._ctypes
        buf, got = ctypes.create_string_buffer(n), ctypes.c_size_t(0)
        return (partial(self._read, self._process), (buf, n, ctypes.byref(got)),
                lambda ok: buf.raw if ok and got.value == n else None)

    def read(self, addr: int, n: int) -> bytes:
        if not addr or addr < 4096 or n <= 0 or n > 4096:
            raise Fault(f"no readable {n} bytes at {addr:#x}")
        if not self._read(self._process, addr, self._at, n, self._got_ref) or self._got.value != n:
            raise Fault(f"no readable {n} bytes at {addr:#x}")
        return self._copy(self._at, n)

    def int(self, addr: int, n: int, signed: bool = False) -> int:
        return int.from_bytes(self.read(addr, n), sys.byteorder, signed=signed)


#: This process's memory reader: `read(address, n)` or Fault, `int`, `close`.
Memory = WindowsMemory if sys.platform == "win32" else PipeMemory


def read_all(fd: int, n: int) -> bytes:
    data = os.read(fd, n)
    while len(data) < n:
        data += os.read(fd, n - len(data))
    return data


class Checker(Prover):
    """A `Prover` of this process: its memory read by write(2) (`Memory`), `t` the runtime's table;
    `constants()` the table's constants (name -> row), as the one who runs the check hands them
    (`constants(table)`; none when not handed)."""

    def __init__(self, table, mem: Memory, result: Result, constants=None) -> None:
        super().__init__(View.of_loaded(table), mem.read, 8 if sys.maxsize > 2 ** 32 else 4, sys.byteorder, result,
                         faults=(Fault,))
        self.t, self.mem = table, mem
        self._constants = constants

    def constants(self) -> dict:
        """The table's constants: name -> [name, value, type, size, defined_in, kind]."""
        return self._constants(self.t) if self._constants is not None else {}

    read_field = Prover.field


#: sizeof(wchar_t): 4 where the C library's is UTF-32 (Linux, macOS), 2 on Windows (UTF-16)
WCHAR_SIZE = 2 if sys.platform == "win32" else 4


def wide_string(c, addr: int, limit: int = 4096) -> str:
    """The NUL-terminated `wchar_t` string at addr (up to `limit` units), as C's wchar_t spells it
    here (UTF-32, or UTF-16 on Windows); it ends early at a unit no str holds (no wide string)."""
    units = []
    while addr and len(units) < limit:
        u = c.int(addr + WCHAR_SIZE * len(units), WCHAR_SIZE)
        if not u or u > 0x10FFFF:
            break
        units.append(u)
    if WCHAR_SIZE == 4:
        return "".join(map(chr, units))
    return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")


def need(value, name: str):
    if value is None:
        raise LookupError(f"{name} not in the table")
    return value




def c_function(name: str, restype, *argtypes):
    """The C API function `name` of this interpreter, with prototypes of its own (setting restype on
    ctypes.pythonapi's would change them for everyone)."""
    import ctypes

    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


def this_interp() -> int:
    """The address of this thread's `PyInterpreterState`."""
    import ctypes

    return ctypes.PYFUNCTYPE(ctypes.c_void_p)(("PyInterpreterState_Get", ctypes.pythonapi))()


def this_runtime():
    """The address of `_PyRuntime`, or None where the binary does not export it."""
    import ctypes

    try:
        return ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    except ValueError:
        return None


def holding(c, struct: str, obj, pairs) -> None:
    """Each (field, truth) of `obj`: the field holds the truth object (compared by address)."""
    key = c.t.resolve_struct(struct)
    if key is None:
        c.skip(struct, "not in the table")
        return
    fields = c.t.fields(key)
    for path, truth in pairs:
        if truth is None or path not in fields:
            continue
        c.run(f"{struct}.{path}", lambda p=path, t=truth: c.expect(f"{struct}.{p}", id(t), c.field(id(obj), struct, p)))


def words_holding(c, start: int, end: int, value: int) -> list:
    """Where `value` is among the pointer-sized words from `start` to `end`."""
    raw = b"".join(c.read(a, min(4096, end - a)) for a in range(start, end, 4096))
    p = c.psize
    return [start + i for i in range(0, len(raw) - p + 1, p) if int.from_bytes(raw[i:i + p], sys.byteorder) == value]


def may_trace() -> None:
    """LookupError (the check is not run) unless this thread may set a trace or profile function of its
    own for a moment: up to 3.11 (from 3.12 `sys.settrace`/`sys.setprofile` set events of the whole
    interpreter: every code object is instrumented again, 3.13 invalidates every executor, a
    free-threaded build stops the world), and only where none is set (never replace a debugger's
    or a profiler's)."""
    if sys.version_info >= (3, 12):
        raise LookupError("3.12+: sys.settrace and sys.setprofile instrument the whole interpreter")
    if sys.gettrace() is not None or sys.getprofile() is not None:
        raise LookupError("a trace or profile function is set")


def image(c, addr: int, n: int) -> bytes:
    """The `n` bytes at `addr`."""
    return b"".join(c.read(a, min(4096, addr + n - a)) for a in range(addr, addr + n, 4096))


def only(c, struct: str, path: str, images: list, goes) -> None:
    """The table's offset of `path` is the only one whose values in `images` (the struct's bytes at
    successive moments) satisfy `goes(values)`; not run where no place, or more than one, does."""
    found = c.view.row(struct, path)
    c.view.take_used()
    if found is None:
        raise LookupError(f"{struct}.{path} is not in the table")
    width = found[1][1]
    where = [i for i in range(0, len(images[0]) - width + 1, width)
             if goes([int.from_bytes(m[i:i + width], sys.byteorder, signed=True) for m in images])]
    if len(where) != 1:
        raise LookupError(f"{len(where)} places of {width} bytes in {struct} go as {path} does")
    c.expect(f"{struct}.{path}: the only place that goes as it does", where[0], c.need(struct, path))
