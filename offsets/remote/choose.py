"""The table for a build read from another process (or a binary), and how its answers are earned.

The rule is the runtime's (docs/identity.md), with the binary's build-id first:

1. **exact by build-id**: a table that records the GNU build-id of this very binary (it was
   verified against it, or made for it by `offsets scan --install`);
2. **exact by layout inputs** (`runtime.earning`): same version, layout flags, target and pointer
   size, and either the same header and `pyconfig.h` digests and core defines as the headers
   installed beside the binary, or, without headers, the same distributor package version. An
   upstream build with neither a known build-id nor installed headers is never exact;
3. **proven**: otherwise the nearest table of the same minor version, flags, target and pointer
   size whose check in the target's memory passes (`proof.py`), answering only what that check
   read;
4. otherwise refused (`NoMatchingTable`), with the command that makes the build's own table from
   its files under `/proc/PID/root`.

Tables are this machine's own (`offsets scan --install`, `$OFFSETS_TABLES`) and the shipped ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import NoMatchingTable
from ..layout import identity
from ..runtime.earning import Earning, describe_build, earning
from ..runtime.tables import entry_build, installed_entries, shipped_index, _load_entry


@dataclass
class Choice:
    """The table chosen for a build: `kind` exact or proven, `by` what made it so."""

    table: object            # runtime.tables.Loaded
    kind: str                # "exact" | "proven"
    by: str                  # "build-id" | "headers" | "package" | "memory" (a process) | "binary" (a file)
    detail: str
    proof: object = None     # proof.Result, when one ran

    def keys(self) -> dict:
        return {"table": self.table.name, "earned": self.kind, "earned_by": self.by, "detail": self.detail}


def entries(ident) -> list:
    """Own tables of the build's version first, then the shipped ones."""
    own = installed_entries({"version": ident.version}) if ident.version else []
    return own + shipped_index()["tables"]


def _settle(t, earn: Earning, proof=None):
    """Give a remote table its earning: the proof that ran (or an empty one), never the in-process
    live check (`Loaded.prove` runs only when no check is set)."""
    from .proof import Result

    t.earning = earn
    earn.check = proof if proof is not None else Result()
    earn.proven = set(earn.check.proven) if earn.check.ok else set()
    earn.constants_check = constants_seen(earn.check)
    return t


def constants_seen(result):
    """The constants a check in the process saw, in the form `runtime.constants.earned` reads (`ok`,
    `proven`: (PROVEN, name) each), so that it never runs the in-process check for a remote table."""
    from types import SimpleNamespace

    from ..runtime.constants import PROVEN

    seen = getattr(result, "proven_constants", set()) if result.ok else set()
    return SimpleNamespace(ok=result.ok, proven={(PROVEN, n) for n in seen},
                           summary=lambda: f"{len(seen)} constants seen in the process")


def choose(ident, prove: Optional[Callable] = None, strict: bool = False, candidates: Optional[list] = None) -> Choice:
    """The table for `ident` (an `identify.Identity`); `prove(table) -> proof.Result` checks a table
    in the target's memory (default: in the binary's file data, `proof.check_file`).
    `NoMatchingTable` when none is earned."""
    if prove is None:
        from .proof import check_file

        def prove(t):
            return check_file(t, ident)
    found = entries(ident) if candidates is None else candidates
    if ident.build_id:
        hits = [e for e in found if ident.build_id in (e.get("build_ids") or ())]
        if hits:
            e = hits[0]
            t = _settle(_load_entry(e), Earning(True, True, f"it records this binary's build-id {ident.build_id}"))
            return Choice(t, "exact", "build-id", f"{t.name} records the build-id {ident.build_id} of "
                                                  f"{ident.binary}")
    if ident.version is None:
        raise NoMatchingTable(f"{ident.binary}: its version could not be read ({ident.version_from}) and no table "
                              f"records its build-id {ident.build_id}; {how_to_scan(ident)}")
    me = ident.me()
    exact, why = [], []
    for e in found:
        earn = earning(entry_build(e), me)
        if earn.exact:
            exact.append((e, earn))
        elif e["hexversion"] >> 16 == ident.hexversion >> 16 and e["triple"] == ident.triple:
            why.append(f"{e['name']}: {earn.why}")
    if exact:
        loaded = [_settle(_load_entry(e), earn) for e, earn in exact]
        loaded.sort(key=lambda t: (t.earning.sources, len(t.order)), reverse=True)
        t = loaded[0]
        t.fallbacks = loaded[1:]
        by = "headers" if me.get("inputs") else "package"
        return Choice(t, "exact", by, f"{t.name}: {t.earning.why}")
    near = sorted((e for e in found if e["hexversion"] >> 16 == ident.hexversion >> 16 and
                   (identity.flag_set(e["config"]), e["triple"], e["pointer_size"]) ==
                   (identity.flag_set(ident.config), ident.triple, ident.pointer_size)),
                  key=lambda e: (abs(e["hexversion"] - ident.hexversion), (e.get("vendor") or identity.UPSTREAM) !=
                                 (ident.vendor or identity.UPSTREAM), -e["hexversion"], e["name"]))
    failures = []
    where = "in the process" if ident.pid else "in the binary"
    if near and strict:
        failures.append("OFFSETS_STRICT allows exact tables only")
    else:
        for e in near:
            t = _load_entry(e)
            result = prove(t)
            if result.ok:
                earn = earning(entry_build(e), me)
                _settle(t, earn, result)
                return Choice(t, "proven", "memory" if ident.pid else "binary",
                              f"{t.name} is not exactly this build ({earn.why}); it answers only the "
                              f"{len(earn.proven)} fields and sizes read {where} ({result.summary()})", result)
            failures.append(f"{e['name']} failed the check {where}: {result.summary()}")
    raise NoMatchingTable(f"no table fits {describe(ident)}: " + "; ".join(failures + why or ["no table of this "
                          "minor version, layout flags, target and pointer size"]) + f"; {how_to_scan(ident)}")


def describe(ident) -> str:
    b = {"version": ident.version or "?", "vendor": ident.vendor, "config": ident.config,
         "target": {"triple": ident.triple, "pointer_size": ident.pointer_size}}
    return f"{describe_build(b)} in {ident.binary}" + (f" (process {ident.pid})" if ident.pid else "")


def how_to_scan(ident) -> str:
    """The command that makes this build's own table from its own files (under /proc/PID/root)."""
    root = ident.root
    minor = ident.minor or "3.X"
    if ident.prefix and ident.include:
        cmd = f"offsets scan --prefix {root}{ident.prefix} --install"
        if ident.vendor:
            cmd += f" --vendor '{ident.vendor}'"
        return (f"make its own table from its files with `{cmd}` (in an environment with `pip install "
                f"'offsets[scan]'`), then run this again")
    where = f"{root}{ident.prefix}" if ident.prefix else f"the prefix of {root}{ident.binary}"
    pkg = f" (Debian: libpython{minor}-dev={ident.vendor.split()[1]})" if ident.vendor and \
        ident.vendor.startswith(("debian ", "ubuntu ")) else ""
    return (f"its headers are not installed under {where}: install them{pkg} where it runs, then make its own table "
            f"with `offsets scan --prefix {where} --install`")
