"""A process in a container of its own, as runc makes one: a new mount namespace whose root is a
directory of ours (bind mounts, then pivot_root), for the tests of reading a process through
`/proc/PID/root`.

`Container(root, binds, argv)` starts `argv` in it; run as a script, this file is what runs inside
`unshare --mount` before `argv`: it mounts, pivots, drops the old root and execs `argv`, so the
process keeps the pid `Container.pid`.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

MNT_DETACH = 2


def usable() -> str:
    """'' when this machine lets us make a mount namespace (root, unshare, pivot_root), else why not."""
    import shutil

    if os.geteuid() != 0:
        return "making a mount namespace and pivot_root need root"
    missing = [t for t in ("unshare", "pivot_root", "mount") if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed (util-linux)"
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True)
    return "" if probe.returncode == 0 else f"unshare --mount fails: {probe.stderr.strip()}"


class Container:
    """`argv` started inside `root`, with `binds` ({host directory: path inside}) mounted read-only
    and `writable` ones read-write; its first line of output is `self.ready`."""

    def __init__(self, root, binds: dict, argv: list, env: dict = None, writable: dict = None) -> None:
        spec = ",".join([f"{src}={dst}=ro" for src, dst in binds.items()] +
                        [f"{src}={dst}=rw" for src, dst in (writable or {}).items()])
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OFFSETS_"))}
        self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", sys.executable,
                                      __file__, str(root), spec, *argv], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**clean, **(env or {})})
        self.pid = self.proc.pid      # unshare, this script and env exec: the one process throughout
        self.ready = self.proc.stdout.readline()
        if not self.ready:
            err = self.proc.stderr.read()
            self.close()
            raise RuntimeError(f"the container did not start: {err[-2000:]}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()

    def __enter__(self) -> "Container":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def enter(root: str, spec: str, argv: list) -> None:
    """Inside the new mount namespace: bind the directories, make `root` the root, exec `argv`."""
    libc = ctypes.CDLL(None, use_errno=True)       # loaded before the old root (and its libc) goes
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    subprocess.run(["mount", "--bind", root, root], check=True)
    for pair in filter(None, spec.split(",")):
        src, dst, mode = pair.split("=")
        subprocess.run(["mount", "--bind", "-o", mode, src, root + dst], check=True)
    os.chdir(root)
    os.makedirs(".old-root", exist_ok=True)
    subprocess.run(["pivot_root", ".", ".old-root"], check=True)
    os.chroot(".")
    os.chdir("/")
    if libc.umount2(b"/.old-root", MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), "umount2 /.old-root")
    os.rmdir("/.old-root")
    os.execv(argv[0], argv)


if __name__ == "__main__":
    enter(sys.argv[1], sys.argv[2], sys.argv[3:])
