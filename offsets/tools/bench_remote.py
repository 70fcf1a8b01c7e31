"""`make bench`, other processes: `offsets identify` and one stack sample of a 50-frame thread, as
ratios to pystack's time on the same process (`pystack remote PID --no-block`, from PyPI), measured in
the same run on a target with parked threads (tests/fixtures/parked.py), each the best of a few
rounds. py-spy's `dump` is shown beside it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import command_line
from .verdict import verdict

REPO = Path(__file__).resolve().parents[2]
PARKED = REPO / "tests" / "fixtures" / "parked.py"
#: Goals, as ratios to pystack's dump of the same process.
IDENTIFY_GOAL, SAMPLE_GOAL = 1.0, 0.05
ROUNDS = 5


def _tool(name: str):
    found = Path(sys.executable).parent / name
    return str(found) if found.exists() else shutil.which(name)


def _best(fn, rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _python(minor: str):
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(Path(root, "versions").glob(f"{minor}.*/bin/python{minor}"))
    return found[-1] if found else None


def _start(python) -> tuple:
    tmp = Path(tempfile.mkdtemp(prefix="offsets-bench-"))
    proc = subprocess.Popen([str(python), str(PARKED), str(tmp / "record.json"), "10"], stdout=subprocess.PIPE,
                            text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        proc.kill()
        raise RuntimeError(f"{python}: the parked target did not start")
    while len(os.listdir(f"/proc/{proc.pid}/task")) != int(line.split()[1]):
        time.sleep(0.01)
    return proc, tmp


def bench_one(minor: str) -> None:
    from ..remote import attach

    python = _python(minor)
    pystack = _tool("pystack")
    if python is None or pystack is None:
        why = f"no pyenv CPython {minor}" if python is None else "pystack is not installed"
        print(f"remote {minor}: skipped ({why})")
        return
    proc, tmp = _start(python)
    try:
        pid = str(proc.pid)

        # as a user runs them: bytecode cached (a sandbox's PYTHONDONTWRITEBYTECODE would compile every run)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

        def run(*cmd):
            proc = subprocess.run(list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
            if proc.returncode:
                raise RuntimeError(f"{Path(cmd[0]).name} {' '.join(cmd[1:4])}: {proc.stderr.strip()[-300:]}")

        floor = _best(lambda: run(pystack, "remote", pid, "--no-block"))
        spy = _tool("py-spy")
        py_spy = _best(lambda: run(spy, "dump", "--pid", pid)) if spy else None
        identify_cli = _best(lambda: run(sys.executable, "-m", "offsets", "identify", "--pid", pid))
        stack_cli = _best(lambda: run(sys.executable, "-m", "offsets", "stack", "--pid", pid))
        attach_lib = _best(lambda: attach(proc.pid).close())
        with attach(proc.pid) as p:
            from ..remote import frames

            stack = frames.Stack(p.reader, p.build.hexversion)
            states = [ts for interp in frames.interpreters(p.reader) for ts in frames.thread_states(p.reader, interp)]
            fifty = next(ts for ts in states if len(stack.frames(ts)) == 50)
            sample = _best(lambda: stack.frames(fifty), rounds=50)
            table = p.table.name
        print(f"remote: pyenv CPython {minor} (table {table}), a parked target of {len(states)} threads; floor: "
              f"`pystack remote --no-block` {floor * 1000:.0f} ms")
        if py_spy is not None:
            print(f"  py-spy dump:                                 {py_spy * 1000:7.1f} ms = {py_spy / floor:.2f}x")
        print(f"  offsets identify --pid (command):            {identify_cli * 1000:7.1f} ms = "
              f"{identify_cli / floor:.2f}x (goal <= {IDENTIFY_GOAL}x: {verdict(identify_cli / floor, IDENTIFY_GOAL)})")
        print(f"  offsets stack --pid (command, every thread): {stack_cli * 1000:7.1f} ms = {stack_cli / floor:.2f}x")
        print(f"  offsets.remote.attach (identify + table):    {attach_lib * 1000:7.1f} ms = {attach_lib / floor:.3f}x")
        print(f"  one stack sample of the 50-frame thread:     {sample * 1000:7.2f} ms = {sample / floor:.4f}x "
              f"(goal <= {SAMPLE_GOAL}x: {verdict(sample / floor, SAMPLE_GOAL)})")
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


EXAMPLES = """  python -m offsets.tools.bench_remote          offsets identify and a stack sample, against pystack
"""


def main(argv=None) -> int:
    command_line.no_arguments("bench_remote", __doc__, EXAMPLES, argv)
    for minor in ("3.10", "3.13"):
        try:
            bench_one(minor)
        except Exception as e:      # one build's failure is reported, the others still run
            print(f"remote {minor}: failed: {type(e).__name__}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
