"""The distribution is `cpython-offsets`: `offsets` on PyPI is an unrelated project, so nothing a user
reads (the README, docs/, examples/, the package's messages and comments, the build files) may tell
them to install `offsets`. The truth for the name is pyproject.toml, and the wheel pip builds from it.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAME = "cpython-offsets"

#: An instruction to install (or reinstall) the old name: `pip install offsets`, `'offsets[scan]'`,
#: `pip install -U offsets`, "reinstall offsets", a requirement `offsets>=0.1`.
OLD = re.compile(r"""(?x)
    pip\s+install\s+(?:-\S+\s+)*['"]?offsets(?![\w.-])      # pip install [-q -U ...] offsets
  | (?<![\w-])['"`]?offsets\[\w+\]                         # offsets[scan], as a requirement or extra
  | reinstall\s+offsets(?![\w.-])                          # "reinstall offsets" in a refusal
  | ['"]offsets\s*(?:==|>=|~=|<)                           # a requirement string "offsets>=0.1"
""")


def user_facing() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / "setup.py", ROOT / "Makefile",
             ROOT / "MANIFEST.in", *ROOT.glob("headers/*.h"), ROOT / "offsets" / "_offsets.c"]
    files += sorted(ROOT.glob("docs/*.md")) + sorted(p for p in ROOT.glob("examples/**/*") if p.is_file())
    files += sorted((ROOT / "offsets").rglob("*.py"))
    return [f for f in files if f.exists() and "__pycache__" not in f.parts]


def old_name_instructions(text: str) -> list[str]:
    return [m.group(0) for m in OLD.finditer(text)]


def test_the_distribution_is_named_cpython_offsets():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'^name = "{NAME}"$', text, re.M), "pyproject.toml's [project] name"
    assert f'"{NAME}[scan]"' in text     # the test extra pulls in the scan extra by the new name


@pytest.mark.parametrize("path", user_facing(), ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_tells_a_user_to_install_the_old_name(path):
    found = old_name_instructions(path.read_text(errors="replace"))
    assert not found, f"{path.relative_to(ROOT)} tells users to install `offsets` (PyPI's is another project): {found}"


@pytest.mark.parametrize("old", [
    "pip install offsets", "pip install 'offsets[scan]'", "RUN pip install -q -U offsets && x",
    "pyproject: requires = [\"offsets>=0.1\"]", "reinstall offsets, or in a checkout run `make tables`",
    "`pip install \"offsets[scan]\"`"])
def test_the_rule_finds_every_old_spelling(old):
    assert old_name_instructions(old), old


@pytest.mark.parametrize("fine", [
    "pip install cpython-offsets", "pip install 'cpython-offsets[scan]'", "import offsets",
    "python -m offsets --cflags", "offsets.get('PyListObject.ob_item')", "reinstall cpython-offsets",
    "`offsets scan --python PY --install`", "pip install offsets.whl"])
def test_the_rule_leaves_the_import_name_alone(fine):
    assert not old_name_instructions(fine), fine
