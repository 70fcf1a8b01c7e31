"""Full builds scanned whole and with shared preambles give the same bytes (offsets/scan/preamble.py;
the rules are tested in tests/test_preamble.py, each on a tree made to break it): Debian's 3.11.2
(bookworm, 247 units, the build `make bench` measures) and 3.13.5 (trixie), whose pyport.h undefines
Py_BUILD_CORE_MODULE, which most module starts define, in a conditional its build skips. Here for
their cost: about a CPU-minute and a half and two CPU-minutes whenever the package changes."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import result_memo  # noqa: E402


def test_debian_3_11_2_scans_byte_identical_with_and_without_shared_preambles(debian311, monkeypatch):
    from offsets.scan import build_inputs as build

    full_build_scans_byte_identical(build.from_source(debian311.tree, debian311.pyconfig("amd64", "x86_64-linux-gnu")),
                                    monkeypatch)


def test_debian_3_13_5_scans_byte_identical_with_and_without_shared_preambles(monkeypatch):
    from offsets.scan import build_inputs as build, debian

    tree = debian.source("python3.13", "trixie")
    usr = debian.unpacked(["libpython3.13-dev"], "amd64", "trixie") / "usr"
    full_build_scans_byte_identical(build.from_source(tree, usr / "include/x86_64-linux-gnu/python3.13/pyconfig.h"),
                                    monkeypatch)


def full_build_scans_byte_identical(b, monkeypatch) -> None:
    """A full build scanned with and without shared preambles gives the same bytes. Remembered across
    runs (tests/result_memo.py) while the package, libclang, the units and every file they read are
    unchanged: a warm run re-hashes those files instead of parsing twice."""
    from offsets.layout import table_yaml
    from offsets.scan import preamble, scanner, sources

    unit_list, _, source_digest = sources.source_units(b)
    key = result_memo.key_of("preamble-byte-identical-2", repr(b), b.defines(),
                             source_digest, [(u.name, u.path, u.args, u.text) for u in unit_list])
    same = result_memo.recall(key)
    if same is None:
        files = result_memo.spy_files_read(monkeypatch)
        shared_units = []
        usable = preamble.usable
        monkeypatch.setattr(preamble, "usable", lambda *a: shared_units.append(usable(*a)) or shared_units[-1])
        shared = scanner.scan(b, scanner.ScanOptions(use_cache=False, share_preambles=True))
        whole = scanner.scan(b, scanner.ScanOptions(use_cache=False, share_preambles=False))
        assert table_yaml.dumps(shared) == table_yaml.dumps(whole)
        same = {"PyODictObject": shared.structs["PyODictObject"].defined_in,
                "shared": sum(p is not None for p in shared_units)}
        result_memo.remember(key, files, same)
    # the sharing was real: most units share a preamble, and a typedef in Python.h names a struct
    # of a .c file (PyODictObject, Objects/odictobject.c) only the unit's own text completes
    assert same["shared"] > 0.65 * len(unit_list), same
    assert same["PyODictObject"].startswith("Objects/odictobject.c:")
