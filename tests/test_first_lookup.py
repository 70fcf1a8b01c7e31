"""The first lookup's short way (`core.Runtime.by_build_id`: the table of this binary's build-id, read in C
by `_lookup.image`, before the whole identity) answers what the whole choice (`select`) answers, on
pyenv's builds 3.8 to 3.13, each in fresh processes with an empty cache: every field and size of the
table, and what a name the table lacks is refused with. The C reading of the build-id is the
Python one's (runtime/binary.py), and where the build-id is no shipped table's the short way is not
taken."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import c_extension_built, missing_input, missing_tool, pyenv_python
from offsets.layout import identity

REPO = Path(__file__).resolve().parents[1]
MINORS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]

#: Run in a child: the answers of every field and size of the first table, then of names it lacks.
#: argv[1] "fast": the short way (which must be taken, and kept for every name the table has);
#: "slow": the whole choice from the start.
CHILD = r"""
import json, sys
import offsets.runtime as r
from offsets.runtime import binary

from offsets.layout import identity

out = {"image_c": list(binary.image()), "image_py": list(binary.image_read_here()),
       "shown": identity.running_shown(), "target": identity.running_target()}
if sys.argv[1] == "slow":
    r.RUNTIME.by_build_id = lambda: None
def ask(f, name):
    try:
        return f(name)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
answers = {}
t = r.RUNTIME.first()
out["fast"] = r.RUNTIME.state[1] is None
for key in t.order:
    answers["sizeof " + key] = ask(r.sizeof, key)
    for path in t.fields(key):
        answers[key + "." + path] = ask(r.get, key + "." + path)
out["stayed_fast"] = r.RUNTIME.state[1] is None
for name in ("NoSuchStruct.field", "PyListObject.no_such_field", "PyListObject"):
    answers["lacks " + name] = ask(r.get, name)
out["answers"] = answers
out["table"] = r.RUNTIME.state[0].source
out["match"] = [r.build().kind, r.build().detail]
print(json.dumps(out))
"""


def tree_with_extension(python: Path, where: Path) -> Path:
    """A copy of the package with `_lookup` built for `python` (what pip builds), under `where`."""
    root = where / "tree"
    shutil.copytree(REPO / "offsets", root / "offsets",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    info = json.loads(subprocess.run(
        [str(python), "-c", "import json, sysconfig; print(json.dumps([sysconfig.get_paths()['include'], "
                            "sysconfig.get_config_var('EXT_SUFFIX')]))"],
        capture_output=True, text=True, check=True).stdout)
    cc = shutil.which("gcc") or missing_tool("gcc", "apt-get install gcc")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", f"-I{info[0]}", str(REPO / "offsets" / "_lookup.c"),
                    "-o", str(root / "offsets" / f"_lookup{info[1]}")], check=True, capture_output=True)
    return root


def answers(python: Path, root: Path, way: str, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFSETS_", "PYTHON"))}
    env.update(PYTHONPATH=str(root), OFFSETS_CACHE=str(cache), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([str(python), "-c", CHILD, way], capture_output=True, text=True, env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("minor", MINORS)
def test_the_short_way_answers_what_the_whole_choice_does(minor, tmp_path):
    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv's CPython {minor} is not installed (pyenv install {minor})")
    root = tree_with_extension(python, tmp_path)
    fast = answers(python, root, "fast", tmp_path / "cache-fast")
    slow = answers(python, root, "slow", tmp_path / "cache-slow")
    assert fast["image_c"] == fast["image_py"] and fast["image_c"][1], fast["image_c"]
    assert fast["fast"] and fast["stayed_fast"] and not slow["fast"]
    assert fast["table"] == slow["table"] and fast["match"] == slow["match"]
    assert len(fast["answers"]) > 100 and fast["answers"] == slow["answers"]
    assert all(isinstance(v, int) for k, v in fast["answers"].items() if not k.startswith("lacks "))
    assert fast["answers"]["lacks PyListObject.no_such_field"].startswith("UnknownNameError")
    shown, target = fast["shown"], fast["target"]     # what the short way compares, against sysconfig's
    assert [shown[k] for k in ("version", "hexversion", "pointer_size")] == \
        [target[k] for k in ("version", "hexversion", "pointer_size")]
    on = identity.flag_set(target["config"])
    assert shown["shown"] and shown["shown"] == {f: f in on for f in shown["shown"]}


def reads(monkeypatch, tables: list) -> None:
    """The short way reads `tables` as the shipped entries, in place of the build-id file."""
    from offsets import runtime

    monkeypatch.setattr(runtime.RUNTIME, "build_id_entries",
                        lambda b: ([e for e in tables if b in (e.get("build_ids") or ())], runtime.load_shipped))


def test_a_build_id_no_table_records_takes_the_whole_way(monkeypatch):
    """The build-id of this binary removed from the entries the short way reads: no short way."""
    from offsets import runtime
    from offsets.runtime import binary

    index = runtime.tables.shipped_index()
    build_id = binary.interpreter()[1]
    if not build_id or not any(build_id in (e.get("build_ids") or ()) for e in index["tables"]):
        missing_input(f"{sys.executable}'s build-id is in no shipped table")
    assert runtime.RUNTIME.by_build_id() is not None
    without = [dict(e, build_ids=[b for b in e.get("build_ids") or () if b != build_id]) for e in index["tables"]]
    reads(monkeypatch, without)
    assert runtime.RUNTIME.by_build_id() is None
    reads(monkeypatch, index["tables"] * 2)
    assert runtime.RUNTIME.by_build_id() is None, "a build-id two tables record is for the whole choice"


def test_a_table_of_this_build_id_for_another_build_than_the_interpreter_shows_takes_the_whole_way(monkeypatch):
    """The short way trusts the build-id for what sysconfig would add (the triple, Py_STATS), never
    against what the interpreter shows of itself: the entry that records this binary's build-id,
    made another version, hexversion, pointer size, or with a shown flag flipped, is refused; with
    only an unshown flag changed, the build-id still names the binary's build."""
    from offsets import runtime
    from offsets.runtime import binary

    index = runtime.tables.shipped_index()
    build_id = binary.interpreter()[1]
    entry = [e for e in index["tables"] if build_id and build_id in (e.get("build_ids") or ())]
    if len(entry) != 1:
        missing_input(f"{sys.executable}'s build-id is in no shipped table")

    def taken(**changed) -> bool:
        tables = [dict(e, **changed) if e is entry[0] else e for e in index["tables"]]
        reads(monkeypatch, tables)
        return runtime.RUNTIME.by_build_id() is not None

    shown = identity.running_shown()["shown"]
    assert taken()
    assert not taken(version="3.99.0") and not taken(hexversion=entry[0]["hexversion"] + 1)
    assert not taken(pointer_size=12 - entry[0]["pointer_size"])
    for flag in shown:
        assert not taken(config=dict(entry[0]["config"], **{flag: not shown[flag]})), flag
    assert taken(config=dict(entry[0]["config"], Py_STATS=True), triple="x86_64-other-linux-gnu")


def short_way_env(tmp_path) -> dict:
    """The environment of a child of this interpreter that takes the short way (its build-id is a
    shipped table's, and it has no own table); the test is skipped where no shipped table records it."""
    from offsets.runtime import binary

    index = json.loads((REPO / "offsets" / "data" / "compact" / "index.json").read_text())
    if not any(binary.interpreter()[1] in (e.get("build_ids") or ()) for e in index["tables"]):
        missing_input(f"{sys.executable}'s build-id is in no shipped table")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFSETS_", "PYTHON"))}
    env.update(PYTHONPATH=str(REPO), OFFSETS_CACHE=str(tmp_path / "c"), OFFSETS_TABLES=str(tmp_path / "t"))
    return env


def test_the_short_way_imports_no_sysconfig(tmp_path):
    """sysconfig costs a first lookup about a millisecond: the short way answers without it."""
    env = short_way_env(tmp_path)
    code = ("import sys, offsets; offsets.get('PyListObject.ob_item'); from offsets.runtime import RUNTIME\n"
            "print(RUNTIME.state[1] is None, 'sysconfig' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_the_short_way_makes_no_exception_class(tmp_path):
    """Each class costs a start about 0.1M instructions, and errors.py holds 21: the short way imports
    it only to raise one, and a name it lacks is then refused as every other way refuses it."""
    env = short_way_env(tmp_path)
    code = ("import sys, offsets; offsets.get('PyListObject.ob_item'); offsets.sizeof('PyTupleObject')\n"
            "print('offsets.errors' in sys.modules)\n"
            "try:\n    offsets.get('PyListObject.no_such_field')\n"
            "except offsets.UnknownNameError as e:\n    print(type(e).__module__, isinstance(e, KeyError))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "offsets.errors", "True"]


def test_an_own_table_of_this_version_takes_the_whole_way(monkeypatch, tmp_path):
    """An own table would rank first: with one of this version in the tables folder, no short way."""
    from offsets import runtime

    monkeypatch.setenv("OFFSETS_TABLES", str(tmp_path))
    if runtime.RUNTIME.by_build_id() is None:
        missing_input(f"{sys.executable} has no short way to begin with")
    version = runtime.identity.running_target()["version"]
    (tmp_path / f"cpython-{version}-x86_64-linux-gnu-0000.jsonl").write_text("{}\n")
    assert runtime.RUNTIME.by_build_id() is None


def own_copy(tables: Path, binaries=None, name: str = "own") -> Path:
    """The shipped table this interpreter's build-id takes, as an own table of its version in `tables`
    (recording `binaries`, default the shipped table's own)."""
    from offsets import runtime
    from offsets.layout import compact

    e = next(e for e in runtime.shipped_index()["tables"] if runtime.RUNTIME.by_build_id().name == e["name"])
    head, notes, rows = compact.read_parts(compact.COMPACT_DIR / e["file"])
    b = dict(head["build"])
    if binaries is not None:
        b["binaries"] = binaries
    tables.mkdir(exist_ok=True)
    out = tables / f"cpython-{b['version']}-{name}.jsonl"
    out.write_text(compact.text_of(dict(head, build=b), notes, rows))
    return out


def test_an_own_table_that_records_this_build_id_is_taken_by_the_short_way(tmp_path):
    """It ranks first in the whole choice, so the short way takes it (no sysconfig, no index.json)
    and answers what the whole way answers; the shipped table of the build-id is not used."""
    env = short_way_env(tmp_path)
    own_copy(tmp_path / "t")
    code = ("import sys, offsets; from offsets.runtime import RUNTIME\n"
            "a = [offsets.get('PyListObject.ob_item'), offsets.sizeof('PyTupleObject')]\n"
            "t = RUNTIME.state[0]; fast = RUNTIME.state[1] is None\n"
            "print(fast, t.own, t.source.endswith('-own.jsonl'), 'sysconfig' in sys.modules, a == [\n"
            "    RUNTIME.current().fields('PyListObject')['ob_item'].offset, RUNTIME.current().size('PyTupleObject')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True", "False", "True"]


@pytest.mark.parametrize("own", ["two record it", "one records another build-id"])
def test_own_tables_that_do_not_name_one_take_the_whole_way(monkeypatch, tmp_path, own):
    """The short way takes an own table only when it is the one own table that records the build-id."""
    from offsets import runtime

    monkeypatch.setenv("OFFSETS_TABLES", str(tmp_path / "t"))
    if runtime.RUNTIME.by_build_id() is None:
        missing_input(f"{sys.executable} has no short way to begin with")
    if own == "two record it":
        own_copy(tmp_path / "t", name="a")
        own_copy(tmp_path / "t", name="b")
    else:
        own_copy(tmp_path / "t", binaries=[["ab" * 20, "elsewhere", "test"]])
    assert runtime.RUNTIME.by_build_id() is None


IMAGES = """
import json, os, sys
from offsets import _lookup
from offsets.runtime import binary
if len(sys.argv) > 1:
    os.unlink(sys.argv[1])
print(json.dumps([_lookup._image_loaded(), _lookup._image_mapped(), binary.image_read_here(), _lookup.image()]))
"""


@pytest.mark.parametrize("way", ["pyenv 3.8", "pyenv 3.13", "its libpython through a symlink", "a static build",
                                 "its libpython deleted since it was loaded", "its libpython by a relative path"])
def test_the_loader_reads_what_the_maps_show(tmp_path, way):
    """`_lookup.image()` asks the loader (dl_iterate_phdr, the note read in place) and reads
    /proc/self/maps only where that answer is not the plain one: on shared builds of the oldest and
    newest minor, a libpython found through a symlink (LD_LIBRARY_PATH), and Debian's static
    python3.11 (the program holds the interpreter), the loader's path, build-id and base are the
    maps' (C's reading and binary.py's); a libpython deleted since it was loaded has no path, nor
    one the loader found by a relative path (the process may have changed directory since), and
    the maps' reading answers with theirs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFSETS_", "PYTHON", "LD_"))}
    args = []
    if way == "a static build":
        python = Path("/usr/bin/python3.11")
        if not python.is_file() or not Path("/usr/include/python3.11/Python.h").is_file():
            missing_input("Debian's python3.11 and its headers (apt-get install python3.11-dev)")
    else:
        python = pyenv_python(way.split()[1] if way.startswith("pyenv") else "3.11")
        if python is None:
            missing_input(f"pyenv's CPython for {way} is not installed")
    if way.startswith("its libpython"):
        real = next((python.resolve().parents[1] / "lib").glob("libpython3.11.so.1.0"))
        lib = tmp_path / "lib"
        lib.mkdir()
        if way.startswith("its libpython deleted"):
            shutil.copy2(real, lib / real.name)
            args = [str(lib / real.name)]
        else:
            (lib / real.name).symlink_to(real)
        env["LD_LIBRARY_PATH"] = str(lib)
    root = tree_with_extension(python, tmp_path)
    if way.endswith("by a relative path"):
        env["LD_LIBRARY_PATH"] = os.path.relpath(lib, root)
    proc = subprocess.run([str(python), "-c", IMAGES, *args], capture_output=True, text=True, cwd=root,
                          env=dict(env, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded, mapped, here, chosen = json.loads(proc.stdout)
    assert mapped == here == chosen and here[1], (loaded, here)
    if args:
        assert loaded is None and here[0].endswith(" (deleted)"), (loaded, here)
    elif way.endswith("by a relative path"):
        assert loaded is None and here[0] == str(real), (loaded, here)
    else:
        assert loaded == here, (loaded, here)
    if way == "a static build":
        assert here[0] == str(python)
    if way == "its libpython through a symlink":
        assert here[0] == str(real)


def test_two_libpythons_are_left_to_python(tmp_path):
    """pyenv's 3.12 with a copy of its libpython preloaded (two files that both hold an interpreter):
    the C reading answers None, and binary.py's own says why there is no build-id; alone, both
    read the same build-id."""
    from offsets.tools import foreign_builds

    python = pyenv_python("3.12")
    if python is None:
        missing_input("pyenv's CPython 3.12 is not installed (pyenv install 3.12)")
    version = python.resolve().parents[1].name
    second = foreign_builds.second_libpython(version)
    root = tree_with_extension(python, tmp_path)
    code = ("import json; from offsets import _lookup; from offsets.runtime import binary\n"
            "print(json.dumps([_lookup.image(), binary.image_read_here(), binary.image()]))")
    got = {}
    for way, extra in (("alone", {}), ("two", {"LD_PRELOAD": str(second)})):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFSETS_", "PYTHON"))}
        proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=root,
                              env=dict(env, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", **extra))
        assert proc.returncode == 0, proc.stderr[-2000:]
        got[way] = json.loads(proc.stdout)
    c, here, chosen = got["alone"]
    assert c == here == chosen and c[1]
    c, here, chosen = got["two"]
    assert c is None and here == chosen and here[1] is None and here[3].endswith("is mapped too"), got["two"]


def test_the_build_id_file_says_what_index_json_says():
    """Every build-id index.json's entries record leads, in the build-id file, to exactly those
    entries (their keys that file carries); a build-id none records, to none."""
    from offsets.layout.compact_read import BUILD_ID_KEYS, build_id_entries

    compact = REPO / "offsets" / "data" / "compact"
    index = json.loads((compact / "index.json").read_text())
    ids = {b for e in index["tables"] for b in e.get("build_ids") or ()}
    assert ids, "index.json records build-ids"
    for b in sorted(ids):
        entries, aliases, pool = build_id_entries(str(compact / "build_ids.txt"), b)
        want = [{k: e.get(k) for k in BUILD_ID_KEYS} for e in index["tables"] if b in (e.get("build_ids") or ())]
        assert sorted(entries, key=lambda e: e["name"]) == sorted(want, key=lambda e: e["name"]), b
        assert (aliases, pool) == (index["aliases"], index["pool_sha256"])
    assert build_id_entries(str(compact / "build_ids.txt"), "ab" * 20)[0] == []


def test_every_build_id_is_found_by_bisection_and_no_other(tmp_path):
    """A build-id file of many lines, short ones and ones longer than a probe (`sorted_line`'s
    bisection reads a probe, not the file): each build-id leads to exactly its entries, and a
    build-id before, between or after them to none."""
    from offsets.layout import compact, compact_read

    def entry(i: int, ids: list) -> dict:
        return {"name": f"t{i:03d}" + "x" * (3 * compact_read.PROBE_BYTES if i % 7 == 3 else i), "file": f"t{i}.jsonl",
                "head_sha256": "0" * 64, "version": "3.11.7", "hexversion": 0x30B07F0, "config": {},
                "triple": "x86_64-linux-gnu", "pointer_size": 8, "vendor": None, "build_ids": ids}

    ids = [f"{n * 7919 % 65536:04x}" + "ab" * (n % 3) for n in range(1, 160)]      # of three lengths, unsorted
    entries = [entry(i, ids[i::40]) for i in range(40)]
    path = tmp_path / "build_ids.txt"
    path.write_text(compact.build_id_text(entries, {"a": ["b"]}, "f" * 64))
    assert path.stat().st_size > 20 * compact_read.PROBE_BYTES
    for b in ids:
        got, aliases, pool = compact_read.build_id_entries(str(path), b)
        assert [e["name"] for e in got] == [e["name"] for e in entries if b in e["build_ids"]], b
        assert (aliases, pool) == ({"a": ["b"]}, "f" * 64)
    for b in ("0000", "00", "ffffffff", ids[0] + "0", ids[5][:-1], "zz"):
        if b not in ids:
            assert compact_read.build_id_entries(str(path), b)[0] == [], b


@pytest.mark.parametrize("damage", ["a byte of a line", "a line dropped", "truncated", "missing"])
def test_a_damaged_build_id_file_says_nothing(tmp_path, damage):
    """The file fails its own checksum (or is gone): the short way finds nothing, and the whole
    choice (index.json) answers."""
    from offsets.layout.compact_read import build_id_entries

    text = (REPO / "offsets" / "data" / "compact" / "build_ids.txt").read_bytes()
    head, body = text.split(b"\n", 1)
    b = body.split(b" ", 1)[0].decode()
    assert build_id_entries(str(REPO / "offsets" / "data" / "compact" / "build_ids.txt"), b)[0]
    changed = {"a byte of a line": head + b"\n" + body.replace(b'"version":"3', b'"version":"4', 1),
               "a line dropped": head + b"\n" + body.split(b"\n", 1)[1],
               "truncated": text[:len(text) // 2], "missing": None}[damage]
    path = tmp_path / "build_ids.txt"
    if changed is not None:
        path.write_bytes(changed)
    assert build_id_entries(str(path), b) is None


def test_a_build_id_line_vouches_for_the_header_it_is_read_with(tmp_path):
    """Only the asked build-id's line is hashed, and its sha256 covers the header too: an alias or
    the pool's digest changed there (the length kept) makes the short way find nothing."""
    from offsets.layout.compact_read import build_id_entries

    text = (REPO / "offsets" / "data" / "compact" / "build_ids.txt").read_bytes()
    head, body = text.split(b"\n", 1)
    b = body.split(b" ", 1)[0].decode()
    path = tmp_path / "build_ids.txt"
    pool = json.loads(head)["pool_sha256"]
    for changed in (head.replace(b'"listiterobject"', b'"listiterobjekt"', 1),
                    head.replace(pool.encode(), pool[:-1].encode() + (b"0" if pool[-1] != "0" else b"1"))):
        assert changed != head
        path.write_bytes(changed + b"\n" + body)
        assert build_id_entries(str(path), b) is None


def test_the_short_way_reads_no_index_json(tmp_path):
    """index.json (72 kB, parsed and checked: a millisecond) is for the whole choice: the first
    lookup by build-id reads the build-id file only, and later lookups of the table need neither."""
    env = short_way_env(tmp_path)
    code = ("import offsets; a = offsets.get('PyListObject.ob_item'); b = offsets.sizeof('PyTupleObject')\n"
            "from offsets.runtime import RUNTIME, tables\n"
            "print(RUNTIME.state[1] is None, tables._index_doc is None, a, b)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    import offsets

    assert out.stdout.split() == ["True", "True", str(offsets.get("PyListObject.ob_item")),
                                  str(offsets.sizeof("PyTupleObject"))]


def test_the_c_reading_of_maps_is_pythons_or_none():
    """`_lookup.image` parses /proc/self/maps in C (word by word for odd bytes, numbers by hand);
    over texts /proc never shows, its mappings are binary.maps_of's, or it leaves the text to
    Python (None). The plain text is parsed, not left: else nothing here would be checked."""
    from offsets.runtime import binary

    c_extension_built()
    from offsets import _lookup
    line = b"7f1c2a000000-7f1c2a021000 r--p 00000000 fd:01 1835 /usr/lib/libpython3.11.so.1.0"
    plain = b"\n".join([line, b"55d0c000-55d0d000 rw-p 00000000 00:00 0 [heap]", line.replace(b"1835", b"77")]) + b"\n"
    assert _lookup._maps_of(plain) == binary.maps_of(plain) and len(binary.maps_of(plain)) == 2
    odd = [b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1f", b"\xc2\x85", b"\xe2\x80\xa8", b"\xff"]
    variants = [plain[:k] + o + plain[k:] for o in odd for k in (0, 7, 8, 15, 16, 30, len(line), len(plain) - 1)]
    variants += [plain.replace(b"7f1c2a000000", w, 1) for w in
                 (b"0x7f1c2a000", b"+7f1c2a000", b"7F1C2A000000", b"7f1c_2a000", b"1" * 16, b"1" * 17, b"", b"-")]
    variants += [plain.replace(b"1835", w, 1) for w in (b"+18", b"1_8", b"18a", b"9" * 19, b"9" * 20, b"\xd9\xa3")]
    variants += [plain.replace(b" ", b"\t"), plain.replace(b"\n", b""), plain[:-1], b"", b"\n\n", line[:40]]
    parsed = 0
    for text in variants:
        got = _lookup._maps_of(text)
        if got is not None:
            parsed += 1
            assert got == binary.maps_of(text), text
    assert parsed >= 8, f"only {parsed} texts parsed in C: the test checks little"
