"""The compiler check on every pyenv build: gcc's offsetof/sizeof/_Alignof and bitfield positions,
read from the object file, against the scanner's table of the same headers; and the committed
tables in generated/ against a fresh scan."""
from __future__ import annotations

import dataclasses
import difflib

import pytest

import result_memo
from conftest import PYENV_MINORS, REPO, missing_input, missing_tool
from offsets.check import probe
from offsets.layout import table_yaml


#: The minors whose every header field `make test` has gcc compare (the oldest and the newest);
#: `make prove` the others (tests/prove/test_beyond_samples.py)
GCC_SAMPLE = (PYENV_MINORS[0], PYENV_MINORS[-1])


@pytest.mark.slow
@pytest.mark.parametrize("minor", GCC_SAMPLE)
def test_gcc_agrees_with_every_header_field(pyenv_scans, minor):
    exe, b, table = pyenv_scans.get(minor)
    report = probe.probe(table, b)
    print(f"\nCPython {table.build.version}: gcc compared {report.summary()}")
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:50]))
    header = probe.header_structs(table)
    assert report.structs == len(header) > 100
    assert report.fields == sum(len(s.fields) for s in header)
    # bitfields are checked too: PyASCIIObject.state's members exist on every 3.x
    state = [f for f in table.structs["PyASCIIObject"].fields if f.path.startswith("state.")]
    assert {"state.kind", "state.compact", "state.ascii"} <= {f.path for f in state}
    assert all(f.is_bitfield for f in state)
    assert {f"PyASCIIObject.{f.path}" for f in state} <= report.checked
    assert report.bitfields >= len(state)
    assert report.types > report.fields // 2     # field types are compared too (not bitfields, not untagged)


def _stale_parts(fresh, committed) -> list[str]:
    """What of `committed` a fresh header scan contradicts, when `make tables` added to the scan
    (private structs from DWARF or a source tree): every part the scan makes must be the scan's."""
    out = []
    for what in ("version", "hexversion", "config", "target"):
        if getattr(fresh.build, what) != getattr(committed.build, what):
            out.append(f"build.{what}")
    out += [f"build.inputs.{k}" for k, v in fresh.build.inputs.items() if v and committed.build.inputs.get(k) != v]
    if fresh.scanner != committed.scanner:
        out.append("scanner")
    headers = set(probe.header_structs(fresh))
    if committed.build.inputs.get("source"):   # a source tree: its own skipped list and conflicts
        kept = {k: s for k, s in committed.structs.items() if s.defined_in.startswith("Include/") and "@" not in k}
        out += [f"struct {k}" for k in sorted(set(kept) ^ {s.name for s in headers})]
        out += [f"struct {k}" for k in sorted(kept) if k in fresh.structs and fresh.structs[k] != kept[k]]
        return out
    for what in ("skipped", "conflicts"):
        if getattr(fresh, what) != getattr(committed, what):
            out.append(what)
    kept = {k: s for k, s in committed.structs.items() if s.origin == "clang"}
    out += [f"struct {k}" for k in sorted(set(kept) ^ set(fresh.structs))]
    out += [f"struct {k}" for k in sorted(kept) if k in fresh.structs and fresh.structs[k] != kept[k]]
    # every name the scan gives, as it gives it; DWARF adds the names a .c file's typedef gives a
    # header's struct (GCState for _gc_runtime_state), which no header scan has
    if any(committed.names.get(a) != t for a, t in fresh.names.items()):
        out.append("names")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("minor", PYENV_MINORS)
def test_committed_table_is_current(pyenv_scans, minor):
    exe, b, table = pyenv_scans.get(minor)
    path = REPO / "generated" / f"{table.build.table_name}.yaml"
    assert path.is_file(), f"generated/{path.name} is missing: run `make tables`"
    committed_text = path.read_text()
    fresh_text = table_yaml.dumps(table)
    if fresh_text == committed_text:
        return
    committed = table_yaml.loads(committed_text, str(path))
    added = committed.build.inputs.get("source") or any(s.origin != "clang" for s in committed.structs.values())
    stale = _stale_parts(table, committed) if added else ["the text"]
    if stale:
        diff = "".join(list(difflib.unified_diff(committed_text.splitlines(True), fresh_text.splitlines(True),
                                                 f"generated/{path.name}", "fresh scan"))[:40])
        pytest.fail(f"generated/{path.name} differs from a fresh scan of {exe} in {', '.join(stale[:8])}: "
                    f"run `make tables`\n{diff}")


def _altered(table, struct, path, **changes):
    s = table.structs[struct]
    fields = tuple(dataclasses.replace(f, **changes) if f.path == path else f for f in s.fields)
    structs = dict(table.structs)
    structs[struct] = dataclasses.replace(s, fields=fields)
    return dataclasses.replace(table, structs=structs)


def _some_build(pyenv_scans):
    for minor in ("3.11", "3.12", "3.10", "3.13", "3.9", "3.8", "3.7", "3.6"):
        try:
            return pyenv_scans.get(minor)
        except pytest.skip.Exception:
            continue
    missing_input("pyenv has no CPython at all")


@pytest.mark.slow
def test_probe_reports_exactly_the_altered_numbers(pyenv_scans):
    exe, b, table = _some_build(pyenv_scans)
    ob_item = table.structs["PyListObject"].field("ob_item")
    kind = table.structs["PyASCIIObject"].field("state.kind")
    bad = _altered(table, "PyListObject", "ob_item", offset=ob_item.offset - 8)
    bad = _altered(bad, "PyASCIIObject", "state.kind", bit_offset=kind.bit_offset + 1)
    bad = dataclasses.replace(bad, structs={**bad.structs, "PyFloatObject": dataclasses.replace(
        bad.structs["PyFloatObject"], size=bad.structs["PyFloatObject"].size + 8)})
    bad = _altered(bad, "PyTypeObject", "tp_name", type="char *")            # it is const char *
    bad = _altered(bad, "PyTypeObject", "tp_doc", type="no_such_type_t")
    ob_item = bad.structs["PyTupleObject"].field("ob_item")
    bad = _altered(bad, "PyTupleObject", "ob_item", array_len=ob_item.array_len + 1)
    report = probe.probe(bad, b)
    got = sorted(map(str, report.mismatches))
    lo = 8 * kind.offset + kind.bit_offset
    assert got == sorted([
        "PyTypeObject.tp_name: table says type 'char *', gcc says a different type",
        "PyTypeObject.tp_doc: table says type 'no_such_type_t', gcc says it is no type here",
        f"PyTupleObject.ob_item: table says array length {ob_item.array_len + 1}, gcc says {ob_item.array_len}",
        f"PyListObject.ob_item: table says offset {ob_item.offset - 8}, gcc says {ob_item.offset}",
        f"PyASCIIObject.state.kind: table says bits {lo + 1}+{kind.bit_width} (byte {kind.offset} bit "
        f"{kind.bit_offset + 1}), gcc says {lo}+{kind.bit_width} (byte {lo // 8} bit {lo % 8})",
        f"PyFloatObject: table says size {table.structs['PyFloatObject'].size + 8}, "
        f"gcc says {table.structs['PyFloatObject'].size}",
    ])


# ---------------------------------------------------------------------------------------------
# A source tree: the private structs of its .c files (Debian's CPython 3.11 source package); gcc over
# every struct of the tree runs in `make prove` (tests/prove/test_source_tree_probe.py) for its cost


def _debian311_build(debian311):
    from offsets.scan import build_inputs as build

    return build.from_source(debian311.tree, debian311.pyconfig("amd64", "x86_64-linux-gnu"))


@pytest.mark.slow
def test_probe_of_a_c_file_reports_the_altered_field(debian311):
    table, b = debian311.table(), _debian311_build(debian311)
    it_index = table.structs["listiterobject"].field("it_index")
    bad = _altered(table, "listiterobject", "it_index", offset=it_index.offset + 8)
    items = [i for i in probe.source_probes(bad, b)[0] if i.struct == "listiterobject"]
    assert [i.include_file.name for i in items] == ["listobject.c"]
    report = probe.probe_sources(bad, b, items)
    assert list(map(str, report.mismatches)) == [
        f"listiterobject.it_index: table says offset {it_index.offset + 8}, gcc says {it_index.offset}"]


# ---------------------------------------------------------------------------------------------
# Cross targets: the compiler is chosen by the table's target, the numbers read from its object file

CROSS = (("i686-linux-gnu", "i386", "i386-linux-gnu", 4), ("aarch64-linux-gnu", "arm64", "aarch64-linux-gnu", 8))


@pytest.mark.slow
@pytest.mark.parametrize("triple,arch,multiarch,pointer", CROSS, ids=[c[0] for c in CROSS])
def test_gcc_agrees_on_a_cross_target(debian311, triple, arch, multiarch, pointer):
    from offsets.scan import build_inputs as build, scanner, targets
    from offsets import errors

    try:
        cc = probe.compiler_for(targets.target(triple))
    except errors.BuildError as e:
        missing_tool(f"a C compiler for {triple}", str(e))
    b = build.from_prefix(debian311.dev(arch), target=triple)
    table = scanner.scan(b)
    assert table.build.target.pointer_size == pointer
    report = probe.probe(table, b)
    print(f"\nCPython {table.build.version} {triple} ({' '.join(cc)}): gcc compared {report.summary()}")
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:50]))
    assert report.structs == len(probe.header_structs(table)) > 100
    assert "PyASCIIObject.state.kind" in report.checked


@pytest.mark.slow
def test_a_struct_gcc_does_not_know_is_an_error_not_a_pass(pyenv_scans):
    from offsets import errors
    from offsets.layout.model import Field, Struct

    exe, b, table = _some_build(pyenv_scans)
    ghost = Struct("PyGhostObject", "struct", 16, 8, "Include/ghost.h:1", (Field("ob_x", 0, 8, "long"),))
    bad = dataclasses.replace(table, structs={**table.structs, "PyGhostObject": ghost})
    with pytest.raises(errors.BuildError, match=r"gcc could not compile the probes: .*struct PyGhostObject"):
        probe.probe(bad, b)
