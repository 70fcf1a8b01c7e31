"""The live check in python.org's 3.13.15 free-threaded, compiled here by `make prove`
(foreign_builds.elsewhere): it proves only what that build's exact table says (tests/test_proofs.py
has the same script for the release builds)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from offsets.tools import foreign_builds as fb  # noqa: E402
from live_scripts import WRONG_SCRIPT  # noqa: E402


def test_the_live_check_in_a_free_threaded_build_proves_only_what_its_exact_table_says():
    """python.org's 3.13.15 free-threaded (built here on first use): every other free-threaded 3.13 table's
    check runs there (no object read without a reference held, no thread started), and what it proves
    is what the build's exact table says."""
    python = fb.elsewhere("free-threaded")
    out = subprocess.run([str(python), "-c", WRONG_SCRIPT.replace('not any(e["config"].values())',
                                                                 'e["config"]["Py_GIL_DISABLED"]')
                          .replace('any(e["config"].values())', 'not e["config"]["Py_GIL_DISABLED"]')],
                         capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got and sum(g["compared"] for g in got.values()) >= 100
    assert {name: g["wrong"] for name, g in got.items() if g["wrong"]} == {}
