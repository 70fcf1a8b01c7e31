"""How a table earns its answers for the running interpreter: exact (the same layout inputs) or not.

`earning(build, me)` compares a table's build (its compact header's `build`) with the running
identity (`identity.running()`); a table that is not exact answers only what the live check
proves (`Loaded.earned`).
"""
from __future__ import annotations

from ..layout import identity


class Earning:
    """How a table's answers are earned in this process: which structs are exact, and which fields
    the live check proved (filled on first need)."""

    def __init__(self, headers: bool, sources: bool, why: str) -> None:
        self.headers, self.sources, self.why = headers, sources, why
        self.check = None            # live.Result, once run
        self.proven: set = set()     # (struct key, path) read live; (struct key, None): its size

    @property
    def exact(self) -> bool:
        return self.headers


def earning(b: dict, me: dict) -> Earning:
    """Compare a table's build `b` (compact form) with the running identity `me`."""
    t = b["target"]
    same = (b["version"], b["hexversion"], identity.flag_set(b["config"]), t["triple"], t["pointer_size"]) == \
           (me["version"], me["hexversion"], identity.flag_set(me["config"]), me["triple"], me["pointer_size"])
    if not same:
        return Earning(False, False, f"it is for {describe_build(b)}")
    mine, inputs = me.get("inputs"), b.get("inputs") or {}
    vendor = me.get("vendor") or identity.UPSTREAM
    if mine:
        if (inputs.get("pyconfig_h"), inputs.get("headers")) != (mine["pyconfig_h"], mine["headers"]):
            return Earning(False, False, "its pyconfig.h or headers differ from the ones this interpreter installed "
                                         "(another vendor or configuration)")
        if b.get("defines") != mine["defines"]:
            return Earning(False, False, f"its core was compiled with defines {b.get('defines')}, this one with "
                                         f"{mine['defines']}")
        same_vendor = b.get("vendor", identity.UPSTREAM) == vendor
        return Earning(True, same_vendor, "same version, flags, target, defines and header digests" +
                       ("" if same_vendor else f"; its .c structs are {b.get('vendor')}'s, this is {vendor}"))
    if me.get("vendor") and b.get("vendor") == me["vendor"]:
        return Earning(True, True, f"same package ({me['vendor']}; no headers installed to compare digests)")
    return Earning(False, False, "this interpreter has no headers installed to compare digests with, and no "
                                 f"distributor package of the table's vendor ({b.get('vendor')}) claims it")


def describe_build(b: dict) -> str:
    flags = ", ".join(identity.flag_set(b["config"])) or "release"
    return (f"CPython {b['version']} ({b.get('vendor') or identity.UPSTREAM}, {flags}, {b['target']['triple']}, "
            f"{b['target']['pointer_size']}-byte pointers)")


def describe(me: dict) -> str:
    return describe_build(dict(me, target={"triple": me["triple"], "pointer_size": me["pointer_size"]}))


