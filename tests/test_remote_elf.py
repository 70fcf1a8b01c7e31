"""The standard-library ELF reader (offsets/remote/elf.py) against binutils' readelf, on 64- and
32-bit, x86 and Arm binaries of real CPythons (pyenv's libpython; Debian's python3.13 for i386 and
arm64, fetched by package name), and damaged files refused with one error."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import fetched, missing_input, pyenv_python
from offsets.remote.elf import Elf, ElfError, build_id_of

pytestmark = pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils' readelf is not installed")


def readelf(*args) -> str:
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True, check=True).stdout


def binaries():
    from offsets.tools import matrix

    out = []
    exe = pyenv_python("3.13")
    if exe is None:
        missing_input("pyenv has no CPython 3.13")
    out.append(exe.parent.parent / "lib" / "libpython3.13.so.1.0")
    entry = matrix.entry("3.13.5")
    for triple in ("i686-linux-gnu", "aarch64-linux-gnu"):
        found = fetched(f"Debian's python3.13 binaries for {triple}", matrix.packaged_binaries, entry, "release", triple)
        out.append(found[0][0])
    return out


def test_header_build_id_and_symbols_are_readelfs():
    for path in binaries():
        with Elf(str(path)) as elf:
            header = readelf("-h", str(path))
            assert ("ELF64" if elf.bits == 64 else "ELF32") in header
            machine = {"x86_64-linux-gnu": "X86-64", "i686-linux-gnu": "80386", "aarch64-linux-gnu": "AArch64"}
            assert machine[elf.triple] in header
            assert elf.build_id() == re.search(r"Build ID: ([0-9a-f]+)", readelf("-n", str(path))).group(1)
            syms = {}
            for line in readelf("--dyn-syms", str(path)).splitlines():
                parts = line.split()
                if len(parts) >= 8 and parts[0].rstrip(":").isdigit() and parts[6] != "UND":
                    syms.setdefault(parts[7].split("@")[0], (int(parts[1], 16), int(parts[2], 0)))
            for name in ("_PyRuntime", "Py_Version", "PyCode_Type", "Py_Initialize"):
                sym = elf.symbol(name)
                assert (sym.value, sym.size) == syms[name], (path, name)


def test_functions_are_readelfs_defined_functions_of_one_value():
    """`Elf.functions` (what the live check's allocator proof reads): every name readelf's .dynsym and
    .symtab list as a defined function of one value gives that value, static functions too; a name
    two static functions share (with two values) is left out, as is an object, and one not there."""
    path = binaries()[0]
    values: dict = {}
    for line in readelf("--syms", str(path)).splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[0].rstrip(":").isdigit() and parts[3] == "FUNC" and parts[6] != "UND":
            values.setdefault(parts[7].split("@")[0], set()).add(int(parts[1], 16))
    shared = sorted(n for n, v in values.items() if len(v) > 1)
    assert shared, "no name two static functions share in this libpython"
    names = ["_PyMem_RawMalloc", "_PyMem_ArenaAlloc", "_PyObject_Malloc", "Py_Initialize", shared[0],
             "_PyRuntime", "no_such_function"]
    with Elf(str(path)) as elf:
        got = elf.functions(names)
    assert got == {n: next(iter(values[n])) for n in names[:4]}
    assert len(values["_PyMem_ArenaAlloc"]) == 1 and len(values[shared[0]]) > 1


def test_file_bytes_of_a_constant_are_its_value():
    """Py_Version in the file's data is the hexversion (3.13.0: patchlevel.h's PY_VERSION_HEX)."""
    path = binaries()[0]
    with Elf(str(path)) as elf:
        sym = elf.symbol("Py_Version")
        assert int.from_bytes(elf.file_bytes(sym.value, sym.size), "little") == 0x030D00F0


@pytest.mark.parametrize("content, match", [
    (b"", "is not an ELF file"),
    (b"#!/bin/sh\necho hi\n", "is not an ELF file"),
    (b"\x7fELF\x03\x01" + b"\0" * 58, "unknown ELF class"),
    (b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\x03\x00\x3e\x00" + b"\0" * 4 + b"\0" * 8 + (2 ** 40).to_bytes(8, "little")
     + b"\0" * 14 + b"\x38\x00\x05\x00" + b"\0" * 6, "outside the file"),
])
def test_damaged_files_are_one_error(tmp_path, content, match):
    f = tmp_path / "bad"
    f.write_bytes(content)
    with pytest.raises(ElfError, match=match):
        build_id_of(str(f))


@pytest.mark.parametrize("version, triple, table", [
    ("3.14.10", "x86_64-linux-gnu", "cpython-3.14.10-debian-x86_64-linux-gnu"),
    ("3.13.5", "i686-linux-gnu", "cpython-3.13.5-debian-i686-linux-gnu"),
    ("3.13.5", "aarch64-linux-gnu", "cpython-3.13.5-debian-aarch64-linux-gnu"),
])
def test_identify_a_binary_by_its_build_id(version, triple, table, capsys):
    """Debian's own binaries (by package name and version): the shipped table verified against them
    records their build-id, so any copy of that file is exactly that build, whatever its CPU."""
    import json

    from offsets.cli import main
    from offsets.tools import matrix

    entry = matrix.entry(version)
    for path, _, source in fetched(f"Debian's python{version} binaries for {triple}", matrix.packaged_binaries,
                                   entry, "release", triple):
        assert main(["identify", "--binary", str(path), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert (doc["table"], doc["earned"], doc["earned_by"]) == (table, "exact", "build-id")
        assert (doc["version"], doc["target"], doc["pointer_size"]) == (version, triple, 4 if "i686" in triple else 8)
        assert doc["vendor"] == f"debian {entry['package_version']}"     # the package's own changelog beside it
