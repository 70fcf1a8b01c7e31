"""The live check by a table's own interpreter, recorded as its `live` check (tools/live_records.py),
and how what checked a table says it (compact.checks_of, drift/checked.py's sentence).

Truth: the interpreter itself (this one, when it is the build of the committed table of its
version: its binary's build-id is one the table records), reading real objects through the table's
offsets in its own process (check/live_child.py); one interpreter run per test that needs one.
"""
from __future__ import annotations

import json
import platform
import re
from pathlib import Path

import pytest
import yaml

from conftest import missing_input
from offsets.check import verified
from offsets.drift import checked
from offsets.errors import BuildError, VerifyError
from offsets.layout.compact import checks_of
from offsets.tools import live_records, matrix

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
#: The committed table of this interpreter's version (a pyenv build, like the venv's).
TABLE = f"cpython-{platform.python_version()}-x86_64-linux-gnu.yaml"
LIVE_LINE = "a live interpreter of the build: 912 checks of real objects and __basicsize__, 190 constants"


def own_table(tmp_path: Path) -> Path:
    """A generated/ holding the committed table of this interpreter's build and its index row,
    without its live record; `missing_input` unless this interpreter is that build."""
    from offsets.runtime import running_identity

    if not (GENERATED / TABLE).is_file():
        missing_input(f"no committed table {TABLE} of this interpreter's version (the venv's is pyenv's)")
    text = (GENERATED / TABLE).read_text()
    me = running_identity().build_id
    if not me or me not in text:
        missing_input(f"this interpreter (build-id {me}) is not the build of {TABLE}: run the tests with "
                      "the pyenv build the table was made from")
    row = dict(verified.index_rows(GENERATED)[TABLE])
    row["verified"] = dict(row["verified"], checks={k: v for k, v in row["verified"]["checks"].items()
                                                    if k != verified.LIVE})
    (tmp_path / TABLE).write_text(text)
    (tmp_path / "index.yaml").write_text(matrix.index_text([row]))
    return tmp_path


def test_a_table_its_own_interpreter_checks_is_recorded(tmp_path):
    out = own_table(tmp_path)
    said = []
    made = live_records.record(out, say=said.append)
    rec = verified.index_rows(out)[TABLE]["verified"]
    assert made == {TABLE: rec["checks"][verified.LIVE]}
    live = made[TABLE]
    assert live["mismatches"] == 0 and live["checks"] > 300 and live["constants"] > 100
    assert live["build_id"] in (out / TABLE).read_text()
    assert rec["sha256"] == verified.sha256((out / TABLE).read_text())      # still the record of these bytes
    assert verified.problems(out) == []
    assert "/" not in json.dumps(live)             # no path of this machine in the committed record
    assert any(f"{TABLE}: live: {live['checks']} checks" in line for line in said), said
    # recorded once: a second run checks nothing (no interpreter runs)
    assert live_records.record(out, say=said.append) == {}


def offset_moved(out: Path, name: str) -> list:
    """Table `name` in `out` with PyBaseExceptionObject.suppress_context (a char the padding at the
    end of the struct follows) one byte on, and the index rows of `out` with its record's sha256 made
    of the changed bytes (as if its other checks had passed), for the caller to write."""
    text = (out / name).read_text()
    start = text.index("\n  PyBaseExceptionObject:\n")
    found = re.compile(r"\n      suppress_context: \{offset: (\d+),").search(text, start)
    text = text[:found.start(1)] + str(int(found.group(1)) + 1) + text[found.end(1):]
    (out / name).write_text(text)
    rows = yaml.safe_load((out / "index.yaml").read_text())["tables"]
    rows[0]["verified"]["sha256"] = verified.sha256(text)
    return rows


def without_live(out: Path, name: str) -> Path:
    """`out` holding the committed table `name` and its index row without its live record."""
    import shutil

    row = dict(verified.index_rows(GENERATED)[name])
    row["verified"] = dict(row["verified"], checks={k: v for k, v in row["verified"]["checks"].items()
                                                    if k != verified.LIVE})
    shutil.copy(GENERATED / name, out / name)
    (out / "index.yaml").write_text(matrix.index_text([row]))
    return out


def refused_unrecorded(out: Path, name: str, record, why: str) -> None:
    """Table `name` of `out` with an offset moved (`offset_moved`) fails the live check that
    `record(out)` runs, with `why` and the field in its error, and nothing is written."""
    (out / "index.yaml").write_text(matrix.index_text(offset_moved(out, name)))
    before = (out / "index.yaml").read_text()
    with pytest.raises(VerifyError) as e:
        record(out)
    assert why in str(e.value) and "PyBaseExceptionObject.suppress_context" in str(e.value)
    assert (out / "index.yaml").read_text() == before


def one_offset_changed(out: Path, live: dict = None) -> str:
    """Table `TABLE` in `out` with one offset changed, and its record made of the changed bytes (as if
    its other checks had passed), with `live` as its live check if given; the index's text."""
    rows = offset_moved(out, TABLE)
    if live is not None:
        rows[0]["verified"]["checks"][verified.LIVE] = live
    (out / "index.yaml").write_text(matrix.index_text(rows))
    return (out / "index.yaml").read_text()


def test_a_table_with_one_offset_changed_is_refused_by_its_own_interpreter_and_not_recorded(tmp_path):
    out = own_table(tmp_path)
    before = one_offset_changed(out)
    with pytest.raises(VerifyError) as e:
        live_records.record(out, say=lambda line: None)
    assert "fails the live check by its own interpreter" in str(e.value)
    assert "PyBaseExceptionObject.suppress_context" in str(e.value) and "not recorded" in str(e.value)
    assert (out / "index.yaml").read_text() == before


def test_checked_again_and_failing_a_table_loses_its_old_live_record(tmp_path):
    out = own_table(tmp_path)
    old = {"checks": 9, "constants": 0, "build_id": "00", "mismatches": 0}
    one_offset_changed(out, old)
    assert live_records.record(out, say=lambda line: None) == {}       # recorded: not checked again
    with pytest.raises(VerifyError):
        live_records.record(out, again=True, say=lambda line: None)
    rec = verified.index_rows(out)[TABLE]["verified"]
    assert verified.LIVE not in rec["checks"] and rec["checks"] and rec["sha256"] == verified.sha256((out / TABLE).read_text())


def test_a_table_whose_record_is_not_of_its_bytes_is_not_checked(tmp_path):
    out = own_table(tmp_path)
    (out / TABLE).write_text((out / TABLE).read_text() + "\n")
    with pytest.raises(BuildError) as e:
        live_records.record(out, say=lambda line: None)
    assert "not of its bytes" in str(e.value) and "make tables" in str(e.value)


def test_checks_of_words_the_live_check_and_leaves_out_a_failed_one():
    rec = {"checks": {"live": {"checks": 912, "constants": 190, "build_id": "49da", "mismatches": 0},
                      "gcc": {"structs": 2, "fields": 30, "mismatches": 0},
                      "binary libpython3.11.so.1.0": {"structs": 26, "fields": 25, "mismatches": 0},
                      "depends cut": {"structs": 2, "fields": 30, "mismatches": 0}}}
    assert checks_of(rec, "x86_64-linux-gnu", "3.11.7") == [
        "gcc's offsetof: 30 fields", "the binary libpython3.11.so.1.0: 25 values (its type objects' sizes, Py_Version)",
        LIVE_LINE, "a rescan with pyconfig.h cut to the dependency sets: 30 fields"]
    rec["checks"]["live"]["mismatches"] = 1
    assert not any("live" in line for line in checks_of(rec, "x86_64-linux-gnu", "3.11.7"))
    assert checks_of({"checks": {"live": {"checks": 5, "constants": 0, "mismatches": 0}}}, "x86_64-linux-gnu") == \
        ["a live interpreter of the build: 5 checks of real objects and __basicsize__"]


def test_the_report_sentence_counts_the_tables_a_live_interpreter_checked():
    said = checked.sentence(["a", "b", "c"], {"a": ["gcc's offsetof: 3 fields", LIVE_LINE],
                                              "b": ["gcc's offsetof: 3 fields"], "c": None})
    assert "a live interpreter of the build (1 of 3 tables)" in said
    assert said.index("a second compiler's offsetof (2 of 3 tables)") < said.index("a live interpreter")
    assert said.endswith("1 table has no record of what checked it")
    assert "a live interpreter" not in checked.sentence(["b"], {"b": ["gcc's offsetof: 3 fields"]})


def test_the_record_check_refuses_a_live_check_by_another_binary_or_of_nothing(tmp_path):
    text = (GENERATED / TABLE).read_text() if (GENERATED / TABLE).is_file() else None
    if text is None:
        missing_input(f"no committed table {TABLE}")
    row = dict(verified.index_rows(GENERATED)[TABLE])
    (tmp_path / TABLE).write_text(text)
    for live, why in (({"checks": 9, "constants": 0, "build_id": "00" * 20, "mismatches": 0}, "not record"),
                      ({"checks": 0, "constants": 0, "build_id": "00" * 20, "mismatches": 0}, "compared nothing"),
                      ({"checks": 9, "constants": 0, "build_id": "00" * 20, "mismatches": 2}, "2 mismatches")):
        row["verified"] = dict(row["verified"], checks=dict(row["verified"]["checks"], live=live))
        (tmp_path / "index.yaml").write_text(matrix.index_text([row]))
        found = verified.problems(tmp_path)
        assert found and all(f.startswith(f"{TABLE}: ") for f in found) and any(why in f for f in found), found


def test_the_shipped_index_says_the_live_check_of_every_table_whose_record_has_one():
    index = json.loads((ROOT / "offsets" / "data" / "compact" / "index.json").read_text())
    shipped = {e["name"] + ".yaml": e.get("checked") or [] for e in index["tables"]}
    lived = {n: r["verified"]["checks"]["live"] for n, r in verified.index_rows(GENERATED).items()
             if verified.LIVE in (r.get("verified") or {}).get("checks", {})}
    for name, live in lived.items():          # how it ran, where not by its build-id here, follows: (under qemu-arm)
        said = f"a live interpreter of the build: {live['checks']} checks of real objects and __basicsize__" \
               f", {live['constants']} constants"
        assert any(line == said or line.startswith(said + " (") for line in shipped[name]), (name, shipped[name])
        if live.get("under"):
            assert any(f"under {live['under']}" in line for line in shipped[name]), (name, shipped[name])
    assert len(lived) >= 6 + 37 + 4           # pyenv's 3.8-3.13, Debian's by their interpreters, the builds made here
    assert all(not any(line.startswith("a live interpreter") for line in lines)
               for name, lines in shipped.items() if name not in lived)


def test_a_live_check_matched_by_headers_is_taken_only_as_such():
    """A musl build's live record (tools/built_records.py: zig's linker writes no build-id) says it
    matched its build by the headers the table names: the record check takes that, and refuses it
    with a build-id besides, for a table naming no digest of its headers, or without `by: inputs`."""
    import tempfile

    name = "cpython-3.13.15-x86_64-linux-musl.yaml"
    text = (GENERATED / name).read_text()
    row = dict(verified.index_rows(GENERATED)[name])
    live = row["verified"]["checks"][verified.LIVE]
    assert live["by"] == "inputs" and "build_id" not in live and live["checks"] > 300

    def found(live: dict, table_text: str = text) -> list:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / name).write_text(table_text)
            r = dict(row, verified=dict(row["verified"], sha256=verified.sha256(table_text),
                                        checks=dict(row["verified"]["checks"], live=live)))
            (Path(d) / "index.yaml").write_text(matrix.index_text([r]))
            return verified.problems(Path(d))

    assert found(live) == []
    assert any("names a build-id too" in f for f in found(dict(live, build_id="00" * 20)))
    headless = re.sub(r'(\n  inputs: \{[^\n]*)\bheaders: "sha256:\w+", ', r"\1", text)
    assert headless != text and any("records no digest of its headers" in f for f in found(live, headless))
    assert any("not record" in f for f in found({k: v for k, v in live.items() if k != "by"}))


def test_checks_of_says_how_a_live_interpreter_was_known_and_run():
    rec = {"checks": {"live": {"checks": 1086, "constants": 233, "by": "inputs", "under": "qemu-aarch64",
                               "mismatches": 0}}}
    assert checks_of(rec, "aarch64-linux-musl", "3.13.15") == [
        "a live interpreter of the build: 1086 checks of real objects and __basicsize__, 233 constants "
        "(matched by its headers; under qemu-aarch64)"]
