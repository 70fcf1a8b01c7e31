"""The runtime installs and runs alone: `pip install cpython-offsets` needs no third-party package.

The truth for the offset is the live interpreter: a list iterator advanced twice holds 2 at the
offset the runtime gives for `listiterobject.it_index`, read with ctypes in the fresh venv.
"""
from __future__ import annotations

import hashlib
import os
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


# ------------------------------------------------------------------ the runtime's commands, no yaml
#: `offsets CMD` run by an interpreter that has no PyYAML (pyenv's, `-I`: no site-packages, no
#: PYTHON* variable), with this checkout first on its path.
NO_YAML = """import sys
sys.path.insert(0, sys.argv.pop(1))
from offsets.cli import main
sys.exit(main())
"""
TABLE_312 = ROOT / "generated" / "cpython-3.12.1-x86_64-linux-gnu.yaml"
TABLE_313 = ROOT / "generated" / "cpython-3.13.0-x86_64-linux-gnu.yaml"
#: PyObject's and PyVarObject's fields are the stable ABI's (Include/object.h): no CPython moves
#: them, so a diff watching only them finds no drift (exit 0) between any two builds.
STABLE_ABI = "PyObject.ob_refcnt\nPyObject.ob_type\nPyVarObject.ob_size\n"
#: What README.md's Install section says needs only the runtime on the shipped tables, each with
#: its usual options ({pid}: a running interpreter of the same build; {tmp}: a scratch folder).
RUNTIME_COMMANDS = {
    "get": ["get", "listiterobject.it_index"],
    "show": ["show", "listiterobject"],
    "constant": ["constant", "FRAME_OWNED_BY_CSTACK"],
    "diff": ["diff", TABLE_312, TABLE_313],
    "diff --watch": ["diff", TABLE_312, TABLE_313, "--watch", "{tmp}/watch.txt"],
    "diff --watch --format json": ["diff", TABLE_312, TABLE_313, "--watch", "{tmp}/watch.txt", "--format", "json"],
    "diff --watch --format markdown": ["diff", TABLE_312, TABLE_313, "--watch", "{tmp}/watch.txt", "-f", "markdown"],
    "history": ["history", "listiterobject.it_index"],
    "history --tables": ["history", "FRAME_OWNED_BY_CSTACK", "--tables", ROOT / "generated"],
    "report": ["report", "--struct", "PyObject", "-c", "FRAME_OWNED_BY_CSTACK", "-o", "{tmp}/r.html"],
    "report TABLES": ["report", TABLE_312, TABLE_313, "-s", "_PyInterpreterFrame", "-o", "{tmp}/r.html"],
    "export": ["export", "--lang", "c", "cpython-3.13.0-x86_64-linux-gnu"],
    "export TABLE.yaml": ["export", "--lang", "rust", TABLE_312],
    "export --index": ["export", "--index", "-o", "{tmp}/index.json"],
    "identify": ["identify", "--pid", "{pid}", "--json"],
    "stack": ["stack", "--pid", "{pid}"],
}


@pytest.fixture(scope="module")
def python_without_yaml():
    """pyenv's 3.12 with `-I`, which has no PyYAML (the runtime's whole world), and one of its
    processes idling (for identify and stack)."""
    from conftest import missing_input, pyenv_python
    from runtime_child import running

    python = pyenv_python("3.12")
    if python is None:
        missing_input("pyenv's CPython 3.12 is not installed (pyenv install 3.12)")
    if subprocess.run([python, "-I", "-c", "import yaml"], capture_output=True).returncode == 0:
        missing_input(f"{python} -I imports yaml: the test needs an interpreter without it")
    with running(python) as pid:
        yield python, pid


@pytest.mark.parametrize("command", RUNTIME_COMMANDS)
def test_each_runtime_command_runs_without_yaml(command, python_without_yaml, tmp_path):
    python, pid = python_without_yaml
    (tmp_path / "watch.txt").write_text(STABLE_ABI)
    args = [str(a).format(pid=pid, tmp=tmp_path) for a in RUNTIME_COMMANDS[command]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFSETS_") or k == "OFFSETS_CACHE"}
    proc = subprocess.run([python, "-I", "-c", NO_YAML, ROOT, *args], capture_output=True, text=True, cwd=tmp_path,
                          env={**env, "OFFSETS_AUTOSCAN": "0"})
    assert "needs yaml" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # a plain diff of 3.12 and 3.13 finds drift (exit 1): 3.13's _PyInterpreterFrame (pyenv's headers,
    # internal/pycore_frame.h) opens with f_executable where 3.12's has f_code; all else is 0
    assert proc.returncode == (1 if command == "diff" else 0), proc.stderr
    if command.startswith("diff --watch"):
        assert "no drift in the 3 watched" in proc.stdout, proc.stdout
