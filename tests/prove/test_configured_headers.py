"""The layout proof of every generated header whose build's pyconfig.h ./configure makes on this
machine (python.org's 3.13.5 and 3.13.15, Debian's 3.13.15 debug), less the sample `make test`
checks (tests/test_c_headers_strict.py, CONFIGURED_SAMPLE): the same strict compile, here because
`make prove` runs with the machine's cache, which keeps the configured trees (30-50 s each cold)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import test_c_headers_strict as strict  # noqa: E402

CONFIGURED = [h for h in strict.HEADERS if not strict.checked_by_make_test(h)
              and strict.targets.system(strict.triple_of(h)) != "windows"]   # Windows's Python.h: not yet


def test_some_configured_headers_are_left_to_this_proof():
    assert len(CONFIGURED) >= 3, [h.name for h in CONFIGURED]


@pytest.mark.parametrize("header", CONFIGURED, ids=lambda h: h.name)
def test_layout_proof_after_its_own_python_h_is_strict_clean(header, tmp_path):
    strict.layout_proof_is_strict_clean(header, strict.inputs_of(strict.table_of(header)), tmp_path)
