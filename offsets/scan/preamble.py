"""Shared preambles: the units of one build that start alike parse that start once.

Most `.c` files of a CPython tree start with `#include "Python.h"`, after a few `#define`s or through
a header beside them (`#include "module.h"`, which starts with Python.h), and that start is most of
each unit's parse. A unit's *start* is the directives it reads up to the include of Python.h (and
the end of any conditional around it), following the headers of its own directory. Units with the
same arguments and start share one precompiled header of it (`clang_scan.build_preamble`); each is
then parsed whole after it, so its start runs a second time.

That second run must change nothing, and is shown to change nothing for each unit before it shares
(`usable`), from the files its preamble read (a `#define` or `#undef` of a name that matters, in a
range their conditionals skipped, did not run: a second parse with libclang's preprocessing record
says which, only when there is one; in a file entered twice, every one counts):
- no macro a conditional of the start tests (with the names a `-D` of it spells) is defined or
  undefined by the start or by those files, so every conditional takes the same branch both times;
- no macro the start defines or undefines is defined or undefined by those files, so each ends as
  the whole parse leaves it;
- every header the start includes (Python.h too) is guarded: `#ifndef G` `#define G` ... `#endif`
  with no `#else`, G set nowhere else (those files, the start), or `#pragma once` outside any
  conditional, so its second include is empty;
- the start tests no builtin whose value depends on where it is read (`__LINE__`, `__has_include`,
  ...), and those files name none that differs between the preamble's header and the unit's file
  (`__BASE_FILE__`, `__INCLUDE_LEVEL__`, `__COUNTER__`, spelled or pasted);
- a macro the preamble leaves out (the guard of a header beside the file, which no `-D` or earlier
  directive may define; a `#define` or `-D` of a name no build header mentions, so that more units
  share) is named in none of those files, in no `-D` and no compiler word, nor can `##` paste it
  together from what they spell, so the preamble means the same with it or without;
- those files (and the start's) are read as clang reads them: none spells a directive as a digraph
  or trigraph (`%:define`), ends a line with a carriage return or splices one with spaces after
  its backslash; a name the compiler's own macros spell (libclang's record of them) is never left out.
A unit that fails one of these, starts with anything else (code, `#pragma`, a computed include) or
has an argument this module does not read for macros (`-Wp,-D`, `-Xclang`, `-include`, `-iquote`,
a response file ...; `_shareable`) is parsed whole. tests/test_preamble.py compares a full build's tables byte for byte.

Why a start ends at Python.h: the units that share one part ways at their next include (Debian
3.11.2's 95 core units: pycore_call.h in 15, pycore_abstract.h and pycore_ast.h in 8 each ...).
Going further needs a precompiled header saved on its parent's, which libclang writes but crashes
on loading (16.0.6 and 18.1.1: `python -m offsets.tools.chained_pch`); one built whole for the
longer start costs what it saves (Python.h with pycore_call.h: 0.24 s to build, 13-20 ms less in
each of its 15 units).
"""
from __future__ import annotations

import glob
import hashlib
import itertools
import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Optional

from .clang_scan import Preamble, Unit, build_preamble, predefined_words, skipped_lines
from ..errors import ScanError

_HEAD = 1 << 16     # a preamble ends within the first 64 KiB of a file, or there is none
#: A preamble costs about 0.1 s to build and saves about 0.05 s in each unit that uses it (Debian
#: 3.11.2 on one core: a unit parses and walks in 0.02 s after it, 0.07 s whole): two units break even.
MIN_UNITS = 3
_NOT_CODE_TEXT = r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''     # comments, literals
_NOT_CODE = re.compile(_NOT_CODE_TEXT, re.S)
_TOKENS = re.compile(_NOT_CODE_TEXT + r'|[^/"\']+|.', re.S)
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


@dataclass(frozen=True)
class Start:
    """How a file starts, up to the include of Python.h (`read_start`)."""

    text: str                   # the preamble: the start's directives, one per line, less the left-out ones
    tested: frozenset           # macros its conditionals test
    assigned: frozenset         # macros it defines or undefines (left-out ones included)
    left_out: frozenset         # macros the start defines and the preamble does not
    guards: frozenset = frozenset()     # the guards of the headers beside the file it goes through


@dataclass(frozen=True)
class Use:
    """A unit's claim on a preamble: which one, and what `usable` checks against it."""

    group: int
    tested: frozenset
    assigned: frozenset
    left_out: frozenset         # the start's, and the `-D`s of its arguments the preamble leaves out


@dataclass(frozen=True)
class Shared:
    """A built preamble, and which of its units' macros the files it read define or mention."""

    preamble: Preamble
    assigned: frozenset         # defined or undefined by a file the preamble read
    mentioned: frozenset        # named anywhere in a file the preamble read


class _Reading:
    """The state of reading one start, across the headers beside the file it descends into."""

    def __init__(self, mentioned: Callable[[str], bool]) -> None:
        self.mentioned = mentioned
        self.out: list = []
        self.tested: set = set()
        self.assigned: set = set()
        self.left_out: set = set()
        self.guards: set = set()
        self.depth = 0
        self.seen = False

    def read(self, path: Path, nested: int) -> bool:
        """Follow `path`'s leading directives; True once Python.h is included outside any conditional."""
        try:
            with open(path, errors="replace") as f:
                head = f.read(_HEAD)
        except OSError:
            return False
        if _odd_lines(head):
            return False
        lines = [ln for ln in itertools.takewhile(lambda ln: not ln or ln.startswith("#"), _lines(head)) if ln]
        first = 0
        guard = _guard(lines) if nested else None
        if guard:                           # a header's own guard, left out: the start assumes
            if guard in self.assigned or _compiler_word(guard):     # it undefined when reached
                return False
            self.left_out.add(guard)
            self.assigned.add(guard)
            self.guards.add(guard)
            first = 2
        for line in lines[first:]:
            done = self.directive(line, path, nested)
            if done is not None:
                return done
        return False

    def directive(self, line: str, path: Path, nested: int) -> Optional[bool]:
        """Take one directive: None to go on, True when the start is complete, False when there is none."""
        m = _DIRECTIVE.fullmatch(line)
        if not m or m.group(1) not in _KINDS:
            return False
        kind, rest = m.group(1), m.group(2).rstrip()
        if kind in ("if", "ifdef", "ifndef", "elif"):
            if not rest.strip():
                return False
            self.tested |= _identifiers(rest) - {"defined"}
            self.depth += kind != "elif"
        elif kind == "endif":
            self.depth -= 1
            if self.depth < 0:
                return False
        elif kind in ("define", "undef"):
            name = _NAME.match(rest.strip())
            if not name or name.group() in self.guards:
                return False
            self.assigned.add(name.group())
            if kind == "define" and self.depth == 0 and not _compiler_word(name.group()) \
                    and not self.mentioned(name.group()):
                self.left_out.add(name.group())
                return None
        elif kind == "include":
            inc = _INCLUDE.fullmatch(rest)
            if not inc:
                return False            # a computed include
            beside = path.parent / inc.group(2)
            if inc.group(1) == '"' and beside.exists():
                # a header of the file's own directory: its start is this file's
                return self.depth == 0 and nested < _NESTING and self.read(beside, nested + 1)
            rest = f" <{inc.group(2)}>"     # "X" not beside the file is found where <X> is
            self.seen = self.seen or os.path.basename(inc.group(2)) == "Python.h"
        self.out.append(f"#{kind}{rest}")
        return True if self.seen and self.depth == 0 else None


def read_start(path: str, mentioned: Optional[Callable[[str], bool]] = None) -> Optional[Start]:
    """How `path` starts (None: not with directives that reach Python.h, or in a way its second
    run could change). A `#define` of a name `mentioned` says no build header names, outside any
    conditional, is left out of the preamble's text (by default none is)."""
    reading = _Reading(mentioned or (lambda name: True))
    if not reading.read(Path(path), 0):
        return None
    text = "\n".join(reading.out) + "\n"
    start = Start(text, frozenset(reading.tested), frozenset(reading.assigned), frozenset(reading.left_out),
                  frozenset(reading.guards))
    if start.tested & (start.assigned | _PLACE_MACROS) or start.left_out & _identifiers(text):
        return None         # a conditional its own start (or where it is read) could flip, or text
    return start            # naming what it leaves out


def preamble_text(path: str) -> Optional[str]:
    """The text of the preamble `path` starts with, leaving nothing out; None when there is none."""
    start = read_start(path)
    return start.text if start else None


def plan(units: list[Unit], workdir: str) -> tuple[list[tuple], list[Optional[Use]]]:
    """The preambles worth building, as arguments of `build`, and for each unit its `Use` of one
    (None: it is parsed whole). A preamble is shared by at least `MIN_UNITS` units with the same
    arguments (less `-D`s of names no build header mentions) and start; its files go into `workdir`."""
    keys: list = []
    words = _HeaderWords()
    for u in units:
        start = None
        if u.text is None and _shareable(u.args):
            dirs = _include_dirs(u.args)
            start = read_start(u.path, lambda name: words.mentions(dirs, name))
        if start is not None:
            start = _with_arguments(start, u.args)
        if start is None:
            keys.append(None)
            continue
        args, left, in_text = [], set(), _identifiers(start.text)
        bodies = set().union(*(body for _, body in _defines(u.args)), set())
        for a in u.args:
            d = _DEFINE_ARG.fullmatch(a)
            if d and d.group(1) not in in_text | bodies and not _compiler_word(d.group(1)) \
                    and not words.mentions(dirs, d.group(1)):
                left.add(d.group(1))
            else:
                args.append(a)
        keys.append(((tuple(args), start.text), start, frozenset(left)))
    count: dict = {}
    for k in keys:
        if k is not None:
            count[k[0]] = count.get(k[0], 0) + 1
    groups = sorted(g for g, n in count.items() if n >= MIN_UNITS)
    index = {g: i for i, g in enumerate(groups)}
    uses: list = []
    names: list = [set() for _ in groups]
    for k in keys:
        if k is None or k[0] not in index:
            uses.append(None)
            continue
        key, start, left = k
        use = Use(index[key], start.tested, start.assigned, start.left_out | left)
        names[use.group] |= use.tested | use.assigned | use.left_out
        uses.append(use)
    jobs = [(text, args, os.path.join(workdir, f"preamble-{i}.h"), os.path.join(workdir, f"preamble-{i}.pch"),
             frozenset(names[i]))
            for i, (args, text) in enumerate(groups)]
    return jobs, uses


def _defines(args: tuple) -> list:
    """(name, the names its body spells) of each `-D` of the arguments (`-DX=v` or `-D X=v`)."""
    out = []
    for a, b in zip(args, args[1:] + ("",)):
        d = a[2:] if a.startswith("-D") and len(a) > 2 else b if a == "-D" else None
        if d:
            name = _NAME.match(d)
            body = d.split("=", 1)[1] if "=" in d else ""
            out.append((name.group() if name else d, _identifiers(body)))
    return out


def _with_arguments(start: Start, args: tuple) -> Optional[Start]:
    """`start` with what its unit's `-D`s mean for it: a tested macro defined there tests what its
    body names too; None when a `-D` defines a header's guard or spells a name the start leaves out."""
    defined = {}
    for name, body in _defines(args):
        defined.setdefault(name, set()).update(body)
    if start.guards & defined.keys() or start.left_out & set().union(*defined.values(), set()):
        return None
    tested, todo = set(start.tested), list(start.tested)
    while todo:
        for name in defined.get(todo.pop(), ()):
            if name not in tested:
                tested.add(name)
                todo.append(name)
    if tested & (start.assigned | _PLACE_MACROS):
        return None
    return replace(start, tested=frozenset(tested))


def build(job: tuple) -> Optional[Shared]:
    """The preamble `job` (an element of `plan`'s first list) describes, with what its files do to
    its units' macros; None when it cannot be built or a header it includes is not guarded."""
    text, args, header, pch, names = job
    names = names | _READER_MACROS
    pre = build_preamble(text, args, header, pch)
    if pre is None:
        return None
    assigned, mentioned, guards = {}, set(), set()      # assigned: name -> [(file, lines)]
    try:
        for inc in _INCLUDES.finditer(text):
            found = _include_guards(inc.group(1), pre.files)
            if found is None:
                return None
            guards |= found
        guard_sets = 0      # the guards' own `#define`s, and any other define or undefine of them
        for f, digest in pre.files:
            if _odd_lines(_read_text(f, digest)):
                return None     # line ends or splices this module does not read as clang does
            body = _spliced(f, digest)
            if ("%:" in body or "??=" in body) and ("%:" in _code_text(f, digest) or "??=" in _code_text(f, digest)):
                return None     # a directive spelled as a digraph or trigraph: not read here
            for g in guards:
                lines = _assigns(f, digest).get(g) if _names(body, g) else None
                guard_sets += 0 if lines is None else len(lines) or 2     # no line found: counts twice
            for name in names:
                if _names(body, name):
                    mentioned.add(name)
                    lines = _assigns(f, digest).get(name)
                    if lines is not None:
                        assigned.setdefault(name, []).append((f, lines))
        if assigned:    # a directive that may not have run: ask the preprocessor which ran
            skipped = skipped_lines(text, args, header)
            assigned = {n: at for n, at in assigned.items()
                        if any(_ran(lines, *skipped.get(f, (2, ()))) for f, lines in at)}
        if guard_sets > len(guards):
            return None         # a guard set again (`#undef` at the end): a second include is not empty
        mentioned |= names & predefined_words(tuple(args))
        unseen = names - mentioned
        if unseen:      # a name no file spells may still be pasted together (`CAT(WI, DE)`)
            tokens = frozenset().union(*(_tokens(f, d) for f, d in pre.files), _code_words(text),
                                       _TOKEN.findall(" ".join(args)))
            mentioned |= {name for name in unseen
                          if _pasteable(name, tokens, reserved=name not in _READER_MACROS)}
    except (OSError, ScanError):
        return None
    if mentioned & _READER_MACROS:
        return None         # files that read where they are included from, or count their reads
    return Shared(pre, frozenset(assigned), frozenset(mentioned))


def usable(shared: Optional[Shared], use: Use) -> Optional[Preamble]:
    """`shared`'s preamble if running `use`'s start again after it changes nothing, else None."""
    if shared is None or (use.tested | use.assigned) & shared.assigned or use.left_out & shared.mentioned:
        return None
    return shared.preamble


# --- what build headers say -------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_]\w*")
_DEFINE_ARG = re.compile(r"-D([A-Za-z_]\w*)(?:=.*)?", re.S)
_INCLUDES = re.compile(r"^#include <([^>]+)>$", re.M)
_TOKEN = re.compile(r"\w+")
_C_KEYWORDS = frozenset("auto break case char const continue default do double else enum extern float for goto "
                        "if inline int long register restrict return short signed sizeof static struct switch "
                        "typedef union unsigned void volatile while asm typeof _Alignas _Alignof _Atomic _Bool "
                        "_Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local".split())
_PREDEFINED_WORDS = frozenset({"L", "U", "UL", "LL", "ULL", "F", "char", "short", "int", "long", "signed", "unsigned",
                               "float", "double", "void", "_Bool"})
_PLAIN_ASSIGN = re.compile(r"^[ \t]*#[ \t]*(?:define|undef)[ \t]+([A-Za-z_]\w*)", re.M)
_NESTING = 3        # headers beside the file followed this deep
_TAKES_VALUE = frozenset({"-D", "-U", "-I", "-isystem", "-idirafter", "-x", "-target"})
_SAFE_ARG = re.compile(r"-[DUI].+|-isystem.+|-x(c|c-header)?|c|c-header|-std=\w+|--target=[\w.-]+|-nostdinc"
                       r"|-ferror-limit=\d+|-f[a-z][\w-]*|-W(?!p,)[a-z][\w=-]*|-w|-m[\w=.-]+|-O\w*|-g\w*|-pthread", re.S)
_SPACED_SPLICE = re.compile(r"\\[ \t\f\v]+$", re.M)
#: Builtin macros whose value depends on where, when or how often they are read: the start, which is
#: read from the preamble's header first, may not test them; the files the preamble reads may not
#: name those that differ there (`_READER_MACROS`: the main file, the include depth, a counter).
_PLACE_MACROS = frozenset({"__LINE__", "__FILE__", "__FILE_NAME__", "__BASE_FILE__", "__INCLUDE_LEVEL__",
                           "__COUNTER__", "__DATE__", "__TIME__", "__TIMESTAMP__",
                           "__has_include", "__has_include_next"})    # "x" is looked for beside the file
_READER_MACROS = frozenset({"__BASE_FILE__", "__INCLUDE_LEVEL__", "__COUNTER__"})
_PLAIN_PREDEFINED = frozenset({"unix", "linux", "i386"})     # predefined in GNU modes


def _include_dirs(args: tuple) -> tuple:
    """The `-I` directories of a unit's arguments (`-Idir` or `-I dir`), in order."""
    dirs = [b if a == "-I" else a[2:] for a, b in zip(args, args[1:] + ("",)) if a.startswith("-I")]
    return tuple(dict.fromkeys(d for d in dirs if d))


def _compiler_word(name: str) -> bool:
    """A keyword, a word the compiler's own macros spell, or a name reserved to it: never left out
    of a preamble (a predefined macro's body may spell it), nor taken for a header's guard."""
    return name in _C_KEYWORDS or name in _PREDEFINED_WORDS or name.startswith("__") or name in _PLAIN_PREDEFINED


def _odd_lines(text: str) -> bool:
    """A carriage return, or a backslash with spaces before the line's end (which clang still
    splices): lines this module would split or join otherwise than clang does."""
    return "\r" in text or bool(_SPACED_SPLICE.search(text))


def _shareable(args: tuple) -> bool:
    """Only arguments whose meaning for macros is read here (`-D`, `-U`, `-I` ...; not `-Wp,-D`,
    `-Xclang`, a response file, `-include`): a unit with any other is parsed whole."""
    value = False
    for a in args:
        if value:
            value = False
        elif a in _TAKES_VALUE:
            value = True
        elif not _SAFE_ARG.fullmatch(a):
            return False
    return True


def _identifiers(text: str) -> set:
    return set(_NAME.findall(text))


def _names(text: str, name: str) -> bool:
    """`name` occurs in `text` as a whole word."""
    at, n = text.find(name), len(name)
    while at >= 0:
        if not (at and _is_word_char(text[at - 1])) and not (at + n < len(text) and _is_word_char(text[at + n])):
            return True
        at = text.find(name, at + 1)
    return False


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _file_text(path: str, digest: Optional[str] = None) -> str:
    """The text of `path`; with a `digest` (a `Preamble`'s), the text it was read with or OSError."""
    data = Path(path).read_bytes()
    if digest is not None and "sha256:" + hashlib.sha256(data).hexdigest() != digest:
        raise OSError(f"{path} changed while it was scanned")
    return data.decode(errors="replace")


@lru_cache(maxsize=None)
def _read_text(path: str, digest: str) -> str:
    return _file_text(path, digest)


@lru_cache(maxsize=None)
def _assigns(path: str, digest: str) -> dict:
    return _assigned_in(_read_text(path, digest))


@lru_cache(maxsize=None)
def _spliced(path: str, digest: str) -> str:
    """The file's text with its lines spliced (`\\` newline), as the preprocessor reads names."""
    return _read_text(path, digest).replace("\\\n", "")


@lru_cache(maxsize=None)
def _code_text(path: str, digest: str) -> str:
    return _code_only(_read_text(path, digest))


@lru_cache(maxsize=None)
def _tokens(path: str, digest: str) -> frozenset:
    return frozenset(_TOKEN.findall(_code_text(path, digest)))


def _code_only(text: str) -> str:
    """`text` spliced, with its comments and string and character literals blanked."""
    return _NOT_CODE.sub(" ", text.replace("\\\n", ""))


def _code_words(text: str) -> frozenset:
    """The words of `text` outside comments and literals: what a pasted token could be made of."""
    return frozenset(_TOKEN.findall(_code_only(text)))


def _pasteable(name: str, tokens: frozenset, reserved: bool = True) -> bool:
    """`name` is two or more pieces, each one of `tokens` (what the preamble's text, arguments and
    files spell), a number (a pp-number starts with a digit), a type or suffix word or (with
    `reserved`) any `__` name (what the compiler's own macros spell): `##` could make it from what
    the preamble reads. The builtins themselves are checked without `reserved`, which any `__x__`
    name would pass."""
    def piece(p: str) -> bool:
        return p in tokens or p in _PREDEFINED_WORDS or p[0].isdigit() or (reserved and p.startswith("__"))

    made = [True] + [False] * len(name)     # made[i]: name[:i] is one or more pieces
    for i in range(1, len(name) + 1):
        made[i] = any(made[k] and piece(name[k:i]) for k in range(i) if (k, i) != (0, len(name)))
    return made[len(name)]


def _ran(lines: list, entered: int, skipped) -> bool:
    """Whether a `#define`/`#undef` at one of `lines` (an empty list: at a line not known) can have
    run, in a file entered `entered` times whose skipped ranges are `skipped`."""
    if not lines or entered != 1:
        return True
    return any(not any(a <= line <= b for a, b in skipped) for line in lines)


@lru_cache(maxsize=None)
def _is_guarded(path: str, digest: str) -> Optional[str]:
    return _guarded(_read_text(path, digest))


def _assigned_in(text: str) -> dict:
    """Every macro a `#define` or `#undef` of the text names (any conditional around it ignored),
    with the lines they are on; an empty list where a directive is spelled so that its line is not
    found (a comment or a line break inside it)."""
    out: dict = {}
    for line in _lines(text):
        m = _DIRECTIVE.fullmatch(line) if line.startswith("#") else None
        if m and m.group(1) in ("define", "undef"):
            name = _NAME.match(m.group(2).strip())
            if name:
                out.setdefault(name.group(), 0)
                out[name.group()] += 1
    found: dict = {}
    line, at = 1, 0
    blank = _NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)    # lines kept
    for m in _PLAIN_ASSIGN.finditer(blank):
        line, at = line + blank.count("\n", at, m.start()), m.start()
        found.setdefault(m.group(1), []).append(line)
    return {name: (found.get(name, []) if len(found.get(name, [])) == n else []) for name, n in out.items()}


def _guard(lines: list) -> Optional[str]:
    """G, when the logical lines start `#ifndef G` `#define G` (an include guard's opening)."""
    if len(lines) < 2:
        return None
    g1, g2 = _DIRECTIVE.fullmatch(lines[0]), _DIRECTIVE.fullmatch(lines[1])
    name = g1.group(2).strip() if g1 and g1.group(1) == "ifndef" else None
    ok = name and _NAME.fullmatch(name) and g2 and g2.group(1) == "define" and g2.group(2).strip() == name
    return name if ok else None


def _guarded(text: str) -> Optional[str]:
    """G when the whole text is `#ifndef G` `#define G` ... `#endif`, with no `#else` of that
    conditional and G never defined or undefined again; "" when it says `#pragma once` outside any
    conditional; else None. A second include of a guarded text adds nothing while G stays defined."""
    lines = [ln for ln in _lines(text) if ln]
    directives = [(d.group(1), d.group(2).strip()) if d else (None, "")
                  for d in (_DIRECTIVE.fullmatch(ln) if ln.startswith("#") else None for ln in lines)]
    depth = 0
    for kind, rest in directives:
        depth += kind in ("if", "ifdef", "ifndef")
        depth -= kind == "endif"
        if kind == "pragma" and depth == 0 and re.fullmatch(r"once\b.*", rest):
            return ""
    guard = _guard(lines) if len(lines) >= 3 else None
    if not guard:
        return None
    depth = 1
    for i, (kind, rest) in enumerate(directives[2:], 2):
        if kind in ("define", "undef") and _NAME.match(rest) and _NAME.match(rest).group() == guard:
            return None
        if kind in ("else", "elif") and depth == 1:
            return None
        depth += kind in ("if", "ifdef", "ifndef")
        depth -= kind == "endif"
        if depth == 0:
            return guard if i == len(lines) - 1 else None
    return None


def _include_guards(name: str, files: tuple) -> Optional[set]:
    """The guards of every file the preamble read that `#include <name>` could be; None when one is
    not guarded."""
    found = [_is_guarded(f, d) for f, d in files if f == name or f.endswith("/" + name)]
    if not found or any(g is None for g in found):
        return None
    return {g for g in found if g}


class _HeaderWords:
    """The names a build's headers mention: every `.h` of a directory, with its `cpython/` and
    `internal/` directories. Only a guess at what a preamble will read, so `build` checks the files
    it did read."""

    def __init__(self) -> None:
        self.blobs: dict = {}       # directory -> its headers' text
        self.known: dict = {}       # (directory, name) -> mentioned

    def mentions(self, dirs: tuple, name: str) -> bool:
        return any(self._mentions(d, name) for d in dirs)

    def _mentions(self, d: str, name: str) -> bool:
        if (d, name) not in self.known:
            if d not in self.blobs:
                texts = []
                for sub in ("", "cpython", "internal"):
                    for p in sorted(glob.glob(os.path.join(glob.escape(d), sub, "*.h"))):
                        try:
                            texts.append(_file_text(p))
                        except OSError:
                            pass        # a guess: a header it cannot read is not counted
                self.blobs[d] = "\n".join(texts)
            blob = self.blobs[d]
            self.known[d, name] = _names(blob, name)
        return self.known[d, name]
