"""A build's own C text, indexed without a compiler: its directives, the conditionals governing
each line, its code tokens, and where each macro, typedef, enum and `#include` is.

`depends.py` follows a struct's definition through this index. Everything here over-approximates:
a `#define` in an inactive branch is still a definition site, a typedef found by its spelling may
be one the compiler never reads. What is missed would make a dependency set too small; what is
added only makes it larger, so every choice below errs on the side of adding.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Optional

#: A block comment, a string literal and a character constant, each matched in one pass over its
#: characters (`/\*.*?\*/` tried `\*/` again at each one).
BLOCK_COMMENT = r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/"
STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
CHARACTER = r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
_COMMENT_OR_LITERAL = re.compile(rf"//[^\n]*|{BLOCK_COMMENT}|{STRING}|{CHARACTER}", re.S)
_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*([a-z_]+)\b(.*)", re.S)
_TOKEN = re.compile(r"[A-Za-z_]\w*|[0-9][\w.]*|[\[\](){};,*:=]")
_WORD = re.compile(r"[A-Za-z_]\w*")
#: Compiler questions whose arguments are no macro names (`__has_include(<stdatomic.h>)`).
_QUESTION = re.compile(r"\b(?:__has_\w+|__is_identifier)\s*\((?:[^()]|\([^()]*\))*\)")
_INCLUDED = re.compile(r'\s*([<"])([^>"\n]+)[>"]')
_CONDITIONALS = {"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"}
#: Words of C and of its preprocessor: never a name the build defines.
KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex _Atomic _Alignas _Alignof _Noreturn _Static_assert _Thread_local alignas alignof
bool defined __attribute__ __attribute __restrict __restrict__ __inline __inline__ __extension__ __typeof__
typeof __declspec __asm__ asm __volatile__ __alignof__ __const __signed__ _Pragma""".split())
#: Words after which a parenthesized group names types by their size or alignment.
TYPE_CONTEXT = frozenset(("sizeof", "_Alignof", "alignof", "__alignof__", "_Alignas", "alignas", "__attribute__",
                          "__attribute", "__declspec", "typeof", "__typeof__", "_Atomic"))


_LITERAL = re.compile(f"{STRING}|{CHARACTER}")


def _blank_comment(m) -> str:
    s = m.group()
    if s[0] != "/":
        return s                                    # a literal: kept
    return " " + "\n" * s.count("\n") if "\n" in s else " "


def strip(text: str, literals: bool = True) -> str:
    """`text` with comments as blanks and (with `literals`) literals as `""`, every newline kept
    (lines stay put; columns do not)."""
    raw = _COMMENT_OR_LITERAL.sub(_blank_comment, text)
    return _LITERAL.sub('""', raw) if literals else raw


def condition_words(text: str) -> set:
    """The names a conditional's expression tests (`defined`, numbers and compiler questions aside)."""
    return {w for w in _TOKEN.findall(_QUESTION.sub(" ", text)) if _WORD.fullmatch(w) and w not in KEYWORDS}


@dataclass(frozen=True)
class Directive:
    line: int           # first line (1-based)
    end: int            # last line (a continued directive spans several)
    kind: str           # define, undef, include, if, ifdef, ..., or any other word
    rest: str           # the rest of the logical line, continuations joined


@dataclass
class FileText:
    """One file: its directives, its code (the lines outside directives) and the conditions in
    force. Code is tokenized where it is read (`window`): most of a build's text (Unicode tables,
    codec mappings, function bodies) defines no typedef, enum or struct of the table."""

    name: str
    directives: list
    #: each line with comments blank (literals kept: `tokens` drops them); a directive's lines empty
    code: list
    #: (first line, names tested by every conditional governing the lines from there on)
    segments: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self._starts = [s for s, _ in self.segments]
        self._tokens: dict = {}         # line index -> its tokens, each line tokenized once

    def conditions(self, first: int, last: int) -> set:
        """The names tested by the conditionals that decide whether lines first..last are read:
        every `#if`/`#elif` of each conditional around them up to their branch, and every
        conditional inside them."""
        i = max(bisect.bisect_right(self._starts, first) - 1, 0)
        out: set = set()
        while i < len(self.segments) and self.segments[i][0] <= last:
            out |= self.segments[i][1]
            i += 1
        return out

    def window(self, first: int, end: int) -> tuple:
        """(code tokens, the line of each) of lines first..end-1 (0-based): the file's token
        sequence between those lines, as tokenizing it whole gives it."""
        texts: list = []
        at: list = []
        for n in range(first, end):
            if self.code[n]:
                found = self.tokens(n)
                if found:
                    texts += found
                    at += [n + 1] * len(found)
        return texts, at

    def tokens(self, n: int) -> list:
        """The code tokens of line index n (a literal none: `""`); the list is shared: not to be changed."""
        got = self._tokens.get(n)
        if got is None:
            line = self.code[n]
            got = self._tokens[n] = _TOKEN.findall(_LITERAL.sub('""', line) if '"' in line or "'" in line else line)
        return got

    def occurrences(self, word: str) -> list:
        """(line index, token index in that line) of each code token `word`, in order."""
        text = "\n".join(self.code)
        out, n, at = [], 0, 0
        seen = -1
        i = text.find(word)
        while i >= 0:
            n += text.count("\n", at, i)
            at = i
            if n != seen:           # each line once, however often it spells the word
                seen = n
                out += [(n, k) for k, t in enumerate(self.tokens(n)) if t == word]
            i = text.find(word, i + len(word))
        return out

    def before(self, n: int, k: int) -> Optional[str]:
        """The code token before token k of line index n (None: it is the file's first)."""
        if k:
            return self.tokens(n)[k - 1]
        for m in range(n - 1, -1, -1):
            found = self.tokens(m) if self.code[m] else ()
            if found:
                return found[-1]
        return None

    def run(self, n: int, k: int, ends) -> tuple:
        """(tokens, lines, `ends(tokens)`) from token k of line index n on, over as many lines as
        `ends` needs: its answer on them is its answer on the rest of the file (an index before
        the last token), or they reach the file's end."""
        size = 16
        while True:
            end = min(n + size, len(self.code))
            texts, at = self.window(n, end)
            texts, at = texts[k:], at[k:]
            got = ends(texts)
            if got < len(texts) - 1 or end == len(self.code):
                return texts, at, got
            size *= 4

    def statement(self, line: int) -> Optional[tuple]:
        """(first line, last line, tokens) of the declaration that mentions line `line` (None: no
        code token on or after it): back to the `;`, `{` or `}` before it, on to the `;` that ends
        it at its own depth (or the `}` that closes what holds it). Tokenized over a window of
        lines around it, widened until the answer does not touch a border the file goes past."""
        size = 64
        while True:
            first, end = max(line - 1 - size, 0), min(line - 1 + size, len(self.code))
            toks, at = self.window(first, end)
            got = _statement(toks, at, line, first == 0, end == len(self.code))
            if got is not _WIDER:
                return got
            size *= 4


_WIDER = object()       # `_statement`'s answer when its window is too narrow


def _statement(toks: list, at: list, line: int, at_start: bool, at_end: bool):
    """`FileText.statement` over the tokens of a window (`at_start`, `at_end`: whether the window
    starts or ends where the file does), or `_WIDER` if the answer lies past its border."""
    i = bisect.bisect_left(at, line)
    if i >= len(toks):
        return None if at_end else _WIDER
    start = i
    while start > 0 and toks[start - 1] not in (";", "{", "}"):
        start -= 1
    if start == 0 and not at_start:
        return _WIDER
    depth, j, last = 0, start, None
    while j < len(toks):
        t = toks[j]
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if depth < 0:
                last = j - 1
                break
        elif t == ";" and depth == 0 and j >= i:
            last = j
            break
        j += 1
    if last is None:
        if not at_end:
            return _WIDER
        last = len(toks) - 1
    return (at[start], at[last], tuple(toks[start:last + 1])) if start <= last else None


_HASH = re.compile(r"[ \t]*#")
_LINE_HASH = re.compile(r"\n[ \t]*#")       # a literal first character: found fast


def _hash_lines(text: str):
    """The index of each line of `text` whose first character past spaces and tabs is `#`."""
    if _HASH.match(text):
        yield 0
    n, at = 0, 0
    for m in _LINE_HASH.finditer(text):
        n += text.count("\n", at, m.start()) + 1
        at = m.start() + 1
        yield n


def read_file(name: str, text: str) -> FileText:
    """Index one file's text: its directives (a line whose first character past spaces and tabs
    is `#`, with the lines its backslashes continue it on); its code, tokenized where it is read."""
    raw_text = strip(text, literals=False)               # directives keep their literals ("object.h")
    code = raw_text.split("\n")
    directives = []
    done = -1                       # the last line a directive took
    for first in _hash_lines(raw_text):                 # a literal never starts with `#`
        if first <= done:
            continue                # a line a directive continues on
        last, body = first, code[first]
        while body.endswith("\\") and last + 1 < len(code):
            last += 1
            body = body[:-1] + " " + code[last]
        d = _DIRECTIVE.match(body)
        if d:
            directives.append(Directive(first + 1, last + 1, d.group(1), d.group(2)))
        code[first:last + 1] = [""] * (last + 1 - first)
        done = last
    return FileText(name, directives, code, _segments(directives))


def _segments(directives: list) -> list:
    """(first line, names governing the lines from there) after each conditional directive."""
    out = [(1, frozenset())]
    stack: list = []                # the names of each open conditional
    union = [frozenset()]           # union[i]: those of the outermost i
    for d in directives:
        if d.kind not in _CONDITIONALS:
            continue
        if d.kind in ("if", "ifdef", "ifndef"):
            stack.append(frozenset(condition_words(d.rest)))
            union.append(union[-1] | stack[-1])
        elif d.kind in ("elif", "elifdef", "elifndef") and stack:
            stack[-1] = stack[-1] | condition_words(d.rest)
            union[-1] = union[-2] | stack[-1]
        if d.kind == "endif":
            governing = union[-1]                   # the #endif line closes its own
            if stack:
                stack.pop()
                union.pop()
            out.append((d.line, governing))
            out.append((d.end + 1, union[-1]))
        else:
            out.append((d.line, union[-1]))
            out.append((d.end + 1, union[-1]))
    return out


@dataclass(frozen=True)
class Site:
    """A definition: a file and its lines, and the code tokens of its text (a macro's: its body's,
    `params` its parameters)."""

    file: str
    first: int
    last: int
    toks: tuple = ()
    params: frozenset = frozenset()


@dataclass
class Index:
    """Every file of a build, and where each name is defined in them."""

    files: dict = field(default_factory=dict)           # relative name -> FileText
    paths: dict = field(default_factory=dict)           # relative name -> the file's path
    macros: dict = field(default_factory=dict)          # name -> [Site] of its #define and #undef lines
    typedefs: dict = field(default_factory=dict)        # name -> [Site] of the typedef declaring it
    enumerators: dict = field(default_factory=dict)     # name -> [Site] of its enum
    enums: dict = field(default_factory=dict)           # enum tag -> [Site]
    includers: dict = field(default_factory=dict)       # included file -> [(file, line)]
    #: included file -> (file, line) of the `#include` that first brings it in, from Python.h
    parent: dict = field(default_factory=dict)
    system_includes: list = field(default_factory=list)     # (file, line) of each #include <...> not of the build
    errors: list = field(default_factory=list)              # (file, line) of each #error
    _words: dict = field(default_factory=dict)
    _includes: dict = field(default_factory=dict)       # file -> [(line, included file)]

    def add(self, f: FileText) -> None:
        self.files[f.name] = f
        for d in f.directives:
            if d.kind in ("define", "undef"):
                m = _WORD.match(d.rest.lstrip())
                if m:
                    name = m.group()
                    body = d.rest.lstrip()[m.end():]
                    params: set = set()
                    if d.kind == "define" and body.startswith("("):
                        close = body.find(")")
                        params = set(_WORD.findall(body[:close + 1]))
                        body = body[close + 1:]
                    self.macros.setdefault(name, []).append(
                        Site(f.name, d.line, d.end, tuple(_TOKEN.findall(body)), frozenset(params)))
        for n, k in f.occurrences("typedef"):
            toks, at, end = f.run(n, k, lambda toks: _statement_end(toks, 0))
            site = _site(f.name, toks, at, 0, end)
            for name in declared_names(toks[:end + 1]):
                self.typedefs.setdefault(name, []).append(site)
            self._enum(f.name, toks, at, 0, end, site)
        for n, k in f.occurrences("enum"):
            if f.before(n, k) != "typedef":
                toks, at, end = f.run(n, k, lambda toks: _statement_end(toks, 0))
                self._enum(f.name, toks, at, 0, end, None)

    def _enum(self, file: str, toks: list, at: list, start: int, end: int, site: Optional[Site]) -> None:
        """Index the enums defined between tokens start..end (an enum's braces, its enumerators)."""
        i = start
        while i <= end:
            if toks[i] == "enum":
                j = i + 1
                tag = toks[j] if j <= end and _WORD.fullmatch(toks[j]) else None
                if tag is not None:
                    j += 1
                if j <= end and toks[j] == "{":
                    close = _statement_end(toks, j, closing=True)
                    here = site or _site(file, toks, at, i, _statement_end(toks, i))
                    if tag is not None:
                        self.enums.setdefault(tag, []).append(here)
                    depth = 0
                    for k in range(j + 1, close):
                        x = toks[k]
                        if x in "([{":
                            depth += 1
                        elif x in ")]}":
                            depth -= 1
                        elif depth == 0 and _WORD.fullmatch(x) and toks[k - 1] in ("{", ","):
                            self.enumerators.setdefault(x, []).append(here)
                    i = close
            i += 1

    def words(self, site: Site) -> tuple:
        """(every name the site's text uses, the ones of them in a type context), parameters aside."""
        got = self._words.get(site)
        if got is None:
            names = tuple(w for w in site.toks if _WORD.fullmatch(w) and w not in KEYWORDS and w not in site.params)
            typed = tuple(w for w in type_context_words(site.toks, self.macros.__contains__) if w not in site.params)
            got = self._words[site] = (names, typed)
        return got

    def reach(self, file: str) -> set:
        """`file` and every file of the build it includes, directly or not, whatever the
        conditionals around each `#include`."""
        got, todo = {file}, [file]
        while todo:
            for _, target in self._includes.get(todo.pop(), ()):
                if target not in got:
                    got.add(target)
                    todo.append(target)
        return got

    def link_includes(self, resolve) -> None:
        """Record who includes whom: `resolve(includer, name, quoted)` gives the build's file an
        `#include` names, or None for a file not of the build (a system header)."""
        for f in self.files.values():
            for d in f.directives:
                if d.kind == "error":
                    self.errors.append((f.name, d.line))
                if d.kind != "include":
                    continue
                m = _INCLUDED.match(d.rest)
                if m is None:
                    continue
                target = resolve(f.name, m.group(2), m.group(1) == '"')
                if target is None:
                    self.system_includes.append((f.name, d.line))
                else:
                    self.includers.setdefault(target, []).append((f.name, d.line))
                    self._includes.setdefault(f.name, []).append((d.line, target))
        self._first_paths()

    def _first_paths(self) -> None:
        """`parent`: breadth first from Python.h (what every unit of the build starts with), then
        from each file nothing brings in (a `.c` file's own headers), in name order."""
        from collections import deque

        roots = [n for n in ("Include/Python.h",) if n in self.files]
        roots += sorted(n for n in self.files if n not in self.includers and n not in roots)
        seen = set()
        for root in roots:
            if root in seen:
                continue
            seen.add(root)
            todo = deque([root])
            while todo:
                f = todo.popleft()
                for line, target in self._includes.get(f, ()):
                    if target not in seen:
                        seen.add(target)
                        self.parent[target] = (f, line)
                        todo.append(target)


def _site(file: str, toks: list, at: list, start: int, end: int) -> Site:
    """The definition spanning tokens start..end of `toks` (their lines `at`)."""
    first = at[start] if start < len(at) else 1
    last = at[end] if 0 <= end < len(at) else first
    return Site(file, first, last, tuple(toks[start:end + 1]))


def _statement_end(toks: list, i: int, closing: bool = False) -> int:
    """The index of the `;` ending the declaration that starts at token i (at its own depth), or,
    `closing`, of the bracket closing the one at i."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j]
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if depth < 0:
                return j - 1
            if closing and depth == 0:
                return j
        elif t == ";" and depth == 0 and not closing:
            return j
    return len(toks) - 1


def declared_names(toks: list) -> list:
    """The names a `typedef` declaration declares: per declarator (split at top-level commas, a
    struct's braces skipped), the name after `(*` where there are parentheses, else the last name."""
    out, parts, depth, parens, current = [], [], 0, 0, []
    for x in toks[1:]:
        if x == "{":
            depth += 1
        elif x == "}":
            depth -= 1
            continue
        if depth:
            continue
        parens += (x in "([") - (x in ")]")
        if x in (",", ";") and parens == 0:
            parts.append(current)
            current = []
        else:
            current.append(x)
    if current:
        parts.append(current)
    for part in parts:
        name = None
        for k in range(len(part) - 2):
            if part[k] == "(" and part[k + 1] == "*" and _WORD.fullmatch(part[k + 2]):
                name = part[k + 2]
                break
        if name is None:
            level = 0
            for x in part:
                if x in "([":
                    level += 1
                elif x in ")]":
                    level -= 1
                elif level == 0 and _WORD.fullmatch(x) and x not in KEYWORDS:
                    name = x
        if name is not None:
            out.append(name)
    return out


def type_context_words(toks: list, function_like) -> list:
    """The names of `toks` whose size or alignment may count: inside `[...]`, inside the
    parentheses after `sizeof`, `_Alignas`, `__attribute__` and the like, and inside the arguments
    of a function-like macro (`function_like(name)`), which may use them so."""
    out, depth, i = [], 0, 0
    opened: list = []           # for each open bracket: whether it opened a type context
    while i < len(toks):
        x = toks[i]
        if x in "([":
            ctx = x == "[" or (i > 0 and (toks[i - 1] in TYPE_CONTEXT or
                                         bool(_WORD.fullmatch(toks[i - 1]) and function_like(toks[i - 1]))))
            opened.append(ctx)
            depth += ctx
        elif x in ")]":
            if opened:
                depth -= opened.pop()
        elif depth and _WORD.fullmatch(x) and x not in KEYWORDS:
            out.append(x)
        i += 1
    return out


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def build_index(paths: dict, search: tuple) -> Index:
    """The index of a build's files (`paths`: relative name -> path), `#include`s resolved beside
    the including file first, then in the `search` directories (relative names, in order)."""
    index = Index()
    for name in sorted(paths):
        index.add(read_file(name, read_text(paths[name])))
        index.paths[name] = paths[name]

    def resolve(includer: str, name: str, quoted: bool):
        import posixpath

        here = (posixpath.dirname(includer),) if quoted else ()
        for d in here + search:
            candidate = posixpath.normpath(posixpath.join(d, name)) if d else posixpath.normpath(name)
            if candidate in index.files:
                return candidate
        return None

    index.link_includes(resolve)
    return index
