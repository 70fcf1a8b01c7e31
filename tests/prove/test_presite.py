"""A JIT loaded by `-X presite` / `PYTHON_PRESITE`, which only Py_DEBUG builds of 3.13+
have (PyConfig.run_presite exists under `#ifdef Py_DEBUG` in CPython's Include/cpython/initconfig.h,
and the docs say "Python needs to be built in debug mode for this option to exist"): Debian sid's python3.13d
and python3.14d (`python3.X-dbg`), run through sid's own loader as realbuilds.py does.

On the shipped build (sid's own debug interpreter: generated/cpython-3.1X.Y-debian-debug-*.yaml) and
on a build no table ships (the same with one line added to its Python.h), the presite module runs
in each interpreter that starts with it and logs (tests/deployment.py's probe): the program's main
runs, one interpreter starts, and the answer is right and earned. `PYTHON_PRESITE` is inherited by
every child, so it is the one that would call back into a scan; `-X presite` is not. On the build no
table ships, only the runtime is importable (a debug build has no wheels of the scanner's compiled
dependencies), so no table is made: the answer is what the live check proved, and says why.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import sys

import realbuilds

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import deployment as d  # noqa: E402
from offsets.tools.build_copy import other_build_id  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MULTIARCH = realbuilds.MULTIARCH
WRAPPER = """#!/bin/sh
PYTHONHOME="{usr}" exec "{usr}/lib/{ma}/ld-linux-x86-64.so.2" --library-path "{usr}/lib/{ma}" "{usr}/bin/python{minor}d" "$@"
"""


def debug_build(minor: str, dest: Path, shipped: bool) -> d.Build:
    """sid's python`minor`d: itself (shipped), or a prefix of its own whose Python.h has one more line
    and whose executable (which holds the interpreter) has another build-id, sharing the rest by
    symlinks; a wrapper runs it through sid's loader. The probe goes in `dest/presite`."""
    root = realbuilds.sid_debug_root(minor) / "usr"
    usr = root
    if not shipped:
        usr = dest / "usr"
        (usr / "bin").mkdir(parents=True)
        shutil.copy2(root / "bin" / f"python{minor}d", usr / "bin" / f"python{minor}d")
        other_build_id(usr / "bin" / f"python{minor}d")     # Debian's interpreter holds libpython: rebuilt
        for name in ("lib", "share"):
            (usr / name).symlink_to(root / name)
        inc = usr / "include"
        inc.mkdir()
        (inc / MULTIARCH).symlink_to(root / "include" / MULTIARCH)
        shutil.copytree(root / "include" / f"python{minor}d", inc / f"python{minor}d")     # symlinks followed
        header = inc / f"python{minor}d" / "Python.h"
        header.write_text(header.read_text() + "/* offsets tests: a build no table ships */\n")
    wrapper = dest / f"python{minor}d"
    wrapper.write_text(WRAPPER.format(usr=usr, ma=MULTIARCH, minor=minor))
    wrapper.chmod(0o755)
    presite = dest / "presite"
    presite.mkdir()
    log = dest / "events.jsonl"
    (presite / "deploy_probe.py").write_text(d.PROBE.format(log=str(log), name=d.NAME))
    (presite / "jitpresite.py").write_text("import deploy_probe\ndeploy_probe.started()\ndeploy_probe.jit()\n")
    return d.Build(dest, wrapper, presite, log, shipped)


@pytest.mark.parametrize("how", ["PYTHON_PRESITE", "-X presite"])
@pytest.mark.parametrize("shipped", [True, False], ids=["shipped", "unshipped"])
@pytest.mark.parametrize("minor", ["3.13", "3.14"])
def test_a_jit_loaded_by_presite(minor, shipped, how, tmp_path):
    b = debug_build(minor, tmp_path, shipped)
    env = d.clean_env(tmp_path / "tables", PYTHONPATH=os.pathsep.join([str(b.site), str(ROOT)]))
    flags = []
    if how == "PYTHON_PRESITE":
        env["PYTHON_PRESITE"] = "jitpresite"
    else:
        flags = ["-X", "presite=jitpresite"]
    run = d.run(b, [b.python, *flags, "-c", "import deploy_probe; deploy_probe.main()"], env, timeout=120)
    assert not run.timed_out and run.returncode == 0, run.summary()
    assert len(run.of("main")) == 1 and run.starts == 1 and run.launched == [], run.summary()
    [a] = run.of("answer")
    assert a["value"] == a["truth"], a
    assert a["table"] == f"cpython-{a['table'].split('-')[1]}-debian-debug-{MULTIARCH}", a
    if shipped:
        assert a["kind"] == "exact" and a["earned"] == "exact", a
    else:
        # the table is this build's kind (exact struct by struct where its set is this build's);
        # PyTupleObject's set holds Python.h, which differs here: the field is proven, not exact
        assert a["kind"] == "exact" and "each struct exact where" in a["detail"] and a["earned"] == "proven", a
        assert "the scanner is not importable here" in a["detail"], a["detail"]


@pytest.mark.parametrize("minor", ["3.13", "3.14"])
def test_a_presite_jit_whose_scan_is_started(minor, tmp_path):
    """The scanner's packages on the path too (their compiled parts are for the test venv's ABI): the
    build no table ships starts one scan, in its own interpreter, isolated (-I: PYTHON_PRESITE, which
    it inherits, is ignored) and without site. Here that interpreter cannot start outside sid's loader,
    so the scan fails at once, and the answer is what is proven, saying so; never a second start."""
    b = debug_build(minor, tmp_path, False)
    env = d.clean_env(tmp_path / "tables", PYTHON_PRESITE="jitpresite",
                      PYTHONPATH=os.pathsep.join([str(b.site), str(ROOT), *d.scanner_paths()[1:]]))
    run = d.run(b, [b.python, "-c", "import deploy_probe; deploy_probe.main()"], env, timeout=120)
    assert not run.timed_out and run.returncode == 0, run.summary()
    assert len(run.of("main")) == 1 and run.starts == 1, run.summary()
    [scan] = run.scans
    assert scan[0] == str(tmp_path / "usr" / "bin" / f"python{minor}d") and scan[1:3] == ["-I", "-S"], scan
    [a] = run.of("answer")
    assert a["value"] == a["truth"] and a["earned"] == "proven", a
    assert "its own table was not made now: the scan failed" in a["detail"], a["detail"]
