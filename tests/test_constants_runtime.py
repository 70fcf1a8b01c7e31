"""offsets.constant() in real interpreters: each answer against what the interpreter itself shows.

Inside every pyenv CPython 3.8-3.13 (the checkout's runtime on PYTHONPATH, the shipped tables):
the opcode macros against `opcode.opmap`, `CO_*` against `inspect`, `PyLong_SHIFT` against
`sys.int_info.bits_per_digit`, `Py_TPFLAGS_*` against built-in types' `__flags__`, and 3.11+'s
`FRAME_OWNED_BY_GENERATOR` against the owner byte of a suspended generator's frame read through
the table's own offsets. Then a table with one constant altered: the live check of constants
fails on it, and a table that is not exact answers nothing it did not prove.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import PYENV_MINORS, missing_input, pyenv_python
from constants_probe import PROBE, assert_shown

ROOT = Path(__file__).resolve().parent.parent



def run_in(python, code: str, env=None) -> dict:
    env = dict(os.environ if env is None else env, PYTHONPATH=str(ROOT))
    env.pop("OFFSETS_STRICT", None)
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _version(minor: str) -> tuple:
    return tuple(int(x) for x in minor.split("."))


@pytest.mark.parametrize("minor", [m for m in PYENV_MINORS if _version(m) >= (3, 8)])
def test_constants_are_what_the_interpreter_shows(minor):
    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv's CPython {minor}")
    assert_shown(run_in(python, PROBE), _version(minor))

ALTERED = r'''
import json, sys
import offsets
from offsets.errors import NoMatchingTable
from offsets.runtime.core import RUNTIME
from offsets.runtime.live.runner import check_constants
m = offsets.use_table(sys.argv[1], verify=False)
r = check_constants(RUNTIME.current())
out = {"match": m.detail.split(":")[0], "ok": r.ok, "failed": r.failed}
try:
    offsets.constant("LOAD_FAST")
    out["answered"] = True
except NoMatchingTable as e:
    out["answered"] = False
    out["refusal"] = str(e)
print(json.dumps(out))
'''


def test_one_altered_constant_fails_the_live_check_and_is_not_answered(tmp_path):
    """The committed table of pyenv's 3.13.0 with LOAD_FAST's value changed, its headers digest
    made another build's and no build-id or dependency data (so nothing is exact): the live check
    of constants names it, and offsets.constant refuses it and every other constant (a failed check
    proves nothing)."""
    from offsets.layout import compact, table_yaml

    python = pyenv_python("3.13")
    path = ROOT / "generated" / "cpython-3.13.0-x86_64-linux-gnu.yaml"
    if python is None or not path.exists():
        missing_input("pyenv's CPython 3.13 and its committed table")
    text = path.read_text()
    true = int(re.search(r"\n    LOAD_FAST: \{value: (\d+),", text).group(1))
    text = text.replace(f"\n    LOAD_FAST: {{value: {true},", f"\n    LOAD_FAST: {{value: {true + 1},")
    text = re.sub(r"headers: \"sha256:[0-9a-f]{64}\"", 'headers: "sha256:' + "0" * 64 + '"', text)
    text = re.sub(r"\n  binaries:\n(    - .*\n)+", "\n", text)
    text = re.sub(r"\ndependencies:\n(  .*\n)+", "\n", text)
    text = re.sub(r"\n    depends: \d+", "", text)
    altered = tmp_path / "altered.jsonl"     # still a valid table, in the form a bare interpreter reads
    altered.write_text(compact.dumps(table_yaml.loads(text), altered.name))
    out = subprocess.run([str(python), "-c", ALTERED, str(altered)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert not got["ok"] and any("LOAD_FAST" in f and str(true) in f for f in got["failed"]), got
    assert got["answered"] is False and "LOAD_FAST" in got["refusal"], got
