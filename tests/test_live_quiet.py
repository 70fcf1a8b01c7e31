"""The live check changes nothing of the interpreter that another thread or a JIT shares. From 3.12,
`sys.settrace`/`sys.setprofile` set events of the whole interpreter (every code object is
instrumented again, 3.13 invalidates every executor, a free-threaded build stops the world) and a
`sys.monitoring` tool id is the interpreter's (another thread's `use_tool_id` of it would fail
meanwhile): so the check, run in pyenv's 3.12 and 3.13 against their exact tables, calls none of
them (each replaced by a recorder that calls it through), and the interpreter's own instrumentation
version and global monitors, read through the exact table (which DWARF verified), are as they were:
a trace or profile function set through the C API would have moved them.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import missing_input, pyenv_python

ROOT = Path(__file__).resolve().parent.parent

QUIET_SCRIPT = r"""
import ctypes, json, sys, threading
calls = []

def record(owner, name):
    real = getattr(owner, name)

    def recorder(*args, **kwargs):
        calls.append(f"{owner.__name__}.{name}")
        return real(*args, **kwargs)
    setattr(owner, name, recorder)

for name in ("settrace", "setprofile"):
    record(sys, name)
for name in ("settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads"):
    if hasattr(threading, name):
        record(threading, name)
for name in ("use_tool_id", "free_tool_id", "set_events", "set_local_events", "register_callback", "restart_events"):
    record(sys.monitoring, name)

from offsets import runtime
e = next(e for e in runtime.shipped_index()["tables"] if e["hexversion"] == sys.hexversion and
         e["triple"] == runtime.identity.running_target()["triple"] and
         e.get("vendor") in (None, "upstream") and not any(e["config"].values()))
t = runtime.load_shipped(e)
rows = t.fields(t.resolve_struct("PyInterpreterState"))
interp = ctypes.PYFUNCTYPE(ctypes.c_void_p)(("PyInterpreterState_Get", ctypes.pythonapi))()
version = rows.get("ceval.instrumentation_version") or rows["monitoring_version"]
tools = rows["monitors.tools"]

def state():
    return [ctypes.c_uint64.from_address(interp + version[0]).value,
            list(ctypes.string_at(interp + tools[0], tools[1]))]

before = state()
res = runtime.live_check(t)
print(json.dumps({"ok": res.ok, "summary": res.summary(), "calls": calls, "before": before, "after": state()}))
"""


@pytest.mark.parametrize("minor", ["3.12", "3.13"])
def test_the_live_check_sets_no_trace_profile_or_monitoring_of_the_interpreter(minor):
    python = pyenv_python(minor)
    if python is None:
        missing_input(f"no pyenv CPython {minor} here (`pyenv install {minor}`)")
    out = subprocess.run([str(python), "-c", QUIET_SCRIPT], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["ok"], got["summary"]
    assert got["calls"] == []
    assert got["after"] == got["before"]
