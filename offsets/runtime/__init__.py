"""The runtime API: where a field is in the interpreter that is running, or a clear refusal.

    offsets.get("listiterobject.it_index")    # byte offset (a bitfield: its storage unit's)
    offsets.sizeof("listiterobject")          # struct size
    offsets.field("PyASCIIObject.state.kind") # the field: offset, size, type, bits, ... and `earned`
    offsets.build()                           # the table in use, how it matched, how each struct is earned
    offsets.use_table("mine.yaml")            # a table of your own (a patched or forked CPython)
    offsets.runtime.reset()                   # forget the choice: the next lookup chooses again

Every answer is earned (docs/identity.md), one of:

- **exact**: the table's identity is this build's (identity.py): version, layout flags, target,
  and the digests of `pyconfig.h` and every header plus the core's layout defines, compared with
  the headers this interpreter has installed; without installed headers, the distributor's
  package version instead. Structs of `.c` files (or DWARF) also need the same vendor.
- **proven**: the live check (`live/`) read that very field (or that struct's size) in
  this process and found what the table says.

Nothing else is answered: a table of another patch level, vendor or CPU answers only what the live
check proved, and `OFFSETS_STRICT` (any value but empty, 0, false, no) allows exact answers only.
Tables are looked for in this order: this build's own table, made by
`offsets scan --python PY --install` into `$OFFSETS_TABLES` or the user cache
(`~/.cache/offsets/tables`); the shipped compact tables (`compact.py`); and, when the running
interpreter has its headers and the scanner is importable, a table made now from its own headers
(once per build on the machine, in a child process that is a real interpreter of this build, under
a time limit: autoscan.py; it is installed like the first kind; `OFFSETS_AUTOSCAN=0` turns that off).

Nothing here imports yaml or clang or parses YAML, and what every process that loads a JIT runs
imports as little as it can (no subprocess, threading or dataclasses, and errors.py only to raise
one of its errors: a `.pth` file or `-X presite` runs it in every interpreter a deployment starts).
This module is the public API over one runtime object (`core.RUNTIME`: its lock, the table in use,
the answers kept). `get` and `sizeof` are the `__getitem__` of its dicts, filled on demand under its
lock, so a known name costs one C-level dict lookup, and after `use_table()` returns no thread gets
an answer of the old table. A forked child starts with a fresh lock (a lock another thread held at
fork time cannot block it), imports again what another thread had half imported (and sysconfig's
half-made config vars), and keeps the table already chosen.
"""

import os
import sys

# what a table earns and the one runtime object (also read as runtime.X by the CLI and the tests; the
# tables' names too, from tables.py, which a first lookup by build-id does not import: `__getattr__`)
from ..layout.build_identity import BuildIdentity, tables_dir
from .earning import earning as _earning, entry_build, strict_mode
from .core import RUNTIME, load_compact, load_shipped, prove_constants_here, prove_here

#: tables.py's names this module offers (runtime.shipped_index() & co.), imported when first asked for
_TABLES = ("tables", "Loaded", "installed_entries", "shipped_index", "_load_entry", "PACKAGE_DIR")


def earning(b: BuildIdentity, me: BuildIdentity, prover=None):
    """How a table of build `b` earns its answers for build `me` (earning.py's one rule), proven by
    `prover`, by default this process's live check (`prove_here`)."""
    return _earning(b, me, prover or prove_here)


def running_identity() -> BuildIdentity:
    """This interpreter's identity, computed once (`core.Runtime.identity`)."""
    return RUNTIME.identity()


def select(me: BuildIdentity, entries: list, load=None, check=None, strict: bool = False, autoscan=None):
    """(table, Match) for identity `me` among `entries` (`core.Runtime.select`: choice.py's one rule)."""
    return RUNTIME.select(me, entries, load, check, strict, autoscan)


def __getattr__(name):
    if name in _TABLES:
        from .tables import Loaded         # noqa: F401 (imports it; `from . import tables` would ask here again)

        tables = sys.modules[__name__ + ".tables"]
        return tables if name == "tables" else getattr(tables, name)
    if name == "EarnedField":
        from .earned_field import EarnedField

        return EarnedField
    if name == "Match":             # match.py, which a first lookup by build-id never imports
        from .match import Match

        return Match
    if name == "identity":          # identity.py, which a first lookup by build-id never imports
        from ..layout import identity

        return identity
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _public(table: dict, name: str, doc: str):
    """`table.__getitem__` as offsets.`name`, with `doc`: the same kind of builtin function, made by
    `offsets._lookup` (called as fast); the bound method itself where that module cannot be imported."""
    try:
        from .._lookup import function
    except ImportError:
        return table.__getitem__
    return function(table, name, doc)


get = _public(RUNTIME.offsets, "get", """get(name) -> int

The byte offset of STRUCT.FIELD in this interpreter (a bitfield: its storage unit's; offsets.field()
gives its bits). FIELD is the offsetof() designator (PyTypeObject.ob_base.ob_base.ob_type); the
struct may be named by its typedef, its tag or an alias (listiterobject is 3.12's _PyListIterObject),
and as NAME@FILE where the build gives the name two layouts.

Raises offsets.UnknownNameError (a KeyError naming the closest names) for a name this build lacks,
offsets.NoMatchingTable when no table earns the answer for this build (docs/identity.md).""")
sizeof = _public(RUNTIME.sizes, "sizeof", """sizeof(struct) -> int

The size in bytes of a struct or union in this interpreter (typedef, tag and alias names work).
Raises offsets.UnknownNameError or offsets.NoMatchingTable as offsets.get() does.""")
constant = _public(RUNTIME.constants, "constant", """constant(name) -> int

The value of an enumerator or integer-constant macro of CPython's own files in this interpreter
(FRAME_OWNED_BY_GENERATOR, Py_TPFLAGS_HEAPTYPE, PyLong_SHIFT); NAME@FILE where the build gives one
name two values. offsets.constant_info() adds its C type, width and file. Raises
offsets.UnknownNameError or offsets.NoMatchingTable as offsets.get() does.""")


def field(name: str):
    """The field STRUCT.FIELD (a `model.Field` with `earned`: 'exact' or 'proven')."""
    from .earned_field import EarnedField

    return RUNTIME.field(name, EarnedField)


def constant_info(name: str):
    """The constant NAME: value, C type, size, signedness, where it is defined, kind and `earned`."""
    from .constants import EarnedConstant

    with RUNTIME.lock:
        t, row, how = RUNTIME.constant(name, "constant_info")
        return EarnedConstant(*row, earned=how)


def build() -> "Match":
    """The table in use: its name, build identity, how it matched, and `earned(struct)`."""
    return RUNTIME.build()


def use_table(path, verify: bool = True) -> "Match":
    """Use the table at `path` (`offsets scan` YAML, or a compact .jsonl) from now on, for Python and C.

    It must be for this interpreter's minor version, layout flags, target and pointer size
    (TableError otherwise). Its answers are earned as the shipped tables' are: exact when its
    identity (digests included) is this build's, else only what the live check proves (which must
    pass: VerifyError otherwise; OFFSETS_STRICT refuses such a table). `verify` also runs the live
    check on an exact table.
    """
    from .user_table import use_table as use

    return use(RUNTIME, path, verify)


def reset() -> None:
    """Forget the table in use, the answers kept and this interpreter's identity: the next lookup
    chooses again, as a process's first one does (a table installed meanwhile by `offsets scan
    --install` is then found). For tests, which each begin as a fresh process would."""
    RUNTIME.reset()


def current_table():
    """The table in use as a full `model.Table`, with only the structs it answers exactly: for the CLI."""
    from ..layout.compact import table_of

    t = RUNTIME.current()
    return table_of(t.head, t.pool, [k for k in t.order if t.exact(k)])


def current_layouts(t: "Loaded"):
    """A loaded table as a full `model.Table`: every struct decoded and checked."""
    from ..layout.compact import table_of

    return table_of(t.head, t.pool)


def live_check(table: "Loaded" = None):
    """Run the live check (`live/runner.py`) of a table (default: the one in use) against this process."""
    from .live.runner import check

    return check(table or RUNTIME.current())


def get_include() -> str:
    """The directory holding pyoffsets.h (installed: inside the package; a checkout: headers/)."""
    from .tables import PACKAGE_DIR

    for d in (os.path.join(PACKAGE_DIR, "include"), os.path.join(os.path.dirname(PACKAGE_DIR), "headers")):
        if os.path.isfile(os.path.join(d, "pyoffsets.h")):
            return d
    from ..errors import OffsetsError

    raise OffsetsError(f"pyoffsets.h is in neither {PACKAGE_DIR}/include nor the checkout's headers/: reinstall cpython-offsets")


def _chosen():
    """The table in use as the C API's capsule keeps it (_offsets.c calls this)."""
    return RUNTIME.chosen()


def read_needs(path: str) -> list:
    """The names of a needs list: a JSON list, or one name a line (`#` starts a comment)."""
    from .command import read_needs

    return read_needs(path)


def main(argv=None) -> int:
    """`python -m offsets.runtime NAME...` (command.py)."""
    from .command import main

    return main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
