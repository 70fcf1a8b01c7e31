"""Line numbers from line tables (offsets/remote/linetable.py), each version's format, against the
interpreter's own decoding of the same tables: `code.co_lines()` (3.10+, CPython's C decoder) and
`dis.findlinestarts` (3.8, 3.9), for every instruction of every function of a few stdlib modules, in
each pyenv CPython 3.8-3.13."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import missing_input, pyenv_python
from offsets.remote import linetable

DUMP = r"""
import dis, json, sys, threading, argparse, json.decoder
def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)
out = []
for mod in (threading, argparse, json.decoder):
    for fn in vars(mod).values():
        for f in [fn] + [v for v in vars(fn).values()] if isinstance(fn, type) else [fn]:
            co = getattr(f, "__code__", None)
            if co is None:
                continue
            for c in codes(co):
                n = len(c.co_code)
                truth = [None] * (n // 2)
                if sys.version_info >= (3, 10):
                    table = c.co_linetable
                    for start, end, line in c.co_lines():
                        for i in range(start // 2, min(end, n) // 2):
                            truth[i] = line
                else:
                    table = c.co_lnotab
                    line = c.co_firstlineno
                    starts = dict(dis.findlinestarts(c))
                    for i in range(n // 2):
                        line = starts.get(2 * i, line)
                        truth[i] = line
                out.append([table.hex(), c.co_firstlineno, truth])
print(json.dumps([sys.hexversion, out]))
"""


@pytest.mark.parametrize("minor", ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"))
def test_every_instruction_gets_the_interpreters_own_line(minor):
    exe = pyenv_python(minor)
    if exe is None:
        missing_input(f"pyenv has no CPython {minor}")
    hexversion, codes = json.loads(subprocess.run([str(exe), "-c", DUMP], capture_output=True, text=True,
                                                  check=True).stdout)
    compared = 0
    for table_hex, first, truth in codes:
        table = bytes.fromhex(table_hex)
        for i, want in enumerate(truth):
            got = linetable.line_of(hexversion, table, first, 2 * i)
            assert (None if got < 0 else got) == want, (minor, first, i)
            compared += 1
    assert compared > 10000


def test_a_negative_address_is_the_first_line():
    """PyCode_Addr2Line: a frame that has not started (3.10's f_lasti -1) is on co_firstlineno."""
    assert linetable.line_of(0x030A0000, b"\x02\x01", 7, -2) == 7
    assert linetable.line_of(0x030D0000, b"\x80", 7, -2) == 7
