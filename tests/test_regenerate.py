"""`python -m offsets.tools.regenerate` (`make tables`): writes by default, `--check` changes nothing and
exits 1 listing the stale files with the start of each diff; strays are removed; the C headers and
compact tables are reused only while the YAML and the code are the same.
Each runs on a tmp copy of a repository holding the golden fixture's table (`--root`,
`--derived-only`: no matrix scan); the checkout's own files are never written (their digests are
compared before and after)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fixtures" / "fakepy"
HINT = "run `python -m offsets.tools.regenerate` (make tables)\n"


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
    from offsets.layout import table_yaml

    (tmp_path / "generated").mkdir()
    (tmp_path / "offsets").mkdir()
    shutil.copy(fake_table, tmp_path / "generated" / f"{table_yaml.load(fake_table).build.table_name}.yaml")
    before = digests(REPO / "generated", REPO / "offsets" / "data" / "compact")
    yield tmp_path
    assert digests(REPO / "generated", REPO / "offsets" / "data" / "compact") == before, "the checkout was written"


def tool(root, *args, cwd=None):
    env = dict(os.environ, OFFSETS_CACHE=str(root / "cache"))    # the regeneration cache of this test alone
    proc = subprocess.run([sys.executable, "-m", "offsets.tools.regenerate", *args], capture_output=True, text=True,
                          cwd=cwd or root, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def test_check_lists_what_is_stale_and_writing_repairs_it(root):
    gen, compact = root / "generated", root / "offsets" / "data" / "compact"
    stem = next(gen.glob("cpython-*.yaml")).stem
    header = f"generated/pyoffsets_{stem}.h"
    stale = [header, f"offsets/data/compact/{stem}.jsonl", "offsets/data/compact/index.json",
             "offsets/data/compact/layouts.jsonl", "offsets/data/compact/cold.jsonl",
             "offsets/data/compact/types.json", "offsets/data/compact/build_ids.txt"]
    code, out, err = tool(root, "--check", "--derived-only")
    assert code == 1 and out.startswith(f"--- a/{header}\n+++ b/{header}\n")
    assert "+++ b/offsets/data/compact/index.json\n" in out and all(len(line) <= 165 for line in out.splitlines())
    assert err == f"offsets: stale: {', '.join(sorted(stale))}; {HINT}"
    assert not (root / header).exists() and not compact.exists()
    assert tool(root, "--derived-only") == (0, "", f"offsets: updated: {', '.join(sorted(stale))}\n")
    written = {p: p.read_text() for p in [root / header, *compact.iterdir()]}
    assert sorted(p.name for p in compact.iterdir()) == sorted(["index.json", "layouts.jsonl", "cold.jsonl", "types.json",
                                                                "build_ids.txt", f"{stem}.jsonl"])
    assert tool(root, "--check", "--derived-only", "--no-cache") == (0, "", "offsets: everything is up to date\n")
    # gcc compiles the header after the very headers it describes (its version and target checks pass)
    probe = root / "probe.c"
    probe.write_text(f'#include "Python.h"\n#include "{Path(header).name}"\nint size = PYOFFSETS_SIZEOF_PyObject;\n')
    gcc = shutil.which("gcc")
    if gcc:
        subprocess.run([gcc, "-fsyntax-only", "-Werror", f"-I{FAKE / 'include' / 'python3.99'}", f"-I{gen}",
                        str(probe)], check=True)
    # hand edits and strays: --check names each and changes nothing; writing repairs them all
    text = written[root / header]
    (root / header).write_text(text.replace("#define PYOFFSETS_SIZEOF_PyObject 16", "#define PYOFFSETS_SIZEOF_PyObject 24"))
    (gen / "pyoffsets_cpython-3.0.0-x86_64-linux-gnu.h").write_text("/* old */\n")
    (compact / "cpython-3.0.0-x86_64-linux-gnu.jsonl").write_text("{}\n")
    code, out, err = tool(root, "--check", "--derived-only")
    assert code == 1 and "-#define PYOFFSETS_SIZEOF_PyObject 24\n+#define PYOFFSETS_SIZEOF_PyObject 16\n" in out
    assert "--- a/generated/pyoffsets_cpython-3.0.0-x86_64-linux-gnu.h\n+++ /dev/null\n" in out
    gone = ["generated/pyoffsets_cpython-3.0.0-x86_64-linux-gnu.h", "offsets/data/compact/cpython-3.0.0-x86_64-linux-gnu.jsonl"]
    assert err == f"offsets: stale: {', '.join(sorted([header, *gone]))}; {HINT}"
    assert all((root / g).exists() for g in gone)
    assert tool(root, "--derived-only")[0] == 0
    assert {p: p.read_text() for p in written} == written and not any((root / g).exists() for g in gone)


def test_a_changed_table_is_never_answered_from_the_cache(root):
    """The headers are cached by the YAML's bytes: an edited table makes them stale at once."""
    table = next((root / "generated").glob("cpython-*.yaml"))
    assert tool(root, "--derived-only")[0] == 0
    table.write_text(table.read_text().replace("  PyObject:\n    kind: struct\n    size: 16\n",
                                               "  PyObject:\n    kind: struct\n    size: 24\n", 1))
    code, out, err = tool(root, "--check", "--derived-only")
    assert code == 1 and "-#define PYOFFSETS_SIZEOF_PyObject 16\n+#define PYOFFSETS_SIZEOF_PyObject 24\n" in out


def test_outside_a_checkout_is_one_clear_error(tmp_path):
    code, out, err = tool(tmp_path, "--check", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == (f"offsets: error: the current directory ({tmp_path.name}) is not an offsets checkout (no "
                   "generated/ or offsets/): run this in the repository, or pass --root REPO\n")


@pytest.mark.parametrize("mode", ["--check", "--verify"])
def test_only_matching_no_job_is_refused(mode):
    """A selection that matches nothing would check nothing and pass: it is an error, exit 2."""
    proc = subprocess.run([sys.executable, "-m", "offsets.tools.regenerate", mode, "--only", "no such build"],
                          capture_output=True, text=True, cwd=REPO)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("offsets: error: --only 'no such build' matches no job") and \
        proc.stderr.count("\n") == 1, proc.stderr


def test_history_defaults_to_the_shipped_tables(tmp_path):
    """Run anywhere (no checkout around): the package's own tables, the same answers as generated/'s."""
    def history(*args):
        proc = subprocess.run([sys.executable, "-m", "offsets", "history", "listiterobject.it_index", *args],
                              capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    shipped = history()
    assert shipped == history("--tables", str(REPO / "generated"))
    assert shipped.count("3.13.5") >= 3
