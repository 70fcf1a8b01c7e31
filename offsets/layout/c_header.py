"""Per-build C headers: every offset of one table as a compile-time constant, with the
`_Static_assert`s that let the compiler prove them against that build's own headers.

`generated/pyoffsets_<table name>.h` holds, for a table:

    #define PYOFFSETS_TABLE "cpython-3.13.0-x86_64-linux-gnu"
    #define PYOFFSETS_HEXVERSION 0x030d00f0
    #define PYOFFSETS_SIZEOF_PyListObject 40
    #define PYOFFSETS_PyListObject_ob_item 24
    #define PYOFFSETS_PyTypeObject_ob_base__ob_base__ob_type 8
    #define PYOFFSETS_BITOFFSET_PyASCIIObject_state__kind 2      (bitfields: offset is the storage unit's)
    #define PYOFFSETS_BITWIDTH_PyASCIIObject_state__kind 3

    #define PYOFFSETS_CONST_FRAME_OWNED_BY_CSTACK 3              (constants, typed as C types them)
    #define PYOFFSETS_CONST_Py_TPFLAGS_HEAPTYPE 512UL

Naming: `PYOFFSETS_` + struct + `_` + field path with each `.` written `__`; struct sizes are
`PYOFFSETS_SIZEOF_<struct>`, bitfields add `PYOFFSETS_BITOFFSET_`/`PYOFFSETS_BITWIDTH_` names. A
struct private to a source file is keyed `name@path` (`block@Modules/_collectionsmodule.c`): its
`@` is written `_AT_` and every other character that cannot be in a C identifier `_`
(`PYOFFSETS_block_AT_Modules__collectionsmodule_c_leftlink`). Since `_` is both a separator and a
character of names, two different names could spell the same macro (`a_b.c` and `a.b_c`); the
emitter checks that every macro of a header is unique and refuses to write one otherwise
(TableError naming both), so a collision can never reach a header.

The header refuses (one #error) another CPU or pointer size, and after Python.h a CPython of another
version or config; nothing is asserted after it. With `PYOFFSETS_CHECK_LAYOUT` defined it asserts,
with `offsetof` and `sizeof`, every field of every struct defined in the public headers (Include/,
Include/cpython/), naming each as the scanner recorded it (`Struct.c_type`); with
`PYOFFSETS_CHECK_INTERNAL_LAYOUT` also those of each internal header the unit included (its
include guard, `Table.guards`, is defined). Every constant of Include/ is asserted where its
definition is visible: a macro where it is defined (`#ifdef`), an enumerator where its header's
guard is (in C); one whose value differs without Py_BUILD_CORE (`Table.core_only`) only with it.
Structs of .c files or found only in DWARF, bitfields and a .c file's constants cannot be
asserted; the last line lists what is not. Every struct and constant is also defined under the
other names of its group in data/aliases.yaml (`PYOFFSETS_listiterobject_it_index` on 3.12+).

The headers are written by `python -m offsets.tools.regenerate` (`make tables`; `--check` checks them).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import TableError
from . import targets
from .model import Table
from .names import aliases

_BARE = re.compile(r"\b(?:const|volatile|restrict)\b|[*\[\]0-9]")


_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def identifier(name: str) -> str:
    """A struct key or field path as part of a C identifier (the scheme of docs/c-api.md)."""
    return _NOT_IDENT.sub("_", name.replace("@", "_AT_").replace(".", "__"))


def macro(struct: str, path: str = "", prefix: str = "") -> str:
    return f"PYOFFSETS_{prefix}{identifier(struct)}" + (f"_{identifier(path)}" if path else "")


def const_macro(name: str) -> str:
    return f"PYOFFSETS_CONST_{identifier(name)}"


#: The suffix that gives an integer literal each type; the narrower types are casts.
_SUFFIXES = {"int": "", "unsigned int": "U", "long": "L", "unsigned long": "UL", "long long": "LL",
             "unsigned long long": "ULL"}


def c_literal(c) -> str:
    """A constant's value as a C expression of its own type (`512UL`, `(-5LL)`, `((char)97)`)."""
    suffix = _SUFFIXES.get(c.type)
    if suffix is None:      # C++ spells _Bool bool (the header's PYOFFSETS_BOOL)
        return f"(({'PYOFFSETS_BOOL' if c.type == '_Bool' else c.type}){c.value})"
    if c.value >= 0:
        return f"{c.value}{suffix}"
    if c.value == -(1 << (8 * c.size - 1)):    # INT_MIN and its kind: no literal spells it
        return f"(-{-c.value - 1}{suffix} - 1)"
    return f"(-{-c.value}{suffix})"


def header_name(table: Table) -> str:
    return f"pyoffsets_{table.build.table_name}.h"


def c_types(table: Table) -> dict:
    """struct key -> how C names its type (`PyListObject`, `struct _gil_runtime_state`): what the
    scanner recorded (`Struct.c_type`); for a table made before it did, the structs whose spelling
    the table shows: a field declared with that type, or a typedef alias.
    A tag (`struct wrapperbase`) is preferred to a typedef, since the tag is declared where the body
    is, while a typedef may live elsewhere (3.12's `pytype_slotdef`, declared in an internal header)."""
    recorded = {k: s.c_type for k, s in table.structs.items() if s.c_type is not None}
    if len(recorded) == len(table.structs):     # the scanner recorded each one (model.Struct.c_type)
        return recorded
    seen = set()
    for s in table.structs.values():
        for f in s.fields:
            seen.add(" ".join(_BARE.sub(" ", f.type).split()))
    typedef_keys = set(table.names.values())   # clang_scan: a struct with aliases is keyed by a typedef
    aliases: dict = {}
    for alias, key in table.names.items():
        aliases.setdefault(key, []).append(alias)
    out = {}
    for key, s in table.structs.items():
        tags = [f"{s.kind} {n}" for n in [key] + sorted(aliases.get(key, ())) if f"{s.kind} {n}" in seen]
        if tags:
            out[key] = tags[0]
        elif key in seen or key in typedef_keys:
            out[key] = key
    return dict(out, **recorded)


#: Public headers that need a third-party header first (curses.h, expat.h): never asserted.
_THIRD_PARTY = ("Include/py_curses.h", "Include/pyexpat.h")
#: Public headers that define a static variable (the capsule pattern): the check block uses it, or every
#: file that defines PYOFFSETS_CHECK_LAYOUT would get -Wunused-variable.
_STATICS = {"datetime.h": "PyDateTimeAPI"}
#: Public headers whose structs exist only with Py_BUILD_CORE (3.7's pyatomic.h): asserted with the internal ones.
_CORE_ONLY = ("Include/pyatomic.h",)


def _public_includes(table: Table) -> list:
    """The public headers, besides Python.h, that define the structs PYOFFSETS_CHECK_LAYOUT asserts
    (`Include/cpython/X.h` comes through `X.h`, CPython's rule), included by the check block itself so
    that `Python.h` is the only include a user needs: structmember.h (PyMemberDef before 3.12),
    frameobject.h (PyFrameObject up to 3.10), datetime.h... Each is included only if it exists
    (`__has_include`), as `cpython/pytime.h` of 3.12 has no `pytime.h`."""
    heads = set()
    for s in table.structs.values():
        if _group(s) == "public":
            heads.add(_include_name(s.defined_in.split(":", 1)[0]))
    return sorted(heads)


def _include_name(where: str) -> str:
    """How a user includes the public header `where` (Include/cpython/X.h comes through X.h)."""
    return where.replace("Include/cpython/", "Include/", 1)[len("Include/"):]


def _group(s) -> str:
    """public / internal: asserted (under PYOFFSETS_CHECK_LAYOUT / _INTERNAL_LAYOUT); source: not, as
    no header shows the struct: a .c file's, or one found in DWARF only (a header the Python.h
    umbrella does not reach, such as mimalloc's prim.h)."""
    if s.origin != "clang":
        return "source"
    return _file_group(s.defined_in.split(":", 1)[0])


def _file_group(where: str) -> str:
    if where in _THIRD_PARTY:
        return "source"
    if where.startswith("Include/internal/") or where in _CORE_ONLY:
        return "internal"
    if where.startswith("Include/"):
        return "public"
    return "source"


def emit(table: Table, source: str, source_sha256: str = None) -> str:
    """The header text for `table` (`source`: the repo-relative YAML it comes from; `source_sha256`:
    that file's digest, written in the banner so that staleness is cheap to see)."""
    b = table.build
    guard = re.sub(r"[^A-Za-z0-9]", "_", header_name(table)).upper()
    lines = [f"/* {header_name(table)}: the layouts of CPython {b.version} ({b.config_name}, {b.target.triple}).",
             f" * Generated by `python -m offsets.tools.regenerate` (make tables) from {source}; do not edit.",
             f" * Source {source_sha256 or 'digest not recorded'}.",
             " * Naming: docs/c-api.md. Run-time lookups for whatever interpreter is running: pyoffsets.h. */",
             f"#ifndef {guard}", f"#define {guard}", "",
             f'#define PYOFFSETS_TABLE "{b.table_name}"', f"#define PYOFFSETS_HEXVERSION {b.hexversion:#010x}", "",
             "#ifndef PYOFFSETS_BOOL", "#  ifdef __cplusplus", "#    define PYOFFSETS_BOOL bool", "#  else",
             "#    define PYOFFSETS_BOOL _Bool", "#  endif", "#endif", "",
             ] + _wrong_build(table) + [""]
    names: dict = {}

    def define(name: str, value: int, what: str) -> None:
        if name in names:
            raise TableError(f"{header_name(table)}: {what} and {names[name]} would both be {name}; "
                             f"rename one in the table or extend the naming scheme in c_header.py")
        names[name] = what
        lines.append(f"#define {name} {value}")

    for key in sorted(table.structs):
        s = table.structs[key]
        define(macro(key, prefix="SIZEOF_"), s.size, f"sizeof({key})")
        for f in s.fields:
            define(macro(key, f.path), f.offset, f"{key}.{f.path}")
            if f.is_bitfield:
                define(macro(key, f.path, "BITOFFSET_"), f.bit_offset, f"bit offset of {key}.{f.path}")
                define(macro(key, f.path, "BITWIDTH_"), f.bit_width, f"bit width of {key}.{f.path}")
    for key in sorted(table.constants):
        c = table.constants[key]
        define(const_macro(key), c_literal(c), f"the constant {key}")
    _alias_macros(table, define, lines)
    lines += [""] + _asserts(table)
    lines += ["", f"#endif /* {guard} */"]
    return "\n".join(lines) + "\n"


def _wrong_build(table: Table) -> list:
    """The guards: another CPU or pointer size, and after Python.h another version or config, stop
    the compile at one `#error` (the first that applies), and define PYOFFSETS_WRONG_BUILD so that
    no assertion adds errors of its own after it."""
    b = table.build
    name = header_name(table)
    abi = targets.abi(b.target.triple)
    arch = abi and abi.cpu_macro
    target = f"defined({arch}) && " if arch else ""
    if targets.system(b.target.triple) == "windows":     # MSVC defines neither __x86_64__ nor __SIZEOF_POINTER__
        msvc = {"x86_64": "_M_X64", "aarch64": "_M_ARM64"}.get(b.target.arch)
        cpu = " || ".join(f"defined({m})" for m in (msvc, arch) if m) or "1"
        wide = "defined(_WIN64)" if b.target.pointer_size == 8 else "!defined(_WIN64)"
        machine = f"!(defined(_WIN32) && {wide} && ({cpu}))"
    elif targets.system(b.target.triple) == "macos":       # Apple's clang defines __aarch64__ as Linux's does
        machine = f"!(defined(__APPLE__) && {target}defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == {b.target.pointer_size})"
    else:                                                  # mingw-w64 defines both, and _WIN32; Apple's clang both, and __APPLE__
        machine = (f"!(!defined(_WIN32) && !defined(__APPLE__) && {target}defined(__SIZEOF_POINTER__) && "
                   f"__SIZEOF_POINTER__ == {b.target.pointer_size})")
    checks = [(machine,
               f"{name} is for {b.target.triple} ({b.target.pointer_size}-byte pointers), not the target being "
               "compiled for"),
              (f"defined(PY_VERSION_HEX) && PY_VERSION_HEX != {b.hexversion:#010x}",
               f"{name} is for CPython {b.version}, not the one being compiled against")]
    for flag in ("Py_DEBUG", "Py_GIL_DISABLED", "Py_TRACE_REFS"):
        want = bool(b.config.get(flag))
        checks.append((f"defined(PY_VERSION_HEX) && {'!' if want else ''}defined({flag})",
                       f"{name} is for a build {'with' if want else 'without'} {flag}"))
    out = []
    for i, (cond, why) in enumerate(checks):
        out += [f"#{'if' if i == 0 else 'elif'} {cond}", f'#  error "{why}"', "#  define PYOFFSETS_WRONG_BUILD 1"]
    return out + ["#endif"]


def _alias_macros(table: Table, define, lines: list) -> list:
    """The macros of each struct and constant under the other names of its group in
    `data/aliases.yaml` too (`PYOFFSETS_listiterobject_it_index` where the table's key is 3.12's
    `_PyListIterObject`, and the other way round), so that one source compiles against every
    version's header; a name the table gives something else keeps its own meaning. Each group's
    macros follow a comment line in `lines`; `define` appends the macros."""
    groups = aliases()
    for key in sorted(table.structs):
        others = [a for a in groups.get(key, ()) if a not in table.structs and table.names.get(a, key) == key]
        if "@" in key or not others:
            continue
        s = table.structs[key]
        for a in others:
            lines.append(f"/* {a}: {key} (offsets/data/aliases.yaml) */")
            define(macro(a, prefix="SIZEOF_"), s.size, f"sizeof({a}), {key}'s alias")
            for f in s.fields:
                define(macro(a, f.path), f.offset, f"{a}.{f.path}, {key}'s alias")
                if f.is_bitfield:
                    define(macro(a, f.path, "BITOFFSET_"), f.bit_offset, f"bit offset of {a}.{f.path}")
                    define(macro(a, f.path, "BITWIDTH_"), f.bit_width, f"bit width of {a}.{f.path}")
    for key in sorted(table.constants):
        for a in groups.get(key, ()):
            if a not in table.constants and "@" not in key:
                define(const_macro(a), c_literal(table.constants[key]), f"the constant {a}, {key}'s alias")


_ASSERT_MACRO = ["#include <stddef.h>", "#ifdef __cplusplus",
                 "#  define PYOFFSETS_STATIC_ASSERT(cond, what) static_assert(cond, what)", "#else",
                 "#  define PYOFFSETS_STATIC_ASSERT(cond, what) _Static_assert(cond, what)", "#endif"]
_NO_DEPRECATED = ["#if defined(__GNUC__)", "#pragma GCC diagnostic push",
                  '#pragma GCC diagnostic ignored "-Wdeprecated-declarations"', "#endif"]
_POP = ["#if defined(__GNUC__)", "#pragma GCC diagnostic pop", "#endif"]


def _asserts(table: Table) -> list:
    """The proof: `sizeof`/`offsetof` of every struct the header defines and every constant, each
    where its definition is visible, against the very macro a JIT compiles (`PYOFFSETS_...`). PYOFFSETS_CHECK_LAYOUT: the public headers' structs (the block
    includes the headers that define them itself); PYOFFSETS_CHECK_INTERNAL_LAYOUT adds the
    internal headers' structs, each header's under its include guard (`table.guards`), so a unit
    that includes only the internal headers it uses compiles and still has their structs checked.
    Nothing after a wrong build's #error (PYOFFSETS_WRONG_BUILD). The last line says what is not
    asserted, and why."""
    spell = c_types(table)
    any_switch = "(defined(PYOFFSETS_CHECK_LAYOUT) || defined(PYOFFSETS_CHECK_INTERNAL_LAYOUT))"
    out = [f"#if {any_switch} && !defined(PYOFFSETS_WRONG_BUILD)", *_ASSERT_MACRO, "#endif"]
    left = {"source": [], "spelling": [], "unguarded": [], "bitfields": 0, "foreign": 0, "macro_named": 0,
            "macros": {k for k, c in table.constants.items() if c.kind == "macro"}}
    for group, switch in (("public", "PYOFFSETS_CHECK_LAYOUT"), ("internal", "PYOFFSETS_CHECK_INTERNAL_LAYOUT")):
        out += [f"#if defined({switch}) && !defined(PYOFFSETS_WRONG_BUILD)"]
        if group == "public":
            for h in _public_includes(table):
                out += ["#if defined(__has_include)", f"#  if __has_include(<{h}>)", f"#    include <{h}>"]
                if h in _STATICS:
                    out.append(f'PYOFFSETS_STATIC_ASSERT(sizeof({_STATICS[h]}) == sizeof(void *), "{h} included");')
                out += ["#  endif", "#endif"]
        out += _NO_DEPRECATED
        by_file: dict = {}
        for key in sorted(table.structs):
            s = table.structs[key]
            if _group(s) == group:
                by_file.setdefault(s.defined_in.split(":", 1)[0], []).append(key)
        for where in sorted(by_file):
            guard = (table.guards or {}).get(where)
            if group == "internal" and table.guards is not None and guard is None:
                left["unguarded"] += by_file[where]
                continue
            body = []
            for key in by_file[where]:
                body += _struct_asserts(table, key, spell.get(key), left)
            if body and group == "internal" and guard is not None:     # internal headers need the core
                body = [f"#if defined({guard}) && defined(Py_BUILD_CORE)   /* {where} */", *body, "#endif"]
            out += body
        out += _POP + [f"#endif /* {switch} */"]
    constants, skipped = _constant_asserts(table)
    out += constants
    left["source"] = sorted(k for k, s in table.structs.items() if _group(s) == "source")
    out.append(_not_asserted(table, left, skipped))
    return out


def _struct_asserts(table: Table, key: str, t, left: dict) -> list:
    s = table.structs[key]
    if t is None:
        left["spelling"].append(key)
        return []
    out = [f'PYOFFSETS_STATIC_ASSERT(sizeof({t}) == {macro(key, prefix="SIZEOF_")}, "sizeof({t})");']
    types = {f.path: f.type for f in s.fields}
    for f in s.fields:
        if f.is_bitfield:
            left["bitfields"] += 1
        elif not _designator_ok(table, types, f.path):
            left["foreign"] += 1
        elif not left["macros"].isdisjoint(f.path.split(".")):
            left["macro_named"] += 1            # 3.9's graminit.h defines `test`, a member of struct _expr
        else:
            out.append(f'PYOFFSETS_STATIC_ASSERT(offsetof({t}, {f.path}) == {macro(key, f.path)}, "{key}.{f.path}");')
    return out


def _not_asserted(table: Table, left: dict, skipped: dict) -> str:
    """The header's last line: what stays unasserted, and why (docs/c-api.md says the same)."""
    parts = [f"{left['bitfields']} bitfields (offsetof cannot name them)",
             f"{left['foreign']} fields inside arrays or inside members of types the table does not hold (a C "
             "library's struct, whose member names may be macros)",
             f"{left['macro_named']} fields with a member named as a macro of the headers is (3.9's graminit.h "
             "defines `test`)",
             "structs of .c files, of headers that need a third-party header (py_curses.h, pyexpat.h) or found "
             "in DWARF only: " + (", ".join(left["source"]) or "none"),
             f"{skipped['source']} constants of .c files",
             f"{skipped['cxx']} enumerators in C++ (one declared inside a struct is scoped to it there)"]
    if left["spelling"]:
        parts.append("structs whose C spelling (typedef or tag) the table does not record: " + ", ".join(left["spelling"]))
    if left["unguarded"]:
        parts.append("structs of internal headers without an include guard: " + ", ".join(left["unguarded"]))
    if skipped["unguarded"]:
        parts.append(f"{skipped['unguarded']} enumerators of headers " + ("without an include guard" if table.guards
                     is not None else "the check does not include"))
    where = ("internal headers' structs and constants only where the unit included that header"
             if table.guards is not None else "internal headers' structs only with all of them included")
    core = (f"{len(table.core_only)} constants only with Py_BUILD_CORE (their value differs without it"
            + (f": {', '.join(table.core_only)})" if 0 < len(table.core_only) <= 8 else ")")
            if table.core_only is not None else "constants only with Py_BUILD_CORE (their context is not recorded)")
    return f"/* Not asserted: {'; '.join(parts)}. Asserted where visible: {where}; {core}. */"


def _constant_asserts(table: Table) -> tuple:
    """Each constant of Include/ against the build's own definition, where it is visible: a macro where
    it is defined (`#ifdef`), an enumerator where its header's include guard is (in C: in C++ an
    enumerator declared inside a struct, as PyStatus's, is scoped to it). Both in the context its
    value was taken in: the core's, so a constant whose value differs without Py_BUILD_CORE
    (`table.core_only`: 3.15's `_PyABIInfo_DEFAULT_FLAG_INTERNAL` is 8 with it, 0 without) only with
    it. A .c file's constants are not asserted. Returns the lines and the counts left out."""
    core = None if table.core_only is None else set(table.core_only)
    included = set(_public_includes(table))
    macros, enums = [], []
    skipped = {"source": 0, "cxx": 0, "unguarded": 0}
    for key in sorted(table.constants):
        c = table.constants[key]
        group = _file_group(c.defined_in)
        if "@" in key or group == "source":
            skipped["source"] += 1
            continue
        check = f'PYOFFSETS_STATIC_ASSERT(({key}) == {const_macro(key)}, "{key}");'
        needs_core = core is None or key in core
        if c.kind == "macro":
            macros += [f"#if defined({key}) && defined(Py_BUILD_CORE)" if needs_core else f"#ifdef {key}", check,
                       "#endif"]
            continue
        guard = (table.guards or {}).get(c.defined_in)
        if table.guards is None:      # a table that records no guards: the headers the check block includes
            guard = "PYOFFSETS_CHECK_LAYOUT" if group == "public" and _include_name(c.defined_in) in included else None
        if guard is None:
            skipped["unguarded"] += 1
            continue
        skipped["cxx"] += 1
        cond = f"defined({guard})" + (" && defined(Py_BUILD_CORE)" if needs_core or group == "internal" else "")
        enums += [f"#if {cond}", check, "#endif"]
    return ([f"#if {'(defined(PYOFFSETS_CHECK_LAYOUT) || defined(PYOFFSETS_CHECK_INTERNAL_LAYOUT))'} "
             "&& !defined(PYOFFSETS_WRONG_BUILD)", *macros, "#ifndef __cplusplus", *enums, "#endif",
             "#endif /* constants */"], skipped)


def _designator_ok(table: Table, types: dict, path: str) -> bool:
    """Whether `offsetof(S, path)` is valid C: every member on the way is a struct or union that is
    anonymous or in the table (not an array, not a C library type such as `struct sigaction`,
    where glibc makes `sa_handler` a macro)."""
    parts = path.split(".")
    for i in range(1, len(parts)):
        t = types.get(".".join(parts[:i]), "")
        if "[" in t or "*" in t:
            return False
        name = " ".join(w for w in t.split() if w not in ("const", "volatile"))
        if name in ("struct <anonymous>", "union <anonymous>"):
            continue
        bare = name.split(" ", 1)[1] if name.startswith(("struct ", "union ")) else name
        if table.names.get(bare, bare) not in table.structs:
            return False
    return True


def expected_files(root: Path) -> dict:
    """Every header the tables of `root`/generated/ call for: file name -> text."""
    from . import compact, table_yaml

    files = {}
    for yml in sorted((root / "generated").glob("cpython-*.yaml")):
        table = table_yaml.load(yml)
        files[header_name(table)] = emit(table, f"generated/{yml.name}", compact.sha256_of(yml))
    return files
