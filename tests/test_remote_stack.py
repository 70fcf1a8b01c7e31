"""`offsets stack` and `offsets identify` on running pyenv CPythons.

Each target parks its threads (deep recursion, a generator, coroutines, a method, a lambda) and
records its own stacks with `sys._current_frames()` and `traceback.extract_stack`; `offsets stack
--pid` must say exactly the same (function, file, line, innermost first) for every thread. Truths:
that record; for identify, what the interpreter says of itself (`sys.version`, sysconfig) and
binutils' readelf for the build-id. sid's 3.14/3.15 and python.org's 3.13.15 (free-threaded too) are
in tests/prove/test_remote.py.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import missing_input, missing_tool, pyenv_python
from parked_target import Parked, stacks_of
from offsets.cli import main

#: 3.11+ frames read the build's FRAME_OWNED_BY_* constants from its table.
MINORS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    """One parked target per pyenv minor, started together, killed at the end."""
    tmp = tmp_path_factory.mktemp("parked")
    started = {}
    try:
        for minor in MINORS:
            exe = pyenv_python(minor)
            if exe is None:
                missing_input(f"pyenv has no CPython {minor}")
            started[minor] = Parked(exe, tmp)
        yield started
    finally:
        for t in started.values():
            t.close()


def run_json(capsys, *args) -> dict:
    assert main(list(args)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("minor", MINORS)
def test_stack_is_what_the_process_recorded_of_itself(targets, minor, capsys):
    t = targets[minor]
    doc = run_json(capsys, "stack", "--pid", str(t.pid), "--json")
    assert doc["pid"] == t.pid and doc["build"]["version"].startswith(minor + ".")
    got = stacks_of(doc)
    assert set(got) == set(t.record)
    for tid, want in t.record.items():
        assert got[tid] == want, f"thread {tid}"
    assert max(len(v) for v in got.values()) > 300          # the deep recursion, whole


@pytest.mark.parametrize("minor", MINORS)
def test_identify_names_the_build_as_the_interpreter_and_readelf_do(targets, minor, capsys):
    t = targets[minor]
    exe = pyenv_python(minor)
    doc = run_json(capsys, "identify", "--pid", str(t.pid), "--json")
    code = ("import json, sys, sysconfig; print(json.dumps([sys.version.split()[0], sys.hexversion, "
            "sysconfig.get_config_var('LIBDIR'), sysconfig.get_config_var('INSTSONAME')]))")
    truth = json.loads(subprocess.run([str(exe), "-c", code], capture_output=True, text=True, check=True).stdout)
    version, hexversion, libdir, soname = truth
    assert (doc["version"], int(doc["hexversion"], 16)) == (version, hexversion)
    assert doc["binary"] == os.path.join(libdir, soname)      # --enable-shared: the interpreter is libpython
    assert (doc["free_threaded"], doc["debug"], doc["target"], doc["pointer_size"]) == \
        (False, False, "x86_64-linux-gnu", 8)
    assert doc["vendor"] == "upstream"
    if shutil.which("readelf"):
        note = subprocess.run(["readelf", "-n", doc["binary"]], capture_output=True, text=True, check=True).stdout
        assert doc["build_id"] == re.search(r"Build ID: ([0-9a-f]+)", note).group(1)
    assert doc["table"] == f"cpython-{version}-x86_64-linux-gnu" and doc["earned"] == "exact"
    # the shipped table records this libpython's build-id (make tables verified it against it)
    assert doc["earned_by"] == "build-id"


def test_the_library_answers_for_the_process(targets):
    from offsets import remote

    t = targets["3.10"]
    with remote.attach(t.pid) as p:
        assert p.choice.kind == "exact"
        # gcc's own offsetof over 3.10's headers is the committed table's (verified); here: the
        # process's thread states point at its interpreter through that offset
        interp = p.read(p.symbol("_PyRuntime") + p.get("_PyRuntimeState.interpreters.head"), 8)
        head = int.from_bytes(interp, "little")
        first = int.from_bytes(p.read(head + p.get("PyInterpreterState.tstate_head"), 8), "little")
        assert int.from_bytes(p.read(first + p.get("PyThreadState.interp"), 8), "little") == head
        assert p.sizeof("PyThreadState") > 100 and p.field("PyASCIIObject.state.kind").bit_width == 3
        with pytest.raises(KeyError):
            p.get("PyThreadState.no_such_field")


def test_a_proven_table_answers_only_what_the_check_in_memory_read(targets):
    """Without the exact table (only 3.10.13's nearest neighbours of another patch level offered as
    candidates), the table of the same minor passes the memory check and answers what it read."""
    from offsets.remote import choose, identify, proof
    from offsets.remote.memory import Memory
    from offsets.runtime.tables import shipped_index

    t = targets["3.10"]
    ident = identify.of_process(t.pid)
    ident.build_id, ident.inputs, ident.hexversion = None, None, ident.hexversion + 0x100   # another patch level
    ident.version = identify.version_of_hex(ident.hexversion)
    with Memory(t.pid) as mem:
        c = choose.choose(ident, lambda table: proof.check(table, mem, ident),
                          candidates=[e for e in shipped_index()["tables"] if e["name"].startswith("cpython-3.10.")])
    assert c.kind == "proven" and c.proof.ok and not c.proof.failed
    key = c.table.resolve_struct("PyThreadState")
    assert c.table.earned(key, "interp") == "proven"
    assert c.table.earned(key, "recursion_depth") is None      # the check never read it


@pytest.mark.parametrize("minor", ["3.9", "3.11", "3.12"])
def test_the_allocators_in_memory_are_the_binary_s_functions_up_to_3_11(targets, minor):
    """The check in another process compares the allocators its binary's variables hold
    (`_PyMem_Raw`, `_PyObject_Arena`, static up to 3.11) with the binary's own functions, as the
    runtime compares the copies it is given (tests/test_live_allocators.py): the exact table's
    fields are proven; from 3.12 no such variable exists, and nothing of them is claimed."""
    from offsets.remote import identify, proof
    from offsets.remote.memory import Memory
    from offsets.runtime.tables import load_shipped, shipped_index

    t = targets[minor]
    ident = identify.of_process(t.pid)
    entry = next(e for e in shipped_index()["tables"] if e["hexversion"] == ident.hexversion and e["triple"] == ident.triple
                 and e.get("vendor") in (None, "upstream") and not any(e["config"].values()))
    with Memory(t.pid) as mem:
        result = proof.check(load_shipped(entry), mem, ident)
    assert result.ok, result.failed
    got = sorted(f"{k}.{p}" for k, p in result.proven if "Allocator" in k)
    allocators = [s for s in result.skipped if "Allocator" in s]
    if minor == "3.12":
        assert got == [] and len(allocators) == 2 and all("no variable" in s for s in allocators)
    else:
        assert allocators == []
        assert got == ["PyMemAllocatorEx.calloc", "PyMemAllocatorEx.free", "PyMemAllocatorEx.malloc",
                       "PyMemAllocatorEx.realloc", "PyObjectArenaAllocator.alloc", "PyObjectArenaAllocator.free"]


def test_a_table_that_does_not_describe_the_process_fails_the_check(targets):
    """3.9's table against the 3.10 process: the check in its memory finds the differences."""
    from offsets.remote import identify, proof
    from offsets.remote.memory import Memory
    from offsets.runtime.tables import load_shipped, shipped_index

    t = targets["3.10"]
    ident = identify.of_process(t.pid)
    entry = next(e for e in shipped_index()["tables"] if e["name"] == "cpython-3.9.18-x86_64-linux-gnu")
    with Memory(t.pid) as mem:
        result = proof.check(load_shipped(entry), mem, ident)
    assert not result.ok and result.failed


def test_errors_are_one_line(targets, capsys, tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        assert main(["stack", "--pid", str(dead.pid)]) == 2
        assert main(["identify", "--pid", str(sleeper.pid)]) == 2
        assert main(["identify", "--binary", str(tmp_path)]) == 2
        assert main(["stack", "--pid", "0"]) == 2
    finally:
        sleeper.kill()
        sleeper.wait()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(line.startswith("offsets: error: ") for line in err)
    assert f"no process {dead.pid}" in err[0]
    assert "is not a Python process" in err[1] and "Py_Initialize" in err[1]
    assert "is not a process id" in err[3]


def test_not_permitted_says_why(targets):
    """Another user may not read a root process (the kernel's rule, whatever the ptrace scope)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        missing_tool("setpriv", "Debian's util-linux")
    if os.geteuid() != 0:
        missing_input("running as another user needs root")
    t = targets["3.10"]
    import tempfile

    scratch = tempfile.gettempdir()      # a folder user nobody may write to
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "HOME": scratch,
           "OFFSETS_CACHE": os.path.join(scratch, "offsets-nobody-cache")}
    proc = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                           "offsets", "stack", "--pid", str(t.pid)], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "not permitted" in proc.stderr and "belongs to user 0" in proc.stderr


def test_a_process_that_exits_while_read_is_said_so(tmp_path):
    from offsets import remote
    from offsets.errors import ProcessExited

    t = Parked(pyenv_python("3.10"), tmp_path, depth=10)
    try:
        p = remote.attach(t.pid)
    finally:
        t.close()
    with pytest.raises(ProcessExited, match=f"process {t.pid} exited while it was being read"):
        p.threads()
    p.close()


def test_a_python_no_table_knows_is_told_how_to_make_its_table(targets, monkeypatch, capsys):
    from offsets.remote import choose

    monkeypatch.setattr(choose, "entries", lambda ident: [])
    t = targets["3.9"]
    assert main(["identify", "--pid", str(t.pid), "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["earned"] == "refused"
    assert f"offsets scan --prefix /proc/{t.pid}/root/" in err and "--install" in err
    assert main(["stack", "--pid", str(t.pid)]) == 2
    assert "no table fits CPython 3.9" in capsys.readouterr().err


def test_proc_pid_mem_reads_the_same_where_process_vm_readv_is_missing(targets, monkeypatch):
    """Some sandboxes filter process_vm_readv: /proc/PID/mem is read instead, with the same result."""
    from offsets import remote
    from offsets.remote import memory

    t = targets["3.9"]
    monkeypatch.setattr(memory, "_process_vm_readv", lambda: None)
    with remote.attach(t.pid) as p:
        assert p.memory._vm is None
        got = {th.thread_id: [(f.function, f.file, f.line) for f in th.frames] for th in p.threads()}
        assert p.memory._mem_fd is not None
    assert got == t.record
