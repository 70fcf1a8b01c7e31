"""The runtime alone (`pip install offsets`, OFFSETS_AUTOSCAN=0) asked in another interpreter: a copy
of a pyenv build (offsets/tools/foreign_builds.py), its answers printed as JSON. Any traceback there
is a failure: bad input gets the next rule down (docs/identity.md), never an exception."""
from __future__ import annotations

import json
import os
import subprocess
from contextlib import contextmanager

from conftest import REPO, missing_input
from offsets.errors import BuildError

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[2])         # the checkout (-I: no PYTHON* variable, no user site)
import offsets
from offsets.errors import NoMatchingTable
from offsets.runtime import tables
ask = json.load(open(sys.argv[1]))
if ask.get("own_only"):                 # the chain holds the table under test alone
    tables.shipped_index()["tables"] = []
b = offsets.build()
out = {"kind": b.kind, "detail": b.detail, "structs": {}, "constants": {}, "fields": {}}
from offsets.runtime import running_identity
me = running_identity()
out["build_id"], out["build_id_why"] = me.build_id, me.where.get("build_id_why")
for name in ask["structs"]:
    out["structs"][name] = b.earned(name)
for name in ask.get("constants", ()):
    try:
        out["constants"][name] = offsets.constant_info(name).earned
    except NoMatchingTable:
        out["constants"][name] = "refused"
for name in ask.get("fields", ()):
    try:
        f = offsets.field(name)
        out["fields"][name] = [f.offset, f.earned]
    except NoMatchingTable:
        out["fields"][name] = "refused"
print(json.dumps(out))
"""


def run_runtime(python, ask: dict, tables_dir, tmp_path, extra_env=None) -> dict:
    """What the runtime alone (OFFSETS_AUTOSCAN=0) in `python` says of `ask`'s structs, constants and
    fields, with `tables_dir` as its own tables; any traceback is a failure."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "ask.json").write_text(json.dumps(ask))
    (tmp_path / "child.py").write_text(CHILD)
    env = dict(os.environ, OFFSETS_AUTOSCAN="0", OFFSETS_TABLES=str(tables_dir), **(extra_env or {}))
    env.pop("OFFSETS_STRICT", None)
    proc = subprocess.run([str(python), "-I", str(tmp_path / "child.py"), str(tmp_path / "ask.json"), str(REPO)],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@contextmanager
def running(python, env=None):
    """A process of `python` idling once its interpreter has started: its pid."""
    proc = subprocess.Popen([str(python), "-S", "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline() == "ready\n"
        yield proc.pid
    finally:
        proc.stdin.close()
        proc.wait()


def copy_of(make):
    """`make()` (a foreign_builds case); a pyenv build that is not there is a missing input."""
    try:
        return make()
    except BuildError as e:
        missing_input(str(e))


def own_table(pyenv_scans, tmp_path_factory, minor: str, table=None):
    """pyenv's `minor` table as the scanner makes it (what `make tables` ships), or `table`, installed
    as the only own table of a new tables directory: (table, directory)."""
    from offsets.cli.scan import install

    table = table or pyenv_scans.get(minor)[2]
    d = tmp_path_factory.mktemp(f"own-{minor}")
    install(table, d)
    return table, d


def inputs_of(python):
    """The build inputs of a copy, found by running it (its own include directory)."""
    from offsets.scan import build_inputs

    return build_inputs.from_python(str(python))
