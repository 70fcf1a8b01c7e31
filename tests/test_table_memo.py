"""The tests' memo of the YAML reader (tests/table_memo.py) gives what the reader gives."""
from __future__ import annotations

import pickle

import pytest

import table_memo
from offsets.errors import TableError
from offsets.layout import table_yaml

from conftest import REPO

TABLE = REPO / "generated" / "cpython-3.6.15-x86_64-linux-gnu.yaml"     # the smallest committed table


def test_a_remembered_table_is_the_table_the_reader_builds(tmp_path, monkeypatch):
    monkeypatch.setattr(table_memo, "_folder", lambda: tmp_path)
    table_memo._recalled.cache_clear()
    text = TABLE.read_text()
    first = table_memo.loads(text)                  # a miss: the reader runs and the table is kept
    assert [p.suffix for p in tmp_path.iterdir()] == [".pickle"]
    second = table_memo.loads(text)                 # a hit
    assert first == second == table_memo.real_loads(text) and second is not first
    assert table_yaml.loads is table_memo.loads     # what every other test reads through


def test_a_planted_or_damaged_entry_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setattr(table_memo, "_folder", lambda: tmp_path)
    table_memo._recalled.cache_clear()
    text = TABLE.read_text()
    entry, want = tmp_path / f"{table_memo._key(text)}.pickle", table_memo.real_loads(text)
    for planted in (pickle.dumps(print), pickle.dumps({"not": "a table"}), b"\x80\x05garbage"):
        entry.write_bytes(planted)
        table_memo._recalled.cache_clear()
        assert table_memo.loads(text) == want


def test_a_text_the_reader_refuses_raises_every_time_and_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(table_memo, "_folder", lambda: tmp_path)
    bad = TABLE.read_text().replace("schema: ", "schema: 9", 1)
    for _ in range(2):
        with pytest.raises(TableError):
            table_memo.loads(bad)
    assert list(tmp_path.iterdir()) == []
