"""Reading another process's memory: `process_vm_readv(2)`, falling back to `/proc/PID/mem` where the
system call is missing or filtered (some sandboxes), never writing and never stopping the process.

A read is all or nothing: an address the process has not mapped is a `RemoteReadError`, a
process that has gone is `ProcessExited`, a refusal is `NotPermitted` (procfs.py says why).
"""
from __future__ import annotations

import ctypes
import errno
import os

from ..errors import RemoteReadError
from . import procfs

#: The largest single read (a frame, a string, a line table: far less).
MAX_READ = 16 << 20


class _IoVec(ctypes.Structure):
    """struct iovec of <sys/uio.h>, the system call's own argument."""

    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


def _process_vm_readv():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.process_vm_readv
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                   ctypes.c_ulong)
    fn.restype = ctypes.c_ssize_t
    return fn


class Memory:
    """The memory of process `pid`. `byteorder` and `pointer_size` are the target's (its ELF's)."""

    def __init__(self, pid: int, byteorder: str = "little", pointer_size: int = 8) -> None:
        self.pid = procfs.check_pid(pid)
        self.byteorder, self.pointer_size = byteorder, pointer_size
        self._vm = _process_vm_readv()
        self._mem_fd = None
        self.reads = 0

    def close(self) -> None:
        if self._mem_fd is not None:
            os.close(self._mem_fd)
            self._mem_fd = None

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def read(self, address: int, size: int) -> bytes:
        """`size` bytes at `address` of the process."""
        if size == 0:
            return b""
        if not (0 < address and 0 < size <= MAX_READ and address + size <= 1 << 64):
            raise RemoteReadError(f"process {self.pid}: {size} bytes at {address:#x} is no readable range")
        self.reads += 1
        if self._vm is not None:
            buf = ctypes.create_string_buffer(size)
            local = _IoVec(ctypes.addressof(buf), size)
            remote = _IoVec(address, size)
            got = self._vm(self.pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
            if got == size:
                return buf.raw
            err = ctypes.get_errno() if got < 0 else errno.EFAULT
            if err == errno.ESRCH:
                raise procfs.gone(self.pid)
            if err not in (errno.ENOSYS, errno.EPERM, errno.EACCES):
                raise self._fault(address, size)
            self._vm = None       # refused or filtered: /proc/PID/mem from now on (it says why if refused too)
        return self._read_mem(address, size)

    def _read_mem(self, address: int, size: int) -> bytes:
        if self._mem_fd is None:
            try:
                self._mem_fd = os.open(procfs.proc(self.pid, "mem"), os.O_RDONLY)
            except FileNotFoundError:
                raise procfs.gone(self.pid) from None
            except PermissionError:
                raise procfs.not_permitted(self.pid, "read the memory") from None
        try:
            data = os.pread(self._mem_fd, size, address)
        except OSError as e:
            if e.errno in (errno.EPERM, errno.EACCES):
                raise procfs.not_permitted(self.pid, "read the memory") from None
            if e.errno == errno.ESRCH:
                raise procfs.gone(self.pid) from None
            raise self._fault(address, size) from None
        if len(data) != size:
            raise self._fault(address, size)
        return data

    def _fault(self, address: int, size: int):
        if not procfs.exists(self.pid):
            return procfs.gone(self.pid)
        return RemoteReadError(f"process {self.pid}: cannot read {size} bytes at {address:#x} (not mapped: the "
                               f"process changed while being read, or the table does not describe it)")

    # ------------------------------------------------------------------ typed reads
    def uint(self, address: int, size: int) -> int:
        return int.from_bytes(self.read(address, size), self.byteorder)

    def sint(self, address: int, size: int) -> int:
        return int.from_bytes(self.read(address, size), self.byteorder, signed=True)

    def pointer(self, address: int) -> int:
        return self.uint(address, self.pointer_size)

    def cstring(self, address: int, limit: int = 1024) -> bytes:
        """The NUL-terminated bytes at `address` (at most `limit`), read in small pieces that stay
        within the pages that hold them."""
        out = b""
        while len(out) < limit:
            at = address + len(out)
            chunk = self.read(at, min(64 - at % 64, limit - len(out)))
            if b"\0" in chunk:
                return out + chunk[:chunk.index(b"\0")]
            out += chunk
        return out
