"""The thread state while an exception is raised (offsets/runtime/live/raised.py, offsets/_raised.c)
in real interpreters with the package installed as pip installs it (tests/test_capi.py's venvs,
which compile offsets/_raised.c for each): the exact table's `current_exception` (3.12+) or
`curexc_type`, `curexc_value` and `curexc_traceback` (3.9), and up to 3.12 the interpreter's
`eval_frame`, are proven, and a table with one of them moved fails the check; the checkout run by an interpreter its extension is not built for reads
nothing of it."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import test_capi
from conftest import missing_input, pyenv_python3
from test_proofs import MOVED_SCRIPT

ROOT = Path(__file__).resolve().parent.parent
#: what the extension's reads prove: the eval-frame function only up to 3.12 (3.13 counts a change of it)
FIELDS = {"3.9": ["PyInterpreterState.eval_frame", "PyThreadState.curexc_traceback", "PyThreadState.curexc_type",
                  "PyThreadState.curexc_value"],
          "3.12": ["PyInterpreterState.eval_frame", "PyThreadState.current_exception"],
          "3.13": ["PyThreadState.current_exception"]}
MOVES = [["PyThreadState", "current_exception", 8], ["PyThreadState", "current_exception", -8],
         ["PyThreadState", "curexc_type", -8], ["PyThreadState", "curexc_value", 8],
         ["PyThreadState", "curexc_traceback", 8], ["PyInterpreterState", "eval_frame", 8],
         ["PyInterpreterState", "eval_frame", -8]]

SCRIPT = r"""
import json, sys
from offsets import runtime
e = next(e for e in runtime.shipped_index()["tables"] if e["hexversion"] == sys.hexversion and
         e["triple"] == runtime.identity.running_target()["triple"] and
         e.get("vendor") in (None, "upstream") and not any(e["config"].values()))
r = runtime.live_check(runtime.load_shipped(e))
print(json.dumps({"ok": r.ok, "failed": r.failed,
                  "skipped": [s for s in r.skipped if "exception is raised" in s or "not CPython's own" in s],
                  "proven": sorted(f"{k}.{p}" for k, p in r.proven if k == "PyThreadState" and p and
                                   (p.startswith("curexc_") or p == "current_exception")
                                   or (k, p) == ("PyInterpreterState", "eval_frame"))}))
"""


def python(minor: str) -> Path:
    found = pyenv_python3(minor)
    if found is None:
        missing_input(f"pyenv has no CPython {minor}")
    return found


def run(exe, *args, env=None, cwd=None) -> dict:
    out = subprocess.run([str(exe), "-c", *args], capture_output=True, text=True, cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("minor", ["3.9", "3.12", "3.13"])
def test_the_raised_exception_is_where_the_exact_table_puts_it(minor, tmp_path):
    vpy, _ = test_capi.prepared_venv(python(minor), minor)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OFFSETS_STRICT")}
    got = run(vpy, SCRIPT, env=env, cwd=tmp_path)
    assert got["ok"] and got["failed"] == [], got
    assert got["skipped"] == ([] if minor != "3.13" else
                              ["PyInterpreterState while its eval-frame function is not CPython's own: read on 3.9-3.12 "
                               "with a GIL (3.13 counts each change of it as a rare event)"]), got
    assert got["proven"] == FIELDS[minor]
    moved = run(vpy, MOVED_SCRIPT, json.dumps(MOVES), env=env, cwd=tmp_path)
    assert moved["good"], moved["summary"]
    assert sorted(moved["moved"]) == sorted(f"{s}.{p}{d:+d}" for s, p, d in MOVES if f"{s}.{p}" in FIELDS[minor])
    assert {name: m for name, m in moved["moved"].items() if m["ok"] or m["proven"]} == {}


def test_without_its_extension_the_check_reads_none_of_it(tmp_path):
    """pyenv's 3.12 running the checkout, whose extensions are built for the tests' own interpreter only."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0"}
    got = run(python("3.12"), SCRIPT, env=env, cwd=tmp_path)
    assert got["ok"] and got["proven"] == [] and got["failed"] == []
    assert len(got["skipped"]) == 2 and all("offsets._raised is not built for this interpreter" in s for s in got["skipped"])
