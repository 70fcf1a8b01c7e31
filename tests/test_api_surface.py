"""What a new user meets first: the errors are `offsets.X`, the functions say what they do (help(),
a plain repr), answers print bare on the command line as `offsets get` prints an offset. Values are
checked against the live interpreter (sys.int_info, a list's items), not against the runtime itself.
"""
from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import offsets
from offsets import errors


@pytest.mark.parametrize("name", ["OffsetsError", "NoMatchingTable", "UnknownNameError", "AmbiguousNameError",
                                  "TableError", "CorruptTableError", "VerifyError"])
def test_the_errors_a_caller_catches_are_offsets_attributes(name):
    assert getattr(offsets, name) is getattr(errors, name)
    assert issubclass(getattr(offsets, name), offsets.OffsetsError)
    assert name in dir(offsets)


def test_an_unknown_name_is_caught_by_its_class_on_the_package():
    with pytest.raises(offsets.UnknownNameError, match="PyListObject.ob_item"):
        offsets.get("PyListObject.ob_itme")
    try:
        offsets.sizeof("PyListObjekt")
    except offsets.OffsetsError as e:       # the catch-all
        assert isinstance(e, KeyError)


@pytest.mark.parametrize("fn, first", [("get", "get(name) -> int"), ("sizeof", "sizeof(struct) -> int"),
                                       ("constant", "constant(name) -> int")])
def test_get_sizeof_and_constant_say_what_they_do(fn, first):
    f = getattr(offsets, fn)
    doc = inspect.getdoc(f)
    assert doc.splitlines()[0] == first and "UnknownNameError" in doc and "Return self[key]" not in doc
    assert repr(f).startswith(f"<built-in method {fn} of ") and f.__module__ == "offsets"
    import pydoc

    assert first in pydoc.render_doc(f)
    with pytest.raises(TypeError, match=f"{fn}\\(\\) takes exactly one argument"):
        f()


def test_the_lookups_answer_what_the_interpreter_holds():
    import ctypes

    lst = [object(), object()]
    off = offsets.get("PyListObject.ob_item")
    items = ctypes.c_void_p.from_address(id(lst) + off).value
    assert ctypes.c_void_p.from_address(items + ctypes.sizeof(ctypes.c_void_p)).value == id(lst[1])
    assert offsets.constant("PyLong_SHIFT") == sys.int_info.bits_per_digit


def test_reprs_are_plain():
    assert repr(offsets.field("PyListObject.ob_item")).startswith("EarnedField(path='ob_item', offset=")
    assert repr(offsets.constant_info("PyLong_SHIFT")).startswith("EarnedConstant(name='PyLong_SHIFT', value=")
    assert repr(offsets.build()).startswith("<offsets table cpython-")


def test_the_constant_command_prints_the_bare_value_and_details_on_request():
    cmd = [sys.executable, "-m", "offsets", "constant"]
    bare = subprocess.run(cmd + ["PyLong_SHIFT"], capture_output=True, text=True, check=True).stdout
    assert bare == f"{sys.int_info.bits_per_digit}\n"
    detail = subprocess.run(cmd + ["-v", "PyLong_SHIFT"], capture_output=True, text=True, check=True).stdout
    assert detail.startswith(f"{sys.int_info.bits_per_digit} (int, 4 bytes, macro, Include/") and "; exact)" in detail
