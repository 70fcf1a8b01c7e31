"""C library types are leaves (storage.py): a member of a system header's struct type is listed with
its offset, size and type, never its private members, by both readers; so a build's DWARF agrees
with a scan made against another machine's C library.

Truth: gcc's offsetof/sizeof of the fixture, and the DWARF of Debian's own debug build of 3.14.10.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from offsets.scan import build_inputs as build, dwarf, scanner

FAKE = Path(__file__).parent / "fixtures" / "fakepy"
GCC = shutil.which("gcc")

HOLDER = """
#include <pthread.h>
#include <time.h>
typedef struct { int n; long m; } _PyInner;
typedef struct {
    char tag;
    pthread_cond_t cond;
    struct timespec when;
    _PyInner inner;
} _PyHolder;
"""


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """The fake build with one struct holding glibc types and a CPython struct."""
    tree = tmp_path_factory.mktemp("leaves") / "fake"
    shutil.copytree(FAKE, tree)
    header = tree / "include" / "python3.99" / "Python.h"
    header.write_text(header.read_text() + HOLDER)
    return tree


def gcc_says(tree: Path, exprs: list[str]) -> list[int]:
    inc = tree / "include" / "python3.99"
    src = inc.parent.parent / "truth.c"
    src.write_text('#include <stdio.h>\n#include <stddef.h>\n#include "Python.h"\nint main(void) {\n'
                   + "".join(f'  printf("%zu\\n", (size_t)({e}));\n' for e in exprs) + "  return 0;\n}\n")
    exe = src.with_suffix("")
    subprocess.run([GCC, "-w", "-I", str(inc), str(src), "-o", str(exe)], check=True)
    return [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]


@pytest.mark.skipif(GCC is None, reason="gcc is not installed (`apt-get install gcc`)")
def test_c_library_members_are_leaves_in_both_readers(fake, tmp_path):
    table = scanner.scan(build.from_prefix(fake, target="x86_64-linux-gnu"), scanner.ScanOptions(use_cache=False))
    s = table.structs["_PyHolder"]
    got = {f.path: (f.offset, f.size) for f in s.fields}
    truth = gcc_says(fake, ["offsetof(_PyHolder, cond)", "sizeof(pthread_cond_t)", "offsetof(_PyHolder, when)",
                            "sizeof(struct timespec)", "offsetof(_PyHolder, inner.m)", "sizeof(_PyHolder)"])
    assert got["cond"] == (truth[0], truth[1]) and got["when"] == (truth[2], truth[3])
    assert got["inner.m"][0] == truth[4] and s.size == truth[5]              # CPython's own: expanded
    assert not [p for p in got if p.startswith(("cond.", "when."))]           # the C library's: not
    assert s.field("cond").type == "pthread_cond_t"
    # DWARF of the same header, compiled by gcc: the same rule, so the two readers agree
    so = tmp_path / "holder.so"
    src = tmp_path / "holder.c"
    src.write_text('#include "Python.h"\n_PyHolder holder;\n')
    subprocess.run([GCC, "-shared", "-fPIC", "-g", "-I", str(fake / "include" / "python3.99"), str(src), "-o", str(so)],
                   check=True)
    info = dwarf.read(so, use_cache=False)
    d = next(v for k, v in info.structs.items() if k == "_PyHolder")
    assert {f.path: (f.offset, f.size) for f in d.fields} == got


def test_314_debug_scan_agrees_with_debians_dwarf_of_that_build():
    """Scanned here (Debian 12's glibc headers), 3.14.10's debug headers agree with the DWARF of
    Debian sid's libpython3.14d.so on every field both have, `_gil.cond` included."""
    from offsets.tools import matrix

    job = next(j for j in matrix.jobs() if j.label == "debian 3.14.10 debug x86_64-linux-gnu")
    b = job.inputs()
    table = scanner.scan(b, scanner.ScanOptions())
    lib = matrix.dbg_library(matrix.entry("3.14.10"),
                             "x86_64-linux-gnu")
    r = dwarf.compare_report(table, dwarf.read(lib))
    assert r.mismatches == () and r.not_compared == ()
    assert r.structs >= 350 and r.fields >= 6500
    gil = table.structs["PyInterpreterState"].field("_gil.cond")
    assert gil.size == 48 and not any(f.path.startswith("_gil.cond.") for f in table.structs["PyInterpreterState"].fields)
