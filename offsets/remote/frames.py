"""Every thread's Python stack in another process, read through its build's table only.

The threads: `_PyRuntime.interpreters.head`, each interpreter's `threads.head` (`tstate_head` to
3.10), each thread state's `next`. The frames of a thread, by what the table has:

- to 3.10, `PyThreadState.frame`: `PyFrameObject`s linked by `f_back`, each with `f_code` and
  `f_lasti` (a byte offset to 3.9, a code unit index in 3.10);
- 3.11 and 3.12, `PyThreadState.cframe->current_frame`; 3.13+, `PyThreadState.current_frame`:
  `_PyInterpreterFrame`s linked by `previous`, each with its code object (`f_code`, then
  `f_executable`, from 3.14 a tagged `_PyStackRef` whose tag is `Py_TAG_BITS`), its instruction
  pointer (`prev_instr`, then `instr_ptr`; free-threaded 3.14+ into the thread's own copy of the
  bytecode, `co_tlbc`) and its `owner`. Frames owned by the C stack or the interpreter
  (`FRAME_OWNED_BY_CSTACK`, `FRAME_OWNED_BY_INTERPRETER`) are left out, and so are frames that have
  not reached their first traceable instruction (`_co_firsttraceable`), as CPython's own
  `_PyFrame_IsIncomplete` does for tracebacks. The owner values come from the build's table.

Every code object is checked to be one (its type is the `PyCode_Type` the binary exports), so a
frame read while it changed is an error, never a wrong name. Line numbers: `linetable.py`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import NotInTable, RemoteReadError
from . import linetable

#: No process has more interpreters, threads or frames than this (a cycle read mid-change stops here).
MAX_INTERPRETERS = 1024
MAX_THREADS = 100_000
MAX_FRAMES = 200_000


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: Optional[int]

    def keys(self) -> dict:
        return {"function": self.function, "file": self.file, "line": self.line}


@dataclass(frozen=True)
class Thread:
    thread_id: int
    native_thread_id: Optional[int]
    interpreter: int            # the address of its PyInterpreterState
    frames: tuple

    def keys(self) -> dict:
        out = {"thread_id": self.thread_id, "frames": [f.keys() for f in self.frames]}
        if self.native_thread_id is not None:
            out["native_thread_id"] = self.native_thread_id
        return out


def _walk(first: int, step, limit: int, what: str) -> list:
    """Addresses from `first` following `step(address)` until 0; RemoteReadError on a cycle."""
    out, seen, at = [], set(), first
    while at:
        if at in seen or len(out) >= limit:
            raise RemoteReadError(f"the {what} list does not end (read while it changed?)")
        seen.add(at)
        out.append(at)
        at = step(at)
    return out


def interpreters(r) -> list:
    head = r.pointer(r.symbol("_PyRuntime"), "_PyRuntimeState", "interpreters.head")
    return _walk(head, lambda a: r.pointer(a, "PyInterpreterState", "next"), MAX_INTERPRETERS, "interpreter")


def thread_states(r, interp: int) -> list:
    head = r.pointer(interp, "PyInterpreterState", "threads.head", "tstate_head")
    return _walk(head, lambda a: r.pointer(a, "PyThreadState", "next"), MAX_THREADS, "thread state")


class Stack:
    """How to read the frames of one build (chosen once from what its table has)."""

    def __init__(self, r, hexversion: int, observe: bool = False) -> None:
        self.r, self.hexversion = r, hexversion
        #: with `observe` (the proof): (owner, whether the frame lies inside a generator or coroutine
        #: object) of every frame read, to check the owner constants against
        self.observe, self.observed = observe, []
        self.constants_used: set = set()
        self._codes: dict = {}              # code object address -> what _code read, within one sample
        if r.has("PyThreadState", "current_frame"):
            self.kind, self.hops = "interpreter", ("current_frame",)
        elif r.has("PyThreadState", "cframe") and r.has("_PyCFrame", "current_frame"):
            self.kind, self.hops = "interpreter", ("cframe",)
        elif r.has("PyThreadState", "frame"):
            self.kind, self.hops = "object", ("frame",)
        else:
            raise NotInTable(f"table {r.t.name} has no way from PyThreadState to its frames")
        self.code_unit = r.size("_Py_CODEUNIT") if r.view.key("_Py_CODEUNIT") else linetable.CODE_UNIT
        if self.kind == "interpreter":
            self._interpreter_setup()

    # ------------------------------------------------------------------ 3.11+
    def _interpreter_setup(self) -> None:
        r = self.r
        self.code_field = "f_executable" if r.has("_PyInterpreterFrame", "f_executable") else "f_code"
        self.instr_field = "instr_ptr" if r.has("_PyInterpreterFrame", "instr_ptr") else "prev_instr"
        self.tagged = not r.t.fields(r.view.key("_PyInterpreterFrame"))[self.code_field][2].rstrip().endswith("*")
        self.tag_bits = self._constant("Py_TAG_BITS") if self.tagged else 0
        self.generator = self._constant("FRAME_OWNED_BY_GENERATOR")
        self.skipped_owners = {v for v in (self._constant(n, optional=True) for n in
                                           ("FRAME_OWNED_BY_CSTACK", "FRAME_OWNED_BY_INTERPRETER")) if v is not None}
        self.tlbc = r.has("_PyInterpreterFrame", "tlbc_index") and r.has("PyCodeObject", "co_tlbc")

    def _constant(self, name: str, optional: bool = False):
        value = self.r.constant(name)
        if value is not None:
            self.constants_used.add(name)
        if value is None and not optional:
            raise NotInTable(f"table {self.r.t.name} has no constant {name}, which reading frames of CPython "
                             f"3.11+ needs (a table made before tables recorded constants has none: run `make tables`, "
                             f"or make this build's own table with `offsets scan --install`)")
        return value

    def first_frame(self, tstate: int) -> int:
        r = self.r
        if self.hops == ("frame",):
            return r.pointer(tstate, "PyThreadState", "frame")
        if self.hops == ("cframe",):
            cframe = r.pointer(tstate, "PyThreadState", "cframe")
            return r.pointer(cframe, "_PyCFrame", "current_frame") if cframe else 0
        return r.pointer(tstate, "PyThreadState", "current_frame")

    def frames(self, tstate: int) -> list:
        """The thread's frames, innermost first. A code object is read once per sample (a recursion's
        frames share it); never across samples, where its address may hold another one."""
        self._codes = {}
        first = self.first_frame(tstate)
        if self.kind == "object":
            addrs = _walk(first, lambda a: self.r.pointer(a, "PyFrameObject", "f_back"), MAX_FRAMES, "frame")
            return [self._object_frame(a) for a in addrs]
        addrs = _walk(first, lambda a: self.r.pointer(a, "_PyInterpreterFrame", "previous"), MAX_FRAMES, "frame")
        return [f for f in (self._interpreter_frame(a) for a in addrs) if f is not None]

    def _code(self, code: int, what: str) -> tuple:
        """(name, file, first line, line table bytes) of the code object at `code`."""
        known = self._codes.get(code)
        if known is None:
            known = self._codes[code] = self._read_code(code, what)
        return known

    def _read_code(self, code: int, what: str) -> tuple:
        r = self.r
        r.expect_type(code, "PyCode_Type", what)
        name = r.str_of(r.pointer(code, "PyCodeObject", "co_name"), f"{what}'s co_name")
        file = r.str_of(r.pointer(code, "PyCodeObject", "co_filename"), f"{what}'s co_filename")
        first = r.field(code, "PyCodeObject", "co_firstlineno", signed=True)
        table = r.bytes_of(r.pointer(code, "PyCodeObject", "co_linetable", "co_lnotab"), f"{what}'s line table")
        return name, file, first, table

    def _object_frame(self, frame: int) -> Frame:
        r = self.r
        code = r.pointer(frame, "PyFrameObject", "f_code")
        name, file, first, table = self._code(code, f"the code object of the frame at {frame:#x}")
        lasti = r.field(frame, "PyFrameObject", "f_lasti", signed=True)
        if self.hexversion >= 0x030A0000:       # 3.10: f_lasti counts code units; f_lineno is set when tracing
            traced = r.field(frame, "PyFrameObject", "f_lineno", signed=True)
            line = traced or linetable.line_of(self.hexversion, table, first, lasti * self.code_unit)
        else:                                   # 3.8, 3.9: f_lasti is a byte offset; f_lineno is kept when tracing
            traced = r.pointer(frame, "PyFrameObject", "f_trace")
            line = r.field(frame, "PyFrameObject", "f_lineno", signed=True) if traced else \
                linetable.line_of(self.hexversion, table, first, lasti)
        return Frame(name, file, None if line < 0 else line)

    def _interpreter_frame(self, frame: int) -> Optional[Frame]:
        r = self.r
        owner = r.field(frame, "_PyInterpreterFrame", "owner")
        if self.observe:
            self.observed.append((owner, self._in_generator(frame)))
        if owner in self.skipped_owners:
            return None
        code = r.pointer(frame, "_PyInterpreterFrame", self.code_field)
        if self.tagged:
            code &= ~self.tag_bits
        what = f"the code object of the frame at {frame:#x}"
        name, file, first, table = self._code(code, what)
        instr = r.pointer(frame, "_PyInterpreterFrame", self.instr_field)
        base = self._bytecode(frame, code)
        lasti = (instr - base) // self.code_unit
        if owner != self.generator and lasti < r.field(code, "PyCodeObject", "_co_firsttraceable", signed=True):
            return None                         # not started yet (CPython's _PyFrame_IsIncomplete)
        line = linetable.line_of(self.hexversion, table, first, lasti * self.code_unit, self.code_unit)
        return Frame(name, file, None if line < 0 else line)

    def _in_generator(self, frame: int) -> bool:
        """Whether the frame is the one embedded in a generator, coroutine or async generator object
        (`gi_iframe`): that object's type is one the binary exports."""
        r = self.r
        try:
            at = frame - r.offset("PyGenObject", "gi_iframe")
            kind = r.ob_type(at)
        except (LookupError, RemoteReadError):
            return False
        return kind in {r.symbols.get(n) for n in ("PyGen_Type", "PyCoro_Type", "PyAsyncGen_Type")} - {None}

    def _bytecode(self, frame: int, code: int) -> int:
        """Where the frame's bytecode starts: the code object's own, or (free-threaded 3.14+) the
        thread's copy, `co_tlbc->entries[tlbc_index]`."""
        r = self.r
        if self.tlbc:
            index = r.field(frame, "_PyInterpreterFrame", "tlbc_index", signed=True)
            array = r.pointer(code, "PyCodeObject", "co_tlbc")
            size = r.field(array, "_PyCodeArray", "size", signed=True)
            if not 0 <= index < size:
                raise RemoteReadError(f"the frame at {frame:#x} uses bytecode copy {index} of {size}")
            return r.mem.pointer(array + r.offset("_PyCodeArray", "entries") + index * r.psize)
        return code + r.offset("PyCodeObject", "co_code_adaptive")


def thread_ids(r, tstate: int) -> tuple:
    native = r.field(tstate, "PyThreadState", "native_thread_id") if r.has("PyThreadState", "native_thread_id") \
        else None
    return r.field(tstate, "PyThreadState", "thread_id"), native


def all_threads(r, hexversion: int, stack: "Stack" = None) -> list:
    """Every thread of every interpreter, with its frames."""
    stack = stack or Stack(r, hexversion)
    out = []
    for interp in interpreters(r):
        for ts in thread_states(r, interp):
            tid, native = thread_ids(r, ts)
            out.append(Thread(tid, native, interp, tuple(stack.frames(ts))))
    return out
