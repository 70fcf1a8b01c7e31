"""Run by test_capi.py inside each interpreter (a venv with offsets installed and jitext built), and
by tests/prove/test_windows_builds.py inside python.org's Windows builds under Wine: the C extension
reads live objects through the capsule; Python says what they must be. Prints one JSON line with
what was checked (`refused_alike`: names C and Python both refuse, which only a table that is not
exact may); any mismatch is an AssertionError (non-zero exit)."""
import json
import sys

import offsets
import jitext
from offsets.errors import NoMatchingTable, UnknownNameError

out = {"python": sys.version.split()[0], "checked": [], "not_checked": [], "refused_alike": []}


def agree(c, py, name):
    """The capsule's answer is Python's, or both refuse the name: a table that is only proven (python.org's
    Windows builds) answers what its live check read, and C callers get the same refusal."""
    try:
        want = py(name)
    except NoMatchingTable:
        try:
            c(name)
        except NoMatchingTable:
            out["refused_alike"].append(name)
            return
        raise AssertionError(f"C answered {name}, which Python refuses")
    assert c(name) == want, name


try:
    jitext.noimport_get("PyListObject.ob_item")
except RuntimeError as e:
    assert "PyOffsets_Import" in str(e), e
    out["checked"].append("getters fail before PyOffsets_Import()")

jitext.do_import()
b = offsets.build()
out["table"], out["match"] = b.table, b.kind
assert jitext.table() == (b.table, b.kind, b.build.hexversion), (jitext.table(), b)
out["checked"].append("table identity through the capsule")

for name in ("PyListObject.ob_item", "PyTupleObject.ob_item", "PyObject.ob_type", "PyTypeObject.tp_name",
             "PyThreadState.interp"):
    agree(jitext.get, offsets.get, name)
for name in ("PyListObject", "PyTupleObject", "PyThreadState", "PyTypeObject"):
    agree(jitext.size_of, offsets.sizeof, name)
f = offsets.field("PyASCIIObject.state.kind")
assert jitext.field("PyASCIIObject.state.kind") == (f.offset, f.size, f.bit_offset, f.bit_width, -1, 0)
out["checked"].append("C and Python answers agree")

try:
    jitext.get("PyListObject.ob_itemz")
    raise AssertionError("an unknown name gave an offset")
except UnknownNameError as e:
    assert isinstance(e, KeyError) and "PyListObject.ob_item" in str(e), e
out["checked"].append("unknown name -> UnknownNameError with a suggestion")

lst = [object(), "x", 42, 2.5, None]
assert all(jitext.list_item(lst, i) is lst[i] for i in range(len(lst)))
out["checked"].append("PyListObject.ob_item[i] is lst[i]")
tup = (object(), lst, "y")
assert all(jitext.tuple_item(tup, i) is tup[i] for i in range(len(tup)))
out["checked"].append("PyTupleObject.ob_item[i] is t[i]")

for value in (1, 2 ** 100 + 12345, -(2 ** 64) - 1, 7 ** 77):
    sign, digits = jitext.long_digits(value, sys.int_info.sizeof_digit)
    total = 0
    for d in reversed(digits):
        total = (total << sys.int_info.bits_per_digit) | d
    assert sign * total == value, (value, sign, digits)
out["checked"].append("PyLongObject digits")


def in_a_function():
    return jitext.frame_code(), sys._getframe().f_code


code, truth = in_a_function()
assert code is truth, (code, truth)
assert jitext.frame_code() is sys._getframe().f_code
out["checked"].append("current frame's code object through the thread state")

try:
    offsets.sizeof("listiterobject")
except UnknownNameError:
    out["not_checked"].append("listiterobject: not in this table yet")
else:
    it = iter(lst)
    for _ in range(3):
        next(it)
    index, seq = jitext.listiter(it)
    assert index == 3 and seq is lst, (index, seq)
    out["checked"].append("listiterobject.it_index == 3 and it_seq is lst")

# constants: the capsule's answer is the runtime's, and the interpreter's own truths agree
assert jitext.constant("PyLong_SHIFT") == offsets.constant("PyLong_SHIFT") == sys.int_info.bits_per_digit
flags = offsets.constant("Py_TPFLAGS_HEAPTYPE")
assert jitext.constant("Py_TPFLAGS_HEAPTYPE") == flags and not int.__flags__ & flags
try:
    jitext.constant("PyLong_SHIFTT")
    raise AssertionError("an unknown constant gave a value")
except UnknownNameError as e:
    assert "PyLong_SHIFT" in str(e), e
out["checked"].append("constants through the capsule: PyLong_SHIFT == sys.int_info.bits_per_digit")
if sys.version_info >= (3, 11):
    def gen():
        yield 1

    g = gen()
    next(g)
    assert jitext.gen_owner(g) == jitext.constant("FRAME_OWNED_BY_GENERATOR") == offsets.constant(
        "FRAME_OWNED_BY_GENERATOR"), (jitext.gen_owner(g), offsets.constant("FRAME_OWNED_BY_GENERATOR"))
    out["checked"].append("a generator's frame owner is FRAME_OWNED_BY_GENERATOR")

import errno
import offsets._offsets as capsule

v, err = capsule._get_detached("PySliceObject.step")           # not looked up yet: a miss
assert (v, err) == (-1, errno.EPERM), (v, err)
v, err = capsule._get_detached("PyListObject.ob_item")         # cached above
assert (v, err) == (offsets.get("PyListObject.ob_item"), 0), (v, err)
out["checked"].append("no thread state: a miss refused with EPERM, a cached name answered")

result = offsets.runtime.live_check()
assert result.ok, result.summary()
out["live_check"] = result.summary()
assert "yaml" not in sys.modules and "clang" not in sys.modules
out["gil_enabled"] = getattr(sys, "_is_gil_enabled", lambda: True)()
print(json.dumps(out))
