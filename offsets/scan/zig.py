"""zig, from PyPI's `ziglang` (`pip install ziglang`): the C library headers of targets no Debian
package has (mingw-w64's for Windows on arm64, Apple's libc for macOS, musl's), and the second compiler
that checks their tables (`python -m ziglang cc -target aarch64-windows-gnu`, `aarch64-macos-none`:
clang inside, with zig's own headers)."""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import BuildError
from ..layout.targets import ZIG_TARGETS

#: What `make tables` installs (Makefile): the version whose headers the tables were made with.
PACKAGE = "ziglang==0.13.0"
#: table triple -> zig's name of it, for each target zig checks
TARGETS = ZIG_TARGETS


def home() -> Path:
    """The ziglang package's directory (its `lib/` holds zig's headers); BuildError without it."""
    import importlib.util

    spec = importlib.util.find_spec("ziglang")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(f"zig is not installed: pip install '{PACKAGE}' (make tables installs it)")
    return Path(list(spec.submodule_search_locations)[0])


def windows_headers() -> Path:
    """mingw-w64's headers as zig ships them, for every Windows CPU."""
    d = home() / "lib" / "libc" / "include" / "any-windows-any"
    if not (d / "windows.h").is_file():
        raise BuildError(f"zig at {home()} has no mingw-w64 headers ({d}/windows.h)")
    return d


def macos_headers() -> Path:
    """Apple's C library headers (the macOS SDK's `usr/include`) as zig ships them, for both CPUs:
    `pthread_mutex_t` of 64 bytes, `pthread_key_t` of 8."""
    d = home() / "lib" / "libc" / "include" / "any-macos-any"
    if not (d / "pthread.h").is_file():
        raise BuildError(f"zig at {home()} has no macOS headers ({d}/pthread.h)")
    return d


#: zig's name of a CPU's family in its Linux header directories (`x86-linux-any`)
_LINUX_FAMILY = {"x86_64": "x86", "i686": "x86", "aarch64": "aarch64", "arm": "arm"}


def musl_headers(triple: str) -> tuple:
    """musl's headers for Linux triple `triple` (`x86_64-linux-musl`) as zig ships them, in the
    order zig's own compiler searches them: the target's, musl's generic ones, the kernel's."""
    cpu = triple.split("-", 1)[0]
    inc = home() / "lib" / "libc" / "include"
    dirs = (inc / f"{cpu}-linux-musl", inc / "generic-musl", inc / f"{_LINUX_FAMILY.get(cpu, cpu)}-linux-any",
            inc / "any-linux-any")
    if not (dirs[1] / "pthread.h").is_file() or not dirs[0].is_dir():
        raise BuildError(f"zig at {home()} has no musl headers for {triple} ({dirs[0]}, {dirs[1]}/pthread.h)")
    return dirs


def builtin_headers() -> Path:
    """zig's compiler headers (stddef.h, stdint.h, intrinsics): what its clang puts first."""
    return home() / "lib" / "include"


def command(triple: str) -> list[str]:
    """zig's C compiler for table triple `triple`, as a build's CC (`python -m ziglang cc -target ...`)."""
    home()
    return [sys.executable, "-m", "ziglang", "cc", "-target", TARGETS[triple]]


def cc(triple: str) -> list[str]:
    """The command line start of zig's C compiler for table triple `triple`. Without an optimization
    flag zig compiles in its Debug mode, which defines `_DEBUG` (Windows's pyconfig.h then defines
    `Py_DEBUG`): `-U_DEBUG` leaves that to the build's own defines, which come after. Its clang stops
    after 20 errors, where the checks read every one (a probe of which names are only tags)."""
    return command(triple) + ["-U_DEBUG", "-ferror-limit=0"]


def is_zig(cc) -> bool:
    """Whether command line start `cc` is zig's compiler (`cc`)."""
    return list(cc[1:4]) == ["-m", "ziglang", "cc"]


def syntax_only(cc, work: Path) -> list[str]:
    """What makes compiler `cc` check a unit: `-fsyntax-only`, but for zig, whose driver fails with
    `FileNotFound` after clang's `-fsyntax-only` succeeds, an object in `work` (given `-o /dev/null`,
    it writes one in the current directory instead)."""
    return ["-c", "-o", str(work / "syntax-only.o")] if is_zig(cc) else ["-fsyntax-only"]


def name(cc) -> str:
    """What a message calls compiler `cc`: `zig cc`, or its program."""
    return "zig cc" if is_zig(cc) else cc[0]
