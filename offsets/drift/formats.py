"""Drift reports: a list of `Change`s as text (coloured on a terminal), Markdown, JSON, or GitHub
Actions annotations. Pure functions from values to a string; the JSON structure is documented in
docs/drift-json.md.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional, Sequence

from .diff import Change, Watch, watchers
from ..layout.model import Build, Constant, Field, Struct

FORMATS = ("text", "markdown", "json", "github")
JSON_VERSION = 1


@dataclass(frozen=True)
class Report:
    """What a formatter needs: both builds, every change, and the watch list (None: watch all)."""

    old: Build
    new: Build
    changes: Sequence[Change]
    watches: Optional[Sequence[Watch]] = None
    watch_file: Optional[str] = None

    def watched(self, c: Change) -> bool:
        return self.watches is None or bool(watchers(c, self.watches))

    @property
    def shown(self) -> list[Change]:
        return [c for c in self.changes if self.watched(c)]

    @property
    def drift(self) -> bool:
        return any(c.is_drift for c in self.shown)

    @property
    def exit_code(self) -> int:
        return 1 if self.drift else 0


def build_label(b: Build) -> str:
    return f"CPython {b.release} ({b.config_name}, {b.target.triple})"


def _field_where(f: Field) -> str:
    text = f"offset {f.offset}, size {f.size}, {f.type}"
    if f.is_bitfield:
        text += f", bits {f.bit_offset}+{f.bit_width}"
    return text + (" (flexible)" if f.flexible else "")


def _bits(v) -> str:
    return "none" if v is None else f"{v[0]}+{v[1]}"


_DESCRIBE = {
    "struct-added": lambda c: f"{c.new.kind} added ({c.new.size} bytes, align {c.new.align})",
    "struct-removed": lambda c: f"{c.old.kind} removed (was {c.old.size} bytes, align {c.old.align})",
    "struct-renamed": lambda c: f"same struct, named {c.old} in the old table",
    "kind": lambda c: f"{c.old} became {c.new}",
    "size": lambda c: f"size {c.old} -> {c.new}",
    "align": lambda c: f"alignment {c.old} -> {c.new}",
    "field-added": lambda c: f"added ({_field_where(c.new)})",
    "field-removed": lambda c: f"removed (was {_field_where(c.old)})",
    "renamed": lambda c: f"probably renamed from {c.old} (same offset, size and type)",
    "moved": lambda c: f"moved: offset {c.old} -> {c.new}",
    "resized": lambda c: f"resized: {c.old} -> {c.new} bytes",
    "retyped": lambda c: f"retyped: {c.old} -> {c.new}",
    "bits": lambda c: f"bits (offset+width) {_bits(c.old)} -> {_bits(c.new)}",
    "constant-added": lambda c: f"constant added ({c.new.value}, {c.new.type}, {c.new.defined_in})",
    "constant-removed": lambda c: f"constant removed (was {c.old.value}, {c.old.type}, {c.old.defined_in})",
    "constant-renamed": lambda c: f"same constant, named {c.old} in the old table",
    "constant-changed": lambda c: f"value {c.old} -> {c.new}",
    "constant-retyped": lambda c: f"type {c.old} -> {c.new}",
}


def describe(c: Change) -> str:
    """What happened, in a few words (no struct or field name: the caller shows those)."""
    return _DESCRIBE[c.kind](c)


def _mark(c: Change) -> str:
    if not c.is_drift:
        return "="
    return {"struct-added": "+", "field-added": "+", "constant-added": "+", "struct-removed": "-",
            "field-removed": "-", "constant-removed": "-"}.get(c.kind, "~")


_COLOURS = {"+": "32", "-": "31", "~": "33", "=": "36"}


def summary(r: Report) -> str:
    shown = r.shown
    drift = [c for c in shown if c.is_drift]
    structs = len({c.struct for c in drift if not c.is_constant})
    constants = len({c.struct for c in drift if c.is_constant})
    where = f"{structs} struct(s)" + (f" and {constants} constant(s)" if constants else "")
    if r.watches is None:
        head = f"{len(drift)} change(s) in {where}" if drift else "no drift"
    else:
        head = (f"{len(drift)} change(s) to watched names in {where}" if drift
                else f"no drift in the {len(r.watches)} watched name(s)")
        others = sum(1 for c in r.changes if c.is_drift) - len(drift)
        if others:
            head += f"; {others} other change(s) not watched"
    return head


def text(r: Report, colour: bool = False) -> str:
    """Grouped by struct, one line per change: `+` added, `-` removed, `~` changed, `=` news."""
    def paint(code: str, s: str) -> str:
        return f"\033[{code}m{s}\033[0m" if colour else s

    out = [f"{build_label(r.old)} -> {build_label(r.new)}"]
    current = None
    for c in r.shown:
        if c.struct != current:
            current = c.struct
            out.append(paint("1", c.struct))
        mark = _mark(c)
        where = f"{c.field}: " if c.field else ""
        out.append(f"  {paint(_COLOURS[mark], mark)} {where}{describe(c)}")
    out.append(summary(r))
    return "\n".join(out) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|")


def markdown(r: Report) -> str:
    """A heading, a table of changes (struct, field, change), and the verdict: for a PR comment."""
    verdict = "layout drift" if r.drift else "no layout drift"
    out = [f"### offsets: {verdict}", "",
           f"{_md(build_label(r.old))} → {_md(build_label(r.new))}", ""]
    shown = r.shown
    if shown:
        out += ["| | struct | field | change |", "|---|---|---|---|"]
        for c in shown:
            field = f"`{_md(c.field)}`" if c.field else ""
            out.append(f"| {_mark(c)} | `{_md(c.struct)}` | {field} | {_md(describe(c))} |")
        out.append("")
    out.append(f"**{summary(r)}**")
    return "\n".join(out) + "\n"


def _value(v):
    if isinstance(v, Field):
        d = {"offset": v.offset, "size": v.size, "type": v.type}
        if v.is_bitfield:
            d.update(bit_offset=v.bit_offset, bit_width=v.bit_width)
        if v.array_len is not None:
            d["array_len"] = v.array_len
        if v.flexible:
            d["flexible"] = True
        return d
    if isinstance(v, Struct):
        return {"kind": v.kind, "size": v.size, "align": v.align, "fields": len(v.fields)}
    if isinstance(v, Constant):
        return {"value": v.value, "type": v.type, "size": v.size, "kind": v.kind, "defined_in": v.defined_in}
    if isinstance(v, tuple):
        return {"bit_offset": v[0], "bit_width": v[1]}
    return v


def _build(b: Build) -> dict:
    return {"version": b.version, "vendor": b.vendor, "config": b.config_name, "triple": b.target.triple,
            "pointer_size": b.target.pointer_size, "table": b.table_name}


def as_json(r: Report) -> str:
    """Every change, each flagged `watched`; `drift` is the verdict. See docs/drift-json.md."""
    changes = []
    for c in r.changes:
        entry = {"kind": c.kind, "struct": c.struct, "old_struct": c.old_struct, "field": c.field,
                 "old": _value(c.old), "new": _value(c.new), "drift": c.is_drift, "watched": r.watched(c),
                 "message": f"{c.name}: {describe(c)}"}
        if r.watches is not None:
            entry["watch"] = [w.name for w in watchers(c, r.watches)]
        changes.append(entry)
    doc = {"format": "offsets-drift", "version": JSON_VERSION, "old": _build(r.old), "new": _build(r.new),
           "watch": None if r.watches is None else [w.name for w in r.watches],
           "drift": r.drift, "summary": summary(r), "changes": changes}
    return json.dumps(doc, indent=2) + "\n"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(r: Report) -> str:
    """GitHub Actions workflow commands: an error per drifted watched name, a notice for news.

    With a watch file, each annotation points at the watch-file line of the name it concerns.
    """
    out = []
    versions = f"CPython {r.old.version} -> {r.new.version}"
    for c in r.shown:
        level = "error" if c.is_drift else "notice"
        props = [f"title={_escape_property('offsets: ' + versions)}"]
        if r.watches is not None and r.watch_file:
            w = watchers(c, r.watches)[0]
            props = [f"file={_escape_property(r.watch_file)}", f"line={w.line}"] + props
        out.append(f"::{level} {','.join(props)}::{_escape_data(f'{c.name}: {describe(c)}')}")
    level = "error" if r.drift else "notice"
    out.append(f"::{level} title={_escape_property('offsets: ' + versions)}::{_escape_data(summary(r))}")
    return "\n".join(out) + "\n"


def render(r: Report, fmt: str, colour: bool = False) -> str:
    renderers = {"text": lambda: text(r, colour), "markdown": lambda: markdown(r), "json": lambda: as_json(r),
                 "github": lambda: github(r)}
    return renderers[fmt]()
