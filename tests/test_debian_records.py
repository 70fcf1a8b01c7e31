"""The live check of a Debian release table by its own interpreter, fetched by package name and run
here (another CPU's under qemu-user), recorded as the table's `live` check (tools/debian_records.py).

Truth: Debian's interpreter of the table's exact version, whose executable's build-id (read from
the file) the table records, reading real objects through the table's offsets in its own process.
The sample: s390x's 3.14.10 (big-endian, under qemu; tests/test_other_cpus.py's) and 3.13.18 for
x86_64 (natively); tests/prove/test_other_cpus.py runs every other CPU's interpreter.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from conftest import missing_tool
from offsets.check import verified
from offsets.layout.compact import checks_of
from offsets.tools import debian_records, matrix
from test_live_records import refused_unrecorded, without_live

GENERATED = Path(__file__).resolve().parent.parent / "generated"
S390X = "cpython-3.14.10-debian-s390x-linux-gnu.yaml"
X86_64 = "cpython-3.13.18-debian-x86_64-linux-gnu.yaml"


def test_the_big_endian_tables_live_record_is_what_its_interpreter_says_again_under_qemu(tmp_path):
    if shutil.which("qemu-s390x") is None:
        missing_tool("qemu-s390x", "make test installs qemu-user")
    out = without_live(tmp_path, S390X)
    said = []
    made = debian_records.record(out, say=said.append)
    committed = verified.index_rows(GENERATED)[S390X]["verified"]["checks"][verified.LIVE]
    assert made == {S390X: committed} and committed["under"] == "qemu-s390x"
    assert committed["checks"] > 300 and committed["constants"] > 100
    assert committed["build_id"] in (GENERATED / S390X).read_text()
    assert verified.problems(out) == []
    assert any(f"{S390X}: live under qemu-s390x: {committed['checks']} checks" in line for line in said), said
    assert debian_records.record(out, say=said.append) == {}          # recorded once


def test_a_debian_table_with_an_offset_moved_fails_and_is_not_recorded(tmp_path):
    refused_unrecorded(without_live(tmp_path, X86_64), X86_64, lambda out: debian_records.record(out, say=lambda l: None),
                       "fails the live check by its own interpreter (natively")


def test_an_interpreter_whose_build_id_the_table_does_not_record_checks_nothing(tmp_path):
    out = without_live(tmp_path, X86_64)
    text = (out / X86_64).read_text()
    ids = yaml.safe_load(text)["build"]["binaries"]
    for b in ids:                                  # the same table, as if of other binaries
        text = text.replace(b["build_id"], "0" * len(b["build_id"]))
    (out / X86_64).write_text(text)
    rows = yaml.safe_load((out / "index.yaml").read_text())["tables"]
    rows[0]["verified"]["sha256"] = verified.sha256(text)
    (out / "index.yaml").write_text(matrix.index_text(rows))
    said = []
    assert debian_records.record(out, say=said.append) == {}
    assert any("is not a binary the table records: not its build" in line for line in said), said
    assert verified.LIVE not in verified.index_rows(out)[X86_64]["verified"]["checks"]


def test_checks_of_says_which_qemu_ran_the_live_check():
    rec = {"checks": {"live": {"checks": 545, "constants": 239, "build_id": "7c0a", "under": "qemu-s390x",
                               "mismatches": 0}}}
    assert checks_of(rec, "s390x-linux-gnu", "3.14.10") == [
        "a live interpreter of the build: 545 checks of real objects and __basicsize__, 239 constants (under qemu-s390x)"]


def test_every_debian_table_whose_interpreter_debian_serves_has_a_live_record():
    from offsets.tools import debian_interpreters

    rows = verified.index_rows(GENERATED)
    names = [debian_interpreters.table_name(b, config) + ".yaml" for config in debian_records.CONFIGS
             for b in debian_interpreters.builds(debian_interpreters.RUNNER, config)]
    lived = [n for n in names if verified.LIVE in rows[n]["verified"]["checks"]]
    # sid's 3.13.15 for amd64 is no longer served (sid has moved on to 3.13.18): the ones without
    assert sorted(set(names) - set(lived)) == ["cpython-3.13.15-debian-debug-x86_64-linux-gnu.yaml",
                                               "cpython-3.13.15-debian-x86_64-linux-gnu.yaml"]
    assert sum("-debug-" in n for n in lived) == 6
    assert {rows[n]["verified"]["checks"][verified.LIVE].get("under") for n in lived} == {
        None, "qemu-aarch64", "qemu-arm", "qemu-ppc64le", "qemu-s390x", "qemu-riscv64"}
