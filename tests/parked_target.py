"""A running CPython with parked threads and its own record of their stacks (fixtures/parked.py),
for the tests and proofs of `offsets stack` and `offsets identify`, and for `make bench`."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

PARKED = Path(__file__).resolve().parent / "fixtures" / "parked.py"


class Parked:
    """`python fixtures/parked.py` started, waited for until every thread is parked and recorded."""

    def __init__(self, python, tmp: Path, depth: int = 300, env: dict = None, timeout: float = 120) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.record_path = tmp / f"record-{os.getpid()}-{time.monotonic_ns()}.json"
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OFFSETS_"))}
        self.proc = subprocess.Popen([str(python), str(PARKED), str(self.record_path), str(depth)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**clean, **(env or {})})
        self.wait_parked(python, self.proc.stdout.readline(), timeout)

    @classmethod
    def started(cls, proc, line: str, record_path: Path, what: str, timeout: float = 120) -> "Parked":
        """A target started otherwise (`proc`, with `line` its first line of output; in a container,
        tests/process_container.py), whose record is at `record_path`."""
        t = cls.__new__(cls)
        t.proc, t.record_path = proc, record_path
        t.wait_parked(what, line, timeout)
        return t

    def wait_parked(self, python, line: str, timeout: float) -> None:
        """Given the target's first line of output, wait for its recorder and read its record."""
        self.pid = self.proc.pid
        if not line.startswith("ready "):
            self.close()
            raise RuntimeError(f"{python} {PARKED.name} did not get ready: {line!r} {self.proc.stderr.read()[-2000:]}")
        self.threads = int(line.split()[1])
        deadline = time.monotonic() + timeout
        while len(os.listdir(f"/proc/{self.pid}/task")) != self.threads:    # the recorder thread ends
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"{python}: the recorder thread did not end")
            time.sleep(0.01)
        #: thread id -> [[function, file, line], ...] innermost first, as the interpreter itself said
        doc = json.loads(self.record_path.read_text())
        self.record = {int(k): [tuple(f) for f in v["frames"]] for k, v in doc.items()}
        #: thread id -> the kernel's id of the thread (what pystack names threads by)
        self.natives = {int(k): v["native"] for k, v in doc.items()}

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> "Parked":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def stacks_of(doc: dict) -> dict:
    """thread id -> [(function, file, line), ...] of `offsets stack --json`'s output."""
    return {t["thread_id"]: [(f["function"], f["file"], f["line"]) for f in t["frames"]] for t in doc["threads"]}
