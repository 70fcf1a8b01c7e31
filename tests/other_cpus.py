"""Debian's interpreters of the other CPUs tables are made for (32-bit ARM, ppc64el, s390x, riscv64),
unpacked by package name into one root each and run under qemu-user through that root's own
dynamic loader (usr-merged packages carry no /lib link, so the loader is named, not found).

`BUILDS` is every such table of data/matrix.yaml, read from it; `SAMPLE` the one per CPU that
`make test` checks (tests/test_other_cpus.py), the others are `make prove`'s
(tests/prove/test_other_cpus.py).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import missing_tool
from offsets.scan import debian, targets
from offsets.tools import matrix

REPO = Path(__file__).resolve().parent.parent
#: triple -> qemu-user's program for that CPU
QEMU = {"arm-linux-gnueabihf": "qemu-arm", "powerpc64le-linux-gnu": "qemu-ppc64le",
        "s390x-linux-gnu": "qemu-s390x", "riscv64-linux-gnu": "qemu-riscv64"}
#: The libraries the interpreter (3.15's links libzstd) and its ctypes (which the live check reads
#: memory with) load; the suite's current ones (their versions do not decide a layout of CPython's).
LIBS = ("libc6", "libgcc-s1", "libffi8", "zlib1g", "libexpat1", "libzstd1")


def _builds() -> list:
    out = []
    for e in matrix.matrix()["packaged"]:
        for config, triple in e["builds"]:
            if triple in QEMU:
                out.append((e["version"], triple, e))
    return out


#: (version, triple, matrix entry) of every table of another CPU's release build
BUILDS = _builds()
#: make test's sample: sid's 3.14 where the CPU has 3.14.10, else its newest
SAMPLE = {t: next((b for b in BUILDS if b[1] == t and b[0] == "3.14.10"), None) or
          [b for b in BUILDS if b[1] == t][-1] for t in QEMU}


def build_id(b) -> str:
    return f"{b[0]}-{b[1]}"


def table_name(b) -> str:
    version, triple, e = b
    return matrix.table_file(version, "release", triple, f"{e['vendor']} {e['package_version']}")[:-len(".yaml")]


def root(b) -> Path:
    """The interpreter's packages (exact version) with the C library, unpacked together."""
    version, triple, e = b
    minor = version.rsplit(".", 1)[0]
    t = targets.target(triple)
    names = [f"{n}={e['package_version']}" for n in
             (f"python{minor}-minimal", f"libpython{minor}-minimal", f"libpython{minor}-stdlib", f"libpython{minor}")]
    return debian.unpacked(names + list(LIBS), t.deb_arch, e["suite"])


def interpreter(b) -> tuple[list, Path]:
    """(command that runs the interpreter under qemu, its executable in the root)."""
    version, triple, _ = b
    qemu = QEMU[triple]
    if shutil.which(qemu) is None:
        missing_tool(qemu, "make test installs qemu-user")
    r = root(b)
    multiarch = targets.target(triple).multiarch
    # sid's packages are usr-merged; bookworm's libc6 keeps its files in /lib (the loader in /lib or
    # /lib64 itself, the libraries in /lib/MULTIARCH)
    libdirs = [d for d in (r / "usr/lib" / multiarch, r / "lib" / multiarch) if d.is_dir()]
    loaders = [p for d in libdirs + [r / "lib", r / "lib64"] if d.is_dir() for p in sorted(d.glob("ld*.so*"))
               if p.name.startswith(("ld-linux", "ld64"))]
    if not loaders:
        raise AssertionError(f"no dynamic loader in {r} (its libc6 for {triple})")
    exe = r / "usr/bin" / f"python{version.rsplit('.', 1)[0]}"
    return [qemu, str(loaders[0]), "--library-path", ":".join(map(str, libdirs)), str(exe)], exe


def run(b, code: str, *args: str, timeout: int = 900) -> str:
    """`code` run in that interpreter under qemu with the checkout importable; its stdout."""
    cmd, exe = interpreter(b)
    env = {k: v for k, v in os.environ.items() if k not in ("OFFSETS_TABLES", "OFFSETS_STRICT", "PYTHONPATH")}
    env.update(PYTHONHOME=str(exe.parent.parent), PYTHONPATH=str(REPO), OFFSETS_AUTOSCAN="0")
    proc = subprocess.run([*cmd, "-c", code, *args], capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode:
        raise AssertionError(f"{exe} under {cmd[0]} failed (exit {proc.returncode}):\n{proc.stderr.strip()[-3000:]}")
    return proc.stdout


#: What the interpreter says of itself: the table the runtime chose and how, its live check, and a
#: field against the interpreter's own record of its layout
LIVE = r"""
import json, platform, sys
from offsets import runtime
m = runtime.build()
check = runtime.live_check()
me = runtime.running_identity()
print(json.dumps({"machine": platform.machine(), "byteorder": sys.byteorder, "version": platform.python_version(),
                  "table": m.table, "kind": m.kind, "detail": m.detail, "target": me.triple,
                  "tuple_items": runtime.get("PyTupleObject.ob_item"), "truth": tuple.__basicsize__,
                  "passed": len(check.passed), "failed": check.failed, "ok": check.ok,
                  "proven": len(check.proven)}))
"""
