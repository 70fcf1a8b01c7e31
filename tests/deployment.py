"""Real interpreters deployed the ways JITs are, and what every process of them did.

`make_build(dest, shipped)` makes a CPython build from the base interpreter of the one running the
tests (pyenv's 3.11.7 here: shipped, generated/cpython-3.11.7-x86_64-linux-gnu.yaml): its own
`bin/python3.X` (a copy of the ELF), its own include directory, its own empty `site-packages`, and
the rest of the standard library linked in. `shipped=True` keeps the headers as they are (the
shipped table is exact for it); `shipped=False` adds one line to `Python.h`, so that the digests
differ and no table ships for it: its first lookup must make its own table (a scan of its headers).
Either way this checkout and the scanner's packages (the test venv's site-packages) are importable
from it, as after `pip install 'cpython-offsets[scan]'`, through a path `.pth`.

Every interpreter that processes the build's `site-packages` imports `deploy_probe` (written there),
which logs to one file, one JSON line per event, with its pid: `start` (an interpreter started),
every process it launches (`subprocess.Popen`, `os.fork`, `os.posix_spawn`, `os.exec`: CPython's own
audit events, not anything offsets reports), `answer`/`refused` (the JIT's first lookup: value,
table, how it was earned, and the truth: `tuple.__basicsize__`), and `main` (the program's own code
ran). `run()` starts a program in its own session and kills the whole session at its timeout, so a
chain of processes is counted, then ended.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

from offsets.tools import build_copy

ROOT = Path(__file__).resolve().parent.parent
NAME = "PyTupleObject.ob_item"        # its truth: tuple.__basicsize__ (CPython's own)
VERSION = build_copy.VERSION

PROBE = '''"""Written by tests/deployment.py: logs what each interpreter of a deployment test does."""
import json, os, sys

LOG = {log!r}
AUDITED = ("subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec")


def log(**event):
    event.update(pid=os.getpid(), ppid=os.getppid())
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, (json.dumps(event) + "\\n").encode())
    finally:
        os.close(fd)


def _audit(event, args):
    if event in AUDITED:
        argv = args[1] if event in ("subprocess.Popen", "os.posix_spawn", "os.exec") else ()
        log(event=event, argv=[os.fsdecode(a) if isinstance(a, (str, bytes)) else str(a) for a in (argv or ())])


def started():
    """An interpreter started (site is processing this build's site-packages)."""
    log(event="start", argv=list(getattr(sys, "orig_argv", sys.argv)), executable=sys.executable)
    sys.addaudithook(_audit)


def jit(name={name!r}):
    """What a JIT does when it is loaded: its first lookup."""
    import offsets
    try:
        value = offsets.get(name)
        m = offsets.build()
        log(event="answer", name=name, value=value, table=m.table, kind=m.kind, detail=m.detail,
            earned=offsets.field(name).earned, truth=tuple.__basicsize__)
    except Exception as e:
        log(event="refused", name=name, error="%s: %s" % (type(e).__name__, e))


def main():
    """The program's own code ran."""
    log(event="main", argv=list(sys.argv))


def worker(_):
    """A multiprocessing worker that uses the JIT."""
    jit()
    return os.getpid()
'''


@dataclass
class Build:
    prefix: Path
    python: Path          # bin/python3.X, the build's own interpreter
    site: Path            # its site-packages
    log: Path             # where deploy_probe writes
    shipped: bool

    def add_pth(self, name: str, line: str) -> Path:
        p = self.site / name
        p.write_text(line + "\n")
        return p

    def jit_pth(self) -> Path:
        """A JIT loaded by a .pth file, as Pyston's preload package does."""
        return self.add_pth("zz-jit.pth", "import deploy_probe; deploy_probe.jit()")

    def sitecustomize(self) -> Path:
        p = self.site / "sitecustomize.py"
        p.write_text("import deploy_probe\ndeploy_probe.jit()\n")
        return p


def base_prefix() -> Path:
    return Path(sys.base_prefix)


def base_python() -> Path:
    return build_copy.base_python(base_prefix())


def scanner_paths() -> list:
    """This checkout, then the directories the test interpreter imports the scanner's packages from."""
    return [str(ROOT)] + [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]


def make_build(dest: Path, shipped: bool, code_root: Path = ROOT) -> Build:
    """A build of its own at `dest` (offsets/tools/build_copy.py; see the module's docstring);
    `code_root` is the offsets to deploy."""
    python = build_copy.copy_build(base_prefix(), dest, unshipped=not shipped,
                                   paths=[str(code_root)] + scanner_paths()[1:])
    site = build_copy.site_packages(python)
    log = dest / "events.jsonl"
    (site / "deploy_probe.py").write_text(PROBE.format(log=str(log), name=NAME))
    (site / "01-probe.pth").write_text("import deploy_probe; deploy_probe.started()\n")
    return Build(dest, python, site, log, shipped)


def clean_env(tables: Path, **extra) -> dict:
    """This environment without what steers offsets or Python's paths; own tables in `tables`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OFFSETS_", "PYTHON")) or k == "OFFSETS_CACHE"}
    env["OFFSETS_TABLES"] = str(tables)
    env.update(extra)
    return env


@dataclass
class Run:
    returncode: int
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    events: list = field(default_factory=list)

    def of(self, kind: str) -> list:
        return [e for e in self.events if e["event"] == kind]

    @property
    def starts(self) -> int:
        """Interpreters that started and processed the build's site-packages."""
        return len(self.of("start"))

    @property
    def launched(self) -> list:
        """The argv of every process a logged interpreter started (CPython's audit events)."""
        return [e["argv"] for e in self.events if e["event"] in ("subprocess.Popen", "os.posix_spawn", "os.exec")]

    @property
    def scans(self) -> list:
        return [a for a in self.launched if "scan" in a]

    def summary(self) -> str:
        return (f"exit {self.returncode}{' (killed at the timeout)' if self.timed_out else ''} after "
                f"{self.seconds:.1f} s; {self.starts} interpreters started, {len(self.launched)} processes "
                f"launched ({len(self.scans)} scans), main ran {len(self.of('main'))} times; answers: "
                f"{self.of('answer')[:2]}; refused: {self.of('refused')[:2]}; stderr: {self.stderr[-1500:]}")


def run(build: Build, argv: list, env: dict, timeout: float = 60, cwd: Path = None) -> Run:
    """Run `argv` (a program of `build`) in a session of its own; at `timeout`, kill the session."""
    build.log.unlink(missing_ok=True)
    start = time.monotonic()
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd or build.prefix, start_new_session=True, stdin=subprocess.DEVNULL)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_session(proc.pid)
        out, err = proc.communicate()
    kill_session(proc.pid)           # whatever the program left behind
    events = []
    if build.log.exists():
        events = [json.loads(line) for line in build.log.read_text().splitlines() if line.strip()]
    return Run(proc.returncode, timed_out, time.monotonic() - start, out, err, events)


def kill_session(sid: int) -> None:
    try:
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


EMBED_SOURCE = ROOT / "tests" / "jitext" / "embed.c"


def build_embedder(dest: Path) -> Path:
    """tests/jitext/embed.c compiled and linked against the base interpreter's libpython (-Werror)."""
    dest.mkdir(parents=True, exist_ok=True)
    exe = dest / "host"
    libdir = sysconfig.get_config_var("LIBDIR")
    cmd = ["gcc", "-Wall", "-Wextra", "-Werror", f"-I{sysconfig.get_paths()['include']}", str(EMBED_SOURCE),
           "-o", str(exe), f"-L{libdir}", f"-Wl,-rpath,{libdir}", f"-lpython{VERSION}{sys.abiflags}", "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return exe


def host_runs(counter: Path) -> int:
    """How many times the host program started (embed.c counts itself before Python starts)."""
    return len(counter.read_text().split()) if counter.exists() else 0
