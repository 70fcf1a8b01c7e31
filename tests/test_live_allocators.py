"""The allocators' proof (offsets/runtime/live/allocators.py) in real interpreters: the function
pointers `PyMem_GetAllocator` and `PyObject_GetArenaAllocator` copy are the binary's own functions
(its symbol table, as tests/test_remote_elf.py checks it against readelf), where the exact table,
which clang laid out, says they are; and nothing is proven where that truth cannot be read or is
not CPython's own: a file on disk that is not the image mapped, tracemalloc's hooks, a stripped copy.
A table with one of these fields moved fails (tests/test_proofs.py, MOVES)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import missing_input, missing_tool, pyenv_python3

ROOT = Path(__file__).resolve().parent.parent
FIELDS = ["PyMemAllocatorEx.calloc", "PyMemAllocatorEx.free", "PyMemAllocatorEx.malloc", "PyMemAllocatorEx.realloc",
          "PyObjectArenaAllocator.alloc", "PyObjectArenaAllocator.free"]

SCRIPT = r"""
import json, sys
from offsets import runtime
from offsets.runtime import binary
e = next(e for e in runtime.shipped_index()["tables"] if e["hexversion"] == sys.hexversion and
         e["triple"] == runtime.identity.running_target()["triple"] and
         e.get("vendor") in (None, "upstream") and not any(e["config"].values()))
if sys.argv[1] == "another-file":       # the file on disk has another build-id than the image mapped
    mapped = binary.image
    binary.image = lambda: (lambda path, build_id, base, why: (path, "0" * 40, base, why))(*mapped())
r = runtime.live_check(runtime.load_shipped(e))
print(json.dumps({"proven": sorted(f"{k}.{p}" for k, p in r.proven if k.endswith("Allocator") or k.endswith("AllocatorEx")),
                  "skipped": [s for s in r.skipped if "Allocator" in s], "failed": r.failed}))
"""


def run(python, case: str = "", env: dict = None) -> dict:
    out = subprocess.run([str(python), "-c", SCRIPT, case], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0", **(env or {})})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def python(minor: str):
    found = pyenv_python3(minor)
    if found is None:
        missing_input(f"pyenv has no CPython {minor}")
    return found


@pytest.mark.parametrize("minor", ["3.9", "3.12", "3.13"])
def test_the_allocators_are_the_binary_s_own_functions_where_the_exact_table_puts_them(minor):
    got = run(python(minor))
    assert got["failed"] == [] and got["skipped"] == []
    assert got["proven"] == FIELDS


def test_a_file_on_disk_that_is_not_the_image_mapped_is_not_read():
    got = run(python("3.12"), "another-file")
    assert got["proven"] == [] and got["failed"] == []
    assert "not the file this process mapped" in got["skipped"][0]


def test_tracemalloc_s_hooks_are_no_family_of_cpython_s_own():
    got = run(python("3.12"), env={"PYTHONTRACEMALLOC": "1"})
    assert got["proven"] == FIELDS[4:] and got["failed"] == []
    assert "none of the binary's own allocators" in got["skipped"][0]


def test_a_stripped_copy_proves_nothing_of_its_static_functions(tmp_path):
    if shutil.which("strip") is None:
        missing_tool("strip", "apt-get install binutils")
    exe = python("3.12")
    lib = exe.resolve().parent.parent / "lib" / "libpython3.12.so.1.0"
    subprocess.run(["strip", "--strip-all", "-o", str(tmp_path / lib.name), str(lib)], check=True)
    got = run(exe, env={"LD_LIBRARY_PATH": str(tmp_path)})
    assert got["proven"] == [] and got["failed"] == []
    assert all("none of the binary's own allocators" in s for s in got["skipped"]) and len(got["skipped"]) == 2
