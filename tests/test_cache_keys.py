"""A changed scanner scans again: the unit cache and the DWARF cache are keyed on the code that
makes their entries (`offsets/scan/code_key.py`), not on a revision number a person must bump.

Each test runs a copy of the package in a fresh process, fills a fresh cache, then changes one
module of the copy the way an edit would (a line appended) and looks at what the cache did: a new
entry beside the old one is a new parse. The scanner's output itself is checked elsewhere; what is
checked here is only whether the cache was used.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from offsets.scan.clang_headers import builtin_include

REPO = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).parent / "fixtures" / "fakepy"
GCC = shutil.which("gcc")


def package_copy(tmp_path: Path) -> Path:
    """A copy of the package to edit (the directory to put first on PYTHONPATH)."""
    root = tmp_path / "code"
    shutil.copytree(REPO / "offsets", root / "offsets", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return root


def edit(root: Path, module: str) -> None:
    """Change `module` (a path under offsets/) as an edit would, without changing what it does."""
    path = root / "offsets" / module
    path.write_text(path.read_text() + "\n# edited\n")


def run(root: Path, cache: Path, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(root), OFFSETS_CACHE=str(cache),
               OFFSETS_CLANG_INCLUDE=str(builtin_include()))   # the builtin headers fetched already
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(root / "offsets"), "the copy, not the checkout, must run"
    return proc.stderr


SCAN = f"""
import offsets
from offsets.progress import say
from offsets.scan import build_inputs, scanner
scanner.scan(build_inputs.from_prefix({str(FAKE)!r}, target="x86_64-linux-gnu"),
             scanner.ScanOptions(jobs=1, progress=say))
print(offsets.__path__[0])
"""


def test_a_changed_parser_or_model_parses_the_unit_again(tmp_path):
    root, cache = package_copy(tmp_path), tmp_path / "cache"
    entries = lambda: len(list((cache / "scan").glob("*/*.json")))   # noqa: E731
    assert "parsing 2 translation unit(s), 0 from cache" in run(root, cache, SCAN) and entries() == 2
    assert "parsing" not in run(root, cache, SCAN) and entries() == 2            # warm: from the cache
    edit(root, "drift/diff.py")                 # not the scanner's code: the cache still holds
    assert "parsing" not in run(root, cache, SCAN) and entries() == 2
    for n, module in enumerate(("scan/clang_scan.py", "layout/model.py", "scan/unit_cache.py",
                                "layout/compact.py"), start=2):
        edit(root, module)                      # the reader, the model it builds, the entry's form
        assert "parsing 2 translation unit(s), 0 from cache" in run(root, cache, SCAN), module
        assert entries() == 2 * n, module
    assert len(generations(cache)) == n         # each code's entries in a folder of their own


def test_changed_dependency_or_type_record_code_finishes_the_table_again(tmp_path):
    """The finished table's cache (scan/finish.py) is keyed on the code of its steps: an edit of
    them, or of a module they import, is a new entry; one of the parser only is not."""
    root, cache = package_copy(tmp_path), tmp_path / "cache"
    entries = lambda: len(list((cache / "finish").glob("*/*.json")))   # noqa: E731
    run(root, cache, SCAN)
    run(root, cache, SCAN)
    assert entries() == 1
    edit(root, "drift/diff.py")                 # no step's code: the entry holds
    run(root, cache, SCAN)
    assert entries() == 1
    for n, module in enumerate(("scan/depends.py", "scan/source_text.py", "scan/type_records.py",
                                "layout/identity.py"), start=2):
        edit(root, module)
        run(root, cache, SCAN)
        assert entries() == n, module


def generations(cache: Path) -> list:
    return sorted((p for p in (cache / "scan").iterdir() if p.is_dir()), key=lambda p: (p / ".used").stat().st_mtime)


def age(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_a_new_generation_removes_the_ones_no_scan_used_for_a_week(tmp_path):
    """The scan cache grows by one generation per scanner change; a new one removes those unused for
    `data_cache.STALE_DAYS` (7) and no others: another checkout's, used today, stays."""
    root, cache = package_copy(tmp_path), tmp_path / "cache"
    run(root, cache, SCAN)
    edit(root, "scan/clang_scan.py")
    run(root, cache, SCAN)
    old, recent = generations(cache)
    age(old / ".used", 8)
    flat_old, flat_new = cache / "scan" / f"{'0' * 64}.json", cache / "scan" / f"{'1' * 64}.json"
    flat_old.write_text("an entry of the layout before generations\n")
    flat_new.write_text("the same, written today\n")
    age(flat_old, 8)
    run(root, cache, SCAN)                      # a warm scan makes no generation: nothing is removed
    assert old.is_dir() and flat_old.exists()
    edit(root, "scan/clang_scan.py")
    assert "parsing 2 translation unit(s)" in run(root, cache, SCAN)
    assert not old.exists() and not flat_old.exists()
    assert recent.is_dir() and flat_new.exists() and len(generations(cache)) == 2


@pytest.mark.skipif(GCC is None, reason="gcc is not installed (`apt-get install gcc`)")
def test_a_changed_dwarf_reader_reads_again(tmp_path):
    root, cache = package_copy(tmp_path), tmp_path / "cache"
    (tmp_path / "s.c").write_text("struct s { int a; long b; } x;\n")
    so = tmp_path / "s.so"
    subprocess.run([GCC, "-g", "-shared", "-fPIC", "-o", str(so), str(tmp_path / "s.c")], check=True)
    read = f"import offsets\nfrom offsets.scan import dwarf\ndwarf.read({str(so)!r})\nprint(offsets.__path__[0])\n"
    entries = lambda: len(list((cache / "dwarf").glob("*/*.json")))   # noqa: E731
    run(root, cache, read)
    run(root, cache, read)
    assert entries() == 1
    for n, module in enumerate(("scan/dwarf_read.py", "scan/dwarf_raw.py", "scan/qualify.py"), start=2):
        edit(root, module)
        run(root, cache, read)
        assert entries() == n, module

