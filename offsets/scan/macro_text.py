"""What C text says about macros, read without a compiler: the names a unit's own files `#define`
(the candidates `constant_probe` asks the compiler about), and the definition at a place the
compiler names (function-like or not, empty or not).

Text only proposes: a name found in a comment or an inactive branch costs one probe line, and the
compiler says which definition is in effect at the end of the unit, where, and what it is worth
(`clang_scan`). A unit's own files are its main file (or text) and the headers it includes, as
the compiler resolves an include (`"x"` beside the including file first, then `-I`), that lie
under one of the unit's owned prefixes.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Optional

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(?)([^\n]*(?:(?<=\\)\n[^\n]*)*)", re.M)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_OPEN, _CLOSE = "([{", ")]}"


@dataclass(frozen=True)
class Definition:
    """One `#define` as the text has it: the name, whether it takes arguments, the body (comments
    as spaces, continuation lines joined, stripped)."""

    name: str
    function_like: bool
    body: str
    line: int = 0           # the line of the name (1-based), where the compiler places the definition

    @property
    def balanced(self) -> bool:
        """The body's brackets pair up and it holds no `_Pragma`: as a probe's operand it cannot
        make the parser's recovery run past its own line (a `{` alone would swallow what follows)."""
        code = _COMMENT_OR_LITERAL.sub(lambda m: " " if m.group().startswith("/") else '""', self.body)
        if "_Pragma" in code or "__pragma" in code:
            return False
        stack = []
        for ch in code:
            if ch in _OPEN:
                stack.append(_CLOSE[_OPEN.index(ch)])
            elif ch in _CLOSE and (not stack or stack.pop() != ch):
                return False
        return not stack


def _clean(body: str) -> str:
    return _COMMENT_OR_LITERAL.sub(lambda m: " " if m.group().startswith("/") else m.group(),
                                   body.replace("\\\n", " ")).strip()


@lru_cache(maxsize=4096)
def _text(path: str, stamp: tuple) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def read_text(path: str) -> Optional[str]:
    """A file's text (cached while its size and modification time stay), None if unreadable."""
    try:
        st = os.stat(path)
        return _text(path, (st.st_ino, st.st_size, st.st_mtime_ns))
    except OSError:
        return None


def definitions(text: str) -> Iterable[Definition]:
    """Every `#define` of `text`, in order (one in a comment too: the compiler decides)."""
    line, at = 1, 0
    for m in _DEFINE.finditer(text):
        line += text.count("\n", at, m.start(1))
        at = m.start(1)
        yield Definition(m.group(1), bool(m.group(2)), _clean(m.group(3)), line)


@lru_cache(maxsize=256)
def _split(text: str) -> list:
    return text.split("\n")


def definition_at(path: str, line: int) -> Optional[Definition]:
    """The `#define` whose name is on line `line` (1-based) of `path`, as the compiler read it:
    a comment that runs past the line's end belongs to it."""
    text = read_text(path)
    if text is None:
        return None
    lines = _split(text)
    if not 1 <= line <= len(lines):
        return None
    start = line - 1
    while start > 0 and lines[start - 1].endswith("\\"):
        start -= 1          # the name on a continuation line: the directive began above
    end = line
    while end < len(lines) and (lines[end - 1].endswith("\\") or _open_comment("\n".join(lines[start:end]))):
        end += 1
    joined = "\n".join(lines[start:end])
    m = _DEFINE.match(_COMMENT_OR_LITERAL.sub(lambda c: " " if c.group().startswith("/") else c.group(),
                                              joined.replace("\\\n", " ")))
    return Definition(m.group(1), bool(m.group(2)), m.group(3).strip(), line) if m else None


def _open_comment(text: str) -> bool:
    """Whether `text` ends inside a block comment."""
    rest = _COMMENT_OR_LITERAL.sub("", text)
    return "/*" in rest


def _include_dirs(args: tuple) -> list[str]:
    out, it = [], iter(args)
    for a in it:
        if a in ("-I", "-iquote"):
            out.append(next(it, ""))
        elif a.startswith("-I") and len(a) > 2:
            out.append(a[2:])
    return [d for d in out if d]


def own_files(path: str, text: Optional[str], args: tuple, owned: tuple) -> dict:
    """The files a unit may read that are its own: its main file (`text`, or `path`'s), and every
    header under an `owned` prefix (or that is one) it includes, directly or not -> each one's text.
    Includes are followed whatever conditional they are under (a superset: the compiler decides)."""
    dirs = _include_dirs(args)
    found: dict = {}
    todo = [(os.path.normpath(path), text if text is not None else read_text(path))]
    while todo:
        where, body = todo.pop()
        if body is None or where in found:
            continue
        found[where] = body
        for kind, name in _INCLUDE.findall(body):
            here = [os.path.dirname(where)] if kind == '"' else []
            for d in here + dirs:
                candidate = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(candidate):
                    if candidate not in found and (candidate.startswith(owned) or candidate in owned):
                        todo.append((candidate, read_text(candidate)))
                    break
    return found
