"""The musl tables against musl builds' own DWARF: python.org's 3.13.15 sources compiled for
x86_64-linux-musl by zig cc (`scripts/build-cpython 3.13.15 musl`, which `make prove` runs first,
cached), and cross-compiled for aarch64-linux-musl (`musl-aarch64`), each with the configuration its
table was made from. Truth: the compiler's debug information of the very build, never the scanner.
Both builds also run here, through musl's own loader (sid's `musl` package of their CPU): x86_64
natively, aarch64 under qemu-user; in each, the runtime (pure Python: the checkout's C extensions
are this machine's glibc interpreter's) makes its live check and answers the names JITs read."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from offsets.check import verified, verify
from offsets.layout import table_yaml
from offsets.remote import elf
from offsets.tools import matrix

GENERATED = Path(__file__).resolve().parents[2] / "generated"
TABLE = "cpython-3.13.15-x86_64-linux-musl.yaml"
#: each musl table, and the glibc table of the same sources and CPU (Debian's for aarch64: no
#: upstream glibc build of 3.13.15 for it ships)
TABLES = {TABLE: "cpython-3.13.15-x86_64-linux-gnu.yaml",
          "cpython-3.13.15-aarch64-linux-musl.yaml": "cpython-3.13.18-debian-aarch64-linux-gnu.yaml"}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_musl_table_is_the_dwarf_of_its_sources_compiled_for_musl(name):
    table = table_yaml.load(GENERATED / name)
    lib = matrix.job_for(verified.index_rows(GENERATED)[name]).dwarf()      # scripts/build-cpython 3.13.15 musl[-aarch64]
    reader = elf.Elf(str(lib))
    assert not reader.links_glibc(), f"{lib} needs glibc's libc.so.6: not a musl build"
    assert reader.triple == table.build.target.triple, reader.triple
    check = verify.dwarf_check(table, lib)
    assert not check.mismatches, check.mismatches[:5]
    assert check.structs > 500 and check.fields > 7000, check.line()
    # what differs from glibc's build of the same minor on that CPU is there, as the DWARF has it:
    # musl's pthread_mutex_t (40 bytes against 48 on aarch64) in the GIL's state
    glibc = table_yaml.load(GENERATED / TABLES[name])
    assert table.structs["_PyRuntimeState"].size != glibc.structs["_PyRuntimeState"].size


def test_the_musl_build_only_checks_its_table_it_never_fills_it():
    """The build is made on this machine (its DWARF names this machine's paths), so the table records
    no digest of it and no struct from it, and a field the DWARF contradicts stops the job."""
    import dataclasses

    import pytest

    from offsets.errors import VerifyError
    from offsets.scan import dwarf

    table = table_yaml.load(GENERATED / TABLE)
    job = matrix.job_for(verified.index_rows(GENERATED)[TABLE])
    assert job.dwarf is not None and not job.dwarf_fills
    assert "dwarf" not in table.build.inputs
    assert not [k for k, s in table.structs.items() if s.origin == "dwarf"]
    lib = job.dwarf()
    assert dwarf.checked(table, lib) > 7000
    frame = table.structs["_PyInterpreterFrame"]
    moved = dataclasses.replace(frame.fields[1], offset=frame.fields[1].offset + 8)
    wrong = dataclasses.replace(table, structs={**table.structs, "_PyInterpreterFrame": dataclasses.replace(
        frame, fields=(frame.fields[0], moved, *frame.fields[2:]))})
    with pytest.raises(VerifyError, match="disagrees"):
        dwarf.checked(wrong, lib)


#: each musl table -> what runs its build's programs here (qemu-user for another CPU's)
RUNS = {TABLE: (), "cpython-3.13.15-aarch64-linux-musl.yaml": ("qemu-aarch64",)}


def _musl_python(name: str) -> list:
    """The command that runs the musl build of table `name` (`scripts/build-cpython 3.13.15 musl` or
    `musl-aarch64`: installed, headers and all, its program loader sid's musl of its CPU): its last
    word is the interpreter."""
    lib = matrix.job_for(verified.index_rows(GENERATED)[name]).dwarf()
    runner = RUNS[name]
    if runner and shutil.which(runner[0]) is None:
        sys.path.insert(0, str(GENERATED.parent / "tests"))
        from conftest import missing_tool

        missing_tool(runner[0], "make test installs qemu-user")
    return [*runner, str(lib.parent.parent / "bin" / "python3.13")]


LIVE = r'''
import json, sys
import offsets
from offsets import runtime as r
m = r.build()
check = r.live_check()
t = r.RUNTIME.current()
print(json.dumps({"table": m.table, "kind": m.kind, "by": t.earning.by, "triple": r.running_identity().triple,
                  "failed": check.failed, "passed": len(check.passed), "proven": len(check.proven),
                  "exact": sum(1 for k in t.order if m.earned(k) == "exact"), "structs": len(t.order)}))
'''


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_musl_interpreter_chooses_the_musl_table_and_its_live_check_passes(name):
    """The musl build runs here (through musl's own loader; another CPU's under qemu-user): the
    runtime there knows it is musl, chooses the musl table, exact by its installed headers struct by
    struct, and the live check reads this very process's objects as the table says."""
    import json
    import subprocess

    sys.path.insert(0, str(GENERATED.parent / "tests"))
    import jit_needs

    python = _musl_python(name)
    proc = subprocess.run([*python, "-S", "-c", LIVE], capture_output=True, text=True,
                          env=jit_needs.clean_env("/nonexistent-tables"), timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    print(f"\n{name[:-5]} ({' '.join(RUNS[name]) or 'native'}): {got['kind']} by {got['by']}, "
          f"{got['exact']} of {got['structs']} structs exact; live check {got['passed']} passed, "
          f"{len(got['failed'])} failed, {got['proven']} fields proven")
    triple = name[len("cpython-3.13.15-"):-len(".yaml")]
    assert (got["table"], got["triple"]) == (name[:-5], triple), got
    assert got["failed"] == [] and got["passed"] > 900 and got["proven"] > 1000, got
    assert (got["kind"], got["by"]) == ("exact", "inputs") and got["exact"] >= 0.99 * got["structs"], got


@pytest.mark.parametrize("name", sorted(RUNS))
def test_what_jits_read_is_exact_on_musl_and_equals_its_dwarf(name):
    """The JIT-needs list (tests/data/jit_needs.yaml), asked of the musl interpreter: exact, and
    every answer the build's own DWARF (libpython and its extension modules)."""
    sys.path.insert(0, str(GENERATED.parent / "tests"))
    import jit_needs

    python = _musl_python(name)
    names = jit_needs.names("3.13") + jit_needs.names("3.13", section="constants")
    got = jit_needs.answers(python, names, timeout=900)
    tally = jit_needs.tally(got)
    answered = tally["exact"] + tally["proven"] + tally["refused"]
    lib = Path(python[-1]).parent.parent / "lib" / "libpython3.13.so.1.0"
    bad, unchecked = jit_needs.wrong(got, *jit_needs.truth(lib, None, names))
    print(f"\n{name[:-5]}: JIT needs {tally} (constants {jit_needs.tally(got, constants=True)}); "
          f"{len(bad)} differ from its DWARF, {len(unchecked)} not in it")
    assert tally["exact"] >= 0.99 * answered and tally["error"] == 0, tally
    assert not bad, bad[:5]
    # every field and size answered is in its DWARF (the constants, macros, are not)
    fields = [n for n in unchecked if not n.startswith(jit_needs.CONST)]
    assert not fields, fields[:5]


#: the tables of builds scripts/build-cpython makes here -> the qemu-user program that runs it (or None)
BUILT_HERE = {**{n: (r or (None,))[0] for n, r in RUNS.items()}, "cpython-3.13.15-x86_64-linux-gnu.yaml": None,
              "cpython-3.13.15-freethreaded-x86_64-linux-gnu.yaml": None}


@pytest.mark.parametrize("name", sorted(BUILT_HERE))
def test_the_live_record_of_a_build_made_here_is_what_it_says_again(name, tmp_path):
    """tools/built_records.py, as make tables runs it: the build (its installed headers and pyconfig.h
    the table's inputs, digest for digest; the runtime inside matching it by them: zig writes no
    build-id, and glibc's compiled again here has a new one) checks the table live, and that is the
    committed record; a table naming another pyconfig.h is not its build."""
    from offsets.tools import built_records

    row = dict(verified.index_rows(GENERATED)[name])
    committed = row["verified"]["checks"]["live"]
    row["verified"] = dict(row["verified"], checks={k: v for k, v in row["verified"]["checks"].items() if k != "live"})
    (tmp_path / name).write_text((GENERATED / name).read_text())
    (tmp_path / "index.yaml").write_text(matrix.index_text([row]))
    said = []
    assert built_records.record(tmp_path, say=said.append) == {name: committed}, said
    assert committed["by"] == "inputs" and committed.get("under") == BUILT_HERE[name]
    assert verified.problems(tmp_path) == []
    text = (GENERATED / name).read_text()
    digest = table_yaml.load(GENERATED / name).build.inputs["pyconfig_h"]
    other = text.replace(digest, "sha256:" + "0" * 64)
    (tmp_path / name).write_text(other)
    row["verified"] = dict(row["verified"], sha256=verified.sha256(other))
    (tmp_path / "index.yaml").write_text(matrix.index_text([row]))
    said = []
    assert built_records.record(tmp_path, again=True, say=said.append) == {}
    assert any("is not the table's" in line and "are not the table's inputs" in line for line in said), said


def test_a_table_with_an_offset_moved_fails_the_live_check_of_its_build_made_here_and_is_not_recorded(tmp_path):
    from offsets.tools import built_records

    sys.path.insert(0, str(GENERATED.parent / "tests"))
    from test_live_records import refused_unrecorded, without_live

    refused_unrecorded(without_live(tmp_path, TABLE), TABLE, lambda out: built_records.record(out, say=lambda l: None),
                       "fails the live check by its build made here")
