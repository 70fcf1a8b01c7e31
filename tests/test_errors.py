"""Every error path of `offsets scan/get/show`: one clear line on stderr, the right exit code,
no traceback, and no table written."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FAKE = Path(__file__).parent / "fixtures" / "fakepy"
REPO = Path(__file__).parent.parent


def offsets(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "offsets", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr.strip()


def one_error_line(err: str) -> str:
    lines = [l for l in err.splitlines() if l.startswith("offsets: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def fake(tmp_path):
    tree = tmp_path / "fake"
    shutil.copytree(FAKE, tree)
    return tree


def test_missing_prefix(tmp_path):
    code, _, err = offsets("scan", "--prefix", tmp_path / "nowhere", "-o", tmp_path / "t.yaml")
    assert code == 2 and "prefix" in one_error_line(err) and "does not exist" in err
    assert not (tmp_path / "t.yaml").exists()


def test_directory_that_is_not_a_cpython_build(tmp_path):
    (tmp_path / "include").mkdir()
    code, _, err = offsets("scan", "--prefix", tmp_path, "-o", tmp_path / "t.yaml")
    assert code == 2 and "is not a CPython build" in one_error_line(err)


def test_unreadable_pyconfig(fake, tmp_path):
    code, _, err = offsets("scan", "--prefix", fake, "--pyconfig", tmp_path, "-o", tmp_path / "t.yaml")
    assert code == 2 and f"cannot read {tmp_path}" in one_error_line(err)


def test_pyconfig_without_sizes_is_not_configure_made(fake, tmp_path):
    (fake / "include/python3.99/pyconfig.h").write_text("/* empty */\n")
    code, _, err = offsets("scan", "--prefix", fake, "-o", tmp_path / "t.yaml")
    assert code == 2 and "defines no SIZEOF_VOID_P" in one_error_line(err)


def test_pyconfig_of_another_target(fake, tmp_path):
    code, _, err = offsets("scan", "--prefix", fake, "--target", "i686-linux-gnu", "-o", tmp_path / "t.yaml")
    assert code == 2 and "8-byte pointers but target i686-linux-gnu has 4" in one_error_line(err)


def test_unknown_target(fake, tmp_path):
    code, _, err = offsets("scan", "--prefix", fake, "--target", "sparc", "-o", tmp_path / "t.yaml")
    assert code == 2 and "unknown target 'sparc'; supported: x86_64-linux-gnu" in one_error_line(err)


def test_clang_error_aborts_the_scan_and_names_file_line(fake, tmp_path):
    header = fake / "include/python3.99/broken.h"
    header.write_text("struct ok { int a; };\nstruct bad { unknown_t b; };\n")
    code, _, err = offsets("scan", "--prefix", fake, "--no-cache", "-o", tmp_path / "t.yaml")
    line = one_error_line(err)
    assert code == 2 and f"{header}:2:14: error: unknown type name 'unknown_t'" in line
    assert not (tmp_path / "t.yaml").exists()


def test_missing_header_aborts_the_scan(fake, tmp_path):
    (fake / "include/python3.99/needs.h").write_text('#include "not_there.h"\n')
    code, _, err = offsets("scan", "--prefix", fake, "--no-cache", "-o", tmp_path / "t.yaml")
    assert code == 2 and "'not_there.h' file not found" in one_error_line(err)


def test_unknown_name_suggests_close_names(tmp_path):
    table = REPO / "generated/cpython-3.11.7-x86_64-linux-gnu.yaml"
    code, _, err = offsets("get", "PyListObject.ob_itme", "-t", table)
    assert code == 2 and "did you mean PyListObject.ob_item" in one_error_line(err)
    code, _, err = offsets("show", "PyListObjekt", "-t", table)
    assert code == 2 and "did you mean PyListObject" in one_error_line(err)


def test_malformed_tables(tmp_path):
    bad = tmp_path / "bad.yaml"
    for text, expected in [
        ("schema: 1\nbuild: [\n", "not valid YAML"),
        ("just text\n", "not a layout table"),
        ("schema: 7\n", "schema 7 is not supported"),
        ("schema: 1\nbuild: {}\nscanner: {}\nstructs: {}\n", "malformed table at build: 'version' is a required property"),
    ]:
        bad.write_text(text)
        code, _, err = offsets("get", "PyObject", "-t", bad)
        assert code == 2 and expected in one_error_line(err), (text, err)
    code, _, err = offsets("get", "PyObject", "-t", tmp_path / "missing.yaml")
    assert code == 2 and "cannot read table" in one_error_line(err)


def test_a_table_breaking_an_invariant_is_rejected(tmp_path):
    text = (REPO / "generated/cpython-3.11.7-x86_64-linux-gnu.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("      ob_type: {offset: 8, size: 8,", "      ob_type: {offset: 9, size: 8,", 1))
    code, _, err = offsets("get", "PyObject.ob_type", "-t", bad)
    assert code == 2 and "field 'ob_type' ends at 17, past the size 16" in one_error_line(err)
