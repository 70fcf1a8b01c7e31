"""Every way a JIT is deployed, on a real process tree: a build no table ships and a
shipped one (tests/deployment.py makes both from pyenv's 3.11.7), each program run in a session of
its own and ended at its timeout. Each test asserts that the program's own code ran, how many
interpreters started (the build's site-packages logs every start) and which processes were launched
(CPython's audit events), the answer (against `tuple.__basicsize__`) and how it was earned.

Before the runtime's rules for deployments (docs/identity.md), on the build no table ships: a `.pth`-loaded JIT started 1,061 interpreters in
120 s (each scan's child read the same `.pth`), its main never ran; an embedding program that
names itself started itself 570 times in 60 s; one that names nothing scanned and installed the
table of pyenv's global python3 (found on PATH, through pyenv's shell shim) and answered only what
the live check proved; a worker forked while the first lookup made the table was still blocked 20 s
later. These tests fail on that code.

Slow ones (a hundred processes; Debian's debug builds for -X presite) are in tests/prove.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import deployment as d

TIMEOUT = 120


@pytest.fixture(scope="module", params=["shipped", "unshipped"])
def build(request, tmp_path_factory):
    if not d.base_python().is_file() or not (Path(sys.base_prefix) / "include").is_dir():
        from conftest import missing_input

        missing_input(f"the base interpreter {d.base_python()} with its headers (pyenv's 3.11.7 here)")
    return d.make_build(tmp_path_factory.mktemp(request.param) / "prefix", request.param == "shipped")


@pytest.fixture(autouse=True)
def clean_site(request):
    """What a test adds to the build's site-packages (a .pth file, sitecustomize) goes with it."""
    b = request.getfixturevalue("build") if "build" in request.fixturenames else None
    before = set(os.listdir(b.site)) if b else set()
    yield
    if b:
        for name in set(os.listdir(b.site)) - before:
            p = b.site / name
            shutil.rmtree(p) if p.is_dir() else p.unlink()


def answered(run: d.Run, build: d.Build, answers: int = 1) -> list:
    """Every JIT lookup answered exactly, right, and the tables of a build no table ships made by
    one scan, run by the build's own interpreter, isolated and without site; the answers."""
    assert not run.timed_out and run.returncode == 0, run.summary()
    assert run.of("refused") == [], run.summary()
    got = run.of("answer")
    assert len(got) == answers, run.summary()
    for a in got:
        assert a["value"] == a["truth"] and a["kind"] == "exact" and a["earned"] == "exact", a
    assert len(run.scans) == (0 if build.shipped else 1), run.summary()
    for argv in run.scans:
        assert argv[0] == str(build.python) and argv[1:3] == ["-I", "-S"], argv
    if not build.shipped:     # the table was made now (by this process, or one it waited for)
        assert any("made from" in a["detail"] for a in got), got
    return got


def main_ran(run: d.Run, times: int = 1) -> None:
    assert len(run.of("main")) == times, run.summary()


def program(build: d.Build, tmp_path: Path, *flags: str, code="import deploy_probe; deploy_probe.main()", env=None):
    return d.run(build, [build.python, *flags, "-c", code], env or d.clean_env(tmp_path / "tables"), timeout=TIMEOUT)


# ---------------------------------------------------------------- loaded while the interpreter starts
def test_a_jit_loaded_by_a_pth_file(build, tmp_path):
    build.jit_pth()
    run = program(build, tmp_path)
    main_ran(run)
    assert run.starts == 1, run.summary()       # the scan's child reads no .pth (-S), so starts nothing
    answered(run, build)


def test_a_jit_loaded_by_sitecustomize(build, tmp_path):
    build.sitecustomize()
    run = program(build, tmp_path)
    main_ran(run)
    assert run.starts == 1, run.summary()
    answered(run, build)


@pytest.mark.parametrize("flag", ["-I", "-E"])
def test_isolated_mode_and_ignored_environment(build, tmp_path, flag):
    """-I and -E: PYTHON* variables ignored (site-packages' .pth files still run); OFFSETS_* are read."""
    build.jit_pth()
    run = program(build, tmp_path, flag)
    main_ran(run)
    assert run.starts == 1, run.summary()
    answered(run, build)


def test_an_emptied_environment(build, tmp_path):
    """pyperformance runs benchmarks with only HOME (and PATH) left: here only HOME, pointing at a
    fresh home, so the table is made into (and found in) HOME's cache. That cache has clang's
    builtin headers already (as where offsets ran before), so the scan fetches nothing."""
    build.jit_pth()
    home = tmp_path / "home"
    (home / ".cache" / "offsets").mkdir(parents=True)
    from offsets.data_cache import folder as cache_folder

    (home / ".cache" / "offsets" / "clang-include").symlink_to(cache_folder() / "clang-include")
    run = program(build, tmp_path, env={"HOME": str(home)})
    main_ran(run)
    answered(run, build)
    tables = list((home / ".cache" / "offsets" / "tables").glob("*.jsonl"))
    assert len(tables) == (0 if build.shipped else 1), tables


def test_a_venv_launcher_is_not_what_scans(build, tmp_path):
    """A venv's python names the venv's launcher in sys.executable: the scan runs the build's own."""
    venv = tmp_path / "venv"
    subprocess.run([str(build.python), "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, env=d.clean_env(tmp_path / "tables"))
    build.jit_pth()
    run = d.run(build, [venv / "bin" / "python", "-c", "import deploy_probe, sys; deploy_probe.main()"],
                d.clean_env(tmp_path / "tables"), timeout=TIMEOUT)
    main_ran(run)
    assert run.of("start")[0]["executable"] == str(venv / "bin" / "python"), run.events[0]
    answered(run, build)


# ---------------------------------------------------------------- a program that embeds CPython
@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    return d.build_embedder(tmp_path_factory.mktemp("embedder"))


@pytest.mark.parametrize("mode", ["program_name", "executable", "legacy", "none"])
def test_a_program_that_embeds_cpython(build, host, tmp_path, mode):
    """The host runs once: sys.executable names it (or, with no name, the first python3 on PATH),
    and neither is what makes the table."""
    counter = tmp_path / "host-runs"
    env = d.clean_env(tmp_path / "tables", EMBED_MODE=mode, EMBED_HOME=str(build.prefix), EMBED_COUNTER=str(counter),
                      EMBED_APP="import deploy_probe, sys; deploy_probe.main(); deploy_probe.jit()",
                      LD_LIBRARY_PATH=str(build.prefix / "lib"))     # the build's libpython (its own build-id)
    run = d.run(build, [host], env, timeout=TIMEOUT)
    assert d.host_runs(counter) == 1, run.summary()
    main_ran(run)
    assert run.starts == 1, run.summary()
    answered(run, build)


# ---------------------------------------------------------------- forked and spawned workers
POOL = """
import multiprocessing, sys, deploy_probe
if __name__ == "__main__":
    deploy_probe.jit()                                # the first lookup, in the parent
    ctx = multiprocessing.get_context(sys.argv[1])
    started = ctx.Barrier(2)                          # both workers start before the pool ends
    with ctx.Pool(2, initializer=started.wait) as pool:
        pids = pool.map(deploy_probe.worker, range(4))
    deploy_probe.main()
"""
#: interpreters each start method starts besides the program (multiprocessing's own docs): spawn
#: starts the pool's 2 workers and the resource tracker; forkserver the server and the tracker, and
#: forks the workers from the server; fork forks the workers. The pool's initializer waits until both
#: workers run: a pool that ends first may terminate a worker still starting, before it is counted.
STARTED = {"fork": 0, "forkserver": 2, "spawn": 3}


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_multiprocessing_workers_answer_without_scanning_again(build, tmp_path, method):
    script = tmp_path / "pool.py"
    script.write_text(POOL)
    run = d.run(build, [build.python, script, method], d.clean_env(tmp_path / "tables"), timeout=TIMEOUT)
    main_ran(run)
    got = answered(run, build, answers=1 + 4)       # the parent, and each of the 4 tasks
    workers = {a["pid"] for a in got[1:]}
    assert 1 <= len(workers) <= 2, run.summary()
    assert run.starts == 1 + STARTED[method], run.summary()


FORK_AFTER = """
import os, deploy_probe
deploy_probe.jit()
pid = os.fork()
if pid == 0:
    deploy_probe.jit()
    os._exit(0)
os.waitpid(pid, 0)
deploy_probe.main()
"""


def test_os_fork_after_the_first_lookup(build, tmp_path):
    run = program(build, tmp_path, code=FORK_AFTER)
    main_ran(run)
    parent, child = answered(run, build, answers=2)
    assert child["ppid"] == parent["pid"] and child["detail"] == parent["detail"], (parent, child)


FORK_DURING = """
import os, sys, threading, time, deploy_probe
from offsets import runtime
busy = threading.Event()
if sys.argv[1] == "scan":       # fork while another thread's first lookup makes the table
    sys.addaudithook(lambda ev, args: ev == "os.posix_spawn" and "scan" in list(args[1]) and busy.set())
    first = threading.Thread(target=deploy_probe.jit)
else:                           # fork while another thread holds the runtime's lock
    def first():
        with runtime.RUNTIME.lock:
            busy.set()
            time.sleep(2)
    first = threading.Thread(target=first)
first.start()
busy.wait(60)
time.sleep(0.3)
pid = os.fork()
if pid == 0:
    deploy_probe.jit()
    os._exit(0)
first.join()
for _ in range(600):
    if os.waitpid(pid, os.WNOHANG)[0]:
        break
    time.sleep(0.1)
else:
    print("the forked child is still blocked after 60 s")
    os.kill(pid, 9)
deploy_probe.main()
"""


def test_a_fork_while_the_first_lookup_holds_its_locks(build, tmp_path):
    """The child of a fork made while another thread holds the runtime's lock (making the table, on
    the build no table ships) answers: it waits for the table the parent makes, never for a lock no
    thread of it will release."""
    run = program(build, tmp_path, code=FORK_DURING.replace("sys.argv[1]", repr("lock" if build.shipped else "scan")))
    main_ran(run)
    assert "still blocked" not in run.stdout, run.summary()
    got = answered(run, build, answers=1 if build.shipped else 2)
    if not build.shipped:
        assert {a["ppid"] for a in got} >= {got[0]["pid"]} or {a["ppid"] for a in got} >= {got[1]["pid"]}, got


# ---------------------------------------------------------------- read-only containers, no home
def unshare_works() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-m", "true"], capture_output=True).returncode == 0


def in_container(build: d.Build, argv: list, env: dict, tmp_path: Path, read_only=(), no_home=False) -> d.Run:
    """`argv` in a mount namespace of its own (unshare -m), where each of `read_only` is a read-only
    mount (EROFS for root too) and, with `no_home`, the password database has no entry (a container
    that runs under an arbitrary uid): with HOME unset, `~` is then `~`."""
    if not unshare_works():
        from conftest import missing_tool

        missing_tool("a usable `unshare -m`", "util-linux's unshare, run as root or with CAP_SYS_ADMIN")
    lines = ["set -e"]
    for path in read_only:
        lines += [f'mount --bind "{path}" "{path}"', f'mount -o remount,ro,bind "{path}"']
    if no_home:
        (tmp_path / "passwd").write_text("")
        (tmp_path / "nsswitch.conf").write_text("passwd: files\ngroup: files\n")
        lines += [f'mount --bind "{tmp_path / "passwd"}" /etc/passwd',
                  f'mount --bind "{tmp_path / "nsswitch.conf"}" /etc/nsswitch.conf']
    lines.append('exec "$@"')
    return d.run(build, ["unshare", "-m", "sh", "-c", "\n".join(lines), "sh", *map(str, argv)], env, timeout=TIMEOUT,
                 cwd=tmp_path)


def proven_only(run: d.Run, why: str) -> None:
    """The build no table ships, where no table can be made: only what the live check read is answered."""
    assert not run.timed_out and run.returncode == 0, run.summary()
    [a] = run.of("answer")
    assert a["value"] == a["truth"] and a["earned"] == "proven", a
    assert why in a["detail"] and "its own table was not made now" in a["detail"], a["detail"]
    assert run.launched == [], run.summary()


def own_env(tmp_path: Path, drop=(), **extra) -> dict:
    """clean_env without OFFSETS_TABLES (own tables go where the cache says), less `drop`, plus `extra`."""
    env = {k: v for k, v in d.clean_env(tmp_path / "unused").items() if k not in ("OFFSETS_TABLES", *drop)}
    env.update(extra)
    return env


def program_in_container(build: d.Build, tmp_path: Path, env: dict, **container) -> d.Run:
    """The .pth-loaded JIT and the program's main, in a container (`in_container`): main ran, and only
    the program's interpreter started."""
    build.jit_pth()
    run = in_container(build, [build.python, "-c", "import deploy_probe; deploy_probe.main()"], env, tmp_path,
                       **container)
    main_ran(run)
    assert run.starts == 1, run.summary()
    return run


def test_a_read_only_cache(build, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    run = program_in_container(build, tmp_path, own_env(tmp_path, OFFSETS_CACHE=str(cache)), read_only=[cache])
    if build.shipped:
        answered(run, build)
    else:
        proven_only(run, "cannot be written (Read-only file system)")
    assert list(cache.iterdir()) == []


def test_a_read_only_cache_with_the_table_made_at_image_build_time(build, tmp_path):
    """The Dockerfile step (`offsets scan --python PY --install`), then a read-only container: exact."""
    cache = tmp_path / "cache"
    env = own_env(tmp_path, OFFSETS_CACHE=str(cache))
    step = subprocess.run([sys.executable, "-m", "offsets", "scan", "--python", str(build.python), "--install",
                           "--no-dwarf", "-q"], capture_output=True, text=True, env={**env, "OFFSETS_AUTOSCAN": "0"},
                          cwd=d.ROOT)
    assert step.returncode == 0, step.stderr
    run = program_in_container(build, tmp_path, env, read_only=[cache])
    [a] = run.of("answer")
    assert a["value"] == a["truth"] and a["kind"] == "exact" and run.launched == [], run.summary()


def test_no_home(build, tmp_path):
    """No HOME and no home in the password database: no cache directory at all (nothing is written
    to a folder named `~`), the shipped table still exact, the other build proven only."""
    env = own_env(tmp_path, drop=("OFFSETS_CACHE", "HOME", "XDG_CACHE_HOME"))
    run = program_in_container(build, tmp_path, env, no_home=True)
    if build.shipped:
        answered(run, build)
    else:
        proven_only(run, "there is no cache directory (HOME is unset")
    assert not (tmp_path / "~").exists()


# ---------------------------------------------------------------- many processes at once
HUNDRED = """
import subprocess, sys
procs = [subprocess.Popen([sys.executable, "-c", "import deploy_probe; deploy_probe.jit()"]) for _ in range(100)]
print(sum(p.wait() != 0 for p in procs), "failed")
"""


def hundred_first_lookups(build: d.Build, tmp_path: Path) -> d.Run:
    """A hundred interpreters of `build` making their first lookup at once (started by one
    launcher, itself isolated and without site, so not counted), all with the same own-tables
    directory; each answer, and every process they launched."""
    return d.run(build, [build.python, "-I", "-S", "-c", HUNDRED], d.clean_env(tmp_path / "tables"), timeout=300)


def test_a_hundred_processes_make_one_table(build, tmp_path):
    run = hundred_first_lookups(build, tmp_path)
    assert run.stdout.strip() == "0 failed", run.summary()
    assert run.starts == 100, run.summary()
    got = answered(run, build, answers=100)     # one scan in all, on the build no table ships
    makers = [a for a in got if a["detail"].startswith("made from this interpreter's own headers now")]
    assert len(makers) == (0 if build.shipped else 1), [a["detail"][:80] for a in got]


# ---------------------------------------------------------------- isolated sub-interpreters
SUBINTERPRETERS = """
import json, sys, _xxsubinterpreters as interpreters
out = []
for _ in range(2):
    i = interpreters.create(isolated=True)         # its own GIL; no ctypes, no fork, no exec
    interpreters.run_string(i, '''
import json, offsets
try:
    v = offsets.get("PyTupleObject.ob_item")
    got = {"value": v, "kind": offsets.build().kind, "detail": offsets.build().detail, "truth": tuple.__basicsize__}
except Exception as e:
    got = {"error": type(e).__name__, "message": str(e)}
with open(%r, "a") as f:
    f.write(json.dumps(got) + "\\\\n")
''')
    interpreters.destroy(i)
"""


@pytest.mark.parametrize("shipped", [True, False], ids=["shipped", "unshipped"])
def test_the_first_lookup_in_isolated_sub_interpreters(shipped, tmp_path):
    """pyenv's 3.12 (a copy made by build_copy, with only the runtime importable, as `pip install
    offsets` gives): each isolated sub-interpreter's first lookup is exact on the shipped build; on the
    other it is refused with one line saying why (no scanner here to make its table, and such an
    interpreter cannot import ctypes, so the live check cannot read memory), never an error from
    inside the runtime."""
    from conftest import pyenv_python3

    base = pyenv_python3("3.12")
    if base is None:
        from conftest import missing_input

        missing_input("pyenv's CPython 3.12 (`pyenv install 3.12`)")
    make = ("import sys; from pathlib import Path; from offsets.tools.build_copy import copy_build; "
            "print(copy_build(Path(sys.base_prefix), Path(sys.argv[1]), unshipped=sys.argv[2] == 'u', "
            "paths=[sys.argv[3]]))")
    python = subprocess.run([str(base), "-c", make, str(tmp_path / "prefix"), "s" if shipped else "u", str(d.ROOT)],
                            capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(d.ROOT)},
                            cwd=tmp_path).stdout.strip()
    results = tmp_path / "results.jsonl"
    env = d.clean_env(tmp_path / "tables")
    proc = subprocess.run([python, "-c", SUBINTERPRETERS % str(results)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(got) == 2, got
    for g in got:
        if shipped:
            assert g.get("kind") == "exact" and g["value"] == g["truth"], g
        else:
            assert g.get("error") == "NoMatchingTable", g
            assert "the scanner is not importable here" in g["message"], g
            assert "this interpreter cannot read memory" in g["message"], g
            assert "offsets scan --python" in g["message"], g
