"""Proof, from the compiler, that a table's dependency sets hold every pyconfig.h macro its layouts
depend on (docs/identity.md, "Per struct"): its build is scanned again with a pyconfig.h cut down
to the macros some set names, and every struct with a set must come out the same.

The cut keeps every `#define` of a macro that some struct's set, or some installed header's
constants' set, names (and pyconfig.h's include guard), and drops every other one: the dropped
macros are then undefined, as in a build whose configure found none of them. If a struct's layout
depended on a dropped macro, libclang would lay it out otherwise, or not at all. The truth is
libclang's layout of the cut build, never the sets' own reasoning: a set too small shows as a
struct that changed. A unit that the cut leaves uncompilable outside every struct's text (a
function body's `#if`, a `.c` file's `#error`) is scanned again with the macros its error needs
(`check`); those are counted apart, and not tested.

Compared: every struct of the table that has a set (`depends`), field by field (a struct without
one depends on everything and may change), the names that lead to them, and every constant whose
dependencies the cut kept: one of pyconfig.h whose macro it kept, one of an installed header with
a set. A struct or constant only the cut build has is counted, not a failure: a build without
those macros has it, the table does not claim it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from .. import data_cache
from ..atomic_write import write_folder
from ..errors import BuildError, ScanError
from ..layout import identity
from ..layout.identity import headers_digest
from ..layout.model import Table

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)")
_GUARD = re.compile(r"^[ \t]*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#[ \t]*define[ \t]+\1\b", re.M)
#: How many differences a report names (the counts are complete).
SHOWN = 10


@dataclass(frozen=True)
class Cut:
    """A pyconfig.h cut down: its text, and the names of the macros whose `#define` it kept and dropped."""

    text: str
    kept: tuple[str, ...]
    dropped: tuple[str, ...]


@dataclass(frozen=True)
class Report:
    """What the rescan of the cut build gave, against the table."""

    kept: tuple[str, ...]           # pyconfig.h macros defined in the cut for the sets
    dropped: tuple[str, ...]        # pyconfig.h macros the cut left undefined
    structs: int                    # structs with a set, compared
    fields: int                     # their fields
    constants: int                  # constants whose dependencies the cut kept, compared
    mismatches: tuple[str, ...]     # what differs (SHOWN of each kind at most, then a count)
    unset: int = 0                  # structs without a set (not compared)
    unset_same: int = 0             # of them, the same in the rescan all the same
    only_cut: tuple[str, ...] = ()  # structs only the cut build has
    restored: tuple[str, ...] = ()  # dropped macros restored so that the cut build compiles (not tested)

    @property
    def same(self) -> bool:
        return not self.mismatches

    def line(self) -> str:
        back = f", {len(self.restored)} restored to compile" if self.restored else ""
        return (f"pyconfig.h cut to the sets' macros ({len(self.kept)} kept, {len(self.dropped)} dropped{back}): "
                f"{self.structs} structs / {self.fields} fields and {self.constants} constants compared, "
                f"{'the same' if self.same else f'{len(self.mismatches)} differences'}")


def macros(table: Table) -> set:
    """Every leaf some struct's set or some header's constants' set names."""
    out: set = set()
    for s in table.structs.values():
        if s.depends is not None:
            out.update(s.depends.macros)
    for deps in (table.dependencies.constants.values() if table.dependencies else ()):
        out.update(deps.macros)
    return out


def cut(text: str, keep: set) -> Cut:
    """`text` (a pyconfig.h) with every `#define` of a macro not in `keep` removed (its continuation
    lines too); its include guard is kept. Comments and conditionals stay as they are."""
    guard = _GUARD.search(text)
    keep = keep | ({guard.group(1)} if guard else set())
    out, kept, dropped = [], [], []
    lines = text.splitlines(True)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _DEFINE.match(line)
        end = i
        while lines[end].rstrip("\n").endswith("\\") and end + 1 < len(lines):
            end += 1
        if m is None or m.group(1) in keep:
            out += lines[i:end + 1]
            if m is not None:
                kept.append(m.group(1))
        else:
            dropped.append(m.group(1))
        i = end + 1
    return Cut("".join(out), tuple(sorted(set(kept))), tuple(sorted(set(dropped))))


def with_pyconfig(b, text: str):
    """`b` (`BuildInputs`) with its pyconfig.h replaced by `text`: a copy of the include directory
    (whose own pyconfig.h, or Debian's multiarch one beside it, the compiler reads before any other)
    holding `text`; for a source tree, whose pyconfig.h is outside it, that file alone. Made once in
    the cache (`$OFFSETS_CACHE/cut/`), named for its content, so the scan cache serves a rescan."""
    inc, real, root = Path(b.include_dir), Path(b.pyconfig), Path(b.include_root)
    alone = not (inc / "pyconfig.h").exists() and root == inc
    if alone:
        rel = Path("pyconfig.h")
    elif real.is_relative_to(inc):
        rel = Path(inc.name) / real.relative_to(inc)
    elif real.is_relative_to(root):
        rel = real.relative_to(root)
    else:
        raise BuildError(f"{real} is neither in {inc} nor in {root}: cannot cut it in a copy")
    key = json.dumps([str(inc), str(real), str(root), None if alone else headers_digest(inc), text])
    out = data_cache.folder() / "cut" / hashlib.sha256(key.encode()).hexdigest()[:32]

    def fill(tmp: Path) -> None:
        if not alone:       # the cache's own files hard-linked (no space), others copied; never the pyconfig.h
            shutil.copytree(inc, tmp / inc.name, symlinks=False, copy_function=_link_or_copy(data_cache.folder()))
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).unlink(missing_ok=True)         # a link to the build's own: written anew
        (tmp / rel).write_text(text)

    if not (out / rel).is_file():
        write_folder(out, fill)
    if alone:
        return replace(b, pyconfig=out / rel)
    return replace(b, include_dir=out / inc.name, include_root=out, pyconfig=out / rel)


def _link_or_copy(cache: Path):
    """A copy function: a hard link to a file of the cache's own (an unpacked package), a copy of any
    other. A link changes its file's ctime, and an interpreter's installed headers are not ours to
    touch: the runtime's digest memo of them is keyed on their ctimes (identity.installed_inputs), so
    linking pyenv's headers made a describe running meanwhile miss its memo."""
    cache = os.path.realpath(cache) + os.sep

    def link_or_copy(src: str, dst: str) -> None:
        real = os.path.realpath(src)
        if real.startswith(cache):
            try:
                os.link(real, dst)
                return
            except OSError:
                pass
        shutil.copy2(src, dst)
    return link_or_copy


def compare(table: Table, again: Table, kept: set, names: tuple) -> Report:
    """The report of `again` (the cut build's table) against `table`."""
    wrong: dict = {"struct": [], "name": [], "constant": []}
    structs = fields = unset = unset_same = 0
    for key, s in sorted(table.structs.items()):
        other = again.structs.get(key)
        mine = replace(s, depends=None)
        theirs = replace(other, depends=None) if other is not None else None
        if s.depends is None:
            unset += 1
            unset_same += theirs == mine
            continue
        structs += 1
        fields += len(s.fields)
        if theirs != mine:
            wrong["struct"].append(f"{key}: {_difference(mine, theirs)}")
    for alias, key in sorted(table.names.items()):
        if table.structs[key].depends is not None and again.names.get(alias) != key:
            wrong["name"].append(f"{alias}: names {key} in the table, {again.names.get(alias)} in the cut build")
    constants = 0
    sets = table.dependencies.constants if table.dependencies else {}
    for name, c in sorted(table.constants.items()):
        own = c.defined_in == identity.PYCONFIG
        if not ((own and name.split("@", 1)[0] in kept) or (not own and c.defined_in in sets)):
            continue
        constants += 1
        got = again.constants.get(name)
        if got != c:
            wrong["constant"].append(f"{name} ({c.defined_in}): {c.value} in the table, "
                                     f"{'absent' if got is None else got.value} in the cut build")
    mismatches = []
    for kind, found in wrong.items():
        mismatches += found[:SHOWN] + ([f"... and {len(found) - SHOWN} more {kind}s"] if len(found) > SHOWN else [])
    only = tuple(sorted(set(again.structs) - set(table.structs)))
    return Report(names[0], names[1], structs, fields, constants, tuple(mismatches), unset, unset_same, only)


def _difference(mine, theirs) -> str:
    if theirs is None:
        return "absent in the cut build"
    if (mine.size, mine.align) != (theirs.size, theirs.align):
        return f"size/align {mine.size}/{mine.align} in the table, {theirs.size}/{theirs.align} in the cut build"
    a, b = {f.path: f for f in mine.fields}, {f.path: f for f in theirs.fields}
    for name in list(a) + [n for n in b if n not in a]:
        if a.get(name) != b.get(name):
            return f"field {name}: {_brief(a.get(name))} in the table, {_brief(b.get(name))} in the cut build"
    return "differs (not in size, alignment or fields)"


def _brief(f) -> str:
    return "absent" if f is None else f"offset {f.offset}, size {f.size}, {f.type}"


def check(table: Table, b, opts=None, binary=None) -> Report:
    """Scan build `b` (the table's own `BuildInputs`) again with its pyconfig.h cut down to
    `macros(table)`, filled from the DWARF of `binary` as the table was (the names a `.c` file's
    typedef gives a header's struct: 3.6's `slotdef`, `struct wrapperbase`), and compare;
    `BuildError` when the table has no dependency sets to test.

    A unit that does not compile without some dropped macro is scanned again with it restored:
    the macros tested by the conditionals around the error's line, or named on it, that the cut
    dropped (a function's body: Debian 3.11's _hashopenssl.c calls `va_start(vargs)` without
    HAVE_STDARG_PROTOTYPES). Restored macros are counted apart and not tested. An error inside the
    text of a struct of the table, or one no dropped macro explains, is a difference."""
    from ..scan import scanner

    if table.dependencies is None:
        raise BuildError(f"{table.build.table_name} has no dependency sets: nothing to cut pyconfig.h to")
    text = Path(b.pyconfig).read_text(errors="replace")
    keep, restored, wrong = macros(table), set(), []
    opts = replace(opts or scanner.ScanOptions(progress=None), keep_going=True)
    for _ in range(ROUNDS):
        c = cut(text, keep | restored)
        cb = with_pyconfig(b, c.text)
        try:
            again = scanner.scan(cb, opts)
            errors = [s for s in again.skipped if ": error: " in s]
        except ScanError as e:           # the headers' unit: nothing without it
            again, errors = None, [str(e)]
        if not errors:
            break
        more = set()
        for e in errors:
            why, names = _explained(e, cb, b, set(c.dropped), table)
            wrong += why
            more |= names
            if not names and not why:
                wrong.append(f"the cut build does not compile, and no dropped macro explains it: {e}")
        if wrong or not more:
            return Report(tuple(sorted(set(c.kept) - restored)), c.dropped, 0, 0, 0, tuple(wrong[:SHOWN]),
                          restored=tuple(sorted(restored)))
        restored |= more
    else:
        raise BuildError(f"{table.build.table_name}: the cut build still does not compile after restoring "
                         f"{len(restored)} macros ({', '.join(sorted(restored)[:8])})")
    if binary is not None:
        from ..scan import dwarf

        again = dwarf.fill_extensions(dwarf.fill(again, dwarf.read(binary)), binary)[0]
    report = compare(table, again, set(c.kept), (tuple(sorted(set(c.kept) - restored)), c.dropped))
    return replace(report, restored=tuple(sorted(restored)))


#: How many times a cut build is scanned again with the macros its errors need restored.
ROUNDS = 12
_AT = re.compile(r"(/[^:]+):(\d+):\d+: error: ")


def _explained(error: str, cb, b, dropped: set, table: Table) -> tuple:
    """(differences, dropped macros to restore) for a scan error of the cut build `cb`."""
    from ..scan import source_text

    m = _AT.search(error)
    if m is None:
        return [], set()
    path, line = m.group(1), int(m.group(2))
    rel = None
    for root, name in ((str(cb.include_dir) + "/", "Include/"), (str(b.source) + "/" if b.source else None, "")):
        if root and path.startswith(root):
            rel = name + path[len(root):]
    try:
        f = source_text.read_file(rel or path, source_text.read_text(path))
    except OSError:
        return [], set()
    words = set(f.tokens(line - 1)) if 0 < line <= len(f.code) else set()
    for d in f.directives:
        if d.line <= line <= d.end:
            words |= set(source_text._WORD.findall(d.rest))
    names = (f.conditions(line, line) | words) & dropped
    inside = [k for k, s in table.structs.items() if s.depends is not None and rel is not None
              and s.defined_in.rpartition(":")[0] == rel and _spans(f, int(s.defined_in.rpartition(":")[2]), line)]
    why = [f"{k} ({rel}) does not compile without {', '.join(sorted(names)) or 'a dropped macro'}: {error}"
           for k in inside[:1]]
    return why, names


def _spans(f, first: int, line: int) -> bool:
    """Whether `line` is within the declaration at line `first` of file `f`."""
    found = f.statement(first)
    return found is not None and found[0] <= line <= found[1]
