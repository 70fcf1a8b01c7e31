"""Run one translation unit's parse in a child process under a memory limit.

`#include "/dev/zero"`, or any unit that makes clang's memory grow without end, must cost one clear
line, not the machine: the child sets `RLIMIT_AS` (its address space at the start plus
`OFFSETS_UNIT_MEMORY_MB`, default 3072) before parsing; a child that runs out, crashes or is killed
is a `ScanError` naming the unit. The result comes back over a pipe from our own child.
"""
from __future__ import annotations

import os
import pickle
import signal

from ..errors import ScanError

DEFAULT_MB = 3072


def budget() -> int:
    """The bytes a unit's parse may add to its address space."""
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


def parse_limited(parse, unit, limit: int = None):
    """`parse(unit)` in a forked child whose address space may grow by `limit` bytes (`budget()`);
    its result, or its `ScanError`, or a `ScanError` saying how the child died."""
    import resource

    import tempfile

    limit = budget() if limit is None else limit
    said = tempfile.TemporaryFile()                     # the child's stderr (libclang's crash reports)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                        # the child: parse, send, exit
        code = 0
        try:
            os.close(read_end)
            os.dup2(said.fileno(), 2)
            cap = _address_space() + limit
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            try:
                message = ("ok", parse(unit))
            except ScanError as e:
                message = ("error", str(e))
            except MemoryError:
                message = ("memory", "")
            except Exception as e:                      # noqa: BLE001 - reported to the parent
                message = ("error", f"{unit.name}: {type(e).__name__}: {e}")
            data = pickle.dumps(message)
            with os.fdopen(write_end, "wb") as f:
                f.write(data)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as f:
            data = f.read()
    finally:
        _, status = os.waitpid(pid, 0)
        said.seek(0)
        lines = [ln.strip() for ln in said.read(4096).decode(errors="replace").splitlines() if ln.strip()]
        said.close()
    mb = limit // (1024 * 1024)
    clang = f" (libclang said: {lines[0]})" if lines else ""
    if data:
        kind, value = pickle.loads(data)
        if kind == "ok":
            return value
        if kind == "error":
            raise ScanError(value + clang)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        how = f"killed by {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else f"signal {sig}"
    else:
        how = f"exit status {os.WEXITSTATUS(status)}"
    raise ScanError(f"{unit.name}: the parser ran out of its {mb} MB memory limit or died ({how}){clang}; a "
                    f"unit that includes a huge or endless file (/dev/zero) ends here; raise "
                    f"OFFSETS_UNIT_MEMORY_MB if the unit is genuine")
