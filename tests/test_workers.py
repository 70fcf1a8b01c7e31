"""The scan's worker processes (offsets/scan/workers.py): a memory limit per worker, a dead worker
costs only its task, and a task that failed in a worker grown by earlier tasks starts afresh."""
from __future__ import annotations

import os
import signal

import pytest

from offsets.errors import ScanError
from offsets.scan import workers

MB = 1024 * 1024
_KEPT: list = []        # what `_grow` keeps alive in its worker, as a leaking parser would


def _grow(mb: int) -> int:
    """Keep `mb` MB of new address space: a mapping of its own, which free memory the worker's heap
    holds (forked from a test process that freed much) cannot serve; refused as a parser's malloc is."""
    import mmap

    if mb:
        try:
            _KEPT.append(mmap.mmap(-1, mb * MB))
        except OSError:         # ENOMEM: over the worker's address-space limit
            raise MemoryError from None
    return os.getpid()


def _die(_) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _fail(what: str) -> None:
    raise ScanError(what)


def _results(pool) -> dict:
    return dict(pool.results())


def test_a_task_that_kills_its_worker_costs_only_itself():
    with workers.Workers(2, limit=512 * MB) as pool:
        for i in range(6):
            pool.submit(i, f"unit{i}", _grow, 1)
        pool.submit("dead", "the dying unit", _die, None)
        pool.submit("bad", "the failing unit", _fail, "x.c:1:1: error: no")
        out = _results(pool)
    assert sorted(out, key=str) == sorted([*range(6), "dead", "bad"], key=str)
    assert all(isinstance(out[i], int) for i in range(6))
    dead = out["dead"]
    assert isinstance(dead, ScanError) and str(dead).startswith("the dying unit: ") and "killed by SIGKILL" in str(dead)
    assert isinstance(out["bad"], ScanError) and str(out["bad"]) == "x.c:1:1: error: no"


def test_a_task_failing_in_a_worker_grown_by_earlier_ones_starts_afresh():
    # each task keeps 60 MB alive: the fourth in one worker passes the 200 MB limit, and passes
    # again in a fresh worker; every task's answer is there
    with workers.Workers(1, limit=200 * MB) as pool:
        for i in range(5):
            pool.submit(i, f"unit{i}", _grow, 60)
        out = _results(pool)
    assert all(isinstance(out[i], int) for i in range(5)), out
    assert len(set(out.values())) == 2          # a second worker took over after the third task


def test_a_task_over_the_limit_alone_is_one_line():
    with pytest.raises(ScanError) as e:
        workers.run_one(_grow, 300, "huge.c", limit=200 * MB)
    message = str(e.value)
    assert message.startswith("huge.c: ") and "200 MB memory limit" in message and "out of memory" in message
    assert "\n" not in message


def test_priority_then_submission_order():
    order = []
    with workers.Workers(1, limit=512 * MB) as pool:
        pool.submit("late", "b", _grow, 0, priority=(2,))
        pool.submit("first", "a", _grow, 0, priority=(0,))
        pool.submit("second", "c", _grow, 0, priority=(0,))
        for key, _ in pool.results():
            order.append(key)
            if key == "first":
                pool.submit("added", "d", _grow, 0, priority=(1,))
    assert order == ["first", "second", "added", "late"]


def _sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


def test_closing_does_not_wait_for_a_busy_worker():
    import time

    pool = workers.Workers(1, limit=512 * MB)
    pool.submit("slow", "slow.c", _sleep, 120)
    pool.dispatch()
    process = pool._workers[0].process
    start = time.monotonic()
    pool.close()
    assert time.monotonic() - start < 60 and process.exitcode == -signal.SIGKILL


def _collecting(_) -> bool:
    import gc

    return gc.isenabled()


def test_a_worker_collects_cycles_though_its_parent_has_paused_its_collector():
    import gc

    gc.disable()
    try:
        with workers.Workers(1, limit=512 * MB) as pool:
            pool.submit("on", "a", _collecting, None)
            assert _results(pool) == {"on": True}
    finally:
        gc.enable()
