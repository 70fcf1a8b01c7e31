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

The header refuses (#error) another CPU or pointer size, and after Python.h a CPython of another
version or config. With
`PYOFFSETS_CHECK_LAYOUT` defined it asserts, with `offsetof` and `sizeof`, every field of every
struct defined in the public headers (Include/, Include/cpython/); with
`PYOFFSETS_CHECK_INTERNAL_LAYOUT` also those of Include/internal/ (include them first, with
Py_BUILD_CORE). Structs of .c files or found only in DWARF, and bitfields, cannot be asserted
and are listed as such. With either switch and Py_BUILD_CORE (the context the table's constants were
taken in), every constant of Include/ is asserted against the build's own definition where it is
visible: a macro where it is defined (`#ifdef`), an enumerator of a header the PYOFFSETS_CHECK_LAYOUT
block includes in C; a `.c` file's constants and other enumerators are not asserted.

The headers are written by `python -m offsets.tools.regenerate` (`make tables`; `--check` checks them).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import TableError
from . import targets
from .model import Table

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
    """struct key -> how C names its type (`PyListObject`, `struct _gil_runtime_state`), for the
    structs whose spelling the table proves: a field declared with that type, or a typedef alias.
    A tag (`struct wrapperbase`) is preferred to a typedef, since the tag is declared where the body
    is, while a typedef may live elsewhere (3.12's `pytype_slotdef`, declared in an internal header)."""
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
    return out


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
             "#ifdef PY_VERSION_HEX",
             f"#  if PY_VERSION_HEX != {b.hexversion:#010x}",
             f'#    error "{header_name(table)} is for CPython {b.version}, not the one being compiled against"',
             "#  endif"]
    for flag in ("Py_DEBUG", "Py_GIL_DISABLED", "Py_TRACE_REFS"):
        want = bool(b.config.get(flag))
        lines += [f"#  if {'!' if want else ''}defined({flag})",
                  f'#    error "{header_name(table)} is for a build {"with" if want else "without"} {flag}"',
                  "#  endif"]
    lines += ["#endif"]
    abi = targets.abi(b.target.triple)
    arch = abi and abi.cpu_macro
    target = f"defined({arch}) && " if arch else ""
    lines += [f"#if !({target}defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == {b.target.pointer_size})",
              f'#  error "{header_name(table)} is for {b.target.triple} ({b.target.pointer_size}-byte pointers), '
              f'not the target being compiled for"',
              "#endif", ""]
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
    lines += [""] + _asserts(table)
    lines += ["", f"#endif /* {guard} */"]
    return "\n".join(lines) + "\n"


def _asserts(table: Table) -> list:
    spell = c_types(table)
    out = ["#if defined(PYOFFSETS_CHECK_LAYOUT) || defined(PYOFFSETS_CHECK_INTERNAL_LAYOUT)",
           "#include <stddef.h>", "#ifdef __cplusplus",
           "#  define PYOFFSETS_STATIC_ASSERT(cond, what) static_assert(cond, what)", "#else",
           "#  define PYOFFSETS_STATIC_ASSERT(cond, what) _Static_assert(cond, what)", "#endif", "#endif"]
    unprovable = []
    foreign = 0
    for group, switch in (("public", "PYOFFSETS_CHECK_LAYOUT"), ("internal", "PYOFFSETS_CHECK_INTERNAL_LAYOUT")):
        out += [f"#ifdef {switch}"]
        if group == "public":
            for h in _public_includes(table):
                out += ["#if defined(__has_include)", f"#  if __has_include(<{h}>)", f"#    include <{h}>"]
                if h in _STATICS:
                    out.append(f'PYOFFSETS_STATIC_ASSERT(sizeof({_STATICS[h]}) == sizeof(void *), "{h} included");')
                out += ["#  endif", "#endif"]
        out += ["#if defined(__GNUC__)", "#pragma GCC diagnostic push",
                '#pragma GCC diagnostic ignored "-Wdeprecated-declarations"', "#endif"]
        for key in sorted(table.structs):
            s = table.structs[key]
            if _group(s) != group:
                continue
            t = spell.get(key)
            if t is None:
                unprovable.append(f"{key} (its C spelling, typedef or tag, is not known from the table)")
                continue
            out.append(f'PYOFFSETS_STATIC_ASSERT(sizeof({t}) == {s.size}, "sizeof({t})");')
            types = {f.path: f.type for f in s.fields}
            for f in s.fields:
                if f.is_bitfield:
                    continue
                if not _designator_ok(table, types, f.path):
                    foreign += 1
                    continue
                out.append(f'PYOFFSETS_STATIC_ASSERT(offsetof({t}, {f.path}) == {f.offset}, "{key}.{f.path}");')
        out += ["#if defined(__GNUC__)", "#pragma GCC diagnostic pop", "#endif", f"#endif /* {switch} */"]
    out += _constant_asserts(table)
    source = sorted(k for k, s in table.structs.items() if _group(s) == "source")
    out.append("/* Not asserted: bitfields (offsetof cannot name them); structs of .c files, of headers that need a "
               "third-party header (py_curses.h, pyexpat.h) or found in DWARF only: "
               + (", ".join(source) or "none") + "; structs of unknown spelling: "
               + (", ".join(unprovable) or "none") + f"; {foreign} fields inside arrays or inside members of "
               "types the table does not hold (a C library's struct, whose member names may be macros). */")
    return out


def _constant_asserts(table: Table) -> list:
    """Each constant of Include/ against the build's own definition, in the context its value was taken
    in (the build's core context: with Py_BUILD_CORE, a macro such as 3.15's
    `_PyABIInfo_DEFAULT_FLAG_INTERNAL` is 8, without it 0): a macro where it is defined (`#ifdef`); an
    enumerator of a public header that the PYOFFSETS_CHECK_LAYOUT block includes, in C only (in C++
    an enumerator declared inside a struct, as PyStatus's, is scoped to it). Other enumerators (of a
    header that block does not include, which may not be included twice, as 3.7's Python-ast.h) and
    a .c file's constants are not asserted."""
    included = set(_public_includes(table))
    macros, enums, skipped = [], [], 0
    for key in sorted(table.constants):
        c = table.constants[key]
        group = _file_group(c.defined_in)
        if "@" in key or group == "source":
            continue
        check = f'PYOFFSETS_STATIC_ASSERT(({key}) == {const_macro(key)}, "{key}");'
        if c.kind == "macro":
            macros += [f"#ifdef {key}", check, "#endif"]
        elif group == "public" and _include_name(c.defined_in) in included:
            enums.append(check)
        else:
            skipped += 1
    return (["#if (defined(PYOFFSETS_CHECK_LAYOUT) || defined(PYOFFSETS_CHECK_INTERNAL_LAYOUT)) "
             "&& defined(Py_BUILD_CORE)"] + macros
            + ["#if defined(PYOFFSETS_CHECK_LAYOUT) && !defined(__cplusplus)"] + enums + ["#endif",
               f"#endif /* constants: {skipped} enumerators of headers the check does not include not asserted */"])


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
