"""`offsets identify --binary` on an executable that only starts its libpython (`--enable-shared`)
reads the libpython that executable loads, found as the dynamic loader finds it (remote/linked.py).
Checked against the loader itself: the libpython the executable maps when it runs, in the same
environment (`/proc/self/maps`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import missing_input, pyenv_python

#: a program linked against libpython that prints the libpython it mapped (and needs it: it calls it)
PROGRAM = r"""
#include <stdio.h>
#include <string.h>
extern const char *Py_GetVersion(void);
int main(void) {
    char line[4096];
    FILE *maps = fopen("/proc/self/maps", "r");
    if (Py_GetVersion() == NULL || maps == NULL) return 1;
    while (fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (path != NULL && strstr(path, "/libpython") != NULL) { fputs(path, stdout); break; }
    }
    return 0;
}
"""


def _mapped(argv: list, env: dict) -> str:
    """The libpython `argv` maps when the loader starts it in `env` (the real path)."""
    out = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return os.path.realpath(out.stdout.strip().splitlines()[0])


def _identified(binary: str):
    from offsets.remote import identify

    return identify.of_binary(binary)


@pytest.mark.parametrize("version", ["3.9", "3.13"])
def test_a_pyenv_executable_is_read_through_the_libpython_it_maps(version):
    python = pyenv_python(version)
    if python is None:
        missing_input(f"pyenv has no CPython {version}")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    maps = "import sys; print(next(l.split(None, 5)[5] for l in open('/proc/self/maps') if '/libpython' in l))"
    mapped = _mapped([str(python), "-c", maps], env)
    got = subprocess.run([sys.executable, "-m", "offsets", "identify", "--binary", str(python), "--json"],
                         capture_output=True, text=True, env=env)
    assert got.returncode == 0, got.stderr
    keys = json.loads(got.stdout)
    assert os.path.realpath(keys["binary"]) == mapped
    assert keys["loaded_by"] == str(python) and keys["found_by"].startswith("DT_RUNPATH ")
    direct = _identified(mapped)
    assert (keys["build_id"], keys["version"], keys["table"]) == (direct.build_id, direct.version, f"cpython-{direct.version}-x86_64-linux-gnu")
    assert keys["earned"] == "exact"


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Two programs linked against pyenv 3.11's libpython: one searching `$ORIGIN/a` by DT_RPATH, one
    `$ORIGIN/c` by DT_RUNPATH; copies of that libpython in a/, b/ and c/."""
    python = pyenv_python("3.11")
    if python is None:
        missing_input("pyenv has no CPython 3.11")
    if shutil.which("gcc") is None:
        missing_input("no gcc (Debian's package gcc)")
    lib = python.resolve().parent.parent / "lib"
    root = tmp_path_factory.mktemp("linked")
    (root / "p.c").write_text(PROGRAM)
    for name, tags in (("rpath", "--disable-new-dtags"), ("runpath", "--enable-new-dtags")):
        where = "a" if name == "rpath" else "c"
        subprocess.run(["gcc", "-o", str(root / name), str(root / "p.c"), f"-L{lib}", "-lpython3.11",
                        f"-Wl,{tags},-rpath,$ORIGIN/{where}"], check=True, capture_output=True)
    for d in "abc":
        (root / d).mkdir()
        shutil.copy(lib / "libpython3.11.so.1.0", root / d)       # copies: a link would change the original's ctime
    return root


@pytest.mark.parametrize("program, library_path, loaded", [
    ("rpath", "b", "a"),        # DT_RPATH comes before LD_LIBRARY_PATH
    ("runpath", "b", "b"),      # LD_LIBRARY_PATH before DT_RUNPATH
    ("runpath", None, "c"),     # DT_RUNPATH, $ORIGIN expanded
])
def test_the_libpython_read_is_the_one_the_loader_maps(programs, monkeypatch, program, library_path, loaded):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    if library_path:
        env["LD_LIBRARY_PATH"] = str(programs / library_path)
        monkeypatch.setenv("LD_LIBRARY_PATH", str(programs / library_path))
    mapped = _mapped([str(programs / program)], env)
    assert mapped == str((programs / loaded / "libpython3.11.so.1.0").resolve())
    ident = _identified(str(programs / program))
    assert os.path.realpath(ident.binary) == mapped
    assert ident.loaded_by == str(programs / program) and ident.version.startswith("3.11.")


def test_a_libpython_found_nowhere_or_holding_no_interpreter_is_refused_saying_so(programs, monkeypatch, tmp_path):
    """A program needing `libpython3.99.so.1.0` (a library of this test's own, which defines
    Py_GetVersion and no interpreter): where the loader finds none, identify says which file it needs
    and where it looked; where it finds it, that it holds no interpreter."""
    from offsets.errors import NotPython

    (tmp_path / "fake.c").write_text('const char *Py_GetVersion(void) { return "3.99.0"; }\n')
    (tmp_path / "c").mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "c" / "libpython3.99.so.1.0"), str(tmp_path / "fake.c"),
                    "-Wl,-soname,libpython3.99.so.1.0"], check=True, capture_output=True)
    os.symlink("libpython3.99.so.1.0", tmp_path / "c" / "libpython3.99.so")
    subprocess.run(["gcc", "-o", str(tmp_path / "program"), str(programs / "p.c"), f"-L{tmp_path / 'c'}", "-lpython3.99",
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/c"], check=True, capture_output=True)
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    assert _mapped([str(tmp_path / "program")], env) == str(tmp_path / "c" / "libpython3.99.so.1.0")
    with pytest.raises(NotPython, match=r"loads .*/c/libpython3\.99\.so\.1\.0 \(DT_RUNPATH .*/c\), which holds no "
                                        r"interpreter either: .* defines no Py_Initialize"):
        _identified(str(tmp_path / "program"))

    shutil.rmtree(tmp_path / "c")
    ran = subprocess.run([str(tmp_path / "program")], capture_output=True, text=True, env=env)
    assert ran.returncode != 0 and "libpython3.99.so.1.0" in ran.stderr       # the loader finds it nowhere
    with pytest.raises(NotPython) as e:
        _identified(str(tmp_path / "program"))
    assert f"it loads libpython3.99.so.1.0, found in none of {tmp_path / 'c'}, " in str(e.value)


def test_an_executable_of_no_python_stays_refused():
    from offsets.errors import NotPython

    with pytest.raises(NotPython, match="does not hold a CPython interpreter: it defines no Py_Initialize$"):
        _identified(shutil.which("ls") or "/bin/ls")
