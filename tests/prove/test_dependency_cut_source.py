"""The pyconfig.h cut (tests/test_dependency_proof.py) on a Debian build with its source tree: the
structs of its .c files and the constants of its sources keep their layouts and values when the
build's pyconfig.h holds only the macros some dependency set names. Here for its cost: the cut
build is scanned whole again, a CPU-minute and more cold; `make test` cuts two pyenv builds."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_dependency_proof import cut_gives_the_same  # noqa: E402


def test_a_pyconfig_cut_of_a_source_tree_gives_the_same_structs_and_constants(monkeypatch, pyenv_scans):
    cut_gives_the_same("debian 3.11.2 release x86_64-linux-gnu", monkeypatch, pyenv_scans)
