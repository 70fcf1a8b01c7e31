"""The build-id's shipped table read in C for a first lookup (`_lookup_table.h`: build_id_entries,
open_table, struct_row), against compact_read.py, which reads the same files in Python: the same
entries for every build-id of the build-id file and for none, the same row for every struct of
every shipped table, and, for each kind of damage, a decline (None or ValueError) where compact_read
refuses, after which the runtime refuses as the whole way does. And a first lookup that takes it
imports neither compact_read.py nor tables.py."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import missing_input
from offsets import _lookup as lookup
from offsets.layout import compact, compact_read

ROOT = Path(__file__).resolve().parent.parent
COMPACT = ROOT / "offsets" / "data" / "compact"
BUILD_IDS = COMPACT / compact_read.BUILD_ID_FILE


def test_its_constants_are_compact_reads():
    got = lookup._table_constants()
    assert got == {k: getattr(compact_read, k) for k in got}, got


def build_ids() -> list:
    return [line.split(b" ", 1)[0].decode() for line in BUILD_IDS.read_bytes().split(b"\n")[1:] if line]


def same_entries(path: Path, build_id: str):
    """C's entries of `build_id` in the build-id file `path`, which must be compact_read's."""
    got = lookup.build_id_entries(str(path), build_id)
    assert got == compact_read.build_id_entries(str(path), build_id), (path, build_id)
    return got


def test_every_build_id_leads_to_compact_reads_entries_and_no_other():
    ids = build_ids()
    assert len(ids) > 20
    for b in ids:
        assert same_entries(BUILD_IDS, b)[0], b
    for b in ("ab" * 20, "", "0", ids[0][:-1], ids[-1] + "0", "zz", "é", "a b"):
        assert same_entries(BUILD_IDS, b)[0] == [], b


def test_the_bisection_finds_what_compact_reads_finds_among_long_and_short_lines(tmp_path):
    """A file of lines shorter and longer than a probe (compact_read.sorted_line's), as
    test_first_lookup's bisection test writes it."""
    def entry(i: int, ids: list) -> dict:
        return {"name": f"t{i:03d}" + "x" * (3 * compact_read.PROBE_BYTES if i % 7 == 3 else i), "file": f"t{i}.jsonl",
                "head_sha256": "0" * 64, "version": "3.11.7", "hexversion": 0x30B07F0, "config": {},
                "triple": "x86_64-linux-gnu", "pointer_size": 8, "vendor": None, "build_ids": ids}

    ids = [f"{n * 7919 % 65536:04x}" + "ab" * (n % 3) for n in range(1, 160)]
    path = tmp_path / "build_ids.txt"
    path.write_text(compact.build_id_text([entry(i, ids[i::40]) for i in range(40)], {"a": ["b"]}, "f" * 64))
    for b in ids + ["0000", "00", "ffffffff", ids[0] + "0", ids[5][:-1]]:
        same_entries(path, b)


@pytest.mark.parametrize("damage", ["a byte of a line", "a line dropped", "truncated", "missing", "an alias",
                                    "the header's length", "another format", "an entry's file a path",
                                    "too long"])
def test_a_damaged_build_id_file_is_read_as_compact_read_reads_it(tmp_path, damage):
    text = BUILD_IDS.read_bytes()
    head, body = text.split(b"\n", 1)
    b = build_ids()[0]
    doc = json.loads(head)
    changed = {"a byte of a line": head + b"\n" + body.replace(b'"version":"3', b'"version":"4', 1),
               "a line dropped": head + b"\n" + body.split(b"\n", 1)[1],
               "truncated": text[:len(text) // 2], "missing": None,
               "an alias": head.replace(b'"listiterobject"', b'"listiterobjekt"', 1) + b"\n" + body,
               "the header's length": json.dumps(dict(doc, bytes=doc["bytes"] + 1)).encode() + b"\n" + body,
               "another format": json.dumps(dict(doc, format=7)).encode() + b"\n" + body,
               "an entry's file a path": None, "too long": text + b"\n" * (compact_read.MAX_BUILD_ID_BYTES + 1)}[damage]
    path = tmp_path / "build_ids.txt"
    if damage == "an entry's file a path":       # re-signed: only the entry check refuses it
        entries, aliases, pool = compact_read.build_id_entries(str(BUILD_IDS), b)
        bad = [dict(entries[0], file="../elsewhere.jsonl")] + entries[1:]
        changed = compact.build_id_text(bad, aliases, pool).encode()
    if changed is not None:
        path.write_bytes(changed)
    assert same_entries(path, b) is None, damage


def open_c(e: dict, folder: Path, pool_sha256: str) -> dict:
    return lookup.open_table(str(folder / e["file"]), e["head_sha256"], str(folder / compact_read.POOL_FILE),
                             pool_sha256)


def c_row(row) -> tuple:
    """A row as tuples (Loaded's fields are FieldRows, C's plain tuples)."""
    return (*row[:6], {p: tuple(f) for p, f in row[6].items()}, *row[7:])


def test_every_struct_of_every_shipped_table_reads_as_loaded_reads_it():
    """40,000 structs of every table the package ships (their hot and cold nodes), field by field;
    a name that is no key is None."""
    from offsets.runtime import tables

    index = tables.shipped_index()
    structs = fields = 0
    for e in index["tables"]:
        t = open_c(e, COMPACT, index["pool_sha256"])
        loaded = tables.load_compact(str(COMPACT / e["file"]), e["head_sha256"], index["pool_sha256"])
        assert t["keys"][1:-1].split(" ") == list(loaded.order), e["file"]
        for key in loaded.order:
            want = c_row(loaded.row(key))
            assert c_row(lookup.struct_row(t, key)) == want, (e["file"], key)
            structs, fields = structs + 1, fields + len(want[6])
        for name in ("NoSuchStruct", "PyListObject.ob_item", " ", "", "a b"):
            assert lookup.struct_row(t, name) is None, name
    assert structs > 10_000 and fields > 100_000


def test_a_header_longer_than_a_read_is_read_whole(tmp_path):
    """A table's header of 300 kB (a key the reader does not read added, the digest made anew):
    read in pieces of a growing buffer, to the same structs."""
    from hashlib import sha256

    index = json.loads((COMPACT / "index.json").read_text())
    e = index["tables"][0]
    head, rest = (COMPACT / e["file"]).read_bytes().split(b"\n", 1)
    padded = json.dumps(dict(json.loads(head), padding="x" * 300_000), separators=(",", ":")).encode()
    shutil.copy(COMPACT / compact_read.POOL_FILE, tmp_path / compact_read.POOL_FILE)
    (tmp_path / e["file"]).write_bytes(padded + b"\n" + rest)
    t = open_c(dict(e, head_sha256=sha256(padded).hexdigest()), tmp_path, index["pool_sha256"])
    again = open_c(e, COMPACT, index["pool_sha256"])
    assert t["keys"] == again["keys"] and lookup.struct_row(t, "PyObject") == lookup.struct_row(again, "PyObject")
    with pytest.raises(ValueError):             # the old digest no longer vouches for it
        open_c(e, tmp_path, index["pool_sha256"])


def own_table(folder: Path, change=None) -> Path:
    """The first shipped table written as an own table (its pool in its file, no digest vouching for
    it: `offsets scan --install`'s form), its header's `build` changed by `change` where given."""
    e = json.loads((COMPACT / "index.json").read_text())["tables"][0]
    head, notes, rows = compact.read_parts(COMPACT / e["file"])
    path = folder / f"cpython-{head['build']['version']}-own.jsonl"
    text = compact.text_of(head, notes, rows)
    if change is not None:
        first, rest = text.split("\n", 1)
        text = json.dumps(change(json.loads(first)), separators=(",", ":")) + "\n" + rest
    path.write_text(text)
    return path


def test_an_own_table_reads_as_loaded_reads_it(tmp_path):
    """Its pool in its own file, read only as a regular file: every struct as Loaded reads it."""
    from offsets.runtime import tables

    path = own_table(tmp_path)
    t, loaded = lookup.open_table(str(path), None, None, None), tables.load_compact(str(path))
    assert t["build"] == loaded.head["build"] and t["keys"][1:-1].split(" ") == list(loaded.order)
    for key in loaded.order:
        assert c_row(lookup.struct_row(t, key)) == c_row(loaded.row(key)), key


def test_an_own_table_that_is_no_regular_file_is_declined_at_once(tmp_path):
    """A FIFO where an own table was: declined without waiting for a writer (open_regular's rule)."""
    fifo = tmp_path / "cpython-3.11.7-own.jsonl"
    os.mkfifo(fifo)
    code = ("from offsets import _lookup\ntry:\n    _lookup.open_table(%r, None, None, None)\n"
            "except ValueError as e:\n    print(e)" % str(fifo))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.stdout.strip() == "not a regular file", done.stderr


def test_an_own_table_that_becomes_no_regular_file_after_it_is_opened_is_declined_at_once(tmp_path):
    """A FIFO put where an own table was after open_table read it: the struct's row, read from the
    same path again, is declined without waiting for a writer."""
    path = own_table(tmp_path)
    code = ("import os\nfrom offsets import _lookup\nt = _lookup.open_table(%r, None, None, None)\n"
            "os.unlink(%r)\nos.mkfifo(%r)\ntry:\n    _lookup.struct_row(t, 'PyListObject')\n"
            "except ValueError as e:\n    print(e)" % ((str(path),) * 3))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.stdout.strip() == "cannot open the file", done.stderr
    path.unlink()
    path = own_table(tmp_path)          # the same of the whole way's reading (compact_read.py)
    code = ("import os\nfrom offsets.errors import CorruptTableError\nfrom offsets.runtime import tables\n"
            "t = tables.load_compact(%r)\nos.unlink(%r)\nos.mkfifo(%r)\ntry:\n    t.row('PyListObject')\n"
            "except CorruptTableError as e:\n    print(e)" % ((str(path),) * 3))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "is no regular file (any more)" in done.stdout, done.stderr


#: A header compact_read.check_head refuses, each: its change (of an own table's, which no digest vouches for)
BAD_HEADS = {
    "another format": lambda h: dict(h, format=7),
    "a pointer size of 6": lambda h: dict(h, build=dict(h["build"], target=dict(h["build"]["target"], pointer_size=6))),
    "a binary of two strings": lambda h: dict(h, build=dict(h["build"], binaries=[["ab", "cd"]])),
    "a vendor that is a number": lambda h: dict(h, build=dict(h["build"], vendor=3)),
    "struct keys that are no id": lambda h: dict(h, struct_keys="xyz"),
    "another pool file": lambda h: dict(h, pool="other.jsonl"),
    "skipped that is no list": lambda h: dict(h, skipped="0123456789"),
    "a constant size of 3": lambda h: dict(h, constant_sizes={"i": 3}),
    "a constant type it lacks": lambda h: dict(h, constant_sizes={"q": 4}),
    "a left-out count that is a string": lambda h: dict(h, constants_left_out={"a": "1"}),
    "dependencies that are no id": lambda h: dict(h, depends=5),
}


@pytest.mark.parametrize("bad", sorted(BAD_HEADS))
def test_a_header_compact_read_refuses_is_declined(tmp_path, bad):
    from offsets.errors import CorruptTableError
    from offsets.runtime import tables

    path = own_table(tmp_path, BAD_HEADS[bad])
    with pytest.raises(CorruptTableError):
        tables.load_compact(str(path))
    with pytest.raises(ValueError):
        lookup.open_table(str(path), None, None, None)


def test_a_damaged_own_table_is_left_out_as_tables_leaves_it_out(tmp_path):
    """The runtime's own entries: read in C while it reads them all; with one it declines, read by
    tables.py, which leaves the damaged one out."""
    from offsets.runtime import core, tables

    good = own_table(tmp_path)
    entries, load = core.RUNTIME.own_entries([str(good)])
    assert [type(e["loaded"]).__name__ for e in entries] == ["FirstTable"] and load(entries[0]) is entries[0]["loaded"]
    bad = tmp_path / "cpython-3.11.7-damaged.jsonl"
    bad.write_text("{not json\n")
    entries, load = core.RUNTIME.own_entries([str(bad), str(good)])
    assert [e["file"] for e in entries] == [e["file"] for e in tables.own_entries([str(bad), str(good)])] == [str(good)]
    assert [type(e["loaded"]).__name__ for e in entries] == ["Loaded"]


@pytest.fixture
def copy_of_this_table(tmp_path):
    """The running interpreter's shipped table with the index, build-id file and pools, copied."""
    from offsets.runtime import binary

    index = json.loads((COMPACT / "index.json").read_text())
    build_id = binary.interpreter()[1]
    e = next((e for e in index["tables"] if build_id and build_id in (e.get("build_ids") or ())), None)
    if e is None:
        missing_input(f"{sys.executable}'s build-id is in no shipped table")
    d = tmp_path / "compact"
    d.mkdir()
    for name in ("index.json", e["file"], compact_read.POOL_FILE, compact_read.COLD_FILE, compact_read.BUILD_ID_FILE):
        shutil.copy(COMPACT / name, d / name)
    return d, e, index["pool_sha256"]


def members_line(pool: Path, e: dict, folder: Path, struct: str) -> int:
    """The pool line of `struct`'s members node."""
    from offsets.tools import store_cost

    head, _ = compact_read.open_table(str(folder / e["file"]))
    ref = head["structs"][struct]
    lines = pool.read_bytes().split(b"\n")
    numbers = store_cost.pool_lines(lines)
    return numbers[json.loads(lines[numbers[ref if isinstance(ref, str) else ref[0]]])[5]]


def moved_field(pool: Path, i: int) -> None:
    """The first field of members line `i` two bytes further on, its line as long (valid JSON: only
    the line's checksum tells)."""
    lines = pool.read_bytes().split(b"\n")
    at = lines[i].index(b'",') + 2
    digit = lines[i][at:at + 1]
    lines[i] = lines[i][:at] + (b"2" if digit != b"2" else b"4") + lines[i][at + 1:]
    pool.write_bytes(b"\n".join(lines))


def flip_line(path: Path, i: int) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[i] = lines[i].replace(b"1", b"2", 1) if b"1" in lines[i] else lines[i] + b" "
    path.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("damage", ["its members node", "its shard", "its group line", "the pool's header",
                                    "the table's header", "the pool missing"])
def test_damage_is_declined_where_compact_read_refuses(copy_of_this_table, damage):
    from offsets.errors import CorruptTableError
    from offsets.runtime import tables

    d, e, pool_sha256 = copy_of_this_table
    pool = d / compact_read.POOL_FILE
    struct = "listiterobject"
    if damage == "its members node":
        moved_field(pool, members_line(pool, e, d, struct))
    elif damage == "its shard":
        head, _ = compact_read.open_table(str(d / e["file"]))
        ref = head["structs"][struct]
        flip_line(pool, 1 + int((ref if isinstance(ref, str) else ref[0])[:compact_read.SHARD_CHARS], 16))
    elif damage == "its group line":
        head, _ = compact_read.open_table(str(d / e["file"]))
        ref = head["structs"][struct]
        k = int((ref if isinstance(ref, str) else ref[0])[:compact_read.SHARD_CHARS], 16)
        i = 1 + compact_read.SHARDS + k // compact_read.GROUP_SHARDS
        lines = pool.read_bytes().split(b"\n")
        other = (k % compact_read.GROUP_SHARDS + 1) % compact_read.GROUP_SHARDS * compact_read.DIGEST_CHARS
        lines[i] = lines[i][:other] + (b"0" if lines[i][other:other + 1] != b"0" else b"1") + lines[i][other + 1:]
        pool.write_bytes(b"\n".join(lines))       # another shard's digest: only the group line's checksum tells
    elif damage == "the pool's header":
        flip_line(pool, 0)
    elif damage == "the table's header":
        flip_line(d / e["file"], 0)
    elif damage == "the pool missing":
        pool.unlink()
    compact_read._shared.pop(str(pool), None)
    with pytest.raises(CorruptTableError):
        loaded = tables.load_compact(str(d / e["file"]), e["head_sha256"], pool_sha256)
        loaded.row(struct)
    compact_read._shared.pop(str(pool), None)
    with pytest.raises(ValueError):
        lookup.struct_row(open_c(e, d, pool_sha256), struct)


def unfinished(line: bytes) -> bytes:
    """A cold shard's line whose zlib stream holds the same text but does not end (flushed, not
    finished), as long as before (base64 reading skips the `!` it is padded with)."""
    import base64
    import zlib

    text = zlib.decompress(base64.b64decode(line))
    squeeze = zlib.compressobj(9)
    out = base64.b64encode(squeeze.compress(text) + squeeze.flush(zlib.Z_SYNC_FLUSH))
    return out + b"!" * (len(line) - len(out)) if len(out) <= len(line) else line


@pytest.mark.parametrize("damage", ["a cold shard", "a cold shard's stream unfinished", "the cold pool's header",
                                    "the cold pool missing"])
def test_a_struct_of_a_damaged_cold_pool_is_declined_and_the_hot_ones_read(copy_of_this_table, damage):
    """A struct of a `.c` file whose nodes are in the cold pool (compact_read.ColdPool): damage
    there declines it, and a struct of the hot pool still reads."""
    d, e, pool_sha256 = copy_of_this_table
    keys = open_c(e, d, pool_sha256)["keys"][1:-1].split(" ")
    cold_lines = (d / compact_read.COLD_FILE).read_bytes().split(b"\n")
    # the cold structs: those whose row reads only while cold.jsonl is there
    (d / compact_read.COLD_FILE).rename(d / "away")
    in_cold = []
    for k in keys:
        try:
            lookup.struct_row(open_c(e, d, pool_sha256), k)
        except ValueError:
            in_cold.append(k)
    (d / "away").rename(d / compact_read.COLD_FILE)
    assert in_cold and len(in_cold) < len(keys), e["file"]
    if damage.startswith("a cold shard"):
        for i in range(1, 1 + compact_read.SHARDS):
            cold_lines[i] = b"!" + cold_lines[i][1:] if damage == "a cold shard" else unfinished(cold_lines[i])
        (d / compact_read.COLD_FILE).write_bytes(b"\n".join(cold_lines))
    elif damage == "the cold pool's header":
        flip_line(d / compact_read.COLD_FILE, 0)
    else:
        (d / compact_read.COLD_FILE).unlink()
    t = open_c(e, d, pool_sha256)
    with pytest.raises(ValueError):
        lookup.struct_row(t, in_cold[0])
    assert lookup.struct_row(t, "PyListObject")[2] > 0
    from offsets.errors import CorruptTableError
    from offsets.runtime import tables

    compact_read._shared.pop(str(d / compact_read.POOL_FILE), None)
    with pytest.raises(CorruptTableError):      # as compact_read refuses it
        tables.load_compact(str(d / e["file"]), e["head_sha256"], pool_sha256).row(in_cold[0])
    compact_read._shared.pop(str(d / compact_read.POOL_FILE), None)


def test_a_damaged_table_is_refused_by_a_first_lookup_as_by_the_whole_way(copy_of_this_table, monkeypatch):
    """The C reading declines the damaged struct; the first lookup then takes the whole way, which
    refuses it in one line (the same line as without the C reading), and a sound struct of the
    same table is answered by the C reading."""
    from offsets import runtime
    from offsets.errors import CorruptTableError
    from offsets.runtime import core, tables

    d, e, pool_sha256 = copy_of_this_table
    pool = d / compact_read.POOL_FILE
    moved_field(pool, members_line(pool, e, d, "listiterobject"))
    monkeypatch.setattr(tables, "COMPACT_DIR", str(d))
    monkeypatch.setattr(tables, "_index_doc", None)
    monkeypatch.setattr(compact_read, "_shared", {})
    monkeypatch.setenv("OFFSETS_TABLES", str(d.parent / "none"))
    runtime.reset()
    try:
        first = runtime.RUNTIME.by_build_id()
        assert isinstance(first, core.FirstTable) and first.source == str(d / e["file"])
        assert first.resolve_struct("listiterobject") is None and first.resolve_struct("PyListObject")
        answer = runtime.get("PyListObject.ob_item")
        assert runtime.RUNTIME.state[1] is None, "answered by the C reading"
        with pytest.raises(CorruptTableError, match="fails its checksum") as c_way:
            runtime.get("listiterobject.it_index")
        runtime.reset()
        monkeypatch.setattr(runtime.RUNTIME, "by_build_id", lambda: None)
        monkeypatch.setattr(compact_read, "_shared", {})
        with pytest.raises(CorruptTableError) as whole_way:
            runtime.get("listiterobject.it_index")
        assert str(c_way.value) == str(whole_way.value)
        assert runtime.get("PyListObject.ob_item") == answer
    finally:
        runtime.reset()


def test_a_first_lookup_by_build_id_imports_neither_compact_read_nor_tables(tmp_path):
    """What the C reading is for: the modules a first lookup imports (each costs every process
    that loads a JIT), and the same answers once the whole way has been taken."""
    from test_first_lookup import short_way_env

    code = """import sys, offsets
from offsets.runtime import RUNTIME
a = [offsets.get('PyListObject.ob_item'), offsets.sizeof('PyTupleObject'), offsets.get('PyObject.ob_type')]
print(sorted(m for m in sys.modules if m.startswith('offsets')))
print(type(RUNTIME.state[0]).__name__, RUNTIME.state[1] is None)
t = RUNTIME.current()
print(a == [t.fields('PyListObject')['ob_item'].offset, t.size('PyTupleObject'), t.fields('PyObject')['ob_type'][0]])"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=short_way_env(tmp_path))
    assert done.returncode == 0, done.stderr
    modules, first, same = done.stdout.splitlines()
    assert "offsets.layout.compact_read" not in modules and "offsets.runtime.tables" not in modules, modules
    assert first == "FirstTable True" and same == "True"


def test_a_call_keeps_no_file_open_once_it_returns(copy_of_this_table):
    """open_table and struct_row open the pool once a call (the files held while it runs), and
    close them when it returns, declined or not: no descriptor is left, and a pool replaced after a
    call is the one the next call reads."""
    d, e, pool_sha256 = copy_of_this_table
    fds = set(os.listdir("/proc/self/fd"))
    t = open_c(e, d, pool_sha256)
    keys = t["keys"][1:-1].split(" ")
    for k in keys:
        assert lookup.struct_row(t, k)[0] == k
    assert set(os.listdir("/proc/self/fd")) == fds
    pool = d / compact_read.POOL_FILE
    again = open_c(e, d, pool_sha256)
    size = pool.stat().st_size
    (d / "other").write_bytes(b"x" * size)
    (d / "other").replace(pool)           # a new file at the pool's path: only a call that opens it anew reads it
    with pytest.raises(ValueError):
        lookup.struct_row(again, "PyListObject")
    with pytest.raises(ValueError):
        open_c(e, d, pool_sha256)
    assert set(os.listdir("/proc/self/fd")) == fds
