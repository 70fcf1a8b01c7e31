"""A table's JSON Schema as one compiled yes/no check: whether a document is valid, not why.

`jsonschema` walks the schema anew for every value and makes a validator for every branch it
tries: 1.3 s for one large table (3.15.2's i686 table). Here the schema is compiled once into nested
checks of the few keywords `data/table.schema.json` uses, and a document is walked once (0.07 s).

The answer may only ever err towards "invalid": a document this check accepts, jsonschema accepts
(`tests/test_schema_fast.py` compares the two on hundreds of damaged tables, and keyword by
keyword). Where it says invalid, the reader asks jsonschema, whose first error is the message, and
whose verdict stands.
A keyword this module does not know makes `compile_schema` fail, and the reader uses jsonschema
alone.
"""
from __future__ import annotations

import re
from typing import Callable

Check = Callable[[object], bool]

#: keywords that assert nothing (annotations, and `$defs`, reached only through `$ref`)
ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description"}


class Unsupported(ValueError):
    """The schema uses a keyword or form this module does not compile."""


def _is_int(v) -> bool:
    return type(v) is int       # the reader's rule: 24.0 and true are not integers


def _is_number(v) -> bool:
    return type(v) in (int, float)


TYPES: dict = {"string": lambda v: type(v) is str, "integer": _is_int, "number": _is_number,
               "boolean": lambda v: type(v) is bool, "null": lambda v: v is None,
               "object": lambda v: type(v) is dict, "array": lambda v: type(v) is list}


def _same(a, b) -> bool:
    """Equal and of one type (jsonschema's equality is looser: 1.0 == 1; the stricter one only
    sends more documents to jsonschema)."""
    return type(a) is type(b) and a == b


def compile_schema(schema: dict) -> Check:
    """A function: document -> True only if `schema` (draft 2020-12) holds for it; `Unsupported`
    where the schema uses what this module does not compile."""
    try:
        return _compile(schema, schema)
    except (re.error, TypeError, AttributeError) as e:
        raise Unsupported(f"{type(e).__name__}: {e}") from None


def _ref(root: dict, ref: str) -> dict:
    if not ref.startswith("#/$defs/") or "/" in ref[len("#/$defs/"):]:
        raise Unsupported(f"$ref {ref!r}")
    try:
        return root["$defs"][ref[len("#/$defs/"):]]
    except KeyError:
        raise Unsupported(f"$ref {ref!r} names nothing") from None


def _compile(s, root: dict, refs: tuple = ()) -> Check:
    """`refs`: the $refs being compiled around `s` (a recursive schema is not compiled)."""
    if s is True:
        return lambda v: True
    if s is False:
        return lambda v: False
    if type(s) is not dict:
        raise Unsupported(f"schema {s!r}")
    unknown = set(s) - ANNOTATIONS - set(_KEYWORDS) - set(OBJECT_KEYWORDS)
    if unknown:
        raise Unsupported(f"keywords {sorted(unknown)}")
    checks = [_KEYWORDS[k](s, root, refs) for k in _KEYWORDS if k in s]
    if any(k in s for k in OBJECT_KEYWORDS):
        checks.append(_properties(s, root, refs))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def _type(s, root, refs) -> Check:
    names = s["type"] if type(s["type"]) is list else [s["type"]]
    try:
        tests = tuple(TYPES[n] for n in names)
    except (KeyError, TypeError):
        raise Unsupported(f"type {s['type']!r}") from None
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(t(v) for t in tests)


def _const(s, root, refs) -> Check:
    c = s["const"]
    return lambda v: _same(v, c)


def _enum(s, root, refs) -> Check:
    values = list(s["enum"])
    return lambda v: any(_same(v, e) for e in values)


def _pattern(s, root, refs) -> Check:
    search = re.compile(s["pattern"]).search
    return lambda v: type(v) is not str or search(v) is not None


def _min_length(s, root, refs) -> Check:
    n = s["minLength"]
    return lambda v: type(v) is not str or len(v) >= n


def _minimum(s, root, refs) -> Check:
    n = s["minimum"]
    return lambda v: not _is_number(v) or v >= n


def _maximum(s, root, refs) -> Check:
    n = s["maximum"]
    return lambda v: not _is_number(v) or v <= n


def _min_items(s, root, refs) -> Check:
    n = s["minItems"]
    return lambda v: type(v) is not list or len(v) >= n


def _max_items(s, root, refs) -> Check:
    n = s["maxItems"]
    return lambda v: type(v) is not list or len(v) <= n


def _prefix_items(s, root, refs) -> Check:
    firsts = [_compile(x, root, refs) for x in s["prefixItems"]]
    return lambda v: type(v) is not list or all(c(x) for c, x in zip(firsts, v))


def _items(s, root, refs) -> Check:
    each = _compile(s["items"], root, refs)
    skip = len(s.get("prefixItems", ()))
    if skip:
        return lambda v: type(v) is not list or all(each(x) for x in v[skip:])
    return lambda v: type(v) is not list or all(each(x) for x in v)


def _required(s, root, refs) -> Check:
    names = tuple(s["required"])
    return lambda v: type(v) is not dict or all(n in v for n in names)


def _property_names(s, root, refs) -> Check:
    each = _compile(s["propertyNames"], root, refs)
    return lambda v: type(v) is not dict or all(each(k) for k in v)


def _properties(s, root, refs) -> Check:
    """`properties`, `patternProperties` and `additionalProperties`, as one walk over the keys."""
    known = {k: _compile(x, root, refs) for k, x in s.get("properties", {}).items()}
    patterns = [(re.compile(p).search, _compile(x, root, refs)) for p, x in s.get("patternProperties", {}).items()]
    extra = s.get("additionalProperties", True)
    other = None if extra is True else _compile(extra, root, refs)

    def check(v) -> bool:
        if type(v) is not dict:
            return True
        for k, x in v.items():
            c = known.get(k)
            matched = c is not None
            if matched and not c(x):
                return False
            for search, pc in patterns:
                if search(k) is not None:
                    matched = True
                    if not pc(x):
                        return False
            if not matched and other is not None and not other(x):
                return False
        return True
    return check


def _keyword_ref(s, root, refs) -> Check:
    ref = s["$ref"]
    if ref in refs:
        raise Unsupported(f"a recursive $ref {ref!r}")
    return _compile(_ref(root, ref), root, refs + (ref,))

#: keyword -> compiler (`properties`, `patternProperties` and `additionalProperties`: `_properties`)
_KEYWORDS: dict = {
    "$ref": _keyword_ref, "type": _type, "const": _const, "enum": _enum, "pattern": _pattern,
    "minLength": _min_length, "minimum": _minimum, "maximum": _maximum, "minItems": _min_items,
    "maxItems": _max_items, "prefixItems": _prefix_items, "items": _items, "required": _required,
    "propertyNames": _property_names,
}
OBJECT_KEYWORDS = ("properties", "patternProperties", "additionalProperties")
