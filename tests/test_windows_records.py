"""python.org's Windows builds' checks of the Windows tables, recorded in generated/index.yaml
(tools/windows_records.py), and how what checked a table says them (compact.checks_of, the report's
sentence).

Truth: python.org's own builds, another patch release of each table's minor: the DLL's bytes
(check/pe_binary.py) and that build run under Wine reading real objects through the table's
offsets. make test runs the sample of test_windows.py, 3.13 (one Wine run per test that needs one);
tests/prove/test_windows_builds.py checks all six, and tests/prove/test_windows_records_beyond_sample.py
has a moved offset fail under Wine.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from offsets.check import verified
from offsets.drift import checked
from offsets.layout.compact import checks_of
from offsets.tools import matrix, windows_builds, windows_records

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"


def without_records(tmp_path: Path, minor: str) -> Path:
    """A checkout folder whose generated/ holds the committed Windows table of `minor` and its index
    row, without python.org's records; the table's file name."""
    name = windows_builds.table_path(minor).name
    row = dict(verified.index_rows(GENERATED)[name])
    row["verified"] = dict(row["verified"], checks={k: v for k, v in row["verified"]["checks"].items()
                                                    if k != windows_records.WINE and not k.startswith("dll ")})
    (tmp_path / "generated").mkdir()
    shutil.copy(GENERATED / name, tmp_path / "generated" / name)
    (tmp_path / "generated" / "index.yaml").write_text(matrix.index_text([row]))
    return tmp_path / "generated"


@pytest.fixture
def wine():
    if shutil.which("wine") is None:
        from conftest import missing_tool

        missing_tool("wine", "make test-venv installs it")


def test_the_committed_313_records_are_what_python_orgs_build_says_again(tmp_path, wine):
    out = without_records(tmp_path, "3.13")
    name = windows_builds.table_path("3.13").name
    said = []
    made = windows_records.record(out, only="3.13", say=said.append)
    committed = {k: v for k, v in verified.index_rows(GENERATED)[name]["verified"]["checks"].items()
                 if k == windows_records.WINE or k.startswith("dll ")}
    assert made == {name: committed} and set(committed) == {"dll python313.dll", windows_records.WINE}
    assert committed["wine"]["build"] == committed["dll python313.dll"]["build"] == "3.13.2"
    assert committed["wine"]["checks"] > 300 and committed["dll python313.dll"]["fields"] > 100
    rec = verified.index_rows(out)[name]["verified"]
    assert rec["checks"]["wine"] == committed["wine"] and rec["sha256"] == verified.sha256((out / name).read_text())
    assert verified.problems(out) == []
    assert "/" not in json.dumps(made)          # no path of this machine in the committed record
    assert windows_records.record(out, only="3.13", say=said.append) == {}     # recorded once


def test_the_312_table_python_orgs_dll_refutes_is_not_recorded(tmp_path, wine):
    """3.12.1's table against python.org's 3.12.9, whose `_PyRuntimeState` is 664 bytes smaller
    (tests/prove/test_windows_builds.py's REFUTED): nothing recorded, and the step says why; a
    record it had before is dropped."""
    out = without_records(tmp_path, "3.12")
    name = windows_builds.table_path("3.12").name
    rows = yaml.safe_load((out / "index.yaml").read_text())["tables"]
    rows[0]["verified"]["checks"]["wine"] = {"checks": 9, "constants": 0, "build": "3.12.9", "mismatches": 0}
    (out / "index.yaml").write_text(matrix.index_text(rows))
    said = []
    assert windows_records.record(out, only="3.12", say=said.append) == {}
    assert any("python.org's 3.12.9 refutes it" in line and "PyRuntim" in line for line in said), said
    checks = verified.index_rows(out)[name]["verified"]["checks"]
    assert "wine" not in checks and not any(k.startswith("dll ") for k in checks)
    assert not any(k.startswith("dll ") or k == "wine" for k in verified.index_rows(GENERATED)[name]["verified"]["checks"])


def test_checks_of_words_python_orgs_checks_with_their_build():
    rec = {"checks": {"gcc": {"structs": 2, "fields": 30, "mismatches": 0},
                      "dll python313.dll": {"fields": 122, "build": "3.13.2", "mismatches": 0},
                      "wine": {"checks": 852, "constants": 233, "build": "3.13.2", "mismatches": 0}}}
    assert checks_of(rec, "x86_64-pc-windows-msvc", "3.13.5") == [
        "mingw-w64 gcc's offsetof: 30 fields",
        "python.org's 3.13.2 (another patch release than 3.13.5) DLL python313.dll: 122 values (its PyRuntim "
        "section's size, its type objects' sizes and names, Py_Version, _Py_DebugOffsets)",
        "python.org's 3.13.2 (another patch release than 3.13.5) build live under Wine: 852 checks of real objects "
        "and __basicsize__, 233 constants"]
    assert checks_of(rec, "x86_64-pc-windows-msvc", "3.13.2")[1].startswith("python.org's 3.13.2 DLL python313.dll")
    rec["checks"]["wine"]["mismatches"] = 1
    assert not any("Wine" in line for line in checks_of(rec, "x86_64-pc-windows-msvc", "3.13.5"))


def test_the_report_sentence_counts_python_orgs_checks_apart_from_a_binary_of_the_build():
    lines = checks_of({"checks": {"dll python313.dll": {"fields": 122, "build": "3.13.2", "mismatches": 0},
                                  "wine": {"checks": 852, "constants": 0, "build": "3.13.2", "mismatches": 0}}},
                      "x86_64-pc-windows-msvc", "3.13.5")
    said = checked.sentence(["a", "b"], {"a": lines, "b": ["mingw-w64 gcc's offsetof: 3 fields"]})
    assert "python.org's DLL of its minor (1 of 2 tables)" in said
    assert "python.org's build of its minor, live under Wine (1 of 2 tables)" in said
    # its _Py_DebugOffsets and its live check are not those of a binary or interpreter of the build
    assert "_Py_DebugOffsets of a binary of the build" not in said and "a live interpreter of the build" not in said
    assert "no binary of these builds was at hand to check against (python.org's are of other patch releases)" in said


def test_the_shipped_index_says_python_orgs_checks_of_each_windows_table_that_has_them():
    index = json.loads((ROOT / "offsets" / "data" / "compact" / "index.json").read_text())
    shipped = {e["name"] + ".yaml": e.get("checked") or [] for e in index["tables"]}
    recorded = {n: r for n, r in verified.index_rows(GENERATED).items()
                if windows_records.WINE in (r.get("verified") or {}).get("checks", {})}
    assert len(recorded) == 5        # six builds, less 3.12's, which its DLL refutes
    for name, row in recorded.items():
        wine = row["verified"]["checks"]["wine"]
        assert any(line.startswith(f"python.org's {wine['build']} ") and f"under Wine: {wine['checks']} checks" in line
                   for line in shipped[name]), (name, shipped[name])


def test_the_record_check_refuses_a_windows_check_that_compared_nothing(tmp_path):
    out = without_records(tmp_path, "3.13")
    name = windows_builds.table_path("3.13").name
    rows = yaml.safe_load((out / "index.yaml").read_text())["tables"]
    for check, entry in (("wine", {"checks": 0, "constants": 0, "build": "3.13.2", "mismatches": 0}),
                         ("dll python313.dll", {"fields": 0, "build": "3.13.2", "mismatches": 0})):
        rows[0]["verified"]["checks"][check] = entry
        (out / "index.yaml").write_text(matrix.index_text(rows))
        assert f"{name}: its {check} check compared nothing" in verified.problems(out)
        del rows[0]["verified"]["checks"][check]
    (out / "index.yaml").write_text(matrix.index_text(rows))
    assert verified.problems(out) == []
