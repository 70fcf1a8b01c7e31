"""What `make test` checks on a sample of builds, here on the others, for their cost (a scan, a
DWARF read, a venv with a compiled extension or gcc over a build's headers each): libclang against
DWARF, and the extension modules' DWARF, on every pyenv build (tests/test_dwarf.py); the JIT
extension and the C API's worked example on every CPython the runtime supports (tests/test_capi.py);
every live check failing on its table with its field moved (tests/test_proofs.py); pyconfig.h macros
outside every set flipped under gcc (tests/test_dependency_proof.py); `offsets verify` on the committed
pyenv and Debian tables (tests/test_committed_tables.py); each table's compact form and C header
against its whole YAML (tests/test_runtime.py); each header's layout proof after its own Python.h
(tests/test_c_headers_strict.py); `offsets check` of every pyenv table (tests/test_drift_cli.py); gcc
over every header field of every pyenv minor (tests/test_probe_pyenv.py); other patch levels' tables
offered to every pyenv minor (tests/test_runtime.py); gcc over Debian's 3.13.15 against its table
(tests/test_vendor_difference.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import test_c_headers_strict as strict_tests  # noqa: E402
import test_capi as capi_tests  # noqa: E402
import test_committed_tables as committed_tests  # noqa: E402
import test_dependency_proof as dependency_tests  # noqa: E402
import test_drift_cli as drift_tests  # noqa: E402
import test_dwarf as dwarf_tests  # noqa: E402
import test_probe_pyenv as probe_tests  # noqa: E402
import test_proofs as proof_tests  # noqa: E402
import test_runtime as runtime_tests  # noqa: E402
import test_vendor_difference as vendor_tests  # noqa: E402

SPLITS = {"pyenv builds, libclang against DWARF": (dwarf_tests.PYENV, dwarf_tests.PYENV_SAMPLE),
          "the JIT extension and the worked example": (capi_tests.VERSIONS, capi_tests.VERSIONS_SAMPLE),
          "checks failing on a moved field": (proof_tests.MOVED_VERSIONS, proof_tests.MOVED_SAMPLE),
          "macros outside every set flipped": (dependency_tests.FLIPPED, dependency_tests.FLIPPED_SAMPLE),
          "offsets verify on pyenv tables": (committed_tests.PYENV, committed_tests.PYENV_SAMPLE),
          "offsets verify on Debian tables": (committed_tests.DEBIAN, committed_tests.DEBIAN_SAMPLE),
          "compact tables and C headers against the whole YAML":
              (runtime_tests.YAMLS, runtime_tests.YAMLS_SAMPLE),
          "layout proofs after their own Python.h": (strict_tests.PROOF_SAMPLE + strict_tests.PROOF_REST,
                                                     strict_tests.PROOF_SAMPLE),
          "offsets check of pyenv tables": (drift_tests.PYENV_BUILDS, drift_tests.PYENV_BUILDS_SAMPLE),
          "gcc over every header field": (probe_tests.PYENV_MINORS, probe_tests.GCC_SAMPLE),
          "other patch levels' tables": (runtime_tests.PATCH_LEVEL_MINORS, runtime_tests.PATCH_LEVEL_SAMPLE),
          "upstream's and Debian's 3.13.15 against gcc": (vendor_tests.BUILDS, vendor_tests.BUILDS_SAMPLE)}


def _rest(what: str) -> list:
    every, sample = SPLITS[what]
    return [x for x in every if x not in sample]


def test_make_test_keeps_a_sample_of_each_list_and_leaves_the_rest_here():
    for what, (every, sample) in SPLITS.items():
        assert sample and set(sample) < set(every), what


@pytest.mark.parametrize("version", _rest("pyenv builds, libclang against DWARF"))
def test_libclang_and_dwarf_agree(version):
    dwarf_tests.test_libclang_and_dwarf_agree(version)
    dwarf_tests.test_extension_modules_agree_too(version)
    dwarf_tests.test_listiterobject_from_dwarf_matches_the_live_interpreter(version)


@pytest.mark.parametrize("version", _rest("the JIT extension and the worked example"))
def test_jit_extension_on_every_cpython(version, tmp_path):
    capi_tests.test_jit_extension_on_every_cpython(version, tmp_path)
    capi_tests.test_worked_example_on_every_cpython(version, tmp_path)


@pytest.mark.parametrize("version", _rest("checks failing on a moved field"))
def test_every_check_fails_on_its_table_with_the_field_it_reads_moved(version):
    proof_tests.test_every_check_fails_on_its_table_with_the_field_it_reads_moved(version)


@pytest.mark.parametrize("minor", _rest("macros outside every set flipped"))
def test_flipping_a_macro_outside_every_set_changes_no_layout(pyenv_scans, minor):
    dependency_tests.test_flipping_a_macro_outside_every_set_changes_no_layout(pyenv_scans, minor)


@pytest.mark.parametrize("version", _rest("offsets verify on pyenv tables"))
def test_offsets_verify_passes_on_every_pyenv_table(version, capsys):
    committed_tests.test_offsets_verify_passes_on_every_pyenv_table(version, capsys)


@pytest.mark.parametrize("only", _rest("offsets verify on Debian tables"))
def test_offsets_verify_passes_on_debian_tables(only, capsys, monkeypatch):
    committed_tests.test_offsets_verify_passes_on_debian_tables(only, capsys, monkeypatch)



@pytest.mark.parametrize("yml", _rest("compact tables and C headers against the whole YAML"), ids=lambda p: p.stem)
def test_every_compact_table_and_c_header_hold_the_whole_yaml_table(yml):
    runtime_tests.test_every_compact_table_and_c_header_hold_the_whole_yaml_table(yml)


@pytest.mark.parametrize("header", _rest("layout proofs after their own Python.h"), ids=lambda h: h.name)
def test_layout_proof_after_its_own_python_h_is_strict_clean(header, tmp_path):
    strict_tests.test_layout_proof_after_its_own_python_h_is_strict_clean(header, tmp_path)


@pytest.mark.parametrize("version", _rest("offsets check of pyenv tables"))
def test_check_pyenv_build(version, capsys):
    drift_tests.test_check_pyenv_build(version, capsys)


@pytest.mark.parametrize("minor", _rest("gcc over every header field"))
def test_gcc_agrees_with_every_header_field(pyenv_scans, minor):
    probe_tests.test_gcc_agrees_with_every_header_field(pyenv_scans, minor)


@pytest.mark.parametrize("version", _rest("other patch levels' tables"))
def test_tables_of_other_patch_levels_answer_only_what_the_live_check_proved(version):
    runtime_tests.test_tables_of_other_patch_levels_answer_only_what_the_live_check_proved(version)


@pytest.mark.parametrize("label,table,truth", _rest("upstream's and Debian's 3.13.15 against gcc"), ids=lambda x: str(x))
def test_upstream_and_debian_3_13_15_differ_as_gcc_says(tmp_path, label, table, truth):
    vendor_tests.test_upstream_and_debian_3_13_15_differ_as_gcc_says(tmp_path, label, table, truth)
