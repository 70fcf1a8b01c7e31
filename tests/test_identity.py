"""Identity and earned answers (docs/identity.md): a table answers exactly only when its identity,
digests included, is this build's; otherwise only what the live check read in this process.

The truth each test compares with is named: the running interpreter (`__basicsize__`, objects read
with ctypes), CPython's own spellings (PY_VERSION in patchlevel.h), or the compiler's view recorded
in gcc-verified committed tables (tests/test_committed_tables.py proves those).
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import offsets
from offsets.layout import compact, compact_depends, identity
from offsets.layout.build_identity import BuildIdentity
from offsets import runtime
from offsets.errors import NoMatchingTable, TableError
from conftest import missing_input

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def fresh_runtime(monkeypatch, tmp_path):
    """No table chosen, no own tables, no autoscan, not strict; nothing left behind."""
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
        if runtime.earning(runtime.entry_build(e), me).by == "build-id":
            return e
    pytest.fail(f"no shipped table records this interpreter's build-id ({runtime.describe(me)}): run `make tables`")


def copy_table(tmp_path, entry, name="copy", binaries=(), depends=None, **build) -> Path:
    """A copy of a shipped compact table with its build identity changed (`inputs` merged), recording
    `binaries` (default none: then only its inputs can vouch for it), its dependency data changed
    by `depends(parts)` (compact_depends.parts' form) when given."""
    head, notes, rows = compact.read_parts(compact.COMPACT_DIR / entry["file"])
    b = dict(head["build"])
    inputs = dict(b["inputs"], **build.pop("inputs", {}))
    b.update(build, inputs=inputs, binaries=[list(x) for x in binaries])
    if depends is not None:
        notes["depends"] = depends(notes["depends"])
    out = tmp_path / f"{name}.jsonl"
    out.write_text(compact.text_of(dict(head, build=b), notes, rows))
    return out


def next_patch(e: dict) -> dict:
    """The identity fields of the next patch release after entry `e` (version and hexversion agree)."""
    hexversion = e["hexversion"] + 0x100
    return {"hexversion": hexversion, "version": f"{hexversion >> 24}.{(hexversion >> 16) & 0xFF}.{(hexversion >> 8) & 0xFF}"}


def as_entry(path: Path) -> dict:
    t = runtime.load_compact(str(path))
    b = t.build
    return {"name": t.name, "file": str(path), "version": b.version, "hexversion": b.hexversion,
            "config": b.config, "triple": b.triple, "pointer_size": b.pointer_size,
            "vendor": b.vendor, "defines": b.defines, "inputs": b.inputs, "own": True,
            "build_ids": list(b.build_ids)}


def unproven_field(t, struct="PyInterpreterState") -> str:
    """A field of `struct` the live check does not read (so only the table's identity can vouch for it)."""
    key = t.resolve_struct(struct)
    t.prove()
    for path in t.fields(key):
        if (key, path) not in t.earning.proven:
            return f"{struct}.{path}"
    pytest.fail(f"the live check read every field of {struct}")


def chosen(tmp_path, **copy) -> tuple:
    """(Loaded, Match) of the runtime's choice with only a changed copy of the running table."""
    t, m = runtime.select(runtime.running_identity(), [as_entry(copy_table(tmp_path, running_entry(), **copy))],
                          load=runtime._load_entry)
    runtime.RUNTIME.install(t, m)
    return t, m


def set_of(t, struct: str):
    return t.dependency_set(t.resolve_struct(struct))


def other_digest(file: str):
    """A change to compact_depends.parts: the digest of installed `file` is another text's."""
    def change(parts):
        files = parts["files"].split()
        i = files.index(file) * 16
        parts["digests"] = parts["digests"][:i] + "0" * 16 + parts["digests"][i + 16:]
        return parts
    return change


def other_value(macro: str, value):
    def change(parts):
        leaves = parts["leaves"].split()
        parts["values"][leaves.index(macro)] = value
        return parts
    return change


# ---------------------------------------------------------------- exact
def test_the_running_interpreter_is_exact_by_its_binarys_build_id():
    """Truth for the build-id: pyelftools reading the note of the libpython sysconfig names."""
    import sysconfig

    from elftools.elf.elffile import ELFFile

    e = running_entry()
    m = offsets.build()
    assert (m.kind, m.table) == ("exact", e["name"]) and "build-id" in m.detail
    lib = Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("INSTSONAME")
    with open(lib, "rb") as f:
        note = next(n for sec in ELFFile(f).iter_sections() if sec.header.sh_type == "SHT_NOTE"
                    for n in sec.iter_notes() if n["n_type"] == "NT_GNU_BUILD_ID")
    assert runtime.running_identity().build_id == note["n_desc"]
    f = offsets.field("PyTupleObject.ob_item")
    assert f.earned == "exact" and f.offset == tuple.__basicsize__          # truth: the interpreter
    assert m.earned("PyInterpreterState") == "exact"
    lst = [1, 2, 3]
    assert ctypes.c_ssize_t.from_address(id(lst) + offsets.get("PyListObject.ob_base.ob_size")).value == 3


def test_without_its_build_id_each_struct_is_exact_by_its_dependency_set(tmp_path):
    """The same table recording no binary: only the installed headers vouch, struct by struct."""
    t, m = chosen(tmp_path)
    assert m.kind == "exact" and t.earning.by == "inputs"
    assert offsets.field("PyTupleObject.ob_item").earned == "exact" and offsets.get("PyTupleObject.ob_item") == \
        tuple.__basicsize__
    assert m.earned("PyInterpreterState") == "exact" and set_of(t, "PyInterpreterState") is not None


def test_a_header_a_struct_reaches_that_differs_makes_it_not_exact_and_no_other(tmp_path):
    """The digest of cpython/tupleobject.h is another text's: PyTupleObject, whose set holds that
    file, is answered only where the live check read it; PyListObject's set does not hold it."""
    t, m = chosen(tmp_path, depends=other_digest("Include/cpython/tupleobject.h"))
    assert "Include/cpython/tupleobject.h" in set_of(t, "PyTupleObject")[1]
    assert "Include/cpython/tupleobject.h" not in set_of(t, "PyListObject")[1]
    assert offsets.field("PyListObject.ob_item").earned == "exact"
    assert offsets.field("PyTupleObject.ob_item").earned == "proven"        # the live check reads a tuple's items
    assert offsets.get("PyTupleObject.ob_item") == tuple.__basicsize__
    # its size: tuple's own record says tp_basicsize is sizeof(PyTupleObject) - sizeof(PyObject *)
    assert offsets.sizeof("PyTupleObject") == tuple.__basicsize__ + tuple.__itemsize__
    assert ("PyTupleObject", None) in t.earning.proven
    assert "depends on Include/cpython/tupleobject.h, which is another text" in \
        t.earning.why_not(t, t.resolve_struct("PyTupleObject"))


def test_a_leaf_macro_that_differs_makes_the_structs_that_depend_on_it_not_exact(tmp_path):
    """WITH_FREELISTS of another value in the table (tested by the freelist states
    PyInterpreterState holds by value; truth for this build's: sysconfig): what depends on it is
    not exact; a struct whose set lacks it (PyObject) stays exact."""
    import sysconfig

    mine = sysconfig.get_config_var("WITH_FREELISTS")
    t, m = chosen(tmp_path, depends=other_value("WITH_FREELISTS", "2"))
    assert "WITH_FREELISTS" in set_of(t, "PyInterpreterState")[0] and "WITH_FREELISTS" not in set_of(t, "PyObject")[0]
    assert not t.exact(t.resolve_struct("PyInterpreterState")) and t.exact(t.resolve_struct("PyObject"))
    here = "undefined" if mine is None else f"defined as '{mine}'"
    with pytest.raises(NoMatchingTable, match=rf"depends on the macro WITH_FREELISTS, which is defined as '2' in the "
                                              rf"table and {here} in this build"):
        offsets.get(unproven_field(t))


def test_a_pyconfig_constant_depends_on_itself(tmp_path):
    """HAVE_FORK is 1 in this build's pyconfig.h (truth: sysconfig): its constant is exact here; a
    table giving it another value is never taken for it."""
    import sysconfig

    assert sysconfig.get_config_var("HAVE_FORK") == 1
    t, m = chosen(tmp_path)
    assert offsets.constant("HAVE_FORK") == 1 and offsets.constant_info("HAVE_FORK").earned == "exact"
    head, notes, rows = compact.read_parts(compact.COMPACT_DIR / running_entry()["file"])
    row = next(r for r in notes["constants"] if r[0] == "HAVE_FORK")
    row[1] = 2
    other = tmp_path / "fork2.jsonl"
    b = dict(head["build"], binaries=[])
    other.write_text(compact.text_of(dict(head, build=b), notes, rows))
    t, m = runtime.select(runtime.running_identity(), [as_entry(other)], load=runtime._load_entry)
    runtime.RUNTIME.install(t, m)
    with pytest.raises(NoMatchingTable, match="HAVE_FORK"):
        offsets.constant("HAVE_FORK")


def test_a_table_without_defines_is_not_exact_by_its_inputs():
    """Unknown core defines (a table made without the build's Makefile or sysconfig flags): only a
    build-id vouches for it."""
    me = runtime.running_identity().replace(build_id=None)
    b = runtime.entry_build(running_entry()).replace(defines=None)
    earn = runtime.earning(b, me)
    assert not earn.exact and "defines" in earn.why


def test_a_vendor_mismatch_leaves_only_source_dependent_structs_to_the_live_check(tmp_path):
    t, m = chosen(tmp_path, vendor="debian 9.9-1")
    assert m.kind == "exact"
    c_structs = [k for k in t.order if identity.source_dependent(t.row(k)[4], t.row(k)[5])]
    assert c_structs, "the running interpreter's table has no .c structs (DWARF-filled): make tables"
    assert offsets.field("PyListObject.ob_item").earned == "exact"
    if t.resolve_struct("listiterobject") in c_structs:      # a .c struct the live check reads
        assert offsets.field("listiterobject.it_index").earned == "proven"
    unread = next(k for k in c_structs if not any(p[0] == k for p in t.earning.proven) and t.fields(k))
    with pytest.raises(NoMatchingTable, match="debian 9.9-1"):
        offsets.get(f"{unread}.{next(iter(t.fields(unread)))}")


def test_a_table_without_dependency_data_is_exact_only_by_the_whole_builds_inputs(tmp_path):
    """A table made before dependency sets: every struct needs this build's whole pyconfig.h and
    headers (the digests its build records): the same ones are exact, one other pyconfig.h none."""
    drop = lambda parts: None        # noqa: E731
    t, m = chosen(tmp_path, depends=drop)
    assert t.depends is None and offsets.field("PyListObject.ob_item").earned == "exact"
    t, m = chosen(tmp_path, name="other", depends=drop, inputs={"pyconfig_h": "sha256:" + "1" * 64})
    assert offsets.field("PyTupleObject.ob_item").earned == "proven"
    with pytest.raises(NoMatchingTable, match="pyconfig.h, headers or core defines are not the table's"):
        offsets.get(unproven_field(t))


@pytest.mark.parametrize("table,mine", [("debian 3.13.5-2", "debian 3.13.5-2+deb13u5"),
                                        ("debian 3.13.5-2+deb13u5", "debian 3.13.5-2"),
                                        ("debian 3.13.5-2", "debian 3.13.5-3")])
def test_each_package_version_is_its_own_vendor_for_c_structs(table, mine):
    """A security update (+deb13u5) or a new Debian revision may patch a `.c` file: only the same
    package version vouches for `.c` structs (headers still compare by their sets)."""
    me = runtime.running_identity().replace(vendor=mine, build_id=None)
    earn = runtime.earning(runtime.entry_build(running_entry()).replace(vendor=table), me)
    assert earn.by == "inputs" and not earn.same_vendor
    assert runtime.earning(runtime.entry_build(running_entry()).replace(vendor=mine), me).same_vendor


def shipped(name: str) -> dict:
    e = next((e for e in entries() if e["name"] == name), None)
    if e is None:
        pytest.fail(f"no shipped table {name}: run `make tables`")
    return e


def test_a_struct_dwarf_filled_from_a_tree_header_is_not_vouched_for_by_installed_headers():
    """pyenv 3.11.7's table has `AugOperator` from its libpython's DWARF, defined in Parser/pegen.h,
    a header of the source tree that is never installed (the table's own record: origin dwarf):
    under another vendor the installed headers cannot vouch for it, as for a `.c` struct."""
    e = shipped("cpython-3.11.7-x86_64-linux-gnu")
    me = runtime.running_identity().replace(vendor="debian 3.11.7-1", build_id=None)
    if me.version != e["version"]:
        missing_input("the tests run on pyenv's 3.11.7 (make test's venv): this is another interpreter")
    t, m = runtime.select(me, [e], load=runtime.load_shipped)
    assert m.kind == "exact" and not t.earning.same_vendor
    key = t.resolve_struct("AugOperator")
    assert t.row(key)[4].startswith("Parser/pegen.h:") and t.row(key)[5] == "dwarf"
    assert not t.exact(key) and t.exact(t.resolve_struct("PyListObject"))
    runtime.RUNTIME.install(t, m)
    with pytest.raises(NoMatchingTable, match="AugOperator.kind: not answered"):
        offsets.get("AugOperator.kind")


def test_debug_interpreters_match_debug_tables_whatever_sysconfig_says_of_py_ref_debug():
    """pyport.h: Py_DEBUG implies Py_REF_DEBUG. The compiler saw both in every shipped debug table;
    a debug interpreter's sysconfig may list only Py_DEBUG."""
    debug = [e for e in entries() if e["config"].get("Py_DEBUG")]
    assert debug and all(e["config"]["Py_REF_DEBUG"] for e in debug)
    e = debug[0]
    me = BuildIdentity(e["version"], e["hexversion"], {"Py_DEBUG": True}, e["triple"], e["pointer_size"], e["vendor"])
    assert runtime.earning(runtime.entry_build(e), me).exact


@pytest.mark.parametrize("info,spelled", [((3, 14, 0, "candidate", 1), "3.14.0rc1"), ((3, 13, 0, "beta", 2), "3.13.0b2"),
                                          ((3, 15, 0, "alpha", 7), "3.15.0a7"), ((3, 13, 18, "final", 0), "3.13.18")])
def test_pre_release_versions_are_spelled_as_cpython_spells_them(info, spelled):
    """Truth: PY_VERSION of those releases' patchlevel.h."""
    assert identity.version_string(info) == spelled


# ---------------------------------------------------------------- proven and refused
def test_another_patch_level_answers_only_what_the_live_check_read():
    e = running_entry()
    me = runtime.running_identity().replace(version="later", hexversion=e["hexversion"] + 0x100)
    t, m = runtime.select(me, [e], load=runtime.load_shipped)
    assert m.kind == "proven" and m.check.ok and "answers only" in m.detail
    assert ("PyTupleObject" in {k for k, _ in t.earning.proven})
    assert not t.exact("PyTupleObject")
    assert t.earned(t.resolve_struct("PyTupleObject"), "ob_item") == "proven"
    assert t.earned(t.resolve_struct("PyInterpreterState"), unproven_field(t).split(".", 1)[1]) is None


def test_a_failed_live_check_falls_through_to_the_next_candidate(tmp_path):
    e = running_entry()
    head, notes, rows = compact.read_parts(compact.COMPACT_DIR / e["file"])
    next(f for f in rows["PyListObject"][6] if f[0] == "ob_item")[1] += 8
    bad = tmp_path / "bad.jsonl"
    bad.write_text(compact.text_of(dict(head, build=dict(head["build"], **next_patch(e))), notes, rows))
    prev = e["hexversion"] - 0x100
    good = as_entry(copy_table(tmp_path, e, name="good", hexversion=prev,
                               version=f"{prev >> 24}.{(prev >> 16) & 0xFF}.{(prev >> 8) & 0xFF}"))
    me = runtime.running_identity().replace(version="later", hexversion=e["hexversion"] + 0x100)
    t, m = runtime.select(me, [as_entry(bad), good], load=runtime._load_entry)
    assert m.kind == "proven" and t.source == good["file"]


def test_a_failed_live_check_proves_nothing(tmp_path):
    """The live check reads a list iterator's it_index right (3) and its it_seq wrong (the table was
    tampered): a check that failed vouches for no field, it_index included."""
    from test_runtime import tampered

    e = running_entry()
    key = runtime._load_entry(e).resolve_struct("listiterobject")
    t = runtime.load_compact(str(tampered(tmp_path, e, key, "it_seq", delta=-8)))   # onto it_index
    t.earning = runtime.earning(runtime.entry_build(e).replace(**next_patch(e)), runtime.running_identity())
    runtime.RUNTIME.install(t, runtime.Match(t.name, "user", "a tampered table, not this build's", t.source, t.build, loaded=t))
    with pytest.raises(NoMatchingTable, match="listiterobject.it_index: not answered"):
        offsets.get("listiterobject.it_index")
    check = t.earning.check
    assert not check.ok and any("it_seq" in f for f in check.failed)
    assert (key, "it_index") in check.proven        # read right: only the failed check keeps it out


def test_one_proven_field_does_not_answer_its_struct():
    """A table of another patch level answers only the fields the live check read, even once one field
    of the same struct was answered (and cached)."""
    e = running_entry()
    me = runtime.running_identity().replace(version="later", hexversion=e["hexversion"] + 0x100)
    t, m = runtime.select(me, [e], load=runtime.load_shipped)
    runtime.RUNTIME.install(t, m)
    key = t.resolve_struct("PyInterpreterState")
    proven = next(p for k, p in sorted(t.earning.proven, key=str) if k == key and p)
    assert offsets.get(f"PyInterpreterState.{proven}") == t.fields(key)[proven][0]
    with pytest.raises(NoMatchingTable, match="not answered"):
        offsets.get(unproven_field(t))


def test_offsets_strict_through_get_refuses_the_next_patch_levels_table(monkeypatch):
    """OFFSETS_STRICT=1 on a build one patch level past a shipped table: `offsets.get` refuses, where
    without it the live check would have proven the answer."""
    e = running_entry()
    me = runtime.running_identity().replace(version="later", hexversion=e["hexversion"] + 0x100)
    monkeypatch.setattr(runtime.RUNTIME, "identity", lambda: me)
    monkeypatch.setattr(runtime.RUNTIME, "index", lambda: {**runtime.tables.shipped_index(), "tables": [e]})
    monkeypatch.setenv("OFFSETS_STRICT", "1")
    with pytest.raises(NoMatchingTable, match="OFFSETS_STRICT allows exact tables only"):
        offsets.get("PyTupleObject.ob_item")
    monkeypatch.setenv("OFFSETS_STRICT", "0")
    runtime.reset()
    assert offsets.get("PyTupleObject.ob_item") == tuple.__basicsize__ and offsets.build().kind == "proven"


@pytest.mark.parametrize("value,strict", [("", False), ("0", False), ("false", False), ("No", False),
                                          ("1", True), ("yes", True), ("true", True), ("anything", True)])
def test_offsets_strict_values(monkeypatch, value, strict):
    monkeypatch.setenv("OFFSETS_STRICT", value)
    assert runtime.strict_mode() is strict


def test_strict_mode_refuses_what_is_only_proven(monkeypatch):
    e = running_entry()
    me = runtime.running_identity().replace(hexversion=e["hexversion"] + 0x100)
    with pytest.raises(NoMatchingTable, match="OFFSETS_STRICT allows exact tables only"):
        runtime.select(me, [e], load=runtime.load_shipped, strict=True)
    monkeypatch.setenv("OFFSETS_STRICT", "1")
    assert offsets.build().kind == "exact"


# ---------------------------------------------------------------- use_table
def test_use_table_of_another_patch_level_answers_only_proven_fields(tmp_path):
    e = running_entry()
    other = copy_table(tmp_path, e, **next_patch(e))
    m = offsets.use_table(other)
    assert m.kind == "user" and "not exact" in m.detail
    assert offsets.get("PyTupleObject.ob_item") == tuple.__basicsize__
    t = runtime.RUNTIME.current()
    with pytest.raises(NoMatchingTable):
        offsets.get(unproven_field(t))


def test_use_table_of_other_headers_answers_only_proven_fields(tmp_path):
    e = running_entry()
    other = copy_table(tmp_path, e, vendor="debian 3.0-1", depends=other_digest("Include/cpython/pystate.h"))
    offsets.use_table(other)
    with pytest.raises(NoMatchingTable, match="cpython/pystate.h, which is another text"):
        offsets.get(unproven_field(runtime.RUNTIME.current(), "PyThreadState"))


@pytest.mark.parametrize("change", [{"target": {"triple": "aarch64-linux-gnu", "pointer_size": 8}},
                                    {"target": {"triple": "i686-linux-gnu", "pointer_size": 4}},
                                    {"config": {"Py_DEBUG": True, "Py_REF_DEBUG": True}},
                                    {"config": {"Py_GIL_DISABLED": True}}])
def test_use_table_refuses_another_cpu_pointer_size_or_flags(tmp_path, change):
    e = running_entry()
    with pytest.raises(TableError, match="not for this CPython"):
        offsets.use_table(copy_table(tmp_path, e, **change))


def test_use_table_refuses_a_non_exact_table_in_strict_mode(tmp_path, monkeypatch):
    e = running_entry()
    monkeypatch.setenv("OFFSETS_STRICT", "yes")
    with pytest.raises(TableError, match="OFFSETS_STRICT"):
        offsets.use_table(copy_table(tmp_path, e, **next_patch(e)))


# ---------------------------------------------------------------- own tables
SHIPPED_HIDDEN = """
import json, sys
from offsets import runtime
runtime.RUNTIME.index = lambda: {"tables": [], "aliases": {}}
m = runtime.build()
f = runtime.field("PyTupleObject.ob_item")
print(json.dumps({"kind": m.kind, "detail": m.detail, "table": m.table, "offset": f.offset, "earned": f.earned,
                  "truth": tuple.__basicsize__}))
"""


def run_hidden(env_extra: dict):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    return subprocess.run([sys.executable, "-c", SHIPPED_HIDDEN], capture_output=True, text=True, env=env, cwd=ROOT)


def test_scan_install_makes_the_table_the_runtime_uses(tmp_path):
    own = tmp_path / "tables"
    scan = subprocess.run([sys.executable, "-m", "offsets", "scan", "--install", "--tables", str(own), "--no-dwarf",
                           "-q"], capture_output=True, text=True, cwd=ROOT)
    assert scan.returncode == 0, scan.stderr
    [installed] = own.glob("*.jsonl")
    out = run_hidden({"OFFSETS_TABLES": str(own), "OFFSETS_AUTOSCAN": "0"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["kind"] == "exact" and got["earned"] == "exact" and got["offset"] == got["truth"]
    assert installed.name.startswith(got["table"])


def test_autoscan_makes_this_builds_table_once(tmp_path):
    own = tmp_path / "tables"
    first = run_hidden({"OFFSETS_TABLES": str(own), "OFFSETS_AUTOSCAN": "1"})
    assert first.returncode == 0, first.stderr
    got = json.loads(first.stdout)
    assert got["kind"] == "exact" and "made from this interpreter's own headers now" in got["detail"]
    assert got["offset"] == got["truth"] and len(list(own.glob("*.jsonl"))) == 1
    second = json.loads(run_hidden({"OFFSETS_TABLES": str(own), "OFFSETS_AUTOSCAN": "1"}).stdout)
    assert second["kind"] == "exact" and "made" not in second["detail"]
    off = run_hidden({"OFFSETS_TABLES": str(tmp_path / "none"), "OFFSETS_AUTOSCAN": "0"})
    assert off.returncode != 0 and "NoMatchingTable" in off.stderr and "--install" in off.stderr


# ---------------------------------------------------------------- threads
def test_no_thread_sees_the_old_table_once_use_table_returns(tmp_path):
    """Hammering threads refill the answer cache while the main thread switches tables; after each
    use_table() returns, the answer must be the new table's."""
    e = running_entry()
    t = runtime.load_shipped(e)
    name = unproven_field(t)
    path = name.split(".", 1)[1]
    key = t.resolve_struct("PyInterpreterState")
    head, notes, rows = compact.read_parts(compact.COMPACT_DIR / e["file"])
    row = rows[key]
    field = next(f for f in row[6] if f[0] == path)
    truth_a = field[1]
    field[1] += 8 if field[1] + field[2] + 8 <= row[2] else -8
    truth_b = field[1]
    b = tmp_path / "b.jsonl"
    b.write_text(compact.text_of(head, notes, rows))
    a = compact.COMPACT_DIR / e["file"]
    stop, errors = threading.Event(), []

    def hammer():
        while not stop.is_set():
            try:
                offsets.get(name)
            except Exception as err:       # noqa: BLE001 - any failure is the test's failure
                errors.append(repr(err))
                return

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)     # more interleavings, and the switching thread waits less for the GIL
    for th in threads:
        th.start()
    wrong = 0
    try:
        for n in range(150):
            which, truth = (b, truth_b) if n % 2 else (a, truth_a)
            offsets.use_table(which, verify=False)
            wrong += offsets.get(name) != truth
    finally:
        stop.set()
        for th in threads:
            th.join()
        sys.setswitchinterval(interval)
    assert not errors and wrong == 0


COLD_START = """
import json, threading, offsets
barrier, out = threading.Barrier(16), []
def first():
    barrier.wait()
    try:
        out.append(offsets.get("PyTupleObject.ob_item"))
    except Exception as e:
        out.append(repr(e))
ts = [threading.Thread(target=first) for _ in range(16)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps(out))
"""


def test_a_cold_first_use_from_16_threads_never_fails():
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", COLD_START], capture_output=True, text=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == [tuple.__basicsize__] * 16


def without(tmp_path, entry, struct: str) -> dict:
    """An exact copy of a shipped table that lacks one struct."""
    head, notes, rows = compact.read_parts(compact.COMPACT_DIR / entry["file"])
    del rows[struct]
    notes["names"] = {a: k for a, k in notes["names"].items() if k != struct}
    out = tmp_path / f"without-{struct}.jsonl"
    out.write_text(compact.text_of(head, notes, rows))
    return as_entry(out)


def test_exact_tables_answer_for_each_other_what_one_lacks(tmp_path):
    e = running_entry()
    a, b = without(tmp_path, e, "PyListObject"), without(tmp_path, e, "PyTupleObject")
    t, m = runtime.select(runtime.running_identity(), [a, b], load=runtime._load_entry)
    runtime.RUNTIME.install(t, m)
    assert offsets.get("PyTupleObject.ob_item") == tuple.__basicsize__        # truth: the interpreter
    assert offsets.sizeof("PyListObject") == list.__basicsize__
    assert offsets.field("PyListObject.ob_item").earned == "exact"


def test_without_headers_only_the_same_distributor_package_is_exact():
    """No headers installed (a slim container) and no build-id known: the package version the
    distributor recorded is the identity; upstream builds and other package versions are never exact."""
    e = running_entry()
    b = runtime.entry_build(dict(e, vendor="debian 3.13.18-1"))
    me = runtime.running_identity().replace(files=None, build_id=None)
    assert runtime.earning(b, me.replace(vendor="debian 3.13.18-1")).exact
    assert not runtime.earning(b, me.replace(vendor="debian 3.13.18-2")).exact
    assert not runtime.earning(b, me.replace(vendor=None)).exact
    assert not runtime.earning(runtime.entry_build(e), me.replace(vendor=None)).exact       # upstream: digests only


def test_the_vendor_comes_from_the_distributors_own_record(tmp_path):
    """Debian's changelog beside the prefix names the package version (dpkg -x and apt alike)."""
    import gzip

    doc = tmp_path / "usr" / "share" / "doc" / "libpython3.13-minimal"
    doc.mkdir(parents=True)
    with gzip.open(doc / "changelog.Debian.gz", "wt") as f:
        f.write("python3.13 (3.13.18-1) unstable; urgency=medium\n\n  * New upstream version.\n")
    assert identity.vendor_evidence(str(tmp_path / "usr"), "3.13")[0] == "debian 3.13.18-1"
    assert identity.vendor_evidence(str(tmp_path / "nothing"), "3.13")[0] is None


# ---------------------------------------------------------------- each rule still refuses (docs/identity.md, "What holds each rule")
# Each test below fails when its rule is loosened by one step (the loosening is named in its
# docstring and in docs/identity.md's table); each runs alone on a fresh cache.

@pytest.mark.parametrize("change,differs", [
    ({"inputs": {"headers": "sha256:" + "2" * 64}}, "headers"),
    ({"defines": {"NDEBUG": "", "_Py_JIT": "", "_Py_TIER2": "3"}}, "defines"),
], ids=["headers", "defines"])
def test_a_table_without_dependency_data_needs_this_builds_headers_and_core_defines(tmp_path, change, differs):
    """The whole-build rule (`Earning.whole`) compares pyconfig.h, every header and the core's
    defines. Truth: this interpreter's own installed headers and its sysconfig flags (`NDEBUG` alone
    for pyenv; `_Py_JIT _Py_TIER2=3` is what Debian's 3.15 adds), against a copy of its own table
    without dependency data whose pyconfig.h digest is the same and whose headers digest or defines
    are another build's. Loosenings caught: dropping the headers from the comparison, or dropping
    the defines."""
    drop = lambda parts: None        # noqa: E731
    me = runtime.running_identity()
    mine = me.whole_inputs()
    assert mine and mine["defines"] != change.get("defines", mine["defines"]) or differs == "headers"
    t, m = chosen(tmp_path, depends=drop, **change)
    assert t.depends is None and t.build.inputs["pyconfig_h"] == mine["pyconfig_h"]
    assert not t.exact(t.resolve_struct("PyTupleObject"))
    assert offsets.field("PyTupleObject.ob_item").earned == "proven"       # the live check read it
    with pytest.raises(NoMatchingTable, match="pyconfig.h, headers or core defines are not the table's"):
        offsets.get(unproven_field(t))


def include_without(tmp_path, header: str) -> Path:
    """A copy of this interpreter's installed include directory without `header`."""
    import shutil

    me = runtime.running_identity()
    copy = tmp_path / "include"
    shutil.copytree(me.where["include"], copy, symlinks=False)
    (copy / header).unlink()
    return copy


def test_a_header_the_build_lacks_makes_the_structs_that_need_it_not_exact(tmp_path):
    """A build whose installed headers lack `cpython/tupleobject.h` (truth: a copy of this
    interpreter's own include directory, without that file) is not vouched for by a table whose
    `PyTupleObject` set names it; `PyObject`, whose set does not, stays exact. Loosening caught: a
    header the build lacks counted as the same (`same_set`: `digest(...) in (theirs, None)`)."""
    me = runtime.running_identity()
    include = include_without(tmp_path, "cpython/tupleobject.h")
    mine = me.replace(build_id=None, files=identity.InstalledFiles(str(include), me.where["cflags"], me.where["multiarch"] or None))
    t, m = runtime.select(mine, [running_entry()], load=runtime.load_shipped)
    assert m.kind == "exact" and t.earning.by == "inputs"
    tuple_key, object_key = t.resolve_struct("PyTupleObject"), t.resolve_struct("PyObject")
    assert "Include/cpython/tupleobject.h" in set_of(t, "PyTupleObject")[1]
    assert "Include/cpython/tupleobject.h" not in set_of(t, "PyObject")[1]
    assert not t.exact(tuple_key) and t.exact(object_key)
    assert "cpython/tupleobject.h, which is missing in this build's headers" in t.earning.why_not(t, tuple_key)


def with_source_set(struct: str):
    """A change to compact_depends.parts: `struct` gets a set of its own, its old one plus files of
    the source tree (the `+` of a set that holds, say, `Objects/listobject.c`)."""
    def change(parts):
        old = parts["struct_sets"][struct]
        parts["sets"].append(f"^{old}|+")
        parts["struct_sets"][struct] = compact_depends.b36(len(parts["sets"]) - 1)
        return parts
    return change


@pytest.mark.parametrize("vendor,exact", [(None, True), ("debian 9.9-1", False)], ids=["same-vendor", "other-vendor"])
def test_a_set_with_source_files_needs_the_same_vendor(tmp_path, vendor, exact):
    """A dependency set that holds files of the source tree is vouched for only by the same vendor
    (only it knows those files' text), whatever the installed headers say. Truth: this interpreter's
    own installed headers, which are the table's (its `PyTupleObject` stays exact either way); the
    synthetic set is `PyListObject`'s own plus a source file. Loosening caught: dropping `if source
    and not self.same_vendor: return False` (before, only a test of Debian's own /usr/bin/python3.11
    caught it)."""
    change = {"vendor": vendor} if vendor else {}
    t, m = chosen(tmp_path, depends=with_source_set(runtime._load_entry(running_entry()).resolve_struct("PyListObject")),
                  **change)
    assert m.kind == "exact" and set_of(t, "PyListObject")[2] is True
    assert t.exact(t.resolve_struct("PyTupleObject"))
    assert t.exact(t.resolve_struct("PyListObject")) is exact
    if not exact:
        assert "depends on files of the source tree" in t.earning.why_not(t, t.resolve_struct("PyListObject"))


def test_a_proof_kept_for_one_table_is_not_used_for_another(tmp_path, monkeypatch):
    """The proof cache keys a passing check by the table's file and pool too: table A (this
    interpreter's own table, as the next patch level) passes and is kept; table B (the same with
    `PyListObject.ob_item` moved by 8: the live check reads a list's items there, truth: the list
    object itself) must be checked afresh, and fails. Fresh cache, one test. Loosening caught:
    `proof_cache.key` without the table's file and pool."""
    from offsets.runtime import proof_cache

    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path / "cache"))
    e = running_entry()
    me = runtime.running_identity()
    later = runtime.entry_build(e).replace(**next_patch(e))
    a = runtime.load_compact(str(copy_table(tmp_path, e, name="a", **next_patch(e))))
    head, notes, rows = compact.read_parts(compact.COMPACT_DIR / e["file"])
    next(f for f in rows["PyListObject"][6] if f[0] == "ob_item")[1] += 8
    b_path = tmp_path / "b.jsonl"
    b_path.write_text(compact.text_of(dict(head, build=dict(head["build"], **next_patch(e))), notes, rows))
    b = runtime.load_compact(str(b_path))
    for t in (a, b):
        t.earning = runtime.earning(later, me)
    first = proof_cache.check(a)
    assert first.ok and not getattr(first, "cached", False)
    assert list((tmp_path / "cache" / "proofs").glob("*.json")), "a passing check is kept"
    assert proof_cache.check(a).cached                       # the cache works: A reads its own proof back
    other = proof_cache.check(b)
    assert not getattr(other, "cached", False) and not other.ok


@pytest.mark.parametrize("key", ["version", "hexversion", "config", "triple", "pointer_size"])
def test_each_identity_key_is_compared_by_the_one_rule(key):
    """A table that differs from this build in one key of its identity alone is for another build:
    nothing of it is exact, whatever its digests (truth: this interpreter's sys.version_info,
    sysconfig's flags and its ELF's machine and pointer size, as running_identity reads them).
    Loosening caught: `earning()` without that key."""
    me = runtime.running_identity()
    b = runtime.entry_build(running_entry())
    other = {"version": b.replace(version=b.version + "+"), "hexversion": b.replace(hexversion=b.hexversion + 1),
             "config": b.replace(config=dict(b.config, Py_TRACE_REFS=True)),
             "triple": b.replace(triple="aarch64-linux-gnu"),
             "pointer_size": b.replace(pointer_size=4)}[key]
    assert runtime.earning(b, me).exact
    earn = runtime.earning(other, me)
    assert not earn.exact and "it is for" in earn.why


def test_another_binarys_build_id_vouches_for_nothing(tmp_path):
    """A table that records some other binary's build-id is exact by this build's inputs at most: a
    struct whose header differs here is not exact (truth: this interpreter's own build-id, read from
    its libpython's image, and its own installed headers). Loosening caught: any recorded build-id
    taken for this binary's."""
    me = runtime.running_identity()
    assert me.build_id, "this interpreter's build-id is needed: its libpython has a GNU build-id note"
    other = "".join("0123456789abcdef"[(int(c, 16) + 1) % 16] for c in me.build_id)
    t, m = chosen(tmp_path, binaries=[(other, "lib/libpython", "a unit test")], depends=other_digest("Include/cpython/pystate.h"))
    assert t.earning.by == "inputs"
    assert not t.exact(t.resolve_struct("PyThreadState")) and t.exact(t.resolve_struct("PyListObject"))


def test_an_upstream_build_without_headers_is_never_exact_by_package():
    """Without headers and build-id, a table whose vendor is python.org's (`upstream`, said in so many
    words) is not vouched for by the same word: upstream is no package version, it pins no inputs.
    Loosening caught: the package rule without its `distributor != upstream` condition."""
    e = running_entry()
    me = runtime.running_identity().replace(files=None, build_id=None, vendor=identity.UPSTREAM)
    assert not runtime.earning(runtime.entry_build(dict(e, vendor=identity.UPSTREAM)), me).exact


def test_a_source_trees_constant_needs_the_same_vendor():
    """A constant of a `.c` file or a source-tree header (truth: where Debian's 3.13.5 sources define
    it, the table's record) is exact only for the same vendor, even where every input of the whole
    build is the same. Loosening caught: `Earning.constant` without the vendor."""
    from offsets.runtime import constants
    from offsets.runtime.earning import Earning

    t = runtime.load_shipped(shipped("cpython-3.13.5-debian-x86_64-linux-gnu"))
    row = next(r for r in constants.of(t).values() if not r.defined_in.startswith("Include/"))
    b = t.build
    whole = dict(b.inputs, defines=b.defines)
    for vendor, exact in ((b.vendor, True), ("debian 9.9-1", False)):
        earn = Earning("inputs", "a unit test of the rule", b, b.replace(inputs=whole, vendor=vendor))
        assert earn.constant(t, row) is exact, (vendor, row)


def test_a_proof_is_sought_only_among_tables_of_the_same_minor_flags_and_target():
    """The tables a live check may prove (`choice.near`) are of this interpreter's minor version,
    layout flags, triple and pointer size (truth: sys.version_info, sysconfig, the ELF's machine),
    though tables of other minors and CPUs are shipped. Loosening caught: `near` without the minor,
    or without flags and target."""
    import sysconfig

    from offsets.runtime import choice

    me = runtime.running_identity()
    every = entries()
    assert {e["hexversion"] >> 16 for e in every} - {me.hexversion >> 16}, "tables of other minors are shipped"
    assert {e["triple"] for e in every} - {me.triple}, "tables of other CPUs are shipped"
    found = choice.near(me, every)
    assert found
    for e in found:
        assert ((e["hexversion"] >> 24, (e["hexversion"] >> 16) & 0xFF) == sys.version_info[:2]
                and e["pointer_size"] == ctypes.sizeof(ctypes.c_void_p)
                and e["triple"].startswith(sysconfig.get_config_var("MULTIARCH").split("-")[0])
                and not e["config"].get("Py_DEBUG") and not e["config"].get("Py_GIL_DISABLED")), e["name"]


def with_leaf(name: str, value):
    return other_value(name, value)


def test_a_c_library_macro_that_differs_makes_its_structs_not_exact(tmp_path):
    """`*` in a set stands for pyconfig.h's C library macros (`_GNU_SOURCE`, `_FILE_OFFSET_BITS`):
    a table whose `_FILE_OFFSET_BITS` is another than this build's pyconfig.h says (truth: that file,
    as its text says) leaves the structs that hold a C library type not exact. Loosening caught: `*`
    read as no macro at all."""
    import sysconfig

    pyconfig = Path(sysconfig.get_config_h_filename()).read_text()
    assert re.search(r"^#define _FILE_OFFSET_BITS 64$", pyconfig, re.M)
    t, m = chosen(tmp_path, depends=with_leaf("_FILE_OFFSET_BITS", "32"))
    with_c_library = [k for k in t.order if set_of(t, k) and "_FILE_OFFSET_BITS" in set_of(t, k)[0]]
    assert with_c_library and not any(t.exact(k) for k in with_c_library)
    view = t.depends
    starred = [s for s in view._sets if s.split("|")[0].split()[:1] == ["*"]]
    assert starred, "the table's sets name the C library by `*`"


def test_a_set_built_on_one_with_source_files_has_them_too(tmp_path):
    """A set `^K|` built on set K, which holds source-tree files (`+`), holds them too: under another
    vendor the struct is not exact. Loosening caught: the `+` of a base set not carried."""
    key = runtime._load_entry(running_entry()).resolve_struct("PyListObject")

    def change(parts):
        parts = with_source_set(key)(parts)
        parts["sets"].append(f"^{parts['struct_sets'][key]}|")
        parts["struct_sets"][key] = compact_depends.b36(len(parts["sets"]) - 1)
        return parts

    t, m = chosen(tmp_path, depends=change, vendor="debian 9.9-1")
    assert set_of(t, "PyListObject")[2] is True and not t.exact(t.resolve_struct("PyListObject"))


def stored_proof(tmp_path, monkeypatch):
    """(table, proof_cache) with a passing live check of `table` (this interpreter's own table, as the
    next patch level) kept in a fresh cache."""
    from offsets.runtime import proof_cache

    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path / "cache"))
    e = running_entry()
    t = runtime.load_compact(str(copy_table(tmp_path, e, name="a", **next_patch(e))))
    t.earning = runtime.earning(runtime.entry_build(e).replace(**next_patch(e)), runtime.running_identity())
    assert proof_cache.check(t).ok and proof_cache.check(t).cached
    return t, proof_cache


def test_a_proof_kept_for_one_binary_is_not_used_for_another(tmp_path, monkeypatch):
    """A proof is a fact about one binary: with another file, or another build-id, named as the
    binary that holds the interpreter, the kept proof is not read back. Loosenings caught: the key
    without the binary's file, or without its build-id."""
    t, proof_cache = stored_proof(tmp_path, monkeypatch)
    binary, build_id = proof_cache.binary_of()
    other_file = tmp_path / "libpython-copy.so"
    other_file.write_bytes(b"\x7fELF another binary")
    for named in ((str(other_file), build_id), (binary, "f" * 40)):
        monkeypatch.setattr(proof_cache, "binary_of", lambda named=named: named)
        assert not getattr(proof_cache.check(t), "cached", False), named


def test_a_proof_kept_for_other_check_code_is_not_used(tmp_path, monkeypatch):
    """A proof is kept per version of the check's code: with one more file of code (what a new check
    module is), it is checked again. Loosening caught: the key without the code's bytes."""
    t, proof_cache = stored_proof(tmp_path, monkeypatch)
    extra = tmp_path / "live_new.py"
    extra.write_text("# a new check\n")
    files = proof_cache.code_files()
    monkeypatch.setattr(proof_cache, "code_files", lambda: files + [str(extra)])
    assert not getattr(proof_cache.check(t), "cached", False)


def test_a_proof_entry_of_another_key_is_a_miss(tmp_path, monkeypatch):
    """An entry is named by the first 32 digits of its key: one whose full key is another's, or one
    that holds a failed check, is not read back. Loosenings caught: `load` without the key's
    comparison, or reading back a failed check."""
    import json

    t, proof_cache = stored_proof(tmp_path, monkeypatch)
    k = proof_cache.key(t)
    [entry] = (tmp_path / "cache" / "proofs").glob("*.json")
    doc = json.loads(identity._read_memo(str(entry)))
    for changed in (dict(doc, key=k[:32] + "0" * 32), dict(doc, passed=doc["passed"][:1])):
        identity._write_memo(str(entry), json.dumps(changed).encode())      # whole, its digest right
        assert proof_cache.load(k) is None, changed["key"]


def test_a_file_of_a_base_set_that_differs_makes_the_sets_built_on_it_not_exact(tmp_path):
    """`PyListObject`'s set is written `^K|...`: what set K holds (`PyObject`'s, object.h among it)
    and its own files. A table whose digest of a file only the base set names is another text's
    leaves `PyListObject` not exact (truth: this interpreter's own installed headers, which are the
    table's but for that digest). Loosening caught: `^K` read as nothing."""
    t = runtime._load_entry(running_entry())
    key = t.resolve_struct("PyListObject")
    parts = compact.read_parts(compact.COMPACT_DIR / running_entry()["file"])[1]["depends"]
    own_text = parts["sets"][int(parts["struct_sets"][key], 36)]
    assert own_text.startswith("^")
    files = parts["files"].split()
    own_files = {files[int(i, 36)] for i in own_text.rstrip("+").split("|")[1].split()}
    inherited = sorted(set(set_of(t, "PyListObject")[1]) - own_files)
    assert "Include/object.h" in inherited
    t, m = chosen(tmp_path, depends=other_digest("Include/object.h"))
    assert not t.exact(t.resolve_struct("PyListObject"))


def test_a_struct_nothing_proves_is_refused():
    """A table of another patch level (this interpreter's own, as the next release) answers a struct
    only where the live check read it: a struct it read nothing of is 'refused', never 'proven (0
    fields)'. Loosening caught: `choice.earned_by` taking a table that has the name for one whose
    proof read it."""
    e = running_entry()
    me = runtime.running_identity().replace(version="later", hexversion=e["hexversion"] + 0x100)
    t, m = runtime.select(me, [e], load=runtime.load_shipped)
    runtime.RUNTIME.install(t, m)
    t.prove()
    read = {k for k, _ in t.earning.proven}
    unread = next(k for k in t.order if k not in read and t.fields(k))
    assert m.earned(unread) == "refused"
    assert m.earned("PyTupleObject").startswith("proven (")
