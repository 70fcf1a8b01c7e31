"""Every committed table is the one `make tables` verified (offsets/check/verified.py).

The fast check: each table's bytes hash to the sha256 its index record verified, with this verifier
and something compared. The rotating check, one table a day verified again from its own inputs, is
make prove's (tests/prove/test_verified_sample.py: up to two minutes on a cold cache). Truth: gcc, the binaries' DWARF and their own data (type
objects, `_Py_DebugOffsets`), never the scanner.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from offsets.tools import matrix, regenerate
from offsets.layout import table_yaml
from offsets.check import verified
from offsets.errors import VerifyError

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
#: A job whose inputs are small and cached: headers, plus .c structs from Debian's DWARF.
JOB = "debian 3.14.10 debug x86_64-linux-gnu"
TABLE = "cpython-3.14.10-debian-debug-x86_64-linux-gnu.yaml"


def test_every_committed_table_is_the_one_its_record_verified():
    assert verified.problems(GENERATED) == []


def test_the_sample_rotates_through_every_table():
    import datetime

    names = [f"t{i}.yaml" for i in range(7)]
    day = datetime.date(2026, 1, 1)
    assert {verified.sample(names, day=day + datetime.timedelta(days=i)) for i in range(7)} == set(names)
    assert verified.sample(names, "t3") == "t3.yaml"
    with pytest.raises(VerifyError):
        verified.sample(names, "nothing")


def checkout(root: Path) -> Path:
    """An empty repository for `python -m offsets.tools.regenerate --root`: its generated/."""
    (root / "offsets").mkdir()
    (root / "generated").mkdir()
    return root / "generated"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """`make tables` for one job into a fresh checkout: the table and its index row."""
    root = tmp_path_factory.mktemp("made")
    out = checkout(root)
    assert regenerate.main(["--only", JOB, "--root", str(root)]) == 0
    return out


def altered(text: str) -> tuple[str, str]:
    """The table text with one number changed: listiterobject's it_index offset, 16 -> 24."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("  _PyListIterObject:"))
    i = next(j for j in range(start, len(lines)) if lines[j].lstrip().startswith("it_index: {offset: 16,"))
    lines[i] = lines[i].replace("offset: 16,", "offset: 24,")
    return "".join(lines), "_PyListIterObject.it_index"


def test_make_tables_records_what_verified_each_table(made):
    rec = verified.index_rows(made)[TABLE]["verified"]
    assert rec["sha256"] == verified.sha256((made / TABLE).read_text())
    assert rec["verifier"] == verified.VERIFIER
    assert set(rec["checks"]) == {"gcc", "constants", "dwarf", "binary python3.14d", "binary libpython3.14d.so.1.0",
                                  verified.CUT, verified.LIVE}
    # the live check by the build's own python3.14d (tools/debian_records.py), which the table records
    assert rec["checks"][verified.LIVE]["build_id"] in (made / TABLE).read_text()
    assert all(c["mismatches"] == 0 and c["fields"] > 1000 for n, c in rec["checks"].items() if n in ("gcc", "dwarf"))
    assert rec["checks"]["constants"]["mismatches"] == 0 and rec["checks"]["constants"]["constants"] > 1000
    # the binary check: each type object's tp_basicsize, Py_Version and the 73 _Py_DebugOffsets
    # members data/debug_offsets.json names, read in the -dbg packages' own binaries
    assert all(c["mismatches"] == 0 and c["fields"] > 80 for n, c in rec["checks"].items() if n.startswith("binary"))
    # the rescan with pyconfig.h cut to the dependency sets' macros (check/depends_cut.py): most of
    # its macros dropped, and every struct libclang scanned the same
    cut = rec["checks"][verified.CUT]
    assert cut["mismatches"] == 0 and cut["dropped"] > 2 * cut["kept"] > 40
    assert cut["structs"] == sum(s.origin == "clang" for s in table_yaml.load(made / TABLE).structs.values()) > 300
    assert verified.problems(made) == []


def test_make_tables_records_the_build_id_of_each_binary_it_verified_against(made):
    """Truth: binutils' readelf -n of the very files, fetched by package name."""
    import re
    import subprocess

    table = table_yaml.load(made / TABLE)
    files = {x.file: x for x in table.build.binaries}
    assert sorted(files) == ["usr/bin/python3.14d", "usr/lib/x86_64-linux-gnu/libpython3.14d.so.1.0"]
    assert files["usr/bin/python3.14d"].source == "python3.14-dbg 3.14.10-1"
    job = matrix.job_for(verified.index_rows(made)[TABLE])
    for path, file, _ in job.binaries():
        if shutil.which("readelf") is None:
            from conftest import missing_tool

            missing_tool("readelf", "Debian's binutils")
        note = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, check=True).stdout
        assert files[file].build_id == re.search(r"Build ID: ([0-9a-f]+)", note).group(1)


def test_one_altered_number_fails_the_ci_check_and_verification(made, tmp_path):
    shutil.copy(made / "index.yaml", tmp_path / "index.yaml")
    text, field = altered((made / TABLE).read_text())
    (tmp_path / TABLE).write_text(text)
    found = verified.problems(tmp_path)
    assert len(found) == 1 and found[0].startswith(f"{TABLE}: its bytes") and "not the ones verified" in found[0]
    # and verified again from its inputs, gcc names the field
    job = matrix.job_for(verified.index_rows(made)[TABLE])
    with pytest.raises(VerifyError) as e:
        verified.check(table_yaml.load(tmp_path / TABLE), job.inputs(), None,
                       [path for path, _, _ in job.binaries()])
    assert field in str(e.value) and "not written" in str(e.value)


def test_make_tables_refuses_to_write_a_table_that_fails_verification(monkeypatch, tmp_path, capsys):
    real = matrix.make

    def wrong(job, opts):
        table, b, binary, binaries = real(job, opts)
        return table_yaml.loads(altered(table_yaml.dumps(table))[0], "altered"), b, binary, binaries

    monkeypatch.setattr(matrix, "make", wrong)
    out = checkout(tmp_path)
    assert regenerate.main(["--only", JOB, "--root", str(tmp_path)]) == 1
    assert not (out / TABLE).exists() and not (out / "index.yaml").exists()
    err = capsys.readouterr().err
    assert "fails verification against its own inputs" in err and "_PyListIterObject.it_index" in err


def altered_constant(text: str) -> tuple[str, str]:
    """The table text with one constant changed: FRAME_OWNED_BY_CSTACK, 4 in 3.14 (where
    FRAME_OWNED_BY_INTERPRETER took 3), made 3.13's 3."""
    old = "    FRAME_OWNED_BY_CSTACK: {value: 4, type: int, size: 4, kind: enum}\n"
    assert old in text
    return text.replace(old, old.replace("value: 4", "value: 3")), "FRAME_OWNED_BY_CSTACK"


def test_one_altered_constant_fails_the_ci_check_and_verification(made, tmp_path):
    shutil.copy(made / "index.yaml", tmp_path / "index.yaml")
    text, name = altered_constant((made / TABLE).read_text())
    (tmp_path / TABLE).write_text(text)
    found = verified.problems(tmp_path)
    assert len(found) == 1 and "not the ones verified" in found[0]
    job = matrix.job_for(verified.index_rows(made)[TABLE])
    with pytest.raises(VerifyError) as e:
        verified.check(table_yaml.load(tmp_path / TABLE), job.inputs(), None)
    # gcc's _Static_assert refuses it, and gcc's own value is named
    assert f"constants: {name}: table says 3 (int, 4 bytes), gcc says 4 (int, 4 bytes)" in str(e.value)
