"""The foreign builds of offsets/tools/foreign_builds.py are what they stand for, seen from outside:
the interpreter that runs, the libpython it maps (/proc/self/maps), its include directory, and the
build-id and code of that libpython (pyelftools)."""
from __future__ import annotations

import subprocess

import pytest

from conftest import missing_input
from offsets.errors import BuildError
from offsets.tools import foreign_builds as fb

VERSION = "3.12.1"
PROBE = ("import sys, sysconfig, os; inc = sysconfig.get_paths()['include']; "
         "lib = [l.split()[-1] for l in open('/proc/self/maps') if 'libpython' in l]; "
         "print(sys.version.split()[0]); print(inc); print(lib[0] if lib else '')")


def _run(make):
    try:
        python = make()
    except BuildError as e:
        missing_input(str(e))
    out = subprocess.run([str(python), "-S", "-c", PROBE], capture_output=True, text=True, check=True).stdout
    version, include, lib = out.splitlines()
    return python, version, include, lib


def _section(path, name: str) -> bytes:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        return ELFFile(f).get_section_by_name(name).data()


def test_a_copy_without_the_old_libc_macros():
    python, version, include, lib = _run(lambda: fb.without_macros(VERSION))
    base = fb.pyenv_prefix(VERSION)
    assert version == VERSION and include.startswith(str(python.parent.parent))
    text = open(f"{include}/pyconfig.h").read()
    original = open(f"{base}/include/python3.12/pyconfig.h").read()
    for macro in fb.OLD_LIBC_MACROS:
        assert f"#define {macro} 1" in original and f"#define {macro} " not in text
    assert len(original.splitlines()) - len(text.splitlines()) == len(fb.OLD_LIBC_MACROS)
    assert lib == str(base / "lib" / "libpython3.12.so.1.0")       # the same libpython


def test_a_copy_without_headers():
    python, version, include, lib = _run(lambda: fb.no_headers(VERSION))
    assert version == VERSION and include.startswith(str(python.parent.parent))
    assert not (python.parent.parent / "include").exists()
    assert lib == str(fb.pyenv_prefix(VERSION) / "lib" / "libpython3.12.so.1.0")


def test_a_rebuild_is_the_same_code_under_another_build_id():
    from offsets.scan.dwarf import build_id

    python, version, include, lib = _run(lambda: fb.rebuilt(VERSION))
    original = fb.pyenv_prefix(VERSION) / "lib" / "libpython3.12.so.1.0"
    assert version == VERSION and not (python.parent.parent / "include").exists()
    assert lib == str(python.parent.parent / "lib" / "libpython3.12.so.1.0")     # its own copy
    assert build_id(lib) != build_id(original) and build_id(lib) and build_id(original)
    for section in (".text", ".rodata", ".data"):
        assert _section(lib, section) == _section(original, section), section


@pytest.mark.parametrize("case", [c for c in fb.cases() if c.pyenv], ids=lambda c: c.name)
def test_every_copy_names_its_truth(case):
    """Every copy of a pyenv build says which binary and include directory describe it: the original's
    (the compiled cases are tests/prove/test_foreign_builds.py's)."""
    try:
        truth = case.truth()
    except BuildError as e:
        missing_input(str(e))
    assert truth.binary.is_file() and (truth.include / "Python.h").is_file()
