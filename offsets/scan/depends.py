"""What each struct's layout and each constant's value depend on: the macros whose values come from
outside the build's own text, and the files of that text (docs/identity.md, "Per struct").

A struct's layout is a function of the text the compiler reads for it and of the values of the
macros that text tests or expands. The closure (`Closure.of_struct`) collects, from the build's own
files (`source_text.Index`):

- the statement that defines it (from the table's `defined_in` to its `;`), the conditionals that
  decide whether those lines are read (each `#if`/`#elif` around or inside them), and the
  `#include`s that bring its file in, with their conditionals, up to the unit's main file;
- every macro that text names, followed through each of its definitions (`#define` and `#undef`
  sites, their conditionals, their bodies), and every enumerator it names (its enum's definition);
- the types it holds by value: each field's type, through typedefs (their statements and
  conditionals) to a struct of the table (whose own closure joins), an enum, a builtin type, or a
  C library type;
- a type named where its size or alignment counts (in `[...]`, `sizeof(...)`, `_Alignas(...)`,
  `__attribute__((...))`, a function-like macro's arguments), as if held by value;
- what any text of the unit depends on (`Closure.system`): what the C library declares and
  defines (the macros pyconfig.h sets for it, names starting with `_`: `_FILE_OFFSET_BITS`,
  `_GNU_SOURCE`; the conditionals around every `#include <...>` in reach, which decide which of
  its names exist), and whether the unit compiles at all (the conditionals around every
  `#error` in reach).

Where the build's text ends, the closure keeps the name as a *leaf*: a macro of `pyconfig.h`, a
define of the core's command line, or a name nothing in the build defines (`Py_LIMITED_API`,
`MS_WINDOWS`). A leaf's value is `identity.leaf_value`: what pyconfig.h, else the core's defines,
say of it, else undefined; the runtime computes the same of the running build. Left out, as the
same for every table: the layout flags (compared for the whole table), the scan's own defines
(`identity.NOT_IDENTITY`) and those a `.c` unit's own compile line sets (the source tree's).

A struct whose text is not at hand (filled from DWARF without its `.c` file) has no closure: it
depends on everything (`None`), and only a whole-build match can make it exact.
"""
from __future__ import annotations

import hashlib
import os
import stat
from typing import Iterable, Optional

from ..layout import identity
from ..layout.compact_depends import INSTALLED
from ..layout.model import Dependencies, DependencySet
from . import source_text

#: Builtin type words: a field of such a type depends on the target alone.
BUILTIN = frozenset("""void char short int long float double signed unsigned _Bool bool _Complex __int128
__int128_t __uint128_t _Float16 __fp16 __bf16""".split())
_QUALIFIERS = frozenset("const volatile restrict __restrict __restrict__ _Atomic static register".split())
#: Words of `__attribute__((...))` that name no type.
ATTRIBUTES = frozenset("""aligned __aligned__ packed __packed__ unused __unused__ deprecated __deprecated__
may_alias __may_alias__ vector_size __vector_size__ mode __mode__ transparent_union visibility""".split())


def _reserved(name: str) -> bool:
    """A name the C implementation reserves (`__x`, `_X`): the compiler's or the C library's, never
    the build's to define unless pyconfig.h or its command line does (then it is a leaf anyway)."""
    return name.startswith("__") or (name.startswith("_") and name[1:2].isupper())


class Closure:
    """Dependency sets over one build's index (`source_text.Index`) and table structs."""

    def __init__(self, index: source_text.Index, structs: dict, names: dict, leaf_names: set) -> None:
        self.index = index
        self.structs, self.names = structs, names
        #: names that are leaves whatever the text says (pyconfig.h's, the core's defines)
        self.leaf_names = leaf_names
        self._struct_memo: dict = {}
        self._macro_memo: dict = {}
        self._include_memo: dict = {}
        self._site_memo: dict = {}
        self._kept: list = []
        #: the `.c` file whose struct or constant is being followed (None: a header's)
        self.unit: Optional[str] = None
        self._system_memo: dict = {}
        self._probe_names: Optional[set] = None
        self._reach_memo: dict = {}
        self._definitions: Optional[dict] = None
        #: every name `_name` is given (None: not kept); `_headers_names` keeps it
        self.visited: Optional[set] = None
        self._plain: dict = {}
        for key in structs:
            self._plain.setdefault(key.split("@", 1)[0], []).append(key)
        for alias, key in names.items():
            self._plain.setdefault(alias.split("@", 1)[0], []).append(key)

    # ------------------------------------------------------------------ the parts
    def _site(self, site, leaves: set, files: set, types: list, typed_all: bool) -> None:
        """A definition's text: its file and how it is brought in, the conditionals on its lines,
        the names it uses (the type names among them into `types`: all of them with `typed_all`,
        else those in a type context). An index site's closure is made once."""
        key = (id(site), typed_all, self.unit)
        got = self._site_memo.get(key)
        if got is None:
            self._kept.append(site)     # a struct's statement is a Site of its own: its id is no other's
            self._site_memo[key] = (set(), set(), [])       # an enum naming its own enumerators
            got = (set(), {site.file}, [])
            f = self.index.files.get(site.file)
            if f is not None:
                for w in f.conditions(site.first, site.last):
                    self._name(w, got[0], got[1], got[2], tested=True)
            words, typed = self.index.words(site)
            for w in words:
                self._name(w, got[0], got[1], got[2], tested=False)
            got[2].extend(words if typed_all else typed)
            self._included(site.file, got[0], got[1])
            self._site_memo[key] = got
        leaves |= got[0]
        files |= got[1]
        types.extend(got[2])

    def _name(self, w: str, leaves: set, files: set, types: list, tested: bool) -> None:
        """A name used in text (`tested`: by a conditional): a macro is followed, an enumerator's
        enum joins; a leaf is kept: one of pyconfig.h or the core's defines, or a tested name the
        build's files do not define."""
        if self.visited is not None:
            self.visited.add(w)
        macro = w in self.index.macros
        if w in self.leaf_names or (tested and not macro and not _reserved(w)):
            leaves.add(w)
        if macro:
            m_leaves, m_files, m_types = self.macro(w)
            leaves |= m_leaves
            files |= m_files
            types.extend(m_types)
        for site in self.index.enumerators.get(w, ()):
            if self._visible(site):
                self._site(site, leaves, files, types, typed_all=False)

    def macro(self, name: str) -> tuple:
        """(leaves, files, type names) of a macro, through every site of a header that defines or
        undefines it, and of the `.c` file being followed (`self.unit`): another `.c` file is
        another translation unit (one that laid a header out otherwise would have made the scan
        keep that header's struct per unit: qualify.py)."""
        key = (name, self.unit)
        got = self._macro_memo.get(key)
        if got is not None:
            return got
        self._macro_memo[key] = (set(), set(), [])      # a macro naming itself, or a cycle
        leaves, files, types = set(), set(), []
        for site in self.index.macros.get(name, ()):
            if self._visible(site) and site.file != identity.PYCONFIG:   # pyconfig.h's: leaves, valued as such
                self._site(site, leaves, files, types, typed_all=False)
        got = self._macro_memo[key] = (leaves, files, types)
        return got

    def _visible(self, site) -> bool:
        """Whether a definition can be in the translation unit followed (`_reaches` its file)."""
        return self._reaches(site.file)

    def _included(self, file: str, leaves: set, files: set) -> None:
        got = self.includes(file)
        leaves |= got[0]
        files |= got[1]

    def includes(self, file: str) -> tuple:
        """(leaves, files) of how `file` is brought in (`Index.parent`): the files on the path of
        `#include`s from Python.h (or the unit's own file) to it, and the conditionals around each
        of those `#include`s. Whether a file defines the macro a struct tests depends on them."""
        key = (file, self.unit if self._own_files() else None)
        got = self._include_memo.get(key)
        if got is not None:
            return got
        self._include_memo[key] = (set(), set())
        leaves, files, types = set(), set(), []
        up = self.index.parent.get(file)
        if up is not None and self._reaches(up[0]):     # else the unit's main file includes it itself
            includer, line = up
            files.add(includer)
            for w in self.index.files[includer].conditions(line, line):
                self._name(w, leaves, files, types, tested=True)
            self._included(includer, leaves, files)
        got = self._include_memo[key] = (leaves, files)
        return got

    def system(self) -> tuple:
        """(leaves, files) that any text of the unit followed depends on, from every file in reach
        (`_reaches`: the installed headers, and the `.c` file followed with its own headers):

        - what the C library declares and defines: the macros pyconfig.h sets for it (its names
          starting with `_`: `_FILE_OFFSET_BITS`, `_GNU_SOURCE`, `_TIME_BITS`), and the conditionals
          around each `#include <...>`, with those files and how they are brought in. Which of them
          the compiler reads decides which C library names exist: 3.13's py_curses.h reads a curses
          header only under one of the HAVE_NCURSES*_H (without, `WINDOW *win` does not compile),
          and glibc's `_POSIX_THREADS`, which 3.7's pythread.h needs (else its `#error`), comes from
          the <unistd.h> that Python.h reads under HAVE_UNISTD_H. A C library type's size is
          otherwise the target's;
        - whether the unit compiles at all: the leaves of the conditionals around each `#error`
          (pyport.h's `LONG_BIT definition appears wrong`; 3.12's longobject.h stops every unit
          that reads Python.h unless SIZEOF_PID_T is SIZEOF_INT's, SIZEOF_LONG's or
          SIZEOF_LONG_LONG's). Not the files they are followed through: an `#error` decides
          whether there is a build, never a layout, and those files (every internal header's
          `#ifndef Py_BUILD_CORE`) would make each set hold a hundred files for nothing."""
        got = self._system_memo.get(self.unit)
        if got is None:
            own = self._own_files()
            if own and set().union(*map(self._defined_in, own)).isdisjoint(self._headers_names()):
                outer, self.unit = self.unit, None         # the headers' part, followed the same in it
                try:
                    base = self.system()
                finally:
                    self.unit = outer
                got = (set(base[0]), set(base[1]))
                self._system_of(got, own)
            else:
                got = ({n for n in self.leaf_names if n.startswith("_")}, set())
                self._system_of(got)
            self._system_memo[self.unit] = got
        return got

    def _system_of(self, got: tuple, only: Optional[set] = None) -> None:
        """Add to `got` the system includes' and `#error`s' conditionals of every file in reach, or
        of the files `only`."""
        types: list = []
        for file, line in self.index.system_includes:
            if self._reaches(file) and (only is None or file in only):
                got[1].add(file)
                for w in self.index.files[file].conditions(line, line):
                    self._name(w, got[0], got[1], types, tested=True)
                self._included(file, got[0], got[1])
        texts: set = set()
        for file, line in self.index.errors:
            if self._reaches(file) and (only is None or file in only):
                for w in self.index.files[file].conditions(line, line):
                    self._name(w, got[0], texts, types, tested=True)

    def _headers_names(self) -> set:
        """Every name the headers' part of `system()` follows (a fresh closure, none of it hidden in
        a memo): a `.c` file that defines none of them follows that part exactly as a header does
        (only its own definitions differ from a header's view), so it is made once."""
        if self._probe_names is None:
            probe = Closure(self.index, self.structs, self.names, self.leaf_names)
            probe.visited = set()
            probe.system()
            self._probe_names = probe.visited
        return self._probe_names

    def _defined_in(self, file: str) -> set:
        """The macros (defined or undefined) and enumerators that `file` gives a definition of."""
        if self._definitions is None:
            self._definitions = {}
            for table in (self.index.macros, self.index.enumerators):
                for name, sites in table.items():
                    for site in sites:
                        self._definitions.setdefault(site.file, set()).add(name)
        return self._definitions.get(file, set())

    def _reaches(self, file: str) -> bool:
        """Whether the translation unit followed can read `file`: an installed header (every unit
        reads them; `Include/`, and pyconfig.h), or, following a `.c` file, that file and the source
        tree's headers it includes (`_own_files`). Not another unit's: a header of
        Modules/_decimal/libmpdec is read by _decimal's units alone, so its `#include <...>`s decide
        nothing of PyListObject."""
        return file.startswith(INSTALLED) or file == identity.PYCONFIG or file in self._own_files()

    def _own_files(self) -> frozenset:
        """The files only the `.c` unit followed reads: itself and the source tree's headers it
        includes, whatever the conditionals around each `#include` (none following a header's struct)."""
        if self.unit is None:
            return frozenset()
        got = self._reach_memo.get(self.unit)
        if got is None:
            got = self._reach_memo[self.unit] = frozenset(f for f in self.index.reach(self.unit)
                                                          if not f.startswith(INSTALLED) and f != identity.PYCONFIG)
        return got

    def _system(self, leaves: set, files: set) -> None:
        got = self.system()
        leaves |= got[0]
        files |= got[1]

    def type_name(self, w: str, leaves: set, files: set, seen: set) -> None:
        """A type held by value, named `w` (a tag or typedef name): a struct of the table, or a
        typedef (followed to what it names), an enum, a builtin, or the C library's."""
        if w in seen or w in BUILTIN or w in _QUALIFIERS or w in ATTRIBUTES:
            return
        seen.add(w)
        keys = self._plain.get(w)
        if keys:
            for key in keys:
                got = self.of_struct(key)
                if got is None:
                    raise _Unknown(key)
                leaves |= got[0]
                files |= got[1]
            return
        sites = [x for x in (*self.index.typedefs.get(w, ()), *self.index.enums.get(w, ())) if self._visible(x)]
        if not sites:
            return      # a macro or value (followed as a name already), or the C library's (`system()`)
        for site in sites:
            types: list = []
            pointer = "*" in site.toks
            self._site(site, leaves, files, types, typed_all=not pointer)
            for t in types:
                if t != w:
                    self.type_name(t, leaves, files, seen)

    def field_type(self, spelling: str, leaves: set, files: set, seen: set) -> None:
        """A field's type, as the table spells it (`Py_ssize_t`, `struct _ts *`, `PyObject[2]`)."""
        if "*" in spelling or "(" in spelling.replace("_Atomic(", ""):
            return          # a pointer: its size is the target's
        words = [w for w in source_text._WORD.findall(spelling.split("[", 1)[0])
                 if w not in _QUALIFIERS and w != "_Atomic"]
        if not words or words[-1] == "anonymous":      # `union <anonymous>`: inside the struct's text
            return
        if words[0] in ("struct", "union", "enum") and len(words) > 1:
            words = words[1:]
        if all(w in BUILTIN for w in words):
            return
        self.type_name(words[-1], leaves, files, seen)

    # ------------------------------------------------------------------ structs and constants
    def of_struct(self, key: str) -> Optional[tuple]:
        """(leaves, files) of a struct of the table, or None when its text is not at hand."""
        if key in self._struct_memo:
            return self._struct_memo[key]
        self._struct_memo[key] = (set(), set())         # a cycle through sizeof: already counted
        s = self.structs[key]
        file, _, line = s.defined_in.rpartition(":")
        f = self.index.files.get(file)
        if f is None or not line.isdigit():
            self._struct_memo[key] = None
            return None
        outer, self.unit = self.unit, (file if file.endswith(".c") else None)
        try:
            return self._struct(key, s, file, f, int(line))
        finally:
            self.unit = outer

    def _struct(self, key: str, s, file: str, f, line: int) -> Optional[tuple]:
        leaves, files = set(), {file}
        found = f.statement(line)
        site = source_text.Site(file, *found) if found is not None else source_text.Site(file, line, line)
        types: list = []
        self._site(site, leaves, files, types, typed_all=False)
        self._system(leaves, files)
        seen: set = set()
        try:
            for t in types:
                self.type_name(t, leaves, files, seen)
            for fld in s.fields:
                self.field_type(fld.type, leaves, files, seen)
        except _Unknown:
            self._struct_memo[key] = None
            return None
        got = self._struct_memo[key] = (leaves, files)
        return got

    def of_constant(self, name: str, defined_in: str, kind: str) -> Optional[tuple]:
        """(leaves, files) of a constant: a macro through its definitions, an enumerator through
        its enum; a macro of pyconfig.h is its own leaf."""
        plain = name.split("@", 1)[0]
        if defined_in == identity.PYCONFIG:
            return {plain}, set()
        if defined_in not in self.index.files:
            return None
        outer, self.unit = self.unit, (defined_in if defined_in.endswith(".c") else None)
        try:
            return self._constant(plain, defined_in, kind)
        finally:
            self.unit = outer

    def _constant(self, plain: str, defined_in: str, kind: str) -> Optional[tuple]:
        leaves, files, types = set(), {defined_in}, []
        if kind == "enum":
            for site in self.index.enumerators.get(plain, ()):
                if self._visible(site):
                    self._site(site, leaves, files, types, typed_all=False)
        else:
            self._name(plain, leaves, files, types, tested=True)
        self._included(defined_in, leaves, files)
        self._system(leaves, files)
        seen: set = set()
        try:
            for t in types:
                self.type_name(t, leaves, files, seen)
        except _Unknown:
            return None
        return leaves, files


class _Unknown(Exception):
    """A struct whose text is not at hand: whatever holds it by value has no closure either."""


# ---------------------------------------------------------------- a table's dependencies
def leaf_context(pyconfig_text: str, cflags: Optional[str], config_defines: Iterable[str]) -> tuple:
    """(pyconfig.h's values, the core's defines) the leaves are valued in (`identity.leaf_value`)."""
    defines = identity.core_defines(cflags or "")
    for name in config_defines:
        defines.setdefault(name, "1")
    return identity.pyconfig_values(pyconfig_text), defines


def dependencies(table, index: source_text.Index, pyconfig_text: str, cflags: Optional[str],
                 unit_defines: Iterable[str] = ()) -> tuple:
    """(Dependencies of the table, struct key -> DependencySet or None) for a scanned `table` over
    its build's `index` (`unit_defines`: the names a `.c` unit's own compile line sets, left out as
    the source tree's). The constants of one installed header share one set, the union of theirs;
    one with a constant of unknown closure has none (its constants depend on everything), and so
    have the constants of a source tree's files (only a vendor's package vouches for those) and
    of pyconfig.h (each depends on itself: its own value in the running build's pyconfig.h)."""
    pyconfig, defines = leaf_context(pyconfig_text, cflags, ())
    left_out = set(identity.LAYOUT_FLAGS) | set(identity.NOT_IDENTITY) | (set(unit_defines) - set(defines))
    closure = Closure(index, table.structs, table.names, set(pyconfig) | set(defines))
    values: dict = {}
    digests: dict = {}

    def as_set(got) -> Optional[DependencySet]:
        if got is None:
            return None
        leaves = sorted(n for n in got[0] if n not in left_out)
        for n in leaves:
            values.setdefault(n, identity.leaf_value(n, pyconfig, defines))
        files = sorted(f for f in got[1] if f != identity.PYCONFIG)
        for f in files:
            if f not in digests:
                digests[f] = index_digest(index, f)
        return DependencySet(macros=tuple(leaves), files=tuple(files))

    structs = {key: as_set(closure.of_struct(key)) for key in sorted(table.structs)}
    by_file: dict = {}
    for name, c in sorted(table.constants.items()):
        if c.defined_in == identity.PYCONFIG or not c.defined_in.startswith("Include/"):
            continue        # pyconfig.h's: each its own leaf; a source tree's: no set (only its package vouches)
        got = closure.of_constant(name, c.defined_in, c.kind)
        union = by_file.setdefault(c.defined_in, (set(), set()))
        if got is None or union is None:
            by_file[c.defined_in] = None
        else:
            union[0].update(got[0])
            union[1].update(got[1])
    constants = {file: got for file, got in ((f, as_set(u)) for f, u in sorted(by_file.items())) if got is not None}
    deps = Dependencies(macros=dict(sorted(values.items())), files=dict(sorted(digests.items())), constants=constants)
    return deps, structs


_DIGESTS: dict = {}


def index_digest(index: source_text.Index, name: str) -> str:
    """A file's digest, as `identity.file_digest` gives it of the running build's copy."""
    return file_digest(index.paths[name])


def file_digest(path: str) -> str:
    """`sha256:HEX` of a regular file, hashed once per process while its inode, size and time
    stay; OSError for anything else."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path}: not a regular file")
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        with open(path, "rb") as f:
            _DIGESTS[key] = "sha256:" + hashlib.sha256(f.read()).hexdigest()
    return _DIGESTS[key]


# ---------------------------------------------------------------- a scan's table, annotated
def _relative(path: str, roots: Iterable) -> Optional[str]:
    for prefix, rel in roots:
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            return os.path.normpath(rel + path[len(prefix):]) if path != prefix else rel
    return None


def index_inputs(b, unit_list: list, files_read: Iterable[str]) -> tuple:
    """What the index of a build's own files (`source_text.build_index`) reads: every file a unit
    read under the build's roots, and every header of its include directory (read or not: another
    configuration reads them), relative name -> path; and the `#include` search directories."""
    from .build_inputs import header_files

    roots = []
    for u in unit_list:
        roots += [r for r in u.roots if r not in roots]
    paths: dict = {identity.PYCONFIG: str(b.pyconfig_h)}      # the build's own, not Debian's forwarder
    for p in [*files_read, *map(str, header_files(b))]:
        rel = _relative(os.path.normpath(p), roots)
        if rel is not None and os.path.isfile(p):
            paths.setdefault(rel, p)
    search: list = []
    for u in unit_list:
        args = list(u.args)
        for i, a in enumerate(args):
            d = args[i + 1] if a == "-I" and i + 1 < len(args) else a[2:] if a.startswith("-I") and len(a) > 2 else None
            if d is None:
                continue
            rel = _relative(os.path.normpath(d) + "/", roots)
            rel = "" if rel in (None, ".") and os.path.normpath(d) + "/" in {r[0] for r in roots} else rel
            if rel is not None and rel.rstrip("/") not in search:
                search.append(rel.rstrip("/"))
    for d in ("Include", "Include/internal"):
        if d not in search:
            search.append(d)
    return paths, tuple(search)


def unit_defines(unit_list: list) -> set:
    """The names the units' own compile lines define (`-DNAME`)."""
    out = set()
    for u in unit_list:
        for i, a in enumerate(u.args):
            if a.startswith("-D") and len(a) > 2:
                out.add(a[2:].split("=", 1)[0])
            elif a == "-D" and i + 1 < len(u.args):
                out.add(u.args[i + 1].split("=", 1)[0])
    return out


def of_table(table, b, unit_list: list, inputs: tuple) -> tuple:
    """`dependencies` of a scanned `table` over the index of `inputs` (`index_inputs`)."""
    index = source_text.build_index(*inputs)
    pyconfig_text = source_text.read_text(str(b.pyconfig_h))
    return dependencies(table, index, pyconfig_text, b.cflags, unit_defines(unit_list))


def with_sets(table, deps, structs: dict):
    """`table` with the `Dependencies` and the struct key -> set of `dependencies`."""
    from dataclasses import replace

    return replace(table, dependencies=deps, structs={k: replace(s, depends=structs[k]) for k, s in table.structs.items()})
