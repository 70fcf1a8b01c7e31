"""The drift tools read the package's compact tables where they were made from the YAML asked for.

The truth is the YAML path (table_yaml + jsonschema, what the tools read before): `history`,
`report` and `diff` print the same bytes and exit with the same status either way.
"""
from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from offsets import cli
from offsets.drift import tables as drift_tables, history

GENERATED = Path(__file__).resolve().parent.parent / "generated"
SMALL = ("cpython-3.6.15-x86_64-linux-gnu.yaml", "cpython-3.7.16-x86_64-linux-gnu.yaml",
         "cpython-3.8.18-x86_64-linux-gnu.yaml")


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tables")
    for name in SMALL:
        shutil.copy(GENERATED / name, d / name)
    return d


def run(argv) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def commands(d: Path) -> list:
    a, b = d / SMALL[0], d / SMALL[2]
    return [["history", "listiterobject.it_index", "--tables", d], ["history", "PyObject", "--tables", d],
            ["history", "PyListObject.nope", "--tables", d], ["history", "PyListObjekt", "--tables", d],
            ["report", "-s", "PyObject", "-s", "PyFrameObject", "--tables", d, "-o", "-"],
            ["report", "-s", "PyObjekt", "--tables", d, "-o", "-"],
            ["diff", a, b], ["diff", "-f", "json", a, b]]


def test_compact_and_yaml_give_the_same_answers(tables, monkeypatch):
    fast = [run(c) for c in commands(tables)]
    monkeypatch.setattr(drift_tables, "_compact", lambda yml: None)
    history._load.cache_clear()
    slow = [run(c) for c in commands(tables)]
    for c, (rc, out, err), (rc_yaml, out_yaml, err_yaml) in zip(commands(tables), fast, slow):
        assert (rc, out) == (rc_yaml, out_yaml), c
        assert err_yaml.endswith(err), c       # the YAML path may announce itself first
    assert fast[0][0] == 0 and "3.8.18" in fast[0][1] and fast[2][0] == 2 and "did you mean PyListObject" in fast[3][2]


def test_no_yaml_is_parsed_where_compact_data_was_made_from_it(tables, monkeypatch):
    def refuse(path):
        raise AssertionError(f"parsed YAML {path}")

    monkeypatch.setattr(history, "load_table", refuse)
    assert [run(c)[0] for c in commands(tables)] == [0, 0, 2, 2, 0, 2, 1, 1]


def test_a_changed_yaml_is_read_as_yaml(tables, tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    for name in SMALL:
        shutil.copy(tables / name, d / name)
    path = d / SMALL[0]
    path.write_text(path.read_text().replace("size: 16\n", "size: 16 \n", 1))   # same table, other bytes
    assert drift_tables._compact(path) is None and drift_tables._compact(d / SMALL[1]) is not None
