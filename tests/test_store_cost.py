"""The shipped tables store each layout once: the size goals of `make bench` (tools/store_cost.py).
What one more build costs, measured by writing the store again without it, is make prove's
(tests/prove/test_store_cost_further.py), for its cost."""

import pytest

from offsets.layout import compact, compact_read
from offsets import runtime
from offsets.tools import store_cost

import result_memo

#: what the store writer's checks read besides the package: nothing else (the compact files are in it);
#: they are remembered once passed, under the package's digest (tests/result_memo.py)
SHIPPED = sorted(compact.COMPACT_DIR.iterdir())

@pytest.fixture(scope="module")
def shipped():
    """Every shipped table, loaded from its compact form, with what it was made from."""
    index = runtime.shipped_index()
    out = []
    for e in index["tables"]:
        head, _ = compact_read.open_table(str(compact.COMPACT_DIR / e["file"]))
        source = head["note"].split("generated from ", 1)[1].split(";", 1)[0]
        out.append((compact.load(compact.COMPACT_DIR / e["file"]), source, head["source_sha256"]))
    return index, out


def checked_of(index: dict) -> dict:
    """What checked each table, as index.json carries it (generated/index.yaml's records, which the
    compact files do not hold)."""
    return {e["name"]: e.get("checked", []) for e in index["tables"]}


@pytest.fixture(scope="module")
def full(shipped):
    index, made = shipped
    depends = {t.build.table_name: compact.read_parts(compact.COMPACT_DIR / f"{t.build.table_name}.jsonl")[1].get("depends")
               for t, _, _ in made}
    files = compact.store_files(made, index["aliases"], depends, checked=checked_of(index))
    # types.json is made of the YAML tables' type records, which compact tables do not hold:
    # test_regenerate's `--check --derived-only` compares it with what generated/ makes
    files[compact.TYPES_FILE] = (compact.COMPACT_DIR / compact.TYPES_FILE).read_text()
    return files


def size(files: dict) -> int:
    return sum(len(text.encode()) for text in files.values())


def test_the_store_writer_makes_the_shipped_files(request):
    if result_memo.passed_before("store-writer-makes-shipped-files", SHIPPED):
        return
    files = request.getfixturevalue("full")
    assert sorted(files) == sorted(p.name for p in compact.COMPACT_DIR.iterdir())
    assert [n for n, text in files.items() if (compact.COMPACT_DIR / n).read_text() != text] == []
    result_memo.passed("store-writer-makes-shipped-files", SHIPPED)


def test_the_package_data_meets_its_goal():
    total = sum(p.stat().st_size for p in compact.COMPACT_DIR.parent.rglob("*") if p.is_file())
    assert total <= store_cost.TOTAL_GOAL, f"package data is {total} bytes"
