"""The runtime installs and runs alone: `pip install cpython-offsets` needs no third-party package.

The truth for the offset is the live interpreter: a list iterator advanced twice holds 2 at the
offset the runtime gives for `listiterobject.it_index`, read with ctypes in the fresh venv.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from offsets import cache_lock
from offsets.data_cache import folder as cache_folder
from test_capi import ROOT, package_files, run

CHECK = """
import ctypes, sys, offsets
off = offsets.get("listiterobject.it_index")
it = iter([10, 20, 30]); next(it); next(it)
print(off, ctypes.c_ssize_t.from_address(id(it) + off).value)
"""


def runtime_wheel() -> Path:
    """The wheel `pip wheel .` makes of this checkout, built once per content of the package."""
    h = hashlib.sha256()
    for p in package_files():
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    out = cache_folder() / "wheels" / f"{sys.implementation.cache_tag}-{h.hexdigest()[:16]}"
    with cache_lock.held("wheels/build"):          # one process builds it
        wheels = sorted(out.glob("cpython_offsets-*.whl"))
        if not wheels:
            tmp = out.with_name(out.name + ".tmp")
            run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                 "-w", tmp, ROOT])
            tmp.rename(out)
            wheels = sorted(out.glob("cpython_offsets-*.whl"))
    (wheel,) = wheels
    return wheel


def runtime_venv(tmp_path: Path) -> tuple[Path, list]:
    """A fresh venv with nothing but the runtime wheel, installed offline: (its python, pip for it)."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    py = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", py, "--disable-pip-version-check"]   # this pip, that venv
    run(pip + ["install", "-q", "--no-index", runtime_wheel()])   # a dependency would fail here
    return py, pip


def test_the_wheel_requires_nothing_and_ships_tables_extension_and_header():
    with zipfile.ZipFile(runtime_wheel()) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [l for l in meta.splitlines() if l.startswith("Requires-Dist:")]
    assert requires and all("extra ==" in l for l in requires), requires
    assert any("libclang" in l and 'extra == "scan"' in l for l in requires)
    assert not any("pycparser" in l for l in requires)
    assert "offsets/data/compact/index.json" in names
    assert any(n.startswith("offsets/_offsets") and n.endswith(".so") for n in names)
    assert "offsets/include/pyoffsets.h" in names


@pytest.mark.slow
def test_the_runtime_wheel_answers_in_a_venv_with_nothing_else(tmp_path):
    py, pip = runtime_venv(tmp_path)
    listed = run(pip + ["list", "--format=freeze"]).split()
    assert [l.split("==")[0] for l in listed] == ["cpython-offsets"], listed
    offset, value = run([py, "-I", "-c", CHECK], cwd=tmp_path).split()
    assert int(value) == 2, f"it_index read at offset {offset} holds {value}, not 2"
    # the command line answers too, through the alias map (listiterobject is _PyListIterObject in 3.12+)
    assert run([py.parent / "offsets", "get", "listiterobject.it_index"]).split()[-1] == offset


def test_the_runtime_imports_nothing_from_site_packages():
    """Every module `import offsets` and its calls load comes with the interpreter, or is offsets'."""
    code = "import sys; before = set(sys.modules)\n" + CHECK + """
offsets.sizeof("PyListObject"); offsets.field("PyListObject.ob_item"); offsets.build(); offsets.get_include()
import offsets._offsets, site, sysconfig
places = tuple(site.getsitepackages()) + (site.getusersitepackages(), sysconfig.get_paths()["purelib"])
for name in sorted(set(sys.modules) - before):
    where = getattr(sys.modules[name], "__file__", None) or ""
    if name.split(".")[0] != "offsets" and where.startswith(places):
        print("third-party:", name, where)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "third-party:" not in out, out
    offset, value = out.split()[:2]
    assert int(value) == 2


@pytest.mark.slow
def test_a_scan_command_without_the_scan_extra_says_how_to_get_it(tmp_path):
    py, _ = runtime_venv(tmp_path)
    proc = subprocess.run([py.parent / "offsets", "scan", "-o", tmp_path / "t.yaml"], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().endswith("pip install 'cpython-offsets[scan]'"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
