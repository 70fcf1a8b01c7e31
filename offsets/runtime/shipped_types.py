"""The shipped type records (`data/compact/types.json`, written by proofs/types.py): tp_name -> what
each static type object of a minor says of its sizes and members, which the live check compares
(live/types.py, handed them by live/runner.py). A lookup never reads them."""

import os

from ..layout.compact_read import loads
from .tables import COMPACT_DIR

_types = {}


def type_records(version: str) -> dict:
    """tp_name -> type record of `version`'s minor (`data/compact/types.json`, proofs/types.py);
    {} where none is shipped or the file cannot be read."""
    if not _types:
        found: dict = {}
        try:
            with open(os.path.join(COMPACT_DIR, "types.json"), "rb") as f:
                for line in f.read(1 << 24).splitlines()[1:]:
                    minor, name, symbol, basicsize, itemsize, members = loads(line)
                    found.setdefault(minor, {})[name] = _record(symbol, basicsize, itemsize, members)
        except (OSError, ValueError, TypeError):
            found = {}
        _types["all"] = found
    return _types["all"].get(".".join(version.split(".")[:2]), {})


def _terms(text: str):
    """`compact._terms_text` read back: [[coefficient, kind, struct, path]...], or None."""
    if not text:
        return None
    kinds = {"S": "size", "O": "offset", "P": "pointer", "I": "int"}
    out = []
    for word in text.split(" "):
        sign, kind, rest = (-1 if word[0] == "-" else 1), kinds[word[1]], word[3:]
        if kind == "int":
            out.append([sign * int(rest), kind, None, None])
        else:
            struct, _, path = rest.partition("|")
            out.append([sign, kind, struct or None, path or None])
    return out


def _record(symbol: str, basicsize: str, itemsize: str, members: str) -> dict:
    rec = {"symbol": symbol} if symbol else {}
    for key, text in (("basicsize", basicsize), ("itemsize", itemsize)):
        terms = _terms(text)
        if terms is not None:
            rec[key] = terms
    last, out = None, []
    for entry in members.split(";") if members else ():
        name, code, flags, where = entry.split(",", 3)
        struct, _, path = where.partition("|")
        last = struct or last
        out.append([name, int(code), int(flags), last, path or name])
    if out:
        rec["members"] = out
    return rec
