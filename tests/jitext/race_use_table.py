"""In C and Python: once `offsets.use_table()` returns, no lookup gets the old table's
answer. Run inside the interpreter under test (`python race_use_table.py WORKDIR [THREADS] [SWITCHES]`).

SWITCHES tables are made from the one in use, each with `PyTypeObject.tp_name` swapped with
another member (a valid layout, at its own offset), so every answer names the table it came from. One thread switches through them with
`use_table(verify=False)`, 20 ms apart, and counts the switches that returned; THREADS readers (half through the
capsule, `offsets._offsets._get`, half through `offsets.get`; plus one reading the capsule with no
thread state, `_get_detached`) look the name up without pause. A lookup that starts after switch j
returned and ends before switch j+2 begins may only see table j or j+1: anything else is a wrong
answer. Prints one JSON line: lookups made, wrong answers (with samples), errors.

The capsule answers a miss by calling offsets.runtime.get(), so its answers can only be as fresh as
the Python side's. `main(..., python_shim=True)` first replaces runtime.get with a lookup that reads
the table in use under one lock that `RUNTIME.install` also takes (what an atomic Python side gives),
so that the capsule's own switching is tested alone; without it, both sides are tested as they are.
"""
import dataclasses
import json
import sys
import threading
import time
from pathlib import Path

import offsets
from offsets.layout import compact
from offsets import runtime

NAME = "PyTypeObject.tp_name"


def variants(work: Path, n: int) -> tuple:
    """`n` tables made from the one in use, each a valid layout (no overlap: the model refuses one)
    in which `tp_name` has swapped places with another pointer-sized member; and each one's answer.
    Each holds PyTypeObject alone (what the race reads), so that checking it is quick."""
    whole = runtime.current_table()
    name = whole.names.get("PyTypeObject", "PyTypeObject")
    base = dataclasses.replace(whole, structs={name: whole.structs[name]},
                               names={k: v for k, v in whole.names.items() if v == name})
    s = base.structs[name]
    tp_name = next(f for f in s.fields if f.path == "tp_name")
    others = [f for f in s.fields if "." not in f.path and f.size == tp_name.size and not f.is_bitfield
              and f.array_len is None and f.path != "tp_name"]
    assert len(others) >= n - 1, f"only {len(others)} members to swap tp_name with"
    paths, answers = [], []
    for k in range(n):
        if k == 0:
            fields = s.fields
        else:
            other = others[k - 1]
            fields = tuple(dataclasses.replace(f, offset=other.offset) if f.path == "tp_name" else
                           dataclasses.replace(f, offset=tp_name.offset) if f.path == other.path else f
                           for f in s.fields)
        structs = dict(base.structs)
        structs[s.name] = dataclasses.replace(s, fields=fields)
        p = work / f"variant-{k}.jsonl"
        p.write_text(compact.dumps(dataclasses.replace(base, structs=structs), p.name))
        paths.append(p)
        answers.append(next(f.offset for f in fields if f.path == "tp_name"))
    return paths, answers


def atomic_python_shim() -> None:
    """runtime.get and RUNTIME.install made atomic with one lock; before offsets._offsets is imported."""
    assert "offsets._offsets" not in sys.modules, "the shim must come before the capsule's import"
    lock = threading.RLock()
    rt = runtime.RUNTIME
    set_ = rt.install

    def _set(table, match):
        with lock:
            set_(table, match)

    def get(name):
        with lock:
            t, key, path = rt.lookup(name, "get")
            return t.fields(key)[path][0]

    rt.install, runtime.get = _set, get


def main(work: Path, threads: int = 16, switches: int = 30, python_shim: bool = False) -> dict:
    if python_shim:
        atomic_python_shim()
    import offsets._offsets as capsule

    paths, answers = variants(work, switches)
    for p in paths:                # each file is checked in full once, before the race: the switches are raced
        offsets.use_table(p, verify=False)
    offsets.use_table(paths[0], verify=False)
    done = [0]          # switches that have returned: table done[0] - 1 is in use
    stop = threading.Event()
    result = {"lookups": 0, "detached_hits": 0, "wrong": [], "errors": []}
    lock = threading.Lock()

    def reader(kind: str) -> None:
        n = hits = 0
        wrong, errors = [], []
        while not stop.is_set():
            g0 = done[0]
            try:
                if kind == "c":
                    v = capsule._get(NAME)
                elif kind == "py":
                    v = offsets.get(NAME)
                else:
                    v, err = capsule._get_detached(NAME)
                    if v < 0:
                        if err != 1:     # EPERM: a miss with no thread state, refused
                            errors.append(f"detached: {v} errno {err}")
                        continue
                    hits += 1
            except Exception as e:    # noqa: BLE001 - any error is a failure, reported
                errors.append(f"{kind}: {type(e).__name__}: {e}"[:200])
                continue
            finally:
                n += 1
            g1 = done[0]
            allowed = {answers[k] for k in range(max(g0 - 1, 0), min(g1 + 1, switches))}
            if v not in allowed:
                wrong.append(f"{kind}: {v} after switch {g0}, before {g1 + 1} (allowed {sorted(allowed)})")
        with lock:
            result["lookups"] += n
            result["detached_hits"] += hits
            result["wrong"] += wrong[:5]
            result["errors"] += errors[:5]

    # with the shim, runtime.get is not offsets' own: every reader is a C one
    kinds = ["c" if i % 2 or python_shim else "py" for i in range(threads)] + ["detached"]
    pool = [threading.Thread(target=reader, args=(k,)) for k in kinds]
    # the GIL changes hands every 0.1 ms, not 5: more interleavings, and the switching thread, one of
    # 18 that want it, gets it back soon after each pause (at 5 ms, a switch waited ~90 ms per I/O)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    done[0] = 1
    for t in pool:
        t.start()
    try:
        for p in paths[1:]:
            time.sleep(0.02)          # readers run within every table's time, not only around the switches
            offsets.use_table(p, verify=False)
            done[0] += 1
        time.sleep(0.02)
    finally:                          # a failed switch must not leave the readers spinning
        stop.set()
        for t in pool:
            t.join()
        sys.setswitchinterval(interval)
    result["switches"] = done[0]
    result["python_shim"] = python_shim
    result["gil_enabled"] = getattr(sys, "_is_gil_enabled", lambda: True)()
    return result


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(Path(args[0]), *map(int, args[1:]))))
