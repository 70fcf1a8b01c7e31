"""Debian's interpreters of the tables made from Debian's release builds, unpacked by package name
with their C library into one root each (`$OFFSETS_CACHE`) and run here through that library's own
dynamic loader (usr-merged packages carry no /lib link, so the loader is named, not found): natively
for x86_64 and i686, under qemu-user for the other CPUs (aarch64, 32-bit ARM, ppc64el, s390x, riscv64).

`builds()` is every such table of data/matrix.yaml (by default of the CPUs qemu runs that no
other table covers: `QEMU`), as (version, triple, matrix entry); `run(b, code)` runs code in one
with this checkout importable. The tests (tests/other_cpus.py) and the live records of those tables
(tools/debian_records.py) use them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from ..errors import BuildError

CHECKOUT = Path(__file__).resolve().parents[2]
#: triple -> qemu-user's program for that CPU
QEMU = {"arm-linux-gnueabihf": "qemu-arm", "powerpc64le-linux-gnu": "qemu-ppc64le",
        "s390x-linux-gnu": "qemu-s390x", "riscv64-linux-gnu": "qemu-riscv64"}
#: triple -> the qemu-user program that runs it here (None: this machine runs it natively)
RUNNER = dict(QEMU, **{"aarch64-linux-gnu": "qemu-aarch64", "x86_64-linux-gnu": None, "i686-linux-gnu": None})
#: The libraries the interpreter (3.15's links libzstd) and its ctypes (which the live check reads
#: memory with) load; the suite's current ones (their versions do not decide a layout of CPython's).
LIBS = ("libc6", "libgcc-s1", "libffi8", "zlib1g", "libexpat1", "libzstd1")
#: What a suite calls a library of LIBS otherwise (bullseye's libffi is libffi7)
LIB_NAMES = {"bullseye": {"libffi8": "libffi7"}}


#: The packages of a debug interpreter besides the release one's (scan/debian.py BINARIES)
DEBUG_PACKAGES = ("python{minor}-dbg", "libpython{minor}-dbg")


def builds(triples=QEMU, config: str = "release") -> list:
    """(version, triple, matrix entry) of every table of a Debian build of `config` (release, or
    debug) for `triples`."""
    from . import matrix

    return [(e["version"], triple, e) for e in matrix.matrix()["packaged"]
            for c, triple in e["builds"] if triple in triples and c == config]


def table_name(b, config: str = "release") -> str:
    from . import matrix

    version, triple, e = b
    return matrix.table_file(version, config, triple, f"{e['vendor']} {e['package_version']}")[:-len(".yaml")]


def root(b, config: str = "release") -> Path:
    """The interpreter's packages (exact version; with its debug interpreter's for `debug`) with the
    C library, unpacked together."""
    from ..scan import debian, targets

    version, triple, e = b
    minor = version.rsplit(".", 1)[0]
    names = [f"{n}={e['package_version']}" for n in
             (f"python{minor}-minimal", f"libpython{minor}-minimal", f"libpython{minor}-stdlib", f"libpython{minor}",
              *(p.format(minor=minor) for p in (DEBUG_PACKAGES if config == "debug" else ())))]
    libs = [LIB_NAMES.get(e["suite"], {}).get(n, n) for n in LIBS]
    return debian.unpacked(names + libs, targets.target(triple).deb_arch, e["suite"])


def interpreter(b, config: str = "release") -> tuple[list, Path]:
    """(command that runs the interpreter (`python3.Xd` for debug), under qemu for another CPU, its
    executable in the root); `BuildError` without that CPU's qemu-user program."""
    from ..scan import targets

    version, triple, _ = b
    qemu = RUNNER[triple]
    if qemu is not None and shutil.which(qemu) is None:
        raise BuildError(f"no {qemu}: `apt-get install qemu-user` (make test-venv installs it)")
    r = root(b, config)
    multiarch = targets.target(triple).multiarch
    # sid's packages are usr-merged; bookworm's libc6 keeps its files in /lib (the loader in /lib or
    # /lib64 itself, the libraries in /lib/MULTIARCH)
    libdirs = [d for d in (r / "usr/lib" / multiarch, r / "lib" / multiarch) if d.is_dir()]
    loaders = [p for d in libdirs + [r / "lib", r / "lib64"] if d.is_dir() for p in sorted(d.glob("ld*.so*"))
               if p.name.startswith(("ld-linux", "ld64"))]
    if not loaders:
        raise BuildError(f"no dynamic loader in {r} (its libc6 for {triple})")
    exe = r / "usr/bin" / f"python{version.rsplit('.', 1)[0]}{'d' if config == 'debug' else ''}"
    return [*([qemu] if qemu else []), str(loaders[0]), "--library-path", ":".join(map(str, libdirs)), str(exe)], exe


def run(b, code: str, *args: str, stdin: Optional[str] = None, timeout: int = 900, config: str = "release") -> str:
    """`code` run in that interpreter of `config` (under qemu for another CPU) with the checkout
    importable (`stdin` its standard input); its stdout. `BuildError` with the end of its standard
    error when it fails."""
    from .. import children

    cmd, exe = interpreter(b, config)
    env = {k: v for k, v in os.environ.items() if k not in ("OFFSETS_TABLES", "OFFSETS_STRICT", "PYTHONPATH")}
    env.update(PYTHONHOME=str(exe.parent.parent), PYTHONPATH=str(CHECKOUT), OFFSETS_AUTOSCAN="0")
    how = " ".join(Path(c).name for c in cmd[:2])          # qemu-arm ld-linux-armhf.so.3, or the loader
    with tempfile.TemporaryFile("w+", encoding="utf-8") as given:
        given.write(stdin or "")
        given.seek(0)
        try:
            proc = children.run([*cmd, "-c", code, *args], f"{exe.name} ({how})", BuildError, timeout=timeout,
                                env=env, stdin=given)
        except subprocess.TimeoutExpired:
            raise BuildError(f"{exe} ({how}) did not finish in {timeout} s") from None
    if proc.returncode:
        raise BuildError(f"{exe} ({how}) failed (exit {proc.returncode}):\n{proc.stderr.strip()[-3000:]}")
    return proc.stdout
