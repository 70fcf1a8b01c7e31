"""Part of the live check (`live.py`), 3.12+: `sys.monitoring`'s state, while this check uses a tool id
no one else does (`sys.monitoring.get_tool` says it is free) and gives it back at once, as it does
with `sys.settrace` (never where a tool, a trace or a profile function is set already). It sets
events only on its own code object: a global event would instrument every code object of the
process (and invalidate what a JIT built on them), so the global monitors are not read.

- the interpreter's callables: the function registered for a tool's event is at
  `monitoring_callables[tool][event]` (the events' numbers are `sys.monitoring.events`' bits);
- a code object's `_co_monitoring`, after local LINE and INSTRUCTION events are set on it: its
  `active_monitors.tools[LINE]` has the tool's bit, its `lines` hold each line's first instruction's
  own opcode (`original_opcode`), its `per_instruction_opcodes` every instruction's (as `co_code`
  and `dis` show them).
"""
from __future__ import annotations

import sys

SOURCE = "def watched(a):\n    b = a + 1\n    return b\n"


def check(c) -> None:
    if sys.version_info >= (3, 12):
        c.attempt("sys.monitoring", monitoring, c)


def _event(bit: int) -> int:
    return bit.bit_length() - 1


def _free_tool():
    m = sys.monitoring
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return None
    for tool in (3, 4):        # not the debugger's, coverage's, the profiler's or the optimizer's (0, 1, 2, 5)
        if m.get_tool(tool) is None:
            return tool
    return None


def monitoring(c) -> None:
    import dis

    from .live_state import _interp

    m = sys.monitoring
    tool = _free_tool()
    if tool is None:
        raise LookupError("no free sys.monitoring tool id, or a trace or profile function is set")
    ns: dict = {}
    exec(SOURCE, ns)      # noqa: S102 - our own text
    code = ns["watched"].__code__
    ev = m.events
    line = _event(ev.LINE)
    starts = sorted({s // 2 for s, _ in dis.findlinestarts(code)} - {0})      # not RESUME's, no line event
    ops = [code.co_code[2 * i] for i in range(len(code.co_code) // 2)]
    # the instructions but RESUME (no events) and the cache units that follow some
    instructions = sorted({i.offset // 2 for i in dis.get_instructions(code)} - {0})

    def callback(*args):
        return None
    m.use_tool_id(tool, "offsets")
    try:
        m.register_callback(tool, ev.LINE, callback)
        m.set_local_events(tool, code, ev.LINE)
        got = _read(c, _interp(), code, tool, line, starts)
        m.set_local_events(tool, code, ev.LINE | ev.INSTRUCTION)
        data = c.field(id(code), "PyCodeObject", "_co_monitoring")
        per = c.read(c.field(data, "_PyCoMonitoringData", "per_instruction_opcodes"), len(ops))
        got.append([per[i] for i in instructions])
    finally:
        m.set_local_events(tool, code, 0)
        m.register_callback(tool, ev.LINE, None)
        m.free_tool_id(tool)
    callables, active, lines, opcodes = got
    c.expect(f"PyInterpreterState.monitoring_callables[{tool}][LINE]; "
             "_PyCoMonitoringData.active_monitors.tools[LINE], lines[].original_opcode, per_instruction_opcodes "
             "(PyCodeObject._co_monitoring) while a tool watches a code object",
             [id(callback), 1 << tool, [ops[i] for i in starts], [ops[i] for i in instructions]],
             [callables, active, lines, opcodes])


def _read(c, interp: int, code, tool: int, line: int, starts) -> list:
    row = c.view.row("PyInterpreterState", "monitoring_callables")
    if row is None:
        raise LookupError("no PyInterpreterState.monitoring_callables")
    events = int(row[1][2].rsplit("[", 1)[1].rstrip("]"))       # PyObject *[tools][events]
    callables = c.ptr(interp + row[1][0], (tool * events + line) * c.psize)
    data = c.field(id(code), "PyCodeObject", "_co_monitoring")
    active = c.int(data + c.need("_PyCoMonitoringData", "active_monitors.tools") + line, 1)
    lines = c.field(data, "_PyCoMonitoringData", "lines")
    step, at = c.size("_PyCoLineInstrumentationData"), c.need("_PyCoLineInstrumentationData", "original_opcode")
    originals = [c.int(lines + i * step + at, 1) for i in starts]
    return [callables, active, originals]
