"""The runtime API: the compact tables against the YAML ones, table selection (exact, loose with a
live check, strict refusal, no match), lookups against the live interpreter, use_table, import cost.

The truth is the running interpreter (and, in subprocesses, the pyenv ones): `__basicsize__`,
objects read through ctypes, `_Py_DebugOffsets`. Tampered tables prove the live check can fail.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import offsets
import sampling
from conftest import c_extension_built, missing_input, pyenv_python3
from offsets.layout import compact, compact_read, identity
from offsets.runtime.live import toolkit
from offsets.tools import store_cost
from offsets import runtime
from offsets.errors import NoMatchingTable, TableError, UnknownNameError, VerifyError

ROOT = Path(__file__).resolve().parent.parent
YAMLS = sorted((ROOT / "generated").glob("cpython-*.yaml"))


@pytest.fixture(autouse=True)
def fresh_runtime(monkeypatch, tmp_path):
    """Every test starts with no table chosen, no own tables and no autoscan, and leaves none behind."""
    monkeypatch.delenv("OFFSETS_STRICT", raising=False)
    monkeypatch.setenv("OFFSETS_TABLES", str(tmp_path / "own-tables"))
    monkeypatch.setenv("OFFSETS_AUTOSCAN", "0")
    runtime.reset()
    yield
    runtime.reset()


def entries():
    return runtime.shipped_index()["tables"]


def running_entry():
    me = runtime.running_identity()
    for e in entries():
        if runtime.earning(runtime.entry_build(e), me).exact:
            return e
    pytest.fail(f"no shipped table is exactly {runtime.describe(me)}: run `make tables`")


def tampered(tmp_path, entry, struct, path=None, delta=8, size_delta=0) -> Path:
    """A copy of a shipped compact table with one field moved (or one struct resized)."""
    base, notes, rows = compact.read_parts(compact.COMPACT_DIR / entry["file"])
    row = rows[struct]
    if path is not None:
        for f in row[6]:
            if f[0] == path:
                f[1] += delta
                break
        else:
            raise AssertionError(f"{struct}.{path} not in {entry['name']}")
    row[2] += size_delta
    out = tmp_path / f"tampered-{struct}.jsonl"
    out.write_text(compact.text_of(base, notes, rows))
    return out


# ---------------------------------------------------------------- the compact form
def made_from(yml):
    """The compact table and C header that generated/X.yaml makes."""
    name = yml.stem                      # cpython-3.11.7-x86_64-linux-gnu
    return compact.COMPACT_DIR / (name + ".jsonl"), ROOT / "generated" / f"pyoffsets_{name}.h"


@pytest.mark.parametrize("yml", YAMLS, ids=lambda p: p.stem)
def test_compact_table_and_c_header_are_up_to_date(yml):
    """Both carry the digest of the YAML they were made from: a cheap staleness check for every table."""
    jsonl, header = made_from(yml)
    digest = compact.sha256_of(yml)
    fix = "run `python -m offsets.tools.regenerate` (make tables)"
    assert jsonl.exists() and compact_read.open_table(str(jsonl))[0]["source_sha256"] == digest, f"{jsonl.name} is stale: {fix}"
    assert header.exists() and f" * Source {digest}." in header.read_text().splitlines()[:4], \
        f"{header.name} is stale: {fix}"


#: The tables `make test` reads in full (the oldest and newest of each kind: tests/sampling.py);
#: `make prove` the others (tests/prove/test_beyond_samples.py)
YAMLS_SAMPLE, YAMLS_REST = sampling.split(YAMLS, lambda p: p.stem)


@pytest.mark.parametrize("yml", YAMLS_SAMPLE, ids=lambda p: p.stem)
def test_every_compact_table_and_c_header_hold_the_whole_yaml_table(yml):
    """Full content: the compact table written back as YAML is the committed YAML byte for byte,
    and the C header is what the generator makes of that table (reading the compact form is fast;
    the YAML is read in full only for the tables below). Every table is checked by its digest
    (test_compact_table_and_c_header_are_up_to_date) and, in full, here or in `make prove`. Remembered once passed
    (tests/result_memo.py) under the package (its shipped pools), this file, the YAML, the compact
    table and the header."""
    import result_memo
    from offsets.layout import c_header, table_yaml

    jsonl, header = made_from(yml)
    digest = compact.sha256_of(yml)
    if not jsonl.exists() or compact_read.open_table(str(jsonl))[0]["source_sha256"] != digest:
        pytest.fail(f"{jsonl.name} is stale or missing: run `python -m offsets.tools.regenerate` (make tables)")
    files = [Path(__file__), yml, jsonl, header]
    if result_memo.passed_before("compact-and-header-hold-the-yaml", files, yml.name):
        return
    table = compact.load(jsonl)
    assert table_yaml.dumps(table) == without_types(without_dependencies(yml.read_text()))
    pool = compact.PoolWriter()
    made = json.loads(compact.shipped_head(table, f"generated/{yml.name}", digest, pool))
    committed = json.loads(jsonl.read_text())       # its dependency data: test_compact_dependencies_are_the_yaml_tables
    assert dict(made, depends=None) == dict(committed, depends=None)
    shipped = shipped_layouts()
    assert [k for k, line in pool.lines.items() if shipped.get(k) != line] == []
    assert header.read_text() == c_header.emit(table, f"generated/{yml.name}", digest)
    result_memo.passed("compact-and-header-hold-the-yaml", files, yml.name)


def without_dependencies(text: str) -> str:
    """A YAML table's text without its dependency data, which the compact form keeps only as the
    runtime compares it (test_compact_dependencies_are_the_yaml_tables checks that part)."""
    lines = text.split("\n")
    if "dependencies:" in lines:
        start = lines.index("dependencies:")
        end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" "))
        lines = lines[:start] + lines[end:]
    return "\n".join(line for line in lines if not re.fullmatch(r"    depends: \d+", line))


def without_types(text: str) -> str:
    """A YAML table's text without its type records, which the compact store keeps per minor version
    (data/compact/types.json; test_proofs checks that form)."""
    lines = text.split("\n")
    if "types:" in lines:
        start = lines.index("types:")
        end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" ")),
                   len(lines) - 1)
        lines = lines[:start] + lines[end:]
    return "\n".join(lines)


_layouts: dict = {}


def shipped_layouts() -> dict:
    """The shipped pools' lines by id (`layouts.jsonl`, and `cold.jsonl` decompressed)."""
    if not _layouts:
        _layouts.update(store_cost.pool_nodes(str(compact.COMPACT_DIR)))
    return _layouts


#: Where the YAML reader itself is part of the round trip (loading big YAML tables is slow).
ROUND_TRIP = [p for p in YAMLS if re.fullmatch(r"cpython-3\.\d+\.\d+-x86_64-linux-gnu", p.stem)]


def _without(table):
    """A table without what its compact form keeps elsewhere: the dependency data (as the runtime
    reads it), the type records (types.json, per minor)."""
    from dataclasses import replace

    return replace(table, dependencies=None, structs={k: replace(s, depends=None) for k, s in table.structs.items()},
                   types={})


@pytest.mark.parametrize("yml", ROUND_TRIP, ids=lambda p: p.stem)
def test_compact_table_is_the_yaml_table(yml):
    from offsets.layout import table_yaml

    jsonl, _ = made_from(yml)
    assert compact.load(jsonl) == _without(table_yaml.load(yml))


@pytest.mark.parametrize("yml", ROUND_TRIP, ids=lambda p: p.stem)
def test_compact_dependencies_are_the_yaml_tables(yml):
    """Each struct's set as the runtime reads it (leaves, installed files, whether it holds source
    files) is the YAML table's set, and each installed file's digest the start of the YAML's."""
    from offsets.layout import table_yaml

    jsonl, _ = made_from(yml)
    table = table_yaml.load(yml)
    head, pool = compact_read.open_table(str(jsonl))
    view = pool.depends(head)
    if table.dependencies is None:
        assert view is None
        return
    for i, key in enumerate(head["structs"]):
        d = table.structs[key].depends
        want = None if d is None else (d.macros, tuple(f for f in d.files if f.startswith("Include/")),
                                       any(not f.startswith("Include/") for f in d.files))
        assert view.struct(i) == want, key
    for f, digest in view.digests.items():
        assert table.dependencies.files[f].startswith("sha256:" + digest)
    assert view.values == dict(table.dependencies.macros)


def test_tables_of_one_pool_share_their_equal_structs_and_nothing_else(tmp_path, monkeypatch):
    """Tables read from one pool build each struct node once (compact._pool_structs): what two tables
    share is one object, and each table is the table read with nothing remembered; a table file with
    its own pool, one field moved, reads as moved after the shipped table was read."""
    names = ["cpython-3.13.15-x86_64-linux-gnu", "cpython-3.13.15-debian-x86_64-linux-gnu"]
    first, second = (compact.load(compact.COMPACT_DIR / f"{n}.jsonl") for n in names)
    shared = [k for k in first.structs if k in second.structs and first.structs[k] == second.structs[k]]
    assert len(shared) > 100 and all(first.structs[k] is second.structs[k] for k in shared)
    moved = [k for k in first.structs if k in second.structs and first.structs[k] != second.structs[k]]
    assert "PyGC_Head" in moved or "_gc_runtime_state" in moved      # Debian's PyGC_Head patch
    monkeypatch.setattr(compact, "_STRUCTS", None)
    alone = [compact.load(compact.COMPACT_DIR / f"{n}.jsonl") for n in names]
    assert alone == [first, second] and alone[1].structs[shared[0]] is not second.structs[shared[0]]
    entry = next(e for e in entries() if e["name"] == names[0])
    table = compact.load(tampered(tmp_path, entry, "PyListObject", "allocated", size_delta=8))
    moved, shipped = (t.structs["PyListObject"].field("allocated").offset for t in (table, first))
    assert moved == shipped + 8


def test_compact_index_lists_every_table_and_the_aliases():
    from offsets.layout import names

    index = runtime.shipped_index()
    assert sorted(e["file"] for e in index["tables"]) == sorted(p.name for p in compact.COMPACT_DIR.glob("cpython-*.jsonl"))
    assert len(index["tables"]) == len(YAMLS)
    assert index["aliases"] == names.aliases()
    for e in index["tables"]:
        head, _ = compact_read.open_table(str(compact.COMPACT_DIR / e["file"]))
        b = head["build"]
        assert (e["version"], e["hexversion"], e["config"], e["triple"], e["pointer_size"]) == \
               (b["version"], b["hexversion"], b["config"], b["target"]["triple"], b["target"]["pointer_size"])


def test_compact_rejects_a_foreign_file(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"format": 99, "structs": []}\n')
    with pytest.raises(TableError, match="compact format 99"):
        compact_read.open_table(str(bad))
    with pytest.raises(TableError, match=f"not a compact table of format {compact_read.FORMAT}"):
        runtime.load_compact(str(bad))


# ---------------------------------------------------------------- import cost
def test_import_offsets_imports_no_yaml_clang_or_jsonschema():
    code = ("import sys, offsets\n"
            "offsets.get('PyListObject.ob_item'); offsets.sizeof('PyObject'); offsets.build()\n"
            "offsets.field('PyASCIIObject.state.kind')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('yaml', 'clang', 'jsonschema', '_yaml')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    trace = subprocess.run([sys.executable, "-X", "importtime", "-c", "import offsets"],
                           capture_output=True, text=True, check=True, cwd=ROOT).stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in trace.splitlines() if "|" in line]
    assert "offsets" in imported
    assert not [m for m in imported if m.split(".")[0] in ("yaml", "clang", "jsonschema", "offsets.runtime")]


# ---------------------------------------------------------------- selection
def test_the_running_interpreter_gets_its_exact_table():
    e = running_entry()
    m = offsets.build()
    assert (m.kind, m.table) == ("exact", e["name"])
    assert m.build.hexversion == sys.hexversion
    assert m.check is None


def test_build_is_the_runtime_function_next_to_the_scanner_modules():
    """offsets.build() is the table in use; the scanner's build description is offsets.scan.build_inputs."""
    code = ("import offsets\nfirst = offsets.build().kind\nfrom offsets.scan import build_inputs\n"
            "assert callable(build_inputs.from_python)\n"
            "print(first, offsets.build().kind)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["exact", "exact"]


def test_exact_match_ignores_other_builds():
    me = runtime.running_identity()
    t, m = runtime.select(me, entries(), check=lambda t: pytest.fail("an exact match ran the live check"))
    assert m.kind == "exact" and t.build.hexversion == sys.hexversion


def test_another_patch_level_is_used_after_a_live_check_and_says_so():
    running_entry()
    me = runtime.running_identity()
    me = me.replace(hexversion=me.hexversion + 0x100, version="later")     # the next patch release of this minor
    t, m = runtime.select(me, entries())
    assert m.kind == "proven" and m.check.ok and not m.check.failed
    assert m.table == running_entry()["name"]
    assert "live check" in m.detail and "later" in m.detail


@pytest.mark.parametrize("struct,path,size_delta", [
    ("PyListObject", "ob_item", 0),
    ("PyTupleObject", "ob_item", 8),     # a flexible array stays within its struct
    ("PyTypeObject", "tp_flags", 0),
    ("PyThreadState", "interp", 0),
    ("PyInterpreterState", "sysdict", 0),
    ("PyCodeObject", "co_firstlineno", 0),
    ("PyListObject", None, 8),
])
def test_loose_match_with_a_wrong_table_is_refused(tmp_path, struct, path, size_delta):
    e = running_entry()
    bad = tampered(tmp_path, e, struct, path, size_delta=size_delta)
    me = runtime.running_identity()
    me = me.replace(hexversion=me.hexversion + 0x100)
    with pytest.raises(NoMatchingTable) as err:
        runtime.select(me, [e], load=lambda _: runtime.load_compact(str(bad)))
    msg = str(err.value)
    assert f"{e['name']} failed the live check" in msg and "offsets scan" in msg
    assert struct in msg or "sizeof" in msg or "basicsize" in msg


@pytest.mark.parametrize("change", ["new minor", "trace-refs build", "stats build", "other cpu", "32-bit"])
def test_no_match_names_the_shipped_builds_and_how_to_scan(monkeypatch, change):
    me = runtime.running_identity()
    if change == "new minor":
        me = me.replace(version="3.99.0", hexversion=0x036300f0)
    elif change == "trace-refs build":
        me = me.replace(config=dict(me.config, Py_TRACE_REFS=True))
    elif change == "stats build":
        me = me.replace(config=dict(me.config, Py_STATS=True))
    elif change == "other cpu":
        me = me.replace(triple="loongarch64-linux-gnu")
    else:
        me = me.replace(pointer_size=4)
    assert not any(e["hexversion"] >> 16 == me.hexversion >> 16
                   and identity.flag_set(e["config"]) == identity.flag_set(me.config)
                   and (e["triple"], e["pointer_size"]) == (me.triple, me.pointer_size) for e in entries()), \
        f"a table for such a build ({change}) is shipped now: change it into one no table is for"
    monkeypatch.setattr(runtime.RUNTIME, "identity", lambda: me)
    with pytest.raises(NoMatchingTable) as err:
        offsets.get("PyListObject.ob_item")
    msg = str(err.value)
    assert "shipped: " in msg and all(e["name"] in msg for e in entries())
    assert "offsets scan" in msg and "use_table" in msg and "\n" not in msg


# ---------------------------------------------------------------- lookups
def test_get_and_sizeof_agree_with_the_interpreter():
    # tuple's __basicsize__ is where ob_item starts; list's is sizeof(PyListObject)
    assert offsets.get("PyTupleObject.ob_item") == tuple.__basicsize__
    assert offsets.sizeof("PyListObject") == list.__basicsize__
    assert offsets.sizeof("PyHeapTypeObject") == type.__basicsize__
    lst = [1, 2, 3]
    assert ctypes.c_ssize_t.from_address(id(lst) + offsets.get("PyListObject.ob_base.ob_size")).value == 3
    assert ctypes.c_void_p.from_address(id(lst) + offsets.get("PyObject.ob_type")).value == id(list)


@pytest.mark.parametrize("text,kind", [("abc", 1), ("caf\u00e9", 1), ("\u0101x", 2), ("\U0001F600", 4)])
def test_field_gives_bits_that_read_the_right_kind(text, kind):
    text = "".join([text, ""])          # a fresh, compact string
    f = offsets.field("PyASCIIObject.state.kind")
    assert f.is_bitfield and f.bit_width >= 2
    raw = int.from_bytes(ctypes.string_at(id(text) + f.offset, f.size), sys.byteorder)
    assert (raw >> f.bit_offset) & ((1 << f.bit_width) - 1) == kind


def test_typedef_tag_and_alias_names_give_the_same_answer():
    t = runtime.RUNTIME.current()
    assert offsets.get("_object.ob_type") == offsets.get("PyObject.ob_type")     # a tag
    assert offsets.sizeof("_longobject") == offsets.sizeof("PyLongObject")
    # every shipped table has it: from 3.12's headers, else from the sources or the libpython's DWARF
    assert [n for n in ("listiterobject", "_PyListIterObject") if t.resolve_struct(n)], t.name
    assert offsets.get("listiterobject.it_index") == offsets.get("_PyListIterObject.it_index")
    assert offsets.sizeof("listiterobject") == type(iter([])).__basicsize__


def test_listiterobject_matches_a_live_iterator():
    t = runtime.RUNTIME.current()
    assert t.resolve_struct("listiterobject") is not None, t.name    # as above: every shipped table has it
    lst = ["a", "b", "c", "d"]
    it = iter(lst)
    for _ in range(3):
        next(it)
    assert ctypes.c_ssize_t.from_address(id(it) + offsets.get("listiterobject.it_index")).value == 3
    assert ctypes.c_void_p.from_address(id(it) + offsets.get("listiterobject.it_seq")).value == id(lst)


def test_unknown_names_raise_a_keyerror_with_suggestions():
    with pytest.raises(KeyError) as err:
        offsets.get("PyListObject.ob_itme")
    assert isinstance(err.value, UnknownNameError) and err.value.suggestions[0] == "PyListObject.ob_item"
    with pytest.raises(UnknownNameError, match="did you mean PyListObject"):
        offsets.get("PyListObjekt.ob_item")
    with pytest.raises(UnknownNameError, match="sizeof"):
        offsets.get("PyListObject")
    with pytest.raises(UnknownNameError):
        offsets.sizeof("PyListObject.ob_item")
    with pytest.raises(TypeError):
        offsets.get(3)


def test_a_known_name_is_answered_by_a_c_level_dict_lookup():
    """What makes get() cheap (offsets.tools.bench_runtime measures it): after the first lookup, a known
    name goes through no Python code, only the dict's subscript (a builtin function as dict.__getitem__
    is, made by offsets._lookup to carry a docstring)."""
    offsets.get("PyListObject.ob_item")
    assert type(offsets.get).__name__ == "builtin_function_or_method" and offsets.get.__self__ is runtime.RUNTIME.offsets
    assert "PyListObject.ob_item" in runtime.RUNTIME.offsets


def test_current_table_is_the_full_table_in_use():
    from offsets import cli

    table = cli.load_table(None)
    assert table.build.hexversion == offsets.build().build.hexversion
    assert table.structs["PyListObject"].field("ob_item").offset == offsets.get("PyListObject.ob_item")


def test_get_include_holds_the_header():
    assert (Path(offsets.get_include()) / "pyoffsets.h").is_file()


# ---------------------------------------------------------------- use_table
def test_use_table_loads_a_yaml_table_of_this_build():
    e = running_entry()
    yml = ROOT / "generated" / (e["name"] + ".yaml")
    before = offsets.get("PyListObject.ob_item")
    m = offsets.use_table(yml)
    assert m.kind == "user" and offsets.build() is m and m.check.ok
    assert offsets.get("PyListObject.ob_item") == before


def test_use_table_refuses_a_table_of_another_minor_version():
    running_entry()
    other = next(p for p in YAMLS if not p.name.startswith(f"cpython-{sys.version_info[0]}.{sys.version_info[1]}."))
    with pytest.raises(TableError, match="not for this CPython"):
        offsets.use_table(other)


def test_use_table_refuses_a_table_that_fails_the_live_check(tmp_path):
    real = offsets.get("PyListObject.ob_item")
    bad = tampered(tmp_path, running_entry(), "PyListObject", "ob_item")
    with pytest.raises(VerifyError, match="does not describe this interpreter"):
        offsets.use_table(bad)
    assert offsets.get("PyListObject.ob_item") == real
    assert offsets.use_table(bad, verify=False).kind == "user"      # the user insists
    assert offsets.get("PyListObject.ob_item") == real + 8


def test_use_table_reaches_c_callers(tmp_path):
    c_extension_built()
    from offsets import _offsets as c

    e = running_entry()
    real = c._get("PyListObject.ob_item")
    assert real == offsets.get("PyListObject.ob_item")
    assert c._identity() == (e["name"], "exact", e["hexversion"])
    offsets.use_table(tampered(tmp_path, e, "PyListObject", "ob_item"), verify=False)
    assert c._get("PyListObject.ob_item") == real + 8
    assert c._identity() == (e["name"], "user", e["hexversion"])
    with pytest.raises(UnknownNameError, match="did you mean PyListObject.ob_item"):
        c._get("PyListObject.ob_itm")


# ---------------------------------------------------------------- the live check itself
def test_live_check_of_the_shipped_table_passes():
    result = offsets.runtime.live_check()
    assert result.ok and not result.failed, result.failed
    assert len(result.passed) >= 40
    assert any(p.startswith("current frame's code via PyThreadState") for p in result.passed)


def test_a_check_that_read_no_memory_is_not_enough():
    r = toolkit.Result()
    r.passed = [f"t{i}.__basicsize__ == sizeof(T{i})" for i in range(20)]
    assert not r.ok
    r.passed.append("PyListObject.ob_item[]")
    assert r.ok
    r.failed.append("x")
    assert not r.ok


def test_memory_reads_of_bad_addresses_fail_instead_of_crashing():
    mem = toolkit.Memory()
    try:
        assert mem.read(id(mem), 8)
        with pytest.raises(toolkit.Fault):
            mem.read(8, 8)
        with pytest.raises(toolkit.Fault):
            mem.read(0x7FFF_FFFF_F000_0000 if sys.maxsize > 2 ** 32 else 0xFFFF_F000, 8)
    finally:
        mem.close()


DEBUG_OFFSETS_SCRIPT = """
import json, sys
from offsets import runtime
from offsets.layout import compact, compact_read
e = next(e for e in runtime.shipped_index()["tables"] if e["hexversion"] == sys.hexversion
         and e["triple"] == runtime.identity.running_target()["triple"])
good = runtime.live_check()
head, notes, rows = compact.read_parts(compact.COMPACT_DIR / e["file"])
row = rows["PyThreadState"]; table_size = row[2]; row[2] += 8    # a 3.13.x release appended a field
import ctypes
rt = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
t = runtime.load_shipped(e)
do = t.fields("_Py_DebugOffsets")
base = rt + t.fields("_PyRuntimeState")["debug_offsets"][0]
live = ctypes.c_uint64.from_address(base + do["thread_state.size"][0]).value    # CPython's own sizeof
bad = runtime.Loaded(*compact_read.parse(compact.text_of(head, notes, rows)), "tampered",
                     runtime.shipped_index()["aliases"])
res = runtime.live_check(bad)
print(json.dumps({"good": good.ok, "debug": [p for p in good.passed if p.startswith("_Py_DebugOffsets")],
                  "bad": res.failed, "live": live, "table": table_size}))
"""


@pytest.mark.slow
def test_debug_offsets_catch_what_basicsize_cannot_on_313():
    """sizeof(PyThreadState) has no Python-visible type; on 3.13 _Py_DebugOffsets gives it away."""
    python = pyenv_python3("3.13")
    if python is None:
        missing_input("no pyenv CPython 3.13 here (`pyenv install 3.13`)")
    out = subprocess.run([str(python), "-c", DEBUG_OFFSETS_SCRIPT], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["good"] and len(got["debug"]) >= 60
    # CPython's own _Py_DebugOffsets says sizeof(PyThreadState) (304 in 3.13.0), the shipped table agrees (gcc
    # verified it), and the tampered copy is caught
    assert got["live"] == got["table"]
    assert got["bad"] == [f"_Py_DebugOffsets.thread_state.size: the running interpreter says {got['live']}, the "
                          f"table gives {got['live'] + 8}"]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"])
def test_live_check_passes_on_every_cpython(version):
    python = pyenv_python3(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} here (`pyenv install {version}`)")
    code = ("import json; from offsets import runtime as r; c = r.live_check(); "
            "print(json.dumps([r.build().kind, c.ok, c.failed, len(c.passed)]))")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    kind, ok, failed, passed = json.loads(out.stdout)
    assert (kind, ok, failed) == ("exact", True, []) and passed >= 40


OTHER_PATCH_SCRIPT = """
import json, sys
from offsets import runtime as r
me = r.running_identity()
tables = r.shipped_index()["tables"]
mine = [e for e in tables if r.earning(r.entry_build(e), me).exact]
same_abi = lambda e: (e["hexversion"] >> 16 == me.hexversion >> 16 and r.identity.flag_set(e["config"]) == r.identity.flag_set(me.config)
                      and e["triple"] == me.triple and e["pointer_size"] == me.pointer_size)
others = [(e, me) for e in tables if same_abi(e) and e not in mine]
# a minor with one shipped table: that table, offered to this build as if it were the next patch level
others += [(e, me.replace(version="next", hexversion=me.hexversion + 0x100)) for e in mine]
truth = r.load_shipped(mine[0])
out = []
for other, who in others:
    try:
        t, m = r.select(who, [other], load=r.load_shipped)
    except Exception as e:
        out.append({"other": other["name"], "verdict": type(e).__name__, "detail": str(e)})
        continue
    answered = wrong = refused = 0
    elsewhere = []       # structs of extension modules the exact table lacks: checked against their DWARF below
    for key in t.order:
        k = truth.resolve_struct(key)
        for path, row in t.fields(key).items():
            if t.earned(key, path) is None:
                refused += 1
                continue
            answered += 1
            if k is None and t.exact(key) is False and "Modules/" in str(t._row(key)[4]):
                elsewhere.append([key.split("@")[0], str(t._row(key)[4]).split(":")[0], path, row[0]])
            elif k is None or truth.fields(k).get(path, (None,))[0] != row[0]:
                wrong += 1
    out.append({"other": other["name"], "verdict": m.kind, "answered": answered, "wrong": wrong, "refused": refused,
                "elsewhere": elsewhere})
print(json.dumps({"mine": [e["name"] for e in mine], "results": out}))
"""


#: The minors `make test` offers other patch levels' tables to (those with real ones shipped);
#: `make prove` the others (tests/prove/test_beyond_samples.py)
PATCH_LEVEL_MINORS, PATCH_LEVEL_SAMPLE = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"), ("3.9", "3.11", "3.13")


@pytest.mark.slow
@pytest.mark.parametrize("version", PATCH_LEVEL_SAMPLE)
def test_tables_of_other_patch_levels_answer_only_what_the_live_check_proved(version):
    """Every minor (here or in `make prove`): a pyenv CPython offered the shipped tables of its minor that are not exactly its
    build (real other patch levels and vendors: 3.9.2 vs 3.9.18, 3.11.2 vs 3.11.7, 3.13.5/3.13.15 vs
    3.13.0; else its own table posing as another patch level). Each answers only fields the live
    check read, never a wrong one, and refuses the rest. Truth: the build's own exact table, which
    gcc and DWARF verify (test_committed_tables.py, test_probe_pyenv.py)."""
    python = pyenv_python3(version)
    if python is None:
        pytest.fail(f"no pyenv CPython {version} here (`pyenv install {version}`)")
    out = subprocess.run([str(python), "-c", OTHER_PATCH_SCRIPT], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0"}, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["mine"] and got["results"], got
    modules = {}
    for r in got["results"]:
        if r["verdict"] == "proven":
            assert r["wrong"] == 0 and r["refused"] > 0 and r["answered"] > 0, r
            if r["elsewhere"] and not modules:       # the extension modules' own DWARF (pyenv builds them with -g)
                from offsets.scan import dwarf

                lib = next((python.parent.parent / "lib").glob(f"libpython{version}*.so.1.0"))
                for so in dwarf.extension_modules(lib, names=None):
                    modules.update({(k.split("@")[0], st.defined_in.split(":")[0]): st
                                    for k, st in dwarf.read(so).structs.items()})
            bad = [e for e in r["elsewhere"] if (e[0], e[1]) not in modules or
                   next((f.offset for f in modules[e[0], e[1]].fields if f.path == e[2]), None) != e[3]]
            assert bad == [], bad
        else:
            assert r["verdict"] == "NoMatchingTable" and "offsets scan" in r["detail"], r


def test_a_name_no_shipped_table_has_is_refused_as_before_without_reading_every_table_again(monkeypatch):
    """A struct name in no shipped table is refused with close names, and after the first such name
    the next reads no shipped table (each refusal read all 41 heads: 40-70 ms); every refusal, of a
    name another table has too, says what it said without the shortcut."""
    from offsets.runtime.tables import shipped_index

    def refusal(name):
        try:
            offsets.get(name)
        except UnknownNameError as e:
            return str(e)
        return None

    index = shipped_index()
    others = sorted({k for e in index["tables"][::8] for k in runtime.load_shipped(e).order})[::60]
    names = ["NoSuchStruct.x", "PyObjct.ob_type", "_PyCoMonitoringData.tools", *sorted(index["aliases"])[::20],
             *(f"{k}.no_such_field_either" for k in others)]
    from offsets.runtime import refusals

    monkeypatch.setattr(refusals.ShippedNames, "has", lambda self, struct, index: True)
    before = [refusal(n) for n in names]
    monkeypatch.undo()
    calls = []
    real = runtime.load_shipped
    monkeypatch.setattr(refusals, "load_shipped", lambda e: calls.append(e) or real(e))
    monkeypatch.setattr(runtime.RUNTIME, "shipped_names", None)
    assert refusal("NoSuchStruct0.x") == "unknown name 'NoSuchStruct0.x' in table " + offsets.build().table
    assert len(calls) == len(index["tables"])
    calls.clear()
    assert [refusal(f"NoSuchStruct{i}.x") for i in range(1, 20)] == \
        [f"unknown name 'NoSuchStruct{i}.x' in table {offsets.build().table}" for i in range(1, 20)]
    assert calls == []
    assert [refusal(n) for n in names] == before
    assert "tables that have it: " in before[2] and "did you mean PyObject" in before[1]


def test_asking_for_ever_new_unknown_names_grows_no_memory():
    """A program that asks for names no table has (a fuzzer, a debugger's prompt) keeps nothing of
    them: 300 refusals leave under 8 KiB allocated (each name was remembered before: 70 KB)."""
    import gc
    import tracemalloc

    def ask(i):
        with pytest.raises(UnknownNameError):
            offsets.get(f"NoSuchName{i}.x")

    for i in range(20):
        ask(i)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for i in range(1000, 1300):
            ask(i)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 8192, grown


def test_a_caught_refusal_never_searches_for_close_names(monkeypatch):
    """A JIT probing names this version may lack catches the KeyError and goes on: the close-name
    search (difflib over every name: 6.6 ms a constant, the most of a struct's refusal) runs only
    when the message or `suggestions` is asked for, and gives what it gave before."""
    import offsets.runtime.constants as constants_mod
    from offsets import errors

    searched = []
    real = errors.close_matches

    def counting(*a):
        searched.append(a[0])
        return real(*a)

    monkeypatch.setattr(constants_mod, "close_matches", counting)
    from offsets.runtime import refusals

    monkeypatch.setattr(refusals, "close_matches", counting)
    caught = []
    for name, ask in (("Py_TPFLAGS_HEAPTYP", offsets.constant), ("PyObjct.ob_type", offsets.get)):
        with pytest.raises(KeyError) as e:
            ask(name)
        caught.append(e.value)
    assert searched == []
    assert str(caught[0]).endswith("as a constant; did you mean Py_TPFLAGS_HEAPTYPE, Py_TPFLAGS_READY, Py_TPFLAGS_BASETYPE?")
    assert caught[1].suggestions[0] == "PyObject" and "did you mean PyObject, " in str(caught[1])
    assert searched == ["Py_TPFLAGS_HEAPTYP", "PyObjct"]
    assert caught[0].args == ("Py_TPFLAGS_HEAPTYP",)


def test_a_runtime_object_holds_all_of_its_state():
    """The runtime's state is one object's (`core.Runtime`): a second one chooses the same table
    and gives the same answers on its own, and forgetting its choice leaves this interpreter's
    (`offsets.runtime.RUNTIME`, behind `offsets.get`) as it was."""
    from offsets.runtime import core

    name = "PyListObject.ob_item"
    offsets.build()             # the whole choice made (a first lookup by build-id makes it later)
    offsets.get(name)
    other = core.Runtime()
    assert other.state is None and other.offsets == {}
    assert other.offsets[name] == offsets.get(name) == runtime.RUNTIME.offsets[name]
    assert other.sizes["PyListObject"] == offsets.sizeof("PyListObject")
    assert other.build().table == offsets.build().table and other.build() is not offsets.build()
    assert name in runtime.RUNTIME.offsets
    other.reset()
    assert other.state is None and other.offsets == {}
    assert runtime.RUNTIME.state is not None and name in runtime.RUNTIME.offsets
    with pytest.raises(UnknownNameError):
        other.offsets["PyListObject.no_such_field"]


def test_build_says_what_checked_the_table_in_use():
    """`offsets.build().checked` is what generated/index.yaml records verified the table before it
    shipped (each check that found 0 mismatches, counts included, read there and not from
    index.json); `checked_by` says it in words, names a binary where one checked it and says so
    where none did; a table made on this machine or given to use_table claims nothing."""
    import yaml

    from offsets.layout import compact

    m = offsets.build()
    rows = yaml.safe_load((ROOT / "generated" / "index.yaml").read_text())["tables"]
    row = next(r for r in rows if r["file"] == f"{m.table}.yaml")
    checks = row["verified"]["checks"]
    assert len(m.checked) == len(checks) and all(c["mismatches"] == 0 for c in checks.values())
    for name, c in checks.items():
        count = str(c.get("fields", c.get("constants")))
        assert any(count in line for line in m.checked), (name, m.checked)
    binaries = [n.split(" ", 1)[1] for n in checks if n.startswith("binary ")]
    assert all(any(b in line for line in m.checked) for b in binaries)
    assert m.checked_by.startswith("checked by ") and ("never against a binary" in m.checked_by) == (not binaries)
    # a check that failed is not claimed, and a table nothing checked says so
    failed = dict(checks, gcc=dict(checks["gcc"], mismatches=1))
    assert not any("offsetof" in line for line in compact.checks_of({"checks": failed}, row["target"]))
    assert compact.checks_of(None, row["target"]) == []
    t = runtime.load_compact(str(ROOT / "offsets" / "data" / "compact" / f"{m.table}.jsonl"))
    t.own = True
    own = runtime.Match(m.table, "exact", "made here", t.source, t.build, loaded=t)
    assert own.checked == [] and own.checked_by.startswith("made on this machine")
    user = runtime.Match(m.table, "user", "given", t.source, t.build, loaded=t)
    assert user.checked == [] and "not recorded" in user.checked_by
