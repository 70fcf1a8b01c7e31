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
imports as little as it can (no subprocess, threading or dataclasses: a `.pth` file or `-X presite`
runs it in every interpreter a deployment starts). `get` and `sizeof` are the `__getitem__` of
dicts filled on demand under a lock, so a known name costs one C-level dict lookup, and after
`use_table()` returns no thread gets an answer of the old table. A forked child starts with a fresh
lock (a lock another thread held at fork time cannot block it), imports again what another thread
had half imported (and sysconfig's half-made config vars), and keeps the table already chosen.
"""
from __future__ import annotations

import os
import sys
from _thread import RLock, get_ident

from ..layout import identity
from ..errors import NoMatchingTable, OffsetsError, TableError, UnknownNameError, close_matches
# what a table earns, and the tables (also read as runtime.X by the CLI and the tests)
from .earning import describe, describe_build, earning as _earning, entry_build
from . import tables as _tables
from .tables import PACKAGE_DIR, Loaded, installed_entries, shipped_index, tables_dir, _load_entry

_lock = RLock()


def prove_here(table):
    """The prover this runtime hands every table it chooses: the live check in this process
    (`live/runner.py`), kept per binary (`proof_cache.py`)."""
    from .proof_cache import check

    return check(table)


def prove_constants_here(table):
    """The proof of a table's constants this runtime hands `constants.py`: the live check of
    constants in this process (`live/constants.py`)."""
    from .live.runner import check_constants

    return check_constants(table)


def load_compact(path: str, head_sha256: str = None, pool_sha256: str = None) -> Loaded:
    """A compact table (tables.load_compact), handed this process's live check as its prover."""
    return _tables.load_compact(path, head_sha256, pool_sha256, prove_here)


def load_shipped(entry: dict) -> Loaded:
    """A shipped table (tables.load_shipped), handed this process's live check as its prover."""
    return _tables.load_shipped(entry, prove_here)


def earning(b: dict, me: dict, prover=None):
    """How a table of build `b` earns its answers for build `me` (earning.py's one rule), proven by
    `prover`, by default this process's live check (`prove_here`)."""
    return _earning(b, me, prover or prove_here)


def _fresh_lock_after_fork() -> None:
    """In a forked child: the lock may have been held by a thread that does not exist here, and so
    may the imports that thread had in progress (`_forget_imports_of_gone_threads`)."""
    global _lock
    _lock = RLock()
    _forget_imports_of_gone_threads()
    _forget_half_made_config_vars()


def _forget_imports_of_gone_threads() -> None:
    """In a forked child: an import another thread had in progress at fork time (a first lookup
    importing `binary.py`...) never finishes here, and importing that module again would wait for
    its lock forever. Each such import is forgotten (its lock and its half-run module), so the next
    import runs it again; an extension module's is left alone (its C state may be half made)."""
    bootstrap = sys.modules.get("_frozen_importlib")
    locks = getattr(bootstrap, "_module_locks", None)
    if not locks:
        return
    import _imp

    me, extension = get_ident(), tuple(_imp.extension_suffixes())
    for name, ref in list(locks.items()):
        owner = getattr(ref(), "owner", None)
        if owner is None or owner == me:
            continue
        spec = getattr(sys.modules.get(name), "__spec__", None)
        if getattr(spec, "_initializing", False):
            origin = getattr(spec, "origin", None) or ""
            if origin == "built-in" or origin.endswith(extension):
                continue
            del sys.modules[name]
        del locks[name]
    blocking = getattr(bootstrap, "_blocking_on", None)      # thread id -> the locks it waits for
    waits = getattr(blocking, "data", blocking)
    if isinstance(waits, dict):
        for tid in [t for t in waits if t != me]:
            waits.pop(tid, None)


def _forget_half_made_config_vars() -> None:
    """In a forked child: sysconfig's config vars (which the identity reads) that another thread
    was filling at fork time are half made, and on 3.12+ the lock it filled them under is held by
    no thread here; both are made anew, so the next `get_config_var` fills them again. (In the
    child, the one thread is the one that forked, never inside sysconfig: unfinished means cut.)"""
    sysconfig = sys.modules.get("sysconfig")
    made = getattr(sysconfig, "_CONFIG_VARS", None)
    lock = getattr(sysconfig, "_CONFIG_VARS_LOCK", None)
    if lock is not None:                # 3.12+: a flag says when they are made
        if not getattr(sysconfig, "_CONFIG_VARS_INITIALIZED", True):
            sysconfig._CONFIG_VARS, sysconfig._CONFIG_VARS_LOCK = None, type(lock)()
    elif made is not None and "srcdir" not in made:        # before: srcdir is among the last set
        sysconfig._CONFIG_VARS = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock_after_fork)


def strict_mode() -> bool:
    """OFFSETS_STRICT is on for any value but empty, 0, false and no (any case)."""
    return os.environ.get("OFFSETS_STRICT", "").strip().lower() not in ("", "0", "false", "no")


_earned_field = None


def _earned_field_type():
    """EarnedField: a `model.Field` with `earned` ('exact' or 'proven'); made on first use, so that
    a process that only calls get() never imports dataclasses."""
    global _earned_field
    if _earned_field is None:
        from dataclasses import dataclass

        from ..layout.model import Field

        @dataclass(frozen=True)
        class EarnedField(Field):
            """A field as the runtime answers it: `earned` says how ('exact' or 'proven')."""

            earned: str = "exact"

        EarnedField.__module__ = __name__
        EarnedField.__qualname__ = "EarnedField"     # its repr: EarnedField(...), not a local's name
        _earned_field = EarnedField
    return _earned_field


def __getattr__(name):
    if name == "EarnedField":
        return _earned_field_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------- which table
_me = None


def running_identity() -> dict:
    """This interpreter's identity (identity.running(), without the whole headers' digests, which
    only a struct without a dependency set needs: `whole_inputs`), its installed headers to compare
    dependency sets with (`files`), and the build-id of the binary holding it (binary.py), computed once."""
    global _me
    with _lock:
        if _me is None:
            from . import binary

            me = identity.running(with_inputs=False)
            me["files"] = identity.InstalledFiles(me["include"], me["cflags"], me["multiarch"] or None)
            me["whole_inputs"] = lambda: identity.installed_inputs(me["include"], me["cflags"])
            me["binary"], me["build_id"], me["build_id_why"] = binary.interpreter()
            _me = me
        return _me


_running_identity = running_identity


class Match:
    """The table in use and how it was chosen: `kind` is exact, proven or user."""

    def __init__(self, table: str, kind: str, detail: str, source: str, build: dict, check=None,
                 loaded: Loaded = None) -> None:
        self.table, self.kind, self.detail, self.source, self._build, self.check = \
            table, kind, detail, source, build, check
        self._loaded = loaded

    @property
    def build(self):
        """The table's `model.Build` (version, hexversion, config, target, vendor, defines, digests)."""
        from ..layout.model import Build

        return Build.from_dict(self._build)

    @property
    def version(self) -> str:
        return self._build["version"]

    @property
    def hexversion(self) -> int:
        return self._build["hexversion"]

    def earned(self, struct: str) -> str:
        """How answers about `struct` are earned: 'exact', 'exact (by TABLE)' when another table of
        the chain answers it, 'proven (N fields)', or 'refused'."""
        with _lock:
            chain = [self._loaded] + self._loaded.fallbacks if self._loaded else []
            t, key, how = _earned_in(chain, struct, False)
            if t is None:
                if not any(c.resolve_struct(struct) is not None for c in chain):
                    raise UnknownNameError(struct, [], where=f"table {self.table}")
                return "refused"
            by = "" if t is self._loaded else f" (by {t.name})"
            if how == "exact":
                return "exact" + by
            n = sum(1 for k, _ in t.earning.proven if k == key)
            return f"proven ({n} field{'s' if n != 1 else ''} read live){by}"

    def unproven(self, names) -> list:
        """[(name, why)] of `names` (STRUCT.FIELD, or STRUCT for its size) that the table in use
        answers neither exactly nor proven: what a JIT's needs list would be refused, and why."""
        from ..proofs.unproven import reasons

        t = self._loaded
        with _lock:
            if t is not None and t.earning.check is None and not t.earning.exact:
                t.prove()
            return reasons(t, names) if t is not None else [(n, "no table loaded") for n in names]

    def __repr__(self) -> str:
        return f"<offsets table {self.table}: {self.kind} match: {self.detail}>"

    __str__ = __repr__


def select(me: dict, entries: list, load=_load_entry, check=None, strict: bool = False, autoscan=None):
    """The table for identity `me` among `entries` (own tables first, then shipped), and how it
    matched (choice.py: the one rule, which remote/choose.py calls too): the tables exact by
    build-id or struct by struct, in a chain; else, with none of this version, one made now by
    `autoscan()` (when given: it returns (Loaded, Earning[, how it was made]), or a str saying why
    it made none); else, unless `strict`, the nearest table of the same minor version, flags and
    target whose live `check` passes, answering only what that check proved. `NoMatchingTable`
    otherwise. Where the chain answers a struct exactly in none of its tables, the lookup makes
    this build's own table then (`_autoscan_for`), once."""
    from . import choice

    def loaded(e):
        t = load(e)
        t.own = bool(e.get("own"))
        return t

    check = check or prove_here
    chosen, why = choice.exact_chain(me, entries, loaded, check, strict)
    if chosen is not None:
        t = chosen.table
        t.autoscan = autoscan
        return t, Match(t.name, "exact", chosen.detail, t.source, t.build, loaded=t)
    not_made = ""
    if autoscan is not None:
        made = autoscan()
        if not isinstance(made, str):
            t, earn, how = made if len(made) == 3 else (*made, "made from this interpreter's own headers now")
            t.earning = earn
            t.own = True
            return t, Match(t.name, "exact", f"{how}: {earn.why}", t.source, t.build, loaded=t)
        not_made = f"; its own table was not made now: {made}"
        why = [*why, f"its own table was not made now: {made}"]
    chosen = choice.proven(me, entries, loaded, check, strict, why, refusal=lambda w: _no_match(me, entries, w))
    t = chosen.table
    return t, Match(t.name, "proven", chosen.detail + not_made, t.source, t.build, chosen.proof, loaded=t)


def _how_to_scan() -> str:
    from .autoscan import scan_command

    try:
        command = scan_command(running_identity())
    except Exception:        # noqa: BLE001 - a refusal must never fail while saying what to do
        command = f"offsets scan --python PYTHON --install"
    return (f"make this build's own table with `{command}` (needs its C headers, e.g. the python3.X-dev "
            f"package), or load one with offsets.use_table('table.yaml')")


def _no_match(me: dict, entries: list, why: str) -> NoMatchingTable:
    shipped = ", ".join(e["name"] for e in sorted(entries, key=lambda e: (e["triple"], e["hexversion"], e["name"])))
    return NoMatchingTable(f"no table fits {describe(me)}{': ' + why if why else ''}; shipped: {shipped or 'none'}; "
                           + _how_to_scan())


# ---------------------------------------------------------------- state and the public API
#: (Loaded, Match): the table in use, chosen by `select`; (Loaded, None): only the table of this
#: binary's build-id is chosen yet (`_by_build_id`), which `select` would put first.
_state = None


def _current() -> Loaded:
    """The table in use, chosen by `select` (now, if it is not yet)."""
    state = _state
    if state is None or state[1] is None:
        with _lock:
            if _state is None or _state[1] is None:
                me = running_identity()
                entries = installed_entries(me) + shipped_index()["tables"]
                _set(*select(me, entries, strict=strict_mode(), autoscan=lambda: _autoscan(me)))
            state = _state
    return state[0]


def _first() -> Loaded:
    """The table a lookup asks first: the one in use, or, before any is chosen, the one this
    binary's build-id chooses alone (`_by_build_id`), else the one `select` chooses now."""
    global _state
    state = _state
    if state is None:
        with _lock:
            if _state is None:
                t = _by_build_id()
                if t is not None:
                    _state = (t, None)
                else:
                    _current()
            state = _state
    return state[0]


def _by_build_id():
    """The shipped table that records the build-id of the binary holding this interpreter
    (`_lookup.image`, in C), when `select` would choose it first whatever the rest of the identity
    says: it is the only table that records it, it is for this version, hexversion, layout flags,
    triple and pointer size (so it is exact for every struct, by build-id), and this build has no
    table of its own (which would rank first). Else None, and `select` chooses. So the first lookup
    needs neither the headers' digests, the vendor's records nor /proc/self/maps read in Python;
    whatever it cannot answer from this table alone (a name it lacks, how the table matched, a
    constant) waits for `select`, whose first table it is."""
    if running_identity is not _running_identity:        # an identity given in its place (a test's)
        return None
    try:
        from .._lookup import image
    except ImportError:
        return None
    found = image()
    if found is None:
        return None
    me = dict(identity.running_target(), build_id=found[1])
    d = tables_dir()
    try:
        if d and any(f.startswith(f"cpython-{me['version']}-") and f.endswith(".jsonl") for f in os.listdir(d)):
            return None
    except OSError:
        pass                    # no such folder: no own table (installed_entries)
    named = [e for e in shipped_index()["tables"] if me["build_id"] in (e.get("build_ids") or ())]
    if len(named) != 1:
        return None
    earn = earning(entry_build(named[0]), me)
    if earn.by != "build-id":
        return None
    t = _load_entry(named[0])
    earn.build, t.earning, t.own = t.build, earn, False
    return t


class _FirstChoice:
    """What the C API keeps of the table in use (`_chosen`) while only the build-id's table is
    chosen: what its Match will say (an exact match: `select` puts it first)."""

    kind = "exact"

    def __init__(self, t: Loaded) -> None:
        self.table, self.hexversion = t.name, t.build["hexversion"]


def _chosen():
    """The table in use as the C API's capsule keeps it (_offsets.c: its name, how it matched, its
    hexversion), chosen now as a first lookup chooses it (`_first`)."""
    _first()
    state = _state
    return state[1] if state[1] is not None else _FirstChoice(state[0])


def _from_first(name: str, what: str):
    """(table, struct key, field path) of `name` from the build-id's table alone (`_first`), where
    it has the struct and (but for a size) the field; None otherwise."""
    t = _first()
    if _state is None or _state[1] is not None:
        return None
    struct, path = t.split(name)
    key = t.resolve_struct(struct)
    if key is None:
        return None
    if what == "sizeof":
        return None if path else (t, key, path)
    return (t, key, path) if path and path in t.fields(key) else None


def _autoscan(me: dict):
    """This build's own table made now (autoscan.make), or why not."""
    from . import autoscan

    def exact_installed():
        """An own table made for this very build: by its build-id, or by all of its inputs."""
        for e in installed_entries(me):
            earn = earning(entry_build(e), me)
            if earn.by == "build-id" or (earn.by == "inputs" and earn.whole()):
                return _load_entry(e), earn
        return None

    return autoscan.make(me, exact_installed)


def _set(table: Loaded, match: Match) -> None:
    """Switch tables: the answer caches are emptied under the lock, so no thread keeps an old answer.
    The C API's are kept where `select` chose the build-id's table the first lookup began with
    (`_first`): the capsule already holds that table, as this Match describes it."""
    global _state
    with _lock:
        before = _state
        _state = (table, match)
        _offsets_index.clear()
        _sizes.clear()
        _constants.clear()
        c = sys.modules.get("offsets._offsets")
        same = before is not None and before[1] is None and before[0].source == table.source and match.kind == "exact"
        if c is not None and not same:
            c._reset(match)


def reset() -> None:
    """Forget the table in use, the answers kept and this interpreter's identity: the next lookup
    chooses again, as a process's first one does (a table installed meanwhile by `offsets scan
    --install` is then found). For tests, which each begin as a fresh process would."""
    global _state, _me
    with _lock:
        _state = None
        _me = None
        _offsets_index.clear()
        _sizes.clear()
        _constants.clear()


def _unknown_struct(t: Loaded, name: str, struct: str) -> UnknownNameError:
    qualified = t.qualified(struct)
    if qualified:
        from ..errors import AmbiguousNameError

        return AmbiguousNameError(name, qualified, where=t.where())
    elsewhere, having = _tables_having(struct)
    if elsewhere:
        from . import suggest

        gone = suggest.gone(t, struct, having)
        if gone:
            path = name[len(struct) + 1:]
            now = suggest.where_now(t, path)
            here = f"; {' and '.join(now)} {'has' if len(now) == 1 else 'have'} a field of that name" if now else ""
            return UnknownNameError(name, now, where=f"{t.where()}: {gone}{here}; {elsewhere}")
        return UnknownNameError(name, [], where=f"{t.where()}: no table this build can use has it; {elsewhere}")
    return UnknownNameError(name, lambda: close_matches(struct, t.struct_names(), 0.6), where=t.where())


#: (the shipped index, every struct key and other name of its tables), made at the first unknown name
_shipped_names: tuple = (None, frozenset())


def _named_in_shipped(struct: str) -> bool:
    """Whether some shipped table may resolve `struct`: it, or a name its alias group gives, is one
    of some table's keys or other names (`names.struct_key` resolves no other). False for most
    unknown names, which then cost a set lookup instead of reading every shipped table's head."""
    global _shipped_names
    index = shipped_index()
    if _shipped_names[0] is not index:
        known: set = set()
        for e in index["tables"]:
            other = load_shipped(e)
            known.update(other.order)
            known.update(other.names)
        _shipped_names = (index, frozenset(known))
    known = _shipped_names[1]
    return struct in known or any(c in known for c in index["aliases"].get(struct, ()))


def _tables_having(struct: str) -> tuple:
    """(which kind of table has `struct`: other shipped tables that have it, and where it is
    defined, or '' when none does; those tables as (name, hexversion) pairs): what a refusal of an
    unknown name says instead of unrelated names."""
    found = []
    try:
        if not _named_in_shipped(struct):
            return "", []
        for e in shipped_index()["tables"]:
            other = load_shipped(e)
            key = other.resolve_struct(struct)
            if key is not None:
                found.append((e["name"], other.row(key)[4].rsplit(":", 1)[0], e["hexversion"]))
    except OffsetsError:
        return "", []
    if not found:
        return "", []
    files = sorted({f for _, f, _ in found})
    kind = ("a struct of the source tree: only a table made with the build's sources (or its libpython's DWARF) has "
            "it" if not any(f.startswith("Include/") for f in files) else "a struct of its headers")
    names = [n for n, _, _ in found]
    return ((f"{struct} is {kind} ({', '.join(files[:3])}); tables that have it: {', '.join(names[:4])}"
             + (f" and {len(names) - 4} more" if len(names) > 4 else "")), [(n, h) for n, _, h in found])


def _refused(t: Loaded, name: str) -> NoMatchingTable:
    check = t.earning.check
    seen = f"; live check: {check.summary()}" if check is not None else ""
    struct, _ = t.split(name)
    key = t.resolve_struct(struct)
    why = t.earning.why_not(t, key) if key is not None else t.earning.why
    head = _state[0] if _state is not None else t
    not_made = getattr(head, "not_made", None)
    return NoMatchingTable(f"{name}: not answered: {t.name} is not exactly this build's table for it ({why}) and "
                           f"the live check did not read this{seen}{'; ' + not_made if not_made else ''}; "
                           f"{_how_to_scan()}")


#: No struct.field name is longer; a longer one is refused at once, quoting only its start.
MAX_NAME = 1024


def _check_name(name, what: str) -> None:
    """A name is a str of at most MAX_NAME characters (TypeError, UnknownNameError)."""
    if not isinstance(name, str):
        raise TypeError(f"offsets.{what}() takes a str, not {type(name).__name__}")
    if len(name) > MAX_NAME:
        raise UnknownNameError(name, [], where=f"any table: names are at most {MAX_NAME} characters")


def _resolver(name: str, field: bool):
    """resolve(table) -> (struct key, field path) of `name` in a table, or None; a name that means
    several layouts there raises (only a qualified name answers). Without `field` (a size), the path
    is None, as a proof of the size records it; a name with a field path resolves nowhere here (the
    lookup then says it is a field)."""
    def resolve(table):
        struct, path = table.split(name)
        key = table.resolve_struct(struct)
        if key is None:
            if table.qualified(struct):
                raise _unknown_struct(table, name, struct)
            return None
        return (key, path) if field else (key, None) if not path else None
    return resolve


def _earned_in(chain: list, name: str, field) -> tuple:
    """(table, struct key, 'exact' | 'proven') of the first table that earns `name`'s answer
    (choice.earned_by over `chain`); where some table of the chain has it but none exactly, this
    build's own table made now (the autoscan the chain's first table keeps, tried once); then the
    proofs of the nearer tables of its minor (`near`, loaded as they are needed); (None, None, None)
    when none earns it. A name no table of the chain has is unknown: it starts no scan."""
    from . import choice

    resolve = _resolver(name, field)
    exact_only = strict_mode()
    t, key, how = choice.earned_by(chain, resolve, exact_only=True)
    if t is not None:
        return t, key, how
    head = chain[0] if chain else None
    known = any(resolve(c) is not None for c in chain)
    made = _autoscan_for(head) if head is not None and known else None
    if made is not None:
        chain = [made] + chain
        t, key, how = choice.earned_by([made], resolve, exact_only=True)
        if t is not None:
            return t, key, how
    if exact_only:
        return None, None, None
    t, key, how = choice.earned_by(chain, resolve)
    if t is not None or head is None:
        return t, key, how
    me = running_identity()
    while getattr(head, "near", None):
        e = head.near.pop(0)
        nt = _load_entry(e)
        nt.earning = earning(choice.entry_build(e), me)
        head.fallbacks.append(nt)
        t, key, how = choice.earned_by([nt], resolve)
        if t is not None:
            return t, key, how
    return None, None, None


def _autoscan_for(head: Loaded):
    """This build's own table, made now because some struct is exact in no table of the chain
    (once: the chain's first table keeps the attempt), put first among its fallbacks; or None."""
    scan = getattr(head, "autoscan", None)
    if scan is None:
        return None
    made = scan()       # under the runtime's lock; a child forked meanwhile keeps `autoscan` and waits for this table
    head.autoscan = None
    if isinstance(made, str):
        head.not_made = f"its own table was not made now: {made}"
        if _state is not None and _state[0] is head:
            _state[1].detail += f"; {head.not_made}"
        return None
    t, earn = made[:2]
    how = made[2] if len(made) == 3 else "made from this interpreter's own headers now"
    t.earning, t.own = earn, True
    t.fallbacks, t.near, head.fallbacks = [head] + head.fallbacks, getattr(head, "near", []), []
    _set(t, Match(t.name, "exact", f"{how}: {earn.why}", t.source, t.build, loaded=t))     # the table in use now
    return t


def _lookup(name, what: str):
    """(table, struct key, field path) that answers `name` (STRUCT.FIELD, or a struct for sizeof):
    the first table that earns it; else the first that has it, whose refusal says why."""
    _check_name(name, what)
    if _state is None or _state[1] is None:
        got = _from_first(name, what)
        if got is not None:
            return got
    t = _current()
    chain = [t] + t.fallbacks
    got, key, _ = _earned_in(chain, name, what != "sizeof")
    if got is not None:
        return got, key, got.split(name)[1]
    resolve = _resolver(name, True)
    for table in [t] + t.fallbacks:
        found = resolve(table)
        if found is not None:
            return (table, *found)
    raise _unknown_struct(t, name, t.split(name)[0])


def _field_suggestions(t: Loaded, key: str, name: str, path: str) -> list:
    """What a refusal of an unknown field suggests: the same member renamed in a neighbouring minor
    version (suggest.renamed), then the closest names."""
    from . import suggest

    struct = t.split(name)[0]
    close = suggest.renamed(t, key, path)
    close += [p for p in close_matches(path, list(t.fields(key)), 0.5) if p not in close]
    return [f"{struct}.{p}" for p in close]


class _Offsets(dict):
    """name -> byte offset, filled on first use with the answers the table has earned."""

    def __missing__(self, name):
        with _lock:
            t, key, path = _lookup(name, "get")
            fields = t.fields(key)
            if not path:
                raise UnknownNameError(name, [f"{name}.{p}" for p in list(fields)[:3]],
                                       where=f"{t.where()} as a field (it is a struct: offsets.sizeof({name!r}) "
                                             f"is its size)")
            row = fields.get(path)
            if row is None:
                raise UnknownNameError(name, _field_suggestions(t, key, name, path), where=f"struct {key} of {t.where()}")
            if t.earned(key, path) is None:
                raise _refused(t, name)
            if _state is not None and t in [_state[0]] + _state[0].fallbacks:
                prefix = key + "."
                if t.exact(key):
                    self.update((prefix + p, r[0]) for p, r in fields.items())
                self[name] = row[0]
            return row[0]


class _Sizes(dict):
    """struct name -> size, filled on first use with the answers the table has earned."""

    def __missing__(self, name):
        with _lock:
            t, key, path = _lookup(name, "sizeof")
            if path:
                raise UnknownNameError(name, [name.partition(".")[0]],
                                       where=f"{t.where()} as a struct (offsets.field({name!r}).size is a field's size)")
            if t.earned(key) is None:
                raise _refused(t, name)
            size = t.size(key)
            if _state is not None and t in [_state[0]] + _state[0].fallbacks:
                self[name] = size
            return size


_offsets_index = _Offsets()
_sizes = _Sizes()

def _public(table: dict, name: str, doc: str):
    """`table.__getitem__` as offsets.`name`, with `doc`: the same kind of builtin function, made by
    `offsets._lookup` (called as fast); the bound method itself where that module cannot be imported."""
    try:
        from .._lookup import function
    except ImportError:
        return table.__getitem__
    return function(table, name, doc)


get = _public(_offsets_index, "get", """get(name) -> int

The byte offset of STRUCT.FIELD in this interpreter (a bitfield: its storage unit's; offsets.field()
gives its bits). FIELD is the offsetof() designator (PyTypeObject.ob_base.ob_base.ob_type); the
struct may be named by its typedef, its tag or an alias (listiterobject is 3.12's _PyListIterObject),
and as NAME@FILE where the build gives the name two layouts.

Raises offsets.UnknownNameError (a KeyError naming the closest names) for a name this build lacks,
offsets.NoMatchingTable when no table earns the answer for this build (docs/identity.md).""")
sizeof = _public(_sizes, "sizeof", """sizeof(struct) -> int

The size in bytes of a struct or union in this interpreter (typedef, tag and alias names work).
Raises offsets.UnknownNameError or offsets.NoMatchingTable as offsets.get() does.""")


def field(name: str):
    """The field STRUCT.FIELD (a `model.Field` with `earned`: 'exact' or 'proven')."""
    with _lock:
        get(name)   # the same errors as get()
        t, key, path = _lookup(name, "field")
        o, size, type_, bo, bw, al, fl = t.fields(key)[path]
        return _earned_field_type()(path=path, offset=o, size=size, type=type_, bit_offset=bo, bit_width=bw, array_len=al,
                           flexible=bool(fl), earned=t.earned(key, path))


def build() -> Match:
    """The table in use: its name, build identity, how it matched, and `earned(struct)`."""
    _current()
    return _state[1]


def current_table():
    """The table in use as a full `model.Table`, with only the structs it answers exactly: for the CLI."""
    from ..layout.compact import table_of

    t = _current()
    return table_of(t.head, t.pool, [k for k in t.order if t.exact(k)])


def current_layouts(t: Loaded):
    """A loaded table as a full `model.Table`: every struct decoded and checked."""
    from ..layout.compact import table_of

    return table_of(t.head, t.pool)


#: compact files use_table() has checked in full: (path, size, mtime, ctime)
_validated: set = set()


def use_table(path, verify: bool = True) -> Match:
    """Use the table at `path` (`offsets scan` YAML, or a compact .jsonl) from now on, for Python and C.

    It must be for this interpreter's minor version, layout flags, target and pointer size
    (TableError otherwise). Its answers are earned as the shipped tables' are: exact when its
    identity (digests included) is this build's, else only what the live check proves (which must
    pass: VerifyError otherwise; OFFSETS_STRICT refuses such a table). `verify` also runs the live
    check on an exact table.
    """
    path = os.fspath(path)
    if path.endswith(".jsonl"):
        t = load_compact(path)
        st = os.stat(path)
        stamp = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if stamp not in _validated:
            current_layouts(t)      # every struct checked by the model and its rules, once per file
            _validated.add(stamp)
    else:
        from ..layout import compact, compact_read, table_yaml

        head, pool = compact_read.parse(compact.dumps(table_yaml.load(path), path), path)
        t = Loaded(head, pool, path, shipped_index()["aliases"], prove_here)
    me = running_identity()
    b = t.build
    mine = (me["hexversion"] >> 16, identity.flag_set(me["config"]), me["triple"], me["pointer_size"])
    theirs = (b["hexversion"] >> 16, identity.flag_set(b["config"]), b["target"]["triple"], b["target"]["pointer_size"])
    if mine != theirs:
        raise TableError(f"{path} is for {t.name}, not for this {describe(me)}: {_how_to_scan()}")
    from ..errors import VerifyError

    earn = earning(b, me)
    t.earning = earn
    if not earn.exact and strict_mode():
        raise TableError(f"{path} is not exactly this build's table ({earn.why}) and OFFSETS_STRICT allows exact "
                         f"tables only")
    result = None
    if verify or not earn.exact:
        result = t.prove()
        if not result.ok:
            raise VerifyError(f"{path} does not describe this interpreter: {result.summary()}")
    how = ("exact: " + earn.why if earn.exact else
           f"not exact ({earn.why}): answers only the {len(earn.proven)} fields the live check read")
    with _lock:
        _set(t, Match(t.name, "user", f"loaded from {path}; {how}" + (f"; live check: {result.summary()}"
                                                                      if result else ""),
                      path, t.build, result, loaded=t))
        return _state[1]


def live_check(table: Loaded = None):
    """Run the live check (`live/runner.py`) of a table (default: the one in use) against this process."""
    from .live.runner import check

    return check(table or _current())


def get_include() -> str:
    """The directory holding pyoffsets.h (installed: inside the package; a checkout: headers/)."""
    for d in (os.path.join(PACKAGE_DIR, "include"), os.path.join(os.path.dirname(PACKAGE_DIR), "headers")):
        if os.path.isfile(os.path.join(d, "pyoffsets.h")):
            return d
    raise OffsetsError(f"pyoffsets.h is in neither {PACKAGE_DIR}/include nor the checkout's headers/: reinstall cpython-offsets")


# ---------------------------------------------------------------- constants (constants.py)
class _Constants(dict):
    """name -> value, filled on first use with the constants the table has earned."""

    def __missing__(self, name):
        with _lock:
            t, row, how = _constant(name, "constant")
            if _state is not None and t in [_state[0]] + _state[0].fallbacks:
                self[name] = row[1]
            return row[1]


def _constant(name, what: str):
    """(table, row, how it is earned) of a constant, or the error to raise."""
    from . import constants

    _check_name(name, what)
    t, row = constants.find(_current(), name)
    how = constants.earned(t, row, prove_constants_here)
    if how is None:
        raise constants.refused(t, name)
    return t, row, how


_constants = _Constants()

constant = _public(_constants, "constant", """constant(name) -> int

The value of an enumerator or integer-constant macro of CPython's own files in this interpreter
(FRAME_OWNED_BY_GENERATOR, Py_TPFLAGS_HEAPTYPE, PyLong_SHIFT); NAME@FILE where the build gives one
name two values. offsets.constant_info() adds its C type, width and file. Raises
offsets.UnknownNameError or offsets.NoMatchingTable as offsets.get() does.""")


def constant_info(name: str):
    """The constant NAME: value, C type, size, signedness, where it is defined, kind and `earned`."""
    from .constants import EarnedConstant

    with _lock:
        t, row, how = _constant(name, "constant_info")
        return EarnedConstant(*row, earned=how)


def read_needs(path: str) -> list:
    """The names of a needs list: a JSON list, or one name a line (`#` starts a comment)."""
    from ..regular_file import open_regular

    with open_regular(path, "r", encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("["):
        from ..layout.json_read import loads

        return [str(n) for n in loads(text)]
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def main(argv=None) -> int:
    """`python -m offsets.runtime NAME...`: the table this interpreter uses, and each answer with how
    it was earned (runs on any interpreter, with no third-party package); `--unproven FILE`: the
    names of a needs list (`read_needs`) that are not answered, each with why no proof reaches it."""
    names = sys.argv[1:] if argv is None else argv
    try:
        m = build()
    except OffsetsError as e:
        print(f"offsets: error: {e}", file=sys.stderr)
        return e.exit_code
    print(f"table: {m.table} ({m.kind}: {m.detail})")
    if names[:1] == ["--unproven"] and len(names) == 2:
        try:
            needs = read_needs(names[1])
        except OSError as e:          # NotRegularFile too
            print(f"offsets: error: cannot read needs list {names[1]}: {e.strerror or e}", file=sys.stderr)
            return 2
        missing = m.unproven(needs)
        print(f"{len(needs) - len(missing)} of {len(needs)} names answered; not answered:")
        for name, why in missing:
            print(f"  {name}: {why}")
        return 2 if missing else 0
    status = 0
    for name in names:
        try:
            if "." in name:
                f = field(name)
                print(f"  {name:<34} {f.offset:>6}  {f.earned}")
            else:
                print(f"  {name:<34} {sizeof(name):>6}  {m.earned(name)} (size)")
        except (OffsetsError, KeyError) as e:
            status = 2
            print(f"  {name:<34} {'-':>6}  refused: {e}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
