"""offsets.constant() inside Debian sid's own 3.14 and 3.15 (run through sid's libc loader), against
what each interpreter shows: the opcode macros against `opcode.opmap`, `CO_*` against `inspect`,
`PyLong_SHIFT` against `sys.int_info`, `Py_TPFLAGS_*` against built-in types' `__flags__`, and
FRAME_OWNED_BY_GENERATOR against a suspended generator's frame owner read through the table, as
tests/test_constants_runtime.py does in pyenv's 3.8-3.13. The answers are exact: sid's tables ship.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import realbuilds

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_constants_probe", ROOT / "tests" / "constants_probe.py")
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)


@pytest.mark.parametrize("minor", ["3.14", "3.15"])
def test_constants_are_what_sids_interpreter_shows(minor):
    got = json.loads(realbuilds.run_in(realbuilds.sid_python(minor), probe.PROBE).strip().splitlines()[-1])
    probe.assert_shown(got, tuple(int(x) for x in minor.split(".")))
