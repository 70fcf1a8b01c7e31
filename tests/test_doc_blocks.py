"""The docs' code blocks are run, so that they cannot drift from what the package does: every fenced
block of README.md and docs/*.md is either run here (Python blocks, with each `# N` comment after a
call compared with what the call returns; C blocks compiled against the interpreter's own headers;
the per-build header excerpt found in the header it quotes), run by the test named for it, or listed
with the reason it cannot run. A new block that is none of these fails.
"""
from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from doc_blocks import ROOT, blocks

DOCS = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))
GENERATED = ROOT / "generated"

#: (doc, language, text the block contains) -> how it is run: a function of this module, or
#: "tests/...": the test that runs it, or "not run: why".
HANDLED = {
    ("README.md", "", "pip install cpython-offsets"): "not run: a download from PyPI; the name is pyproject.toml's "
                                                      "(tests/test_install_name.py)",
    ("README.md", "python", "import offsets"): "run_python",
    ("README.md", "c", "PyOffsets_Import"): "compile_unit",
    ("README.md", "", "make run"): "not run: the Makefile's own targets, which CI runs (.ci/run)",
    ("README.md", "", "offsets scan  "): "not run: its files (t.yaml, PREFIX) and pids are the reader's",
    ("README.md", "", "offsets diff generated/"): "run_shipped_commands",
    ("docs/architecture.md", "", "build inputs"): "not run: a diagram",
    ("docs/c-api.md", "python", "offsets.use_table"): "run_python",
    ("docs/c-api.md", "toml", "[build-system]"): "tests/test_first_hour.py (pip install . of the three files)",
    ("docs/c-api.md", "python", "from setuptools import"): "tests/test_first_hour.py",
    ("docs/c-api.md", "c", "PyInit_myjit"): "tests/test_first_hour.py",
    ("docs/c-api.md", "", "import myjit"): "tests/test_first_hour.py (both commands)",
    ("docs/c-api.md", "c", "jit_init(void)"): "tests/test_capi_first_error.py (built and run on 3.8 and 3.13)",
    ("docs/c-api.md", "dockerfile", "FROM python"): "not run: needs docker; its commands are the ones "
                                                    "tests/test_deploy.py runs (scan --install, OFFSETS_TABLES)",
    ("docs/c-api.md", "c", "#define PYOFFSETS_TABLE"): "excerpt_of_header",
    ("docs/c-api.md", "c", "#define PYOFFSETS_CHECK_LAYOUT 1"): "compile_proof",
    ("docs/c-api.md", "", "cd examples/jitdemo"): "tests/test_capi.py (test_worked_example_on_every_cpython)",
    ("docs/c-api.md", "c", "frame_kind(char *frame)"): "excerpt_of_example",
    ("docs/drift-json.md", "json", "{"): "not run: an excerpt of `offsets diff --format json` with elisions; "
                                         "tests/test_drift_cli.py checks the real output's keys",
    ("docs/table-format.md", "yaml", "schema: 1"): "not run: an excerpt with elided digests; the schema is "
                                                   "offsets/data/table.schema.json, checked on every table",
    ("docs/table-format.md", "yaml", "types:"): "not run: one record, elided; the schema checks every table's, and "
                                                "tests/test_proofs.py proves them against live type objects",
}


def entry(doc: str, lang: str, text: str):
    """The key of HANDLED that stands for this block (None: none, or more than one)."""
    found = [k for k in HANDLED if k[0] == doc and k[1] == lang and k[2] in text]
    return found[0] if len(found) == 1 else None


ALL = [(doc, lang, text) for doc in DOCS for lang, text in blocks(doc)]


def test_every_block_is_run_or_says_why_not():
    unknown = [f"{d}: {l or 'plain'} block {t.splitlines()[0][:60]!r}" for d, l, t in ALL if entry(d, l, t) is None]
    assert not unknown, f"blocks neither run nor listed (or matched twice) in HANDLED: {unknown}"
    used = {entry(d, l, t) for d, l, t in ALL}
    assert not [k for k in HANDLED if k not in used], "HANDLED lists blocks the docs no longer have"


def handler(doc: str, lang: str, text: str) -> str:
    return HANDLED.get(entry(doc, lang, text), "not run: not listed (see the test above)")


RUNNABLE = [(doc, lang, text) for doc, lang, text in ALL if not handler(doc, lang, text).startswith(("not run", "tests/"))]


@pytest.mark.parametrize("doc, lang, text", RUNNABLE, ids=[f"{d}:{t.splitlines()[0][:40]}" for d, _, t in RUNNABLE])
def test_the_block_does_what_it_says(doc, lang, text, tmp_path):
    globals()[handler(doc, lang, text)](text, tmp_path)


#: Lines a Python block may hold that need the reader's own files.
NEEDS_A_FILE = re.compile(r"use_table\(\"mine\.yaml\"\)")


def run_python(text: str, tmp_path: Path) -> None:
    """Each statement runs; a call followed by `# N` (an integer first) must give N."""
    code = ["import offsets", "results = []"]
    for line in text.splitlines():
        if NEEDS_A_FILE.search(line):
            continue
        stmt, _, comment = line.partition("#")
        want = re.match(r"\s*(-?\d+)\b", comment) if stmt.strip().startswith("offsets.") else None
        code.append(f"results.append(({stmt.strip()!r}, {stmt.strip()}, {want.group(1)}))" if want
                    else stmt.rstrip())
    code.append("bad = [(s, got, want) for s, got, want in results if want is not None and got != want]")
    code.append("assert not bad, bad; print(len(results))")
    proc = subprocess.run([sys.executable, "-c", "\n".join(code)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]


def compile_unit(text: str, tmp_path: Path) -> None:
    """A whole translation unit, as a reader pastes it into their extension."""
    src = tmp_path / "unit.c"
    src.write_text(text)
    cc(src, [f"-I{ROOT / 'headers'}"])


def compile_proof(text: str, tmp_path: Path) -> None:
    """The proof block against the header it names, with the interpreter of that header's build."""
    header = re.search(r'#include "(pyoffsets_cpython-[^"]+\.h)"', text).group(1)
    version = re.search(r"cpython-(\d+\.\d+\.\d+)-", header).group(1)
    from conftest import pyenv_python3

    python = pyenv_python3(version)
    if python is None:
        from conftest import missing_input

        missing_input(f"no pyenv CPython {version} (`pyenv install {version}`)")
    minor = ".".join(version.split(".")[:2])
    src = tmp_path / "proof.c"
    src.write_text(text + "int doc_proof_unit;\n")
    cc(src, [f"-I{python.parent.parent / 'include' / f'python{minor}'}", f"-I{GENERATED}"])


def excerpt_of_header(text: str, tmp_path: Path) -> None:
    """Each `#define` of the excerpt is a line of the header of the table its first line names."""
    table = re.search(r'#define PYOFFSETS_TABLE "([^"]+)"', text).group(1)
    header = (GENERATED / f"pyoffsets_{table}.h").read_text().splitlines()
    for line in text.splitlines():
        define = line.split("/*")[0].rstrip()
        assert define in header, f"{define!r} is not a line of pyoffsets_{table}.h"


def excerpt_of_example(text: str, tmp_path: Path) -> None:
    """The block is a run of lines of examples/jitdemo/jitdemo.c, which tests/test_capi.py builds and
    runs (test_worked_example_on_every_cpython)."""
    example = (ROOT / "examples" / "jitdemo" / "jitdemo.c").read_text()
    assert text in example, "the block is not a run of lines of examples/jitdemo/jitdemo.c"


def run_shipped_commands(text: str, tmp_path: Path) -> None:
    """The lines that name only shipped tables (not the reader's files or interpreters) run, exit 0 or
    1 (drift found), with output."""
    ran = 0
    for line in text.splitlines():
        cmd = line.split("#")[0].split()
        if not cmd or any(w.endswith((".txt", ".html")) or w.startswith(("OLD", "NEW", "--python")) for w in cmd):
            continue
        proc = subprocess.run([sys.executable, "-m", "offsets", *cmd[1:]], capture_output=True, text=True, cwd=ROOT)
        assert proc.returncode in (0, 1) and proc.stdout, (line, proc.stderr[-1000:])
        ran += 1
    assert ran >= 2, text


def cc(src: Path, flags: list) -> None:
    include = sysconfig.get_paths()["include"]
    proc = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-c", "-o", "/dev/null",
                           f"-I{include}", *flags, str(src)], capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr[-3000:]
