"""Build-ids in tables: `build.binaries` survives every form a table takes, and a bad one
is refused. The hand-made build-ids are inputs, not facts about CPython; what `make tables` records
for real binaries is checked against binutils' readelf in test_verified_tables.py and
test_remote_elf.py."""
from __future__ import annotations

import pytest

from offsets.errors import ModelError, TableError
from offsets.layout import compact, compact_read, table_yaml
from offsets.layout.model import Binary, Build, Field, Struct, Table, Target

ID1 = "cccda113240f3ba4c016991793a62dc0cfe01613"
ID2 = "4f93ed59248fde6a4c136b9bb1cf3c1e6885e384"


def table(binaries=()) -> Table:
    b = Build("3.14.10", 0x030E0AF0, {"Py_DEBUG": False}, Target("x86_64-linux-gnu", 8),
              inputs={"headers": None}, vendor="debian 3.14.10-1", binaries=tuple(binaries))
    s = Struct("PyObject", "struct", 16, 8, "Include/object.h:1",
               (Field("ob_refcnt", 0, 8, "Py_ssize_t"), Field("ob_type", 8, 8, "PyTypeObject *")))
    return Table(b, {"offsets": "0.1.0", "libclang": "16.0.6"}, {"PyObject": s})


BINARIES = (Binary(ID1, "usr/bin/python3.14", "python3.14-minimal 3.14.10-1"),
            Binary(ID2, "usr/lib/x86_64-linux-gnu/libpython3.14.so.1.0", "libpython3.14 3.14.10-1"))


def test_binaries_survive_yaml_and_the_compact_form():
    t = table(BINARIES)
    text = table_yaml.dumps(t)
    assert f"    - {{build_id: {ID1}, file: usr/bin/python3.14, source: \"python3.14-minimal 3.14.10-1\"}}" in text
    assert table_yaml.loads(text) == t
    assert compact.loads(compact.dumps(t, "test")) == t
    head, _ = compact_read.parse(compact.dumps(t, "test"))
    assert compact_read.index_entry("x", "x.jsonl", head["build"])["build_ids"] == sorted([ID1, ID2])


def test_a_table_without_binaries_keeps_its_bytes():
    """No `binaries` key at all: tables of builds no binary is known of are unchanged."""
    text = table_yaml.dumps(table())
    assert "binaries" not in text and "binaries" not in compact.dumps(table(), "test").splitlines()[0]
    assert "build_ids" not in compact_read.index_entry("x", "x.jsonl", compact.build_dict(table().build))


@pytest.mark.parametrize("bad, match", [
    ("CCCDA113240F3BA4C016991793A62DC0CFE01613", "is not 8 to 64 bytes of hex"),
    ("abc", "is not 8 to 64 bytes of hex"),
    ("", "is not 8 to 64 bytes of hex"),
])
def test_a_malformed_build_id_is_refused_by_the_model_and_the_schema(bad, match):
    with pytest.raises(ModelError, match=match):
        Binary(bad, "usr/bin/python3.14", "python3.14-minimal 3.14.10-1")
    text = table_yaml.dumps(table(BINARIES)).replace(ID1, bad or '""')
    with pytest.raises(TableError, match="malformed table at build/binaries/0/build_id"):
        table_yaml.loads(text)


def test_the_same_build_id_twice_and_absolute_files_are_refused():
    with pytest.raises(ModelError, match="listed twice"):
        table((BINARIES[0], Binary(ID1, "usr/lib/other", "x 1")))
    with pytest.raises(ModelError, match="relative file name"):
        Binary(ID1, "/usr/bin/python3.14", "x 1")


def test_a_compact_header_with_malformed_binaries_is_corrupt():
    text = compact.dumps(table(BINARIES), "test").replace(f'["{ID1}",', f'[7,', 1)
    with pytest.raises(TableError, match="binaries are malformed"):
        compact_read.parse(text)
