"""Runs jitdemo against live objects and checks each read with Python (python demo.py, after building).
Prints one JSON line: the table it was compiled for, and what was checked."""
import gc
import json
import sys

import jitdemo

lst = [object(), "x", 3]
it = iter(lst)
next(it)
next(it)
compiled, runtime = jitdemo.listiter(it)
assert compiled == runtime == (2, lst), (compiled, runtime)

tup = (object(), lst, "y")
for i, want in enumerate(tup):
    assert jitdemo.tuple_item(tup, i) == (want, want), i


def a_function():
    return jitdemo.frame_code(), sys._getframe().f_code


(c1, c2), truth = a_function()
assert c1 is truth and c2 is truth, (c1, c2, truth)
checked = ["list iterator it_index/it_seq", "tuple items", "current frame's code object"]


def gen():
    yield 1


g = gen()
next(g)     # suspended: its frame belongs to the generator
what, compiled, runtime = jitdemo.gen_state(g)
if what is None:    # 3.8, 3.9: a generator's frame carries no state enum; the table has none either
    import offsets

    try:
        offsets.constant("FRAME_OWNED_BY_GENERATOR")
        raise AssertionError("a table before 3.10 has FRAME_OWNED_BY_GENERATOR")
    except KeyError:
        checked.append("no frame state constant before 3.10")
else:
    assert compiled[0] == compiled[1] and runtime == compiled, (what, compiled, runtime)
    checked.append(f"suspended generator's frame {what} == " +
                   ("FRAME_OWNED_BY_GENERATOR" if what == "owner" else "FRAME_SUSPENDED") + f" ({compiled[1]})")

# walk(): the frames from here outward, compared with Python's own chain at the same moment
# (sys._getframe() and f_back never show a C-stack shim or an incomplete frame).
skipped = {}    # case -> (C-stack shims, incomplete frames) the walk passed over


def frames_now(case):
    codes, shims, incomplete = jitdemo.walk()
    frame, truth = sys._getframe(), []
    while frame is not None:
        truth.append(frame.f_code)
        frame = frame.f_back
    assert len(codes) == len(truth) and all(a is b for a, b in zip(codes, truth)), \
        (case, [getattr(c, "co_name", c) for c in codes], [c.co_name for c in truth])
    skipped[case] = (shims, incomplete)
    return shims, incomplete


def python_calls_python():
    frames_now("python")


def in_a_generator():
    frames_now("generator")     # a running generator's frame: owned by the generator, never incomplete
    yield


class Point:
    def __init__(self, x):
        if x == 99:
            frames_now("__init__")
        self.x = x


def make_points():
    for i in range(100):    # warmed up: 3.13 specializes the call to CALL_ALLOC_AND_ENTER_INIT
        Point(i)


def with_a_cell():
    x = 1           # MAKE_CELL, before the frame is complete, allocates a cell: a collection may start
    return lambda: x


collections = []


def during_a_collection(phase, info):   # what a callback raises is lost: keep it
    if phase == "start":
        try:
            collections.append(frames_now("collection"))
        except AssertionError as e:
            collections.append(e)


python_calls_python()
gc.collect()
kept = []   # made before the threshold drops; without the GIL (3.13t) a thread counts its allocations in batches of 512, less its frees
threshold = gc.get_threshold()
gc.callbacks.append(during_a_collection)
gc.set_threshold(1)     # the next allocation collects (3.11 inside it; 3.12+ at the next eval breaker)
try:
    while not collections and len(kept) < 100_000:
        kept.append(with_a_cell())
finally:
    gc.set_threshold(*threshold)
    gc.callbacks.remove(during_a_collection)
assert collections and not [e for e in collections if isinstance(e, AssertionError)], collections
skipped["collection"] = max(collections, key=lambda shims_incomplete: shims_incomplete[1])
sorted([3, 1, 2], key=lambda x: frames_now("sorted key") or x)   # C (sorted) calls back into Python
next(in_a_generator())
make_points()
specialized = None
if sys.version_info >= (3, 11):
    import dis

    specialized = [i.opname for i in dis.get_instructions(make_points, adaptive=True) if i.opname.startswith("CALL")]
checked.append("walk(): the frames sys._getframe() shows, shims and incomplete frames skipped")
print(json.dumps({"python": sys.version.split()[0], "compiled_for": jitdemo.COMPILED_FOR, "checked": checked,
                  "skipped": skipped, "calls_in_make_points": specialized,
                  "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)()}))
