"""CPython describes itself: every slot of `_PyRuntime.debug_offsets`, read live inside Debian sid's
own interpreters (3.13, 3.14, 3.15) and upstream 3.13.15 (release and free-threaded, compiled from
the pristine tarball), against what `offsets.get`/`offsets.sizeof` answer there for the same field.

The slot -> field map comes from each build's installed headers (debug_offsets.py), never from our
tables; the values are the running interpreter's own. Two runs per interpreter:

- shipped: only the tables in the package (OFFSETS_TABLES is an empty directory). A refusal is
  allowed, a wrong number never.
- own build: after `offsets scan --python PY --install`. Every slot must be exact.
"""
from __future__ import annotations

import json

import pytest

import realbuilds
from debug_offsets import LIVE, slots_of

BUILDS = [f"sid-{m}" for m in sorted(realbuilds.SID_PYTHON)] + \
    [f"upstream-{realbuilds.UPSTREAM_VERSION}-{c}" for c in ("release", "free-threaded")]


def _live(python, headers, tables_dir) -> dict:
    """Run LIVE inside `python`: each slot's live value and offsets' answer, counted."""
    init = headers.initializer()
    slots, _ = slots_of(init)
    assert slots, f"no offsetof/sizeof slot in {headers.include}'s debug offsets initializer"
    # every member is 8 bytes (the cookie char[8], the rest uint64_t): the initializer names them all
    assert headers.values(["sizeof(_Py_DebugOffsets)"]) == [8 * len(init)], "the initializer leaves slots out"
    pos = headers.positions([s.path for s in slots] + ["cookie", "version"])
    assert all(size == 8 for _, size in pos.values()), f"a debug offsets slot is not 8 bytes: {pos}"
    todo = {"cookie": pos["cookie"][0], "version": pos["version"][0],
            "slots": [[s.path, s.kind, s.name, pos[s.path][0]] for s in slots]}
    out = json.loads(realbuilds.run_in(python, LIVE, json.dumps(todo), env={"OFFSETS_TABLES": str(tables_dir)}))
    # gcc's slot positions are right only if they find the cookie and the running version there
    assert out["cookie"] == "xdebugpy" and out["version"] == out["hexversion"], (out["cookie"], out["version"])
    out["refused"] = [s for s in out["slots"] if isinstance(s[3], str)]
    out["wrong"] = [s for s in out["slots"] if not isinstance(s[3], str) and s[2] != s[3]]
    out["exact"] = len(out["slots"]) - len(out["refused"]) - len(out["wrong"])
    print(f"\n{python.name} {hex(out['hexversion'])}: {out['exact']} of {len(out['slots'])} slots exact, "
          f"{len(out['refused'])} refused, {len(out['wrong'])} wrong; table: {out['table'][:160]}")
    for path, name, live, ours in out["wrong"]:
        print(f"  WRONG {path} = {name}: CPython says {live}, offsets {ours}")
    for path, name, live, ours in out["refused"]:
        print(f"  refused {path} = {name} (CPython says {live}): {ours[:160]}")
    return out


@pytest.mark.parametrize("build", BUILDS)
def test_shipped_tables_are_never_wrong(build, interpreter, headers_of, tmp_path):
    py = interpreter(build)
    out = _live(py, headers_of(py), tmp_path)
    assert not out["wrong"], f"{len(out['wrong'])} wrong answers on {build}: {out['wrong']}"


@pytest.mark.parametrize("build", BUILDS)
def test_own_build_table_is_exact_on_every_slot(build, interpreter, headers_of, installed_tables):
    py = interpreter(build)
    out = _live(py, headers_of(py), installed_tables(py))
    assert out["exact"] == len(out["slots"]), \
        f"{build}: {len(out['refused'])} refused, {len(out['wrong'])} wrong of {len(out['slots'])}"
