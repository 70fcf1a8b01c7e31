"""The C API, proven by a test extension that plays a JIT (tests/jitext/), on every CPython.

For each pyenv CPython 3.8-3.13: a venv (cached in $OFFSETS_CACHE/venvs, keyed by the digest of the
package's sources) gets `pip install .` of this package (which compiles offsets/_offsets.c for that
interpreter), jitext is built against the *installed* pyoffsets.h (offsets.get_include()), and
tests/jitext/check_jit.py reads live objects through the capsule and compares them with Python.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JITEXT = ROOT / "tests" / "jitext"
VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
#: What check_jit.py must have checked on every interpreter (listiterobject joins once tables have it).
REQUIRED = {"getters fail before PyOffsets_Import()", "table identity through the capsule",
            "C and Python answers agree", "unknown name -> UnknownNameError with a suggestion",
            "PyListObject.ob_item[i] is lst[i]", "PyTupleObject.ob_item[i] is t[i]", "PyLongObject digits",
            "current frame's code object through the thread state"}
LISTITER = "listiterobject.it_index == 3 and it_seq is lst"


def cache_dir() -> Path:
    return Path(os.environ.get("OFFSETS_CACHE") or Path.home() / ".cache" / "offsets")


def package_files() -> list[Path]:
    """What `pip install .` builds from: the package, its C sources, headers and metadata."""
    files = [ROOT / n for n in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md")]
    files += [ROOT / "headers" / "pyoffsets.h"]
    files += [p for p in (ROOT / "offsets").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".so", ".pyc")]
    return sorted(p for p in files if p.exists())


#: The files the installed runtime and C API are made of: a change to one of them makes a new venv
#: (the other modules of the package are copied too, but nothing in check_jit.py uses them).
RUNTIME_FILES = ("setup.py", "pyproject.toml", "MANIFEST.in", "headers/pyoffsets.h", "offsets/__init__.py",
                 "offsets/errors.py", "offsets/model.py", "offsets/runtime.py", "offsets/live_check.py",
                 "offsets/compact.py", "offsets/_offsets.c", "offsets/data/compact/index.json")


def source_digest() -> str:
    h = hashlib.sha256()
    runtime = [ROOT / f for f in RUNTIME_FILES] + sorted((ROOT / "offsets" / "data" / "compact").glob("*.jsonl"))
    for p in runtime + sorted(JITEXT.glob("*.[ch]")) + [JITEXT / "setup.py"]:
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def pyenv_python(version: str):
    try:
        prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    exe = Path(prefix.strip()) / "bin" / "python3"
    return exe if exe.is_file() else None


def run(args, **kw):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    if proc.returncode:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}")
    return proc.stdout


def prepared_venv(python: Path, version: str) -> tuple[Path, Path]:
    """(venv python, directory holding the built jitext), made once per source digest."""
    venv = cache_dir() / "venvs" / f"{version}-{source_digest()}"
    vpy, ext = venv / "bin" / "python", venv / "jitext-build"
    if (venv / ".ok").exists():
        return vpy, ext
    for old in venv.parent.glob(f"{version}-*"):   # venvs of older sources
        shutil.rmtree(old, ignore_errors=True)
    run([python, "-m", "venv", venv])
    run([vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", "setuptools>=68", "wheel"])
    src = venv / "src"        # a copy, so that no build/ litters the checkout other builds share
    for p in package_files():
        dest = src / p.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dest)
    run([vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-build-isolation", src])
    run([vpy, JITEXT / "setup.py", "-q", "build_ext", "--build-lib", ext, "--build-temp", venv / "jitext-tmp"],
        cwd=JITEXT)
    (venv / ".ok").write_text("")
    return vpy, ext


def check_in(vpy: Path, ext: Path, cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OFFSETS_STRICT")}
    env["PYTHONPATH"] = str(ext)
    out = run([vpy, JITEXT / "check_jit.py"], cwd=cwd, env=env)
    return json.loads(out.strip().splitlines()[-1])


def listiter_expected(table_name: str) -> bool:
    """Whether the shipped table has listiterobject (then the iterator check must have run)."""
    sys.path.insert(0, str(ROOT))
    try:
        from offsets import compact

        index = json.loads((compact.COMPACT_DIR / "index.json").read_text())
        entry = next(e for e in index["tables"] if e["name"] == table_name)
        head, _ = compact.header(compact.COMPACT_DIR / entry["file"])
        aliases = index["aliases"].get("listiterobject", [])
        return any(n in head["structs"] or n in head["names"] for n in ["listiterobject", *aliases])
    finally:
        sys.path.pop(0)


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_jit_extension_on_every_cpython(version, tmp_path):
    python = pyenv_python(version)
    if python is None:
        pytest.skip(f"no pyenv CPython {version} on this machine (`pyenv install {version}` to test it)")
    vpy, ext = prepared_venv(python, version)
    got = check_in(vpy, ext, tmp_path)
    assert got["python"].startswith(version + ".")
    assert got["match"] == "exact", got
    assert REQUIRED <= set(got["checked"]), REQUIRED - set(got["checked"])
    if listiter_expected(got["table"]):
        assert LISTITER in got["checked"], got
    else:
        assert got["not_checked"] == ["listiterobject: not in this table yet"]


def test_jit_extension_on_this_interpreter(tmp_path):
    """The same check with the interpreter running the tests, against the checkout's package."""
    if not any((ROOT / "offsets").glob("_offsets*.so")):
        pytest.skip("offsets._offsets is not built in the checkout: `pip install -e .` builds it")
    ext = tmp_path / "ext"
    run([sys.executable, JITEXT / "setup.py", "-q", "build_ext", "--build-lib", ext, "--build-temp", tmp_path / "t"],
        cwd=JITEXT)
    env = {k: v for k, v in os.environ.items() if k != "OFFSETS_STRICT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ext), str(ROOT)])
    got = json.loads(run([sys.executable, JITEXT / "check_jit.py"], cwd=tmp_path, env=env).strip().splitlines()[-1])
    assert REQUIRED <= set(got["checked"])
    assert got["bench_ns"] < 1000


def test_capsule_refuses_without_a_table(tmp_path):
    """No table for this interpreter: importing the capsule fails with NoMatchingTable, not garbage."""
    if not any((ROOT / "offsets").glob("_offsets*.so")):
        pytest.skip("offsets._offsets is not built in the checkout")
    code = ("import offsets.runtime as r\n"
            "r.running_identity = lambda: dict(version='3.99.0', hexversion=0x036300f0, config={}, "
            "triple='x86_64-linux-gnu', pointer_size=8)\n"
            "try:\n    import offsets._offsets\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    out = run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.startswith("NoMatchingTable no shipped table fits CPython 3.99.0"), out
    assert "offsets scan" in out
