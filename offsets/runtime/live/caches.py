"""Part of the live check (`runner.py`), 3.12+: the specializing interpreter's inline caches, the code
units that follow an instruction in `co_code_adaptive`.

The interpreter describes each cache itself: `opcode._cache_format` (what `dis` shows) names its
entries in order with their sizes in code units, so the struct of an opcode's cache (which struct it
is: pycore_code.h's INLINE_CACHE_ENTRIES_* = CACHE_ENTRIES(struct)) has `counter` where the entries
before it end, and its size is the entries' total. A code object is quickened when it is made
(3.12+), so each cached instruction's counter holds its warm-up value: read through the table in a
fresh code object, it is not 0 (every other entry is).
"""
from __future__ import annotations

import sys

#: opcode -> the struct of its inline cache (pycore_code.h, 3.12 and 3.13)
CACHES = {"LOAD_GLOBAL": "_PyLoadGlobalCache", "BINARY_OP": "_PyBinaryOpCache",
          "UNPACK_SEQUENCE": "_PyUnpackSequenceCache", "COMPARE_OP": "_PyCompareOpCache",
          "CONTAINS_OP": "_PyContainsOpCache", "BINARY_SUBSCR": "_PyBinarySubscrCache",
          "FOR_ITER": "_PyForIterCache", "LOAD_SUPER_ATTR": "_PySuperAttrCache", "LOAD_ATTR": "_PyLoadMethodCache",
          "STORE_ATTR": "_PyAttrCache", "CALL": "_PyCallCache", "STORE_SUBSCR": "_PyStoreSubscrCache",
          "SEND": "_PySendCache", "TO_BOOL": "_PyToBoolCache"}

#: code that uses every opcode above
SOURCE = '''
def sample(a, b):
    x = a + b
    a[0] = x
    y = a[1]
    c, d = a
    if a < b and b in a and not y:
        a.attr = len(a).real
    for i in a:
        pass
    return c, d

def delegate(it):
    yield from it

class Child(list):
    def method(self):
        return super().copy()
'''


def check(c) -> None:
    c.attempt("inline caches", caches, c)


def caches(c) -> None:
    import opcode

    if sys.version_info < (3, 12):
        raise LookupError("a code object is quickened when it is made only since 3.12")
    if c.t.build.on("Py_GIL_DISABLED"):
        raise LookupError("a free-threaded build does not specialize (3.13)")
    ns: dict = {}
    exec(compile(SOURCE, "<offsets caches>", "exec"), ns)      # noqa: S102 - our own text: fresh code objects
    codes = [ns["sample"].__code__, ns["delegate"].__code__, ns["Child"].method.__code__]
    formats = getattr(opcode, "_cache_format", {})
    for name, struct in sorted(CACHES.items()):
        entries = formats.get(name)
        if not entries or "counter" not in entries or c.t.resolve_struct(struct) is None:
            continue
        c.run(f"{struct} ({name}'s inline cache)", _one, c, codes, opcode.opmap[name], name, struct, entries)


def _one(c, codes, op: int, name: str, struct: str, entries: dict) -> None:
    units = list(entries.items())
    counter = 2 * sum(n for e, n in units[:[e for e, _ in units].index("counter")])
    found = [(co, i) for co in codes for i in range(0, len(co.co_code), 2) if co.co_code[i] == op]
    if not found:
        raise LookupError(f"no {name} in the sample code")
    at = c.need("PyCodeObject", "co_code_adaptive")
    c.view.take_used()
    off, width = c.view.need(struct, "counter")
    values = [c.int(id(co) + at + i + 2 + off, width) for co, i in found]
    c.expect(f"{struct}: counter where opcode._cache_format puts it, its size the entries' total, and its "
             f"warm-up value in {len(found)} fresh {name} instructions",
             [counter, 2 * sum(n for _, n in units), [True] * len(found)],
             [off, c.size(struct), [v != 0 for v in values]])
