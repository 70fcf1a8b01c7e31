"""Every table of 32-bit ARM, ppc64el, s390x and riscv64 (Debian's builds; make test samples one per
CPU: tests/test_other_cpus.py), against two truths:

- the interpreter itself, run under qemu-user through its own C library's loader: the runtime picks
  the shipped table by the binary's build-id, and the live check (runtime/live/) reads the process's
  own memory with it (s390x: big-endian), and `tuple.__basicsize__` is the table's
  `PyTupleObject.ob_item`;
- the DWARF of the debug build's libpython (`libpython3.X-dbg`): libclang's scan of the debug headers
  for that target agrees with it on every struct both have, as for aarch64 and i686
  (tests/test_dwarf.py). The release binaries carry no DWARF (Debian strips them).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # tests/: other_cpus, conftest
import other_cpus  # noqa: E402
from offsets.scan import build_inputs as build, dwarf, scanner  # noqa: E402
from offsets.tools import matrix  # noqa: E402


@pytest.mark.parametrize("b", other_cpus.BUILDS, ids=other_cpus.build_id)
def test_live_check_under_qemu(b):
    version, triple, e = b
    got = json.loads(other_cpus.run(b, other_cpus.LIVE).strip().splitlines()[-1])
    print(f"\n{other_cpus.build_id(b)} under qemu: {got['table']} {got['kind']}; live check {got['passed']} passed, "
          f"{len(got['failed'])} failed, {got['proven']} fields proven")
    assert (got["version"], got["target"]) == (version, triple)
    assert got["byteorder"] == ("big" if triple.startswith("s390x") else "little")
    # qemu-user maps a 32-bit guest's memory at an offset in its own, and /proc/self/mem is the host's:
    # the runtime reads zeros where the binary's ELF header is (runtime/binary.py), so there is no
    # build-id, and the table is exact by the rule of the same package (docs/identity.md)
    rule = "same package" if triple.startswith("arm-") else "build-id"
    assert got["table"] == other_cpus.table_name(b) and got["kind"] == "exact" and rule in got["detail"], got
    assert got["ok"] and got["failed"] == [], got["failed"]
    assert got["tuple_items"] == got["truth"]


@pytest.mark.parametrize("b", other_cpus.BUILDS, ids=other_cpus.build_id)
def test_debug_headers_agree_with_dwarf(b):
    version, triple, e = b
    lib = matrix.dbg_library(e, triple)
    root = lib.parents[3]
    table = scanner.scan(build.from_prefix(root / "usr", target=triple, config="debug", abiflags="d"))
    info = dwarf.read(lib)
    r = dwarf.compare_report(table, info)
    print(f"\nDebian {version} debug {triple}: libclang and DWARF compared {r.structs} structs, {r.fields} fields "
          f"({sum(f.is_bitfield for s in table.structs.values() for f in s.fields)} bitfields in the table): "
          f"{len(r.mismatches)} mismatches")
    # a packed record DWARF cannot tell from an unpacked one (32-bit ARM's tracemalloc_frame, _traceback):
    # its alignment is gcc's `_Alignof`, which make tables' check compared (generated/index.yaml)
    packed = [n for n in r.not_compared if n.endswith(f"({dwarf.NO_PACKING})")]
    assert r.mismatches == () and r.one_sided == () and sorted(r.not_compared) == sorted(packed)
    assert all(n.startswith(("tracemalloc_frame: align 1", "tracemalloc_traceback: align 1")) for n in packed), packed
    assert r.structs >= 0.9 * len(table.structs) and r.fields >= 0.9 * table.field_count
