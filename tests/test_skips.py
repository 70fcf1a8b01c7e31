"""A test is skipped only for a missing optional tool; a missing input fails in CI.

Every skip goes through conftest.py: `missing_input` (a package that cannot be fetched, a pyenv
build, a committed table: a failure when CI=true) or `missing_tool` (a cross compiler, dtrace), and
`pytest.mark.skipif` only with a reason that names the tool that is not installed. Our own modules
are imported, never `importorskip`ped: `c_extension_built` fails a checkout whose C extension is not
built. Read from every test file's syntax tree, so a new direct skip fails here.
"""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: The functions that may call pytest.skip (tests/conftest.py).
SKIPPERS = {"missing_input", "missing_tool"}


def _name(node: ast.AST) -> str:
    """`pytest.mark.skipif` for that attribute chain, '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def skips(path: Path) -> list[str]:
    """`file:line: call` for each skip in `path` the rule does not allow."""
    tree = ast.parse(path.read_text(), str(path))
    allowed_in = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in SKIPPERS
                  and path.name == "conftest.py" for n in ast.walk(f)}
    bare = [d for f in ast.walk(tree) for d in getattr(f, "decorator_list", ()) if not isinstance(d, ast.Call)]
    bad = []
    for node in [n for n in ast.walk(tree) if isinstance(n, ast.Call)] + bare:
        name = _name(node.func if isinstance(node, ast.Call) else node)
        where = (node.lineno, f"{path.name}:{node.lineno}")
        if name in ("pytest.skip", "pytest.importorskip", "pytest.mark.skip", "pytest.mark.xfail") \
                and id(node) not in allowed_in:
            bad.append((*where, name))
        elif name == "pytest.mark.skipif":
            reason = next((k.value for k in getattr(node, "keywords", ()) if k.arg == "reason"), None)
            text = "".join(v.value for v in ast.walk(reason) if isinstance(v, ast.Constant)
                           and isinstance(v.value, str)) if reason is not None else ""
            if "is not installed" not in text:
                bad.append((*where, "skipif without 'TOOL is not installed' as its reason"))
    return [f"{where}: {what}" for _, where, what in sorted(bad)]


def test_every_skip_goes_through_conftests_rule():
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 30
    assert [b for f in files for b in skips(f)] == []


def test_the_rule_sees_a_direct_skip(tmp_path):
    """The walk above finds what it must refuse (so an empty list means none is there)."""
    sample = tmp_path / "test_sample.py"
    sample.write_text("import pytest\n\n@pytest.mark.skipif(True, reason='no pyenv')\ndef test_a():\n"
                      "    pytest.skip('no table')\n\ndef test_b():\n    m = pytest.importorskip('offsets._offsets')\n"
                      "    try:\n        pass\n    except pytest.skip.Exception:\n        pass\n")
    assert skips(sample) == ["test_sample.py:3: skipif without 'TOOL is not installed' as its reason",
                             "test_sample.py:5: pytest.skip", "test_sample.py:8: pytest.importorskip"]
