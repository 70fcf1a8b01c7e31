"""The hostile-input suite's second half (beside tests/test_hardening.py): what the command and the
runtime do when the input, the machine or another process works against them (issue 45).

A typo in a name starts no scan; a scan's workers die with the process that started them; a process
whose libpython was deleted is read or refused in one line; an output never overwrites an input;
a child that prints without end costs a bounded read and one line; and an autoscan killed at any
point leaves nothing behind that a later process trips over. Every refusal is one line and exit
status 2, never a traceback.

Each test that runs the command runs it on the oldest and newest interpreter the command supports
(pyenv's 3.9 and 3.13, each in a cached venv with the scan extra, as a user installs it), and all
but the slowest on the venv's too (`PYTHONS`); each that runs the runtime alone, on its oldest
(3.8) and newest.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import missing_input, pyenv_python
from test_python_versions import MINIMUM, NEWEST, command_python

REPO = Path(__file__).resolve().parent.parent
#: The oldest interpreter the runtime supports (pyproject.toml's requires-python; the command needs 3.9).
OLDEST_RUNTIME = "3.8"
#: The command's interpreters: the venv's, and pyenv's oldest and newest the command supports.
PYTHONS = ["venv", MINIMUM, NEWEST]
SPAWNS = ("subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.system")


@pytest.fixture(params=PYTHONS)
def python(request) -> Path:
    """The command's interpreter: the venv's, or pyenv's `MINIMUM` or `NEWEST` in a venv with the scan extra."""
    return command_python(request.param)


def cli(*args, python=sys.executable, env=None, timeout=60, **kw) -> subprocess.CompletedProcess:
    """`python -m offsets ARGS` of this checkout, its output as text."""
    env = dict(os.environ if env is None else env, PYTHONPATH=str(REPO))
    return subprocess.run([str(python), "-m", "offsets", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=REPO, **kw)


def one_line_refusal(proc, *words) -> str:
    """The command exited 2 with one line on stderr that holds `words`, and no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    for w in words:
        assert w in proc.stderr, proc.stderr
    return proc.stderr


# ---------------------------------------------------------------- 1. an unknown name starts no scan
TYPO = """
import json, os, sys
sys.path.insert(0, sys.argv[1])             # this checkout
sys.path.extend(sys.argv[2:])               # the scanner's packages, if not the interpreter's own
spawned = []
sys.addaudithook(lambda event, args: spawned.append(event) if event in %r else None)
import offsets
out = {"kind": offsets.build().kind, "table": offsets.build().table}
try:
    offsets.get("NoSuchStruct.x")
except Exception as e:
    out["error"] = type(e).__name__
out["spawned"] = spawned
print(json.dumps(out))
""" % (SPAWNS,)

#: `python -m offsets ARGS` that writes to the file sys.argv[1] the processes it started
COMMAND_SPAWNS = """
import runpy, sys
spawned = []
sys.addaudithook(lambda event, args: spawned.append(event) if event in %r else None)
record = sys.argv.pop(1)
sys.argv[0] = "offsets"
try:
    runpy.run_module("offsets", run_name="__main__")
finally:
    with open(record, "w") as f:
        f.write(" ".join(spawned))
""" % (SPAWNS,)


def _scanner_site() -> str:
    """Where the test venv's third-party packages are (clang, yaml, jsonschema: the scan extra)."""
    import yaml

    return str(Path(yaml.__file__).resolve().parent.parent)


@pytest.mark.parametrize("minor", [OLDEST_RUNTIME, *PYTHONS])
def test_an_unknown_name_in_an_exact_table_starts_no_scan(minor, tmp_path):
    """The runtime on its oldest (pyenv's 3.8, the venv's scanner packages on its path) and on the
    command's interpreters (their own scanner packages), and the command on the latter."""
    if minor == OLDEST_RUNTIME:
        python, site = pyenv_python(minor), [_scanner_site()]
        if python is None:
            missing_input(f"pyenv has no CPython {minor} (`pyenv install {minor}`)")
    else:
        python, site = command_python(minor), []
    (tmp_path / "typo.py").write_text(TYPO)
    tables, cache = tmp_path / "tables", tmp_path / "cache"
    env = dict(os.environ, OFFSETS_TABLES=str(tables), OFFSETS_CACHE=str(cache))
    for k in ("OFFSETS_AUTOSCAN", "OFFSETS_STRICT", "OFFSETS_AUTOSCAN_CHILD"):
        env.pop(k, None)
    proc = subprocess.run([str(python), "-I", str(tmp_path / "typo.py"), str(REPO), *site],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    # the shipped table of these pyenv builds records their build-id (generated/index.yaml)
    assert out["kind"] == "exact", out
    assert out["error"] == "UnknownNameError" and out["spawned"] == [], out
    assert not tables.exists() or os.listdir(tables) == [], os.listdir(tables)
    if minor != OLDEST_RUNTIME:          # the command too: refused, no process started, nothing written
        (tmp_path / "command.py").write_text(COMMAND_SPAWNS)
        got = subprocess.run([str(python), str(tmp_path / "command.py"), str(tmp_path / "spawned"), "get",
                              "NoSuchStruct.x"], capture_output=True, text=True, env=dict(env, PYTHONPATH=str(REPO)),
                             timeout=120, cwd=tmp_path)
        one_line_refusal(got, "unknown name 'NoSuchStruct.x'")
        assert (tmp_path / "spawned").read_text() == "", "the command started a process"
        assert not tables.exists() or os.listdir(tables) == [], os.listdir(tables)


# ---------------------------------------------------------------- 4. an output is never an input
SHIPPED = "generated/cpython-3.11.7-x86_64-linux-gnu.yaml"      # any committed table: an input to copy


def _digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("how", ["same", "symlink", "hard link"])
@pytest.mark.parametrize("command", [["export", "--lang", "json"], ["export", "--index"],
                                     ["report", "-s", "PyObject"]])
def test_an_output_that_is_an_input_is_refused(command, how, python, tmp_path):
    table = tmp_path / "t.yaml"
    table.write_bytes((REPO / SHIPPED).read_bytes())
    out = {"same": table, "symlink": tmp_path / "link.yaml", "hard link": tmp_path / "hard.yaml"}[how]
    if how == "symlink":
        out.symlink_to("t.yaml")
    elif how == "hard link":
        os.link(table, out)
    before = _digest(table)
    got = cli(*command, "-o", out, table, python=python)
    one_line_refusal(got, f"refusing to write {out}", "input")
    assert _digest(table) == before and table.is_file()
    assert sorted(os.listdir(tmp_path)) == sorted({"t.yaml", out.name}), os.listdir(tmp_path)   # no temporary file


def test_an_output_over_a_shipped_table_or_a_scan_input_is_refused(python, tmp_path):
    from offsets.layout.compact import COMPACT_DIR

    shipped = COMPACT_DIR / "cpython-3.11.7-x86_64-linux-gnu.jsonl"
    saved = shipped.read_bytes()
    try:
        one_line_refusal(cli("export", "--lang", "json", "-o", shipped, "cpython-3.11.7-x86_64-linux-gnu",
                             python=python), "input")
    finally:
        if shipped.read_bytes() != saved:        # a failure here must not leave the checkout's table replaced
            shipped.write_bytes(saved)
            pytest.fail(f"{shipped} was replaced by the export")
    # a scan refuses to write over the pyconfig.h it is told to read, before it scans
    prefix, include = subprocess.run([str(python), "-c", "import sys, sysconfig; print(sys.base_prefix); "
                                      "print(sysconfig.get_config_var('INCLUDEPY'))"], capture_output=True, text=True,
                                     check=True).stdout.splitlines()
    pyconfig = tmp_path / "pyconfig.h"
    pyconfig.write_bytes(Path(include, "pyconfig.h").read_bytes())
    before = _digest(pyconfig)
    got = cli("scan", "--prefix", prefix, "--pyconfig", pyconfig, "-o", pyconfig, "-q", python=python)
    one_line_refusal(got, "input")
    assert _digest(pyconfig) == before


@pytest.mark.parametrize("command", [["export", "--lang", "c", "cpython-3.11.7-x86_64-linux-gnu"],
                                     ["export", "--index"], ["report", "-s", "PyObject", SHIPPED]])
def test_an_output_in_a_missing_folder_is_refused_and_nothing_made(command, python, tmp_path):
    out = tmp_path / "no" / "such" / "x.h"
    one_line_refusal(cli(*command, "-o", out, python=python), "does not exist")
    assert not (tmp_path / "no").exists()


# ---------------------------------------------------------------- 6. small ones
HUGE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from offsets import runtime
from offsets.errors import UnknownNameError
for lookup in (runtime.get, runtime.sizeof, runtime.constant):
    try:
        lookup("A" * 100_000)
    except UnknownNameError as e:
        print(json.dumps(str(e)))
"""


@pytest.mark.parametrize("minor", [OLDEST_RUNTIME, "venv", NEWEST])
def test_a_huge_name_is_reported_by_its_real_length(minor, tmp_path):
    """On the runtime's oldest interpreter and newest, cold (before: "(143 characters)")."""
    python = sys.executable if minor == "venv" else pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv has no CPython {minor} (`pyenv install {minor}`)")
    env = dict(os.environ, OFFSETS_TABLES=str(tmp_path / "tables"), OFFSETS_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([str(python), "-I", "-c", HUGE, str(REPO)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    messages = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(messages) == 3, proc.stdout[-3000:]
    for m in messages:
        assert "(100000 characters)" in m and len(m) < 400, m[-300:]


def test_export_of_unknown_fields_names_them(python):
    got = cli("export", "--lang", "json", "--fields", "TYPO,PyObject.ob_type,PyObject.nope",
              "cpython-3.11.7-x86_64-linux-gnu", python=python)
    err = one_line_refusal(got, "TYPO", "PyObject.nope")
    assert "PyObject.ob_type" not in err and got.stdout == ""
    # a name some table has, absent from another, is still ABSENT there (3.8 has no _PyInterpreterFrame)
    ok = cli("export", "--lang", "json", "--fields", "_PyInterpreterFrame.previous",
             "cpython-3.11.7-x86_64-linux-gnu", "cpython-3.8.18-x86_64-linux-gnu", python=python)
    assert ok.returncode == 0, ok.stderr


# ---------------------------------------------------------------- 5. a child's output is read up to a cap
AS_LIMIT = """
import resource, runpy, sys
limit = int(sys.argv.pop(1))
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.argv[0] = "offsets"
runpy.run_module("offsets", run_name="__main__")
"""


def test_an_interpreter_that_prints_forever_is_stopped_in_one_line(python, tmp_path):
    fake = tmp_path / "python3.11"                 # what `offsets scan --python` runs to learn the build
    fake.write_text("#!/bin/sh\nexec yes A\n")
    fake.chmod(0o755)
    (tmp_path / "limited.py").write_text(AS_LIMIT)
    # this process's address space now, plus 200 MB: before, the output grew to the limit and ended
    # in a MemoryError traceback
    with open("/proc/self/status") as f:
        size = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:"))
    start = time.monotonic()
    got = subprocess.run([str(python), str(tmp_path / "limited.py"), str(size + 200 * 1024 * 1024), "scan",
                          "--python", str(fake), "-o", str(tmp_path / "out.yaml")], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=tmp_path, timeout=60)
    one_line_refusal(got, str(fake), "printed more than")
    assert time.monotonic() - start < 15
    assert not (tmp_path / "out.yaml").exists()


CHILDREN = """
import json, subprocess, sys
sys.path.insert(0, sys.argv[1])
from offsets import children
from offsets.errors import BuildError
out = []
for stream in ("", ">&2"):
    try:
        children.run(["sh", "-c", "exec yes A " + stream], "yes", BuildError, limit=1024 * 1024)
    except BuildError as e:
        out.append(str(e))
ok = children.run(["sh", "-c", "echo out; echo err >&2; exit 3"], "sh")
out.append([ok.returncode, ok.stdout, ok.stderr])
try:
    children.run(["sleep", "30"], "sleep", timeout=0.5)
except subprocess.TimeoutExpired:
    out.append("timeout")
print(json.dumps(out))
"""


def test_children_run_bounds_stdout_and_stderr(python):
    proc = subprocess.run([str(python), "-c", CHILDREN, str(REPO)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    *bounded, ok, timeout = json.loads(proc.stdout)
    assert len(bounded) == 2 and all("printed more than 1 MB" in e for e in bounded), bounded
    assert ok == [3, "out\n", "err\n"] and timeout == "timeout"


# ---------------------------------------------------------------- 2. a scan's workers die with it
POOL = """
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from offsets.scan import workers
pool = workers.Workers(3)
for i in range(3):
    pool.submit(i, "quick", os.readlink, "/proc/self")
assert not any(isinstance(r, Exception) for _, r in pool.results())     # three workers, now idle: blocked in recv()
pool.submit("slow", "slow", time.sleep, 600)        # one of them busy
pool.dispatch()
print(json.dumps(sorted(w.process.pid for w in pool._workers)), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """`pid` is a process that has not ended (a zombie no one reaped yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone(pids, within: float) -> list:
    """The processes of `pids` still alive after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _children(pid: int) -> list:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return found


def test_a_scans_workers_die_when_it_is_killed(python, tmp_path):
    (tmp_path / "pool.py").write_text(POOL)
    parent = subprocess.Popen([str(python), str(tmp_path / "pool.py"), str(REPO)], stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(parent.stdout.readline())
        assert len(pids) == 3 and all(_alive(p) for p in pids)
    finally:
        parent.kill()
        parent.wait()
    left = _gone(pids, 5)
    for p in left:                       # not left for the next test
        os.kill(p, 9)
    assert left == [], f"workers {left} outlived the scan that started them"


def test_a_real_scans_workers_die_when_it_is_killed(python, tmp_path):
    """`offsets scan` of the fixture build, killed while its workers parse."""
    env = dict(os.environ, PYTHONPATH=str(REPO), OFFSETS_CACHE=str(tmp_path / "cache"))
    from offsets.scan.clang_headers import builtin_include

    env["OFFSETS_CLANG_INCLUDE"] = str(builtin_include())
    scan = subprocess.Popen([str(python), "-m", "offsets", "scan", "--prefix", REPO / "tests/fixtures/fakepy",
                             "--target", "x86_64-linux-gnu", "--no-cache", "-j", "2", "-q", "-o", tmp_path / "t.yaml"],
                            env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids: list = []
    try:
        deadline = time.monotonic() + 30
        while not pids and scan.poll() is None and time.monotonic() < deadline:
            pids = _children(scan.pid)
            time.sleep(0.005)
    finally:
        scan.kill()
        scan.wait()
    assert pids, "the scan ended before its workers could be seen"
    left = _gone(pids, 5)
    for p in left:
        os.kill(p, 9)
    assert left == [], f"workers {left} outlived the scan that started them"


# ---------------------------------------------------------------- an autoscan killed at any point
LOOKUP = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from offsets import runtime
from offsets.runtime import core, selection
start = time.monotonic()
made = selection.own_table_now(runtime.running_identity(), core.prove_here)    # the autoscan a first lookup makes (autoscan.make)
print(json.dumps({"made": made if isinstance(made, str) else "a table", "seconds": time.monotonic() - start}))
"""
ANSWERS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import offsets
names = ["PyObject.ob_type", "PyListObject.ob_item", "PyTupleObject.ob_item", "PyThreadState.interp",
         "PyCodeObject.co_code_adaptive", "_PyInterpreterFrame.f_code", "_PyInterpreterFrame.f_executable",
         "PyFrameObject.f_back", "PyCodeObject.co_firstlineno"]
out = {}
for n in names:                 # an offset, or the error refusing the name (no version has them all)
    try:
        out[n] = offsets.get(n)
    except Exception as e:
        out[n] = type(e).__name__
out.update({s: offsets.sizeof(s) for s in ("PyObject", "PyTypeObject", "PyThreadState", "PyInterpreterState")})
out["kind"] = offsets.build().kind
print(json.dumps(out))
"""


def _session(sid: int) -> list:
    """The live processes of session `sid` (the autoscan child starts one: its scan's workers are in it)."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                found.append(int(d))
    return found


@pytest.mark.parametrize("minor", [MINIMUM, NEWEST])
def test_an_autoscan_killed_at_random_points_leaves_nothing_behind(minor, tmp_path):
    """The real autoscan of the interpreter's build (its own headers, about a second cold: autoscan.make,
    its child `pythonX.Y -I -S`, the scan's two workers, the install), its child or the process that
    asked killed at random points; then a later process's answers are a cold process's. On the
    oldest and newest interpreter the command supports only: the venv's is between them, and each
    run costs about four seconds."""
    import random

    from offsets.scan.clang_headers import builtin_include

    python = command_python(minor)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    (tmp_path / "lookup.py").write_text(LOOKUP)
    (tmp_path / "answers.py").write_text(ANSWERS)
    tables = tmp_path / "tables"
    env = dict(os.environ, OFFSETS_TABLES=str(tables), OFFSETS_CACHE=str(tmp_path / "cache"),
               OFFSETS_CLANG_INCLUDE=str(builtin_include()), OFFSETS_AUTOSCAN_TIMEOUT="30")
    for k in ("OFFSETS_AUTOSCAN", "OFFSETS_STRICT", "OFFSETS_AUTOSCAN_CHILD"):
        env.pop(k, None)
    for attempt in range(4):
        victim, delay = rng.choice(["child", "lookup"]), rng.uniform(0.0, 1.0)
        lookup = subprocess.Popen([str(python), str(tmp_path / "lookup.py"), str(REPO)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        child = None
        try:
            deadline = time.monotonic() + 20
            while child is None and lookup.poll() is None and time.monotonic() < deadline:
                child = next(iter(_children(lookup.pid)), None)
                time.sleep(0.002)
            if child is None:
                out, err = lookup.communicate(timeout=40)
                # only when an earlier attempt was killed after it installed the table (a warm cache scans fast)
                assert json.loads(out)["made"] == "a table" and attempt, f"seed {seed}: no autoscan child: {out} {err}"
                break
            time.sleep(delay)
            try:
                os.kill(child if victim == "child" else lookup.pid, 9)
            except ProcessLookupError:       # it had ended already
                pass
            out, err = lookup.communicate(timeout=40)
        finally:
            lookup.kill()
            lookup.wait()
        assert "Traceback" not in err, (seed, err)
        left = _gone(_session(child), 5)
        for p in left:
            os.kill(p, 9)
        assert left == [], f"seed {seed}, {victim} killed after {delay:.2f} s: {left} left behind"
    # a later process neither fails nor waits out the lock: it makes the table, or says why not, at once
    start = time.monotonic()
    later = subprocess.run([str(python), str(tmp_path / "lookup.py"), str(REPO)], env=env, capture_output=True,
                           text=True, timeout=60)
    assert later.returncode == 0 and "Traceback" not in later.stderr, (seed, later.stderr[-2000:])
    assert time.monotonic() - start < 20, (seed, later.stdout)
    assert json.loads(later.stdout)["made"] == "a table", (seed, later.stdout)      # the autoscan works here
    # and answers as a cold process does (with an own table installed, through it)
    cold = dict(env, OFFSETS_TABLES=str(tmp_path / "cold"), OFFSETS_CACHE=str(tmp_path / "cold-cache"),
                OFFSETS_AUTOSCAN="0")
    warm = subprocess.run([str(python), str(tmp_path / "answers.py"), str(REPO)], env=env, capture_output=True,
                          text=True, timeout=60)
    fresh = subprocess.run([str(python), str(tmp_path / "answers.py"), str(REPO)], env=cold, capture_output=True,
                           text=True, timeout=60)
    assert warm.returncode == 0 and fresh.returncode == 0, (seed, warm.stderr[-2000:], fresh.stderr[-2000:])
    assert json.loads(warm.stdout) == json.loads(fresh.stdout), seed
    assert all(isinstance(json.loads(fresh.stdout)[n], int) for n in ("PyObject.ob_type", "PyListObject.ob_item",
                                                                       "PyThreadState.interp")), fresh.stdout
    assert not [n for n in os.listdir(tables) if n.endswith(".tmp")], (seed, os.listdir(tables))


# ---------------------------------------------------------------- 3. a process whose libpython was deleted
PARKED = "import sys, time\ndef parked():\n    print('ready', flush=True)\n    time.sleep(120)\nparked()\n"


@pytest.mark.parametrize("minor", PYTHONS)
def test_a_process_whose_libpython_was_deleted_is_read(minor, tmp_path):
    """What a package upgrade under a running service leaves: the mapped libpython is gone from disk
    (/proc/PID/maps says "(deleted)"); identify and stack read it through /proc/PID/map_files. The
    command runs on `minor` and reads a pyenv build of the same minor (the venv's: 3.11)."""
    from foreign_copy import BUILD_ID_NOTE, foreign_copy

    command = command_python(minor)
    target = "3.11" if minor == "venv" else minor
    base = pyenv_python(target)
    if base is None:
        missing_input(f"pyenv has no CPython {target} (`pyenv install {target}`)")
    python, env = foreign_copy(base, tmp_path / "prefix")
    lib = tmp_path / "prefix" / "lib" / f"libpython{target}.so.1.0"
    data = lib.read_bytes()                  # its build-id, read from the ELF note's bytes before it goes
    at = data.index(BUILD_ID_NOTE) + len(BUILD_ID_NOTE)
    build_id = data[at:at + 20].hex()
    (tmp_path / "parked.py").write_text(PARKED)
    proc = subprocess.Popen([str(python), "-I", str(tmp_path / "parked.py")], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, **env))
    try:
        assert proc.stdout.readline() == "ready\n"
        lib.unlink()
        assert f"libpython{target}.so.1.0 (deleted)" in Path(f"/proc/{proc.pid}/maps").read_text()
        ident = cli("identify", "--pid", proc.pid, "--json", python=command)
        assert ident.returncode == 0 and "Traceback" not in ident.stderr, ident.stderr[-3000:]
        got = json.loads(ident.stdout)
        assert (got["version"], got["build_id"], got["binary"]) == (base.parent.parent.name, build_id, str(lib)), got
        stack = cli("stack", "--pid", proc.pid, "--json", python=command)
        assert stack.returncode == 0 and "Traceback" not in stack.stderr, stack.stderr[-3000:]
        frames = [(f["function"], f["file"], f["line"]) for t in json.loads(stack.stdout)["threads"] for f in t["frames"]]
        # the parked script's own frames (the file and lines written above), innermost first
        assert frames == [("parked", str(tmp_path / "parked.py"), 4), ("<module>", str(tmp_path / "parked.py"), 5)], frames
    finally:
        proc.kill()
        proc.wait()
