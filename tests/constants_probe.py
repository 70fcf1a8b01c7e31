"""The probe of offsets.constant() inside a real interpreter, for make test's pyenv interpreters
(tests/test_constants_runtime.py) and make prove's sid 3.14/3.15 (tests/prove/test_constants_sid.py)."""
from __future__ import annotations

import re
from pathlib import Path

#: Runs inside each interpreter; prints one JSON line. Every expected value is the interpreter's.
PROBE = r'''
import ctypes, dis, inspect, json, opcode, sys, sysconfig
import offsets
from offsets.runtime.core import RUNTIME
from offsets.runtime.live.runner import check_constants
out = {"checked": {}}
names = [n for n in opcode.opmap if not n.startswith("<")]
out["checked"]["opcodes"] = [n for n in names if offsets.constant(n) != opcode.opmap[n]] or len(names)
co = {n: getattr(inspect, n) for n in dir(inspect) if n.startswith("CO_")}
def known(name):
    try:
        return offsets.constant(name) is not None
    except KeyError:                                                # UnknownNameError
        return False
out["absent"] = [n for n in co if not known(n)]                     # 3.11+'s inspect keeps CO_NOFREE
out["checked"]["CO_*"] = [n for n, v in co.items() if n not in out["absent"] and offsets.constant(n) != v] \
    or len(co) - len(out["absent"])
out["include"] = sysconfig.get_paths()["include"]
assert offsets.constant("PyLong_SHIFT") == sys.int_info.bits_per_digit
out["checked"]["PyLong_SHIFT"] = offsets.constant("PyLong_SHIFT")
flags = {"Py_TPFLAGS_HEAPTYPE": (type("C", (), {}), int), "Py_TPFLAGS_LONG_SUBCLASS": (bool, str),
         "Py_TPFLAGS_LIST_SUBCLASS": (list, tuple), "Py_TPFLAGS_TYPE_SUBCLASS": (type, int),
         "Py_TPFLAGS_HAVE_GC": (list, int)}
for name, (has, lacks) in flags.items():
    v = offsets.constant(name)
    assert has.__flags__ & v == v and not lacks.__flags__ & v, name
out["checked"]["Py_TPFLAGS_*"] = len(flags)
if sys.version_info >= (3, 11):
    def gen():
        yield 1
    g = gen(); next(g)
    at = id(g) + offsets.get("PyGenObject.gi_iframe") + offsets.get("_PyInterpreterFrame.owner")
    owner = ctypes.c_ubyte.from_address(at).value
    assert owner == offsets.constant("FRAME_OWNED_BY_GENERATOR"), owner
    out["checked"]["FRAME_OWNED_BY_GENERATOR"] = owner
out["earned"] = offsets.constant_info("PyLong_SHIFT").earned
r = check_constants(RUNTIME.current())
out["live"] = [len(r.passed), r.failed, r.ok]
print(json.dumps(out))
'''


def assert_shown(got: dict, version: tuple) -> None:
    """What PROBE printed in CPython `version` ((3, 14)): every answer the interpreter's own."""
    checked = got["checked"]
    assert isinstance(checked["opcodes"], int) and checked["opcodes"] > 100, checked["opcodes"]
    assert isinstance(checked["CO_*"], int) and checked["CO_*"] >= 9, checked["CO_*"]
    headers = "".join(h.read_text(errors="replace") for h in Path(got["include"]).rglob("*.h"))
    for name in got["absent"]:      # a CO_ name inspect has and the table lacks: no header defines it
        assert not re.search(rf"#\s*define\s+{name}\b", headers), name
    assert got["earned"] == "exact"
    passed, failed, ok = got["live"]
    assert ok and not failed and passed > 100, got["live"]
    if version >= (3, 11):
        assert checked["FRAME_OWNED_BY_GENERATOR"] == 1     # 1 from 3.11 on (pycore_frame.h)

