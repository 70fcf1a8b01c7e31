"""Real CPython builds no table ships, made runnable from the cache (for `make prove`).

- Debian sid's own interpreters (`sid_python`): the python/libpython packages of one minor with
  the C library and the few libraries they load, all at pinned versions, unpacked by package name
  into one root (`offsets/scan/debian.py`). sid's libc is newer than this machine's, so the interpreter
  runs through that libc's own loader; a small wrapper script in the root does that, so the
  interpreter is one executable path (`offsets scan --python` runs it to describe itself).
- Upstream CPython compiled from the pristine orig tarball (`upstream_python`), by
  `scripts/build-cpython`.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from offsets.scan import debian
from offsets.errors import FetchError

REPO = Path(__file__).resolve().parents[2]
MULTIARCH = "x86_64-linux-gnu"

#: sid's interpreter of each minor, pinned: a new upload must be a deliberate change here.
SID_PYTHON = {"3.13": "3.13.18-1", "3.14": "3.14.10-1", "3.15": "3.15.2-1"}

#: The libraries those interpreters load (libc's loader included), pinned likewise.
SID_LIBS = {
    "libc6": "2.43-7", "libgcc-s1": "16.2.0-4", "libffi8": "3.8.0-2",
    "zlib1g": "1:1.3.dfsg+really1.3.2-4", "libexpat1": "2.9.0-1", "libzstd1": "1.5.7+dfsg-4",
    "liblzma5": "5.8.4-1", "libbz2-1.0": "1.0.8-6+b2", "libssl3t64": "3.6.5-1",
    "libuuid1": "2.42.4-1", "libsqlite3-0": "3.53.4-2",
}

#: What `scripts/build-cpython` builds: upstream 3.13.15, each config.
UPSTREAM_VERSION = "3.13.15"

_WRAPPER = """#!/bin/sh
# Debian sid's python{minor}, run through sid's own libc loader (written by tests/prove/realbuilds.py)
root=$(dirname "$(readlink -f "$0")")
PYTHONHOME="$root/usr" exec "$root/usr/lib/{multiarch}/ld-linux-x86-64.so.2" --library-path "$root/usr/lib/{multiarch}" \\
  "$root/usr/bin/python{minor}" "$@"
"""


def sid_packages(minor: str) -> list[str]:
    """`name=version` of every package sid's python`minor` root is unpacked from."""
    if minor not in SID_PYTHON:
        raise FetchError(f"no pinned sid interpreter for {minor}; known: {', '.join(SID_PYTHON)}")
    v = SID_PYTHON[minor]
    names = [f"python{minor}", f"python{minor}-minimal", f"libpython{minor}", f"libpython{minor}-minimal",
             f"libpython{minor}-stdlib", f"libpython{minor}-dev"]
    return [f"{n}={v}" for n in names] + [f"{n}={lv}" for n, lv in SID_LIBS.items()]


def sid_root(minor: str) -> Path:
    """The unpacked root of sid's python`minor` (downloaded on first use; FetchError if sid dropped
    one of the pinned versions)."""
    try:
        return debian.unpacked(sid_packages(minor), "amd64", "sid")
    except FetchError as e:
        raise FetchError(f"{e} (sid may have dropped a pinned version: pin the current one in SID_PYTHON/SID_LIBS "
                         f"of tests/prove/realbuilds.py, and update the expected figures)") from None


def sid_debug_root(minor: str) -> Path:
    """The unpacked root of sid's python`minor` with its debug interpreter (`python{minor}d`, from
    python`minor`-dbg and libpython`minor`-dbg at the same pinned version)."""
    v = SID_PYTHON[minor]
    try:
        return debian.unpacked([f"python{minor}-dbg={v}", f"libpython{minor}-dbg={v}", *sid_packages(minor)],
                               "amd64", "sid")
    except FetchError as e:
        raise FetchError(f"{e} (sid may have dropped a pinned version: pin the current one in SID_PYTHON/SID_LIBS "
                         f"of tests/prove/realbuilds.py)") from None


def sid_python(minor: str, debug: bool = False) -> Path:
    """An executable that runs sid's python`minor` (`debug`: python`minor`d, in `sid_debug_root`), a
    wrapper script in its root."""
    root = sid_debug_root(minor) if debug else sid_root(minor)
    name = minor + ("d" if debug else "")
    exe = root / f"python{name}"
    text = _WRAPPER.format(minor=name, multiarch=MULTIARCH)
    if not exe.is_file() or exe.read_text() != text:
        tmp = exe.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        os.replace(tmp, exe)
    return exe


def contained_sid(name: str, tmp: Path, depth: int = 300):
    """sid's python`name` (`3.X`, or `3.Xd` the debug one) parked (parked_target.Parked) as a container runs it: in a mount namespace
    whose root holds sid's `usr` and `etc` (tests/process_container.py), `/usr/bin/python{name}`
    started natively by sid's own loader, not through one given on the command line."""
    from parked_target import PARKED, Parked
    from process_container import Container, usable

    why = usable()
    assert not why, f"a container for sid's python{name}: {why}"
    minor = name.rstrip("d")
    sid = sid_debug_root(minor) if name.endswith("d") else sid_root(minor)
    root, out = tmp / f"sid-{name}-root", tmp / f"sid-{name}-out"
    for d in ("usr", "etc", "fixtures", "out", "tmp"):
        (root / d).mkdir(parents=True)
    for merged in ("bin", "lib", "lib64", "sbin"):
        os.symlink(f"usr/{merged}", root / merged)
    out.mkdir()
    c = Container(root, {str(sid / "usr"): "/usr", str(sid / "etc"): "/etc", str(PARKED.parent): "/fixtures"},
                  [f"/usr/bin/python{name}", f"/fixtures/{PARKED.name}", "/out/record.json", str(depth)],
                  writable={str(out): "/out"})
    return Parked.started(c.proc, c.ready, out / "record.json", f"sid's python{name} in a container")


def upstream_prefix(config: str, version: str = UPSTREAM_VERSION) -> Path:
    """The install prefix of upstream CPython `version` built as `config` (built on first use)."""
    proc = subprocess.run([str(REPO / "scripts" / "build-cpython"), version, config],
                          stdout=subprocess.PIPE, text=True)
    if proc.returncode:
        raise RuntimeError(f"scripts/build-cpython {version} {config} failed (exit {proc.returncode}); see its "
                           f"messages above")
    return Path(proc.stdout.strip().splitlines()[-1])


def upstream_python(config: str, version: str = UPSTREAM_VERSION) -> Path:
    """bin/python3.X[t] of upstream CPython `version` built as `config`."""
    minor = version.rsplit(".", 1)[0]
    return upstream_prefix(config, version) / "bin" / f"python{minor}{'t' if config == 'free-threaded' else ''}"


def interpreter(build: str) -> Path:
    """The interpreter named `sid-3.X` or `sid-3.Xd` (sid_python) or `upstream-VERSION-CONFIG` (upstream_python)."""
    if build.startswith("sid-"):
        minor = build[len("sid-"):]
        return sid_python(minor.rstrip("d"), debug=minor.endswith("d"))
    kind, version, config = build.split("-", 2)
    if kind != "upstream":
        raise ValueError(f"unknown build {build!r}: want sid-3.X or upstream-VERSION-CONFIG")
    return upstream_python(config, version)


def clean_env() -> dict:
    """This process's environment without the variables that steer offsets' choice of table."""
    return {k: v for k, v in os.environ.items() if k not in ("OFFSETS_TABLES", "OFFSETS_STRICT", "PYTHONPATH")}


def run_in(python: Path, code: str, *args: str, env: dict | None = None, stdin: str | None = None,
           timeout: int = 600, cwd: Path | None = None) -> str:
    """Run `code` (with `args`, and `stdin`, in `cwd`) in interpreter `python` with the checkout
    importable (`env` may name another PYTHONPATH); its stdout, or an AssertionError with its stderr."""
    full = {**clean_env(), "PYTHONPATH": str(REPO), **(env or {})}
    proc = subprocess.run([str(python), "-c", code, *args], input=stdin, capture_output=True, text=True, env=full,
                          timeout=timeout, cwd=cwd)
    if proc.returncode:
        raise AssertionError(f"{python} failed (exit {proc.returncode}):\n{proc.stderr.strip()[-3000:]}")
    return proc.stdout


if __name__ == "__main__":   # `make prove` fetches sid's interpreters while CPython compiles
    for m in sorted(SID_PYTHON):
        print(sid_python(m))
    for m in ("3.13", "3.14"):    # the debug ones of test_presite.py
        print(sid_debug_root(m))
