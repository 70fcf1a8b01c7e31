"""The constants of a translation unit, as the compiler decides them: the text appended to a unit
to ask, and what its answers mean.

The candidates are the names the unit's own files `#define` (`macro_text`). After the unit's own
text come, for each object-like candidate whose bodies are balanced (`Definition.balanced`), three
file-scope declarations that the compiler accepts only for what they claim:

    #ifdef NAME
    typedef __typeof__((NAME)) __offsets_ct_N;               /* an expression: its type */
    typedef char __offsets_ci_N[(NAME) ? 1 : 1];             /* an integer constant expression */
    static const __offsets_ct_N __offsets_cv_N = (NAME);     /* its value (clang's evaluation) */
    #endif

(the array bound is an error unless it is an integer constant expression: folding any other
constant is made an error for these lines), then `#define NAME __offsets_redefined__` for every
candidate: clang's "macro redefined" diagnostic carries a note at the definition in effect at the
end of the unit, which says where it is (a CPython file, the C library, the command line) and so,
read there, whether it is function-like or empty. Each probe sits on lines of its own, so an error
belongs to the candidate whose line it is on. Enumerators come from the unit's declarations.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

from . import macro_text
from ..layout.model import Constant

#: A wide character constant (C11 6.4.4.4: its type is the compiler's wchar_t, char16_t or char32_t).
_WIDE_CHARACTER = re.compile(r"(?<![\w'])(?:L|u|U|u8)'")
TYPE_PREFIX, ICE_PREFIX, VALUE_PREFIX = "__offsets_ct_", "__offsets_ci_", "__offsets_cv_"
REDEFINED = "__offsets_redefined__"
#: Lines per evaluated candidate (`#ifdef`, the three probes, `#endif`), and the probes' order.
PROBE_LINES = 5
TYPE_LINE, ICE_LINE, VALUE_LINE = 1, 2, 3


@dataclass(frozen=True)
class Appendix:
    """The text appended to a unit, and where each candidate's lines are (0-based, from its start)."""

    text: str
    evaluated: tuple          # names with probe lines, candidate i's at PROBE_LINES * i + 1 + ...
    names: tuple              # every candidate, redefined in this order after the probes
    files: dict               # name -> the own files whose text defines it
    at: dict                  # (file, line of the name) -> its macro_text.Definition
    texts: dict = field(default_factory=dict)     # own file -> its text

    @property
    def redefinitions_start(self) -> int:
        return 2 + PROBE_LINES * len(self.evaluated)


def candidates(own: dict) -> tuple[list, list, dict, dict]:
    """(names to evaluate, every candidate name, name -> own files defining it, (file, line) ->
    definition) of a unit's own files (`macro_text.own_files`). A name is evaluated when some
    definition of it is object-like, every object-like one is balanced, and not every one is a body
    no expression can be (empty, an initializer list, statements: `Definition.never_an_expression`)."""
    bodies: dict = {}
    files: dict = {}
    at: dict = {}
    for path, text in own.items():
        for d in macro_text.definitions(text):
            bodies.setdefault(d.name, []).append(d)
            if "/*" not in d.body:          # else a comment runs on past the line: read it there
                at[(path, d.line)] = d
            spots = files.setdefault(d.name, [])
            if path not in spots:
                spots.append(path)
    names = sorted(bodies)
    evaluated = []
    for n in names:
        objects = [d for d in bodies[n] if not d.function_like]
        if objects and all(d.balanced for d in objects) and not all(d.never_an_expression for d in objects):
            evaluated.append(n)
    return evaluated, names, files, at


def appendix(own: dict) -> Appendix:
    evaluated, names, files, at = candidates(own)
    lines = ['#pragma clang diagnostic error "-Wgnu-folding-constant"',
             '#pragma clang diagnostic error "-Wmacro-redefined"']
    for i, n in enumerate(evaluated):
        lines += [f"#ifdef {n}", f"typedef __typeof__(({n})) {TYPE_PREFIX}{i};",
                  f"typedef char {ICE_PREFIX}{i}[({n}) ? 1 : 1];",
                  f"static const {TYPE_PREFIX}{i} {VALUE_PREFIX}{i} = ({n});", "#endif"]
    lines += [f"#define {n} {REDEFINED}" for n in names]
    return Appendix("\n".join(lines) + "\n", tuple(evaluated), tuple(names), files, at, own)


@dataclass
class Answers:
    """What the compiler said about an appendix (filled by clang_scan)."""

    errors: dict = field(default_factory=dict)        # line of the appendix (0-based) -> True
    places: dict = field(default_factory=dict)        # name -> (file, line) of the definition in effect, or None (no file)
    types: dict = field(default_factory=dict)         # evaluated index -> (kind word, spelling, size)
    values: dict = field(default_factory=dict)        # evaluated index -> int
    seen: set = field(default_factory=set)            # evaluated indexes whose type typedef was declared
    file_names: dict = field(default_factory=dict)    # CXFile address -> its name, in this unit


#: How clang_scan names a non-integer type's kind, and the reason a macro of it is left out.
TYPE_REASONS = {"pointer": "pointer", "floating": "floating", "string": "string", "other": "other-type"}


def classify(app: Appendix, answers: Answers, files_read, relpath, owned) -> tuple[dict, dict]:
    """(name -> Constant, name -> the reason it is left out) of the macros in effect at the end of
    the unit whose definitions are in CPython's own files (`owned(file)`), and of the candidates
    CPython's files the unit read (`files_read()`: their normalized paths) define while the
    definition in effect is elsewhere ('outside')."""
    index = {n: i for i, n in enumerate(app.evaluated)}
    constants, left_out = {}, {}
    for n in app.names:
        if n not in answers.places:
            continue                      # not defined at the end of the unit
        place = answers.places[n]
        if place is None or not owned(place[0]):
            if any(f in files_read() for f in app.files.get(n, ())):
                left_out[n] = "outside"
            continue
        file = os.path.normpath(place[0])
        d = app.at.get((file, place[1])) or macro_text.definition_at(*place)
        if d is not None and d.function_like:
            left_out[n] = "function-like"
            continue
        if d is not None and not d.body:
            left_out[n] = "empty"
            continue
        if d is not None and d.never_an_expression:
            left_out[n] = "not-expression"
            continue
        if d is not None and _WIDE_CHARACTER.search(d.body):
            left_out[n] = "compiler-specific"     # L'/' is a wchar_t: int for clang on i686, long for gcc
            continue
        reason, value = _evaluated(index.get(n), answers)
        if reason:
            left_out[n] = reason
            continue
        if macro_text.compiler_dependent(file, place[1], app.texts.get(file)):
            left_out[n] = "compiler-specific"
            continue
        kind, spelling, size = answers.types[index[n]]
        constants[n] = Constant(n, value, spelling, size, relpath(place[0]))
    return constants, left_out


def _evaluated(i: Optional[int], answers: Answers) -> tuple[Optional[str], Optional[int]]:
    """(why it is left out, or None; its value) of evaluated candidate `i`."""
    if i is None:
        return "not-expression", None        # unbalanced: never put before the parser
    base = PROBE_LINES * i + 2
    if answers.errors.get(base + TYPE_LINE) or i not in answers.types:
        return "not-expression", None
    kind, _, size = answers.types[i]
    if kind != "integer":
        return TYPE_REASONS[kind], None
    if size > 8:
        return "too-wide", None
    if answers.errors.get(base + ICE_LINE) or answers.errors.get(base + VALUE_LINE) or i not in answers.values:
        return "not-constant", None
    return None, answers.values[i]


def lost(app: Appendix, answers: Answers) -> Optional[str]:
    """A candidate whose probe lines the compiler neither declared nor faulted (its parse lost its
    place: never expected, and then the unit's constants are not trusted), or None."""
    for i, n in enumerate(app.evaluated):
        base = PROBE_LINES * i + 2
        if i not in answers.seen and not answers.errors.get(base + TYPE_LINE) and n in answers.places:
            return n
    return None
