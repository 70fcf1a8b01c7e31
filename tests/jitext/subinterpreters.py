"""Sub-interpreters asking the capsule at once. Run inside the interpreter under test
(`_xxsubinterpreters` up to 3.12, `_interpreters` from 3.13), with offsets importable:

    python subinterpreters.py WORKDIR [INTERPRETERS]

The main interpreter imports offsets._offsets and looks up NAMES[0] through the capsule. Then
INTERPRETERS threads each create an isolated sub-interpreter (its own GIL from 3.12) and run
CHILD in it, all at once: it imports offsets._offsets there, reads NAMES[0] with no thread state
(answered only from the cache the main interpreter filled: the process's State was adopted, not
replaced), looks every name up through the capsule (misses go to that interpreter's own
offsets.runtime) and through offsets.get(), and writes what it saw to a file. Back in the main
interpreter, every name a sub-interpreter looked up is read with no thread state: each must be
answered from the shared cache. Prints one JSON line: the main interpreter's answers and identity,
and each sub-interpreter's.
"""
import json
import sys
import threading
from pathlib import Path

try:
    import _interpreters as interpreters        # 3.13+
except ImportError:
    import _xxsubinterpreters as interpreters   # 3.12

NAMES = ("PyListObject.ob_item", "PyTupleObject.ob_item", "PyObject.ob_type", "PyTypeObject.tp_name",
         "PyThreadState.interp", "PyInterpreterState.id", "PyCodeObject.co_flags")

CHILD = """
import json, offsets, offsets._offsets as c
names = {names!r}
first = c._get_detached(names[0])          # before any lookup in this interpreter: only the shared cache
config = None
try:
    import _interpreters
    config = vars(_interpreters.get_config(_interpreters.get_current()[0]))
except ImportError:
    pass
got = {{"detached_first": list(first), "c": [c._get(n) for n in names], "py": [offsets.get(n) for n in names],
       "identity": list(c._identity()), "match": offsets.build().kind, "gil": config and config.get("gil")}}
with open({out!r}, "w") as f:
    json.dump(got, f)
"""


def create():
    if interpreters.__name__ == "_interpreters":
        return interpreters.create("isolated")
    return interpreters.create(isolated=True)


def run(interp, code: str) -> None:
    failure = interpreters.run_string(interp, code)   # 3.13+ returns what was raised; 3.12 raises
    if failure is not None:
        raise RuntimeError(f"in a sub-interpreter: {failure}")


def main(work: Path, count: int = 4) -> dict:
    import offsets
    import offsets._offsets as c

    out = {"main": {"c": c._get(NAMES[0]), "identity": list(c._identity()), "py": [offsets.get(n) for n in NAMES]},
           "subs": [], "errors": []}
    start = threading.Barrier(count)

    def one(k: int) -> None:
        try:
            interp = create()
            try:
                start.wait()
                path = work / f"sub-{k}.json"
                run(interp, CHILD.format(names=NAMES, out=str(path)))
                out["subs"].append(json.loads(path.read_text()))
            finally:
                interpreters.destroy(interp)
        except Exception as e:                      # reported, not raised: the caller asserts
            out["errors"].append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=one, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out["main"]["detached_after"] = [list(c._get_detached(n)) for n in NAMES]
    out["main"]["identity_after"] = list(c._identity())
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 4)))
