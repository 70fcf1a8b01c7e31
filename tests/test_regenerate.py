"""`python -m offsets.c_header` and `python -m offsets.compact`: check by default (exit 1 and a
diff when stale, 0 when up to date), rewrite with --write (stale files rewritten, strays removed).
Each runs on a tmp copy of a repository holding the golden fixture's table (`--root`); the
checkout's own files are never written (their digests are compared before and after)."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fixtures" / "fakepy"


def digests(*dirs: Path) -> dict:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for d in dirs if d.is_dir() for p in sorted(d.iterdir())}


@pytest.fixture(scope="module")
def fake_table(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("scan") / "t.yaml"
    proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "-q", "--prefix", str(FAKE), "--target",
                           "x86_64-linux-gnu", "-j", "1", "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture
def root(tmp_path, fake_table):
    """A repository copy: generated/ with the fixture's table, under the name `offsets scan` gives it."""
    from offsets import table_yaml

    (tmp_path / "generated").mkdir()
    shutil.copy(fake_table, tmp_path / "generated" / f"{table_yaml.load(fake_table).build.table_name}.yaml")
    before = digests(REPO / "generated", REPO / "offsets" / "data" / "compact")
    yield tmp_path
    assert digests(REPO / "generated", REPO / "offsets" / "data" / "compact") == before, "the checkout was written"


def tool(module, root, *args):
    proc = subprocess.run([sys.executable, "-m", module, "--root", str(root), *args], capture_output=True, text=True)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def test_c_header_check_and_write(root):
    gen = root / "generated"
    name = "pyoffsets_" + next(gen.glob("cpython-*.yaml")).stem + ".h"
    code, out, err = tool("offsets.c_header", root)
    assert code == 1 and out.startswith(f"--- a/generated/{name}\n+++ b/generated/{name}\n")
    assert err == f"generated/ headers are stale: {name}; run `python -m offsets.c_header --write`\n"
    assert not (gen / name).exists()
    assert tool("offsets.c_header", root, "--write") == (0, "C headers: 1 rewritten, 0 removed, 0 unchanged\n", "")
    written = (gen / name).read_text()
    assert tool("offsets.c_header", root) == (0, "", "")
    # gcc compiles it after the very headers it describes (its version and target checks pass)
    probe = root / "probe.c"
    probe.write_text(f'#include "Python.h"\n#include "{name}"\nint size = PYOFFSETS_SIZEOF_PyObject;\n')
    gcc = shutil.which("gcc")
    if gcc:
        subprocess.run([gcc, "-fsyntax-only", "-Werror", f"-I{FAKE / 'include' / 'python3.99'}", f"-I{gen}",
                        str(probe)], check=True)
    # a hand edit and a stray header: check names both and changes nothing; --write repairs both
    (gen / name).write_text(written.replace("#define PYOFFSETS_SIZEOF_PyObject 16", "#define PYOFFSETS_SIZEOF_PyObject 24"))
    (gen / "pyoffsets_cpython-3.0.0-x86_64-linux-gnu.h").write_text("/* old */\n")
    code, out, err = tool("offsets.c_header", root)
    assert code == 1 and "-#define PYOFFSETS_SIZEOF_PyObject 24\n+#define PYOFFSETS_SIZEOF_PyObject 16\n" in out
    assert err == (f"generated/ headers are stale: {name}, pyoffsets_cpython-3.0.0-x86_64-linux-gnu.h; "
                   "run `python -m offsets.c_header --write`\n")
    assert (gen / "pyoffsets_cpython-3.0.0-x86_64-linux-gnu.h").exists()
    assert tool("offsets.c_header", root, "--write") == (0, "C headers: 1 rewritten, 1 removed, 0 unchanged\n", "")
    assert (gen / name).read_text() == written and not (gen / "pyoffsets_cpython-3.0.0-x86_64-linux-gnu.h").exists()


def test_compact_check_and_write(root):
    out_dir = root / "offsets" / "data" / "compact"
    stem = next((root / "generated").glob("cpython-*.yaml")).stem
    code, out, err = tool("offsets.compact", root)
    assert code == 1 and out.startswith("--- a/index.json\n+++ b/index.json\n")
    assert err == (f"offsets/data/compact is stale: {stem}.jsonl, index.json, layouts.jsonl differ from generated/; "
                   "run `python -m offsets.compact --write`\n")
    assert not out_dir.exists()
    assert tool("offsets.compact", root, "--write") == (0, "compact tables: 3 rewritten, 0 removed, 0 unchanged\n", "")
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(["index.json", "layouts.jsonl", f"{stem}.jsonl"])
    written = {p.name: p.read_text() for p in out_dir.iterdir()}
    assert f'"{stem}.jsonl"' in written["index.json"]
    assert tool("offsets.compact", root) == (0, "", "")
    (out_dir / f"{stem}.jsonl").write_text(written[f"{stem}.jsonl"] + "\n")
    (out_dir / "cpython-3.0.0-x86_64-linux-gnu.jsonl").write_text("{}\n")
    code, out, err = tool("offsets.compact", root)
    assert (code, out) == (1, "")
    assert err == (f"offsets/data/compact is stale: {stem}.jsonl, cpython-3.0.0-x86_64-linux-gnu.jsonl differ from "
                   "generated/; run `python -m offsets.compact --write`\n")
    assert tool("offsets.compact", root, "--write") == (0, "compact tables: 1 rewritten, 1 removed, 2 unchanged\n", "")
    assert {p.name: p.read_text() for p in out_dir.iterdir()} == written
