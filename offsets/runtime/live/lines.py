"""Part of the live check (`runner.py`), 3.11+: a code object's line iterator (`co_lines()`, a
`lineiterator` of codeobject.c) keeps the address range it yielded last in its `li_line`, a
`PyCodeAddressRange`: after each step its `ar_start`, `ar_end` and `ar_line` are the tuple Python
got. The code object is one of the check's own whose line table it writes itself (never run): each
entry two code units long, of a line of its own (so no two entries merge), one of them of no line
(`ar_line` -1, the iterator's `None`, while its own running line, `opaque.computed_line`, stays).
"""
from __future__ import annotations

import sys

#: the location-info codes of the line table (Objects/locations.md): no columns, and no location
NO_COLUMNS, NONE = 13, 15


def _entry(code: int, units: int, delta=None) -> bytes:
    out = bytes([0x80 | (code << 3) | (units - 1)])
    if delta is not None:      # a signed varint, 6 bits a byte
        v = (-delta << 1) | 1 if delta < 0 else delta << 1
        while v >= 64:
            out += bytes([0x40 | (v & 63)])
            v >>= 6
        out += bytes([v])
    return out


def _code():
    """A code object of the check's own, and its line table: lines 1, 2, 3, none, 5, 6..."""
    src = "def lines(a):\n" + "".join(f"    a = a + {i}\n" for i in range(6)) + "    return a\n"
    ns: dict = {}
    exec(compile(src, "<offsets lines>", "exec"), ns)      # noqa: S102 - our own text
    code = ns["lines"].__code__
    units = len(code.co_code) // 2
    table, i, step = b"", 0, 0
    while i < units:
        n = min(2, units - i)
        table += _entry(NONE, n) if step == 3 else _entry(NO_COLUMNS, n, 2 if step == 4 else 1)
        i, step = i + n, step + 1
    return code.replace(co_linetable=table)


def lines(c) -> None:
    if sys.version_info < (3, 11):
        raise LookupError("up to 3.10 co_lines() keeps no PyCodeAddressRange")
    if c.view.fields("lineiterator") is None:
        raise LookupError("no lineiterator in the table")
    code = _code()
    truth = list(code.co_lines())
    if len(truth) < 5 or len({line for _, _, line in truth}) != len(truth):
        raise LookupError("the line table the check wrote is not read as written")
    it = code.co_lines()
    got = []
    for _ in truth:
        next(it)
        got.append((c.field(id(it), "lineiterator", "li_line.ar_start", signed=True),
                    c.field(id(it), "lineiterator", "li_line.ar_end", signed=True),
                    c.field(id(it), "lineiterator", "li_line.ar_line", signed=True)))
    got.append(c.field(id(it), "lineiterator", "li_code"))
    c.expect("lineiterator.li_line (ar_start, ar_end, ar_line) after each step of co_lines(), and li_code",
             [(s, e, -1 if line is None else line) for s, e, line in truth] + [id(code)], got)


def check(c) -> None:
    c.attempt("lineiterator", lines, c)
