"""Runs jitdemo against live objects and checks each read with Python (python demo.py, after building).
Prints one JSON line: the table it was compiled for, and what was checked."""
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
print(json.dumps({"python": sys.version.split()[0], "compiled_for": jitdemo.COMPILED_FOR, "checked": checked,
                  "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)()}))
