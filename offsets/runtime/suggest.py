"""What a refusal of an unknown name suggests from the tables of neighbouring minor versions: the
same member under another name (a rename across versions), and, for a struct the build no longer
has, since when and where a field of that name lives now. Run only when a name is refused.

A rename is what `offsets diff` calls one, loosened for a suggestion (which answers nothing): in
a shipped table of the minor version just before or after, on the same target and flags, that has
`STRUCT.FIELD`, it is at offset O with size S; this build's struct has exactly one top-level field
at O of size S that the other table's struct lacks. `_PyInterpreterFrame.f_code` (3.12) is
3.13's `f_executable`, both pointers at 0.
"""
from __future__ import annotations

from ..layout.identity import flag_set
from .tables import load_shipped, shipped_index


def _minor(hexversion: int) -> tuple:
    return hexversion >> 24, (hexversion >> 16) & 0xFF


def _neighbours(t) -> list:
    """The shipped entries of the minor versions before and after `t`'s, for its target and flags,
    the later first (newest patch level of each first): a rename two minors apart is no
    suggestion (3.11's first pointer is not 3.13's `f_executable`)."""
    b = t.build
    mine = _minor(b.hexversion)
    same = [e for e in shipped_index()["tables"]
            if e["triple"] == b.triple and e["pointer_size"] == b.pointer_size
            and flag_set(e["config"]) == b.flags and _minor(e["hexversion"])[0] == mine[0]
            and abs(_minor(e["hexversion"])[1] - mine[1]) == 1]
    return sorted(same, key=lambda e: (-e["hexversion"], e["name"]))


def renamed(t, key: str, path: str) -> list:
    """Fields of struct `key` of table `t` that are probably `path` renamed ([] if none): from the
    first neighbouring table whose struct of the same name has `path`."""
    if "." in path:
        return []
    fields = t.fields(key)
    for e in _neighbours(t):
        other = load_shipped(e)
        okey = other.resolve_struct(key)
        if okey is None:
            continue
        ofields = other.fields(okey)
        row = ofields.get(path)
        if row is None:
            continue
        same = [p for p, r in fields.items() if "." not in p and p not in ofields and r.offset == row.offset and r.size == row.size]
        return same if len(same) == 1 else []
    return []


def gone(t, struct: str, having: list) -> str:
    """For a struct this build lacks that the tables `having` (their names and versions: (name,
    hexversion) pairs) have: since which minor version it is gone, or '' when some table of this
    minor or a later one has it."""
    mine = _minor(t.build.hexversion)
    if not having or any(_minor(h) >= mine for _, h in having):
        return ""
    last = max(_minor(h) for _, h in having)
    return f"{struct} is gone since {mine[0]}.{last[1] + 1} (last in {last[0]}.{last[1]})"


def where_now(t, path: str, most: int = 3) -> list:
    """STRUCT.FIELD of this table's structs that have a top-level field named `path` (at most
    `most`; [] when more have it, or none)."""
    if not path or "." in path:
        return []
    found = [f"{k}.{path}" for k in t.order if path in t.fields(k)]
    return found if 0 < len(found) <= most else []
