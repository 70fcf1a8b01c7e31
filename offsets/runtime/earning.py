"""How a table earns its answers for a build: the one rule (docs/identity.md), for the running
interpreter (runtime/core.py) and for another process or a binary (remote/choose.py) alike.

A table answers a struct **exact** when it is for the build's version, hexversion, layout flags,
triple and pointer size, and

1. **by build-id**: it records the GNU build-id of the binary that holds the interpreter: every
   struct, whatever the headers, pyconfig.h or vendor records say;
2. **by inputs**: the build has its headers installed (`identity.InstalledFiles`), and the struct's
   dependency set (scan/depends.py) has the same values there: every leaf macro
   (`identity.leaf_value` of its pyconfig.h and its core's defines) and every installed file's
   digest; a set that holds files of the source tree also needs the same vendor (only it vouches
   for them). A struct without a set (its text was not at hand: filled from DWARF, or a table made
   before sets) needs the whole build's inputs: the same pyconfig.h and headers digests and layout
   defines, and, a struct of a `.c` file, the same vendor;
3. **by package**: no headers installed, and the table is the same distributor's package version.

A constant is earned the same way: one of pyconfig.h by its own value in the build's pyconfig.h,
one of an installed header by that header's set, any other by the whole build's inputs and the
same vendor. Anything not exact is answered only where a proof read it (`Loaded.earned`).
"""
from __future__ import annotations

import os

from ..layout import identity


class Earning:
    """How a table's answers are earned for one build: `by` is how it may be exact ('build-id',
    'inputs', 'package', or None: never), and `exact(table, key)` says it struct by struct (kept).
    `check`/`proven`: the proof, once run (`prover(table)` runs it: in this process, or in another's
    memory)."""

    def __init__(self, by, why: str, build: dict = None, me: dict = None, prover=None) -> None:
        self.by, self.why = by, why
        self.build, self.me = build or {}, me or {}
        self.prover = prover
        self.check = None            # a proof's Result, once run
        self.proven: set = set()     # (struct key, path) read; (struct key, None): its size
        self._exact: dict = {}
        self._whole = None

    @property
    def exact(self) -> bool:
        """Whether any of the table's answers can be exact for this build."""
        return self.by is not None

    @property
    def same_vendor(self) -> bool:
        return (self.build.get("vendor") or identity.UPSTREAM) == (self.me.get("vendor") or identity.UPSTREAM)

    def struct(self, t, key: str) -> bool:
        """Whether struct `key` of table `t` (a `tables.Loaded`) is exact here."""
        got = self._exact.get(key)
        if got is None:
            got = self._exact[key] = self._struct(t, key)
        return got

    def _struct(self, t, key: str) -> bool:
        if self.by in ("build-id", "package"):
            return True
        if self.by != "inputs":
            return False
        deps = t.dependency_set(key)
        if deps is None:
            row = t.row(key)
            return self.whole() and (self.same_vendor or not identity.source_dependent(row[4], row[5]))
        return self.same_set(t, deps)

    def why_not(self, t, key: str) -> str:
        """Why struct `key` of table `t` is not exact here, for a refusal."""
        if self.by != "inputs":
            return self.why
        deps = t.dependency_set(key)
        if deps is None:
            row = t.row(key)
            if not self.whole():
                return (f"{key} has no dependency set (its text was not at hand) and this build's pyconfig.h, headers "
                        f"or core defines are not the table's")
            return f"{key} is a struct of {row[4].rsplit(':', 1)[0]}, {self.vendor_words()}"
        return f"{key} {self.set_difference(t, deps)}"

    def vendor_words(self) -> str:
        return (f"which only the same vendor vouches for: the table's is {self.build.get('vendor') or identity.UPSTREAM}, "
                f"this build's {self.me.get('vendor') or identity.UPSTREAM}")

    def set_difference(self, t, deps) -> str:
        """What of a dependency set differs here ('' if nothing does)."""
        leaves, files, source = deps
        if source and not self.same_vendor:
            return f"depends on files of the source tree, {self.vendor_words()}"
        view, mine = t.depends, self.me["files"]
        for n in leaves:
            if mine.leaf(n) != view.values[n]:
                return (f"depends on the macro {n}, which is {_value(view.values[n])} in the table and "
                        f"{_value(mine.leaf(n))} in this build")
        for f in files:
            if mine.digest(f, len(view.digests[f])) != view.digests[f]:
                got = "missing" if mine.digest(f) is None else "another text"
                return f"depends on {f}, which is {got} in this build's headers"
        return ""

    def constant(self, t, row) -> bool:
        """Whether constant `row` ([name, value, type, size, defined_in, kind]) of table `t` is exact here."""
        if self.by in ("build-id", "package"):
            return True
        if self.by != "inputs":
            return False
        name, value, defined_in = row[0], row[1], row[4]
        if defined_in == identity.PYCONFIG:
            return integer(self.me["files"].leaf(name.split("@", 1)[0])) == value
        deps = t.constant_set(defined_in) if defined_in.startswith("Include/") else None
        if deps is None:
            return self.whole() and (self.same_vendor or defined_in.startswith("Include/"))
        return self.same_set(t, deps)

    def same_set(self, t, deps) -> bool:
        """Whether a dependency set (leaves, installed files, has source files) has this build's values."""
        leaves, files, source = deps
        if source and not self.same_vendor:
            return False
        view = t.depends
        mine = self.me["files"]
        return all(mine.leaf(n) == view.values[n] for n in leaves) and \
            all(mine.digest(f, len(view.digests[f])) == view.digests[f] for f in files)

    def whole(self) -> bool:
        """The old rule, for what has no set: the whole build's inputs are the table's (computed once)."""
        if self._whole is None:
            mine = self.me.get("inputs") or {}
            if not mine and self.me.get("whole_inputs"):
                mine = self.me["inputs"] = self.me["whole_inputs"]()
            inputs = self.build.get("inputs") or {}
            self._whole = bool(mine) and (inputs.get("pyconfig_h"), inputs.get("headers")) == \
                (mine.get("pyconfig_h"), mine.get("headers")) and self.build.get("defines") == mine.get("defines")
        return self._whole


def _value(v) -> str:
    return "undefined" if v is None else f"defined as {v!r}" if v else "defined empty"


def integer(text):
    """The value of a pyconfig.h macro's body when it is a plain integer literal (`1`, `8`,
    `0x10`, `64L`), else None."""
    if text is None:
        return None
    body = text.strip().rstrip("uUlL")
    try:
        return int(body, 0)
    except ValueError:
        return None


def earning(b: dict, me: dict, prover=None) -> Earning:
    """How a table whose build is `b` (the compact header's `build` form) earns its answers for the
    build `me` (identity.running(), or a remote Identity.me(): with `files`, an
    `identity.InstalledFiles` or None, and `build_id`)."""
    t = b["target"]
    same = (b["version"], b["hexversion"], identity.flag_set(b["config"]), t["triple"], t["pointer_size"]) == \
           (me["version"], me["hexversion"], identity.flag_set(me["config"]), me["triple"], me["pointer_size"])
    if not same:
        return Earning(None, f"it is for {describe_build(b)}", b, me, prover)
    build_id = me.get("build_id")
    if build_id and build_id in (x[0] for x in b.get("binaries") or ()):
        return Earning("build-id", f"it records this binary's build-id {build_id}", b, me, prover)
    files = me.get("files")
    if files is not None and files.available:
        if b.get("defines") is None:
            return Earning(None, "the defines its core was compiled with are not known", b, me, prover)
        return Earning("inputs", "same version, flags and target; each struct exact where the macros and headers "
                                 "it depends on are this build's", b, me, prover)
    if me.get("vendor") and identity.distributor(me["vendor"]) != identity.UPSTREAM and b.get("vendor") == me["vendor"]:
        return Earning("package", f"same package ({me['vendor']}; no headers installed to compare)", b, me, prover)
    return Earning(None, "this build has no headers installed to compare with, and no distributor package of the "
                         f"table's vendor ({b.get('vendor') or identity.UPSTREAM}) claims it", b, me, prover)


def by_build_id_alone(b: dict, shown: dict, build_id: str, prover=None):
    """Rule 1 before the rest of the identity is known (core.Runtime.by_build_id, a first lookup):
    an Earning by build-id where table build `b` records `build_id`, the binary's that holds the
    interpreter, and is for what the interpreter shows of its build (`identity.running_shown()`: its
    version, hexversion, pointer size and the layout flags it shows); else None. The triple and the
    flags it does not show are the table's: the same build-id is the same binary, which fixed them.
    The whole rule (`earning`) compares them with sysconfig's, which takes the same table first."""
    t, on = b["target"], identity.flag_set(b["config"])
    if (b["version"], b["hexversion"], t["pointer_size"]) != (shown["version"], shown["hexversion"],
                                                             shown["pointer_size"]):
        return None
    if any((flag in on) != bool(value) for flag, value in shown["shown"].items()):
        return None
    if not build_id or build_id not in (x[0] for x in b.get("binaries") or ()):
        return None
    me = dict(shown, config=dict(b["config"]), triple=t["triple"], build_id=build_id)
    return Earning("build-id", f"it records this binary's build-id {build_id}", b, me, prover)


def entry_build(e: dict) -> dict:
    """An index entry in the compact header's `build` form."""
    return {"version": e["version"], "hexversion": e["hexversion"], "config": e["config"],
            "target": {"triple": e["triple"], "pointer_size": e["pointer_size"]}, "vendor": e.get("vendor"),
            "defines": e.get("defines"), "inputs": e.get("inputs") or {},
            "binaries": [[b, "", ""] for b in e.get("build_ids") or ()]}


def describe_build(b: dict) -> str:
    flags = ", ".join(identity.flag_set(b["config"])) or "release"
    return (f"CPython {b['version']} ({b.get('vendor') or identity.UPSTREAM}, {flags}, {b['target']['triple']}, "
            f"{b['target']['pointer_size']}-byte pointers)")


def describe(me: dict) -> str:
    return describe_build(dict(me, target={"triple": me["triple"], "pointer_size": me["pointer_size"]}))


def strict_mode() -> bool:
    """OFFSETS_STRICT is on (exact answers only) for any value but empty, 0, false and no (any case)."""
    return os.environ.get("OFFSETS_STRICT", "").strip().lower() not in ("", "0", "false", "no")
