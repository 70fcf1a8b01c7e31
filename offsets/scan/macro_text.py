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
_DIRECTIVE = re.compile(r"[ \t]*(define|include|if|ifdef|ifndef|elif|else|endif)\b")
_NAME = re.compile(r"[ \t]*([A-Za-z_]\w*)(\(?)")
_INCLUDED = re.compile(r'[ \t]*([<"])([^>"\n]+)[>"]')
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
    def never_an_expression(self) -> bool:
        """A body no C expression can be: empty, starting with `{` (an initializer list), or with a
        `;` outside brackets (statements). C's grammar decides, without a compiler."""
        code = _COMMENT_OR_LITERAL.sub(lambda m: " " if m.group().startswith("/") else '""', self.body).strip()
        if not code or code.startswith("{"):
            return True
        depth = 0
        for ch in code:
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth -= 1
            elif ch == ";" and depth == 0:
                return True
        return False

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
    if "/" not in body and "\\" not in body:
        return body.strip()         # no comment, no continuation: most bodies
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


@lru_cache(maxsize=256)
def directives(text: str) -> tuple:
    """(line, kind, rest of the logical line) of each `#define`, `#include` and conditional of
    `text`, in order: a `#` with only blanks before it on its line (found with str.find, so that a
    megabyte of tables costs little; one in a comment counts too: a superset, the compiler decides)."""
    out, pos, line, counted = [], 0, 1, 0
    find, count = text.find, text.count
    while True:
        i = find("#", pos)
        if i < 0:
            return tuple(out)
        start = text.rfind("\n", 0, i) + 1
        m = _DIRECTIVE.match(text, i + 1) if not text[start:i].strip(" \t") else None
        if m is None:
            pos = i + 1
            continue
        end = find("\n", i)
        while end > 0 and text[end - 1] == "\\":
            end = find("\n", end + 1)
        end = len(text) if end < 0 else end
        line += count("\n", counted, i)
        counted = i
        out.append((line, m.group(1), text[m.end():end]))
        pos = end


def definitions(text: str) -> Iterable[Definition]:
    """Every `#define` of `text`, in order (one in a comment too: the compiler decides)."""
    for line, kind, rest in directives(text):
        if kind == "define":
            m = _NAME.match(rest)
            if m:
                yield Definition(m.group(1), bool(m.group(2)), _clean(rest[m.end():]),
                                 line + rest.count("\n", 0, m.start(1)))


def include_guard(text: str) -> Optional[str]:
    """The include guard of a header's text: the macro X of its first `#ifndef X` whose next directive
    is `#define X` with no body (3.13's pycore_bytes_methods.h has `#ifndef Py_LIMITED_API` first,
    then its guard); None for a header without one."""
    found = directives(text)
    for (_, kind, rest), (_, then, body) in zip(found, found[1:]):
        name = rest.strip()
        if kind == "ifndef" and then == "define" and _NAME.fullmatch(name) and _clean(body) == name:
            return name
    return None


def includes(text: str) -> list:
    """(`<` or `"`, name) of each `#include` of `text` that names a file."""
    out = []
    for _, kind, rest in directives(text):
        if kind == "include":
            m = _INCLUDED.match(rest)
            if m:
                out.append(m.groups())
    return out


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
    dirs = tuple(_include_dirs(args))
    found: dict = {}
    todo = [(os.path.normpath(path), text if text is not None else read_text(path))]
    while todo:
        where, body = todo.pop()
        if body is None or where in found:
            continue
        found[where] = body
        for kind, name in includes(body):
            candidate = _resolve(name, os.path.dirname(where) if kind == '"' else None, dirs)
            if candidate is not None and candidate not in found and (candidate.startswith(owned) or candidate in owned):
                todo.append((candidate, read_text(candidate)))
    return found


@lru_cache(maxsize=8192)
def _resolve(name: str, here: Optional[str], dirs: tuple) -> Optional[str]:
    """The file an include of `name` finds (beside its includer `here` first, for `"x"`), or None;
    asked once per process for the same include from the same directory (a worker scans many units)."""
    for d in ((here,) if here is not None else ()) + dirs:
        candidate = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(candidate):
            return candidate
    return None


#: Words a conditional tests when it asks which compiler reads it: clang's answer (the scanner's)
#: is not gcc's (the build's) for these (`__has_builtin(__builtin_available)`, `__GNUC__ >= 5`:
#: clang says 4).
COMPILER_WORDS = re.compile(r"\b(?:__clang\w*|__has_(?!include)\w+|__is_identifier|__apple_build_version__|"
                            r"__GNUC__|__GNUC_MINOR__|__GNUC_PATCHLEVEL__)\b")


#: The words that ask whether the compiler is MSVC's kind (or mingw-w64's) rather than the GNU kind:
#: a Windows table's clang answers as MSVC does, the mingw-w64 gcc that checks it as gcc does.
MSVC_WORDS = re.compile(r"\b(?:_MSC_VER|_MSC_FULL_VER|__MINGW32__|__MINGW64__)\b")


@lru_cache(maxsize=256)
def _compiler_regions(text: str, words=COMPILER_WORDS) -> tuple:
    """(line, inside) after each conditional directive of `text`: whether a conditional that tests
    a compiler word (`COMPILER_WORDS`) encloses what follows. An `#elif` or `#else` also stands on
    the conditions before it in its chain."""
    out, stack = [], []
    for line, kind, rest in directives(text):
        if kind in ("define", "include"):
            continue
        asks = bool(words.search(_clean(rest)))
        if kind in ("if", "ifdef", "ifndef"):
            stack.append(asks)
        elif kind in ("elif", "else") and stack:
            stack[-1] = stack[-1] or asks
        elif kind == "endif" and stack:
            stack.pop()
        out.append((line + rest.count("\n"), any(stack)))
    return tuple(out)


def compiler_dependent(path: str, line: int, text: Optional[str] = None, words=COMPILER_WORDS) -> bool:
    """Whether line `line` of `path` (whose `text` it is, when known) lies inside a conditional
    that asks which compiler reads it (one of `words`)."""
    import bisect

    text = read_text(path) if text is None else text
    if text is None:
        return False
    regions = _compiler_regions(text, words)
    i = bisect.bisect_left(regions, (line, False)) - 1
    return i >= 0 and regions[i][1]
