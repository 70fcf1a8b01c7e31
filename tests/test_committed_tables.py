"""The committed tables of generated/: all indexed and loadable, reproducible from their cached
inputs, and verified by `offsets verify` (gcc and DWARF) on a sample: the oldest and the newest
pyenv build, and a Debian build of another CPU (`make prove` the other pyenv builds, and Debian
builds of other versions and configs: tests/prove/test_beyond_samples.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import committed_table
from offsets.errors import UnknownNameError
from offsets.layout import table_yaml
from offsets.tools.matrix import matrix

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"


def run(*args):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT)


def test_every_committed_table_is_indexed_and_loads():
    rows = yaml.safe_load((GENERATED / "index.yaml").read_text())["tables"]
    files = sorted(p.name for p in GENERATED.glob("cpython-*.yaml"))
    assert sorted(r["file"] for r in rows) == files
    for row in rows:
        t = committed_table(GENERATED / row["file"])
        assert (t.build.version, t.build.config_name, t.build.target.triple) == \
            (row["version"], row["config"], row["target"])
        assert (len(t.structs), t.field_count, dict(t.build.inputs)) == (row["structs"], row["fields"], row["inputs"])
        assert f"{t.build.table_name}.yaml" == row["file"]


@pytest.mark.parametrize("name", ["cpython-3.13.15-freethreaded-x86_64-linux-gnu.yaml",
                                  "cpython-3.15.2-debian-debug-x86_64-linux-gnu.yaml",
                                  "cpython-3.11.2-debian-i686-linux-gnu.yaml"])
def test_the_largest_tables_read_through_the_yaml_reader_are_the_ones_the_tests_use(name, monkeypatch):
    """The YAML reader (schema, strict parsing, the model) on the biggest tables of three kinds;
    every other test here reads the compact table made from the same bytes. The reader itself, not
    its remembered result (tests/table_memo.py), each run. The schema's fast check passes them:
    jsonschema is never asked (tests/test_schema_fast.py)."""
    from dataclasses import replace

    import table_memo
    from offsets.layout import table_yaml

    def refused(*args):
        raise AssertionError("the fast schema check refused a committed table")
    monkeypatch.setattr(table_yaml, "_reference_validator", refused)
    table = table_memo.real_loads((GENERATED / name).read_text(), name)
    # the compact form keeps dependency data only as the runtime reads it, and type records per minor
    assert replace(table, dependencies=None, types={},
                   structs={k: replace(s, depends=None) for k, s in table.structs.items()}) == committed_table(GENERATED / name)


def test_the_matrix_is_what_is_committed():
    """Every build of data/matrix.yaml has its table, and nothing else is there."""
    m = matrix()
    expected = {f"cpython-{v}-x86_64-linux-gnu.yaml" for v in m["pyenv"]}
    words = {"release": "", "debug": "debug-", "free-threaded": "freethreaded-"}
    expected |= {f"cpython-{e['version']}-{e['vendor']}-{words[c]}{t}.yaml" for e in m["packaged"] for c, t in e["builds"]}
    expected |= {f"cpython-{e['version']}-{words[c]}{t}.yaml" for e in m["packaged"] for c, t in e.get("upstream", ())}
    expected |= {f"cpython-{e['version']}-{words[c]}{t}.yaml" for e in m["windows"] for c, t in e["builds"]}
    expected |= {f"cpython-{e['version']}-{words[c]}{t}.yaml" for e in m["macos"] for c, t in e["builds"]}
    assert expected == {p.name for p in GENERATED.glob("cpython-*.yaml")}
    assert len(expected) >= 41


def test_listiterobject_it_index_answers_in_every_table():
    from offsets.layout.names import resolve

    for path in sorted(GENERATED.glob("cpython-*.yaml")):
        t = committed_table(path)
        if t.build.target.triple.endswith(("-windows-msvc", "-apple-darwin")) and t.build.hexversion < 0x030C0000:
            # a Windows or macOS table holds the headers' structs only (no source tree's .c files, no DWARF):
            # up to 3.11 listobject.c declares listiterobject, so the name is refused, never guessed;
            # from 3.12 pycore_list.h declares it
            with pytest.raises(UnknownNameError):
                resolve(t, "listiterobject.it_index")
            continue
        _, f = resolve(t, "listiterobject.it_index")
        # right after the object header: 2 pointers, more when free-threaded (ob_tid, ob_ref_local...)
        assert f.offset == resolve(t, "PyObject")[0].size, path.name
        assert f.offset == 2 * t.build.target.pointer_size or t.build.config["Py_GIL_DISABLED"], path.name


@pytest.mark.slow
@pytest.mark.parametrize("only", ["pyenv 3.11.7", "debian 3.14.10 release x86_64-linux-gnu"])
def test_regenerating_a_table_from_cached_inputs_gives_the_committed_bytes(only):
    """The table and its index row (what is derived from the tables: tests/test_runtime.py)."""
    proc = run("offsets.tools.regenerate", "--check", "--tables-only", "--only", only)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.endswith("offsets: everything is up to date\n")


PYENV = matrix()["pyenv"]
#: `make test` verifies the oldest and the newest pyenv table; `make prove` the others
#: (tests/prove/test_beyond_samples.py)
PYENV_SAMPLE = ("3.6.15", "3.13.0")


@pytest.mark.slow
@pytest.mark.parametrize("version", PYENV_SAMPLE)
def test_offsets_verify_passes_on_every_pyenv_table(version, capsys):
    """`offsets verify TABLE`, run in this process (its tables read once: tests/table_memo.py)."""
    from offsets.cli import main

    table = GENERATED / f"cpython-{version}-x86_64-linux-gnu.yaml"
    code = main(["verify", str(table)])
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err[-2000:]
    assert ", 0 mismatches" in out and "gcc: " in out and "dwarf: " in out


#: Debian builds of other versions, configs and CPUs; `make test` verifies the one of another CPU,
#: `make prove` the others (tests/prove/test_beyond_samples.py)
DEBIAN = ("debian 3.14.10 release x86_64-linux-gnu", "debian 3.15.2 release i686-linux-gnu",
          "debian 3.15.2 free-threaded x86_64-linux-gnu")
DEBIAN_SAMPLE = ("debian 3.15.2 release i686-linux-gnu",)


@pytest.mark.slow
@pytest.mark.parametrize("only", DEBIAN_SAMPLE)
def test_offsets_verify_passes_on_debian_tables(only, capsys, monkeypatch):
    """`make tables`' verification of one Debian build, run in this process (its table read once:
    tests/table_memo.py)."""
    from offsets.tools import regenerate

    monkeypatch.chdir(ROOT)
    code = regenerate.main(["--verify", "--only", only])
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err[-2000:]
    assert "0 mismatches" in out


@pytest.mark.parametrize("version", ["3.13.18", "3.14.10", "3.15.2"])
def test_sources_not_served_debug_tables_have_dwarf_c_structs_release_tables_none(version):
    """sid's source packages are not served: the debug table's .c structs come from libpython3.Xd's
    DWARF (cross-checked when made, see tests/test_c_library_leaves.py); release tables have none."""
    from offsets.layout.names import resolve

    debug = committed_table(GENERATED / f"cpython-{version}-debian-debug-x86_64-linux-gnu.yaml")
    release = committed_table(GENERATED / f"cpython-{version}-debian-x86_64-linux-gnu.yaml")
    header = {"dequeobject.leftblock": "PyVarObject", "rangeiterobject.start": "PyObject",
              "enumobject.en_index": "PyObject"}
    for name, head in header.items():      # each is the first field after the object header
        s, f = resolve(debug, name)
        assert f.offset == resolve(debug, head)[0].size, name
    for struct in ("dequeobject", "enumobject"):  # .c structs: from DWARF, unless the sources are served
        assert resolve(debug, struct)[0].origin == ("clang" if debug.build.inputs.get("source") else "dwarf")
    assert release.build.inputs.get("source") or not [s for s in release.structs.values()
                                                      if not s.defined_in.startswith("Include/")]
