"""One process at a time fills a shared cache entry: an advisory lock file under the cache.

Downloads and unpacked trees (`debian.py`) are made in place, so two processes filling the same
entry at once (two test workers, two scans) could remove each other's half-made tree. `held(name)`
takes an exclusive `flock` on `$OFFSETS_CACHE/FOLDER/.NAME.lock` for the duration; the same process
may take it again inside (a download inside an unpack). A lock that cannot be made only costs the
protection, never the work: a read-only cache still serves what it holds.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading

_held: dict = {}
_guard = threading.RLock()


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
        fd = None
        try:
            folder, _, base = name.rpartition("/")
            folder = os.path.join(cache_dir(), folder)
            os.makedirs(folder, exist_ok=True)
            fd = os.open(os.path.join(folder, f".{base}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except (OSError, ImportError):
            if fd is not None:
                os.close(fd)
            fd = None
        _held[name] = [fd, 1]
        try:
            yield
        finally:
            del _held[name]
            if fd is not None:
                os.close(fd)           # closing releases the flock


def serialized(name: str):
    """Decorator: the function runs holding the cache lock `name`."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with held(name):
                return fn(*args, **kwargs)
        return run
    return wrap
