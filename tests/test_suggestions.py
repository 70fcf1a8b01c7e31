"""What a refusal of an unknown name suggests across versions (offsets/runtime/suggest.py): the
same member renamed in the minor version before or after, and, for a struct gone from this build,
since when and which of its structs have a field of that name now.

Truth: CPython's own headers as pyenv installed them (3.12's `_PyInterpreterFrame` starts with
`PyCodeObject *f_code`, 3.13's with `PyObject *f_executable`; 3.13's `PyThreadState` has
`current_frame`, and no header of 3.13 defines `_PyCFrame`); each asked in the real interpreter,
the runtime alone, on a fresh cache.
"""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import REPO, missing_input, pyenv_python

ASK = """
import json, sys
sys.path.insert(0, sys.argv[1])
import offsets
out = {}
for name in sys.argv[2:]:
    try:
        offsets.get(name)
        out[name] = None
    except KeyError as e:
        out[name] = [str(e), list(getattr(e, "suggestions", []) or [])]
print(json.dumps(out))
"""


def refusals(minor: str, names, tmp_path) -> dict:
    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv's CPython {minor} (`pyenv install {minor}`)")
    env = dict(os.environ, OFFSETS_AUTOSCAN="0", OFFSETS_CACHE=str(tmp_path / "cache"),
               OFFSETS_TABLES=str(tmp_path / "tables"))
    proc = subprocess.run([str(python), "-I", "-c", ASK, str(REPO), *names], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def frame_header(minor: str) -> str:
    python = pyenv_python(minor)
    include = python.parent.parent / "include" / f"python{minor}" / "internal" / "pycore_frame.h"
    text = include.read_text()
    return text[text.index("typedef struct _PyInterpreterFrame {"):][:400]


def test_a_field_renamed_in_the_next_minor_suggests_its_new_name_first(tmp_path):
    assert re.search(r"{\s*PyCodeObject \*f_code;", frame_header("3.12"))
    assert re.search(r"{\s*PyObject \*f_executable;", frame_header("3.13"))
    got = refusals("3.13", ["_PyInterpreterFrame.f_code"], tmp_path)["_PyInterpreterFrame.f_code"]
    assert "did you mean _PyInterpreterFrame.f_executable" in got[0], got
    got = refusals("3.12", ["_PyInterpreterFrame.f_executable"], tmp_path)["_PyInterpreterFrame.f_executable"]
    assert "did you mean _PyInterpreterFrame.f_code" in got[0], got


def test_a_rename_two_minors_apart_is_no_suggestion(tmp_path):
    """3.11 starts its frame with `f_func`: not 3.13's `f_executable` under another name."""
    got = refusals("3.11", ["_PyInterpreterFrame.f_executable"], tmp_path)["_PyInterpreterFrame.f_executable"]
    assert "f_func" not in got[0], got


def test_a_struct_gone_says_since_when_and_what_has_the_field_now(tmp_path):
    python = pyenv_python("3.13")
    if python is None:
        missing_input("pyenv's CPython 3.13")
    include = python.parent.parent / "include" / "python3.13"
    assert not any("_PyCFrame" in p.read_text(errors="replace") for p in include.rglob("*.h"))
    assert re.search(r"_PyInterpreterFrame \*current_frame;", (include / "cpython" / "pystate.h").read_text())
    got = refusals("3.13", ["_PyCFrame.current_frame"], tmp_path)["_PyCFrame.current_frame"]
    assert "_PyCFrame is gone since 3.13 (last in 3.12)" in got[0], got
    assert "PyThreadState.current_frame" in got[0], got
