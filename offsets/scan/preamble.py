"""Shared preambles: the units of one build that start with the same text parse it once.

Most `.c` files of a CPython tree start with `#include "Python.h"`, perhaps after a few `#define`s,
and that prefix is most of each unit's parse. Units with the same arguments and the same leading
directives, up to and including the one that includes Python.h, share one precompiled header of
that text (`clang_scan.build_preamble`). A unit that starts with anything else (code, `#pragma`, a
header its own directory holds) is parsed whole. The results are the same either way
(tests/test_preamble.py compares a full build's tables byte for byte).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Optional

from .clang_scan import Preamble, Unit, build_preamble

_HEAD = 1 << 16     # a preamble ends within the first 64 KiB of a file, or there is none
#: Precompiling costs about two parses of the text and saves nearly one in each unit that uses it
#: (Debian 3.11.2: 0.33 s to build, 0.05 s instead of 0.15 s for a unit + walk), so fewer do not pay.
MIN_UNITS = 3
_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[^/"\']+|.', re.S)
_DIRECTIVE = re.compile(r"#\s*(\w+)(.*)", re.S)
_INCLUDE = re.compile(r'\s*([<"])([^>"]+)[>"]\s*')
_KINDS = {"define", "undef", "include", "if", "ifdef", "ifndef", "elif", "else", "endif"}


def _lines(text: str) -> Iterable[str]:
    """Logical lines: continuations joined, each comment one space (strings and chars kept)."""
    line: list = []
    for m in _TOKENS.finditer(text.replace("\\\n", "")):     # lazily: a caller stops at its first non-directive
        t = m.group()
        if t.startswith(("//", "/*")):
            line.append(" ")
            continue
        *ended, rest = t.split("\n")
        for piece in ended:
            yield ("".join(line) + piece).strip()
            line = []
        line.append(rest)
    yield "".join(line).strip()


def preamble_text(path: str) -> Optional[str]:
    """The directives `path` starts with, up to the one that includes Python.h and the end of any
    conditional around it, one per line; None when it starts with anything else."""
    try:
        with open(path, errors="replace") as f:
            head = f.read(_HEAD)
    except OSError:
        return None
    here = Path(path).parent
    depth, seen, out = 0, False, []
    for line in _lines(head):
        if not line:
            continue
        m = _DIRECTIVE.fullmatch(line)
        if not m or m.group(1) not in _KINDS:
            return None
        kind, rest = m.group(1), m.group(2).rstrip()
        if kind in ("if", "ifdef", "ifndef"):
            depth += 1
        elif kind == "endif":
            depth -= 1
        elif kind == "include":
            inc = _INCLUDE.fullmatch(rest)
            if not inc or (inc.group(1) == '"' and (here / inc.group(2)).exists()):
                return None   # a computed include, or one that would resolve beside the file
            rest = f" <{inc.group(2)}>"     # "X" not beside the file is found where <X> is
            seen = seen or os.path.basename(inc.group(2)) == "Python.h"
        if depth < 0:
            return None
        out.append(f"#{kind}{rest}")
        if seen and depth == 0:
            return "\n".join(out) + "\n"
    return None


def plan(units: list[Unit], workdir: str) -> tuple[list[tuple], list[Optional[int]]]:
    """The preambles worth building, as arguments of `build`, and for each unit the index of the one
    it would use (None: it is parsed whole). A preamble is shared by at least `MIN_UNITS` units with
    the same arguments and start; its files go into `workdir`."""
    keys = [(u.args, preamble_text(u.path)) if u.text is None and not any(a.startswith("-iquote") for a in u.args)
            else None
            for u in units]
    count: dict = {}
    for k in keys:
        if k is not None and k[1] is not None:
            count[k] = count.get(k, 0) + 1
    groups = sorted(k for k, n in count.items() if n >= MIN_UNITS)
    jobs = [(text, args, os.path.join(workdir, f"preamble-{i}.h"), os.path.join(workdir, f"preamble-{i}.pch"))
            for i, (args, text) in enumerate(groups)]
    index = {k: i for i, k in enumerate(groups)}
    return jobs, [index.get(k) for k in keys]


def build(job: tuple) -> Optional[Preamble]:
    """The precompiled preamble `job` (an element of `plan`'s first list) describes, or None."""
    return build_preamble(*job)
