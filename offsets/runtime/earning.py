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

import os

from ..layout.build_identity import PYCONFIG, UPSTREAM, distributor, source_dependent
from ..layout.build_identity import BuildIdentity


class Earning:
    """How a table's answers are earned for one build: `by` is how it may be exact ('build-id',
    'inputs', 'package', or None: never), and `exact(table, key)` says it struct by struct (kept).
    `check`/`proven`: the proof, once run (`prover(table)` runs it: in this process, or in another's
    memory)."""

    def __init__(self, by, why: str, build: BuildIdentity = None, me: BuildIdentity = None, prover=None) -> None:
        self.by, self.why = by, why
        self.build, self.me = build, me     # the table's build, and the build it answers for
        self.prover = prover
        self.check = None            # a proof's Result, once run
        self.constants_check = None  # the proof of its constants, once run (constants.prove)
        self.proven: set = set()     # (struct key, path) read; (struct key, None): its size
        self._exact: dict = {}
        self._whole = None

    @property
    def exact(self) -> bool:
        """Whether any of the table's answers can be exact for this build."""
        return self.by is not None

    @property
    def same_vendor(self) -> bool:
        return self.build is not None and self.me is not None and self.build.vendor == self.me.vendor

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
            return self.whole() and (self.same_vendor or not source_dependent(row.defined_in, row.origin))
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
            return f"{key} is a struct of {row.defined_in.rsplit(':', 1)[0]}, {self.vendor_words()}"
        return f"{key} {self.set_difference(t, deps)}"

    def vendor_words(self) -> str:
        return (f"which only the same vendor vouches for: the table's is {self.build.vendor}, "
                f"this build's {self.me.vendor}")

    def set_difference(self, t, deps) -> str:
        """What of a dependency set differs here ('' if nothing does)."""
        leaves, files, source = deps
        if source and not self.same_vendor:
            return f"depends on files of the source tree, {self.vendor_words()}"
        view, mine = t.depends, self.me.files
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
        """Whether constant `row` (a `compact_read.ConstantRow`) of table `t` is exact here."""
        if self.by in ("build-id", "package"):
            return True
        if self.by != "inputs":
            return False
        name, value, defined_in = row.name, row.value, row.defined_in
        if defined_in == PYCONFIG:
            return integer(self.me.files.leaf(name.split("@", 1)[0])) == value
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
        mine = self.me.files
        return all(mine.leaf(n) == view.values[n] for n in leaves) and \
            all(mine.digest(f, len(view.digests[f])) == view.digests[f] for f in files)

    def whole(self) -> bool:
        """The old rule, for what has no set: the whole build's inputs are the table's (computed once)."""
        if self._whole is None:
            mine, inputs = self.me.whole(), self.build.inputs
            self._whole = bool(mine) and (inputs.get("pyconfig_h"), inputs.get("headers")) == \
                (mine.get("pyconfig_h"), mine.get("headers")) and self.build.defines == mine.get("defines")
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


def earning(b: BuildIdentity, me: BuildIdentity, prover=None) -> Earning:
    """How a table whose build is `b` earns its answers for the build `me` (the runtime's
    `identity()`, or a remote Identity.me(): with `files` and `build_id`)."""
    if (b.version, b.hexversion, b.flags, b.triple, b.pointer_size) != \
            (me.version, me.hexversion, me.flags, me.triple, me.pointer_size):
        return Earning(None, f"it is for {b.describe()}", b, me, prover)
    if me.build_id and me.build_id in b.build_ids:
        return Earning("build-id", f"it records this binary's build-id {me.build_id}", b, me, prover)
    if me.files is not None and me.files.available:
        if b.defines is None:
            return Earning(None, "the defines its core was compiled with are not known", b, me, prover)
        return Earning("inputs", "same version, flags and target; each struct exact where the macros and headers "
                                 "it depends on are this build's", b, me, prover)
    if distributor(me.vendor) != UPSTREAM and b.vendor == me.vendor:
        return Earning("package", f"same package ({me.vendor}; no headers installed to compare)", b, me, prover)
    return Earning(None, "this build has no headers installed to compare with, and no distributor package of the "
                         f"table's vendor ({b.vendor}) claims it", b, me, prover)


def by_build_id_alone(b: BuildIdentity, shown: BuildIdentity, build_id: str, prover=None):
    """Rule 1 before the rest of the identity is known (core.Runtime.by_build_id, a first lookup):
    an Earning by build-id where table build `b` records `build_id`, the binary's that holds the
    interpreter, and is for what the interpreter shows of its build (`identity.running_shown()`: its
    version, hexversion, pointer size and the layout flags it shows, `shown.shown`); else None. The
    triple and the flags it does not show are the table's: the same build-id is the same binary,
    which fixed them. The whole rule (`earning`) compares them with sysconfig's, which takes the
    same table first."""
    if (b.version, b.hexversion, b.pointer_size) != (shown.version, shown.hexversion, shown.pointer_size):
        return None
    if any(b.on(flag) != bool(value) for flag, value in shown.shown.items()):
        return None
    if not build_id or build_id not in b.build_ids:
        return None
    me = shown.replace(config=b.config, triple=b.triple, build_id=build_id, shown=None)
    return Earning("build-id", f"it records this binary's build-id {build_id}", b, me, prover)


def entry_build(e: dict) -> BuildIdentity:
    """An index entry's build."""
    return BuildIdentity.of_entry(e)


def strict_mode() -> bool:
    """OFFSETS_STRICT is on (exact answers only) for any value but empty, 0, false and no (any case)."""
    return os.environ.get("OFFSETS_STRICT", "").strip().lower() not in ("", "0", "false", "no")
