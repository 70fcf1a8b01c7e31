"""Debian 12's own `python3.11` (a package version the shipped tables do not record: no build-id of
theirs is its, and its `python3.11-dev` headers differ from the shipped deb12u8 table's in two
files), with the runtime alone and with the scanner installed: per struct, the best answer any
table earns, and installing the scanner never makes an answer worse (docs/identity.md, "How an
answer is earned"). Truth: what the interpreter itself shows (a list iterator's index read with
ctypes, `__basicsize__`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import missing_input

ROOT = Path(__file__).resolve().parent.parent
SYSTEM = Path("/usr/bin/python3.11")

PROBE = r'''
import ctypes, json, sys
import offsets
it = iter([10, 20, 30, 40]); next(it); next(it); next(it)
out = {"truth": {"listiterobject.it_index": 3, "PyListObject.ob_item": None, "PyUnicodeObject": str.__basicsize__}}
for name in ["listiterobject.it_index", "PyListObject.ob_item", "PyUnicodeObject", "arraydescr.itemsize"]:
    try:
        if "." in name:
            f = offsets.field(name)
            value = ctypes.c_ssize_t.from_address(id(it) + f.offset).value if name.startswith("list") else f.offset
            out[name] = [f.earned, value]
        else:
            out[name] = [offsets.build().earned(name), offsets.sizeof(name)]
    except Exception as e:
        out[name] = ["error", type(e).__name__, str(e)]
m = offsets.build()
out["__table__"] = [m.table, m.kind, m.detail]
print(json.dumps(out))
'''


def _system() -> Path:
    if not SYSTEM.is_file():
        missing_input(f"{SYSTEM} (Debian 12's python3.11)")
    out = subprocess.run([str(SYSTEM), "-S", "-c", "import sysconfig, os; "
                          "print(os.path.isfile(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"],
                         capture_output=True, text=True)
    if out.stdout.strip() != "True":
        missing_input(f"{SYSTEM}'s headers (apt-get install python3.11-dev)")
    return SYSTEM


def _run(env_extra: dict, tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFSETS_", "PYTHON"))}
    env.update(OFFSETS_TABLES=str(tmp_path / "own-tables"), OFFSETS_CACHE=os.environ.get("OFFSETS_CACHE", ""),
               **env_extra)
    env = {k: v for k, v in env.items() if v != ""}
    out = subprocess.run([str(_system()), "-c", PROBE], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_runtime_alone_answers_each_struct_as_well_as_some_table_earns_it(tmp_path):
    got = _run({"PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0"}, tmp_path)
    table, kind, detail = got["__table__"]
    assert table == "cpython-3.11.2-debian-x86_64-linux-gnu" and "build-id" not in detail
    assert got["listiterobject.it_index"] == ["proven", 3]        # a .c struct: another package version's
    assert got["PyListObject.ob_item"][0] == "exact"               # its headers' set is this build's
    assert got["PyUnicodeObject"][0].startswith(("proven", "refused")) or got["PyUnicodeObject"][0] == "error"


def test_installing_the_scanner_never_makes_an_answer_worse(tmp_path):
    """With the scanner importable, the first lookup that no table answers exactly makes this
    build's own table from its headers (headers only: the system libpython has no DWARF), which
    then answers its structs exactly; the .c struct it lacks is still answered, proven through the
    shipped table, not refused as an unknown name."""
    site = next(p for p in sys.path if p.endswith("site-packages") and (Path(p) / "clang").is_dir())
    got = _run({"PYTHONPATH": os.pathsep.join([str(ROOT), site]), "OFFSETS_AUTOSCAN": "1"}, tmp_path)
    assert list((tmp_path / "own-tables").glob("*.jsonl")), got["__table__"]
    assert got["listiterobject.it_index"] == ["proven", 3], got
    assert got["PyListObject.ob_item"][0] == "exact"
    assert got["PyUnicodeObject"][:2] == ["exact", json.loads(json.dumps(got["truth"]["PyUnicodeObject"]))]
    assert got["arraydescr.itemsize"][0] in ("proven", "exact", "error")
    if got["arraydescr.itemsize"][0] == "error":
        assert "only a table made with the build's sources" in got["arraydescr.itemsize"][2] or \
            "not answered" in got["arraydescr.itemsize"][2]
