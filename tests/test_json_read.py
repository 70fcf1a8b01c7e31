"""offsets/layout/json_read.py against its independent truth, the json module: the same value for
every JSON text, and ValueError wherever json refuses; and the runtime reads with it without
importing json (or re) at all."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from offsets.layout import json_read

ROOT = Path(__file__).resolve().parent.parent

values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                      lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=30)


def test_the_c_scanner_is_used_here():
    assert json_read._scan is not None


@settings(max_examples=300, deadline=None)
@given(values, st.sampled_from([None, 1]), st.sampled_from([(",", ":"), (", ", ": ")]))
def test_the_same_value_as_json(value, indent, separators):
    text = json.dumps(value, indent=indent, separators=separators)
    assert json_read.loads(text) == json.loads(text)
    assert json_read.loads(text.encode()) == json.loads(text.encode())


@pytest.mark.parametrize("text", ["", " ", "[1,", "[1] x", "{'a': 1}", "[1,]", "nul", '"\\x"', "01", "[1]]",
                                  "\ufeff[1]"])
def test_refused_where_json_refuses(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        json_read.loads(text)


@pytest.mark.parametrize("text", [" [1] ", "\n{}\n", "NaN", "[Infinity, -Infinity]", "1e400", '"\\ud800"'])
def test_edges_as_json(text):
    got, want = json_read.loads(text), json.loads(text)
    assert repr(got) == repr(want)


def test_the_first_lookup_imports_neither_json_nor_re():
    code = ("import sys, offsets; offsets.get('PyListObject.ob_item')\n"
            "print(sorted(m for m in ('json', 're', 'hashlib', 'subprocess', 'threading', 'dataclasses') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + code],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "OFFSETS_AUTOSCAN": "0"}).stdout
    assert out.strip() == "[]", out
