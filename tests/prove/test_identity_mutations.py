"""Every loosening of the identity rules in tests/identity_mutations.py is caught by the tests it
names, and those tests pass without it (docs/identity.md, "What holds each rule"). One pytest run
per loosening, on a hard-linked copy of the checkout: a few minutes, so here and not in make test
(tests/test_identity_audit.py checks there that the catalogue is current)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import identity_mutations as audit  # noqa: E402


def test_the_named_tests_pass_without_a_mutation():
    ok, tail = audit.baseline()
    assert ok, tail


@pytest.mark.parametrize("m", [m for m in audit.MUTATIONS if not m.equivalent], ids=lambda m: m.name)
def test_each_loosening_is_caught(m):
    caught, tail = audit.run(m)
    assert caught, f"{m.name} ({m.rule}) survived {', '.join(m.tests)}:\n{tail}"
