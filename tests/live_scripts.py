"""Scripts the proof tests run inside other interpreters, shared by tests/test_proofs.py and
tests/prove (which has its own conftest, so neither imports the other)."""

#: Run in an interpreter: the live check of every other table of its minor version, flags and
#: target, and each field and size it proved compared with the interpreter's exact table.
WRONG_SCRIPT = r"""
import json, sys
from offsets import runtime
index = runtime.shipped_index()["tables"]
exact = [e for e in index if e["hexversion"] == sys.hexversion and e.get("vendor") in (None, "upstream")
         and e["triple"] == runtime.identity.running_target()["triple"] and not any(e["config"].values())][0]
truth = runtime.load_shipped(exact)
out = {}
for e in index:
    if e is exact or e["hexversion"] >> 16 != sys.hexversion >> 16 or any(e["config"].values()) or \
            e["triple"] != exact["triple"]:
        continue
    t = runtime.load_shipped(e)
    res = runtime.live_check(t)
    wrong, compared = [], 0
    for key, path in sorted(res.proven, key=str):
        k = truth.resolve_struct(key)
        if k is None:
            continue
        mine = t.size(key) if path is None else t.fields(key)[path][:2]
        real = truth.size(k) if path is None else (truth.fields(k).get(path) or (None,))[:2]
        compared += 1
        if mine != real:
            wrong.append(f"{key}.{path}: {mine} proven, {real} in the exact table")
    out[e["name"]] = {"ok": res.ok, "compared": compared, "wrong": wrong}
print(json.dumps(out))
"""
