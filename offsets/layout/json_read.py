"""`loads`: JSON parsing for what every process that loads a JIT reads (the index, table headers,
layout lines, the digest memo), without importing `json`.

The JSON the tables are written in is read by `offsets._lookup.json_value` where that module is
built (a first lookup then loads no other shared object to parse): it reads only what json.loads
reads to the same value by one obvious rule (objects, arrays, ASCII strings without a `\\u` escape, integers
of up to 18 digits) and declines everything else, which the scanner below then reads.

`import json` imports `re` (json.decoder compiles its patterns at import), which costs more than
everything else the first lookup does (every process that loads a JIT pays its first lookup). The
parsing itself is CPython's own C scanner (`_json.make_scanner`, what `json.loads` uses), configured
as `json.JSONDecoder()` configures it, once it has read a sample right; only the top level is
handled here: surrounding JSON whitespace, and nothing after the value. Input is UTF-8 (bytes) or
str; anything else that `json.loads` would guess (UTF-16, a BOM) is refused, as is
anything it refuses. Without `_json`, or where it wants a configuration this does not give (3.15
added `array_hook`, which this gives), this is `json.loads`.

A parse error is a ValueError on every interpreter: the C scanner raises `json.decoder`'s
JSONDecodeError, which 3.10 and 3.11 only look up among the imported modules (without it there, the
scanner fails with a SystemError); `json.decoder` is then imported, on that error path only.
"""

import sys

_WHITESPACE = " \t\n\r"


_SAMPLE = '{"a": [1, -2.5e1, "\\u00e9x", null, true, false, {}], "b": {"c": []}}'


def _parse_constant(name: str) -> float:
    return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


def _scanner():
    """CPython's C scanner, configured as json's; None (json.loads is used) where there is none, or
    where it wants another configuration (a later CPython) and so does not read a sample right.
    Its decoder is made here, when first needed (a first lookup that `_lookup.json_value` reads
    makes no class for it)."""

    class _Decoder:
        """The attributes `_json.make_scanner` reads from a decoder, as json.JSONDecoder() sets them
        (`array_hook`: 3.15)."""

        strict = True
        object_hook = None
        object_pairs_hook = None
        array_hook = None
        parse_float = float
        parse_int = int
        parse_constant = staticmethod(_parse_constant)

    sample_value = {"a": [1, -25.0, "\u00e9x", None, True, False, {}], "b": {"c": []}}
    try:
        from _json import make_scanner

        scan = make_scanner(_Decoder())
        if scan(_SAMPLE, 0) == (sample_value, len(_SAMPLE)):
            return scan
    except Exception:         # noqa: BLE001 - any doubt: json's own parser
        pass
    return None


try:
    from .._lookup import json_value as _value
except ImportError:
    _value = None


_made: list = []      # [the scanner, or None], once made: when first needed (a first lookup may never need it)


def _scan_once():
    if not _made:
        _made.append(_scanner())
    return _made[0]


def __getattr__(name):
    if name == "_scan":         # the scanner, as `_scan_once` makes it
        return _scan_once()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def loads(data):
    """The value of the JSON text `data` (str, or UTF-8 bytes); ValueError if it is not one."""
    if _value is not None:
        got = _value(data)
        if got is not None:
            return got[0]
    scan = _scan_once()
    if scan is None:
        import json

        return json.loads(data)
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    text = text.strip(_WHITESPACE)
    try:
        value, end = scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    except SystemError:
        if "json.decoder" in sys.modules:
            raise
        import json.decoder   # noqa: F401 - 3.10 and 3.11: the scanner's error needs it imported

        return loads(text)    # the same error, now a JSONDecodeError
    if end != len(text):
        raise ValueError(f"not JSON: something follows the value at character {end}")
    return value
