"""Verification records: what proved each committed table (`verified:` in generated/index.yaml).

`make tables` checks every table it makes against its own inputs before writing it (the checks of
`offsets verify`, verify.py: gcc's `offsetof` probes over the build's headers and sources, and the
DWARF of its binary where there is one) and refuses to write one that disagrees. Each table's
index row then records the checks, what each compared, the sha256 of the table's bytes, and the
verifier's version. Where the table's own interpreter is on the machine (its binary's build-id is
one the table records), `python -m offsets.tools.live_records` (which `make tables` runs) adds the
live check that interpreter ran of it (`live`: checks, constants, build_id). `problems()` is the
fast check CI runs on every commit: a table whose bytes are not the ones its record verified, or
that has no record, fails it.
"""
from __future__ import annotations

import datetime
import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Optional

import yaml

from .. import __version__
from . import verify
from ..errors import VerifyError
from ..layout.model import Table

#: Who verified: a table verified by an older verifier is not proven by this one.
VERIFIER = f"offsets {__version__}, verify revision {verify.REVISION}"


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def check(table: Table, b, binary: Optional[Path], binaries=()) -> verify.Verification:
    """`offsets verify` of `table` against its own build inputs `b` (and DWARF `binary`, and the
    interpreter `binaries` whose build-ids it records), and for a table with dependency sets the
    rescan of `b` with pyconfig.h cut down to them (`depends_cut`); `VerifyError` naming the
    first disagreement, `BuildError` if nothing could check it."""
    inputs = verify.find_inputs(table, build=b, binary=binary)
    inputs.binaries = list(binaries)
    result = verify.verify(table, inputs, use_live=False)
    if table.dependencies is not None:
        result = replace(result, checks=result.checks + (cut_check(table, b, binary),))
    bad = result.mismatches
    if bad:
        raise VerifyError(f"{table.build.table_name} fails verification against its own inputs ({len(bad)} "
                          f"mismatch(es), first: {bad[0]}): not written")
    return result


def cut_check(table: Table, b, binary: Optional[Path] = None) -> verify.Check:
    """The pyconfig.h cut (`depends_cut.check`) as a check of the verification record."""
    from . import depends_cut

    r = depends_cut.check(table, b, binary=binary)
    notes = [f"restored so that the cut build compiles (not tested): {', '.join(r.restored)}"] if r.restored else []
    if r.only_cut:
        notes.append(f"{len(r.only_cut)} structs only the cut build has (e.g. {', '.join(r.only_cut[:3])})")
    return verify.Check(CUT, r.line(), r.structs, r.fields, r.mismatches, tuple(notes),
                        counts=(("kept", len(r.kept)), ("dropped", len(r.dropped)), ("restored", len(r.restored)),
                                ("constants", r.constants)))


#: The name of the pyconfig.h cut's check in a verification record.
CUT = "depends cut"
#: The name of the live check by the table's own interpreter (tools/live_records.py).
LIVE = "live"


def record(result: verify.Verification, text: str) -> dict:
    """The `verified:` entry of an index row, for a table whose YAML text is `text`."""
    return {"sha256": sha256(text), "verifier": VERIFIER,
            "checks": {c.name: dict({"constants": c.fields} if c.unit == "constants" else
                                    {"structs": c.structs, "fields": c.fields}, **dict(c.counts),
                                    mismatches=len(c.mismatches))
                       for c in result.checks}}


def reusable(row: Optional[dict], text: str) -> Optional[dict]:
    """The row's record if it verified exactly these bytes with this verifier, else None."""
    rec = (row or {}).get("verified")
    if rec and rec.get("sha256") == sha256(text) and rec.get("verifier") == VERIFIER:
        return rec
    return None


def index_rows(out: Path) -> dict[str, dict]:
    """file name -> row of `out`/index.yaml (empty if there is none)."""
    path = out / "index.yaml"
    if not path.is_file():
        return {}
    return {r["file"]: r for r in (yaml.safe_load(path.read_text()) or {}).get("tables") or []}


def problems(out: Path) -> list[str]:
    """Why the tables of `out` are not each proven by their record (empty: all are)."""
    rows = index_rows(out)
    found = []
    files = sorted(p.name for p in out.glob("cpython-*.yaml"))
    for name in files:
        rec = (rows.get(name) or {}).get("verified")
        if not rec:
            found.append(f"{name}: no verification record in index.yaml (run `make tables`)")
            continue
        got = sha256((out / name).read_text())
        if rec.get("sha256") != got:
            found.append(f"{name}: its bytes ({got[:19]}...) are not the ones verified ({str(rec.get('sha256'))[:19]}...): "
                         f"changed after `make tables`; regenerate it")
        if rec.get("verifier") != VERIFIER:
            found.append(f"{name}: verified by {rec.get('verifier')}, not by {VERIFIER}: run `make tables`")
        checks = rec.get("checks") or {}
        if not any(c.get("fields", 0) > 0 for c in checks.values()):
            found.append(f"{name}: its record compared nothing")
        text = (out / name).read_text()
        if "\ndependencies:\n" in text and CUT not in checks:
            found.append(f"{name}: its dependency sets were not checked by a rescan with pyconfig.h cut to them")
        if "\nconstants:\n" in text and not any(c.get("constants", 0) > 0 for n, c in checks.items() if n not in (CUT, LIVE)):
            found.append(f"{name}: its record compared none of its constants")
        live = checks.get(LIVE)
        if live is not None and not live.get("checks"):
            found.append(f"{name}: its live check compared nothing")
        found += [f"{name}: its {n} check compared nothing" for n, c in checks.items()
                  if n != LIVE and any(c.get(k) == 0 for k in ("fields", "checks"))]   # python.org's DLL, Wine
        if live is not None and live.get("by") == "inputs":
            # a build made here whose build-id no table can record (tools/built_records.py): the runtime
            # inside matched it by the headers the table was made from, which the table must name
            if live.get("build_id") is not None or not re.search(r"\n  inputs: \{[^\n]*\bheaders: \"sha256:", text):
                found.append(f"{name}: its live check says it matched its build by headers, but "
                             + ("names a build-id too" if live.get("build_id") is not None else
                                "the table records no digest of its headers"))
        elif live is not None and live.get("build_id") not in re.findall(r'\{build_id: "?(\w+)"?,', text):
            found.append(f"{name}: its live check was run by a binary (build-id {live.get('build_id')}) the table does "
                         f"not record: not its build")
        found += [f"{name}: {n} check recorded {c['mismatches']} mismatches" for n, c in checks.items() if c.get("mismatches")]
    found += [f"{name}: index.yaml has a row but there is no such table" for name in sorted(set(rows) - set(files))]
    return found


def sample(names: list[str], key: Optional[str] = None, day: Optional[datetime.date] = None) -> str:
    """The table CI re-verifies in full today: `key` if given (a file name or part of one), else
    one chosen by the date, so that every table comes round within len(names) days."""
    names = sorted(names)
    if key:
        hits = [n for n in names if key in n]
        if not hits:
            raise VerifyError(f"no table matches {key!r}")
        return hits[0]
    return names[(day or datetime.date.today()).toordinal() % len(names)]
