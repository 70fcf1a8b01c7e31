"""python.org 3.13.15 compiled the way another machine would (static, other options, another
configure cache: foreign_builds.elsewhere) is answered exactly by the shipped upstream 3.13.15
table, struct by struct (its pyconfig.h differs only in macros no struct depends on), and every
answer equals that build's own DWARF; in process and from another process (`offsets identify`,
`offsets stack`), release and free-threaded.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import jit_needs  # noqa: E402
from offsets.tools import foreign_builds as fb  # noqa: E402

CONFIGS = ["release", "free-threaded"]


def _every_struct(python) -> dict:
    """struct key -> (how it is earned, {path: offset}) in `python`, for every struct of its table."""
    code = r'''
import json
from offsets import runtime as r
t = r.RUNTIME.current()
m = r.build()
out = {"__table__": [m.table, m.kind, t.earning.by]}
for key in t.order:
    how = m.earned(key)
    out[key] = [how, {p: row[0] for p, row in t.fields(key).items()} if how == "exact" else {}, t.size(key)]
print(json.dumps(out))
'''
    out = subprocess.run([str(python), "-S", "-c", code], capture_output=True, text=True,
                         env=jit_needs.clean_env("/nonexistent-tables"))
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.mark.parametrize("config", CONFIGS)
def test_the_shipped_table_is_exact_for_it_and_every_answer_is_its_dwarfs(config):
    from offsets.scan import dwarf

    python = fb.elsewhere(config)
    got = _every_struct(python)
    table, kind, by = got.pop("__table__")
    suffix = "-freethreaded" if config == "free-threaded" else ""
    assert (table, kind, by) == (f"cpython-3.13.15{suffix}-x86_64-linux-gnu", "exact", "inputs")
    exact = {k: v for k, v in got.items() if v[0] == "exact"}
    assert len(exact) >= 0.99 * len(got), sorted(k for k, v in got.items() if v[0] != "exact")[:20]
    info = dwarf.read(python)       # the static executable's own DWARF: the truth
    compared = 0
    for key, (_, fields, size) in exact.items():
        s = info.structs.get(key)
        if s is None:
            continue
        assert s.size == size, key
        theirs = {f.path: f.offset for f in s.fields}
        for path, offset in fields.items():
            if path in theirs:
                assert theirs[path] == offset, f"{key}.{path}"
                compared += 1
    assert compared > 5000


@pytest.mark.parametrize("config", CONFIGS)
def test_the_needs_list_is_exact_there(config):
    python = fb.elsewhere(config)
    names = jit_needs.names("3.13", free_threaded=config == "free-threaded")
    got = jit_needs.answers(python, names)
    tally = jit_needs.tally(got)
    answered = tally["exact"] + tally["proven"] + tally["refused"]
    assert tally["exact"] >= 0.99 * answered, tally
    bad, _ = jit_needs.wrong(got, *jit_needs.truth(python, None, names))
    assert not bad


@pytest.mark.parametrize("config", CONFIGS)
def test_another_process_is_read_by_the_same_rule(config, tmp_path):
    """offsets identify --pid: exact by its headers, struct by struct (remote/choose.py calls the
    runtime's rule); offsets stack --pid: every thread's stack as the process recorded it itself."""
    from parked_target import Parked, stacks_of

    t = Parked(fb.elsewhere(config), tmp_path)
    try:
        env = {**os.environ, "OFFSETS_TABLES": str(tmp_path / "none")}

        def offsets_json(*args):
            proc = subprocess.run([sys.executable, "-m", "offsets", *args], capture_output=True, text=True, env=env)
            assert proc.returncode == 0, proc.stderr
            return json.loads(proc.stdout)

        keys = offsets_json("identify", "--pid", str(t.pid), "--json")
        assert (keys["earned"], keys["earned_by"], keys["free_threaded"]) == \
            ("exact", "headers", config == "free-threaded"), keys
        assert stacks_of(offsets_json("stack", "--pid", str(t.pid), "--json")) == t.record
    finally:
        t.close()
