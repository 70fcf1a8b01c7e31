"""Issue 8 rule 5, in C and Python: once `offsets.use_table()` returns, no lookup gets the old table's
answer. Run inside the interpreter under test (`python race_use_table.py WORKDIR [THREADS] [SWITCHES]`).

SWITCHES tables are made from the one in use, each with `PyTypeObject.tp_name` at its own offset
(8 * k), so every answer names the table it came from. One thread switches through them with
`use_table(verify=False)`, 20 ms apart, and counts the switches that returned; THREADS readers (half through the
capsule, `offsets._offsets._get`, half through `offsets.get`; plus one reading the capsule with no
thread state, `_get_detached`) look the name up without pause. A lookup that starts after switch j
returned and ends before switch j+2 begins may only see table j or j+1: anything else is a wrong
answer. Prints one JSON line: lookups made, wrong answers (with samples), errors.
"""
import dataclasses
import json
import sys
import threading
import time
from pathlib import Path

import offsets
import offsets._offsets as capsule
from offsets import compact, runtime

NAME = "PyTypeObject.tp_name"


def variants(work: Path, n: int) -> list:
    base = runtime.current_table()
    s = base.structs[base.names.get("PyTypeObject", "PyTypeObject")]
    paths = []
    for k in range(n):
        fields = tuple(dataclasses.replace(f, offset=8 * k) if f.path == "tp_name" else f for f in s.fields)
        structs = dict(base.structs)
        structs[s.name] = dataclasses.replace(s, fields=fields)
        p = work / f"variant-{k}.jsonl"
        p.write_text(compact.dumps(dataclasses.replace(base, structs=structs), p.name))
        paths.append(p)
    return paths


def main(work: Path, threads: int = 16, switches: int = 30) -> dict:
    paths = variants(work, switches)
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
            allowed = {8 * k for k in range(max(g0 - 1, 0), min(g1 + 1, switches))}
            if v not in allowed:
                wrong.append(f"{kind}: {v} after switch {g0}, before {g1 + 1} (allowed {sorted(allowed)})")
        with lock:
            result["lookups"] += n
            result["detached_hits"] += hits
            result["wrong"] += wrong[:5]
            result["errors"] += errors[:5]

    kinds = ["c" if i % 2 else "py" for i in range(threads)] + ["detached"]
    pool = [threading.Thread(target=reader, args=(k,)) for k in kinds]
    done[0] = 1
    for t in pool:
        t.start()
    for p in paths[1:]:
        time.sleep(0.02)          # readers run within every table's time, not only around the switches
        offsets.use_table(p, verify=False)
        done[0] += 1
    time.sleep(0.02)
    stop.set()
    for t in pool:
        t.join()
    result["switches"] = done[0]
    result["gil_enabled"] = getattr(sys, "_is_gil_enabled", lambda: True)()
    return result


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(Path(args[0]), *map(int, args[1:]))))
