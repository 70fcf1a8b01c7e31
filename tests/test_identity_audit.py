"""The identity rules' audit (tests/identity_mutations.py) is current: each loosening's text is
in its file exactly once (a rule rewritten without the audit fails here, not silently), each test
it names exists, and docs/identity.md's table "What holds each rule" lists every one. That each
loosening is caught by its tests is `make prove`'s (tests/prove/test_identity_mutations.py): it
runs pytest once per loosening."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import identity_mutations as audit

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("m", audit.MUTATIONS, ids=lambda m: m.name)
def test_each_loosening_is_of_the_code_as_it_is(m):
    text = (REPO / m.file).read_text()
    assert text.count(m.old) == 1, f"{m.name}: rewrite its `old` in tests/identity_mutations.py for {m.file}"
    assert m.new != m.old and (m.tests or m.equivalent)


@pytest.mark.parametrize("m", audit.MUTATIONS, ids=lambda m: m.name)
def test_each_named_test_exists(m):
    for node in m.tests:
        path, _, name = node.partition("::")
        func, _, param = name.partition("[")
        source = (REPO / path).read_text()
        assert re.search(rf"^def {re.escape(func)}\(", source, re.M), node
        if param:
            assert all(part in source for part in param.rstrip("]").split("-")), node


def test_the_doc_lists_every_loosening_and_its_tests():
    doc = (REPO / "docs" / "identity.md").read_text()
    table = doc.split("## What holds each rule", 1)[1].split("\n## ", 1)[0]
    for m in audit.MUTATIONS:
        row = next((line for line in table.splitlines() if line.startswith(f"| `{m.name}` ")), None)
        assert row is not None, f"docs/identity.md's table lacks `{m.name}`"
        for node in m.tests:
            assert node.split("::")[-1].split("[")[0] in row, (m.name, node)


def test_every_test_the_promises_name_exists():
    """docs/identity.md's "Promises, and the tests that hold them": each test it names is defined."""
    doc = (REPO / "docs" / "identity.md").read_text()
    section = doc.split("## Promises, and the tests that hold them", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(test_\w+)`", section))
    assert len(named) > 20
    defined = {m for p in (REPO / "tests").rglob("test_*.py") for m in re.findall(r"^def (test_\w+)\(", p.read_text(), re.M)}
    assert not named - defined, sorted(named - defined)
