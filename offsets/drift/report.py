"""The HTML report: chosen structs drawn as byte maps, one column per table, side by side.

One self-contained page (inline CSS and SVG, no scripts, fonts or links). Each column draws the
struct as rows of one machine word; each leaf field is a box over the bytes (bits, for a
bitfield) it occupies; members sharing bytes (unions) are stacked in lanes. A field is coloured by
how it changed since the column to its left: added, changed (moved, resized, retyped, bits),
probably renamed, or unchanged; fields that disappeared are listed under the column. Chosen
constants come as one table, a row each, a column per table: the value (its type on hover),
coloured by how it changed since the column to its left (added, changed value or type, removed).
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Optional, Sequence

from .diff import diff_struct
from ..errors import UnknownNameError
from ..layout.model import Field, Struct, Table
from ..layout.targets import platform

BYTE_W = 18        # px per byte
ROW_H = 20         # px per row (one word)
GUTTER = 34        # px for the offset labels
CHAR_W = 6.1       # px per character of the 10px monospace labels

COLOURS = {"same": "#9ecae1", "added": "#74c476", "changed": "#fd8d3c", "renamed": "#c994c7",
           "padding": "#f0f0f0"}
REMOVED = "#f4a5ae"
LEGEND = (("same", "unchanged"), ("added", "added"), ("changed", "moved, resized, retyped or bits changed"),
          ("renamed", "probably renamed"), ("padding", "padding / unused"))

CSS = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 18px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 22px 0 6px; }
h3.platform { font-size: 13px; margin: 10px 0 4px; color: #444; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px;
            border: 1px solid #888; }
.row { display: flex; gap: 10px; align-items: flex-start; overflow-x: auto; padding-bottom: 6px; }
.col { flex: none; border: 1px solid #ccc; border-radius: 4px; padding: 4px; background: #fafafa; }
.col h3 { font-size: 12px; margin: 0 0 2px; white-space: nowrap; }
.col .meta { font-size: 11px; color: #555; margin-bottom: 4px; white-space: nowrap; }
.col .drift { color: #b35806; font-weight: bold; }
.col .removed { font-size: 11px; color: #b2182b; max-width: 190px; margin-top: 4px; }
.col .absent { font-size: 12px; color: #888; padding: 20px 8px; }
table.constants { border-collapse: collapse; font-size: 12px; }
table.constants th, table.constants td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; white-space: nowrap; }
table.constants th { background: #fafafa; font-weight: normal; }
table.constants td.name { text-align: left; font-family: monospace; }
svg text { font: 10px monospace; fill: #111; }
svg text.off { fill: #777; }
"""


@dataclass(frozen=True)
class Box:
    """A leaf field's bit range within the struct, its lane among overlapping ones, its status."""

    field: Field
    start: int     # bits from the struct start
    end: int
    lane: int
    lanes: int
    status: str
    note: str


def leaves(s: Struct) -> list[Field]:
    """The fields with no sub-fields listed: what actually occupies bytes."""
    parents = set()
    for f in s.fields:
        path = f.path
        while "." in path:
            path = path.rpartition(".")[0]
            parents.add(path)
    return [f for f in s.fields if f.path not in parents]


def _bit_range(f: Field) -> tuple[int, int]:
    if f.is_bitfield:
        start = f.offset * 8 + f.bit_offset
        return start, start + f.bit_width
    return f.offset * 8, (f.offset + f.size) * 8


def boxes(s: Struct, status: dict[str, tuple[str, str]]) -> list[Box]:
    """Leaf fields placed in lanes: a field takes the first lane free at its start; overlapping
    fields (a cluster) share the row height equally."""
    items = sorted(((*_bit_range(f), i, f) for i, f in enumerate(leaves(s)) if f.size), key=lambda t: (t[0], t[2]))
    lane_end, cluster, cluster_end = [], [], -1
    out: list[Box] = []

    def flush():
        n = max((lane for *_, lane in cluster), default=0) + 1
        for f, a, b, lane in cluster:
            st, note = status.get(f.path, ("same", ""))
            out.append(Box(f, a, b, lane, n, st, note))

    for a, b, _, f in items:
        if a >= cluster_end and cluster:
            flush()
            cluster, lane_end = [], []
        lane = next((k for k, end in enumerate(lane_end) if end <= a), len(lane_end))
        if lane == len(lane_end):
            lane_end.append(b)
        else:
            lane_end[lane] = b
        cluster.append((f, a, b, lane))
        cluster_end = max(cluster_end, b)
    if cluster:
        flush()
    return out


def _segments(a: int, b: int, row_bits: int) -> list[tuple[int, int, int]]:
    """Bit range [a, b) as (row, first bit in row, bits) pieces; whole middle rows merged into one
    piece spanning several rows (bits = rows * row_bits)."""
    out = []
    while a < b:
        row, col = divmod(a, row_bits)
        if col == 0 and b - a >= 2 * row_bits:
            rows = (b - a) // row_bits
            out.append((row, 0, rows * row_bits))
            a += rows * row_bits
            continue
        take = min(b - a, row_bits - col)
        out.append((row, col, take))
        a += take
    return out


def _label(text: str, width: float) -> str:
    fit = int((width - 4) // CHAR_W)
    if fit >= len(text):
        return text
    return text[: fit - 1] + "…" if fit >= 3 else ""


def svg(s: Struct, status: dict[str, tuple[str, str]], word: int) -> str:
    """The byte map, drawn in time proportional to the fields (not the size): a row's offset is
    written where a field starts, and on the first and last rows."""
    row_bits = word * 8
    rows = max(1, -(-s.size // word))
    width, height = GUTTER + word * BYTE_W + 2, rows * ROW_H + 2
    e = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(s.name)} byte map">']
    all_boxes = boxes(s, status)
    labelled = {0, rows - 1} | {bx.start // row_bits for bx in all_boxes} | {(bx.end - 1) // row_bits
                                                                             for bx in all_boxes if bx.end > bx.start}
    for r in sorted(r for r in labelled if r < rows):
        out.append(f'<text class="off" x="{GUTTER - 4}" y="{r * ROW_H + 14}" text-anchor="end">{r * word}</text>')
    out.append(f'<rect x="{GUTTER}" y="0" width="{word * BYTE_W}" height="{rows * ROW_H}" '
               f'fill="{COLOURS["padding"]}" stroke="#bbb" stroke-dasharray="3 2"/>')
    for bx in all_boxes:
        pieces = _segments(bx.start, bx.end, row_bits)
        lane_h = ROW_H / bx.lanes
        label_piece = max(pieces, key=lambda p: (p[2] if p[2] <= row_bits else row_bits * 2, -p[0]))
        f = bx.field
        tip = f"{f.path}: offset {f.offset}, size {f.size}, {f.type}"
        if f.is_bitfield:
            tip += f", bits {f.bit_offset}+{f.bit_width}"
        if bx.note:
            tip += f" ({bx.note})"
        out.append(f'<g><title>{e(tip)}</title>')
        for row, col, bits in pieces:
            x = GUTTER + col / 8 * BYTE_W
            w = min(bits, row_bits) / 8 * BYTE_W
            h = (bits // row_bits) * ROW_H if bits > row_bits else lane_h
            y = row * ROW_H + (0 if bits > row_bits else bx.lane * lane_h)
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                       f'fill="{COLOURS[bx.status]}" stroke="#fff" stroke-width="1"/>')
            if (row, col, bits) == label_piece and h >= 9:
                text = _label(f.path.rsplit(".", 1)[-1] if f.path.count(".") > 1 else f.path, w)
                if text:
                    small = ' style="font-size:8px"' if h < 14 else ""
                    out.append(f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + (3 if small else 3.5):.1f}" '
                               f'text-anchor="middle"{small}>{e(text)}</text>')
        out.append('</g>')
    for f in s.fields:
        if f.flexible or (f.size == 0 and f.offset <= s.size):
            y = rows * ROW_H if f.offset >= s.size else (f.offset // word) * ROW_H
            out.append(f'<g><title>{e(f.path)}: flexible array at offset {f.offset}, {e(f.type)}</title>'
                       f'<line x1="{GUTTER}" x2="{GUTTER + word * BYTE_W}" y1="{y}" '
                       f'y2="{y}" stroke="#b2182b" stroke-width="2" stroke-dasharray="4 2"/></g>')
    out.append("</svg>")
    return "\n".join(out)


def _status(prev: Optional[Struct], s: Struct) -> tuple[dict[str, tuple[str, str]], list[str], list[str]]:
    """Per field path (status, note), the removed field paths, and struct-level notes."""
    if prev is None:
        return {}, [], []
    status: dict[str, tuple[str, str]] = {}
    removed, notes = [], []
    words = {"moved": "offset", "resized": "size", "retyped": "type", "bits": "bits"}
    for c in diff_struct(prev, s):
        if c.kind == "field-removed":
            removed.append(c.field)
        elif c.kind == "field-added":
            status[c.field] = ("added", "added")
        elif c.kind == "renamed":
            status[c.field] = ("renamed", f"probably renamed from {c.old}")
        elif c.kind in words:
            old = status.get(c.field, ("changed", ""))[1]
            note = f"{words[c.kind]} {c.old} -> {c.new}"
            status[c.field] = ("changed", f"{old}; {note}" if old else note)
        elif c.kind in ("size", "align", "kind"):
            notes.append(f"{c.kind} was {c.old}")
    return status, removed, notes


def _find(table: Table, name: str) -> Optional[Struct]:
    from ..layout.names import find_struct

    try:
        return find_struct(table, name)
    except UnknownNameError:
        return None


def column(table: Table, s: Optional[Struct], prev: Optional[tuple[Table, Struct]]) -> str:
    b = table.build
    e = html.escape
    head = f'<h3>{e(b.release)} {e(b.config_name)}</h3><div class="meta">{e(b.target.triple)}'
    if s is None:
        return f'<div class="col">{head}</div><div class="absent">not in this table</div></div>'
    status, removed, notes = _status(prev[1] if prev else None, s)
    changed = sum(1 for st, _ in status.values() if st != "same")
    head += f'<br>{e(s.name)}: {s.size} bytes, align {s.align}'
    if prev:
        pb = prev[0].build
        drift = changed or removed or notes
        summary = (f'+{sum(1 for st, _ in status.values() if st == "added")} '
                   f'~{sum(1 for st, _ in status.values() if st in ("changed", "renamed"))} -{len(removed)}'
                   + (f'; {"; ".join(notes)}' if notes else "")) if drift else "no change"
        head += f'<br>vs {e(pb.version)} {e(pb.config_name)}: <span class="{"drift" if drift else ""}">' \
                f'{e(summary)}</span>'
    head += "</div>"
    gone = (f'<div class="removed">removed: {e(", ".join(removed))}</div>' if removed else "")
    return f'<div class="col">{head}{svg(s, status, table.build.target.pointer_size)}{gone}</div>'


def order(tables: Sequence[Table]) -> list[Table]:
    """Columns: by platform, then target, then version, then config (release first), so neighbours compare."""
    rank = {"release": 0, "debug": 1, "freethreaded": 2, "freethreaded-debug": 3}
    return sorted(tables, key=lambda t: (platform(t.build.target.triple), t.build.target.triple, t.build.hexversion,
                                         rank.get(t.build.config_name, 9), t.build.config_name))


def platforms(tables: Sequence[Table]) -> list[tuple[str, list[Table]]]:
    """(platform, its tables) in column order (`order`'s)."""
    out: list = []
    for t in order(tables):
        p = platform(t.build.target.triple)
        if not out or out[-1][0] != p:
            out.append((p, []))
        out[-1][1].append(t)
    return out


def constants_table(tables: Sequence[Table], names: Sequence[str]) -> list[str]:
    """An HTML table of the constants `names` across `tables` (in that order); `UnknownNameError`
    for a name no table has."""
    from .history import _constant

    e = html.escape
    out = ['<table class="constants"><tr><th></th>' +
           "".join(f"<th>{e(t.build.release)}<br>{e(t.build.config_name)}<br>{e(t.build.target.triple)}</th>"
                   for t in tables) + "</tr>"]
    for name in names:
        found = [_constant(t, name) for t in tables]
        if not any(found):
            from ..errors import close_matches

            newest = max(tables, key=lambda t: t.build.hexversion)
            raise UnknownNameError(name, close_matches(name, list(newest.constants), 0.7),
                                   where=f"any of the {len(tables)} tables as a constant")
        cells = []
        for i, c in enumerate(found):
            left = found[i - 1] if i else None
            if c is None:
                colour, text, note = (REMOVED, "removed", "removed") if left else ("#fff", "-", "absent")
            else:
                status = ("same" if i == 0 or (left and (left.value, left.type) == (c.value, c.type)) else
                          "added" if left is None else "changed")
                colour, text = COLOURS[status], str(c.value)
                note = f"{c.type}, {c.size} bytes, {c.kind}, {c.defined_in}" + (f" (as {c.name})" if c.name != name else "")
            cells.append(f'<td style="background:{colour}" title="{e(note)}">{e(text)}</td>')
        out.append(f'<tr><td class="name">{e(name)}</td>{"".join(cells)}</tr>')
    return out + ["</table>"]


def render(tables: Sequence[Table], struct_names: Sequence[str], constant_names: Sequence[str] = (),
           checked: Optional[dict] = None) -> str:
    """The whole page, its columns grouped by platform, each group saying what checked its tables
    (`checked`: table name -> check lines, checked.of_paths; None: not said); `UnknownNameError` for
    a struct (or constant) no table has."""
    from .checked import sentence

    groups = platforms(tables)
    tables = [t for _, ts in groups for t in ts]
    e = html.escape
    legend = "".join(f'<span><i style="background:{COLOURS[k]}"></i>{e(text)}</span>' for k, text in LEGEND)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>offsets: {e(', '.join([*struct_names, *constant_names]))}</title>",
             f"<style>{CSS}</style></head><body>",
             "<h1>Struct layouts across CPython builds</h1>",
             f'<p>{len(tables)} table(s); one row per {", ".join(sorted({str(t.build.target.pointer_size) for t in tables}))}'
             f'-byte word; each field is highlighted by how it changed since the column to its left. '
             f'Hover a field for its offset, size and type.</p>',
             f'<p class="legend">{legend}</p>']
    for name in struct_names:
        found = [(t, _find(t, name)) for t in tables]
        if not any(s for _, s in found):
            from ..layout.names import find_struct

            find_struct(max(tables, key=lambda t: t.build.hexversion), name)  # raises with suggestions
        parts.append(f"<h2>{e(name)}</h2>")
        at = 0
        for p, ts in groups:        # a row per platform: a column compares with its left neighbour there only
            parts.append(f'<h3 class="platform">{e(p)}</h3>')
            parts.append('<div class="row">')
            prev = None
            for t, s in found[at:at + len(ts)]:
                parts.append(column(t, s, prev if s is not None else None))
                if s is not None:
                    prev = (t, s)
            parts.append("</div>")
            at += len(ts)
    if constant_names:
        parts.append("<h2>Constants</h2>")
        parts += constants_table(tables, constant_names)
    if checked is not None:         # after the maps: the first screen shows them
        parts.append('<section class="checked"><p><b>What checked the tables</b>, per platform:</p><ul>')
        parts += [f"<li><b>{e(p)}</b> ({len(ts)} table{'s' if len(ts) != 1 else ''}): "
                  f"{e(sentence([t.build.table_name for t in ts], checked))}</li>" for p, ts in groups]
        parts.append("</ul></section>")
    parts.append("<p><small>Generated by offsets; every number comes from the tables above.</small></p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
