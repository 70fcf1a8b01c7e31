"""Cross targets and Debian prefixes as they are unpacked.

i686 and aarch64 are scanned from this machine with Debian's libc6-dev/linux-libc-dev and
libpython3.11-dev of that architecture (fetched by name into $OFFSETS_CACHE). Cross scans parse
only Objects/listobject.c of the source tree (the full tree is scanned for x86_64 in
test_sources.py); gcc checks those numbers (gcc -m32, aarch64-linux-gnu-gcc).
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import missing_tool
from offsets.scan import build_inputs as build, scanner, sources, targets
from offsets.check import probe
from offsets.layout import table_yaml
from offsets.errors import BuildError

CROSS = {"i686-linux-gnu": ("i386", "i386-linux-gnu", 4), "aarch64-linux-gnu": ("arm64", "aarch64-linux-gnu", 8)}


def scan_cli(*args, tmp_path):
    out = tmp_path / "t.yaml"
    proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "-q", *map(str, args), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return table_yaml.load(out)


@pytest.mark.parametrize("triple", sorted(CROSS))
def test_system_includes_of_another_cpu(triple):
    t = targets.target(triple)
    arch_dir, common = targets.system_includes(t)
    assert arch_dir.name == t.multiarch and (arch_dir / "bits/wordsize.h").is_file()
    assert (arch_dir / "asm/types.h").is_file() and (common / "stdio.h").is_file()   # linux-libc-dev, libc6-dev
    wordsize = (arch_dir / "bits/wordsize.h").read_text()
    assert ("__x86_64__" in wordsize) == (triple == "i686-linux-gnu")   # i386's libc headers are x86's


@pytest.mark.parametrize("triple", sorted(CROSS))
def test_listiterobject_for_another_cpu(triple, debian311):
    arch, multiarch, pointer = CROSS[triple]
    b = build.from_source(debian311.tree, debian311.pyconfig(arch, multiarch), target=triple)
    units, _, _ = sources.source_units(b)
    unit = next(u for u in units if u.name == "Objects/listobject.c")
    (result,) = scanner.parse_units([unit], scanner.ScanOptions(jobs=1))
    s = result.structs["listiterobject"]
    assert s.field("it_seq").size == pointer    # PyListObject *
    assert s.field("it_index").offset == {4: 8, 8: 16}[pointer] and s.size == 4 * pointer
    try:
        cc = probe.compiler_for(b.target)     # gcc -m32; aarch64-linux-gnu-gcc (the Makefile installs it)
    except BuildError as e:
        missing_tool(f"a C compiler for {triple}", f"{e}; libclang's answer stands unchecked by gcc")
    structs = [v for v in result.structs.values() if v.defined_in.startswith("Objects/listobject.c:")]
    report = probe.probe_unit(structs, f'#include "{unit.path}"', cc, probe.gcc_flags(unit.args, b, cc), pointer)
    assert report.mismatches == () and "listiterobject.it_index" in report.checked


@pytest.mark.parametrize("triple", sorted(CROSS))
def test_debian_prefix_of_another_cpu_names_its_target(triple, debian311, tmp_path):
    """libpython3.11-dev's python3.11/pyconfig.h only forwards to <multiarch>/python3.11/pyconfig.h:
    the target follows from the one architecture present, and the header scan is for that CPU."""
    arch, multiarch, pointer = CROSS[triple]
    usr = debian311.dev(arch)
    assert "SIZEOF_VOID_P" not in (usr / "include/python3.11/pyconfig.h").read_text()
    b = build.from_prefix(usr)
    assert b.target.triple == triple and b.pyconfig == usr / "include" / multiarch / "python3.11/pyconfig.h"
    t = scan_cli("--prefix", usr, tmp_path=tmp_path)
    assert (t.build.target.triple, t.build.target.pointer_size) == (triple, pointer)
    assert t.structs["PyObject"].size == 2 * pointer
    with pytest.raises(BuildError, match="pass the matching --target"):
        build.from_prefix(usr, target="x86_64-linux-gnu")


def test_debian_prefix_with_source_tree(debian311, tmp_path):
    t = scan_cli("--prefix", debian311.dev("amd64"), "--source", debian311.tree, tmp_path=tmp_path)
    assert t.structs["listiterobject"].field("it_index").offset == 16
    assert t.build.inputs["source"] == debian311.table().build.inputs["source"]


def test_debian_dbg_prefix(debian311, tmp_path):
    """libpython3.11-dbg beside libpython3.11-dev: python3.11d/ holds symlinks into python3.11/ and a
    pyconfig.h forwarding to x86_64-linux-gnu/python3.11d/pyconfig.h, which defines Py_DEBUG."""
    usr = debian311.root(("libpython3.11-dev", "libpython3.11-dbg"), "amd64") / "usr"
    real = usr / "include/x86_64-linux-gnu/python3.11d/pyconfig.h"
    assert re.search(r"^#define Py_DEBUG 1$", real.read_text(), re.M)
    with pytest.raises(BuildError, match="several builds.*--config"):
        build.from_prefix(usr)
    b = build.from_prefix(usr, config="debug")
    assert b.include_dir.name == "python3.11d" and b.pyconfig == real and b.config == "debug"
    assert build.from_prefix(usr, config="release").include_dir.name == "python3.11"
    headers = {str(p.relative_to(b.include_dir)) for p in build.header_files(b)}
    assert {"internal/pycore_list.h", "cpython/listobject.h"} <= headers   # symlinked directories followed
    for args in (("--config", "debug"), ("--include-dir", usr / "include/python3.11d")):
        t = scan_cli("--prefix", usr, *args, tmp_path=tmp_path)
        assert t.build.config["Py_DEBUG"] is True and t.build.config_name == "debug"
    alone = debian311.root(("libpython3.11-dbg",), "amd64") / "usr"
    with pytest.raises(BuildError, match="libpython3.X-dev beside libpython3.X-dbg"):
        build.from_prefix(alone)
