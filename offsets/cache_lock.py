"""One process at a time fills a shared cache entry: an advisory lock file, fork-safe.

Downloads and unpacked trees (`debian.py`) are made in place, so two processes filling the same
entry at once (two test workers, two scans) could remove each other's half-made tree; and the
runtime makes a build's own table once for all processes of the machine (`runtime/autoscan.py`).
`held(name)` takes an exclusive lock on `$OFFSETS_CACHE/FOLDER/.NAME.lock` for the duration (the
same process may take it again inside: a download inside an unpack); `file_lock(path, timeout)`
takes one on any file, waiting at most `timeout` seconds.

Which lock: `flock`, on a descriptor of our own opened with O_CLOEXEC. Its lock belongs to the open
file description, so it excludes other processes, other threads and other interpreters of this
process alike (each takes it through its own open()). POSIX record locks (`fcntl.lockf`) are not
inherited by a forked child, but they belong to the process: two threads (or two sub-interpreters)
both get one, and closing any descriptor of the file drops it. flock's weakness is the other way
round: a forked child shares the description, so a worker forked while the lock is held would keep
everyone waiting until it exits. So a forked child closes its copies at once (`os.register_at_fork`),
and an exec'd one never gets them (O_CLOEXEC); tests/test_cache_lock.py shows both, and that the
same protocol with lockf fails between threads.

A lock that cannot be made only costs the protection, never the work: a read-only cache still
serves what it holds (`held`); `file_lock` says so (it yields False) and its caller decides.
"""
from __future__ import annotations

import contextlib
import functools
import os
import time
from _thread import RLock

_held: dict = {}
_guard = RLock()
#: descriptors this process holds a lock through: fd -> the pid that opened it
_mine: dict = {}
#: how often a waiting file_lock() tries again
POLL_SECONDS = 0.05


def _open(path: str):
    """A new descriptor of the lock file `path` (made if missing), or None if it cannot be."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError:
        return None


def _close(fd) -> None:
    """Release a lock taken through `fd` (closing releases the flock), unless this is a forked child
    whose copies were already closed."""
    if fd is not None and _mine.pop(fd, None) == os.getpid():
        os.close(fd)


def _forget_after_fork() -> None:
    """In a forked child: close the copies of the parent's lock descriptors (so the child never keeps
    a lock the parent releases) and start with fresh in-process state."""
    global _guard
    for fd in list(_mine):
        try:
            os.close(fd)
        except OSError:
            pass
    _mine.clear()
    _held.clear()
    _guard = RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


@contextlib.contextmanager
def file_lock(path: str, timeout: float):
    """Hold an exclusive lock on the file `path` for the block, waiting at most `timeout` seconds;
    yields True, or False when it was not had in time or the file cannot be made (nothing is held
    then). Not re-entrant: a second file_lock() of the same file in the same thread waits for the first."""
    import fcntl

    fd = _open(path)
    if fd is None:
        yield False
        return
    _mine[fd] = os.getpid()
    deadline = time.monotonic() + timeout
    got = False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                got = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(POLL_SECONDS)
            except OSError:
                break
        yield got
    finally:
        _close(fd)


@contextlib.contextmanager
def held(name: str):
    """Hold the cache lock `name` until the block ends; re-entrant in one process. `name` is
    FOLDER/NAME: the lock file is FOLDER/.NAME.lock, in the cache folder it guards."""
    from .layout.identity import cache_dir

    with _guard:
        if name in _held:
            _held[name][1] += 1
            try:
                yield
            finally:
                _held[name][1] -= 1
            return
        folder, _, base = name.rpartition("/")
        cache = cache_dir()
        fd = _open(os.path.join(cache, folder, f".{base}.lock")) if cache else None
        if fd is not None:
            _mine[fd] = os.getpid()
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            except (OSError, ImportError):
                _close(fd)
                fd = None
        _held[name] = [fd, 1]
        try:
            yield
        finally:
            _held.pop(name, None)
            _close(fd)


def serialized(name: str):
    """Decorator: the function runs holding the cache lock `name`."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with held(name):
                return fn(*args, **kwargs)
        return run
    return wrap
