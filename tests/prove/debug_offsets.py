"""CPython's own description of itself: the slots of `_PyRuntime.debug_offsets` (3.13+).

Which field each slot describes comes from the build's own installed headers, never from our
tables: gcc preprocesses the initializer (`_Py_DebugOffsets_INIT` in 3.14+'s
`pycore_debug_offsets.h`, the `.debug_offsets` member of `_PyRuntimeState_INIT` in 3.13) with
the build's core defines, and each `offsetof(T, d)`/`sizeof(T)` in it is one slot. Where each
slot lives inside `_PyRuntimeState` is gcc's `offsetof` over the same headers, read back from an
object file (`offsets.check.probe._read_symbols`).
"""
from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from offsets.check.probe import _read_symbols

_BEGIN, _END = "__offsets_init_begin__", "__offsets_init_end__"
_OFFSETOF = re.compile(r"^\(?\s*(?:__builtin_offsetof|offsetof)\s*\(\s*(.+?)\s*,\s*(.+?)\s*\)\s*\)?$", re.S)
_SIZEOF = re.compile(r"^\(?\s*sizeof\s*\(\s*(.+?)\s*\)\s*\)?$", re.S)


@dataclass(frozen=True)
class Slot:
    """One slot: its designator inside `_Py_DebugOffsets`, and the field or struct it describes."""

    path: str      # e.g. interpreter_state.threads_head
    kind: str      # "offset" or "size"
    name: str      # what to ask offsets: "PyInterpreterState.threads.head" or "PyInterpreterState"


def _struct_name(c_type: str) -> str:
    return re.sub(r"^(struct|union)\s+", "", " ".join(c_type.split()))


def _split_top(text: str) -> list[str]:
    """`text` split at its top-level commas (outside (), {} and [])."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_initializer(text: str, prefix: str = "") -> dict[str, str]:
    """A designated initializer `{ .a = 1, .b = { .c = x } }` flattened to {"a": "1", "b.c": "x"}."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError(f"not a braced initializer: {text[:80]!r}")
    out: dict[str, str] = {}
    for item in _split_top(text[1:-1]):
        m = re.match(r"^\.(\w+)\s*=\s*(.*)$", item, re.S)
        if not m:
            raise ValueError(f"initializer item without a designator: {item[:80]!r}")
        path, value = prefix + m.group(1), m.group(2).strip()
        if value.startswith("{"):
            out.update(parse_initializer(value, path + "."))
        else:
            out[path] = " ".join(value.split())
    return out


def slots_of(initializer: dict[str, str]) -> tuple[list[Slot], dict[str, str]]:
    """The offsetof/sizeof slots of a flattened initializer, and the other (constant) items."""
    slots, other = [], {}
    for path, value in initializer.items():
        if m := _OFFSETOF.match(value):
            slots.append(Slot(path, "offset", f"{_struct_name(m.group(1))}.{''.join(m.group(2).split())}"))
        elif m := _SIZEOF.match(value):
            slots.append(Slot(path, "size", _struct_name(m.group(1))))
        else:
            other[path] = value
    return slots, other


class Headers:
    """An installed CPython's headers, compiled by gcc the way its core was (`Py_BUILD_CORE` and
    the `-D`/`-U` flags of its `PY_CORE_CFLAGS`)."""

    def __init__(self, include: Path, core_cflags: str, extra_includes: tuple[Path, ...] = ()) -> None:
        self.include = include
        defines = [a for a in shlex.split(core_cflags or "") if a.startswith(("-D", "-U"))]
        if "-DPy_BUILD_CORE" not in defines:
            defines.append("-DPy_BUILD_CORE")
        self.flags = ["-I", str(include), *(a for d in extra_includes for a in ("-I", str(d))), *defines]
        text = (include / "internal" / "pycore_debug_offsets.h")
        self.modern = text.is_file() and "_Py_DebugOffsets_INIT" in text.read_text()
        self.prelude = '#include "Python.h"\n#include "internal/pycore_runtime.h"\n' \
                       '#include "internal/pycore_runtime_init.h"\n'

    def _gcc(self, args: list[str], work: Path) -> str:
        proc = subprocess.run(["gcc", *self.flags, *args], capture_output=True, text=True, cwd=work)
        if proc.returncode:
            raise AssertionError(f"gcc {' '.join(args)} failed over {self.include}:\n{proc.stderr[-3000:]}")
        return proc.stdout

    def initializer(self) -> dict[str, str]:
        """The debug offsets initializer as gcc's preprocessor expands it for this build, flattened."""
        macro = '_Py_DebugOffsets_INIT("xdebugpy")' if self.modern else '_PyRuntimeState_INIT(_PyRuntime, "xdebugpy")'
        with tempfile.TemporaryDirectory(prefix="offsets-dbg-") as tmp:
            src = Path(tmp) / "init.c"
            src.write_text(f"{self.prelude}{_BEGIN} {macro} {_END}\n")
            out = self._gcc(["-E", "-P", str(src)], Path(tmp))
        body = out[out.index(_BEGIN) + len(_BEGIN):out.index(_END)].strip()
        if not self.modern:   # 3.13: only the runtime initializer's `.debug_offsets = {...}` member
            members = [re.match(r"^\.debug_offsets\s*=\s*(\{.*\})$", item, re.S)
                       for item in _split_top(body[1:-1])]
            found = [m.group(1) for m in members if m]
            if len(found) != 1:
                raise AssertionError(f"_PyRuntimeState_INIT in {self.include} has {len(found)} .debug_offsets members")
            body = found[0]
        return parse_initializer(body)

    def values(self, exprs: list[str]) -> list[int]:
        """gcc's value of each integer constant expression (`offsetof(T, d)`, `sizeof(T)`) over the headers."""
        with tempfile.TemporaryDirectory(prefix="offsets-dbg-") as tmp:
            src, obj = Path(tmp) / "values.c", Path(tmp) / "values.o"
            src.write_text(f"{self.prelude}#include <stddef.h>\n"
                           f"const unsigned long long __offsets_values[] = {{{', '.join(exprs)}}};\n")
            self._gcc(["-w", "-O0", "-c", str(src), "-o", str(obj)], Path(tmp))
            data = _read_symbols(obj, ["__offsets_values"])[0]["__offsets_values"]
        return [int.from_bytes(data[i:i + 8], "little") for i in range(0, len(data), 8)]

    def positions(self, paths: list[str]) -> dict[str, tuple[int, int]]:
        """(offset within `_PyRuntimeState`, size) of `debug_offsets.PATH` for each path, by gcc."""
        values = self.values([e for p in paths for e in (f"offsetof(_PyRuntimeState, debug_offsets.{p})",
                                                          f"sizeof(((_PyRuntimeState *)0)->debug_offsets.{p})")])
        return {p: (values[2 * i], values[2 * i + 1]) for i, p in enumerate(paths)}


#: Runs inside the interpreter under test: reads each slot of `_PyRuntime` and asks offsets.
LIVE = r"""
import ctypes, json, sys
import offsets
from offsets.errors import OffsetsError
todo = json.loads(sys.argv[1])
base = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
read = lambda pos: ctypes.c_uint64.from_address(base + pos).value
out = {"cookie": ctypes.string_at(base + todo["cookie"], 8).decode("latin-1"),
       "version": read(todo["version"]), "hexversion": sys.hexversion, "slots": []}
for path, kind, name, pos in todo["slots"]:
    try:
        ours = offsets.get(name) if kind == "offset" else offsets.sizeof(name)
    except OffsetsError as e:
        ours = "refused: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
    out["slots"].append([path, name, read(pos), ours])
try:
    out["table"] = str(offsets.build())
except OffsetsError as e:
    out["table"] = "none: %s" % e
print(json.dumps(out))
"""
