"""What a first lookup reads its tables with in offsets._lookup (`_lookup_digest.h`,
`_lookup_json.h`), against their independent truths, hashlib, the json module and str's own
methods: the same digest for every length around a block's; lowercase hex digits as str says; the same value for every JSON line the shipped tables hold, and
for generated texts, or a decline (None) that leaves the text to json; never a value where json
refuses. And the Python fallbacks, where the module is not built, give the same."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import missing_input
from offsets import _lookup
from offsets.layout import compact_read, json_read

ROOT = Path(__file__).resolve().parent.parent
COMPACT = ROOT / "offsets" / "data" / "compact"


@pytest.mark.parametrize("sha256_hex", [_lookup.sha256_hex, _lookup._sha256_hex_portable], ids=["in-use", "portable"])
def test_sha256_is_hashlib_s_at_every_length_around_a_block(sha256_hex):
    data = bytes(range(256)) * 5
    for n in [*range(0, 200), 1000, 1024, 1025, len(data)]:
        assert sha256_hex(data[:n]) == hashlib.sha256(data[:n]).hexdigest(), n
    many = os.urandom(64 * 1000 + 17)           # many blocks in one call: the state carried between them
    assert sha256_hex(many) == hashlib.sha256(many).hexdigest()


def test_sha256_uses_the_cpu_s_sha_extensions_where_it_has_them():
    """On an x86-64 CPU that has SHA-NI (cpuinfo's sha_ni), sha256_hex hashes with it: the test
    above then checks those rounds, and its portable case the others."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        missing_input("/proc/cpuinfo (this test reads the CPU's flags from Linux's /proc)")
    has = " sha_ni" in flags and os.uname().machine == "x86_64"
    assert _lookup._sha256_rounds() == ("sha-ni" if has else "portable")
    assert _lookup.sha256_hex(bytearray(b"abc")) == _lookup.sha256_hex(memoryview(b"abc")) == \
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"      # FIPS 180-4's example
    with pytest.raises(TypeError):
        _lookup.sha256_hex("text")


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from("0123456789abcdefABCDEFgx \u00e9"), max_size=24) | st.binary(max_size=8) | st.none())
def test_lower_hex_is_what_str_says(text):
    want = isinstance(text, str) and all(c in "0123456789abcdef" for c in text)
    assert _lookup.lower_hex(text) is want


def test_every_json_line_of_the_shipped_tables_reads_as_json_reads_it():
    read = 0
    for path in sorted(COMPACT.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                want = json.loads(line)
            except ValueError:
                assert _lookup.json_value(line) is None      # a pool's digest and base64 lines
                continue
            got = _lookup.json_value(line)
            assert got is not None, (path.name, line[:80])     # the tables' JSON is all read in C
            assert got[0] == want, (path.name, line[:80])
            read += 1
    assert read > 5000


#: what the tables are written with: C reads all of it
PRINTABLE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7f))
TABLE_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-10 ** 18 + 1, 10 ** 18 - 1) | PRINTABLE,
                            lambda inner: st.lists(inner) | st.dictionaries(PRINTABLE, inner), max_leaves=30)
#: anything else JSON holds: C reads it as json does, or declines
ANY_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                          lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=30)
SEPARATORS = st.sampled_from([(",", ":"), (", ", ": ")])


@settings(max_examples=300, deadline=None)
@given(TABLE_VALUES, st.sampled_from([None, 1]), SEPARATORS)
def test_the_tables_kind_of_json_is_read_in_c_to_json_s_value(value, indent, separators):
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    for data in (text, text.encode()):
        got = _lookup.json_value(data)
        assert got is not None and repr(got[0]) == repr(json.loads(data))


@settings(max_examples=300, deadline=None)
@given(ANY_VALUES, SEPARATORS, st.booleans())
def test_any_json_is_read_to_json_s_value_or_left_to_json(value, separators, ascii_only):
    text = json.dumps(value, separators=separators, ensure_ascii=ascii_only)
    got = _lookup.json_value(text)
    assert got is None or repr(got[0]) == repr(json.loads(text))


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from('ab"\\/\n\t 019{}[],:-tfnrueE.\x7f\x1f\xe9'), max_size=40))
def test_a_text_json_refuses_is_never_read(text):
    got = _lookup.json_value(text)
    try:
        want = json.loads(text)
    except ValueError:
        assert got is None
        return
    assert got is None or repr(got[0]) == repr(want)


@pytest.mark.parametrize("text", ["01", "-", "1.5", "1e3", "NaN", "-Infinity", '"\\u0041"', '"\\x"', "[1,]", "{,}",
                                  '{"a" 1}', "[1] 2", "1234567890123456789", "\ufeff[1]", '"\x01"', "[" * 65 + "]" * 65])
def test_declined_where_json_reads_otherwise_or_refuses(text):
    assert _lookup.json_value(text) is None


def test_without_the_extension_the_fallbacks_give_the_same(tmp_path):
    """A source tree whose `_lookup` is not built: CPython's sha256 and its JSON scanner, cold."""
    code = ("import sys, hashlib, json; sys.modules['offsets._lookup'] = None\n"
            "from offsets.layout import compact_read, json_read\n"
            "assert json_read._value is None\n"
            "assert compact_read.sha256_hex(b'abc') == hashlib.sha256(b'abc').hexdigest()\n"
            "text = open(sys.argv[1], 'rb').readline()\n"
            "assert json_read.loads(text) == json.loads(text)\n"
            "print('ok')")
    first = next(COMPACT.glob("*.jsonl"))
    out = subprocess.run([sys.executable, "-c", code, str(first)], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_first_lookup_loads_no_shared_object_but_the_package_s():
    code = ("import sys, offsets; offsets.get('PyListObject.ob_item')\n"
            "print(sorted(m for m in ('_json', '_sha256', '_sha2', '_hashlib', 'offsets.layout.json_read') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + code],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "OFFSETS_AUTOSCAN": "0"}).stdout
    assert out.strip() == "[]", out
    assert json_read._value is compact_read._json_value is _lookup.json_value
