"""The tables of 32-bit ARM, ppc64el, s390x and riscv64 (Debian's builds), one per CPU (other_cpus.SAMPLE;
make prove runs the live check under qemu and the DWARF comparison on every one:
tests/prove/test_other_cpus.py).

`offsets identify` reads each CPU's interpreter binary (s390x's big-endian) and must name the build
exactly: its GNU build-id as binutils' `readelf -n` prints it, the version in its package's name, its
target, and the shipped table that records that build-id. gcc, that CPU's cross compiler, checked each
table's every field before `make tables` wrote it (generated/index.yaml); each table's record says so.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
import yaml

import other_cpus
from conftest import missing_tool

SAMPLES = [other_cpus.SAMPLE[t] for t in sorted(other_cpus.SAMPLE)]


def readelf_build_id(path) -> str:
    if shutil.which("readelf") is None:
        missing_tool("readelf", "apt-get install binutils")
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


@pytest.mark.parametrize("b", SAMPLES, ids=other_cpus.build_id)
def test_identify_names_the_binary_of_another_cpu(b):
    version, triple, e = b
    exe = other_cpus.root(b) / "usr/bin" / f"python{version.rsplit('.', 1)[0]}"
    proc = subprocess.run([sys.executable, "-m", "offsets", "identify", "--binary", str(exe), "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["build_id"] == readelf_build_id(exe)
    assert (got["version"], got["target"], got["vendor"]) == (version, triple, f"debian {e['package_version']}")
    assert got["table"] == other_cpus.table_name(b) and got["earned"] == "exact", got
    assert "build-id" in got["detail"], got["detail"]


def test_each_other_cpu_table_was_checked_by_its_gcc():
    rows = {r["file"]: r for r in yaml.safe_load(open(other_cpus.REPO / "generated/index.yaml"))["tables"]}
    for b in other_cpus.BUILDS:
        row = rows[other_cpus.table_name(b) + ".yaml"]
        gcc = row["verified"]["checks"]["gcc"]
        # every field but a few of the source-tree structs gcc's probe leaves out (3.11.2, riscv64's 3.13.15), as on aarch64
        assert gcc["mismatches"] == 0 and gcc["fields"] >= 0.97 * row["fields"], row["file"]
        binaries = [c for k, c in row["verified"]["checks"].items() if k.startswith("binary ")]
        assert binaries and all(c["mismatches"] == 0 for c in binaries), row["file"]
