"""The musl table against a musl build's own DWARF: python.org's 3.13.15 sources compiled for
x86_64-linux-musl by zig cc (`scripts/build-cpython 3.13.15 musl`, which `make prove` runs first, cached),
the same sources and configuration the table was made from. Truth: the compiler's debug information
of the very build, never the scanner."""
from __future__ import annotations

from pathlib import Path

from offsets.check import verified, verify
from offsets.layout import table_yaml
from offsets.remote import elf
from offsets.tools import matrix

GENERATED = Path(__file__).resolve().parents[2] / "generated"
TABLE = "cpython-3.13.15-x86_64-linux-musl.yaml"


def test_the_musl_table_is_the_dwarf_of_its_sources_compiled_for_musl():
    table = table_yaml.load(GENERATED / TABLE)
    lib = matrix.job_for(verified.index_rows(GENERATED)[TABLE]).dwarf()      # scripts/build-cpython 3.13.15 musl
    reader = elf.Elf(str(lib))
    assert not reader.links_glibc(), f"{lib} needs glibc's libc.so.6: not a musl build"
    check = verify.dwarf_check(table, lib)
    assert not check.mismatches, check.mismatches[:5]
    assert check.structs > 500 and check.fields > 7000, check.line()
    # what differs from glibc's build of the same sources is there, as the DWARF has it
    glibc = table_yaml.load(GENERATED / "cpython-3.13.15-x86_64-linux-gnu.yaml")
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
