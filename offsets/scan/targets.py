"""Targets: the CPUs tables are made for, and where each one's C library headers come from."""
from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError


@dataclass(frozen=True)
class TargetInfo:
    """A supported target: clang's triple, Debian's multiarch directory and architecture name."""

    triple: str
    multiarch: str
    deb_arch: str
    pointer_size: int
    cpu_macro: str  # what Debian's forwarding pyconfig.h tests to pick this target
    elf_machine: str  # e_machine of its ELF binaries, as pyelftools names it


TARGETS = {t.triple: t for t in (
    TargetInfo("x86_64-linux-gnu", "x86_64-linux-gnu", "amd64", 8, "__x86_64__", "EM_X86_64"),
    TargetInfo("aarch64-linux-gnu", "aarch64-linux-gnu", "arm64", 8, "__aarch64__", "EM_AARCH64"),
    TargetInfo("i686-linux-gnu", "i386-linux-gnu", "i386", 4, "__i386__", "EM_386"),
)}

_ALIASES = {"x86_64": "x86_64-linux-gnu", "amd64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu",
            "arm64": "aarch64-linux-gnu", "i686": "i686-linux-gnu", "i386": "i686-linux-gnu",
            "x86_64-pc-linux-gnu": "x86_64-linux-gnu", "i386-linux-gnu": "i686-linux-gnu",
            "aarch64-unknown-linux-gnu": "aarch64-linux-gnu"}


def target(name: str) -> TargetInfo:
    """The target called `name` (a triple, a Debian architecture or a CPU name)."""
    triple = _ALIASES.get(name, name)
    if triple not in TARGETS:
        raise BuildError(f"unknown target {name!r}; supported: {', '.join(TARGETS)}")
    return TARGETS[triple]


def host() -> TargetInfo:
    """The target of the machine this runs on."""
    machine = platform.machine()
    try:
        return target(machine)
    except BuildError:
        raise BuildError(f"this machine ({machine}) is not a supported target; pass --target") from None


def by_multiarch(name: str):
    """The target whose Debian multiarch directory is `name`, or None."""
    return next((t for t in TARGETS.values() if t.multiarch == name), None)


def system_includes(t: TargetInfo, sysroot: Path | None = None) -> tuple[Path, ...]:
    """The C library include directories for target `t`: the host's own, or an unpacked sysroot.

    For another CPU without `sysroot`, Debian's `libc6-dev` and `linux-libc-dev` of that
    architecture are fetched into the cache.
    """
    if sysroot is None:
        if t == host() and Path("/usr/include", t.multiarch).is_dir():
            sysroot = Path("/")
        else:
            from . import debian

            sysroot = debian.unpacked(["libc6-dev", "linux-libc-dev"], arch=t.deb_arch, suite="bookworm")
    dirs = (sysroot / "usr/include" / t.multiarch, sysroot / "usr/include")
    if not (dirs[0] / "bits").is_dir():
        raise BuildError(f"no C library headers for {t.triple} under {sysroot} "
                         f"(expected {dirs[0]}/bits; install libc6-dev:{t.deb_arch} or pass --sysroot)")
    return dirs
