"""Bad input gets the next rule down, never a traceback (docs/identity.md): a binary with no build-id
note, two ELF files that both hold the interpreter, a pyconfig.h that cannot be read, a table whose
dependency data is damaged. In process (the runtime alone in a copy of pyenv 3.12.1,
tests/runtime_child.py) and out of process (`offsets identify`). What is answered is checked
against gcc over the build's own headers."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from runtime_child import copy_of, inputs_of, own_table, run_runtime, running
from offsets.check import probe
from offsets.layout import compact_depends, identity
from offsets.runtime import binary
from offsets.tools import foreign_builds

VERSION = "3.12.1"
#: A copy whose libpython has no build-id note, its headers pyenv's very ones; one whose pyconfig.h
#: lacks a macro no set holds, with a libpython under another build-id.
NO_BUILD_ID = ("no-build-id", {"rewrite": foreign_builds.no_build_id})
NO_CLOSE_RANGE = ("without-have_close_range-own-id", {"drop": ("HAVE_CLOSE_RANGE",)})
#: Fields a JIT reads (tests/data/jit_needs.yaml has them), asked in each case.
FIELDS = ["PyListObject.ob_item", "PyTupleObject.ob_item", "PyThreadState.interp", "PyTypeObject.tp_flags"]


def identify(*args, env=None) -> tuple:
    """(exit status, JSON keys or None, standard error) of `offsets identify ARGS --json`."""
    proc = subprocess.run([sys.executable, "-m", "offsets", "identify", *args, "--json"], capture_output=True,
                          text=True, env=env)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def _variant(case):
    name, options = case
    return copy_of(lambda: foreign_builds.variant(VERSION, name, **options))


def gcc_agrees(table, python, answered: dict) -> None:
    """Every field answered (offset and earned) is at gcc's offset over `python`'s own headers."""
    names = {n.split(".", 1)[0] for n, got in answered.items() if got != "refused"}
    structs = [table.structs[table.names.get(n, n)] for n in sorted(names)]
    report = probe.probe_headers(table, inputs_of(python), structs=structs)
    assert not report.mismatches, report.mismatches[:5]
    for name, got in answered.items():
        if got != "refused":
            struct, path = name.split(".", 1)
            want = next(f.offset for f in table.structs[table.names.get(struct, struct)].fields if f.path == path)
            assert got[0] == want and got[1] in ("exact", "proven"), (name, got)


@pytest.fixture(scope="module")
def own_312(pyenv_scans, tmp_path_factory):
    return own_table(pyenv_scans, tmp_path_factory, "3.12")


# ---------------------------------------------------------------------------------------------
# A binary with no build-id note

@pytest.mark.slow
def test_no_build_id_note_falls_to_the_inputs(own_312, tmp_path):
    table, tables_dir = own_312
    python = _variant(NO_BUILD_ID)
    lib = python.parent.parent / "lib" / f"libpython{VERSION.rsplit('.', 1)[0]}.so.1.0"
    from elftools.elf.elffile import ELFFile

    with open(lib, "rb") as f:      # pyelftools: the note is still there, but it is no one's build-id
        notes = [n for s in ELFFile(f).iter_sections() if s["sh_type"] == "SHT_NOTE" for n in s.iter_notes()]
        assert not any(n["n_type"] == "NT_GNU_BUILD_ID" and n["n_name"] == "GNU" for n in notes)
    got = run_runtime(python, {"structs": sorted(table.structs), "fields": FIELDS}, tables_dir, tmp_path)
    assert got["build_id"] is None and "has no GNU build-id note" in got["build_id_why"]
    assert got["kind"] == "exact" and set(got["structs"].values()) == {"exact"}    # the same headers: by inputs
    gcc_agrees(table, python, got["fields"])
    rc, keys, _ = identify("--binary", str(lib))
    assert rc == 0 and keys["build_id"] is None and keys["build_id_why"] == "the binary has no GNU build-id note"
    assert keys["earned"] == "exact" and keys["earned_by"] != "build-id"


# ---------------------------------------------------------------------------------------------
# Two ELF files that both hold the interpreter

def _maps(here: int, second: str):
    """A /proc/self/maps as binary._maps reads it: this interpreter's libpython around `here`, and `second`."""
    return [(here - 0x1000, here + 0x1000, 0, 11, "/opt/a/lib/libpython3.12.so.1.0"),
            (0x10000, 0x20000, 0, 22, second)]


def test_a_second_libpython_mapped_leaves_no_build_id(monkeypatch):
    here = id(int)
    monkeypatch.setattr(binary, "_maps", lambda: _maps(here, "/opt/b/lib/libpython3.12.so.1.0"))
    path, build_id, why = binary.interpreter()
    assert (path, build_id) == ("/opt/a/lib/libpython3.12.so.1.0", None)
    assert why == ("/opt/a/lib/libpython3.12.so.1.0 holds the interpreter, and /opt/b/lib/libpython3.12.so.1.0 "
                   "is mapped too")
    # the same file mapped twice is one file; and an image whose start is not mapped is none
    shifted = [(here - 0x1000, here + 0x1000, 0x3000, 11, "/opt/a/libpython3.12.so")]
    monkeypatch.setattr(binary, "_maps", lambda: shifted)
    assert binary.interpreter()[1:] == (None, "/opt/a/libpython3.12.so: the start of its image is not mapped")
    monkeypatch.setattr(binary, "_maps", lambda: [])
    assert binary.interpreter() == (None, None, "no file mapping holds the interpreter's type objects")


@pytest.mark.slow
def test_two_libpythons_in_one_process(tmp_path):
    """pyenv's python3.12 with a copy of its libpython (another soname) preloaded: the interpreter
    runs in the copy, the original is mapped too. In process: no build-id, the inputs decide (the
    same headers). Out of process, which file runs the interpreter is not known: no build-id and no
    headers vouch, and the check in memory, reading the file it chose, decides."""
    second = copy_of(lambda: foreign_builds.second_libpython(VERSION))
    python = foreign_builds.pyenv_prefix(VERSION) / "bin" / "python3.12"
    empty = tmp_path / "tables"
    empty.mkdir()
    got = run_runtime(python, {"structs": ["PyListObject", "PyThreadState"], "fields": FIELDS}, empty, tmp_path,
                      {"LD_PRELOAD": str(second)})
    assert got["build_id"] is None and got["build_id_why"].endswith("is mapped too")
    assert str(second) in got["build_id_why"]
    assert got["kind"] == "exact" and set(got["structs"].values()) == {"exact"}
    with running(python, dict(os.environ, LD_PRELOAD=str(second))) as pid:
        rc, keys, err = identify("--pid", str(pid))
    assert keys["build_id"] is None and "is mapped too" in keys["build_id_why"]
    assert keys["earned"] != "exact", keys
    assert rc == 1 or keys["earned"] == "proven"


# ---------------------------------------------------------------------------------------------
# A pyconfig.h that cannot be read

@pytest.mark.slow
def test_an_unreadable_pyconfig_is_no_headers(own_312, tmp_path):
    table, tables_dir = own_312
    python = copy_of(lambda: foreign_builds.unreadable_pyconfig(VERSION))
    header = python.parent.parent / "include" / "python3.12" / "pyconfig.h"
    assert header.is_symlink() and not header.exists()
    got = run_runtime(python, {"structs": ["PyListObject", "_ceval_runtime_state"], "fields": FIELDS}, tables_dir,
                      tmp_path)
    assert got["build_id"] and got["kind"] == "proven"          # another build-id; nothing to compare: the proof
    assert not any(how.startswith("exact") for how in got["structs"].values()), got["structs"]
    assert any(v != "refused" for v in got["fields"].values())
    gcc_agrees(table, foreign_builds.pyenv_prefix(VERSION) / "bin" / "python3.12", got["fields"])
    with running(python) as pid:
        rc, keys, err = identify("--pid", str(pid))
    assert keys["build_id"] and keys["earned"] != "exact"


# ---------------------------------------------------------------------------------------------
# A table whose dependency data is damaged

@pytest.fixture(scope="module")
def damaged_312(pyenv_scans, tmp_path_factory):
    """pyenv 3.12.1's table installed with a `depends` node that is not one (its files' digests a digit short):
    every checksum holds, the data's shape does not."""
    table = pyenv_scans.get("3.12")[2]
    real = compact_depends.parts
    mp = pytest.MonkeyPatch()
    mp.setattr(compact_depends, "parts", lambda t: (lambda p: dict(p, digests=p["digests"][:-1]))(real(t)))
    try:
        got = own_table(pyenv_scans, tmp_path_factory, "3.12-damaged", table)
    finally:
        mp.undo()
    return got


def test_damaged_dependency_data_is_no_sets(damaged_312, own_312):
    from offsets.runtime.tables import load_compact

    (_, bad), (_, good) = damaged_312, own_312
    assert load_compact(str(next(bad.glob("*.jsonl")))).depends is None
    assert load_compact(str(next(good.glob("*.jsonl")))).depends is not None


@pytest.mark.slow
def test_damaged_dependency_data_falls_to_the_whole_build(damaged_312, tmp_path):
    """The structs of a table whose dependency data is damaged are exact only where the whole build's
    inputs are the table's: on a copy with pyenv's very headers (and no build-id), all; on one whose
    pyconfig.h lacks HAVE_CLOSE_RANGE (which an intact table answers exactly:
    test_dependency_proof.py), none."""
    table, tables_dir = damaged_312
    ask = {"structs": sorted(table.structs), "fields": FIELDS, "own_only": True}
    same = run_runtime(_variant(NO_BUILD_ID), ask, tables_dir, tmp_path / "a")
    assert set(same["structs"].values()) == {"exact"}
    python = _variant(NO_CLOSE_RANGE)
    other = run_runtime(python, ask, tables_dir, tmp_path / "b")
    assert not any(how.startswith("exact") for how in other["structs"].values())
    gcc_agrees(table, python, other["fields"])
