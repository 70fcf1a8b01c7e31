"""macOS tables: python.org's framework builds' configuration as recorded facts, Apple's C library
as zig ships it, zig cc as the check; what stands in and what never checked them said; and a macOS
table kept apart from Linux's in both directions."""
from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import missing_input, missing_tool
from offsets import runtime
from offsets.errors import BuildError, NoMatchingTable, TableError
from offsets.layout import identity, table_yaml

REPO = Path(__file__).resolve().parent.parent
TRIPLES = ("aarch64-apple-darwin", "x86_64-apple-darwin")


def table(version: str, triple: str = TRIPLES[0]) -> Path:
    return REPO / "generated" / f"cpython-{version}-{triple}.yaml"


# ---------------------------------------------------------------- what the tables rest on

def test_python_orgs_pyconfig_is_written_back_from_the_recorded_facts():
    """Each build's facts name where they were read (a commit of the public repository) and what
    the macOS tables need of them: Apple's 8-byte pthread_key_t as SIZEOF_PTHREAD_KEY_T (3.9) or
    the feature-test macro that opens Apple's declarations, and the pyconfig.h written back defines
    exactly them."""
    from offsets.scan import macos

    facts = macos.facts()
    assert facts["source"]["repository"] == "schriftgestalt/GlyphsPythonPlugin"
    assert set(facts["builds"]) >= {"3.11.6", "3.12.0"}
    for version, rec in facts["builds"].items():
        assert len(rec["commit"]) == 40 and rec["path"].endswith(f"python{version.rsplit('.', 1)[0]}/pyconfig.h")
        defines = rec["defines"]
        assert defines["SIZEOF_LONG"] == "8" and defines["_DARWIN_C_SOURCE"] == "1" and "HAVE_EPOLL" not in defines
        text = macos.pyconfig_text(version)
        written = [line.split(None, 2)[1] for line in text.splitlines() if line.startswith("#define ")]
        assert written == ["Py_PYCONFIG_H", *defines]
    with pytest.raises(BuildError, match="no facts of python.org's macOS pyconfig.h 3.12.7"):
        macos.pyconfig_text("3.12.7")


def test_a_macos_table_says_what_stands_in_and_that_no_binary_checked_it():
    t = table_yaml.load(table("3.12.1"))
    assert t.build.stand_in.startswith("python.org's macOS pyconfig.h of CPython 3.12.0 (data/macos_pyconfig.yaml)")
    entries = {e["name"]: e for e in runtime.shipped_index()["tables"]}
    for triple in TRIPLES:
        checked = entries[f"cpython-3.12.1-{triple}"]["checked"]
        assert any(line.startswith("zig cc's offsetof") for line in checked), checked
        assert not any("the binary" in line or "DWARF" in line for line in checked), checked
    from offsets.drift import checked as drift_checked

    names = [f"cpython-3.12.1-{t}" for t in TRIPLES]
    said = drift_checked.sentence(names, {n: entries[n]["checked"] for n in names})
    assert "compilers: zig cc" in said and "no binary of these builds was at hand" in said


def test_macos_layouts_are_apples_not_linuxs():
    """What the issue measured from python.org's own framework headers: Py_NSIG is 32, Py_tss_t 16
    bytes (pthread_key_t of 8), and in 3.12 _PyRuntimeState.ceval is at 1416 against Linux's 1944."""
    mac, linux = table_yaml.load(table("3.12.1")), table_yaml.load(REPO / "generated/cpython-3.12.1-x86_64-linux-gnu.yaml")

    def ceval(t):
        return next(f.offset for f in t.structs["_PyRuntimeState"].fields if f.path == "ceval")

    assert (mac.constants["Py_NSIG"].value, linux.constants["Py_NSIG"].value) == (32, 65)
    assert (mac.structs["Py_tss_t"].size, linux.structs["Py_tss_t"].size) == (16, 8)
    assert (ceval(mac), ceval(linux)) == (1416, 1944)


@pytest.mark.parametrize("change,message", [
    ({"version": "3.12.1", "pyconfig": "3.12.0"}, "`why` goes with"),
    ({"version": "3.12.1", "pyconfig": "3.12.1", "why": "x"}, "records no python.org pyconfig.h 3.12.1"),
    ({"version": "3.7.16", "headers": "source", "pyconfig": "3.11.6", "why": "x"}, "no packaged entry of 3.7.16"),
    ({"version": "3.14.10", "pyconfig": "3.12.0", "why": "x"}, "pyenv's list lacks 3.14.10")])
def test_the_matrix_refuses_a_macos_entry_that_does_not_hold_together(change, message):
    from offsets.tools import matrix

    data = yaml.safe_load((REPO / "offsets/data/matrix.yaml").read_text())
    entry = {"headers": "pyenv", "builds": [["release", TRIPLES[0]]]}
    entry.update(change)
    data["macos"] = [entry]
    with pytest.raises(BuildError, match=message):
        matrix.checked_matrix(copy.deepcopy(data))


# ---------------------------------------------------------------- Linux and macOS kept apart

def test_python_on_macos_knows_its_triple(monkeypatch):
    """A macOS build's MULTIARCH is `darwin`: the CPU is the one the process runs as (a universal2
    build under Rosetta runs as x86_64, and the kernel says so)."""
    import sysconfig

    assert identity.macos_triple() is None
    sysconfig.get_config_vars()     # read as on Linux before sys.platform says darwin
    monkeypatch.setattr(sys, "platform", "darwin")
    for machine, triple in (("arm64", TRIPLES[0]), ("x86_64", TRIPLES[1]), ("Power Macintosh", "")):
        monkeypatch.setattr(os, "uname", lambda m=machine: os.uname_result(("Darwin", "mac", "23.1.0", "", m)))
        assert identity.macos_triple() == triple
    monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Darwin", "mac", "23.1.0", "", "arm64")))
    assert identity.running(with_inputs=False)["triple"] == TRIPLES[0]


def test_a_macos_table_is_refused_on_linux():
    minor = "%d.%d" % sys.version_info[:2]
    found = sorted((REPO / "generated").glob(f"cpython-{minor}.*-{TRIPLES[0]}.yaml"))
    if not found:
        missing_input(f"no macOS table of {minor}: tests run on 3.9-3.12, whose tables generated/ has")
    with pytest.raises(TableError, match=f"is for cpython-{minor}.*{TRIPLES[0]}, not for this"):
        runtime.use_table(found[0], verify=False)


def test_the_choice_never_crosses_between_linux_and_macos():
    from offsets.runtime import choice

    me = runtime.running_identity()
    entries = runtime.shipped_index()["tables"]
    mac = [e for e in entries if e["triple"] in TRIPLES]
    linux = [e for e in entries if e["triple"].endswith("-linux-gnu")]
    assert {e["triple"] for e in mac} == set(TRIPLES) and linux
    minor = "%d.%d." % sys.version_info[:2]
    for triple in TRIPLES:
        me_mac = me.replace(triple=triple)
        mine = {e["triple"] for e in mac if e["version"].startswith(minor)} & {triple}
        assert {e["triple"] for e in choice.near(me_mac, entries)} == mine
        with pytest.raises(NoMatchingTable):
            runtime.select(me_mac, linux, load=runtime.load_shipped)
    assert not set(TRIPLES) & {e["triple"] for e in choice.near(me, entries)}
    with pytest.raises(NoMatchingTable):
        runtime.select(me, mac, load=runtime.load_shipped)


@pytest.mark.parametrize("triple", TRIPLES)
def test_the_c_extensions_compile_for_macos(triple, tmp_path):
    """The runtime's C extensions compile for macOS (zig cc, warnings as errors) against the headers
    and configuration of the newest macOS table: what is Linux's alone in them stays under
    `#ifdef __linux__`. No Mac is at hand to run them on."""
    if importlib.util.find_spec("ziglang") is None:
        missing_tool("zig", "pip install ziglang (make test installs it)")
    from offsets.scan import targets as scan_targets, zig
    from offsets.tools import matrix

    newest = max(matrix.matrix()["macos"], key=lambda m: tuple(int(x) for x in m["version"].split(".")))
    b = matrix.macos_inputs(newest, triple)
    for name in ("_lookup", "_offsets", "_raised"):
        subprocess.run([*zig.cc(triple), *scan_targets.MACOS[triple], "-Wall", "-Werror", "-c", "-o", f"{name}.o",
                        "-I", str(b.pyconfig.parent), "-I", str(b.include_dir), "-I", str(REPO / "headers"),
                        str(REPO / "offsets" / f"{name}.c")], cwd=tmp_path, check=True)
        assert (tmp_path / f"{name}.o").read_bytes()[:4] == b"\xcf\xfa\xed\xfe"     # a 64-bit Mach-O object


def test_the_scanner_on_a_mac_takes_macos_for_its_own_target(monkeypatch):
    """`arm64` on a Mac is macOS's, never Linux's aarch64 (whose table would be wrong there)."""
    import platform

    from offsets.errors import BuildError
    from offsets.scan import targets as scan_targets

    monkeypatch.setattr(sys, "platform", "darwin")
    for machine, triple in (("arm64", TRIPLES[0]), ("x86_64", TRIPLES[1])):
        monkeypatch.setattr(platform, "machine", lambda m=machine: m)
        assert scan_targets.host().triple == triple
    monkeypatch.setattr(platform, "machine", lambda: "Power Macintosh")
    with pytest.raises(BuildError, match="not a supported target"):
        scan_targets.host()


@pytest.mark.parametrize("header,target", [("cpython-3.12.1-aarch64-apple-darwin", "aarch64-linux-gnu"),
                                           ("cpython-3.13.5-debian-aarch64-linux-gnu", "aarch64-apple-darwin")])
def test_a_header_of_one_system_stops_a_compile_for_the_other(header, target, tmp_path):
    """The same CPU, another system: the generated header's guard stops the compile with its one
    `#error` (Apple's clang defines __aarch64__ as Linux's compilers do)."""
    import shutil

    from offsets.scan import targets as scan_targets

    if shutil.which("clang") is None:
        missing_tool("clang", "apt-get install clang (make test installs it)")
    (tmp_path / "t.c").write_text(f'#include "pyoffsets_{header}.h"\n')
    proc = subprocess.run(["clang", f"--target={target}", *scan_targets.MACOS.get(target, ()), "-fsyntax-only",
                           f"-I{REPO / 'generated'}", "t.c"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"pyoffsets_{header}.h is for {header.split('-', 2)[2].replace('debian-', '')}" in errors[0], \
        proc.stderr[-1000:]
