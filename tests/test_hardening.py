"""Every bad input is one clear line and exit status 2, bounded in time and memory, and
nothing is overwritten that should not be.

Each test runs the real command (in process, through `offsets.cli.main`, so a traceback would fail
the test; a few through `python -m offsets`) and checks the one-line message, the exit status and
that the files around the output are as they were. The numbers in the hand-made table are not
facts about CPython: they are inputs to be refused or accepted.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import missing_input, own_cache
from offsets import atomic_write, runtime
from offsets.layout import compact, compact_read, table_yaml, yaml_strict
from offsets.scan import unit_cache, workers
from offsets.cli import main
from offsets.tools import store_cost
from offsets.errors import BuildError, OutputError, ScanError, TableError

FAKE = Path(__file__).parent / "fixtures" / "fakepy"
REPO = Path(__file__).parent.parent

TABLE = """\
schema: 1
build:
  version: "3.11.7"
  hexversion: '0x030b07f0'
  config: {Py_DEBUG: false}
  target: {triple: x86_64-linux-gnu, pointer_size: 8}
  inputs: {headers: null}
scanner: {libclang: "16.0.6", offsets: "0.1.0"}
names:
  _object: PyObject
structs:
  PyListObject:
    kind: struct
    size: 40
    align: 8
    defined_in: "Include/listobject.h:1"
    fields:
      ob_base: {offset: 0, size: 16, type: PyObject}
      ob_base.ob_refcnt: {offset: 0, size: 8, type: Py_ssize_t}
      ob_size: {offset: 16, size: 8, type: Py_ssize_t}
      ob_item: {offset: 24, size: 8, type: "PyObject **"}
      allocated: {offset: 32, size: 8, type: Py_ssize_t}
  PyObject:
    kind: struct
    size: 16
    align: 8
    defined_in: "Include/object.h:1"
    fields:
      ob_refcnt: {offset: 0, size: 8, type: Py_ssize_t}
      ob_type: {offset: 8, size: 8, type: "PyTypeObject *"}
"""

BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + "".join(f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")))


def snapshot(root: Path) -> dict:
    """Every entry under `root`: its kind and content (a link: its target)."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            out[str(p)] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            out[str(p)] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
        else:
            out[str(p)] = (stat.S_IFMT(st.st_mode), None)
    return out


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *args, match: str) -> str:
    """Run the command; it must fail with exit 2 and exactly one line matching `match`."""
    code, _, err = cli(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("offsets: error:"), err
    assert match in lines[0], lines[0]
    return lines[0]


def offsets_cmd(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "offsets", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr.strip()


@pytest.fixture
def table_file(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text(TABLE)
    return p


def test_the_base_table_is_fine(table_file, capsys):
    assert cli(capsys, "get", "PyListObject.ob_item", "-t", table_file)[:2] == (0, "24\n")


# ---------------------------------------------------------------- 1. outputs
@pytest.fixture(scope="module")
def fake_table(tmp_path_factory):
    """The fake build's table, scanned once, written to standard output with `-o -`."""
    code, out, err = offsets_cmd("scan", "--prefix", FAKE, "--target", "x86_64-linux-gnu", "-q", "-o", "-")
    assert code == 0, err
    return out


@pytest.mark.parametrize("special", ["/dev/null", "/dev/full", "fifo", "/dev/stdout"])
def test_scan_refuses_special_outputs_before_scanning(special, tmp_path, capsys):
    if special == "fifo":
        special = tmp_path / "fifo"
        os.mkfifo(special)
    before = snapshot(tmp_path)
    mode = os.stat(special).st_mode
    start = time.monotonic()
    line = refused(capsys, "scan", "--prefix", FAKE, "-o", special, match="refusing to write")
    assert "not a regular file" in line and "'-' for standard output" in line
    assert time.monotonic() - start < 5                 # refused before scanning, no hang on the FIFO
    assert os.stat(special).st_mode == mode and snapshot(tmp_path) == before


def test_scan_to_unwritable_places_is_one_line(tmp_path, capsys):
    for where in ("/proc/x.yaml", "/proc/self/nope/x.yaml", "/sys/x.yaml"):
        refused(capsys, "scan", "--prefix", FAKE, "-o", where, match=f"refusing to write {where}: it is a stream or a kernel file")
    (tmp_path / "file").write_text("")
    before = snapshot(tmp_path)
    refused(capsys, "scan", "--prefix", FAKE, "-o", tmp_path / "file" / "x.yaml", match="x.yaml: Not a directory")
    assert snapshot(tmp_path) == before
    # an -o in a folder that does not exist is refused, and nothing is made
    refused(capsys, "scan", "--prefix", tmp_path / "nowhere", "-o", tmp_path / "new" / "t.yaml", match="does not exist")
    assert snapshot(tmp_path) == before
    # a scan that fails leaves no file behind that -o named
    refused(capsys, "scan", "--prefix", tmp_path / "nowhere", "-o", tmp_path / "t.yaml", match="nowhere")
    assert snapshot(tmp_path) == before


def test_scan_output_replaces_a_non_utf8_file_and_leaves_the_rest(fake_table, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "t.yaml").write_bytes(b"\xff\xfe not a table")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(victim, out / "t.yaml.tmp")             # the old fixed temporary name, planted
    before = {k: v for k, v in snapshot(tmp_path).items() if not k.endswith("/out/t.yaml")}
    code, _, err = offsets_cmd("scan", "--prefix", FAKE, "--target", "x86_64-linux-gnu", "-q", "-o", out / "t.yaml")
    assert code == 0, err
    assert (out / "t.yaml").read_text() == fake_table and victim.read_text() == "precious"
    after = {k: v for k, v in snapshot(tmp_path).items() if not k.endswith("/out/t.yaml")}
    assert after == before                              # no temporary file left, the link untouched


def test_two_writers_to_one_path_both_succeed(tmp_path):
    path = tmp_path / "x.yaml"
    errors = []

    def writer(text):
        try:
            for _ in range(50):
                atomic_write.write(path, text)
        except Exception as e:          # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(c * 10000,)) for c in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and path.read_text() in ("a" * 10000, "b" * 10000)
    assert [p.name for p in tmp_path.iterdir()] == ["x.yaml"]


def test_a_full_disk_is_one_line_and_leaves_no_temporary(tmp_path, monkeypatch):
    real = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

        def write(self, data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_write.os, "fdopen", lambda fd, mode: Full(real(fd, mode)))
    with pytest.raises(OutputError, match="cannot write .*No space left on device"):
        atomic_write.write(tmp_path / "x", "text")
    assert list(tmp_path.iterdir()) == []


def test_a_cache_folder_is_made_whole_or_not_at_all(tmp_path):
    """`write_folder`: a fill that fails leaves nothing; one that ends after another process made the
    folder keeps theirs, and no temporary folder is left either way."""
    out = tmp_path / "made" / "abc"

    def broken(tmp):
        (tmp / "half").write_text("")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        atomic_write.write_folder(out, broken)
    assert list((tmp_path / "made").iterdir()) == []

    def racing(tmp):
        (tmp / "mine").write_text("")
        out.mkdir()
        (out / "theirs").write_text("")       # another process finished first

    assert atomic_write.write_folder(out, racing) == out
    assert sorted(p.name for p in (tmp_path / "made").iterdir()) == ["abc"]
    assert sorted(p.name for p in out.iterdir()) == ["theirs"]
    atomic_write.write_folder(tmp_path / "new", lambda tmp: (tmp / "f").write_text("x"))
    assert (tmp_path / "new" / "f").read_text() == "x"


def test_scan_to_stdout_is_explicit(fake_table):
    assert fake_table.startswith("# Layout table for CPython 3.99")


@pytest.mark.parametrize("where", ["/dev/full", "/proc/x.html", "/dev/null"])
def test_report_output_errors_are_one_line(where, table_file, capsys):
    line = refused(capsys, "report", table_file, "-s", "PyObject", "-o", where, match=where.rsplit("/", 1)[0])
    assert "refusing to write" in line or "cannot write" in line


# ---------------------------------------------------------------- 2. alias bombs
#: scalars of every kind PyYAML's resolver tells apart, the decimal ints the strict parser reads itself
#: among them, and their look-alikes it must leave to PyYAML (octal, hex, sexagesimal, signs, _)
SCALARS = ["0", "7", "-12", "1234567890123456789012", "010", "0x1f", "0b101", "+5", "1_000", "1:30", "-0",
           "00", "08", "1.5", "1e3", ".inf", "-.nan", "true", "no", "on", "~", "null", "", "'7'", '"12"',
           "text", "PyObject *", "0.0", "1-2", "12abc", "2001-12-14"]


def test_the_strict_parser_reads_every_scalar_as_pyyaml_does():
    import yaml

    text = "".join(f"k{i}: {v}\n" for i, v in enumerate(SCALARS)) + "l: [" + ", ".join(v for v in SCALARS if v) + "]\n"
    assert yaml_strict.parse(text) == yaml.safe_load(text)
    assert [type(v) for v in yaml_strict.parse(text).values()] == [type(v) for v in yaml.safe_load(text).values()]


def test_an_alias_bomb_is_refused_at_once(tmp_path, capsys):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    assert len(BOMB) < 400
    start = time.monotonic()
    refused(capsys, "get", "PyObject.ob_type", "-t", bomb, match="a YAML alias (tables may not use anchors")
    assert time.monotonic() - start < 1


def test_an_unsupported_schema_is_not_repr_d(tmp_path, capsys):
    p = tmp_path / "t.yaml"
    p.write_text("schema: [" + ", ".join(["1"] * 100000) + "]\n")
    line = refused(capsys, "get", "PyObject", "-t", p, match="schema list is not supported")
    assert len(line) < 300


# ---------------------------------------------------------------- 3. one line, exit 2
def test_non_utf8_tables_and_watch_files(table_file, tmp_path, capsys, monkeypatch):
    bad = tmp_path / "tables" / "cpython-3.11.7-x86_64-linux-gnu.yaml"
    bad.parent.mkdir()
    bad.write_bytes(TABLE.encode().replace(b"Include/object.h", b"Include/\xffbject.h"))
    refused(capsys, "get", "PyObject", "-t", bad, match="not UTF-8 (byte 0xff at line 27)")
    refused(capsys, "history", "PyObject", "--tables", bad.parent, match="not UTF-8")
    watch = tmp_path / "watch.txt"
    watch.write_bytes(b"PyObject.ob_type\n\xc3(\n")
    refused(capsys, "diff", table_file, table_file, "--watch", watch, match="watch file")
    with pytest.raises(TableError, match="not UTF-8"):
        runtime.use_table(bad)


@pytest.mark.parametrize("old,new,match", [
    ("ob_item: {offset: 24,", "ob_item: {offset: 24.0,", "24.0 is not of type 'integer'"),
    ("ob_item: {offset: 24,", "ob_item: {offset: true,", "True is not of type 'integer'"),
    ("ob_item: {offset: 24,", "ob_item: {offset: 99999999999999999999999999,", "is outside 0..2147483647"),
    ("    size: 40\n", "    size: 100000000000000000000000000000\n", "is outside 0..2147483647"),
])
def test_numbers_are_integers_in_range(old, new, match, tmp_path, capsys):
    p = tmp_path / "t.yaml"
    p.write_text(TABLE.replace(old, new, 1))
    for command in (["get", "PyListObject.ob_item", "-t", p], ["report", p, "-s", "PyListObject", "-o", tmp_path / "r.html"],
                    ["verify", p, "--skip", "gcc", "--skip", "dwarf", "--skip", "live"]):
        refused(capsys, *command, match=match)
    assert not (tmp_path / "r.html").exists()


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    """The running interpreter's shipped compact table and the index, as `python -m offsets.tools.regenerate`
    makes them (with their checksums), used by the runtime instead of the real ones."""
    d = tmp_path / "compact"
    d.mkdir()
    index = json.loads((compact.COMPACT_DIR / "index.json").read_text())
    e = next(e for e in index["tables"] if e["hexversion"] == sys.hexversion and e["triple"] == _running_triple())
    for name in (e["file"], compact_read.POOL_FILE, compact_read.COLD_FILE):
        (d / name).write_bytes((compact.COMPACT_DIR / name).read_bytes())
    (d / "index.json").write_text(compact.index_text([e], index["aliases"], index["pool_sha256"]))
    monkeypatch.setattr(runtime.tables, "COMPACT_DIR", str(d))
    monkeypatch.setattr(runtime.tables, "_index_doc", None)
    runtime.reset()
    yield d
    runtime.reset()


def _running_triple() -> str:
    """This interpreter's triple: another target's table of the same version (macOS's) may come first."""
    from offsets.layout import identity

    return identity.running_target()["triple"]


def running_file(d: Path) -> Path:
    e = next(e for e in json.loads((d / "index.json").read_text())["tables"]
             if e["hexversion"] == sys.hexversion and e["triple"] == _running_triple())
    return d / e["file"]


def flip(path: Path, old: bytes, new: bytes, line: int = None) -> None:
    lines = path.read_bytes().split(b"\n")
    i = line if line is not None else next(i for i, ln in enumerate(lines) if old in ln)
    lines[i] = lines[i].replace(old, new, 1)
    path.write_bytes(b"\n".join(lines))


def listiter_line(pool: Path) -> int:
    """The line of the shared pool that holds listiterobject's members (for the running build)."""
    head, _ = compact_read.open_table(str(running_file(pool.parent)))
    ref = head["structs"]["listiterobject"]
    lines = pool.read_bytes().split(b"\n")
    numbers = store_cost.pool_lines(lines)
    struct = json.loads(lines[numbers[ref if isinstance(ref, str) else ref[0]]])
    return numbers[struct[5]]


@pytest.mark.parametrize("damage,match", [
    ("flip-field", "fails its checksum"),
    ("flip-head", "its header fails the checksum of index.json"),
    ("flip-pool-head", "its header fails the checksum of index.json"),
    ("flip-shard", "fails its checksum"),
    ("index-not-json", "index.json is corrupt: not JSON"),
    ("index-flip", "index.json is corrupt: it fails its own checksum"),
    ("index-no-key", "index.json is corrupt: it fails its own checksum"),
    ("truncated", "fails its checksum"),
])
def test_corrupted_shipped_tables_are_refused(damage, match, shipped_copy, capsys):
    f = running_file(shipped_copy)
    pool = shipped_copy / compact_read.POOL_FILE
    index = shipped_copy / "index.json"
    if damage == "flip-field":      # listiterobject.it_index: 16 becomes 18, say
        flip(pool, b'["it_index",16', b'["it_index",18', line=listiter_line(pool))
    elif damage == "flip-head":
        flip(f, b'"Py_DEBUG":false', b'"Py_DEBUG":true ', line=0)
    elif damage == "flip-pool-head":
        flip(pool, b'"ends":"', b'"ends": "', line=0)
    elif damage == "flip-shard":    # another node's id in the shard of the struct asked for, of one length
        ref = compact_read.open_table(str(f))[0]["structs"]["listiterobject"]
        ref = ref if isinstance(ref, str) else ref[0]
        k = int(ref[:compact_read.SHARD_CHARS], 16)
        ids = json.loads(pool.read_bytes().split(b"\n")[1 + k])["ids"]
        other, new = (ids[-10:], ref[:2] + "f" * 8) if ids[-10:] != ref else (ids[:10], ref[:2] + "0" * 8)
        flip(pool, other.encode(), new.encode(), line=1 + k)
        match = f"shard {k:02x} fails its checksum"
    elif damage == "index-not-json":
        index.write_text(index.read_text()[:-40])
    elif damage == "index-flip":
        index.write_text(index.read_text().replace('"pointer_size": 8', '"pointer_size": 4', 1))
    elif damage == "index-no-key":
        doc = json.loads(index.read_text())
        del doc["tables"][0]["file"]
        index.write_text(json.dumps(doc))
    elif damage == "truncated":     # cut in the middle of the line of the struct asked for
        lines = pool.read_bytes().split(b"\n")
        i = listiter_line(pool)
        pool.write_bytes(b"\n".join(lines[:i]) + b"\n" + lines[i][:40])
    line = refused(capsys, "get", "listiterobject.it_index", match=match)
    assert "reinstall cpython-offsets" in line


@pytest.mark.parametrize("damage,match", [
    ("cold-head", "cold.jsonl: its header fails the checksum of layouts.jsonl"),
    ("cold-shard-bytes", "is not base64 of a zlib stream"),
    ("cold-shard-other", "cold.jsonl: shard "),      # its range now cuts another's text, or it fails its checksum
    ("cold-missing", "cannot read"),
])
def test_a_damaged_cold_pool_is_refused_and_leaves_fields_answered(damage, match, shipped_copy, capsys):
    """The cold pool (constants, dependency data: compact_read.COLD_FILE) is vouched for by the
    shared pool's first line, and each of its shards by its digest once decompressed: damage to it
    refuses what it holds, in one line, and no field read from the hot pool changes."""
    cold = shipped_copy / compact_read.COLD_FILE
    lines = cold.read_bytes().split(b"\n")
    head, _ = compact_read.open_table(str(running_file(shipped_copy)))
    k = int(head["constants"][:compact_read.SHARD_CHARS], 16)       # the shard of the constants' root
    if damage == "cold-head":
        flip(cold, b'"ends":"', b'"ends": "', line=0)
    elif damage == "cold-shard-bytes":
        lines[1 + k] = b"!" + lines[1 + k][1:]
        cold.write_bytes(b"\n".join(lines))
    elif damage == "cold-shard-other":       # another shard's (valid) stream in its place
        lines[1 + k] = lines[1 + (k + 1) % compact_read.SHARDS]
        cold.write_bytes(b"\n".join(lines))
    elif damage == "cold-missing":
        cold.unlink()
    line = refused(capsys, "constant", "Py_TPFLAGS_HEAPTYPE", match=match)
    assert "reinstall cpython-offsets" in line
    assert main(["get", "listiterobject.it_index"]) == 0
    assert capsys.readouterr().out.strip() == str(runtime.get("listiterobject.it_index"))


@pytest.mark.parametrize("value,match", [(24.0, "is malformed"), (2 ** 63, "is malformed"), ("24", "is malformed"),
                                         (28, "field 'allocated' (28..36) overlaps 'ob_item' (24..32)")])
def test_a_compact_table_of_ones_own_with_bad_numbers_is_refused(value, match, tmp_path, monkeypatch):
    """`use_table('t.jsonl')`: what the C API would read is checked first (its checksums are right)."""
    monkeypatch.setattr(runtime.RUNTIME, "index", lambda: {"tables": [], "aliases": {}})
    head, notes, rows = compact.unpack(table_yaml.loads(TABLE), "t.yaml")
    next(f for f in rows["PyListObject"][6] if f[0] == "allocated")[1] = value
    path = tmp_path / "t.jsonl"
    path.write_text(compact.text_of(head, notes, rows))
    with pytest.raises(TableError, match=re.escape(match)):
        runtime.use_table(path, verify=False)


@pytest.mark.parametrize("damage,match", [("ends-one-digit-more", "its node list is malformed"),
                                          ("ends-not-hex", "its node list is malformed"),
                                          ("ids-cut", "its node list is malformed"),
                                          ("ends-zero", "its line's range is malformed")])
def test_a_compact_table_of_ones_own_with_a_damaged_node_list_is_refused(damage, match, tmp_path, monkeypatch):
    """An own table has no index.json to vouch for its header: the pool's two strings are checked
    whole (their digits and lengths), and each line's range as it is read."""
    monkeypatch.setattr(runtime.RUNTIME, "index", lambda: {"tables": [], "aliases": {}})
    text = compact.text_of(*compact.unpack(table_yaml.loads(TABLE), "t.yaml"))
    head_line, rest = text.split("\n", 1)
    head = json.loads(head_line)
    pool = head["pool"]
    if damage == "ends-one-digit-more":
        pool["ends"] += "0"
    elif damage == "ends-not-hex":
        pool["ends"] = pool["ends"][:-1] + "g"
    elif damage == "ids-cut":
        pool["ids"] = pool["ids"][:-1]
    else:       # every line 0 bytes long: refused before a read, where a read of 0 bytes would fail its checksum
        pool["ends"] = "0" * len(pool["ends"])
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(head, separators=(",", ":")) + "\n" + rest)
    with pytest.raises(TableError, match=re.escape(match)):
        runtime.use_table(path, verify=False)
        runtime.get("PyListObject.ob_item")


def test_a_huge_include_is_one_line(tmp_path):
    from offsets.scan import source_reads

    big = tmp_path / "big.h"
    with open(big, "wb") as f:
        f.truncate(2 * 1024 ** 3)                       # sparse: 2 GB that take no disk
    with pytest.raises(BuildError, match="not a regular file of at most 64 MB"):
        source_reads.Reads().text(big)
    src = tmp_path / "a.c"
    src.write_text('#include "big.h"\n')
    reads = source_reads.Reads()
    assert reads.includes(big) == () and reads.includes(src)[0][1] == "big.h"


# ---------------------------------------------------------------- 4. nonsense tables
@pytest.mark.parametrize("old,new,match", [
    ("      allocated: {offset: 32", "      ob_item: {offset: 32", "duplicate key (each key may appear once) at structs/PyListObject/fields/ob_item"),
    ("  PyObject:\n", "  PyListObject:\n", "duplicate key (each key may appear once) at structs/PyListObject (line 23)"),
    ("ob_item: {offset: 24,", "ob_item: {offset: 20,", "field 'ob_item' (20..28) overlaps 'ob_size' (16..24)"),
    ("allocated: {offset: 32,", "allocated: {offset: 36,", "field 'allocated' ends at 44, past the size 40"),
    ("ob_base.ob_refcnt: {offset: 0, size: 8", "ob_base.ob_refcnt: {offset: 12, size: 8",
     "field 'ob_base.ob_refcnt' (12..20) lies outside 'ob_base' (0..16)"),
    ("ob_type: {offset: 8, size: 8", "ob_type: {offset: 12, size: 4", "field 'ob_type' at offset 12 is not a multiple of its alignment 8"),
    ("    align: 8\n    defined_in: \"Include/object.h", "    align: 1048576\n    defined_in: \"Include/object.h",
     "struct 'PyObject': align: 1048576 is outside 1..4096"),
    ("ob_item: {offset: 24,", "ob_item: {offset: 23,", "field 'ob_item' (23..31) overlaps 'ob_size' (16..24)"),
    ("version: \"3.11.7\"", "version: \"3.11.8\"", "version 3.11.8 does not match hexversion 0x030b07f0"),
    ("version: \"3.11.7\"\n  hexversion: '0x030b07f0'", "version: \"3.11.0b1\"\n  hexversion: '0x030b00a1'",
     "version 3.11.0b1 does not match hexversion 0x030b00a1 (that version is 0x030b00b1)"),
    ("pointer_size: 8", "pointer_size: 4", "pointer size 4 contradicts the triple (x86_64 has 8-byte pointers)"),
])
def test_nonsense_tables_are_refused_with_the_entry(old, new, match, tmp_path, capsys):
    p = tmp_path / "t.yaml"
    assert old in TABLE
    p.write_text(TABLE.replace(old, new, 1))
    before = snapshot(tmp_path)
    refused(capsys, "verify", p, "--skip", "gcc", "--skip", "dwarf", match=match)
    refused(capsys, "get", "PyObject", "-t", p, match=match)
    assert snapshot(tmp_path) == before


def test_pre_release_versions_carry_cpythons_release_level_codes():
    """Truth: PY_RELEASE_LEVEL_ALPHA/BETA/GAMMA/FINAL of a real patchlevel.h (the running interpreter's
    installed headers): a version's level and its hexversion's level code must be the same one."""
    import sysconfig

    from offsets.errors import ModelError
    from offsets.layout import sanity

    path = Path(sysconfig.get_paths()["include"]) / "patchlevel.h"
    if not path.is_file():
        missing_input(f"the running interpreter has no headers installed ({path})")
    codes = {m[1]: int(m[2], 16) for m in re.finditer(r"#define PY_RELEASE_LEVEL_(\w+)\s+0x([0-9A-F]+)", path.read_text())}
    spelled = {"ALPHA": "a", "BETA": "b", "GAMMA": "rc", "FINAL": ""}
    assert set(codes) == set(spelled)
    for level, code in codes.items():
        serial = 0 if level == "FINAL" else 2
        version = "3.13.0" + (f"{spelled[level]}{serial}" if serial else "")
        sanity.check_version(version, 0x030D0000 | code << 4 | serial)
        for other in set(codes.values()) - {code}:
            with pytest.raises(ModelError, match="does not match hexversion"):
                sanity.check_version(version, 0x030D0000 | other << 4 | serial)


def test_packed_structs_and_union_members_may_do_what_they_do(tmp_path, capsys):
    # 3.14's PyObject: union { Py_ssize_t ob_refcnt_full; struct { uint32_t ob_refcnt; uint16_t
    # ob_overflow; uint16_t ob_flags; }; }, flattened: members of the union start where the first did
    text = TABLE.replace("""      ob_refcnt: {offset: 0, size: 8, type: Py_ssize_t}\n      ob_type""",
                         """      ob_refcnt_full: {offset: 0, size: 8, type: Py_ssize_t}
      ob_refcnt: {offset: 0, size: 4, type: uint32_t}
      ob_overflow: {offset: 4, size: 2, type: uint16_t}
      ob_flags: {offset: 6, size: 2, type: uint16_t}
      ob_type""")
    p = tmp_path / "t.yaml"
    p.write_text(text)
    assert cli(capsys, "get", "PyObject.ob_flags", "-t", p)[:2] == (0, "6\n")
    p.write_text(TABLE + """  Packed:
    kind: struct
    size: 9
    align: 1
    defined_in: "x.h:1"
    fields:
      c: {offset: 0, size: 1, type: char}
      x: {offset: 1, size: 8, type: long}
""")                        # __attribute__((packed)): alignment 1, so a long may sit at 1
    assert cli(capsys, "get", "Packed.x", "-t", p)[:2] == (0, "1\n")
    p.write_text(p.read_text().replace("    size: 9\n    align: 1", "    size: 9\n    align: 8"))
    refused(capsys, "get", "Packed.x", "-t", p, match="field 'x' at offset 1 is not a multiple of its alignment 8 (long)")


# ---------------------------------------------------------------- 5. bounded cost
def test_a_table_over_the_cap_is_refused_at_once(tmp_path, capsys):
    p = tmp_path / "big.yaml"
    with open(p, "w") as f:
        f.write(TABLE)
        f.write(("# " + "x" * 1022 + "\n") * (yaml_strict.MAX_TABLE_BYTES // 1024))
    start = time.monotonic()
    refused(capsys, "get", "PyObject", "-t", p, match="more than the 16 MiB a table may have (docs/table-format.md)")
    assert time.monotonic() - start < 1


def test_byte_maps_cost_the_fields_not_the_size():
    from offsets.drift import report
    from offsets.layout.model import Build, Field, Struct, Table, Target

    b = Build("3.11.7", 0x030B07F0, {}, Target("x86_64-linux-gnu", 8))
    s = Struct("Big", "struct", 2 ** 31 - 8, 8, "x.h:1", (Field("a", 0, 8, "long"), Field("z", 2 ** 31 - 16, 8, "long")))
    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    html = report.render([Table(b, {"offsets": "0", "libclang": "16"}, {"Big": s})], ["Big"])
    assert time.monotonic() - start < 1 and len(html) < 20000
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024     # kB


def test_a_unit_including_dev_zero_is_one_line(tmp_path):
    from offsets.scan.clang_scan import Unit, parse_unit

    unit = Unit("zero.c", str(tmp_path / "zero.c"), ("-xc", "--target=x86_64-linux-gnu"), (), (),
                '#include "/dev/zero"\n')
    start = time.monotonic()
    with pytest.raises(ScanError) as e:
        workers.run_one(parse_unit, unit, unit.name, limit=300 * 1024 * 1024)
    assert str(e.value).startswith("zero.c: ") and "\n" not in str(e.value) and "out of memory" in str(e.value)
    assert time.monotonic() - start < 30


def test_scan_of_a_dev_zero_include_exits_2(tmp_path):
    tree = tmp_path / "fake"
    shutil.copytree(FAKE, tree)
    (tree / "include/python3.99/zero.h").write_text('#include "/dev/zero"\n')
    env = dict(os.environ, OFFSETS_UNIT_MEMORY_MB="300")
    proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "--prefix", tree, "--target", "x86_64-linux-gnu",
                           "-q", "--no-cache", "-o", tmp_path / "t.yaml"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "out of memory" in lines[0], proc.stderr
    assert not (tmp_path / "t.yaml").exists()


# ---------------------------------------------------------------- 6. the scan cache
def test_a_planted_or_tampered_cache_entry_is_a_miss(tmp_path, monkeypatch):
    from offsets.scan import build_inputs as build, scanner

    own_cache(monkeypatch, tmp_path / "cache")
    b = build.from_prefix(FAKE, target="x86_64-linux-gnu")
    first = table_yaml.dumps(scanner.scan(b, scanner.ScanOptions(jobs=1)))
    # one entry per unit (Python.h's, and the one outside the core), in the scanner code's generation
    entries = sorted((tmp_path / "cache" / "scan").glob("*/*.json"))
    assert len(entries) == 2 and all(b'"ob_type",8' in e.read_bytes() for e in entries)
    # a pickle that would run code, planted under every name the old cache used
    import pickle

    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    for entry in entries:
        (entry.parent / (entry.stem + ".pickle")).write_bytes(pickle.dumps(Evil()))
        # an entry whose numbers were changed, digest and all left as they were
        entry.write_bytes(entry.read_bytes().replace(b'"ob_type",8', b'"ob_type",16', 1))
        assert unit_cache.read(entry.parent, entry.stem) is None
    assert table_yaml.dumps(scanner.scan(b, scanner.ScanOptions(jobs=1))) == first and not marker.exists()
    # a consistent but forged entry (digest recomputed) that breaks the model is a miss too
    for entry in entries:
        digest, _, body = entry.read_bytes().partition(b"\n")
        forged = body.replace(b'"ob_type",8', b'"ob_type",-3', 1)
        entry.write_bytes(hashlib.sha256(forged).hexdigest().encode() + b"\n" + forged)
        assert unit_cache.read(entry.parent, entry.stem) is None
    assert table_yaml.dumps(scanner.scan(b, scanner.ScanOptions(jobs=1))) == first


def test_the_dwarf_cache_is_data_too(tmp_path, monkeypatch):
    from offsets.scan import dwarf

    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "s.c").write_text("struct s { int a; long b; } x;\n")
    so = tmp_path / "s.so"
    subprocess.run(["gcc", "-g", "-shared", "-fPIC", "-o", so, tmp_path / "s.c"], check=True)
    fresh = dwarf.read(so)
    (entry,) = (tmp_path / "cache" / "dwarf").glob("*/*.json")   # in the reader code's generation
    # gcc's layout of struct s on x86_64: b follows a, padded to 8
    assert dwarf.read(so).structs["s"].field("b").offset == fresh.structs["s"].field("b").offset == 8
    entry.write_bytes(entry.read_bytes().replace(b'["b",8', b'["b",4', 1))      # tampered: a miss
    assert dwarf.read(so).structs["s"].field("b").offset == 8


# ---------------------------------------------------------------- 7. paths with spaces
def test_a_source_tree_whose_path_has_spaces(tmp_path, debian311):
    from offsets.scan import build_inputs as build, scanner

    tree = tmp_path / "with space" / "c python"
    shutil.copytree(debian311.tree / "Include", tree / "Include")
    (tree / "Objects").mkdir()
    (tree / "Makefile.pre.in").write_text(      # as Makefile.pre.in writes it: $(srcdir) unquoted
        "OBJECT_OBJS= Objects/a.o\nPY_CPPFLAGS= -I. -I$(srcdir)/Include -I$(srcdir)/Include/internal\n"
        "PY_CORE_CFLAGS= $(PY_CPPFLAGS) -DPy_BUILD_CORE\n.c.o:\n\t$(CC) -c $(PY_CORE_CFLAGS) -o $@ $<\n")
    (tree / "Objects/a.c").write_text('#include "Python.h"\ntypedef struct { PyObject_HEAD long v; } spaced;\n')
    b = build.from_source(tree, debian311.pyconfig("amd64", "x86_64-linux-gnu"))
    t = scanner.scan(b, scanner.ScanOptions(jobs=1, use_cache=False))
    # PyObject_HEAD is 16 bytes on x86_64 release builds (sizeof(PyObject), a live interpreter's
    # object.__basicsize__), so the long that follows is at 16
    assert t.structs["spaced"].field("v").offset == object.__basicsize__ == 16
    # the saved plan is data: a tampered one is planned afresh, to the same units
    from offsets.scan import sources

    plan = sources._plan_path(b)
    assert plan.suffix == ".json" and plan.exists()
    first = sources.source_units(b)
    plan.write_bytes(plan.read_bytes().replace(b"-DPy_BUILD_CORE", b"-DEVIL", 1))
    assert sources.source_units(b) == first and b"-DEVIL" not in plan.read_bytes()


def test_makefile_words_split_with_shell_rules():
    from offsets.scan.makefile import Makefile, flags_of

    mk = Makefile("srcdir= @srcdir@\nINC= -I$(srcdir)/Include\nOBJS= $(srcdir)/Objects/a.o Objects/b.o\n",
                  {"srcdir": shlex.quote("/a b/src")})
    assert mk.words("$(OBJS)") == ["/a b/src/Objects/a.o", "Objects/b.o"]
    assert flags_of(mk.expand("$(INC)"), Path("/a b/src"), [], "x") == ("-I/a b/src/Include",)


# ---------------------------------------------------------------- 8. small CLI truths
def test_an_interpreter_that_fails_shows_its_own_last_line(tmp_path, capsys):
    fake = tmp_path / "python3.12"
    fake.write_text("#!/bin/sh\necho 'something went wrong' >&2\necho 'ImportError: no module named x' >&2\nexit 1\n")
    fake.chmod(0o755)
    line = refused(capsys, "scan", "--python", fake, "-o", tmp_path / "t.yaml",
                   match="failed to describe itself: ImportError: no module named x")
    assert "['" not in line
    shim = tmp_path / "python3.9"
    shim.write_text("#!/bin/sh\necho \"pyenv: python3.9: command not found\" >&2\necho >&2\n"
                    "echo \"The \\`python3.9' command exists in these Python versions:\" >&2\necho '  3.9.18' >&2\nexit 127\n")
    shim.chmod(0o755)
    refused(capsys, "scan", "--python", shim, "-o", tmp_path / "t.yaml",
            match="is a pyenv shim with no version selected (pyenv: python3.9: command not found); select one")
    assert not (tmp_path / "t.yaml").exists()


def test_diff_with_one_table_says_what_it_compares_with(table_file, capsys, monkeypatch):
    from offsets.cli import drift as cli_drift

    monkeypatch.setattr(cli_drift, "_scan", lambda args: table_yaml.load(table_file))
    code, out, err = cli(capsys, "diff", table_file)
    assert code == 0 and f"comparing with the build of the running interpreter ({sys.executable})" in err


def test_check_with_a_missing_baseline_says_so_before_scanning(tmp_path, capsys, monkeypatch):
    from offsets.cli import drift as cli_drift

    monkeypatch.setattr(cli_drift, "_scan", lambda args: pytest.fail("scanned"))
    refused(capsys, "check", "--baseline", tmp_path / "generated", match="no such folder")


def test_the_venv_interpreter_is_not_the_scanned_one():
    out = subprocess.run(["make", "-n", "-B", "run", "PYTHON=python3.7"], capture_output=True, text=True, cwd=REPO).stdout
    assert "python3 -m venv .venv" in out and "python3.7 -m venv" not in out
    assert "offsets scan --python python3.7" in out
    # a venv the old Makefile made with an unsupported interpreter is removed and made again
    assert "sys.version_info < (3, 9))' 2>/dev/null || rm -rf .venv" in out


def test_the_shared_pool_is_checked_even_when_it_was_opened_without_a_digest(shipped_copy):
    """The drift tools open the pool without index.json's digest; the runtime, later in the same
    process, must still have its header checked against it."""
    f = running_file(shipped_copy)
    compact_read.open_table(str(f))                       # no digests, as drift/tables.py reads
    with pytest.raises(TableError, match="its header fails the checksum of index.json"):
        compact_read.shared_pool(str(shipped_copy), "0" * 64)
    index = json.loads((shipped_copy / "index.json").read_text())
    assert compact_read.shared_pool(str(shipped_copy), index["pool_sha256"]) is compact_read.open_table(str(f))[1]


@pytest.mark.parametrize("old,new", [(b'"shards":"', b'"shards":"0'), (b'"ends":"', b'"ends":"g')])
def test_a_pool_file_whose_shard_list_is_malformed_is_refused_without_a_digest(old, new, shipped_copy):
    """The drift tools open the pool without index.json's digest: its first line is checked whole."""
    flip(shipped_copy / compact_read.POOL_FILE, old, new, line=0)
    with pytest.raises(TableError, match="its shard list is malformed"):
        compact_read.open_table(str(running_file(shipped_copy)))


@pytest.mark.parametrize("keys,lines,asked", [
    ("PyObject PyVarObject PyObject", "- - -", "PyObject"),        # a key twice: neither of its layouts
    ("PyObject PyVarObject", "-", "PyVarObject"),                  # one line for two structs
    ("PyObject PyVarObject PyObject", "- - -", None),               # iterated: the keys are each there once
])
def test_a_struct_list_that_is_not_one_entry_per_key_is_refused(keys, lines, asked):
    """A first lookup finds its key in the key list's text and reads the line list only then
    (compact_read.StructMap): a damaged list is still refused, never answered from either entry."""
    from offsets.errors import CorruptTableError

    ids = "0123456789" * (keys.count(" ") + 1)
    structs = compact_read.StructMap(keys, ids, lambda: lines, "a test table")
    with pytest.raises(CorruptTableError, match="a test table: its struct list is malformed"):
        structs[asked] if asked else list(structs)


def test_a_line_read_at_an_offset_is_the_same_bytes_without_pread(tmp_path, monkeypatch):
    """compact_read reads a pool's lines through os.pread where the OS has it, and through open()
    where it has not (Windows): both give the same bytes, fewer at the file's end, none past it."""
    f = tmp_path / "pool"
    f.write_bytes(bytes(range(256)) * 40)
    ranges = [(0, 10), (1000, 4096), (10230, 100), (10240, 5), (20000, 3)]
    with_pread = [compact_read._read(str(f), start, size) for start, size in ranges]
    monkeypatch.setattr(compact_read, "_PREAD", False)
    assert [compact_read._read(str(f), start, size) for start, size in ranges] == with_pread
    assert with_pread[1] == (bytes(range(256)) * 40)[1000:5096] and with_pread[2] == bytes(range(246, 256))
    assert with_pread[3:] == [b"", b""]


def test_a_damaged_group_line_of_shard_digests_is_refused(shipped_copy, capsys, monkeypatch):
    """Since format 8 a pool's first line vouches for 16 group lines, each of which holds 16 shards'
    digests (a first lookup hashes the groups it needs, not all 256 digests): a digit changed in the
    group of the shard a lookup reads refuses that lookup (the first shard of that group it reads
    says so), in one line."""
    f = running_file(shipped_copy)
    pool = shipped_copy / compact_read.POOL_FILE
    ref = compact_read.open_table(str(f))[0]["structs"]["listiterobject"]
    k = int((ref if isinstance(ref, str) else ref[0])[:compact_read.SHARD_CHARS], 16)
    g = k // compact_read.GROUP_SHARDS
    lines = pool.read_bytes().split(b"\n")
    line = lines[1 + compact_read.SHARDS + g]
    assert len(line) == compact_read.GROUP_LINE_BYTES - 1
    lines[1 + compact_read.SHARDS + g] = (b"0" if line[:1] != b"0" else b"1") + line[1:]
    pool.write_bytes(b"\n".join(lines))
    monkeypatch.setattr(compact_read, "_shared", {})       # a process that starts now: nothing read before
    lo = g * compact_read.GROUP_SHARDS
    line = refused(capsys, "get", "listiterobject.it_index",
                   match=f": the line of the digests of shards {lo:02x}-{lo + 15:02x} fails its checksum")
    assert "reinstall cpython-offsets" in line


def test_a_struct_key_that_is_also_another_name_is_refused_by_the_writer_and_the_reader():
    """A lookup by a struct's key reads no names node (runtime/tables.Loaded.names): the writer
    refuses a table whose names hold a struct key, and a reader that meets one when it reads the
    names refuses the table, so the two ways to a key never part."""
    from offsets.errors import CorruptTableError

    head, notes, rows = compact.unpack(table_yaml.loads(TABLE), "t.yaml")
    with pytest.raises(ValueError, match="'PyObject' is both a struct key and another struct's name"):
        compact.text_of(head, dict(notes, names=dict(notes["names"], PyObject="PyListObject")), rows)
    head, pool = compact_read.parse(compact.text_of(head, notes, rows))

    class Clashing:          # the names node of a table the writer would refuse
        def __getattr__(self, name):
            return getattr(pool, name)

        def names(self, node):
            return dict(pool.names(node), PyObject="PyListObject")

    t = runtime.Loaded(head, Clashing(), "a test table", {})
    assert t.resolve_struct("PyListObject") == "PyListObject"
    with pytest.raises(CorruptTableError, match="a test table: a struct key is also one of its other names"):
        t.resolve_struct("_object")


@pytest.mark.parametrize("key,value", [("vendor", {"headers": None}), ("defines", ["-DX"]), ("inputs", "sha256:x"),
                                       ("stand_in", 3)])
def test_a_compact_header_whose_build_has_a_value_of_another_type_is_refused(key, value):
    """What the fuzz test found (a byte range cut so that `vendor` held the `inputs` dict): each value
    of a header's build that the runtime reads is checked for its type before the table is used."""
    from offsets.errors import CorruptTableError

    head, notes, rows = compact.unpack(table_yaml.loads(TABLE), "t.yaml")
    first, _, rest = compact.text_of(head, notes, rows).partition("\n")
    doc = json.loads(first)
    doc["build"][key] = value
    with pytest.raises(CorruptTableError, match="its build's vendor, defines, inputs or stand-in is malformed"):
        compact_read.parse(json.dumps(doc) + "\n" + rest)


@pytest.mark.parametrize("size", [0, 1, 65535, 65536, 65537, 3 * 65536 + 5])
@pytest.mark.parametrize("most", [0, 1, 65536, 100_000, 1 << 24])
def test_read_most_reads_what_read_would(tmp_path, size, most):
    """`compact_read.read_most(f, most)` is `f.read(most)` (bytes and text), in pieces."""
    path = tmp_path / "f"
    path.write_bytes(bytes(i % 251 for i in range(size)))
    for mode in ("rb", "r"):
        with open(path, mode, encoding=None if mode == "rb" else "latin-1") as a, \
                open(path, mode, encoding=None if mode == "rb" else "latin-1") as b:
            assert compact_read.read_most(a, most) == b.read(most)
            assert a.read() == b.read()
