"""The compiler check of a table's constants: gcc, in the build's own context, asserts each one.

For every constant, after the C text that defines it (the build's headers, as the struct probes
include them; a `.c` file's constants after that file, with its own flags), one line:

    _Static_assert((NAME) == VALUE && ((NAME) < 0) == (VALUE < 0) && sizeof(NAME) == SIZE
                   && __builtin_types_compatible_p(__typeof__((NAME)), TYPE), "NAME");

which gcc accepts only when NAME is an integer constant expression there (folding anything else
is made an error for these lines) of that value, width and type (gcc's own compatibility of
types, as `_Generic` uses it, but also where a unit is C99). A line gcc refuses is a
mismatch; to say what gcc found instead, its value, sign, width and type are then read from an
object file (as probe.py reads offsets), one line per constant.
"""
from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from .. import children
from ..scan import zig
from ..errors import BuildError
from ..layout.model import Constant, Table
from ..layout.sanity import INTEGER_TYPES
from .probe import _ERROR, _read_symbols, compiler_for, gcc_flags

_FILE = "__offsets_constants__"
_VALUE = "__offsets_cv_"
#: `_Generic`'s answer for each integer type, as an index into this tuple (0: none of them).
TYPES = tuple(INTEGER_TYPES)


@dataclass(frozen=True)
class ConstantReport:
    """What gcc was asked about constants, and where it disagreed (one line each)."""

    compiler: str
    constants: int
    mismatches: tuple[str, ...]
    skipped: tuple[str, ...] = ()

    def __add__(self, other: "ConstantReport") -> "ConstantReport":
        return ConstantReport(self.compiler if self.compiler == other.compiler else f"{self.compiler}, {other.compiler}",
                              self.constants + other.constants, self.mismatches + other.mismatches,
                              self.skipped + other.skipped)


def _c_name(name: str) -> str:
    return name.split("@", 1)[0]


def literal(value: int) -> str:
    """`value` as a C expression of type long long or unsigned long long (LLONG_MIN too)."""
    return f"{value}ULL" if value >= 0 else f"(-{-value - 1}LL - 1)"


def assertion(c: Constant) -> str:
    n, v = _c_name(c.name), literal(c.value)
    return (f"_Static_assert(({n}) == {v} && (({n}) < 0) == ({v} < 0) && sizeof({n}) == {c.size} && "
            f"__builtin_types_compatible_p(__typeof__(({n})), {c.type}), \"{n}\");")


def _gcc_sees(c: Constant, sym: str) -> str:
    n = _c_name(c.name)
    kinds = ", ".join(f"{t}: {i + 1}" for i, t in enumerate(TYPES))
    return (f"const unsigned long long {sym}[] = {{(unsigned long long)({n}), ({n}) < 0, sizeof({n}), "
            f"_Generic(({n}), {kinds}, default: 0)}};")


def _failing_lines(stderr: str) -> dict:
    """line (after the #line) -> gcc's first error on it."""
    out: dict = {}
    for line in stderr.splitlines():
        m = _ERROR.match(line)
        if m and m.group(1) == _FILE:
            out.setdefault(int(m.group(2)), m.group(3))
    return out


def _compile(text: str, cc: list, flags: list, work: Path, name: str, obj: bool):
    src = work / f"{name}.c"
    src.write_text(text)
    out = ["-c", "-o", str(work / f"{name}.o")] if obj else zig.syntax_only(cc, work)
    return children.run([*cc, *flags, "-O0", *out, str(src)], cc[0])


def probe_constants(constants: Sequence[Constant], prelude: str, cc: list, flags: list,
                    work: Optional[Path] = None) -> ConstantReport:
    """Assert every constant after `prelude` (the C text that defines them); a mismatch for each
    assertion gcc refuses, saying what gcc found."""
    constants = list(constants)
    if not constants:
        return ConstantReport(" ".join(cc), 0, ())
    with tempfile.TemporaryDirectory(prefix="offsets-constants-") as tmp:
        work = Path(work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        head = [prelude, '#pragma GCC diagnostic error "-Wpedantic"', f'#line 1 "{_FILE}"']
        proc = _compile("\n".join(head + [assertion(c) for c in constants]) + "\n", cc, flags, work, "asserts", False)
        failing = _failing_lines(proc.stderr)
        if proc.returncode and not failing:
            first = next((ln for ln in proc.stderr.splitlines() if _ERROR.match(ln)), proc.stderr.strip()[-300:])
            raise BuildError(f"gcc cannot compile the build's text for the constant checks: {first}")
        lines = [n for n in sorted(failing) if 1 <= n <= len(constants)]
        bad = [constants[n - 1] for n in lines]
        mismatches = []
        for n, c, seen in zip(lines, bad, _what_gcc_sees(bad, prelude, cc, flags, work)):
            table = f"{c.value} ({c.type}, {c.size} bytes)"
            if seen == table:       # the same number, but no integer constant expression for gcc
                seen = f"{seen}, but: {failing[n]}"
            mismatches.append(f"{c.name}: table says {table}, gcc says {seen}")
    return ConstantReport(" ".join(cc), len(constants), tuple(mismatches))


def _what_gcc_sees(constants: list, prelude: str, cc: list, flags: list, work: Path) -> list[str]:
    """For each constant, gcc's value, width and type of it (or why gcc cannot say)."""
    seen = [""] * len(constants)
    todo = list(range(len(constants)))
    for _ in range(4):
        lines = [prelude, f'#line 1 "{_FILE}"'] + [_gcc_sees(constants[i], f"{_VALUE}{i}") for i in todo]
        proc = _compile("\n".join(lines) + "\n", cc, flags + ["-w"], work, "values", True)
        if not proc.returncode:
            break
        failing = _failing_lines(proc.stderr)
        if not failing:
            return [f"nothing (gcc: {proc.stderr.strip()[-200:]})"] * len(constants)
        for n, message in failing.items():
            if 1 <= n <= len(todo):
                seen[todo[n - 1]] = f"no constant ({message})"
        todo = [i for k, i in enumerate(todo) if k + 1 not in failing]
    else:
        return [s or "nothing it could compile" for s in seen]
    found, little, _ = _read_symbols(work / "values.o", [f"{_VALUE}{i}" for i in todo])
    for i in todo:
        data = found.get(f"{_VALUE}{i}", b"")
        if len(data) != 32:
            seen[i] = "nothing readable"
            continue
        raw, negative, size, kind = (int.from_bytes(data[k:k + 8], "little" if little else "big") for k in (0, 8, 16, 24))
        value = raw - (1 << 64) if negative else raw
        seen[i] = f"{value} ({TYPES[kind - 1] if kind else 'no integer type'}, {size} bytes)"
    return seen


# ---------------------------------------------------------------------------------------------
# Which text defines which constant


def header_constants(table: Table) -> list[Constant]:
    """The constants a header defines (`Include/...`)."""
    return [c for c in table.constants.values() if c.defined_in.startswith("Include/")]


def msvc_only(c: Constant, b) -> bool:
    """Whether each place in its file that may define constant `c` (a `#define` of it, a line
    naming an enumerator) lies inside a conditional that asks whether the compiler is MSVC's kind."""
    import re

    from ..scan import macro_text

    rel = c.defined_in
    path = b.pyconfig_h if rel == "Include/pyconfig.h" else b.include_dir / rel[len("Include/"):]
    text = macro_text.read_text(str(path))
    if text is None:
        return False
    name = re.escape(c.name.split("@")[0])
    pattern = rf"^\s*#\s*define\s+{name}\b" if c.kind == "macro" else rf"\b{name}\b"
    lines = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(pattern, text, re.M)]
    return bool(lines) and all(macro_text.compiler_dependent(str(path), n, text, macro_text.MSVC_WORDS)
                               for n in lines)


def check(table: Table, b, work: Optional[Path] = None) -> ConstantReport:
    """gcc's assertions of every constant of `table` it can see from build `b`: the headers' in
    the header unit's text and flags, each `.c` file's (or a header of the tree's) in a unit that
    includes it with its own flags."""
    from ..scan import units

    unit, _ = units.header_unit(b)
    cc = compiler_for(b.target)
    flags = gcc_flags(unit.args, b, cc) + ["-iquote", str(b.include_dir)]
    asked, msvc = header_constants(table), []
    if b.target.system == "windows":
        msvc = [c for c in asked if msvc_only(c, b)]
        asked = [c for c in asked if c not in msvc]
    report = probe_constants(asked, f'#line 1 "__offsets_headers__.c"\n{unit.text}', cc, flags, work)
    if msvc:
        report = report + ConstantReport(report.compiler, 0, (), tuple(
            f"{c.name}: not compared: defined only where the compiler is MSVC's kind (`_MSC_VER`), which "
            f"clang's MSVC target is and mingw-w64 gcc is not" for c in msvc))
    rest = [c for c in table.constants.values() if not c.defined_in.startswith("Include/")]
    if rest:
        report = report + _source_constants(rest, b, cc, work)
    return report


def _source_constants(constants: list, b, cc: list, work: Optional[Path]) -> ConstantReport:
    """The constants of `.c` files and the tree's other headers, each through a unit that includes
    its file: the unit that qualifies it (`NAME@UNIT`), or its own `.c` file; a header's through the
    units that include it, in turn, until one defines it as the table does (several do, each in
    its own context: the scan took the first that defines it so)."""
    from ..scan import macro_text, sources

    skipped: list = []
    if b.source is None:
        return ConstantReport(" ".join(cc), 0, (), (f"{len(constants)} constants of .c files: no source tree given",))
    by_file, includers = {}, {}        # a unit's file -> it; an own file -> the units reaching it
    root = str(b.source.resolve()) + "/"
    for u in sorted(sources.source_units(b)[0], key=lambda u: u.path):
        by_file[str(Path(u.path).resolve().relative_to(b.source))] = u
        for f in macro_text.own_files(u.path, None, u.args, u.owned):
            f = os.path.realpath(f)
            if f.startswith(root):
                includers.setdefault(f[len(root):], []).append(u)
    todo = []           # (constant, the units to try it in)
    for c in constants:
        where = c.name.split("@", 1)[1] if "@" in c.name else c.defined_in
        own = [by_file[f] for f in (where, c.defined_in) if f in by_file]
        units = list(dict.fromkeys(own or includers.get(c.defined_in, [])))
        if not units:
            skipped.append(f"{c.name}: defined in {c.defined_in}, which no unit of the build includes")
            continue
        todo.append((c, units))
    report = ConstantReport(" ".join(cc), 0, (), tuple(skipped))
    failed: dict = {}       # constant name -> the first unit's mismatch
    attempt = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:     # gcc runs in its own process
        while todo:
            groups: dict = {}
            for c, units in todo:
                groups.setdefault(units[attempt].path, (units[attempt], []))[1].append(c)
            running = [pool.submit(probe_constants, mine, f'#include "{u.path}"', cc, gcc_flags(u.args, b, cc), work)
                       for u, mine in (groups[p] for p in sorted(groups))]
            bad = set()
            for future in running:
                r = future.result()
                for m in r.mismatches:
                    name = m.split(":", 1)[0]
                    failed.setdefault(name, m)
                    bad.add(name)
            attempt += 1
            todo = [(c, units) for c, units in todo if c.name in bad and attempt < len(units)]
            for c, units in [(c, u) for c, u in todo]:
                failed.pop(c.name, None)        # tried again in the next unit that includes its file
    return report + ConstantReport(" ".join(cc), len(constants) - len(skipped), tuple(sorted(failed.values())))

