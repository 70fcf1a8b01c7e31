"""C library types are leaves (storage.py): a member of a system header's struct type is listed with
its offset, size and type, never its private members, by both readers; so a build's DWARF agrees
with a scan made against another machine's C library. Both readers flatten members by one rule
(`scan/members.py`): the same fields, in the same order, for a struct that mixes every case the
rule has (anonymous union and struct, a named struct inside an anonymous union, an unnamed
bitfield, a C library member, a static-object-storage member, CPython's own struct, a flexible
array).

Truth: gcc's offsetof/sizeof of the fixture, gcc's DWARF of it, and the DWARF of Debian's own debug
build of 3.14.10; the expected field names are C's (an anonymous member's members are its
parent's: `offsetof(_PyMixed, lo)` compiles).
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


MIXED = """
#include <time.h>
typedef struct { int a; long b; } _PyOwnInner;
struct _Py_global_strings { struct { char x; int y; } literals; int z; };   /* data/storage.yaml: depth 2 */
typedef struct {
    char tag;
    union { int as_int; struct { short lo, hi; } halves; };
    struct { char c; long l; };
    unsigned int flag:1;
    unsigned int :3;
    unsigned int mode:4;
    struct timespec when;
    struct _Py_global_strings strings;
    _PyOwnInner inner;
    int tail[];
} _PyMixed;
"""
#: C's names for the members, in order: what both readers must list
PATHS = ["tag", "as_int", "halves", "halves.lo", "halves.hi", "c", "l", "flag", "mode", "when", "strings",
         "inner", "inner.a", "inner.b", "tail"]
BITFIELDS = ("flag", "mode")


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """The fake build with one struct holding glibc types and a CPython struct, and one of every
    case the rule that flattens members has."""
    tree = tmp_path_factory.mktemp("leaves") / "fake"
    shutil.copytree(FAKE, tree)
    header = tree / "include" / "python3.99" / "Python.h"
    header.write_text(header.read_text() + HOLDER + MIXED)
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


@pytest.mark.skipif(GCC is None, reason="gcc is not installed (`apt-get install gcc`)")
def test_both_readers_flatten_members_by_the_same_rule(fake, tmp_path):
    table = scanner.scan(build.from_prefix(fake, target="x86_64-linux-gnu"), scanner.ScanOptions(use_cache=False))
    scanned = table.structs["_PyMixed"]
    assert [f.path for f in scanned.fields] == PATHS
    plain = [p for p in PATHS if p not in BITFIELDS]
    sizes = [p for p in plain if p != "tail"]
    truth = gcc_says(fake, [f"offsetof(_PyMixed, {p})" for p in plain] + [f"sizeof(((_PyMixed *)0)->{p})" for p in sizes])
    got = {f.path: f for f in scanned.fields}
    assert [got[p].offset for p in plain] == truth[:len(plain)]
    assert [got[p].size for p in sizes] == truth[len(plain):]
    assert got["tail"].flexible and got["flag"].bit_width == 1 and got["mode"].bit_width == 4
    storage = table.structs["_Py_global_strings"]           # its own entry: two levels
    assert [f.path for f in storage.fields] == ["literals", "literals.x", "literals.y", "z"]

    src = tmp_path / "mixed.c"
    src.write_text('#include "Python.h"\n_PyMixed mixed;\nstruct _Py_global_strings strings;\n')
    so = tmp_path / "mixed.so"
    subprocess.run([GCC, "-shared", "-fPIC", "-g", "-I", str(fake / "include" / "python3.99"), str(src), "-o", str(so)],
                   check=True)
    info = dwarf.read(so, use_cache=False)
    assert info.structs["_PyMixed"].fields == scanned.fields
    assert info.structs["_Py_global_strings"].fields == storage.fields
