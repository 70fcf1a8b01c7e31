"""The processes the package starts: each dies with its parent, and what it prints is read up to a cap.

- `die_with_parent(parent)`, called in a child (a scan's worker, the autoscan's child): the kernel
  sends it SIGKILL when its parent dies (`prctl(PR_SET_PDEATHSIG)`, Linux), and it exits at once
  if the parent is already gone (`os.getppid()` is no longer `parent`), so that a parent killed
  with SIGKILL leaves no worker blocked on a pipe no one writes.
- `run(cmd, what, ...)`: `subprocess.run(cmd, capture_output=True, text=True)` for a program
  (an interpreter, a compiler, pip, apt-get) whose child also dies with this process, and whose
  output is read up to `MAX_OUTPUT` bytes: one that prints more (a "python" that is `yes`) is
  killed and refused in one line, instead of growing this process until it runs out of memory.

The signal is sent when the *thread* that started the child ends: every caller here waits for its
child in the thread that started it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from .errors import OffsetsError

#: What a child may print (stdout and stderr together) before it is stopped: the largest real
#: output (a compiler's `-dM -E`, an interpreter's identity) is well under 1 MB.
MAX_OUTPUT = 8 * 1024 * 1024
PR_SET_PDEATHSIG = 1
_prctl = None


def _prctl_function():
    """libc's prctl, looked up once (before a fork: the forked child only calls it)."""
    global _prctl
    if _prctl is None and sys.platform.startswith("linux"):
        try:
            import ctypes

            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError, ImportError):
            _prctl = False
    return _prctl or None


def _ask_for_sigkill() -> None:
    """In a child: SIGKILL when the parent (thread) dies."""
    prctl = _prctl_function()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def die_with_parent(parent: int) -> None:
    """In a child of `parent`: be killed when it dies, and exit now if it already has."""
    _ask_for_sigkill()
    if os.getppid() != parent:
        os._exit(1)


def run(cmd, what: str, error=OffsetsError, timeout=None, check: bool = False, limit: int = MAX_OUTPUT,
        errors: str = "strict", **kwargs) -> subprocess.CompletedProcess:
    """`cmd` run as `subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check)`
    would, its output decoded with `errors`; the child dies with this process (`die_with_parent`),
    and one that prints more than `limit` bytes is killed and refused with `error` (one line saying
    that `what` printed more than expected). `subprocess.TimeoutExpired` at the timeout. Its standard
    input is empty, or the open file `stdin=` names."""
    _prctl_function()
    parent = os.getpid()
    stdin = kwargs.pop("stdin", subprocess.DEVNULL)
    with subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          preexec_fn=lambda: die_with_parent(parent), **kwargs) as proc:
        try:
            out, err = _bounded(proc, limit, None if timeout is None else time.monotonic() + timeout)
        except BaseException:
            proc.kill()
            raise
        if out is None or err is None:
            proc.kill()                 # before the `with` waits for it
        if out is None:
            raise error(f"{what} printed more than {limit // (1024 * 1024)} MB, far more than expected, and was "
                        f"stopped")
        if err is None:
            raise subprocess.TimeoutExpired(cmd, timeout)
        rc = proc.wait()
    done = subprocess.CompletedProcess(cmd, rc, out.decode(errors=errors), err.decode(errors=errors))
    if check:
        done.check_returncode()
    return done


def _bounded(proc, limit: int, deadline):
    """(stdout, stderr) bytes of `proc` until both end; (None, _) past `limit` bytes, (b'', None) at
    `deadline`."""
    import selectors

    chunks = {proc.stdout: [], proc.stderr: []}
    total = 0
    with selectors.DefaultSelector() as sel:
        for f in chunks:
            sel.register(f, selectors.EVENT_READ)
        while sel.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return b"", None
            for key, _ in sel.select(wait):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                total += len(data)
                if total > limit:
                    return None, b""
                chunks[key.fileobj].append(data)
    return b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr])
