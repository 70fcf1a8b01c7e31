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
import time
from pathlib import Path

import pytest

from conftest import c_extension_built, missing_input, pyenv_python3
from offsets.data_cache import folder as cache_folder
from offsets.tools.bench_startup import package_files    # what `pip install .` builds from

ROOT = Path(__file__).resolve().parent.parent
JITEXT = ROOT / "tests" / "jitext"
VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
#: The interpreters `make test` builds and runs the JIT extension and the worked example on: the
#: oldest, the newest and the one between, each with a venv of the package (`prepared_venv`) other
#: tests of `make test` make anyway (test_first_hour.py and test_capi_first_error.py 3.8 and 3.13, the
#: sub-interpreters' test 3.11 to 3.13); `make prove` runs them on the others
#: (tests/prove/test_beyond_samples.py), a venv each.
VERSIONS_SAMPLE = ("3.8", "3.11", "3.13")
#: What check_jit.py must have checked on every interpreter (listiterobject joins once tables have it).
REQUIRED = {"getters fail before PyOffsets_Import()", "table identity through the capsule",
            "C and Python answers agree", "unknown name -> UnknownNameError with a suggestion",
            "PyListObject.ob_item[i] is lst[i]", "PyTupleObject.ob_item[i] is t[i]", "PyLongObject digits",
            "current frame's code object through the thread state",
            "no thread state: a miss refused with EPERM, a cached name answered",
            "constants through the capsule: PyLong_SHIFT == sys.int_info.bits_per_digit"}
LISTITER = "listiterobject.it_index == 3 and it_seq is lst"


#: The files the installed runtime and C API are made of: a change to one of them makes a new venv
#: (the other modules of the package are copied too, but nothing in check_jit.py uses them).
#: what a venv's installed runtime is made of: every file of the package (a hand-kept list of the
#: runtime's modules missed new ones, and a venv with old code was reused), and what builds it
RUNTIME_FILES = ("setup.py", "pyproject.toml", "MANIFEST.in", "headers/pyoffsets.h")


def source_digest() -> str:
    h = hashlib.sha256()
    runtime = [ROOT / f for f in RUNTIME_FILES] + sorted(p for p in (ROOT / "offsets").rglob("*")
                                                         if p.is_file() and "__pycache__" not in p.parts
                                                         and p.suffix in (".py", ".c", ".json", ".jsonl", ".yaml"))
    for p in runtime + sorted(JITEXT.glob("*.[ch]")) + [JITEXT / "setup.py"]:
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def run(args, **kw):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    if proc.returncode:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}")
    return proc.stdout


def prepared_venv(python: Path, version: str) -> tuple[Path, Path]:
    """(venv python, directory holding the built jitext), made once per source digest by one process."""
    from offsets import cache_lock

    with cache_lock.held(f"venvs/{version}"):
        return _prepared_venv(python, version)


def _prepared_venv(python: Path, version: str) -> tuple[Path, Path]:
    """(venv python, directory holding the built jitext), made once per source digest."""
    venv = cache_folder() / "venvs" / f"{version}-{source_digest()}"
    vpy, ext = venv / "bin" / "python", venv / "jitext-build"
    if (venv / ".ok").exists():
        os.utime(venv)            # in use: kept by the clean-up below
        return vpy, ext
    for old in venv.parent.glob(f"{version}-*"):   # venvs of older sources, unused for two days (not those
        if time.time() - old.stat().st_mtime > 2 * 86400:   # of another checkout sharing the cache now)
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
        from offsets.layout import compact, compact_read

        index = json.loads((compact.COMPACT_DIR / "index.json").read_text())
        entry = next(e for e in index["tables"] if e["name"] == table_name)
        head, pool = compact_read.open_table(str(compact.COMPACT_DIR / entry["file"]))
        aliases = index["aliases"].get("listiterobject", [])
        return any(n in head["structs"] or n in pool.names(head["names"]) for n in ["listiterobject", *aliases])
    finally:
        sys.path.pop(0)


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS_SAMPLE)
def test_jit_extension_on_every_cpython(version, tmp_path):
    python = pyenv_python3(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} on this machine (`pyenv install {version}` to test it)")
    vpy, ext = prepared_venv(python, version)
    got = check_in(vpy, ext, tmp_path)
    assert got["python"].startswith(version + ".")
    assert got["match"] == "exact", got
    assert REQUIRED <= set(got["checked"]), REQUIRED - set(got["checked"])
    assert got["refused_alike"] == [], got["refused_alike"]       # an exact table answers every name
    if version not in ("3.8", "3.9", "3.10"):   # _PyInterpreterFrame is 3.11's
        assert "a generator's frame owner is FRAME_OWNED_BY_GENERATOR" in got["checked"], got
    if listiter_expected(got["table"]):
        assert LISTITER in got["checked"], got
    else:
        assert got["not_checked"] == ["listiterobject: not in this table yet"]


def test_jit_extension_on_this_interpreter(tmp_path):
    """The same check with the interpreter running the tests, against the checkout's package."""
    c_extension_built()
    ext = tmp_path / "ext"
    run([sys.executable, JITEXT / "setup.py", "-q", "build_ext", "--build-lib", ext, "--build-temp", tmp_path / "t"],
        cwd=JITEXT)
    env = {k: v for k, v in os.environ.items() if k != "OFFSETS_STRICT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ext), str(ROOT)])
    got = json.loads(run([sys.executable, JITEXT / "check_jit.py"], cwd=tmp_path, env=env).strip().splitlines()[-1])
    assert REQUIRED <= set(got["checked"]) and got["refused_alike"] == []


SUBINTERPRETERS = JITEXT / "subinterpreters.py"
SUBINTERPRETER_COUNT = 4


def check_subinterpreters(got: dict, count: int = SUBINTERPRETER_COUNT) -> None:
    """What tests/jitext/subinterpreters.py saw, against the main interpreter's offsets.get() (which
    check_jit.py proves against live objects): every sub-interpreter imported the capsule, got the
    same answers through it and through its own offsets.get(), shared the process's cache both ways
    (a name the main interpreter cached answers with no thread state in a sub-interpreter before
    it asked anything; every name they asked answers so in the main one after), and kept the table."""
    assert got["errors"] == [], got["errors"]
    main = got["main"]
    assert len(got["subs"]) == count, got
    for sub in got["subs"]:
        assert sub["detached_first"] == [main["c"], 0], sub
        assert sub["c"] == main["py"] and sub["py"] == main["py"], (sub, main)
        assert sub["identity"] == main["identity"] and sub["match"] == main["identity"][1], (sub, main)
    assert main["detached_after"] == [[v, 0] for v in main["py"]], main
    assert main["identity_after"] == main["identity"], main


@pytest.mark.slow
@pytest.mark.parametrize("version", ("3.11", "3.12", "3.13"))
def test_sub_interpreters_with_their_own_gil_share_the_capsule(version, tmp_path):
    """Isolated sub-interpreters (each its own GIL from 3.12) import the capsule and look
    names up at once; before, the import was refused ('does not support loading in subinterpreters').
    3.11's share the GIL, where only the thread id tells which thread holds it."""
    python = pyenv_python3(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} on this machine (`pyenv install {version}` to test it)")
    vpy, _ = prepared_venv(python, version)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OFFSETS_STRICT")}
    got = json.loads(run([vpy, SUBINTERPRETERS, tmp_path, SUBINTERPRETER_COUNT], cwd=tmp_path, env=env)
                     .strip().splitlines()[-1])
    check_subinterpreters(got)
    if version == "3.13":     # 3.12 has no get_config(); its isolated=True is the same config
        assert {s["gil"] for s in got["subs"]} == {"own"}, got["subs"]


def test_capsule_refuses_without_a_table(tmp_path):
    """No table for this interpreter: importing the capsule fails with NoMatchingTable, not garbage."""
    c_extension_built()
    code = ("import offsets.runtime as r\n"
            "from offsets.layout.build_identity import BuildIdentity\n"
            "r.RUNTIME.identity = lambda: BuildIdentity('3.99.0', 0x036300f0, {}, 'x86_64-linux-gnu', 8)\n"
            "try:\n    import offsets._offsets\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    out = run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.startswith("NoMatchingTable no table fits CPython 3.99.0"), out
    assert "offsets scan" in out


# ---------------------------------------------------------------- compile-time headers (c_header.py)
def tiny_table(extra_structs=()):
    from offsets.layout.model import Build, Field, Struct, Table, Target

    b = Build(version="3.11.7", hexversion=0x030B07F0, config={"Py_DEBUG": False}, target=Target("x86_64-linux-gnu", 8))
    s = Struct(name="S", kind="struct", size=16, align=8, defined_in="Include/s.h:1", fields=(
        Field("a", 0, 8, "long"), Field("in", 8, 8, "struct <anonymous>"), Field("in.x", 8, 4, "int"),
        Field("in.bits", 12, 4, "unsigned int", bit_offset=3, bit_width=2)))
    structs = {"S": s}
    for x in extra_structs:
        structs[x.name] = x
    return Table(build=b, scanner={"offsets": "0"}, structs=structs, names={"_s": "S"})   # S: a typedef


def test_c_header_text_for_a_tiny_table():
    from offsets.layout import c_header

    from offsets.layout.model import Table

    t = tiny_table()
    text = c_header.emit(t, "generated/t.yaml")
    assert "do not edit" in text.splitlines()[1]
    for line in ("#define PYOFFSETS_TABLE \"cpython-3.11.7-x86_64-linux-gnu\"", "#define PYOFFSETS_HEXVERSION 0x030b07f0",
                 "#define PYOFFSETS_SIZEOF_S 16", "#define PYOFFSETS_S_a 0", "#define PYOFFSETS_S_in__x 8",
                 "#define PYOFFSETS_S_in__bits 12", "#define PYOFFSETS_BITOFFSET_S_in__bits 3",
                 "#define PYOFFSETS_BITWIDTH_S_in__bits 2", "#elif defined(PY_VERSION_HEX) && PY_VERSION_HEX != 0x030b07f0",
                 'PYOFFSETS_STATIC_ASSERT(offsetof(S, in.x) == PYOFFSETS_S_in__x, "S.in.x");',
                 "#if !(!defined(_WIN32) && !defined(__APPLE__) && defined(__x86_64__) && defined(__SIZEOF_POINTER__) "
                 "&& __SIZEOF_POINTER__ == 8)"):
        assert line in text.splitlines(), line
    assert "offsetof(S, in.bits)" not in text          # a bitfield has no offsetof
    untyped = c_header.emit(Table(build=t.build, scanner=t.scanner, structs=t.structs), "generated/t.yaml")
    assert "offsetof(S," not in untyped and "the table does not record: S" in untyped


def test_c_header_refuses_colliding_names():
    from offsets.layout import c_header
    from offsets.errors import TableError
    from offsets.layout.model import Field, Struct

    # S_a with field b and S with field a_b would both be PYOFFSETS_S_a_b
    clash = Struct(name="S_a", kind="struct", size=8, align=8, defined_in="Include/s.h:9", fields=(Field("b", 0, 8, "long"),))
    t = tiny_table([clash])
    object.__setattr__(t.structs["S"], "fields", t.structs["S"].fields + (Field("a_b", 0, 8, "long"),))
    with pytest.raises(TableError, match="would both be PYOFFSETS_S_a_b"):
        c_header.emit(t, "generated/t.yaml")


def compile_check(python: Path, header: Path, tmp_path: Path, text_filter=None):
    """gcc -fsyntax-only of: every header of that build (the scanner's umbrella, Py_BUILD_CORE) and
    the generated header with both assertion blocks on."""
    from offsets.scan import build_inputs as build, units

    b = build.from_python(str(python))
    unit, _ = units.header_unit(b)
    text = header.read_text()
    if text_filter:
        text = text_filter(text)
    (tmp_path / header.name).write_text(text)
    src = tmp_path / "check.c"
    src.write_text("#define Py_BUILD_CORE 1\n" + unit.text + "#define PYOFFSETS_CHECK_LAYOUT 1\n"
                   f"#define PYOFFSETS_CHECK_INTERNAL_LAYOUT 1\n#include \"{header.name}\"\n")
    return subprocess.run(["gcc", "-std=gnu11", "-fsyntax-only", f"-I{b.include_dir}", f"-I{b.include_dir}/internal",
                           f"-I{b.pyconfig.parent}", f"-I{tmp_path}", str(src)], capture_output=True, text=True)


def header_for(python: Path) -> Path:
    """The generated header of that interpreter's exact build (release, x86_64: the pyenv builds)."""
    version = run([python, "-c", "import platform; print(platform.python_version())"]).strip()
    header = ROOT / "generated" / f"pyoffsets_cpython-{version}-x86_64-linux-gnu.h"
    if not header.exists():
        missing_input(f"no generated header for CPython {version} (x86_64; `make tables` makes it)")
    return header


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_generated_header_static_asserts_compile_against_that_cpython(version, tmp_path):
    python = pyenv_python3(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} on this machine (`pyenv install {version}` to test it)")
    header = header_for(python)
    if "PYOFFSETS_STATIC_ASSERT(offsetof(" not in header.read_text():
        pytest.fail(f"{header.name} asserts nothing")
    proc = compile_check(python, header, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_a_wrong_constant_or_the_wrong_cpython_fails_to_compile(tmp_path):
    python, other = pyenv_python3("3.11"), pyenv_python3("3.12")
    if python is None or other is None:
        missing_input("needs pyenv CPython 3.11 and 3.12 (`pyenv install 3.11 3.12`)")
    header = header_for(python)
    right = "#define PYOFFSETS_PyListObject_ob_item 24\n"
    bad = compile_check(python, header, tmp_path, lambda t: t.replace(right, right.replace(" 24", " 32")))
    assert bad.returncode and "PyListObject.ob_item" in bad.stderr
    (tmp_path / "other").mkdir()
    wrong = compile_check(other, header, tmp_path / "other")
    assert wrong.returncode and "is for CPython 3.11" in wrong.stderr
    if subprocess.run(["gcc", "-m32", "-x", "c", "-fsyntax-only", "-"], input="int x;", text=True,
                      capture_output=True).returncode == 0:
        m32 = subprocess.run(["gcc", "-m32", "-fsyntax-only", "-x", "c", "-include", str(header), "-"], input="int x;",
                             text=True, capture_output=True)
        assert m32.returncode and "is for x86_64-linux-gnu (8-byte pointers)" in m32.stderr


USES_EVERY_GETTER = """#include <Python.h>
#include "pyoffsets.h"
int use(void) {
    PyOffsets_FieldInfo fi;
    if (PyOffsets_Import() < 0) return -1;
    return (int)PyOffsets_Get("PyListObject.ob_item") + PyOffsets_Field("PyASCIIObject.state.kind", &fi)
           + (int)PyOffsets_Sizeof("PyObject") + (PyOffsets_TableName() != NULL) + (PyOffsets_Match() != NULL)
           + (int)PyOffsets_TableHexversion();
}
"""


@pytest.mark.parametrize("compiler", [["gcc", "-x", "c", "-std=c99", "-pedantic"], ["g++", "-x", "c++", "-std=c++11"]],
                         ids=["c99", "c++11"])
def test_pyoffsets_h_compiles_cleanly_as_c99_and_cxx(compiler, tmp_path):
    import sysconfig

    src = tmp_path / "use.c"
    src.write_text(USES_EVERY_GETTER)
    proc = subprocess.run(compiler + ["-Wall", "-Wextra", "-Werror", "-fsyntax-only", f"-I{sysconfig.get_paths()['include']}",
                                      f"-I{ROOT / 'headers'}", str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------- the capsule without the GIL's help
def capsule_run(code: str, cwd: Path) -> str:
    c_extension_built()
    env = {k: v for k, v in os.environ.items() if k != "OFFSETS_STRICT"}
    env["PYTHONPATH"] = str(ROOT)
    return run([sys.executable, "-c", code], cwd=cwd, env=env)


def test_a_lookup_without_a_thread_state_is_refused_not_a_crash(tmp_path):
    """A cached name answers with no thread state; a miss is refused: -1, errno EPERM, no SIGSEGV."""
    out = capsule_run("import errno, offsets._offsets as c\n"
                      "print(c._get_detached('PyTupleObject.ob_item'), errno.EPERM)\n"
                      "print(c._get('PyListObject.ob_item'), c._get_detached('PyListObject.ob_item'))\n", tmp_path)
    miss, hit = out.splitlines()
    assert miss == "(-1, 1) 1", out
    value = hit.split()[0]
    assert hit == f"{value} ({value}, 0)", out


def test_a_huge_name_is_refused_with_a_bounded_message(tmp_path):
    """A 16 MB name: UnknownNameError quoting 120 bytes of it, never the whole name."""
    out = capsule_run("import offsets._offsets as c\n"
                      "try:\n    c._get('PyListObject.' + 'x' * (16 << 20))\n"
                      "except KeyError as e:\n    print(type(e).__name__, len(str(e)), str(e)[-80:])\n", tmp_path)
    kind, length, tail = out.strip().split(" ", 2)
    assert kind == "UnknownNameError" and int(length) < 300, out
    assert "16777229 bytes" in tail, out


RACE = ROOT / "tests" / "jitext" / "race_use_table.py"


def race_in(python, tmp_path: Path, env: dict, threads=16, switches=20, prelude="", python_shim=False) -> dict:
    code = (f"import sys, json, runpy; sys.argv = ['race', {str(tmp_path)!r}]; {prelude}\n"
            f"race = runpy.run_path({str(RACE)!r}, run_name='race')\n"
            f"from pathlib import Path\nprint(json.dumps(race['main'](Path({str(tmp_path)!r}), {threads}, {switches}, "
            f"{python_shim})))\n")
    return json.loads(run([python, "-c", code], cwd=tmp_path, env=env).strip().splitlines()[-1])


def race_env() -> dict:
    return {**{k: v for k, v in os.environ.items() if k != "OFFSETS_STRICT"}, "PYTHONPATH": str(ROOT)}


def test_use_table_switches_c_callers_atomically(tmp_path):
    """16 C threads (one without a thread state) look a name up while another switches among 20 tables
    that each answer it differently; the Python side is made atomic by race_use_table's shim, so this
    tests the capsule's own switch."""
    capsule_run("pass", tmp_path)       # skips if the extension is not built
    got = race_in(sys.executable, tmp_path, race_env(), python_shim=True)
    assert got["switches"] == 20 and got["lookups"] > 1000 and got["errors"] == [], got
    assert got["wrong"] == [], got


def test_use_table_switches_c_and_python_callers_atomically(tmp_path):
    """The same with offsets.get() as it is: 8 threads in Python, 8 in C, one in C without a thread state."""
    capsule_run("pass", tmp_path)
    got = race_in(sys.executable, tmp_path, race_env())
    assert got["switches"] == 20 and got["lookups"] > 1000 and got["errors"] == [], got
    assert got["wrong"] == [], got


def test_the_race_check_sees_a_switch_that_is_not_atomic(tmp_path):
    """The same check, with the capsule's _reset() disabled: C callers keep the old answers, and it says so."""
    capsule_run("pass", tmp_path)
    got = race_in(sys.executable, tmp_path, race_env(), threads=4, switches=6,
                  prelude="import offsets, offsets._offsets as c; offsets.get('PyObject.ob_type'); "
                          "c._reset = lambda *a: None")
    assert any(w.startswith("c: ") for w in got["wrong"]), got


# ---------------------------------------------------------------- examples/jitdemo, the worked example
EXAMPLE = ROOT / "examples" / "jitdemo"
OWNER = "suspended generator's frame owner == FRAME_OWNED_BY_GENERATOR (1)"
FRAME_STATE = {"3.8": "no frame state constant before 3.10", "3.9": "no frame state constant before 3.10",
               "3.10": "suspended generator's frame f_state == FRAME_SUSPENDED (-1)",
               "3.11": OWNER, "3.12": OWNER, "3.13": OWNER}
WALK = "walk(): the frames sys._getframe() shows, shims and incomplete frames skipped"


def walk_skips(version: str) -> dict:
    """case of demo.py -> [C-stack shims, incomplete frames] its walk passes over, from CPython's sources.
    3.12+: each entry into the interpreter from C pushes a shim (Python/ceval.c, entry_frame): one under
    the module demo.py runs, one more under a call back from C (sorted()'s key, next() of a generator,
    gc's callbacks, and 3.12's type call of __init__). 3.11 collects inside the allocation
    (Modules/gcmodule.c), here MAKE_CELL's, before with_a_cell's frame is complete; 3.12+ collect at
    the next eval breaker. 3.13's CALL_ALLOC_AND_ENTER_INIT (Python/bytecodes.c) enters __init__
    with no call from C, under an incomplete _Py_InitCleanup frame. Before 3.11: nothing to skip."""
    minor = tuple(map(int, version.split(".")))
    base = 1 if minor >= (3, 12) else 0
    from_c = 2 * base
    return {"python": [base, 0], "collection": [from_c, 1 if minor == (3, 11) else 0], "sorted key": [from_c, 0],
            "generator": [from_c, 0], "__init__": [base, 1] if minor >= (3, 13) else [from_c, 0]}


def build_and_run_example(vpy: Path, work: Path) -> dict:
    """The documented commands (`pip install .` of its pyproject.toml, then `python demo.py`), run by
    `vpy` on a copy of the example (so that no build/ litters the checkout). The venv's own setuptools
    and cpython-offsets build it (no build isolation: tests/test_first_hour.py builds isolated), into
    a folder of the test's own, so the cached venv stays as it was."""
    src = work / "jitdemo"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.so", "__pycache__", "*.egg-info"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OFFSETS_STRICT")}
    run([vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-build-isolation", "--no-deps",
         "--target", work / "site", "."], cwd=src, env=env)
    env["PYTHONPATH"] = str(work / "site")
    return json.loads(run([vpy, "demo.py"], cwd=src, env=env).strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS_SAMPLE)
def test_worked_example_on_every_cpython(version, tmp_path):
    """Compile-time constants (proven by the generated header's static asserts) and run-time answers
    read the same live objects as Python: a list iterator, a tuple, the current frame's code; and
    walk() yields the frames of sys._getframe()'s chain, with the shims and incomplete frames
    CPython puts in each of demo.py's cases skipped.
    Remembered once passed (tests/result_memo.py) under the package, this test, the example's files,
    the venv (made per source digest) and the interpreter with its libpython."""
    import result_memo

    python = pyenv_python3(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} on this machine (`pyenv install {version}` to test it)")
    vpy, _ = prepared_venv(python, version)
    real = Path(python).resolve()
    example = [p for p in sorted(EXAMPLE.rglob("*")) if p.is_file() and not {"build", "__pycache__"} & set(p.parts)
               and p.suffix != ".so" and ".egg-info" not in str(p)]
    files = [Path(__file__).resolve(), *example, real, *sorted(real.parent.parent.glob("lib/libpython*.so*"))]
    if result_memo.passed_before("worked-example", files, version, str(vpy.parent.parent)):
        return
    got = build_and_run_example(vpy, tmp_path)
    assert got["python"].startswith(version + "."), got
    assert got["compiled_for"] == f"cpython-{got['python']}-x86_64-linux-gnu", got
    assert len(got["checked"]) == 5, got
    # the interpreter's truth: a suspended generator's frame is the generator's; the values are
    # the enums of Include/internal/pycore_frame.h (3.11+) and Include/cpython/frameobject.h (3.10)
    assert got["checked"][3] == FRAME_STATE[version], got
    # walk()'s frames are sys._getframe()'s chain in each case (demo.py asserts it, code object by code
    # object); each case really had the frames to skip that CPython puts there
    assert got["checked"][4] == WALK, got
    assert got["skipped"] == walk_skips(version), got
    if version == "3.13":       # the interpreter's own word that the call was specialized
        assert "CALL_ALLOC_AND_ENTER_INIT" in got["calls_in_make_points"], got
    result_memo.passed("worked-example", files, version, str(vpy.parent.parent))
