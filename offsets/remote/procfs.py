"""Another process as /proc shows it: whether it exists and may be read, its memory map, its root
(so a process in a container is read through its own files), its threads.

Every failure is one of `errors.py`'s process errors, with what to do.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass

from ..errors import NoSuchProcess, NotPermitted, ProcessExited, ProcessError
from ..regular_file import read_most

#: The most of /proc/PID/maps read (a process with 100,000 mappings has about 10 MB).
MAX_MAPS_BYTES = 64 << 20


def check_pid(pid) -> int:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise ProcessError(f"{pid!r} is not a process id (a positive integer)")
    return pid


def proc(pid: int, *parts: str) -> str:
    return os.path.join("/proc", str(pid), *parts)


def root(pid: int) -> str:
    """The process's root directory, through which its files are read (containers included)."""
    return proc(pid, "root")


def exists(pid: int) -> bool:
    return os.path.isdir(proc(pid))


def gone(pid: int, started: bool = True) -> ProcessError:
    """The error for a process that is not there: exited while being read (`started`), or never was."""
    if started:
        return ProcessExited(f"process {pid} exited while it was being read")
    return NoSuchProcess(f"no process {pid}: it does not exist, or has exited (see `ps -p {pid}`)")


def name(pid: int) -> str:
    try:
        with open(proc(pid, "comm"), encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "?"


def _uid(pid: int):
    try:
        return os.stat(proc(pid)).st_uid
    except OSError:
        return None


def ptrace_scope():
    """Yama's ptrace scope (0-3), or None where the kernel has no Yama."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def not_permitted(pid: int, what: str) -> NotPermitted:
    """Why reading process `pid` is refused, and what to do."""
    uid, me = _uid(pid), os.geteuid()
    if uid is not None and uid != me and me != 0:
        why = f"it belongs to user {uid} and this is user {me}: run as that user, or as root"
    else:
        scope = ptrace_scope()
        why = {1: "kernel.yama.ptrace_scope is 1 (only a parent may read its children): run as root, give this "
                  "program CAP_SYS_PTRACE, or `sysctl kernel.yama.ptrace_scope=0`",
               2: "kernel.yama.ptrace_scope is 2 (only CAP_SYS_PTRACE may read other processes): run as root or "
                  "give this program CAP_SYS_PTRACE",
               3: "kernel.yama.ptrace_scope is 3 (no process may be read): nothing but a reboot with another "
                  "setting allows it"}.get(scope, "the kernel refuses it (in a container: add CAP_SYS_PTRACE, e.g. "
                                                  "`docker run --cap-add SYS_PTRACE`)")
    return NotPermitted(f"not permitted to {what} of process {pid} ({name(pid)}): {why}")


def read_text(pid: int, *parts: str, limit: int = MAX_MAPS_BYTES, started: bool = False) -> str:
    """A /proc file of the process, as text; the process errors for a missing or refused one."""
    path = proc(pid, *parts)
    try:
        with open(path, "rb") as f:
            data = read_most(f, limit + 1)
    except FileNotFoundError:
        raise gone(pid, started) from None
    except PermissionError:
        raise not_permitted(pid, f"read /proc/{pid}/{'/'.join(parts)}") from None
    except OSError as e:
        if e.errno == errno.ESRCH:
            raise gone(pid, started) from None
        raise ProcessError(f"cannot read {path}: {e.strerror}") from None
    if len(data) > limit:
        raise ProcessError(f"{path} is larger than {limit} bytes")
    return data.decode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Mapping:
    """One line of /proc/PID/maps."""

    start: int
    end: int
    perms: str
    offset: int
    inode: int
    path: str

    @property
    def is_file(self) -> bool:
        return self.inode != 0 and self.path.startswith("/")


def maps(pid: int) -> list:
    """The process's mappings, in address order."""
    out = []
    for line in read_text(pid, "maps").splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5:
            continue
        start, _, end = parts[0].partition("-")
        path = parts[5] if len(parts) > 5 else ""
        if path.endswith(" (deleted)"):
            path = path[:-len(" (deleted)")]
        try:
            out.append(Mapping(int(start, 16), int(end, 16), parts[1], int(parts[2], 16), int(parts[4]), path))
        except ValueError:
            continue
    return out


def threads(pid: int) -> list:
    """The ids of the process's threads (its tasks), sorted."""
    try:
        return sorted(int(t) for t in os.listdir(proc(pid, "task")) if t.isdigit())
    except FileNotFoundError:
        raise gone(pid) from None
    except PermissionError:
        raise not_permitted(pid, "list the threads") from None


def open_mapped(pid: int, m: Mapping):
    """The file a mapping maps, opened for reading: through the process's root (the file it sees),
    else, when that is not the same file (replaced since, or deleted), through map_files."""
    path = root(pid) + m.path
    try:
        f = open(path, "rb")
        if os.fstat(f.fileno()).st_ino == m.inode:
            return f
        f.close()
    except OSError:
        pass
    try:
        return open(proc(pid, "map_files", f"{m.start:x}-{m.end:x}"), "rb")
    except FileNotFoundError:
        raise gone(pid) from None
    except PermissionError:
        raise not_permitted(pid, f"read the file {m.path} mapped") from None
    except OSError as e:
        raise ProcessError(f"cannot read {m.path}, which process {pid} maps: {e.strerror}") from None
