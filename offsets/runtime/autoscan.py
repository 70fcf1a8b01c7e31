"""Making this build's own table on first use: once per build on the machine, in a child process
that is a real interpreter of this build and can never be the program again, under a time limit
(docs/identity.md, "Made on first use").

- **When**: no table is exact for this build, `OFFSETS_AUTOSCAN` is not off, this process is not an
  autoscan child itself (`OFFSETS_AUTOSCAN_CHILD`, which every child inherits), the build's headers
  are installed (the scan reads them), the scanner is importable here (`cpython-offsets[scan]`), and the own
  tables' directory can be written. Otherwise `make` says why, and the runtime answers what is
  proven or refuses with the command to run.
- **Which interpreter**: the one this build installed, `python3.X` (with its ABI flags) in
  `sys.base_prefix/bin` (the prefix the interpreter found from its own location) or in sysconfig's
  `BINDIR`, an ELF file. Never `sys.executable`: a program that embeds CPython names itself there
  (and would start again), a venv names its launcher, pyenv its shell shim, and an embedder that
  names nothing gets the first `python3` on `PATH`, another build altogether. The child checks
  before it scans that it is this build (version, layout flags, target, ABI flags, include
  directory) and exits otherwise.
- **The child**: `PY -I -S -c CODE`: isolated (no PYTHON* variable: no PYTHONPATH, no
  PYTHON_PRESITE) and without `site` (no `.pth` file, no sitecustomize: nothing a JIT deployment
  adds to startup runs in it); this process's `sys.path` is given to it explicitly to import the
  scanner; `OFFSETS_AUTOSCAN_CHILD=1` in its environment, so nothing below it makes a table again.
  It dies with the process that started it (children.die_with_parent), its scan's workers with it.
  It is started with posix_spawn in a session of its own, its output goes to a file beside the
  tables, and it is waited for by its pid: no pipe, which a fork elsewhere in the program while the
  child starts would hold open (subprocess waits on one for the exec), so that the wait would end
  only when that forked worker does. It is waited for at most `OFFSETS_AUTOSCAN_TIMEOUT` seconds
  (default 60), then killed with its session.
- **Once per build**: the child runs under an exclusive lock (`cache_lock.file_lock`: flock, which a
  forked child gives up) on `.KEY.lock` in the tables directory, KEY being the name the table is
  installed under; a hundred processes starting together make one table, the others wait for it (as
  long as the same time limit) and then load it. A failed attempt is recorded in `.KEY.failed` and
  not repeated by any process for `RETRY_SECONDS`; its reason is part of every refusal meanwhile. A
  child killed from outside (`OUTSIDE_KILLS`) is not a failure of the build: not recorded.

A child rather than the scan in this process: the runtime imports nothing of the scanner
(tests/test_package_layout.py), libclang (about 100 MB mapped) and a crash or a hang of a parse stay
out of the program, and the scan's own worker processes never fork the program.
"""
from __future__ import annotations

import os
import sys
import time

from ..layout import identity
from ..layout.build_identity import BuildIdentity
from ..regular_file import open_regular
from .tables import own_table_file, tables_dir

#: how long a child may take, and a process wait for another's, by default (OFFSETS_AUTOSCAN_TIMEOUT)
DEFAULT_TIMEOUT = 60.0
#: how long a failed attempt keeps every process of the machine from trying again
RETRY_SECONDS = 600
SCANNER_MODULES = ("clang", "yaml", "jsonschema")
#: signals that end a child from outside (a user, a supervisor): not a failure of the build, so not recorded
OUTSIDE_KILLS = (1, 2, 9, 15)     # SIGHUP, SIGINT, SIGKILL, SIGTERM
#: what the child compares with its own identity before it scans
SAME_BUILD = ("version", "hexversion", "config", "triple", "pointer_size", "abiflags")

CHILD = """\
import json, os, sys
paths, expected, parent, args = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
sys.path[:0] = paths
from offsets.children import die_with_parent
die_with_parent(parent)
from offsets.layout import identity
me = identity.running(with_inputs=False)
got = dict({k: me[k] for k in expected if k != "include"}, include=os.path.realpath(me["include"]))
if got != expected:
    sys.stderr.write("offsets: %s is not the build whose table was asked for: it is %s, not %s\\n"
                     % (sys.executable, got, expected))
    sys.exit(3)
from offsets.cli import main
sys.exit(main(args))
"""


def timeout() -> float:
    """OFFSETS_AUTOSCAN_TIMEOUT in seconds (a positive number), else DEFAULT_TIMEOUT."""
    try:
        value = float(os.environ.get("OFFSETS_AUTOSCAN_TIMEOUT", ""))
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


def _off(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("0", "false", "no", "off")


def why_not(me: BuildIdentity) -> str:
    """Why this process may not make its build's table now ('' if it may)."""
    if _off("OFFSETS_AUTOSCAN"):
        return "OFFSETS_AUTOSCAN is off"
    if os.environ.get("OFFSETS_AUTOSCAN_CHILD"):
        return "this process was started to make a table (OFFSETS_AUTOSCAN_CHILD is set), and makes none itself"
    files = me.files
    if not (me.inputs or (files is not None and files.available)):
        return (f"its headers are not installed in {me.where['include']} (the python{me.minor}-dev package), so a "
                f"scan has nothing to read")
    import importlib.util

    missing = [m for m in SCANNER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        return f"the scanner is not importable here ({', '.join(missing)} missing: pip install 'cpython-offsets[scan]')"
    d = tables_dir()
    if d is None:
        return ("there is no cache directory (HOME is unset and the password database has no home for this user): "
                "set OFFSETS_TABLES or OFFSETS_CACHE to a writable directory")
    try:
        os.makedirs(d, exist_ok=True)
        probe = os.open(os.path.join(d, f".{_key(me)}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        os.close(probe)
    except OSError as e:
        return f"its tables directory {d} cannot be written ({e.strerror})"
    return ""


def interpreters(me: BuildIdentity) -> list:
    """Where this build installed its interpreter: `bin/python3.X` (ABI flags too, then without) under
    sys.base_prefix, then sysconfig's BINDIR; existing files only, in that order, no repeats."""
    import sysconfig

    names = [f"python{me.minor}{me.where.get('abiflags', '')}", f"python{me.minor}"]
    found = []
    for d in (os.path.join(sys.base_prefix, "bin"), sysconfig.get_config_var("BINDIR")):
        for n in names if d else ():
            p = os.path.join(d, n)
            if os.path.isfile(p) and p not in found:
                found.append(p)
    return found


def is_elf(path: str) -> bool:
    try:
        with open_regular(path) as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def interpreter(me: BuildIdentity):
    """(the build's own interpreter, '') or (None, why there is none)."""
    found = interpreters(me)
    for p in found:
        if is_elf(p):
            return p, ""
    where = ", ".join(found) or f"python{me.minor} in {os.path.join(sys.base_prefix, 'bin')} or sysconfig's BINDIR"
    return None, (f"no interpreter of this build was found to run the scan ({where}: "
                  f"{'not an executable ELF file' if found else 'missing'}); sys.executable "
                  f"({sys.executable}) is not run, since a program that embeds CPython names itself there")


def scan_command(me: BuildIdentity) -> str:
    """The command that makes this build's own table by hand (it never names sys.executable)."""
    found = interpreters(me)
    if found:
        return f"offsets scan --python {found[0]} --install"
    return f"offsets scan --prefix {sys.base_prefix} --install"


def _key(me: BuildIdentity) -> str:
    """The name this build's own table is installed under, without `.jsonl`."""
    return own_table_file(me.replace(inputs=me.whole()))[:-len(".jsonl")]     # its headers' digest names it


def _paths() -> list:
    """This process's import path, for the child (it has no site and ignores PYTHONPATH): the
    directory holding this package first."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [here] + [p for p in sys.path if p and p != here and os.path.isdir(p)]


def _recorded_failure(path: str) -> str:
    """The reason a recent attempt failed, if one failed less than RETRY_SECONDS ago ('' if none)."""
    import json     # here: a lookup that makes no table (the proven path's first) imports no json

    kept = identity._read_memo(path)        # a damaged record is none
    try:
        rec = json.loads(kept)
        age = time.time() - float(rec["time"])
        why = str(rec["why"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    if 0 <= age < RETRY_SECONDS:
        return f"{why} (an attempt {age:.0f} s ago; the next is allowed after {RETRY_SECONDS} s)"
    return ""


def _record_failure(path: str, why: str) -> None:
    import json

    identity._write_memo(path, json.dumps({"time": time.time(), "why": why}).encode())


def _tail(path: str, lines: int = 3) -> str:
    try:
        with open_regular(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4000))       # the end only: the child may have printed GBs
            text = f.read(4000).decode("utf-8", "replace")
    except OSError:
        return ""
    return " / ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def run_child(python: str, me: dict, tables: str, log: str, limit: float) -> str:
    """Run the scan in `python` (see the module's docstring); '' when it exited 0, else why not.

    Started with posix_spawn and waited for by its pid: no pipe to it (subprocess reads the exec
    error through one) that a fork elsewhere in the program could keep open, and a new session,
    so that at the time limit the scan's own processes are killed with it."""
    import json

    expected = {k: me.where[k] if k == "abiflags" else getattr(me, k) for k in SAME_BUILD}
    expected["include"] = os.path.realpath(me.where["include"])
    args = ["scan", "--python", python, "--install", "--tables", tables, "--no-dwarf", "-q"]
    env = dict(os.environ, OFFSETS_AUTOSCAN_CHILD="1", OFFSETS_TABLES=tables)
    cmd = [python, "-I", "-S", "-c", CHILD, json.dumps(_paths()), json.dumps(expected), str(os.getpid())] + args
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
               (os.POSIX_SPAWN_DUP2, 1, 2)]
    if hasattr(os, "POSIX_SPAWN_CLOSEFROM"):       # 3.13+: no descriptor the program made inheritable
        actions.append((os.POSIX_SPAWN_CLOSEFROM, 3))
    try:
        pid = os.posix_spawn(python, cmd, env, file_actions=actions, setsid=True)
    except (OSError, RuntimeError) as e:      # RuntimeError: an interpreter that may not start processes
        return f"the scan could not be started ({e})"
    status = None
    try:
        status = _wait(pid, time.monotonic() + limit)
    finally:
        if status is None:          # the time limit, or an exception (KeyboardInterrupt) while waiting
            _kill(pid)
    if status is None:
        return f"the scan took longer than {limit:g} s (OFFSETS_AUTOSCAN_TIMEOUT) and was stopped"
    if status is False:
        return "the scan's exit status was taken by another waiter in this program"
    rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    if -rc in OUTSIDE_KILLS:
        return f"the scan was killed from outside (signal {-rc}) before it installed a table"
    if rc:
        return f"the scan failed (exit {rc}): {_tail(log) or 'no output'}"
    return ""


def _wait(pid: int, deadline: float):
    """The wait status of child `pid`; None at `deadline`; False if it was reaped elsewhere."""
    delay = 0.005
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return False
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _kill(pid: int) -> None:
    """End the child and its session (the scan's own processes), and reap it."""
    import signal

    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
            break
        except OSError:
            pass
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def make(me: BuildIdentity, exact_installed):
    """This build's own table, made now: `exact_installed()` once it is there (another process may
    have made it while this one waited), with a phrase saying how, or a str saying why there is none."""
    why = why_not(me)
    if why:
        return why
    from ..cache_lock import file_lock

    tables, key = tables_dir(), _key(me)
    base = os.path.join(tables, f".{key}")
    limit = timeout()
    with file_lock(base + ".lock", limit) as got:
        if not got:
            return (f"another process has been making this build's table for longer than {limit:g} s "
                    f"(OFFSETS_AUTOSCAN_TIMEOUT)")
        made = exact_installed()
        if made is not None:
            return (*made, "made from this build's headers by another process, which this one waited for")
        why = _recorded_failure(base + ".failed")
        if why:
            return why
        python, why = interpreter(me)
        if python is not None:
            why = run_child(python, me, tables, base + ".log", limit)
            made = exact_installed()
            if made is not None:
                return (*made, f"made from this interpreter's own headers now (by {python})")
            if why.startswith(("the scan could not be started", "the scan was killed from outside")):
                return why         # this process's limits (a sub-interpreter's), or a kill: not the build's, not recorded
            why = why or f"the scan by {python} installed no table that is exactly this build's"
        _record_failure(base + ".failed", why)
        return why
