"""Drift for constants on tiny hand-built tables (exact expected values and text), then on the
committed tables: FRAME_OWNED_BY_CSTACK moved 3 -> 4 in 3.14, where FRAME_OWNED_BY_INTERPRETER took
3 (CPython's Include/internal/pycore_frame.h of 3.13 and pycore_interpframe_structs.h of 3.14: the
change profilers missed), and the compact store: builds share what they share."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import missing_input
from offsets.drift import diff as D
from offsets.drift import formats as F
from offsets.drift.history import format_text, history
from offsets.layout import compact, table_yaml
from offsets.layout.model import Build, Constant, Table, Target

REPO = Path(__file__).parent.parent
GENERATED = REPO / "generated"


def build(version):
    major, minor, micro = map(int, version.split("."))
    return Build(version, (major << 24) | (minor << 16) | (micro << 8) | 0xF0,
                 {"Py_DEBUG": False, "Py_GIL_DISABLED": False}, Target("x86_64-linux-gnu", 8))


def table(version, *constants):
    return Table(build(version), {"offsets": "0.1.0", "libclang": "16.0.6"}, {},
                 constants={c.name: c for c in constants})


def k(name, value, type_="int", size=4, kind="enum", where="Include/internal/pycore_frame.h"):
    return Constant(name, value, type_, size, where, kind)


OLD = table("3.13.5", k("FRAME_OWNED_BY_CSTACK", 3), k("FRAME_OWNED_BY_GENERATOR", 1),
            k("_Py_TPFLAGS_HAVE_VECTORCALL", 2048, "unsigned long", 8, "macro", "Include/object.h"),
            k("GONE", 7, kind="macro"), k("WIDENED", 5, kind="macro"))
NEW = table("3.14.10", k("FRAME_OWNED_BY_CSTACK", 4), k("FRAME_OWNED_BY_GENERATOR", 1),
            k("FRAME_OWNED_BY_INTERPRETER", 3),
            k("Py_TPFLAGS_HAVE_VECTORCALL", 2048, "unsigned long", 8, "macro", "Include/object.h"),
            k("WIDENED", 5, "long", 8, "macro"))


def test_constants_changed_added_removed_renamed_retyped():
    changes = [c for c in D.diff(OLD, NEW) if c.is_constant]
    got = [(c.kind, c.struct, c.old_struct, c.old if not isinstance(c.old, Constant) else c.old.value,
            c.new if not isinstance(c.new, Constant) else c.new.value) for c in changes]
    assert got == [
        ("constant-changed", "FRAME_OWNED_BY_CSTACK", "FRAME_OWNED_BY_CSTACK", 3, 4),
        ("constant-added", "FRAME_OWNED_BY_INTERPRETER", None, None, 3),
        ("constant-removed", "GONE", "GONE", 7, None),
        # the alias file (offsets/data/aliases.yaml) says these are one name
        ("constant-renamed", "Py_TPFLAGS_HAVE_VECTORCALL", "_Py_TPFLAGS_HAVE_VECTORCALL",
         "_Py_TPFLAGS_HAVE_VECTORCALL", "Py_TPFLAGS_HAVE_VECTORCALL"),
        ("constant-retyped", "WIDENED", "WIDENED", "int (4 bytes)", "long (8 bytes)"),
    ]


def test_text_and_json_of_constant_changes():
    report = F.Report(OLD.build, NEW.build, D.diff(OLD, NEW))
    text = F.text(report)
    assert "FRAME_OWNED_BY_CSTACK\n  ~ value 3 -> 4\n" in text
    assert "FRAME_OWNED_BY_INTERPRETER\n  + constant added (3, int, Include/internal/pycore_frame.h)\n" in text
    assert "Py_TPFLAGS_HAVE_VECTORCALL\n  = same constant, named _Py_TPFLAGS_HAVE_VECTORCALL in the old table\n" in text
    assert text.endswith("4 change(s) in 0 struct(s) and 4 constant(s)\n")
    doc = json.loads(F.as_json(report))
    entry = next(c for c in doc["changes"] if c["struct"] == "FRAME_OWNED_BY_INTERPRETER")
    assert entry["new"] == {"value": 3, "type": "int", "size": 4, "kind": "enum",
                            "defined_in": "Include/internal/pycore_frame.h"} and entry["drift"]


def test_a_watch_file_can_name_constants():
    watches = D.resolve_watch(D.parse_watch("FRAME_OWNED_BY_GENERATOR\n_Py_TPFLAGS_HAVE_VECTORCALL  # renamed\n"),
                              OLD, NEW)
    report = F.Report(OLD.build, NEW.build, D.diff(OLD, NEW), watches)
    assert not report.drift and report.exit_code == 0      # the generator's owner kept its value
    watches = D.resolve_watch(D.parse_watch("FRAME_OWNED_BY_CSTACK\n"), OLD, NEW)
    report = F.Report(OLD.build, NEW.build, D.diff(OLD, NEW), watches)
    assert [c.struct for c in report.shown] == ["FRAME_OWNED_BY_CSTACK"] and report.exit_code == 1
    with pytest.raises(KeyError, match="FRAME_OWNED_BY_CSTACK"):
        D.resolve_watch(D.parse_watch("FRAME_OWNED_BY_CSTAK\n"), OLD, NEW)


def test_history_of_a_constant():
    groups = history("FRAME_OWNED_BY_CSTACK", [OLD, NEW])
    text = format_text("FRAME_OWNED_BY_CSTACK", groups)
    assert "   3.13.5   value      3  int (4 bytes)" in text
    assert " * 3.14.10  value      4  int (4 bytes)  (value 3 -> 4)" in text


def test_committed_tables_show_the_frame_owner_move():
    """`offsets history FRAME_OWNED_BY_CSTACK` over generated/: none before 3.12, 3 up to 3.13, 4 in 3.14,
    none in 3.15 (CPython's own headers of each)."""
    if not (GENERATED / "cpython-3.14.10-debian-x86_64-linux-gnu.yaml").exists():
        missing_input("the committed tables (make tables)")
    out = subprocess.run([sys.executable, "-m", "offsets", "history", "FRAME_OWNED_BY_CSTACK"],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    release = out.stdout.split("release x86_64-linux-gnu\n", 1)[1].split("\n\n")[0]
    rows = {line.split()[0]: line for line in release.replace(" * ", "   ").splitlines()}
    assert "value      3" in rows["3.13.0"] and "value      4" in rows["3.14.10-debian"], release
    assert "(value 3 -> 4)" in rows["3.14.10-debian"] and "(appears)" in rows["3.12.1"], release
    assert rows["3.11.7"].split()[1:] == ["-"], release          # 3.12 added FRAME_OWNED_BY_CSTACK
    assert rows["3.15.2-debian"].split()[1:] == ["-", "(gone)"], release    # and 3.15 removed it


def test_builds_share_their_constants_in_the_store():
    """Two builds that differ in one value: the second adds one file node's worth, not a copy."""
    big = [k(f"NAME_{i:04d}", i, kind="macro", where="Include/pyconfig.h") for i in range(400)]
    a = table("3.13.5", *big)
    b = table("3.13.15", *[c if c.name != "NAME_0200" else replace(c, value=-1) for c in big])
    pool = compact.PoolWriter()
    root_a, _ = pool.constants([compact.constant_row(c) for c in a.constants.values()])
    size_a = sum(len(line) + 1 for line in pool.lines.values())
    root_b, _ = pool.constants([compact.constant_row(c) for c in b.constants.values()])
    added = sum(len(line) + 1 for line in pool.lines.values()) - size_a
    assert root_a != root_b and added < size_a / 5, (added, size_a)
    for t in (a, b):
        assert compact.loads(compact.dumps(t, "x")) == t
        assert table_yaml.loads(table_yaml.dumps(t)) == t


def test_report_lists_constants_coloured_by_change():
    from offsets.drift import report as R

    html = R.render([OLD, NEW], [], ["FRAME_OWNED_BY_CSTACK", "FRAME_OWNED_BY_INTERPRETER", "GONE"])
    row = html.split('<td class="name">FRAME_OWNED_BY_CSTACK</td>', 1)[1].split("</tr>", 1)[0]
    assert f'background:{R.COLOURS["same"]}" title="int, 4 bytes, enum' in row and ">3</td>" in row
    assert f'background:{R.COLOURS["changed"]}" title="int, 4 bytes, enum' in row and ">4</td>" in row
    added = html.split('<td class="name">FRAME_OWNED_BY_INTERPRETER</td>', 1)[1].split("</tr>", 1)[0]
    assert ">-</td>" in added and f'background:{R.COLOURS["added"]}' in added
    gone = html.split('<td class="name">GONE</td>', 1)[1].split("</tr>", 1)[0]
    assert ">7</td>" in gone and ">removed</td>" in gone
    with pytest.raises(KeyError, match="NOPE"):
        R.render([OLD, NEW], [], ["NOPE"])
