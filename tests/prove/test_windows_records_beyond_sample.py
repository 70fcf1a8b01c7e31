"""What make test's sample of the Windows records (tests/test_windows_records.py: 3.13's made again
under Wine, 3.12's refuted by its DLL) leaves here for its cost, a Wine run each: a table with an
offset moved fails python.org's 3.13.2 under Wine and records nothing, and checked again it loses
its old records."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # tests/

from offsets.check import verified  # noqa: E402
from offsets.errors import VerifyError  # noqa: E402
from offsets.tools import matrix, windows_builds, windows_records  # noqa: E402
from test_live_records import offset_moved  # noqa: E402
from test_windows_records import GENERATED, wine, without_records  # noqa: E402,F401 (wine: a fixture)


def test_a_table_with_an_offset_moved_fails_under_wine_and_is_not_recorded(tmp_path, wine):
    out = without_records(tmp_path, "3.13")
    name = windows_builds.table_path("3.13").name
    rows = offset_moved(out, name)
    (out / "index.yaml").write_text(matrix.index_text(rows))
    before = (out / "index.yaml").read_text()
    with pytest.raises(VerifyError) as e:
        windows_records.record(out, only="3.13", say=lambda line: None)
    assert "fails the live check by python.org's 3.13.2 under Wine" in str(e.value)
    assert "PyBaseExceptionObject.suppress_context" in str(e.value)
    assert (out / "index.yaml").read_text() == before


def test_checked_again_and_failing_under_wine_a_table_loses_its_old_records(tmp_path, wine):
    out = without_records(tmp_path, "3.13")
    name = windows_builds.table_path("3.13").name
    rows = offset_moved(out, name)
    rows[0]["verified"]["checks"].update(verified.index_rows(GENERATED)[name]["verified"]["checks"])
    rows[0]["verified"]["sha256"] = verified.sha256((out / name).read_text())
    (out / "index.yaml").write_text(matrix.index_text(rows))
    assert windows_records.record(out, only="3.13", say=lambda line: None) == {}       # recorded: not run again
    with pytest.raises(VerifyError):
        windows_records.record(out, only="3.13", again=True, say=lambda line: None)
    checks = verified.index_rows(out)[name]["verified"]["checks"]
    assert windows_records.WINE not in checks and not any(k.startswith("dll ") for k in checks) and "gcc" in checks
