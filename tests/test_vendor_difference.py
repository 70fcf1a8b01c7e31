"""One version, two layouts: python.org's 3.13.15 and Debian's (gchead-alignment.diff makes
PyGC_Head 4-aligned) share version, flags and triple, and differ in PyInterpreterState.gc.

Truth: gcc's `offsetof` over each build's own headers (the pristine orig tarball, and Debian's
patched tree, each with the pyconfig.h its ./configure made), read back from the object file."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from offsets.tools import matrix
from offsets.layout import table_yaml
from offsets.layout.names import resolve

ROOT = Path(__file__).resolve().parent.parent
FIELD = ("PyInterpreterState", "gc.generations")


def gcc_offsetof(b, struct: str, path: str, work: Path) -> int:
    """offsetof(struct, path) as gcc computes it over build `b`'s headers: the size of a char array."""
    src = work / "probe.c"
    src.write_text('#include "Python.h"\n#include "internal/pycore_interp.h"\n'
                   f"char offsets_probe[offsetof({struct}, {path})];\n")
    obj = work / "probe.o"
    flags = ["-I", str(b.pyconfig.parent), "-I", str(b.include_dir), "-I", str(b.include_dir / "internal"),
             "-DPy_BUILD_CORE=1", *b.defines()]
    proc = subprocess.run(["gcc", "-std=gnu11", "-c", "-o", str(obj), str(src), *flags], capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    out = subprocess.run(["nm", "-S", str(obj)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^[0-9a-f]+ ([0-9a-f]+) [BbCc] offsets_probe$", out, re.M)
    assert m, out
    return int(m.group(1), 16)


def job(label: str):
    found = [j for j in matrix.jobs() if j.label == label]
    assert found, f"data/matrix.yaml has no job {label!r}"
    return found[0]


#: (job label, table, gcc's offset of the field) of both builds; make test samples upstream's, and
#: make prove (tests/prove/test_beyond_samples.py) has Debian's, whose patched tree ./configure runs on
BUILDS = [("upstream 3.13.15 release x86_64-linux-gnu", "cpython-3.13.15-x86_64-linux-gnu", 7424),
          ("debian 3.13.15 release x86_64-linux-gnu", "cpython-3.13.15-debian-x86_64-linux-gnu", 7420)]
BUILDS_SAMPLE = BUILDS[:1]


@pytest.mark.parametrize("label,table,truth", BUILDS_SAMPLE)
def test_upstream_and_debian_3_13_15_differ_as_gcc_says(tmp_path, label, table, truth):
    b = job(label).inputs()
    assert gcc_offsetof(b, *FIELD, tmp_path) == truth
    t = table_yaml.load(ROOT / "generated" / f"{table}.yaml")
    _, f = resolve(t, ".".join(FIELD))
    assert f.offset == truth
    assert t.build.vendor == ("upstream" if label.startswith("upstream") else "debian 3.13.15-1")


def test_the_two_tables_have_one_version_and_two_identities():
    up = table_yaml.load(ROOT / "generated" / "cpython-3.13.15-x86_64-linux-gnu.yaml").build
    deb = table_yaml.load(ROOT / "generated" / "cpython-3.13.15-debian-x86_64-linux-gnu.yaml").build
    assert (up.version, up.hexversion, dict(up.config), up.target) == (deb.version, deb.hexversion, dict(deb.config),
                                                                        deb.target)
    assert up.inputs["headers"] != deb.inputs["headers"] and up.table_name != deb.table_name


@pytest.mark.parametrize("struct", ["PyInterpreterState", "JitOptContext", "_PyJitTracerState"])
def test_debian_3_15_core_defines_agree_with_its_debug_dwarf(struct):
    """Debian's 3.15 core is compiled with -D_Py_TIER2=3 -D_Py_JIT (its Makefile's PY_CORE_CFLAGS);
    scanned with them, the debug table agrees with the DWARF of Debian's own libpython3.15d, member
    by member (without them PyInterpreterState was 8 bytes short, JitOptContext 208,192 bytes)."""
    from offsets.scan import dwarf

    e = matrix.entry("3.15.2")
    info = dwarf.read(matrix.dbg_library(e, "x86_64-linux-gnu"))
    t = table_yaml.load(ROOT / "generated" / "cpython-3.15.2-debian-debug-x86_64-linux-gnu.yaml")
    assert t.build.defines.get("_Py_JIT") == "" and t.build.defines.get("_Py_TIER2") == "3"
    mine, _ = resolve(t, struct)
    theirs = info.structs[info.names.get(struct, struct)] if struct not in info.structs else info.structs[struct]
    assert mine.size == theirs.size
    assert {f.path: (f.offset, f.size) for f in mine.fields} == {f.path: (f.offset, f.size) for f in theirs.fields}
