"""Debian's 3.13.5 (trixie), whose pyport.h undefines Py_BUILD_CORE_MODULE, which most module starts
define, in a conditional its build skips: scanned whole and with shared preambles, the same bytes
(tests/test_preamble.py; here for its cost, about two CPU-minutes cold)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_preamble import full_build_scans_byte_identical  # noqa: E402


def test_a_full_build_scans_byte_identical_with_and_without_shared_preambles(monkeypatch):
    from offsets.scan import build_inputs as build, debian

    tree = debian.source("python3.13", "trixie")
    usr = debian.unpacked(["libpython3.13-dev"], "amd64", "trixie") / "usr"
    full_build_scans_byte_identical(build.from_source(tree, usr / "include/x86_64-linux-gnu/python3.13/pyconfig.h"),
                                    monkeypatch)
