"""The Rust form of an export: a module with `pub const` items per table (`pub mod <table>`), a
`Layout` struct of section structs, `LAYOUTS`, and lookups by build-id and by version (items.py: one
that several layouts answer differently answers None). Rust 2018+,
no crate needed; `rustc --edition 2021` without warnings."""
from __future__ import annotations

from .items import ABSENT, ExportError, ident, sections

KEYWORDS = {"as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if",
            "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
            "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "async",
            "await", "dyn", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof",
            "unsized", "virtual", "yield", "try"}


def snake(name: str) -> str:
    """`PyThreadState` -> `py_thread_state`; snake_case names stay (a keyword gets `r#`)."""
    out = ""
    for i, ch in enumerate(name):
        if ch.isupper() and i and (name[i - 1].islower() or name[i - 1].isdigit()):
            out += "_"
        out += ch.lower()
    out = out.lstrip("_") or "x"
    return f"r#{out}" if out in KEYWORDS else out


def camel(name: str) -> str:
    """`interpreter_frame` -> `InterpreterFrame`, `PyThreadState` stays."""
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p) or "X"


def _item(v) -> str:
    return f"Item {{ offset: {v[0]}, size: {v[1]} }}" if v is not None else "Item::ABSENT"


def render(items: list, layouts: list, constants: tuple, note: str) -> str:
    secs = sections(items)
    types = [camel(s) for s, _ in secs]
    if len(set(types)) != len(types) or {"Item", "Layout", "Constants"} & set(types):
        raise ExportError(f"--lang rust: the sections {', '.join(s for s, _ in secs)} give clashing type names")
    out = [f"//! {note}; do not edit.", "#![allow(dead_code, non_snake_case)]", "",
           "/// A field's byte offset and size; a struct's `size` item is `{ offset: 0, size: sizeof }`.",
           "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
           "pub struct Item {", "    pub offset: u64,", "    pub size: u64,", "}", "",
           "impl Item {", "    /// An item the table lacks.",
           f"    pub const ABSENT: Item = Item {{ offset: {ABSENT}, size: {ABSENT} }};",
           "    pub const fn is_absent(&self) -> bool {", f"        self.offset == {ABSENT}", "    }", "}", ""]
    for (section, names), t in zip(secs, types):
        out += ["#[derive(Clone, Copy, Debug)]", f"pub struct {t} {{"]
        out += [f"    pub {snake(n)}: Item," for n in names]
        out += ["}", ""]
    if constants:
        out += ["#[derive(Clone, Copy, Debug)]", "pub struct Constants {"]
        out += [f"    pub {snake(c)}: Option<i64>," for c in constants]
        out += ["}", ""]
    out += ["#[derive(Clone, Copy, Debug)]", "pub struct Layout {", "    pub table: &'static str,",
            "    pub version: &'static str,", "    pub hexversion: u32,",
            "    /// the target: x86_64-linux-gnu, x86_64-pc-windows-msvc, ...", "    pub triple: &'static str,",
            "    /// release, debug, freethreaded, freethreaded-debug", "    pub config: &'static str,",
            "    /// what `by_version` answers for its three", "    pub by_version: bool,",
            "    /// what `by_hexversion` answers for its version", "    pub by_hexversion: bool,",
            "    /// GNU build-ids (hex) of the binaries of this build", "    pub build_ids: &'static [&'static str],"]
    out += [f"    pub {snake(s)}: {t}," for (s, _), t in zip(secs, types)]
    if constants:
        out.append("    pub constants: Constants,")
    out += ["}", ""]
    for lay in layouts:
        m = ident(lay.table).lower()
        out += [f"/// {lay.table}", f"pub mod {m} {{", "    use super::*;",
                f'    pub const TABLE: &str = "{lay.table}";', f'    pub const VERSION: &str = "{lay.version}";',
                f"    pub const HEXVERSION: u32 = {lay.hexversion:#010x};",
                f'    pub const TRIPLE: &str = "{lay.triple}";', f'    pub const CONFIG: &str = "{lay.config}";',
                "    pub const BUILD_IDS: &[&str] = &[" + ", ".join(f'"{b}"' for b in lay.build_ids) + "];"]
        for section, names in secs:
            for n in names:
                out.append(f"    pub const {section.upper()}_{n.upper()}: Item = {_item(lay.values[(section, n)])};")
        for c in constants:
            if c in lay.constants:
                out.append(f"    pub const {c.upper()}: i64 = {lay.constants[c]};")
        out += ["    pub const LAYOUT: Layout = Layout {", "        table: TABLE,", "        version: VERSION,",
                "        hexversion: HEXVERSION,", "        triple: TRIPLE,", "        config: CONFIG,",
                f"        by_version: {str(lay.by_version).lower()},",
                f"        by_hexversion: {str(lay.by_hexversion).lower()},", "        build_ids: BUILD_IDS,"]
        for (section, names), t in zip(secs, types):
            out.append(f"        {snake(section)}: {t} {{")
            out += [f"            {snake(n)}: {section.upper()}_{n.upper()}," for n in names]
            out.append("        },")
        if constants:
            out.append("        constants: Constants {")
            out += [f"            {snake(c)}: " + (f"Some({c.upper()})," if c in lay.constants else "None,")
                    for c in constants]
            out.append("        },")
        out += ["    };", "}", ""]
    out += ["/// Every exported layout.", "pub static LAYOUTS: &[&Layout] = &["]
    out += [f"    &{ident(lay.table).lower()}::LAYOUT," for lay in layouts]
    out += ["];", "", "/// The layout of the binary with this GNU build-id (hex).",
            "pub fn by_build_id(build_id: &str) -> Option<&'static Layout> {",
            "    LAYOUTS.iter().copied().find(|l| l.build_ids.contains(&build_id))", "}", "",
            "/// The layout of this PY_VERSION_HEX, triple (`x86_64-linux-gnu`) and config (`release`, `debug`,",
            "/// `freethreaded`, `freethreaded-debug`); None also where the layouts exported for the three differ",
            "/// (a vendor's build beside upstream's). A build no table records may differ too: prefer the build-id.",
            "pub fn by_version(hexversion: u32, triple: &str, config: &str) -> Option<&'static Layout> {",
            "    LAYOUTS",
            "        .iter()",
            "        .copied()",
            "        .find(|l| l.by_version && l.hexversion == hexversion && l.triple == triple && l.config == config)",
            "}", "",
            "/// The layout of this PY_VERSION_HEX where every layout exported for it is the same, else None",
            "/// (its builds of other CPUs or configs differ: `by_version`, or the build-id).",
            "pub fn by_hexversion(hexversion: u32) -> Option<&'static Layout> {",
            "    LAYOUTS.iter().copied().find(|l| l.by_hexversion && l.hexversion == hexversion)", "}"]
    return "\n".join(out) + "\n"
