"""The target table (layout/targets.py) against the compilers: each target's pointer size, the
macro its compiler predefines, its ELF machine, and the alignment its ABI gives each scalar inside a
struct, as the model's rule (`sanity.natural_align`) and the DWARF reader apply it.

Truth: gcc for each target (the host's gcc, its `-m32` for i686, the aarch64 and 32-bit ARM cross
gccs): `offsetof` of a member after a char, `sizeof`, `_Alignof` of a struct holding it, each
compiled into the size of a symbol and read back from the object file; `gcc -dM -E` for the macros.
The numbers in the table are never the expected values."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import missing_tool
from offsets.layout import sanity, targets
from offsets.layout.model import Field, Target
from offsets.scan import dwarf, targets as scan_targets

#: triple -> the gcc command that compiles for it here, and the Debian package that has it
COMPILERS = {"x86_64-linux-gnu": (["gcc"], "gcc"), "i686-linux-gnu": (["gcc", "-m32"], "gcc"),
             "aarch64-linux-gnu": (["aarch64-linux-gnu-gcc"], "gcc-aarch64-linux-gnu"),
             "arm-linux-gnueabihf": (["arm-linux-gnueabihf-gcc"], "gcc-arm-linux-gnueabihf"),
             "powerpc64le-linux-gnu": (["powerpc64le-linux-gnu-gcc"], "gcc-powerpc64le-linux-gnu"),
             "s390x-linux-gnu": (["s390x-linux-gnu-gcc"], "gcc-s390x-linux-gnu"),
             "riscv64-linux-gnu": (["riscv64-linux-gnu-gcc"], "gcc-riscv64-linux-gnu"),
             # musl: zig's compiler for it (PyPI's ziglang, which make test installs), as it checks the musl tables
             "x86_64-linux-musl": ([sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl"], "ziglang"),
             "aarch64-linux-musl": ([sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-linux-musl"], "ziglang")}
#: name in the probe -> C type (the model's scalar types, and a pointer)
TYPES = {"char": "char", "short": "short", "int": "int", "long": "long", "long_long": "long long",
         "float": "float", "double": "double", "long_double": "long double", "bool": "_Bool",
         "pointer": "void *"}
PROBE = "".join(
    f"typedef struct {{ char c; {t} x; }} s_{n};\n"
    f"char member_align_{n}[__builtin_offsetof(s_{n}, x)];\n"
    f"char size_{n}[sizeof({t})];\n"
    f"char struct_align_{n}[_Alignof(s_{n})];\n"
    for n, t in TYPES.items())


def compiler(triple: str) -> list:
    cmd, package = COMPILERS[triple]
    if shutil.which(cmd[0]) is None:
        missing_tool(cmd[0], f"apt-get install {package}")
    if package == "ziglang" and importlib.util.find_spec("ziglang") is None:
        missing_tool("zig", "pip install ziglang (make test installs it)")
    return cmd


def compiled(triple: str, tmp: Path) -> Path:
    """The probe, compiled for `triple` with DWARF into a shared object (no C library needed)."""
    (tmp / "Include").mkdir()
    (tmp / "Include" / "probe.h").write_text(PROBE)
    (tmp / "probe.c").write_text('#include "probe.h"\n' + "".join(f"s_{n} use_{n};\n" for n in TYPES))
    out = tmp / "probe.so"
    subprocess.run([*compiler(triple), "-shared", "-fPIC", "-nostdlib", "-g", "-fno-eliminate-unused-debug-types",
                    "-IInclude", "probe.c", "-o", out.name], cwd=tmp, check=True)
    return out


def symbol_sizes(path: Path) -> dict:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        elf = ELFFile(f)
        return {s.name: s["st_size"] for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name}


def elf_machine(path: Path) -> tuple:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        name = ELFFile(f)["e_machine"]
        f.seek(5)
        order = {1: "little", 2: "big"}[f.read(1)[0]]    # EI_DATA
        f.seek(18)
        return name, int.from_bytes(f.read(2), order), order


@pytest.mark.parametrize("triple", COMPILERS)
def test_the_table_says_what_gcc_does(triple, tmp_path):
    so = compiled(triple, tmp_path)
    gcc = symbol_sizes(so)
    abi = targets.abi(triple)
    assert targets.pointer_size(triple) == gcc["size_pointer"]
    target = Target(triple, gcc["size_pointer"])          # the model accepts the pointer size gcc has
    for n, t in TYPES.items():
        size, align = gcc[f"size_{n}"], gcc[f"member_align_{n}"]
        assert abi.member_align(size) == align, (triple, t)
        if n != "long_double":     # the model's rule knows the types CPython's structs hold
            assert sanity.natural_align(Field("x", align, size, t), target, {}) == align, (triple, t)
    assert (abi.elf_machine, abi.elf_number, "big" if abi.big_endian else "little") == elf_machine(so)
    defined = subprocess.run([*compiler(triple), "-dM", "-E", "-x", "c", "/dev/null"], capture_output=True,
                             text=True, check=True, cwd=tmp_path).stdout.split("\n")
    assert f"#define {abi.cpu_macro} 1" in defined
    order = "__ORDER_BIG_ENDIAN__" if abi.big_endian else "__ORDER_LITTLE_ENDIAN__"
    assert f"#define __BYTE_ORDER__ {order}" in defined
    # the DWARF reader gives each probe struct gcc's alignment (its base types' by the same table)
    info = dwarf.read(so, use_cache=False)
    got = {n: info.structs[f"s_{n}"].align for n in TYPES}
    assert got == {n: gcc[f"struct_align_{n}"] for n in TYPES}


def test_every_target_tables_are_made_for_has_a_full_row():
    for triple, t in scan_targets.TARGETS.items():
        abi = targets.abi(triple)
        assert abi.scalar_align and abi.cpu_macro and abi.elf_machine and abi.elf_number, triple
        assert (t.pointer_size, t.cpu_macro, t.elf_machine) == (abi.pointer_size, abi.cpu_macro, abi.elf_machine)
        assert triple in COMPILERS or triple in WINDOWS or triple in MACOS   # each is checked against its compilers here


#: Windows triples -> the compilers that compile for them here (the scanner's clang target and the
#: mingw-w64 gcc that checks its tables), each with the Debian package that has it
WINDOWS = {"x86_64-pc-windows-msvc": {"clang": (["clang", "-target", "x86_64-pc-windows-msvc"], "clang"),
                                      "mingw-w64 gcc": (["x86_64-w64-mingw32-gcc"], "gcc-mingw-w64-x86-64")},
           # arm64: no Debian gcc compiles for it; zig's clang (GNU target, PyPI's ziglang) checks its tables
           "aarch64-pc-windows-msvc": {"clang": (["clang", "-target", "aarch64-pc-windows-msvc"], "clang"),
                                       "zig cc": ([sys.executable, "-m", "ziglang", "cc", "-target",
                                                   "aarch64-windows-gnu"], "ziglang")}}
#: each compiler's `long double` (size, alignment): MSVC's is a double, and so is AArch64 Windows's in
#: GNU mode; mingw-w64 gcc's is x87's 80 bits in 16
LONG_DOUBLE = {"clang": (8, 8), "zig cc": (8, 8), "mingw-w64 gcc": (16, 16)}


#: Each type's (offset after a char, size, alignment of a struct holding it) as initialized data, for
#: an object reader (COFF's, Mach-O's) to read back
OBJECT_PROBE = "".join(
    f"typedef struct {{ char c; {t} x; }} s_{n};\n"
    f"const unsigned long long v_{n}[] = {{__builtin_offsetof(s_{n}, x), sizeof({t}), _Alignof(s_{n})}};\n"
    for n, t in TYPES.items())


def compile_object_probe(cmd: list, package: str, work: Path) -> None:
    """`OBJECT_PROBE` compiled by `cmd` into work/probe.o (a section per symbol where that means
    anything), or a skip saying how to install the compiler (`package`)."""
    if shutil.which(cmd[0]) is None:
        missing_tool(cmd[0], f"apt-get install {package}")
    if package == "ziglang" and importlib.util.find_spec("ziglang") is None:
        missing_tool("zig", "pip install ziglang (make test installs it)")
    (work / "probe.c").write_text(OBJECT_PROBE)
    subprocess.run([*cmd, "-c", "-fdata-sections", "probe.c", "-o", "probe.o"], cwd=work, check=True)


def object_probe_values(found: dict) -> dict:
    """type name -> [its offset after a char, its size, its struct's alignment], from `OBJECT_PROBE`'s symbols."""
    assert set(found) == {f"v_{n}" for n in TYPES}
    return {n: [int.from_bytes(found[f"v_{n}"][k:k + 8], "little") for k in (0, 8, 16)] for n in TYPES}


@pytest.mark.parametrize("triple,name", [(t, n) for t, cs in WINDOWS.items() for n in cs])
def test_the_windows_row_says_what_its_compilers_do(triple, name, tmp_path):
    """A Windows target's row against a COFF object of each compiler (read by remote/pe.py): its
    CPU, its pointer size and each scalar's alignment in a struct; `long` is whatever they say."""
    from offsets.remote import pe

    cmd, package = WINDOWS[triple][name]
    compile_object_probe(cmd, package, tmp_path)
    coff = pe.read(tmp_path / "probe.o")
    assert coff.cpu == triple.split("-")[0]
    got = object_probe_values(coff.symbol_bytes([f"v_{n}" for n in TYPES]))
    abi = targets.abi(triple)
    assert targets.pointer_size(triple) == got["pointer"][1]
    target = Target(triple, got["pointer"][1])
    for n, t in TYPES.items():
        align, size, struct_align = got[n]
        if n == "long_double":      # MSVC's is a double (8), mingw-w64 gcc's x87's 80 bits in 16
            assert (size, align) == LONG_DOUBLE[name], (name, t)
            continue
        assert abi.member_align(size) == align == struct_align, (name, t)
        assert sanity.natural_align(Field("x", align, size, t), target, {}) == align, (name, t)
    assert got["long"][1] == 4          # LLP64: what makes a Linux table wrong there


#: macOS triples -> the compilers that compile for them here: the scanner's clang target and zig cc,
#: which checks its tables (no Debian gcc compiles for Darwin), each with where it comes from
MACOS = {t: {"clang": (["clang", "-target", t, *scan_targets.MACOS[t]], "clang"),
             "zig cc": ([sys.executable, "-m", "ziglang", "cc", "-target", z, *scan_targets.MACOS[t]], "ziglang")}
         for t, z in (("aarch64-apple-darwin", "aarch64-macos-none"), ("x86_64-apple-darwin", "x86_64-macos-none"))}
#: `long double` (size, alignment) on macOS: a double on arm64, x87's 80 bits in 16 on x86_64
MACOS_LONG_DOUBLE = {"aarch64-apple-darwin": (8, 8), "x86_64-apple-darwin": (16, 16)}


@pytest.mark.parametrize("triple,name", [(t, n) for t, cs in MACOS.items() for n in cs])
def test_the_macos_row_says_what_its_compilers_do(triple, name, tmp_path):
    """A macOS target's row against a Mach-O object of each compiler (read by check/macho_object.py,
    which the probes of macOS tables are read with): its pointer size and each scalar's alignment in
    a struct, `long` of 8 bytes (LP64, unlike Windows)."""
    from offsets.check import macho_object

    cmd, package = MACOS[triple][name]
    compile_object_probe(cmd, package, tmp_path)
    got = object_probe_values(macho_object.symbol_bytes(tmp_path / "probe.o", [f"v_{n}" for n in TYPES]))
    abi = targets.abi(triple)
    assert targets.pointer_size(triple) == got["pointer"][1] == 8
    target = Target(triple, got["pointer"][1])
    for n, t in TYPES.items():
        align, size, struct_align = got[n]
        if n == "long_double":
            assert (size, align) == MACOS_LONG_DOUBLE[triple], (name, t)
            continue
        assert abi.member_align(size) == align == struct_align, (name, t)
        assert sanity.natural_align(Field("x", align, size, t), target, {}) == align, (name, t)
    assert got["long"][1] == 8
    assert targets.system(triple) == "macos" and targets.platform(triple) == "macOS"
