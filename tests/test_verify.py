"""`offsets verify` end to end: the committed table of the running interpreter against gcc, its
libpython's DWARF and the interpreter itself; a hand-altered copy; nothing to compare against."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, missing_input
from offsets.check import verify
from offsets.layout.identity import table_name
from offsets.runtime import running_identity


def run_verify(*args):
    proc = subprocess.run([sys.executable, "-m", "offsets", "verify", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    print(proc.stdout, proc.stderr, sep="")
    return proc


@pytest.fixture(scope="module")
def running_table():
    me = running_identity()
    path = REPO / "generated" / f"{table_name(me.version, me.config, me.triple)}.yaml"
    if not path.is_file():
        missing_input(f"no committed table for the running interpreter ({path.name})")
    return path


def _libpython_with_dwarf():
    binary = verify.code_binary(verify.describe(sys.executable))
    if binary is None:
        return None
    from elftools.elf.elffile import ELFFile

    with open(binary, "rb") as fh:
        return binary if ELFFile(fh).get_section_by_name(".debug_info") is not None else None


def _counts(out: str, check: str):
    m = re.search(rf"^{check}: (?:(\d+) structs / )?(\d+) (?:fields|checks)[^\n]* compared, (\d+) mismatches", out, re.M)
    assert m, f"no {check} line in:\n{out}"
    return int(m.group(1) or 0), int(m.group(2)), int(m.group(3))


@pytest.mark.slow
def test_committed_table_of_this_interpreter_passes(running_table):
    binary = _libpython_with_dwarf()
    proc = run_verify(running_table, *(["--binary", binary] if binary else []))
    assert proc.returncode == 0, proc.stderr
    structs, fields, bad = _counts(proc.stdout, "gcc")
    assert structs > 100 and fields > 1000 and bad == 0
    _, checks, bad = _counts(proc.stdout, "live")
    assert checks >= 20 and bad == 0
    if binary:
        structs, fields, bad = _counts(proc.stdout, "dwarf")
        assert structs > 100 and fields > 1000 and bad == 0
    # the binary check reads the same libpython's own data (tp_basicsize, Py_Version, _Py_DebugOffsets)
    m = re.search(r"^constants: (\d+) constants compared, (\d+) mismatches", proc.stdout, re.M)
    assert m and int(m.group(1)) > 1000 and m.group(2) == "0", proc.stdout     # gcc asserted each one
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last == (f"ok: the table agrees with gcc, constants, dwarf, binary {Path(binary).name}, live" if binary
                    else "ok: the table agrees with gcc, constants, live")


@pytest.mark.slow
def test_one_altered_offset_fails_naming_the_field(running_table, tmp_path):
    text = running_table.read_text()
    block = re.search(r"^  PyListObject:\n(?:    .*\n)+", text, re.M)
    line = re.search(r"^      ob_item: \{offset: (\d+), .*$", block.group(0), re.M)
    good = int(line.group(1))
    altered = line.group(0).replace(f"offset: {good},", f"offset: {good + 8},")
    # where `allocated` was: a table whose fields overlap is refused when it is read, before any check
    moved = re.sub(r"^      allocated: .*\n", "", block.group(0).replace(line.group(0), altered), flags=re.M)
    bad = tmp_path / running_table.name
    bad.write_text(text[:block.start()] + moved + text[block.end():])
    proc = run_verify(bad)
    assert proc.returncode == 1
    assert f"gcc: PyListObject.ob_item: table says offset {good + 8}, gcc says {good}" in proc.stdout
    assert re.search(r"^  live: PyListObject\.ob_item", proc.stdout, re.M)
    mismatches = [ln for ln in proc.stdout.splitlines() if ln.startswith("  gcc: ") and "table says" in ln]
    assert len(mismatches) == 1, mismatches
    assert proc.stderr.count("\n") == 1 and "PyListObject.ob_item" in proc.stderr


@pytest.mark.slow
def test_nothing_to_compare_is_an_error(running_table, tmp_path):
    text = running_table.read_text()
    version = re.search(r'^  version: "(\d+)\.(\d+)\.(\d+)"$', text, re.M)
    major, minor = int(version.group(1)), int(version.group(2))
    other = tmp_path / "other.yaml"     # a patch release that does not exist: nothing on this machine is it
    other.write_text(text.replace(version.group(0), f'  version: "{major}.{minor}.99"')
                     .replace(re.search(r"^  hexversion: '.*'$", text, re.M).group(0),
                              f"  hexversion: '{(major << 24) | (minor << 16) | (99 << 8) | 0xf0:#010x}'"))
    proc = run_verify(other)
    assert proc.returncode == 2
    assert "nothing to verify" in proc.stderr and "--python EXE or --prefix DIR" in proc.stderr
    assert proc.stderr.count("\n") == 1

    proc = run_verify(running_table, "--skip", "gcc", "--skip", "dwarf", "--skip", "binary", "--skip", "live")
    assert proc.returncode == 2 and "nothing to verify" in proc.stderr


def test_a_build_that_is_not_the_tables_is_refused(running_table, pyenv_scans):
    me = running_identity()
    for minor in ("3.12", "3.11", "3.13", "3.10"):
        if minor != ".".join(me.version.split(".")[:2]):
            break
    exe, b, _ = pyenv_scans.get(minor)
    proc = run_verify(running_table, "--python", exe)
    assert proc.returncode == 2
    assert f"the build is CPython {b.version}, the table is for {me.version}" in proc.stderr


@pytest.mark.slow
def test_another_interpreters_table_with_its_python(pyenv_scans):
    me = running_identity()
    minor = next(m for m in ("3.12", "3.13", "3.10", "3.11") if not me.version.startswith(m + "."))
    exe, b, table = pyenv_scans.get(minor)
    path = REPO / "generated" / f"{table.build.table_name}.yaml"
    if not path.is_file():
        missing_input(f"no committed table {path.name}")
    proc = run_verify(path, "--python", exe)
    assert proc.returncode == 0, proc.stderr
    structs, fields, bad = _counts(proc.stdout, "gcc")
    assert structs > 100 and bad == 0
    assert f"not run: live: the running interpreter is not this build (it is CPython {me.version}" in proc.stdout
