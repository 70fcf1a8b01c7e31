"""The C form of an export: a header with one `pyoffsets_layout` per table (designated initializers,
a section struct per `_Py_DebugOffsets` section), lookups by build-id and by version (items.py: one
that several layouts answer differently answers NULL), and one
`#define` per present item for compile-time use. C99; `gcc -std=c99 -Wall -Wextra -Werror` clean."""
from __future__ import annotations

from .items import ABSENT, ident, sections


def _item(v) -> str:
    o, s = v if v is not None else (ABSENT, ABSENT)
    return f"{{{o}u, {s}u}}" if v is not None else "{PYOFFSETS_ABSENT, PYOFFSETS_ABSENT}"


def render(items: list, layouts: list, constants: tuple, note: str) -> str:
    guard = "PYOFFSETS_EXPORT_H"
    out = [f"/* {note}; do not edit. */", f"#ifndef {guard}", f"#define {guard}", "",
           "#include <stddef.h>", "#include <stdint.h>", "#include <string.h>", "",
           "/* an item a table lacks: its offset and size are both this */",
           "#define PYOFFSETS_ABSENT UINT64_MAX", "",
           "/* a field: its byte offset and size; a struct's `size` item: {0, sizeof} */",
           "typedef struct { uint64_t offset; uint64_t size; } pyoffsets_item;",
           "typedef struct { int defined; int64_t value; } pyoffsets_constant;", "",
           "typedef struct {", "    const char *table;", "    const char *version;", "    uint32_t hexversion;",
           "    const char *triple;             /* x86_64-linux-gnu, x86_64-pc-windows-msvc, ... */",
           "    const char *config;             /* release, debug, freethreaded, freethreaded-debug */",
           "    int by_version;                 /* what pyoffsets_by_version() answers for its three */",
           "    int by_hexversion;              /* what pyoffsets_by_hexversion() answers for its version */",
           "    const char *const *build_ids;   /* NULL-terminated */"]
    for section, names in sections(items):
        out.append("    struct {")
        out += [f"        pyoffsets_item {n};" for n in names]
        out.append(f"    }} {section};")
    if constants:
        out.append("    struct {")
        out += [f"        pyoffsets_constant {c};" for c in constants]
        out.append("    } constants;")
    out += ["} pyoffsets_layout;", ""]
    for lay in layouts:
        out.append(f"static const char *const pyoffsets_build_ids_{ident(lay.table)}[] = {{"
                   + "".join(f'"{b}", ' for b in lay.build_ids) + "NULL};")
    out += ["", "static const pyoffsets_layout pyoffsets_layouts[] = {"]
    for lay in layouts:
        out += ["    {", f'        .table = "{lay.table}",', f'        .version = "{lay.version}",',
                f"        .hexversion = {lay.hexversion:#010x}u,", f'        .triple = "{lay.triple}",',
                f'        .config = "{lay.config}",', f"        .by_version = {int(lay.by_version)},",
                f"        .by_hexversion = {int(lay.by_hexversion)},",
                f"        .build_ids = pyoffsets_build_ids_{ident(lay.table)},"]
        for section, names in sections(items):
            out.append(f"        .{section} = {{" + ", ".join(f".{n} = {_item(lay.values[(section, n)])}"
                                                        for n in names) + "},")
        if constants:
            out.append("        .constants = {" + ", ".join(
                f".{c} = {{1, {lay.constants[c]}}}" if c in lay.constants else f".{c} = {{0, 0}}"
                for c in constants) + "},")
        out.append("    },")
    out += ["};", f"#define PYOFFSETS_N_LAYOUTS {len(layouts)}", "",
            "/* the layout of the binary with this GNU build-id (hex), or NULL */",
            "static inline const pyoffsets_layout *pyoffsets_by_build_id(const char *build_id) {",
            "    for (size_t i = 0; i < PYOFFSETS_N_LAYOUTS; i++)",
            "        for (const char *const *b = pyoffsets_layouts[i].build_ids; *b; b++)",
            "            if (strcmp(*b, build_id) == 0)",
            "                return &pyoffsets_layouts[i];",
            "    return NULL;", "}", "",
            "/* the layout of this PY_VERSION_HEX, triple (x86_64-linux-gnu) and config (release, debug,",
            "   freethreaded, freethreaded-debug), or NULL: also where the layouts exported for the three",
            "   differ (a vendor's build beside upstream's). A build no table records may differ too:",
            "   prefer the build-id */",
            "static inline const pyoffsets_layout *pyoffsets_by_version(uint32_t hexversion, const char *triple,",
            "                                                          const char *config) {",
            "    for (size_t i = 0; i < PYOFFSETS_N_LAYOUTS; i++)",
            "        if (pyoffsets_layouts[i].by_version && pyoffsets_layouts[i].hexversion == hexversion",
            "            && strcmp(pyoffsets_layouts[i].triple, triple) == 0",
            "            && strcmp(pyoffsets_layouts[i].config, config) == 0)",
            "            return &pyoffsets_layouts[i];",
            "    return NULL;", "}", "",
            "/* the layout of this PY_VERSION_HEX where every layout exported for it is the same, else NULL",
            "   (its builds of other CPUs or configs differ: pyoffsets_by_version, or the build-id) */",
            "static inline const pyoffsets_layout *pyoffsets_by_hexversion(uint32_t hexversion) {",
            "    for (size_t i = 0; i < PYOFFSETS_N_LAYOUTS; i++)",
            "        if (pyoffsets_layouts[i].by_hexversion && pyoffsets_layouts[i].hexversion == hexversion)",
            "            return &pyoffsets_layouts[i];",
            "    return NULL;", "}", ""]
    for lay in layouts:
        prefix = "PYOFFSETS_" + ident(lay.table).upper()
        out.append(f"/* {lay.table} */")
        for section, names in sections(items):
            for n in names:
                v = lay.values[(section, n)]
                if v is not None:
                    key = f"{prefix}_{section.upper()}_{n.upper()}"
                    out += [f"#define {key}_OFFSET {v[0]}", f"#define {key}_SIZE {v[1]}"]
        for c, val in sorted(lay.constants.items()):
            out.append(f"#define {prefix}_{c} ({val})")
        out.append("")
    out.append(f"#endif /* {guard} */")
    return "\n".join(out) + "\n"
