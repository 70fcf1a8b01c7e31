"""A process in a container is read through its own files: `offsets identify` and the scan its
refusal suggests (`offsets scan --prefix /proc/PID/root/PREFIX --install`) follow the container's
symlinks within the container's root, never into this machine's files of the same name.

The container (tests/process_container.py: a mount namespace and pivot_root, as runc makes one) runs
pyenv's 3.11 from `/opt/py`, whose `include` is a symlink to an absolute path, `H`. This machine has
another CPython's headers (pyenv's 3.12) at that same path `H`; the container has 3.11's there. With
`file_link`, the container's `patchlevel.h` is one more absolute link, to a path that this machine
also has, with 3.12's patchlevel.h. The independent sources: the contained interpreter's own report
(`sys.version`, `os.path.realpath` of its include directory as it sees it) and pyenv's 3.11 files
read directly on this machine.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import missing_input, missing_tool, pyenv_python
from process_container import Container, usable

from offsets.remote import process_root
from offsets.layout import identity
from offsets.remote import choose, identify
from offsets.scan import build_inputs

REPORT = ("import json, os, sys; print(json.dumps({'version': sys.version.split()[0], 'prefix': sys.prefix, "
          "'include': os.path.realpath('/opt/py/include/python3.11'), 'patchlevel': "
          "open('/opt/py/include/python3.11/patchlevel.h').read()}), flush=True); sys.stdin.read()")


def _pythons():
    py311, py312 = pyenv_python("3.11"), pyenv_python("3.12")
    if py311 is None or py312 is None:
        missing_input("pyenv's CPython 3.11 and 3.12 (`pyenv install 3.11 3.12`)")
    return py311.parent.parent, py312.parent.parent


@pytest.fixture(scope="module", params=[False, True], ids=["include-link", "include-and-file-link"])
def contained(request, tmp_path_factory):
    why = usable()
    if why:
        missing_tool("a usable unshare --mount and pivot_root (util-linux, as root)", why)
    p311, p312 = _pythons()
    tmp_path = tmp_path_factory.mktemp("container")
    root, headers, files = tmp_path / "root", tmp_path / "headers", tmp_path / "files"
    # this machine: 3.12's headers where the container's links point
    shutil.copytree(p312 / "include" / "python3.12", headers / "python3.11", symlinks=True)
    files.mkdir()
    shutil.copy(p312 / "include" / "python3.12" / "patchlevel.h", files / "patchlevel.h")
    # the container: 3.11 at /opt/py, its include directory a link to the absolute path `headers`
    for d in ("usr", "opt/py/bin", "opt/py/lib", "tmp"):
        (root / d).mkdir(parents=True)
    for name in ("bin", "lib", "lib64", "sbin"):
        os.symlink(f"usr/{name}", root / name)
    inside = Path(str(root) + str(headers))
    shutil.copytree(p311 / "include" / "python3.11", inside / "python3.11", symlinks=True)
    os.symlink(headers, root / "opt" / "py" / "include")
    if request.param:
        level = Path(str(root) + str(files))
        level.mkdir(parents=True)
        (inside / "python3.11" / "patchlevel.h").rename(level / "patchlevel.h")
        os.symlink(files / "patchlevel.h", inside / "python3.11" / "patchlevel.h")
    binds = {"/usr": "/usr", str(p311 / "bin"): "/opt/py/bin", str(p311 / "lib"): "/opt/py/lib"}
    argv = ["/usr/bin/env", "LD_LIBRARY_PATH=/opt/py/lib", "/opt/py/bin/python3.11", "-c", REPORT]
    with Container(root, binds, argv) as c:
        c.report = json.loads(c.ready)
        c.file_link, c.p311, c.p312, c.headers = request.param, p311, p312, headers
        yield c


def test_the_container_is_what_the_test_says(contained):
    """The premise: inside, 3.11's files at the linked path; here, 3.12's at the same path."""
    rep = contained.report
    assert rep["version"].startswith("3.11.")
    assert rep["prefix"] == "/opt/py" and rep["include"] == str(contained.headers / "python3.11")
    assert rep["patchlevel"] == (contained.p311 / "include/python3.11/patchlevel.h").read_text()
    here = (contained.headers / "python3.11" / "patchlevel.h").read_text()
    assert here != rep["patchlevel"] and '#define PY_MINOR_VERSION        12' in here.replace("\t", " ")


def test_paths_resolve_within_the_process_root(contained):
    root = f"/proc/{contained.pid}/root"
    want = root + contained.report["include"]                 # where the process itself says it is
    assert process_root.resolve(f"{root}/opt/py/include/python3.11") == want
    assert process_root.resolve(f"{root}/opt/py/../py/./include//python3.11") == want
    assert process_root.resolve(f"{root}/../../opt/py/include/python3.11") == want        # `..` stops at the root
    assert process_root.split(f"{root}/opt/py") == (root, "/opt/py")
    assert os.path.realpath(f"{root}/opt/py/include") != want[:-len("/python3.11")]    # what went wrong before
    assert process_root.escaping(want) == ([want + "/patchlevel.h"] if contained.file_link else [])


def test_identify_reads_the_containers_headers(contained):
    """identify names the container's prefix and include directory; its header digests are those of
    pyenv's 3.11 headers, or, when a header links outside the root's reach, not taken at all."""
    ident = identify.of_process(contained.pid)
    assert ident.version == contained.report["version"] and ident.version_from == "Py_Version"
    assert (ident.prefix, ident.include) == ("/opt/py", contained.report["include"])
    if contained.file_link:
        assert ident.files is None and ident.whole_inputs is None and "patchlevel.h" in ident.notes[0]
    else:
        mine = identity.installed_inputs(str(contained.p311 / "include" / "python3.11"), "", "x86_64-linux-gnu")
        theirs = ident.whole_inputs()
        assert theirs["headers"] == mine["headers"] and theirs["pyconfig_h"] == mine["pyconfig_h"]
        pyenv = identity.InstalledFiles(str(contained.p311 / "include" / "python3.11"), "", "x86_64-linux-gnu")
        for name in ("Include/object.h", "Include/cpython/pystate.h"):     # what a dependency set compares
            assert ident.files.digest(name) == pyenv.digest(name)
        assert ident.files.leaf("SIZEOF_VOID_P") == pyenv.leaf("SIZEOF_VOID_P") == "8"
    assert f"`offsets scan --prefix /proc/{contained.pid}/root/opt/py --install`" in choose.how_to_scan(ident)


def test_a_header_linking_out_of_the_root_makes_no_table_exact_by_headers(contained):
    """Without its build-id (the rule for a build nobody verified a table against), the contained
    3.11 is exact by its headers only when every header is read inside its root: with `patchlevel.h`
    a link out of it, where this machine has 3.12's, no struct is exact by headers, and the shipped
    3.11 table is not for it by inputs at all. Truth: pyenv's 3.11 table's own build (the table
    `make tables` verified against that libpython), and the container's files as the test laid them.
    Loosening caught (tests/identity_mutations.py, `identify-escaping`): the headers' digests taken
    though a header links out."""
    from offsets.runtime import choice, tables
    from offsets.runtime.earning import earning

    ident = identify.of_process(contained.pid)
    me = ident.me().replace(build_id=None)
    entry = next(e for e in tables.shipped_index()["tables"]
                 if e["name"] == f"cpython-{ident.version}-{ident.triple}")
    earn = earning(choice.entry_build(entry), me)
    if contained.file_link:
        assert earn.by is None and not earn.exact
    else:
        assert earn.by == "inputs"
        t = tables.load_shipped(entry)
        t.earning = earn
        assert t.exact(t.resolve_struct("PyListObject"))


def test_the_suggested_scan_reads_the_containers_build(contained):
    """`offsets scan --prefix /proc/PID/root/opt/py`'s build inputs: the container's 3.11 (not this
    machine's 3.12 at the same path), its pyconfig.h and Makefile flags, its libpython's build-id."""
    from offsets.check.binary import interpreter_binaries
    from offsets.remote.elf import build_id_of

    b = build_inputs.from_prefix(f"/proc/{contained.pid}/root/opt/py")
    own = contained.p311 / "include" / "python3.11"
    assert b.version == contained.report["version"]
    assert b.pyconfig.read_bytes() == (own / "pyconfig.h").read_bytes()
    assert identity.headers_digest(b.include_dir) == identity.headers_digest(own)
    assert b.cflags == build_inputs.makefile_cflags(next((contained.p311 / "lib" / "python3.11").glob(
        "config-3.11*/Makefile")))
    found = interpreter_binaries(Path(process_root.resolve(f"/proc/{contained.pid}/root/opt/py")), "3.11")
    assert [(name, build_id_of(str(path))) for path, name in found] == \
        [("lib/libpython3.11.so.1.0", build_id_of(str(contained.p311 / "lib" / "libpython3.11.so.1.0")))]


def test_the_suggested_command_makes_the_table_identify_then_knows(contained, tmp_path, monkeypatch, capsys):
    """The refusal's command, run as it is: the table it installs is the one a scan of pyenv's 3.11
    prefix here gives (the same files read), names headers relative to the include directory (a
    mirror's cache path appears nowhere), records the contained libpython's build-id, and makes
    identify exact by that build-id."""
    from offsets.cli import main
    from offsets.layout import table_yaml
    from offsets.runtime.tables import installed_entries

    tables = tmp_path / "own"
    monkeypatch.setenv("OFFSETS_TABLES", str(tables))
    ident = identify.of_process(contained.pid)
    command = choose.how_to_scan(ident).split("`")[1].split()
    assert command[:2] == ["offsets", "scan"]
    assert main(command[1:] + ["--quiet", "-o", str(tmp_path / "there.yaml")]) == 0
    assert main(["scan", "--prefix", str(contained.p311), "--quiet", "-o", str(tmp_path / "here.yaml")]) == 0
    there, here = table_yaml.load(tmp_path / "there.yaml"), table_yaml.load(tmp_path / "here.yaml")
    assert there.build.version == here.build.version == ident.version
    assert there.build.inputs == here.build.inputs and there.structs == here.structs
    assert not [s.name for s in there.structs.values() if not s.defined_in.startswith("Include/")]
    [entry] = installed_entries(ident.me())
    choice = choose.choose(ident, candidates=[entry])
    assert (choice.kind, choice.by) == ("exact", "build-id")
