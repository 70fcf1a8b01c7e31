"""Worker processes that run the scan's tasks, each worker under a memory limit.

`#include "/dev/zero"`, or any unit that makes clang's memory grow without end, must cost one clear
line, not the machine. Each worker caps its address space (`RLIMIT_AS`) at its size after `start()`
plus `budget()` (`OFFSETS_UNIT_MEMORY_MB`, default 3072 MB), once, when it starts; the parent never
parses. A worker that dies (out of memory, a crash, a kill) takes only the task it held: that task
runs once more in a fresh worker, so one that failed only because earlier tasks left its worker
large gets a clean start; a task that kills a fresh worker too is a `ScanError` naming it, with the
first line its worker wrote to stderr (libclang's report).

Tasks are taken in order of priority (lowest first), then of submission; results are returned as
they finish. A function is sent by reference, so tasks name module-level functions. A worker dies with the
process that started it, a SIGKILL included (`children.die_with_parent`).
"""
from __future__ import annotations

import gc
import heapq
import itertools
import multiprocessing
import os
import resource
import signal
import tempfile
from multiprocessing.connection import wait
from typing import Any, Callable, Iterator, Optional

from ..children import die_with_parent
from ..errors import ScanError

DEFAULT_MB = 3072


def budget() -> int:
    """The bytes a worker's address space may grow by after it started."""
    try:
        mb = int(os.environ.get("OFFSETS_UNIT_MEMORY_MB", DEFAULT_MB))
    except ValueError:
        mb = DEFAULT_MB
    return max(mb, 64) * 1024 * 1024


def _address_space() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _serve(conn, err_fd: int, start: Optional[Callable], limit: int, parent: int) -> None:
    """A worker's life: dying with its `parent` (children.py), stderr to its file, `start()`, the
    cap, then tasks until told to stop. Its cycle collector runs whatever its parent's does
    (`scanner.collector_paused`, or a caller's `gc.disable()`): without it, each parse's cursors and
    records would stay until the cap."""
    die_with_parent(parent)         # else a parent killed with SIGKILL leaves it blocked in recv() for good
    gc.enable()
    os.dup2(err_fd, 2)
    signal.signal(signal.SIGINT, signal.SIG_IGN)        # the parent decides when workers stop
    if start is not None:
        start()
    cap = _address_space() + limit
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        fn, arg = task
        try:
            message = ("ok", fn(arg))
        except ScanError as e:
            message = ("error", str(e))
        except MemoryError:
            os._exit(3)                                  # its heap may be damaged: replaced
        except Exception as e:                           # noqa: BLE001 - reported to the parent
            message = ("crash", f"{type(e).__name__}: {e}")
        try:
            conn.send(message)
        except MemoryError:
            os._exit(3)


class _Worker:
    def __init__(self, ctx, start: Optional[Callable], limit: int) -> None:
        self.said = tempfile.TemporaryFile()
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, self.said.fileno(), start, limit, os.getpid()),
                                   daemon=True)
        self.process.start()
        child.close()
        self.task: Optional[tuple] = None                # (key, name, fn, arg, tries)
        self.fresh = True
        self.said_from = 0                               # where its current task's stderr starts

    def first_line(self) -> str:
        """The first line this worker wrote to stderr during its current task."""
        self.said.seek(self.said_from)
        lines = [ln.strip() for ln in self.said.read(4096).decode(errors="replace").splitlines() if ln.strip()]
        return lines[0] if lines else ""

    def how_it_died(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        if code is None:
            return "it stopped answering"
        if code < 0:
            sig = -code
            return f"killed by {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        return "out of memory" if code == 3 else f"exit status {code}"

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(1)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()
        self.said.close()


class Workers:
    """Up to `jobs` worker processes; `submit` tasks, iterate `results()`. Use as a context manager."""

    def __init__(self, jobs: int, start: Optional[Callable] = None, limit: Optional[int] = None) -> None:
        methods = multiprocessing.get_all_start_methods()
        self._ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        self._jobs = max(1, jobs)
        self._start = start
        self._limit = budget() if limit is None else limit
        self._workers: list[_Worker] = []
        self._ready: list = []                           # heap of (priority, order, task)
        self._order = itertools.count()
        self._running = 0

    def submit(self, key: Any, name: str, fn: Callable, arg: Any, priority: tuple = (0,)) -> None:
        """Run `fn(arg)` in a worker; `name` is what an error says died."""
        heapq.heappush(self._ready, (priority, next(self._order), (key, name, fn, arg, 0)))

    def pending(self) -> int:
        return len(self._ready) + self._running

    def results(self) -> Iterator[tuple[Any, Any]]:
        """(key, result) as tasks finish, a `ScanError` as the result of a task that failed; ends
        when nothing is left, including tasks submitted while iterating."""
        while self.pending():
            self.dispatch()
            busy = [w for w in self._workers if w.task is not None]
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
            for w in busy:
                if w.conn in ready or w.process.sentinel in ready:
                    done = self._collect(w)
                    if done is not None:
                        yield done

    def dispatch(self) -> None:
        """Hand ready tasks to idle workers (starting workers up to `jobs`) now; `results` does too."""
        while self._ready:
            idle = next((w for w in self._workers if w.task is None), None)
            if idle is None and len(self._workers) < self._jobs:
                idle = _Worker(self._ctx, self._start, self._limit)
                self._workers.append(idle)
            if idle is None:
                return
            _, _, task = self._ready[0]
            if task[4] and not idle.fresh:               # a retry starts in a fresh worker
                self._replace(idle)
                continue
            heapq.heappop(self._ready)
            idle.task, idle.fresh = task, False
            idle.said_from = os.fstat(idle.said.fileno()).st_size
            self._running += 1
            try:
                idle.conn.send((task[2], task[3]))
            except (OSError, ValueError):
                pass                                     # found dead when its sentinel is ready

    def _collect(self, w: _Worker) -> Optional[tuple]:
        key, name, fn, arg, tries = w.task
        try:
            kind, value = w.conn.recv()
        except Exception:                                # noqa: BLE001 - EOF or a torn message: it died
            kind, value = None, None
        if kind is not None:
            w.task = None
            self._running -= 1
            if kind == "ok":
                return key, value
            said = w.first_line()
            if said:                                     # libclang complained: the next task starts afresh
                self._replace(w)
            clang = f" (libclang said: {said})" if said else ""
            return key, ScanError((value if kind == "error" else f"{name}: {value}") + clang)
        how, said = w.how_it_died(), w.first_line()
        self._running -= 1
        self._replace(w)
        if tries == 0:
            heapq.heappush(self._ready, ((-1,), next(self._order), (key, name, fn, arg, 1)))
            return None
        mb = self._limit // (1024 * 1024)
        clang = f" (libclang said: {said})" if said else ""
        return key, ScanError(f"{name}: the parser ran out of its {mb} MB memory limit or died ({how}){clang}; a "
                              f"unit that includes a huge or endless file (/dev/zero) ends here; raise "
                              f"OFFSETS_UNIT_MEMORY_MB if the unit is genuine")

    def _replace(self, w: _Worker) -> None:
        w.task = None
        w.stop()
        self._workers[self._workers.index(w)] = _Worker(self._ctx, self._start, self._limit)

    def close(self) -> None:
        """Stop every worker; one still busy (the scan ended on an error) is killed at once."""
        for w in self._workers:
            if w.task is not None:
                w.process.kill()
            w.stop()
        self._workers = []

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_one(fn: Callable, arg: Any, name: str, limit: Optional[int] = None, start: Optional[Callable] = None):
    """`fn(arg)` in one worker under the limit: its result, or its `ScanError` raised."""
    with Workers(1, start, limit) as pool:
        pool.submit(0, name, fn, arg)
        for _, out in pool.results():
            if isinstance(out, ScanError):
                raise out
            return out
