"""The cache lock (offsets/cache_lock.py), which the runtime takes to make a build's table once for
the whole machine: which kind of lock, shown on real processes and threads.

flock belongs to the open file description: it excludes other processes and other threads (each
opens the file itself), but a forked child shares the description, so a plain flock would stay held
by a forked worker after the parent let it go; cache_lock closes a forked child's copies, and opens
with O_CLOEXEC so an exec'd child never gets one. POSIX record locks (lockf) are not inherited, but
they belong to the process: a second thread gets one while the first holds it. The controls below
show both failures with the raw calls, so these tests would fail on either naive choice.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from offsets import cache_lock

ROOT = Path(__file__).resolve().parent.parent


def other_process_gets(path: Path, timeout: float = 0.3) -> bool:
    """Whether another process gets the lock within `timeout` seconds."""
    code = ("import sys; from offsets import cache_lock\n"
            "with cache_lock.file_lock(sys.argv[1], float(sys.argv[2])) as got:\n    print(got)")
    out = subprocess.run([sys.executable, "-c", code, str(path), str(timeout)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True).stdout
    return out.strip() == "True"


def test_processes_exclude_each_other(tmp_path):
    lock = tmp_path / "x.lock"
    with cache_lock.file_lock(str(lock), 1) as got:
        assert got
        assert not other_process_gets(lock)
    assert other_process_gets(lock)


def forked_sleeper(hold_in_child):
    """Fork a child that sleeps 5 s holding whatever it inherited; its pid."""
    pid = os.fork()
    if pid == 0:
        hold_in_child()
        time.sleep(5)
        os._exit(0)
    return pid


def test_a_forked_child_does_not_keep_the_lock(tmp_path):
    lock = tmp_path / "x.lock"
    with cache_lock.file_lock(str(lock), 1) as got:
        assert got
        child = forked_sleeper(lambda: None)
    try:
        assert other_process_gets(lock), "the forked child kept the lock after the parent released it"
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


def test_control_a_plain_flock_stays_held_by_a_forked_child(tmp_path):
    """What cache_lock prevents: the same with a plain flock on an inherited descriptor."""
    lock = tmp_path / "x.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    child = forked_sleeper(lambda: None)
    os.close(fd)
    try:
        assert not other_process_gets(lock)
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


def test_an_execd_child_never_holds_it(tmp_path):
    lock = tmp_path / "x.lock"
    with cache_lock.file_lock(str(lock), 1) as got:
        assert got
        sleeper = subprocess.Popen(["sleep", "5"], close_fds=False)    # inherits what is inheritable
    try:
        assert other_process_gets(lock)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_threads_exclude_each_other(tmp_path):
    lock = tmp_path / "x.lock"
    held, release, seen = threading.Event(), threading.Event(), []

    def holder():
        with cache_lock.file_lock(str(lock), 1) as got:
            seen.append(got)
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(10)
    with cache_lock.file_lock(str(lock), 0.3) as got:
        seen.append(got)
    release.set()
    t.join()
    assert seen == [True, False]


def test_control_lockf_does_not_exclude_threads(tmp_path):
    """Why not lockf: a second thread of the same process gets it while the first holds it."""
    lock = tmp_path / "x.lock"
    a = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.lockf(a, fcntl.LOCK_EX)
    got = []

    def second():
        b = os.open(lock, os.O_RDWR)
        try:
            fcntl.lockf(b, fcntl.LOCK_EX | fcntl.LOCK_NB)
            got.append(True)
        except OSError:
            got.append(False)
        finally:
            os.close(b)

    t = threading.Thread(target=second)
    t.start()
    t.join()
    os.close(a)
    assert got == [True]


def test_a_lock_that_cannot_be_made_is_not_had(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with cache_lock.file_lock(str(blocker / "x.lock"), 0.1) as got:     # a directory that is a file
        assert got is False


def test_held_is_reentrant_and_shared_between_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path))
    with cache_lock.held("folder/name"):
        with cache_lock.held("folder/name"):
            pass
        assert not other_process_gets(tmp_path / "folder" / ".name.lock")
    assert other_process_gets(tmp_path / "folder" / ".name.lock")
