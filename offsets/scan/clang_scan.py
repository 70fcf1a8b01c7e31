"""The one module that talks to libclang: parse one translation unit, return its layouts.

It adds clang's builtin headers, turns any diagnostic of severity error into `ScanError`, turns
negative layout codes into `LayoutError`, converts bits to bytes, and decides anonymity with
`clang_Cursor_isAnonymousRecordDecl` (never from a type's spelling). Results are model values.
A unit's constants: its enumerators, and what the compiler answers to the probes `constant_probe`
appends (their diagnostics, types and clang's evaluation of their values).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Optional

from . import clang_constants, constant_probe, macro_text, storage
from .members import Member, flatten
from ..errors import LayoutError, ScanError
from ..layout import targets
from ..layout.model import LAYOUT_FLAGS, Struct

_FLAG_PREFIX = "__offsets_flag_"
_POINTER_PROBE = "__offsets_pointer_t"
_TAGGED_USR = re.compile(r"@[SU]@[^@]*$")   # ...@S@tag; @SA@name is a typedef's untagged record
_ANON = re.compile(r"(?:\w+::)*\((?:unnamed|anonymous)(?: (?:struct|union|enum))?(?: at [^)]*)?\)")


@dataclass(frozen=True)
class Unit:
    """One translation unit to parse: a file (or in-memory text), its arguments, and what it owns.

    `roots` maps absolute directory prefixes to the relative names used in `defined_in`; only
    records defined in a file under one of `owned` prefixes are reported.
    """

    name: str
    path: str
    args: tuple[str, ...]
    roots: tuple[tuple[str, str], ...]
    owned: tuple[str, ...]
    text: Optional[str] = None


@dataclass
class UnitResult:
    """What one translation unit defines, plus what the compiler said about the build."""

    name: str
    structs: dict = field(default_factory=dict)      # key -> Struct
    names: dict = field(default_factory=dict)        # alias (tag or other typedef) -> key
    flags: dict = field(default_factory=dict)        # layout flag -> defined after all includes
    pointer_size: Optional[int] = None
    files: dict = field(default_factory=dict)        # every file read -> sha256
    constants: dict = field(default_factory=dict)    # name -> Constant (enumerators, macros)
    left_out: dict = field(default_factory=dict)     # macro name -> why it is not a constant


@dataclass(frozen=True)
class Preamble:
    """A precompiled header of the text several units start with (`preamble.py` picks the text).

    `files` are the files it read, with digests; `typedefs` the typedefs it holds of records it
    leaves incomplete, as (record USR, typedef name) in source order: a unit that completes such a
    record (`typedef struct _dictkeysobject PyDictKeysObject;` in a header, the struct in a `.c`
    file) names it by them, as a parse without the precompiled header would.
    """

    path: str
    files: tuple[tuple[str, str], ...]
    typedefs: tuple[tuple[str, str], ...]


def flag_probes() -> str:
    """C text that leaves a declaration behind for each layout flag defined at the end of a unit."""
    lines = [f"typedef void *{_POINTER_PROBE};"]
    for flag in LAYOUT_FLAGS:
        lines += [f"#ifdef {flag}", f"static const int {_FLAG_PREFIX}{flag} = 1;", "#endif"]
    return "\n".join(lines) + "\n"


def libclang_version() -> str:
    """The version of the libclang library in use, e.g. `16.0.6`."""
    cindex = _cindex()
    lib = cindex.conf.lib
    fn = lib.clang_getClangVersion
    fn.restype = cindex._CXString
    text = cindex._CXString.from_result(fn())
    m = re.search(r"(\d+\.\d+\.\d+)", text)
    return m.group(1) if m else text


_CI = None


def load_libclang() -> None:
    """Load libclang now (a worker does, before it caps its memory)."""
    _cindex()


def _cindex():
    """Import clang.cindex on first use, and register the calls its bindings lack."""
    global _CI
    if _CI is None:
        import clang.cindex as ci

        lib = ci.conf.lib
        fn = lib.clang_Cursor_isAnonymousRecordDecl
        fn.argtypes = [ci.Cursor]
        fn.restype = ctypes.c_uint
        clang_constants.register(ci)
        _CI = ci
    return _CI


class _Walker:
    def __init__(self, unit: Unit, ci) -> None:
        self._members: dict = {}     # cursor hash -> [(record cursor, [Member])]
        self.unit = unit
        self.ci = ci
        self.K = ci.CursorKind
        self.T = ci.TypeKind
        self.anon = ci.conf.lib.clang_Cursor_isAnonymousRecordDecl
        self._foreign: dict = {}     # file -> defined outside the CPython tree
        self._owns: dict = {}        # CXFile address -> owned
        self._dirs = _include_dirs(unit.args)
        args = list(unit.args)
        triple = args[args.index("-target") + 1] if "-target" in args[:-1] else ""
        self.big_endian = targets.big_endian(triple)    # how members.flatten numbers bitfields

    def relpath(self, path: str) -> Optional[str]:
        """A file's name relative to its root, `..` resolved: clang spells a header as it first met
        its directory (`Modules/_hacl/internal/../Hacl_Streaming_Types.h`, or without `internal/..`
        when the main file's directory came first, which depends on how the main file was read)."""
        for prefix, rel in self.unit.roots:
            if path.startswith(prefix):
                return os.path.normpath(rel + path[len(prefix):])
        return None

    def owned(self, path: str) -> bool:
        return any(path.startswith(p) for p in self.unit.owned)

    def owns(self, cursor) -> bool:
        """Whether a declaration is in an owned file (asked once per file: by its CXFile address)."""
        f, _ = clang_constants.where(self.ci, self.ci.conf.lib.clang_getCursorLocation(cursor))
        got = self._owns.get(f)
        if got is None:
            got = self._owns[f] = f is not None and self.owned(cursor.location.file.name)
        return got

    def own_name(self, path: str) -> str:
        """The relative name of an owned file (`Include/...`, `relpath`); an owned file outside every
        root is a unit described wrongly, never a machine's path in a table."""
        rel = self.relpath(path)
        if rel is None:
            raise ScanError(f"{self.unit.name}: {path} is the unit's own but under none of its roots")
        return rel

    def where(self, cursor) -> str:
        loc = cursor.location
        path = loc.file.name if loc.file else "?"
        return f"{self.relpath(path) or path}:{loc.line}"

    def size(self, t, what: str) -> int:
        n = t.get_size()
        if n < 0:
            raise LayoutError(f"{what}: libclang gives no size for type {clean_type(t.spelling)!r} "
                              f"(code {n}) while scanning {self.unit.name}")
        return n

    def members(self, decl) -> list:
        """The `members.Member`s of record `decl`, asked of libclang once per record and unit: a
        nested record (PyObject, PyVarObject ...) is met again in every struct holding it."""
        bucket = self._members.setdefault(decl.hash, [])
        for known, found in bucket:
            if known == decl:
                return found
        found = []
        for f in decl.type.get_fields():
            name = f.spelling
            bitfield = f.is_bitfield()
            if bitfield and not name:
                continue  # unnamed bitfield: padding, not a field
            rel = f.get_field_offsetof()
            if rel < 0:
                raise LayoutError(f"{self.where(decl)}: libclang gives no offset for field {name!r} (code {rel})")
            canon = f.type.get_canonical()
            kind = canon.kind
            nested = canon.get_declaration() if kind == self.T.RECORD else None
            anonymous = nested is not None and bool(self.anon(nested))
            if anonymous and name:
                raise ScanError(f"{self.where(decl)}: anonymous member with a name {name!r}: libclang disagrees with itself")
            flexible = kind == self.T.INCOMPLETEARRAY
            size = -1 if flexible else canon.get_size()
            found.append(Member(name, rel, clean_type(f.type.spelling), size if size >= 0 else None,
                                f.get_bitfield_width() if bitfield else None, flexible,
                                canon.get_array_size() if kind == self.T.CONSTANTARRAY else None, nested, anonymous))
        bucket.append((decl, found))
        return found

    def leaf(self, decl) -> bool:
        """A member of this record type is listed, its own members are not: static object storage
        (data/storage.yaml) or a C library type (storage.py)."""
        return self.is_storage(decl) or self.is_foreign(decl)

    def is_storage(self, decl) -> bool:
        """A member of static-object-storage type is listed, not expanded (data/storage.yaml)."""
        return storage.depth(decl.spelling) is not None and self.is_tagged(decl)

    def is_foreign(self, decl) -> bool:
        """A record of the C library or another system header (storage.py): listed, not expanded.
        Its file's nearest include directory is a system one (`-isystem`, or none: a builtin)."""
        f = decl.location.file
        path = f.name if f else ""
        got = self._foreign.get(path)
        if got is None:
            best = max((d for d in self._dirs if path.startswith(d[0])), key=lambda d: len(d[0]), default=None)
            got = self._foreign[path] = not path or (best is not None and best[1])
        return got

    def is_tagged(self, decl) -> bool:
        """A record with a tag of its own (`struct S {...}`): not one only a typedef names
        (`typedef struct {...} T`, whose USR ends `@SA@T`), nor one with no name at all (clang 16+
        spells it `struct (unnamed at ...)`), also when a macro expands to the record (3.13's
        `struct _PyCode_DEF(8)`), where the tokens of its extent are the macro's."""
        if self.anon(decl) or not decl.spelling or decl.is_anonymous():
            return False
        return _TAGGED_USR.search(decl.get_usr()) is not None

    def struct(self, decl, key: str, tag: Optional[str]) -> Struct:
        where = self.where(decl)
        fields = flatten(self, decl, where, storage.depth(tag))
        kind = "union" if decl.kind == self.K.UNION_DECL else "struct"
        size = self.size(decl.type, f"{where}: {key}")
        align = decl.type.get_align()
        if align < 1:
            raise LayoutError(f"{where}: libclang gives no alignment for {key!r} (code {align})")
        return Struct(key, kind, size, align, where, tuple(fields))


def _include_dirs(args) -> tuple:
    """(directory + '/', is a system directory) for each -I and -isystem of a unit's arguments."""
    out, args = [], list(args)
    for i, a in enumerate(args):
        if a in ("-I", "-isystem") and i + 1 < len(args):
            out.append((args[i + 1].rstrip("/") + "/", a == "-isystem"))
        elif a.startswith("-I") and len(a) > 2:
            out.append((a[2:].rstrip("/") + "/", False))
        elif a.startswith("-isystem") and len(a) > 8:
            out.append((a[8:].rstrip("/") + "/", True))
    return tuple(out)


def clean_type(spelling: str) -> str:
    """A type's spelling without clang's location-bearing names for untagged records."""
    return _ANON.sub("<anonymous>", spelling)


def _parse(ci, path: str, args: list, text, name: str, exclude_pch_decls: bool = False,
           record: bool = False, answers: Optional[tuple] = None):
    """A translation unit with skipped function bodies (with `record`, the preprocessor's record of
    what it skipped too); a `ScanError` for any error diagnostic, but those on the lines from
    `answers` = (first line, Appendix, constant_probe.Answers) on, which go there."""
    options = ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES | ci.TranslationUnit.PARSE_INCOMPLETE
    if record:
        options |= ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
    unsaved = [(path, text)] if text is not None else None
    try:
        tu = ci.Index.create(excludeDecls=exclude_pch_decls).parse(path, args=args, unsaved_files=unsaved,
                                                                   options=options)
    except ci.TranslationUnitLoadError as e:
        raise ScanError(f"{name}: libclang could not parse it at all ({e})") from None
    main = clang_constants.address(ci.conf.lib.clang_getFile(tu, path)) if answers is not None else None
    for d in tu.diagnostics:
        if d.severity < ci.Diagnostic.Error:
            continue        # every answer is an error (the probes' pragmas make them so)
        if answers is not None and clang_constants.answer(ci, d, main, *answers):
            continue
        loc = d.location
        where = f"{loc.file.name}:{loc.line}:{loc.column}" if loc.file else path
        raise ScanError(f"{where}: error: {d.spelling} (in translation unit {name})")
    return tu


_DIGESTS: dict = {}     # (path, inode, size, mtime) -> digest: one hash per file and process


def _digest(path: str) -> str:
    st = os.stat(path)
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return _DIGESTS[key]


def build_preamble(text: str, args: tuple, header: str, pch: str) -> Optional[Preamble]:
    """Precompile `text` (written at the virtual path `header`) with a unit's `args` into `pch`.

    None where sharing it could change a unit's result: an error in it, or a typedef with
    attributes of a record it leaves incomplete (its alignment would need the complete record).
    """
    ci = _cindex()
    try:
        tu = _parse(ci, header, _header_args(args), text, header)
    except ScanError:
        return None
    typedefs = []
    typedef_kind, record = ci.CursorKind.TYPEDEF_DECL.value, ci.TypeKind.RECORD
    for c in _children(ci, tu.cursor):
        if c._kind_id != typedef_kind:
            continue
        canon = c.underlying_typedef_type.get_canonical()
        if canon.kind != record:
            continue
        decl = canon.get_declaration()
        if decl.get_definition() is None:
            if any(k.kind.is_attribute() for k in _children(ci, c)):
                return None
            typedefs.append((decl.get_usr(), c.spelling))
    files = dict.fromkeys(inc.include.name for inc in tu.get_includes())
    try:
        tu.save(pch)
    except ci.TranslationUnitSaveError:
        return None
    return Preamble(pch, tuple((f, _digest(f)) for f in files), tuple(typedefs))


def predefined_words(args: tuple) -> frozenset:
    """Every word the compiler's own macros spell (names and bodies) under `args` (their `-D`s,
    `-U`s and include directories aside): `__seg_fs` is `__attribute__((address_space(257)))` on x86."""
    plain, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-D", "-U", "-I", "-isystem", "-idirafter"):
            skip = True
        elif not a.startswith(("-D", "-U", "-I", "-isystem")):
            plain.append(a)
    return _predefined_words(tuple(plain))


@lru_cache(maxsize=16)
def _predefined_words(args: tuple) -> frozenset:
    ci = _cindex()
    probe = "__offsets_predefined__.c"
    tu = _parse(ci, probe, list(args), "\n", probe, record=True)
    words = set()
    for c in _children(ci, tu.cursor):
        if c._kind_id == ci.CursorKind.MACRO_DEFINITION.value and c.location.file is None:
            words.update(t.spelling for t in c.get_tokens() if _WORD.fullmatch(t.spelling))
    return frozenset(words)


_WORD = re.compile(r"[A-Za-z_]\w*")


def _header_args(args: tuple) -> list:
    return ["c-header" if a == "c" and prev == "-x" else a for prev, a in zip(("",) + tuple(args), args)]


def skipped_lines(text: str, args: tuple, header: str) -> dict:
    """What the preprocessor skipped in a parse of `text` (as `build_preamble` parses it, with the
    record it keeps only on request, since a precompiled header would carry it into every unit):
    file -> (times entered, [(first line, last line)] of each range its conditionals skipped)."""
    ci = _cindex()
    tu = _parse(ci, header, _header_args(args), text, header, record=True)
    out: dict = {}
    for inc in tu.get_includes():
        entered, _ = out.get(inc.include.name, (0, []))
        out[inc.include.name] = (entered + 1, [])
    for f, ranges in _skipped_ranges(ci, tu).items():
        if f in out:
            out[f][1].extend(ranges)
    return out


class _RangeList(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.c_void_p)]


def _skipped_ranges(ci, tu) -> dict:
    """file -> [(first line, last line)] of every range the preprocessor skipped (an inactive
    conditional's lines, its directives included)."""
    lib = ci.conf.lib
    get = lib.clang_getAllSkippedRanges
    get.argtypes, get.restype = [ci.TranslationUnit], ctypes.POINTER(_RangeList)
    lib.clang_disposeSourceRangeList.argtypes = [ctypes.POINTER(_RangeList)]
    found = get(tu)
    out: dict = {}
    try:
        ranges = ctypes.cast(found.contents.ranges, ctypes.POINTER(ci.SourceRange))
        for i in range(found.contents.count):
            r = ranges[i]
            start, end = r.start, r.end
            if start.file is not None:
                out.setdefault(start.file.name, []).append((start.line, end.line))
    finally:
        lib.clang_disposeSourceRangeList(found)
    return out


def parse_unit(unit: Unit, preamble: Optional[Preamble] = None) -> UnitResult:
    """Parse one unit with libclang and return every complete struct and union it owns.

    With a `preamble` (a precompiled header of the text the unit's file starts with), only what
    follows it is parsed and walked; the result is the same. A preamble that read a file the unit
    owns is not used, and any error is reported as the parse without it reports it.
    """
    if preamble is not None and not any(f.startswith(unit.owned) for f, _ in preamble.files):
        try:
            return _parse_and_walk(unit, preamble)
        except ScanError:
            pass
    return _parse_and_walk(unit, None)


def _parse_and_walk(unit: Unit, preamble: Optional[Preamble]) -> UnitResult:
    ci = _cindex()
    own = macro_text.own_files(unit.path, unit.text, unit.args, unit.owned)
    app = constant_probe.appendix(own)
    if unit.text is not None:
        head = (unit.text + "\n" + flag_probes()).encode()
    else:
        try:
            head = Path(unit.path).read_bytes()
        except OSError as e:
            raise ScanError(f"{unit.name}: cannot read {unit.path}: {e.strerror}") from None
        head += b"" if head.endswith(b"\n") else b"\n"
    answers = constant_probe.Answers()
    args = list(unit.args) + (["-include-pch", preamble.path] if preamble else [])
    tu = _parse(ci, unit.path, args, head + app.text.encode(), unit.name, exclude_pch_decls=preamble is not None,
                answers=(head.count(b"\n") + 1, app, answers))

    w = _Walker(unit, ci)
    result = UnitResult(unit.name)
    if preamble:
        result.files.update(preamble.files)
    for inc in tu.get_includes():
        result.files.setdefault(inc.include.name, None)
    if unit.text is None:
        result.files.setdefault(unit.path, None)
    for path, digest in result.files.items():
        if digest is None:
            result.files[path] = _digest(path)

    records: dict = {}      # location -> record cursor, in source order
    typedefs: dict = {}     # location -> [typedef names]

    record_kinds = (w.K.STRUCT_DECL.value, w.K.UNION_DECL.value)
    typedef_kind, var_kind, enum_kind = w.K.TYPEDEF_DECL.value, w.K.VAR_DECL.value, w.K.ENUM_DECL.value
    enumerators: dict = {}

    def visit(cursor) -> None:
        for c in _children(ci, cursor):
            kind = c._kind_id       # the raw CXCursorKind: no CursorKind object per child
            if kind in record_kinds:
                if c.is_definition() and w.owns(c):
                    records.setdefault(_loc(c), c)
                    visit(c)    # nested records; one outside the owned files holds none of them
            elif kind == typedef_kind:
                name = c.spelling
                if name.startswith(constant_probe.TYPE_PREFIX):
                    clang_constants.take_type(ci, c, name, answers)
                    continue
                canon = c.underlying_typedef_type.get_canonical()
                if canon.kind == w.T.RECORD:
                    d = canon.get_declaration().get_definition()
                    if d is not None:
                        typedefs.setdefault(_loc(d), []).append((name, c.type))   # its alignment: if used
                if name == _POINTER_PROBE:
                    result.pointer_size = c.underlying_typedef_type.get_size()
            elif kind == var_kind:
                name = c.spelling
                if name.startswith(_FLAG_PREFIX):
                    result.flags[name[len(_FLAG_PREFIX):]] = True
                elif name.startswith(constant_probe.VALUE_PREFIX):
                    clang_constants.take_value(ci, c, name, answers)
            elif kind == enum_kind and c.is_definition() and w.owns(c):
                clang_constants.enumerators(ci, _children(ci, c), w.own_name, enumerators, result.left_out)

    visit(tu.cursor)
    clang_constants.finish(unit.name, app, answers, enumerators, result, w.own_name, w.owned)
    if preamble and preamble.typedefs:
        names_of: dict = {}
        for usr, name in preamble.typedefs:
            names_of.setdefault(usr, []).append(name)
        for loc, decl in records.items():
            earlier = names_of.get(decl.get_usr())
            if earlier:     # the preamble's typedefs come before the unit's own
                typedefs[loc] = [(n, decl.type) for n in earlier] + typedefs.get(loc, [])
    for flag in LAYOUT_FLAGS:
        result.flags.setdefault(flag, False)
    for loc, decl in records.items():
        named = typedefs.get(loc, [])
        tag = decl.spelling if w.is_tagged(decl) else None
        key = named[0][0] if named else tag
        if key is None:
            continue  # untagged and never typedef'd: only reachable as a member's type
        s = w.struct(decl, key, tag)
        # `__attribute__((aligned(8))) typedef struct S {...} T;` (3.9's Keccak sponge): the typedef
        # has an alignment of its own; a name is an alias only where it means the same layout
        align = named[0][1].get_align() if named else s.align
        if align != s.align:
            s = replace(s, align=align)
        aliases = [alias for alias, alias_type in named[1:] + ([(tag, decl.type)] if tag and tag != key else [])
                   if alias_type.get_align() == align]
        # how C names it where its body is: the tag (declared there) unless it means another alignment
        result.structs[key] = replace(s, c_type=f"{s.kind} {tag}" if tag and (tag == key or tag in aliases) else key)
        for alias in aliases:
            result.names.setdefault(alias, key)
    return result


def _children(ci, cursor) -> list:
    """The children of `cursor`, as `Cursor.get_children()` gives them, without its per-child
    comparison against the null cursor (two more calls into libclang for each child)."""
    out = []
    tu = cursor._tu

    def visitor(child, parent, data):
        child._tu = tu          # keeps the translation unit alive as long as the cursor
        out.append(child)
        return 1                # CXChildVisit_Continue

    ci.conf.lib.clang_visitChildren(cursor, ci.callbacks["cursor_visit"](visitor), None)
    return out


def _loc(cursor) -> tuple:
    loc = cursor.location
    return (loc.file.name if loc.file else "", loc.line, loc.column)


def parse_only(unit: Unit) -> int:
    """Parse `unit` exactly as `parse_unit` does, walk nothing: the floor the benchmark measures against.

    Returns the number of diagnostics, so the parse cannot be optimised away.
    """
    ci = _cindex()
    options = ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES | ci.TranslationUnit.PARSE_INCOMPLETE
    unsaved = [(unit.path, unit.text + "\n" + flag_probes())] if unit.text is not None else None
    tu = ci.Index.create().parse(unit.path, args=list(unit.args), unsaved_files=unsaved, options=options)
    return len(tu.diagnostics)
