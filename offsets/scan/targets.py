"""Targets: the CPUs tables are made for, and where each one's C library headers come from."""
from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from pathlib import Path

from . import debian, zig
from ..errors import BuildError
from ..layout import identity, targets as abi_table


@dataclass(frozen=True)
class TargetInfo:
    """A target tables are made for: clang's triple, where Debian keeps its files, and how this
    machine's gcc compiles for it; its layout facts (pointer size, the compiler's macro, the ELF
    machine) are the ABI table's (layout/targets.py)."""

    triple: str
    multiarch: str
    deb_arch: str
    #: (host triple, flag): the host's own gcc compiles for this target with that flag
    host_gcc_flag: tuple = ()
    #: what clang needs besides `-target` to parse CPython's headers for it (Windows: see `WINDOWS`)
    clang_args: tuple = ()

    @property
    def system(self) -> str:
        """`linux`, `windows` or `macos` (layout/targets.py `system`)."""
        return abi_table.system(self.triple)

    @property
    def abi(self) -> abi_table.Abi:
        return abi_table.abi(self.triple)

    @property
    def pointer_size(self) -> int:
        return abi_table.pointer_size(self.triple)

    @property
    def cpu_macro(self) -> str:
        """What Debian's forwarding pyconfig.h tests to pick this target."""
        return self.abi.cpu_macro

    @property
    def elf_machine(self) -> str:
        """e_machine of its ELF binaries, as pyelftools names it."""
        return self.abi.elf_machine


_DEBIAN = {"x86_64-linux-gnu": ("x86_64-linux-gnu", "amd64"), "aarch64-linux-gnu": ("aarch64-linux-gnu", "arm64"),
           "i686-linux-gnu": ("i386-linux-gnu", "i386"), "arm-linux-gnueabihf": ("arm-linux-gnueabihf", "armhf"),
           "powerpc64le-linux-gnu": ("powerpc64le-linux-gnu", "ppc64el"),
           "s390x-linux-gnu": ("s390x-linux-gnu", "s390x"), "riscv64-linux-gnu": ("riscv64-linux-gnu", "riscv64"),
           # Windows: the multiarch word is mingw-w64's name of the target; its headers are arch: all
           "x86_64-pc-windows-msvc": ("x86_64-w64-mingw32", "amd64"),
           # Windows on arm64: no Debian package has its mingw-w64 headers; zig's are used (scan/zig.py)
           "aarch64-pc-windows-msvc": ("aarch64-w64-mingw32", "arm64"),
           # musl: zig's headers of it (scan/zig.py); the package is Debian's name of the CPU
           "x86_64-linux-musl": ("x86_64-linux-musl", "amd64"), "aarch64-linux-musl": ("aarch64-linux-musl", "arm64"),
           # macOS: no Debian package has Apple's C library headers; zig's are used (scan/zig.py)
           "aarch64-apple-darwin": ("aarch64-apple-darwin", "arm64"),
           "x86_64-apple-darwin": ("x86_64-apple-darwin", "amd64")}
_HOST_GCC_FLAG = {"i686-linux-gnu": ("x86_64-linux-gnu", "-m32")}
#: Debian's suite whose libc6-dev and linux-libc-dev give another CPU's C library headers: bookworm,
#: or trixie for riscv64 (the first release that has it)
_LIBC_SUITE = {"riscv64-linux-gnu": "trixie"}
#: Windows's C library headers are mingw-w64's (Debian's packages, fetched by name); clang's MSVC
#: target (MSVC's layout rules, `long` of 4 bytes, `_MSC_VER`) reads them as GNU C headers
#: (`-fgnuc-version`), and `_PID_T_` keeps them from declaring the `pid_t` CPython's
#: PC/pyconfig.h declares itself; `_UCRT`: python.org's builds link the Universal CRT (without it,
#: mingw-w64's headers declare msvcrt.dll's data with an import macro only GNU targets define). mingw-w64's directories come before clang's own (units.py): clang's
#: MSVC intrin.h clashes with mingw-w64's other headers.
WINDOWS = ("-fgnuc-version=4.2.1", "-D_PID_T_", "-D_UCRT")
#: macOS: the oldest system python.org's universal2 framework (3.9-3.12) runs on, per CPU: without
#: one, clang's Darwin target has no thread-local storage, which CPython's headers use.
MACOS = {"aarch64-apple-darwin": ("-mmacosx-version-min=11.0",),
         "x86_64-apple-darwin": ("-mmacosx-version-min=10.9",)}
MINGW_PACKAGES = ("mingw-w64-x86-64-dev", "mingw-w64-common")
MINGW_SUITE = "bookworm"
TARGETS = {t: TargetInfo(t, *_DEBIAN[t], _HOST_GCC_FLAG.get(t, ()),
                         WINDOWS if abi_table.system(t) == "windows" else MACOS.get(t, ()))
           for t in abi_table.TABLE_TARGETS}

_ALIASES = {"x86_64": "x86_64-linux-gnu", "amd64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu",
            "arm64": "aarch64-linux-gnu", "i686": "i686-linux-gnu", "i386": "i686-linux-gnu",
            "x86_64-pc-linux-gnu": "x86_64-linux-gnu", "i386-linux-gnu": "i686-linux-gnu",
            "aarch64-unknown-linux-gnu": "aarch64-linux-gnu", "armhf": "arm-linux-gnueabihf",
            "armv7l": "arm-linux-gnueabihf", "ppc64el": "powerpc64le-linux-gnu", "ppc64le": "powerpc64le-linux-gnu",
            "s390x": "s390x-linux-gnu", "riscv64": "riscv64-linux-gnu", "x86_64-windows-msvc": "x86_64-pc-windows-msvc",
            "win_amd64": "x86_64-pc-windows-msvc", "aarch64-windows-msvc": "aarch64-pc-windows-msvc",
            "win_arm64": "aarch64-pc-windows-msvc", "macosx_arm64": "aarch64-apple-darwin",
            "arm64-apple-darwin": "aarch64-apple-darwin", "macosx_x86_64": "x86_64-apple-darwin"}


def target(name: str) -> TargetInfo:
    """The target called `name` (a triple, a Debian architecture or a CPU name)."""
    triple = _ALIASES.get(name, name)
    if triple not in TARGETS:
        raise BuildError(f"unknown target {name!r}; supported: {', '.join(TARGETS)}")
    return TARGETS[triple]


def host() -> TargetInfo:
    """The target of the machine this runs on."""
    machine = platform.machine()
    if sys.platform == "win32" and machine.lower() in ("amd64", "x86_64"):
        return TARGETS["x86_64-pc-windows-msvc"]
    if sys.platform == "darwin":        # `arm64` there is macOS's, never Linux's aarch64
        triple = identity.MACOS_TRIPLES.get(machine)
        if triple is None:
            raise BuildError(f"this Mac's CPU ({machine}) is not a supported target")
        return TARGETS[triple]
    try:
        return target(machine)
    except BuildError:
        raise BuildError(f"this machine ({machine}) is not a supported target; pass --target") from None


def by_multiarch(name: str):
    """The Linux target whose Debian multiarch directory is `name`, or None."""
    return next((t for t in TARGETS.values() if t.multiarch == name and t.system == "linux"), None)


def system_includes(t: TargetInfo, sysroot: Path | None = None) -> tuple[Path, ...]:
    """The C library include directories for target `t`: the host's own, or an unpacked sysroot.

    For another CPU without `sysroot`, Debian's `libc6-dev` and `linux-libc-dev` of that
    architecture are fetched into the cache.
    """
    if t.system == "macos":
        return (sysroot,) if sysroot is not None else (zig.macos_headers(),)
    if abi_table.platform(t.triple) == "Linux (musl)" and sysroot is None:
        return zig.musl_headers(t.triple)
    if t.system == "windows" and t.triple in zig.TARGETS and sysroot is None:
        return (zig.windows_headers(),)
    if t.system == "windows":
        root = sysroot or debian.unpacked(list(MINGW_PACKAGES), arch=t.deb_arch, suite=MINGW_SUITE)
        dirs = (root / "usr" / t.multiarch / "include", root / "usr/share/mingw-w64/include")
        if not (dirs[1] / "windows.h").is_file():
            raise BuildError(f"no mingw-w64 headers for {t.triple} under {root} (expected {dirs[1]}/windows.h)")
        return dirs
    if sysroot is None:
        if t == host() and Path("/usr/include", t.multiarch).is_dir():
            sysroot = Path("/")
        else:
            sysroot = debian.unpacked(["libc6-dev", "linux-libc-dev"], arch=t.deb_arch,
                                     suite=_LIBC_SUITE.get(t.triple, "bookworm"))
    dirs = (sysroot / "usr/include" / t.multiarch, sysroot / "usr/include")
    if not (dirs[0] / "bits").is_dir():
        raise BuildError(f"no C library headers for {t.triple} under {sysroot} "
                         f"(expected {dirs[0]}/bits; install libc6-dev:{t.deb_arch} or pass --sysroot)")
    return dirs
