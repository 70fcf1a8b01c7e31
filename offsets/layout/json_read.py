"""`loads`: JSON parsing for what every process that loads a JIT reads (the index, table headers,
layout lines, the digest memo), without importing `json`.

`import json` imports `re` (json.decoder compiles its patterns at import), which costs more than
everything else the first lookup does (issue 19, item 5: a process that loads a JIT pays its first
lookup). The parsing itself is CPython's own C scanner (`_json.make_scanner`, what `json.loads`
uses), configured as `json.JSONDecoder()` configures it; only the top level is handled here:
surrounding JSON whitespace, and nothing after the value. Input is UTF-8 (bytes) or str; anything
else that `json.loads` would guess (UTF-16, a BOM) is refused, as is anything it refuses. Without
`_json` (another Python implementation), this is `json.loads`.
"""
from __future__ import annotations

_WHITESPACE = " \t\n\r"


class _Decoder:
    """The attributes `_json.make_scanner` reads from a decoder, as json.JSONDecoder() sets them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


try:
    from _json import make_scanner as _make_scanner
except ImportError:          # not CPython: json's own pure-Python scanner
    _scan = None
else:
    _scan = _make_scanner(_Decoder())


def loads(data):
    """The value of the JSON text `data` (str, or UTF-8 bytes); ValueError if it is not one."""
    if _scan is None:
        import json

        return json.loads(data)
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    text = text.strip(_WHITESPACE)
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError(f"not JSON: something follows the value at character {end}")
    return value
