"""Targets: what a triple's CPU means for a layout, in one table that the model's rules
(sanity.py), the C header emitter (c_header.py), the scanner (scan/targets.py), the DWARF reader
and the ELF reader (remote/elf.py) read.

A CPU (the first word of a triple) has a pointer size, the compiler's predefined macro for it, its
ELF e_machine, and the largest alignment its ABI gives a scalar member of a struct (`scalar_align`;
None where no rule here is checked against a compiler, so nothing is assumed):
- i386 System V ABI: 8-byte types (double, long long) align to 4 in a struct (gcc's `_Alignof` says 4);
- 32-bit ARM EABI (AAPCS): 8-byte types align to 8;
- x86_64 System V and AArch64 (AAPCS64): every scalar to its size, up to 16 (long double, __int128);
- POWER ELFv2 (ppc64el) and RISC-V LP64D: the same, up to 16;
- s390x (z/Architecture ELF ABI): up to 8 (its 16-byte long double and __int128 align to 8).
A smaller scalar aligns to its size. s390x is big-endian (`big_endian`): a bitfield's bits are
numbered from the most significant end of its storage unit (model.Field.bitfield). An ILP32 ABI on a 64-bit CPU says so in the triple
(`x86_64-linux-gnux32`, `aarch64-linux-gnu_ilp32`): 4-byte pointers. Tests check each row against
gcc (tests/test_targets.py).
"""
from __future__ import annotations

#: The triples tables are made for (scan/targets.py adds where their C library comes from): Linux's,
#: whose binaries are ELF, Windows's (clang's MSVC target: `long` is 4 bytes there), whose are PE,
#: and macOS's (clang's Darwin target over zig's copy of Apple's libc headers), whose are Mach-O.
ELF_TARGETS = ("x86_64-linux-gnu", "aarch64-linux-gnu", "i686-linux-gnu", "arm-linux-gnueabihf",
               "powerpc64le-linux-gnu", "s390x-linux-gnu", "riscv64-linux-gnu")
#: Linux with musl (Alpine's, Docker's `-alpine` images): ELF too, whose CPU says nothing of its C
#: library (layout/identity.py `with_c_library` tells them apart), so not among `ELF_TARGETS`
MUSL_TARGETS = ("x86_64-linux-musl", "aarch64-linux-musl")
PE_TARGETS = ("x86_64-pc-windows-msvc", "aarch64-pc-windows-msvc")
MACHO_TARGETS = ("aarch64-apple-darwin", "x86_64-apple-darwin")
TABLE_TARGETS = ELF_TARGETS + MUSL_TARGETS + PE_TARGETS + MACHO_TARGETS
#: The targets whose tables zig's C compiler checks (no Debian gcc compiles for them), by zig's name
#: of each (scan/zig.py).
ZIG_TARGETS = {"aarch64-pc-windows-msvc": "aarch64-windows-gnu", "aarch64-apple-darwin": "aarch64-macos-none",
               "x86_64-apple-darwin": "x86_64-macos-none", "x86_64-linux-musl": "x86_64-linux-musl",
               "aarch64-linux-musl": "aarch64-linux-musl"}


def system(triple: str) -> str:
    """`windows` for a triple of Windows (`x86_64-pc-windows-msvc`, `x86_64-w64-mingw32`), `macos`
    for one of macOS (`aarch64-apple-darwin`, `x86_64-apple-macos11`), else `linux`: a table of one
    is never used for a process of another (the runtime refuses it)."""
    words = str(triple).split("-")[1:]
    if any(w in ("windows", "mingw32", "win32") or w.startswith("windows") for w in words):
        return "windows"
    if any(w == "apple" or w.startswith(("darwin", "macos")) for w in words):
        return "macos"
    return "linux"


def platform(triple: str) -> str:
    """The system and C library a triple's tables are for, as people group builds: `Linux (glibc)`,
    `Linux (musl)`, `Windows`, `macOS` (where tables differ in ways no version shows)."""
    words = str(triple).split("-")[1:]
    if system(triple) == "windows":
        return "Windows"
    if system(triple) == "macos":
        return "macOS"
    return "Linux (musl)" if any(w.startswith("musl") for w in words) else "Linux (glibc)"


class Abi:
    """One row of the table: the layout facts of a CPU (or a family of names for one)."""

    __slots__ = ("cpus", "pointer_size", "cpu_macro", "elf_machine", "elf_number", "scalar_align", "big_endian")

    def __init__(self, cpus: tuple, pointer_size: int, cpu_macro: str = None, elf_machine: str = None,
                 elf_number: int = None, scalar_align: int = None, big_endian: bool = False) -> None:
        self.cpus, self.pointer_size, self.cpu_macro = cpus, pointer_size, cpu_macro
        self.elf_machine, self.elf_number, self.scalar_align = elf_machine, elf_number, scalar_align
        self.big_endian = big_endian

    def member_align(self, size: int):
        """The alignment of a scalar (or pointer) of `size` bytes as a struct member; None if unknown."""
        return min(size, self.scalar_align) if self.scalar_align else None


_ABIS = (
    Abi(("x86_64",), 8, "__x86_64__", "EM_X86_64", 62, 16),
    Abi(("aarch64",), 8, "__aarch64__", "EM_AARCH64", 183, 16),
    Abi(("i686", "i386", "i486", "i586"), 4, "__i386__", "EM_386", 3, 4),
    Abi(("arm", "armv7l", "armel", "armhf"), 4, "__arm__", "EM_ARM", 40, 8),
    Abi(("powerpc64le", "ppc64le", "ppc64el"), 8, "__powerpc64__", "EM_PPC64", 21, 16),
    Abi(("s390x",), 8, "__s390x__", "EM_S390", 22, 8, big_endian=True),
    Abi(("riscv64",), 8, "__riscv", "EM_RISCV", 243, 16),
    Abi(("aarch64_be", "ppc64", "powerpc64", "mips64", "mips64el", "loongarch64", "sparc64", "alpha"), 8),
    Abi(("powerpc", "ppc", "mips", "mipsel", "riscv32", "s390", "hppa", "m68k", "sh4"), 4),
)
_BY_CPU = {cpu: a for a in _ABIS for cpu in a.cpus}
_ILP32 = ("gnux32", "ilp32")


def abi(triple: str):
    """The row of a triple's CPU (`x86_64-linux-gnu`, or the CPU alone), or None for an unknown one."""
    return _BY_CPU.get(str(triple).split("-", 1)[0])


def pointer_size(triple: str):
    """The pointer size a triple implies (an ILP32 ABI's 4 on a 64-bit CPU), or None if unknown."""
    a = abi(triple)
    if a is None:
        return None
    if a.pointer_size == 8 and any(w.endswith(_ILP32) for w in str(triple).split("-")[1:]):
        return 4
    return a.pointer_size


def big_endian(triple: str) -> bool:
    """Whether the triple's CPU stores the most significant byte first (s390x); False if unknown."""
    a = abi(triple)
    return bool(a and a.big_endian)


def by_elf_number(number: int):
    """The row whose ELF e_machine is `number`, or None."""
    return next((a for a in _ABIS if a.elf_number == number), None)


def by_elf_machine(name: str):
    """The row whose ELF e_machine pyelftools calls `name` (`EM_386`), or None."""
    return next((a for a in _ABIS if a.elf_machine == name), None)
