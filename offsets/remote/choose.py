"""The table for a build read from another process (or a binary), and how its answers are earned:
the runtime's one rule (runtime/choice.py and runtime/earning.py, docs/identity.md), which this
module only calls, with what the binary and its files say in place of `sys` and `sysconfig`:

1. **exact**: a table that records the GNU build-id of this very binary (verified against it, or
   made for it by `offsets scan --install`): every struct; else the tables of its version, flags,
   target and pointer size, struct by struct, by the headers installed beside the binary (each
   struct's dependency set), or, without headers, the same distributor package version;
2. **proven**: what a check in the target's memory read (`proof.py`), through the first table of 1
   whose proof passes, else the nearest table of the same minor version, flags, target and pointer
   size whose check passes;
3. otherwise refused (`NoMatchingTable`), with the command that makes the build's own table from
   its files under `/proc/PID/root`.

Tables are this machine's own (`offsets scan --install`, `$OFFSETS_TABLES`) and the shipped ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import NoMatchingTable
from ..layout import identity
from ..layout.build_identity import BuildIdentity
from ..runtime.earning import Earning
from ..runtime.tables import installed_entries, shipped_index, _load_entry


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
    own = installed_entries(ident.me()) if ident.version else []
    return own + shipped_index()["tables"]


def _settle(t, earn: Earning, proof=None):
    """Give a remote table its earning; the proof that ran, if any (else its prover runs it when an
    answer needs it: never the in-process live check, `Loaded.prove`)."""
    t.earning = earn
    if proof is not None:
        earn.check = proof
        earn.proven = set(proof.proven) if proof.ok else set()
        earn.constants_check = constants_seen(proof)
    return t


def constants_seen(result):
    """The constants a check in the process saw, in the form `runtime.constants.earned` reads (`ok`,
    `proven`: (PROVEN, name) each), so that it never runs the in-process check for a remote table."""
    from types import SimpleNamespace

    from ..runtime.constants import PROVEN

    seen = result.proven_constants if result.ok else set()
    return SimpleNamespace(ok=result.ok, proven={(PROVEN, n) for n in seen},
                           summary=lambda: f"{len(seen)} constants seen in the process")


def choose(ident, prove: Optional[Callable] = None, strict: bool = False, candidates: Optional[list] = None) -> Choice:
    """The table for `ident` (an `identify.Identity`), by the runtime's one rule (runtime/choice.py):
    `prove(table) -> proof.Result` checks a table in the target's memory (default: in the binary's
    file data, `proof.check_file`). `NoMatchingTable` when none is earned."""
    from ..runtime import choice

    if prove is None:
        from .proof import check_file

        def prove(t):
            return check_file(t, ident)
    found = entries(ident) if candidates is None else candidates
    if ident.version is None:
        hits = [e for e in found if ident.build_id and ident.build_id in (e.get("build_ids") or ())]
        if not hits:
            raise NoMatchingTable(f"{ident.binary}: its version could not be read ({ident.version_from}) and no table "
                                  f"records its build-id {ident.build_id}; {how_to_scan(ident)}")
        e = hits[0]
        ident.version, ident.hexversion = e["version"], e["hexversion"]
    me = ident.me()
    where = "in the process" if ident.pid else "in the binary"

    def settled(e):
        return _load_entry(e)

    chosen, why = choice.exact_chain(me, found, settled, _prover(prove), strict)
    if chosen is not None:
        t = chosen.table
        for x in [t] + t.fallbacks:
            _settle(x, x.earning)
        by = {"inputs": "headers"}.get(chosen.by, chosen.by)
        detail = (f"{t.name} records the build-id {ident.build_id} of {ident.binary}" if chosen.by == "build-id"
                  else f"{t.name}: {t.earning.why}")
        return Choice(t, "exact", by, detail)
    chosen = choice.proven(me, found, settled, _prover(prove), strict, why, check=f"the check {where}",
                           refusal=lambda w: NoMatchingTable(f"no table fits {describe(ident)}: {w}; {how_to_scan(ident)}"))
    t = chosen.table
    _settle(t, t.earning, chosen.proof)
    return Choice(t, "proven", "memory" if ident.pid else "binary",
                  f"{t.name} is not exactly this build ({t.earning.why}); it answers only the "
                  f"{len(t.earning.proven)} fields and sizes read {where} ({chosen.proof.summary()})", chosen.proof)


def _prover(prove):
    """A proof in the target's memory as an earning's prover: its constants seen kept for them too."""
    def run(t):
        result = prove(t)
        t.earning.constants_check = constants_seen(result)
        return result
    return run


def describe(ident) -> str:
    b = BuildIdentity(ident.version or "?", ident.hexversion or 0, ident.config, ident.triple, ident.pointer_size,
                      ident.vendor)
    return f"{b.describe()} in {ident.binary}" + (f" (process {ident.pid})" if ident.pid else "")


def how_to_scan(ident) -> str:
    """The command that makes this build's own table from its own files (under /proc/PID/root)."""
    root = ident.root
    minor = ident.minor or "3.X"
    if ident.prefix and ident.include:
        cmd = f"offsets scan --prefix {root}{ident.prefix} --install"
        if ident.vendor:
            cmd += f" --vendor '{ident.vendor}'"
        return (f"make its own table from its files with `{cmd}` (in an environment with `pip install "
                f"'cpython-offsets[scan]'`), then run this again")
    where = f"{root}{ident.prefix}" if ident.prefix else f"the prefix of {root}{ident.binary}"
    pkg = f" (Debian: libpython{minor}-dev={ident.vendor.split()[1]})" if ident.vendor and \
        ident.vendor.startswith(("debian ", "ubuntu ")) else ""
    return (f"its headers are not installed under {where}: install them{pkg} where it runs, then make its own table "
            f"with `offsets scan --prefix {where} --install`")
