"""What checked each table a report draws, and a platform's tables in one sentence.

A table's checks come from where they are recorded: the shipped index's `checked` (index.json,
made from generated/index.yaml) for a shipped table or the very YAML one was made from; else the
`verified:` record in its own directory's index.yaml, where that record is of the file's exact bytes
(it names their sha256). A table neither records is said to have no record.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Optional, Sequence

#: A check's kind, by how compact.checks_of words it, in the order a sentence names them.
KINDS = (("offsetof", "a second compiler's offsetof"), ("static assertions", "its static assertions of the constants"),
         ("DWARF", "the build's DWARF"), ("the binary ", "a binary of the build"),
         ("_Py_DebugOffsets", "the _Py_DebugOffsets of a binary of the build"),
         ("a live interpreter", "a live interpreter of the build"),
         ("a rescan", "a rescan with pyconfig.h cut to the dependency sets"))
#: The checks by python.org's build of a Windows table's minor (tools/windows_records.py), whose lines
#: begin with PYTHON_ORG and count under these kinds alone.
PYTHON_ORG = "python.org's "
PYTHON_ORG_KINDS = ((" DLL ", "python.org's DLL of its minor"), (" under Wine", "python.org's build of its minor, live under Wine"))


def of_paths(paths: Sequence) -> dict:
    """table file stem -> its check lines (compact.checks_of's form), or None where none is recorded."""
    out: dict = {}
    shipped = _shipped()
    rows: dict = {}
    for p in map(Path, paths):
        name = p.stem
        found = shipped.get(name) if _made_from(p) else None
        if found is None and p.suffix == ".yaml":
            if p.parent not in rows:
                rows[p.parent] = _index_rows(p.parent)
            found = _verified(rows[p.parent].get(p.name), p)
        out[name] = found
    return out


def sentence(names: Sequence[str], checked: dict) -> str:
    """What checked the tables `names`, per kind of check: `a second compiler's offsetof (6 of 6
    tables); a binary of the build (6 of 6)`, and how many have no record."""
    recorded = [checked.get(n) for n in names]
    known = [c for c in recorded if c is not None]
    parts = []
    for word, said, theirs in [(w, s, False) for w, s in KINDS] + [(w, s, True) for w, s in PYTHON_ORG_KINDS]:
        n = sum(1 for lines in known if any(word in line and line.startswith(PYTHON_ORG) == theirs for line in lines))
        if n:
            parts.append(f"{said} ({n} of {len(names)} table{'s' if len(names) != 1 else ''})")
    compilers = sorted({line.split("'s ", 1)[0] for lines in known for line in lines if "'s offsetof" in line})
    said = "; ".join(parts) if parts else "nothing recorded"
    if compilers:
        said += f"; compilers: {', '.join(compilers)}"
    if not any(any("the binary " in line for line in lines) for lines in known):
        said += "; no binary of these builds was at hand to check against"
        if any("another patch release" in line for lines in known for line in lines if line.startswith(PYTHON_ORG)):
            said += " (python.org's are of other patch releases)"
    missing = len(recorded) - len(known)
    if missing:
        said += f"; {missing} table{'s have' if missing != 1 else ' has'} no record of what checked {'them' if missing != 1 else 'it'}"
    return said


def _shipped() -> dict:
    """table name -> index.json's `checked`, for the tables the package ships ({} when it ships none)."""
    from ..errors import OffsetsError
    from ..runtime.tables import shipped_index

    try:
        return {e["name"]: list(e.get("checked") or ()) for e in shipped_index()["tables"] if "checked" in e}
    except OffsetsError:
        return {}


def _made_from(path: Path) -> bool:
    """Whether the shipped table of this name is this file: the compact file itself, or made from
    these YAML bytes (its `source_sha256`)."""
    from ..errors import OffsetsError
    from ..layout.compact import COMPACT_DIR
    from ..layout.compact_read import open_table

    if path.suffix == ".jsonl":
        return path.resolve().parent == COMPACT_DIR.resolve()
    try:
        head, _ = open_table(str(COMPACT_DIR / (path.stem + ".jsonl")))
        return head.get("source_sha256") == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, ValueError, KeyError, OffsetsError):      # no such shipped table: not made from it
        return False


def _index_rows(directory: Path) -> dict:
    """file name -> row of `directory`/index.yaml ({} without one, or without PyYAML to read it)."""
    path = directory / "index.yaml"
    if not path.is_file():
        return {}
    try:
        import yaml
    except ImportError:
        return {}
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return {}
    return {r.get("file"): r for r in (doc or {}).get("tables") or [] if isinstance(r, dict)}


def _verified(row: Optional[dict], path: Path) -> Optional[list]:
    """The check lines of an index.yaml row whose record is of `path`'s exact bytes, else None."""
    from ..layout.compact import checks_of

    rec = (row or {}).get("verified")
    if not rec or rec.get("sha256") != "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest():
        return None
    return checks_of(rec, row.get("target", ""), str(row.get("version", "")))
