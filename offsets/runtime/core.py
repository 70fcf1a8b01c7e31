"""The one runtime object of an interpreter (`RUNTIME`): its lock, this interpreter's identity, the
table in use and how it matched, and the answers kept (`get`, `sizeof` and `constant` are the
`__getitem__` of its dicts). `runtime/__init__.py` is the public API over it.

Its rules (docs/identity.md): after `install()` returns no thread gets an answer of the old table;
a forked child gets a fresh lock and forgets the imports and sysconfig state other threads left
half made (`after_fork`), and keeps the table chosen; each sub-interpreter imports its own."""

import os
import sys
from _thread import RLock, get_ident

from ..layout.build_identity import BuildIdentity, index_entry, own_files, running_shown
from .earning import by_build_id_alone, entry_build

#: The shipped tables (tables.COMPACT_DIR, which a first lookup by build-id does not import: `compact_dir`).
COMPACT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "compact")


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


def load_compact(path: str, head_sha256: str = None, pool_sha256: str = None) -> "Loaded":
    """A compact table (tables.load_compact), handed this process's live check as its prover."""
    from . import tables

    return tables.load_compact(path, head_sha256, pool_sha256, prove_here)


def load_shipped(entry: dict) -> "Loaded":
    """A shipped table (tables.load_shipped), handed this process's live check as its prover."""
    from . import tables

    return tables.load_shipped(entry, prove_here)


def compact_dir() -> str:
    """The shipped tables' folder: tables.COMPACT_DIR where tables.py is loaded (a test may have
    moved it), else the same folder (`COMPACT_DIR`)."""
    loaded = sys.modules.get(__package__ + ".tables")
    return COMPACT_DIR if loaded is None else loaded.COMPACT_DIR


#: No struct.field name is longer; a longer one is refused at once, quoting only its start.
MAX_NAME = 1024


def check_name(name, what: str) -> None:
    """A name is a str of at most MAX_NAME characters (TypeError, UnknownNameError)."""
    if not isinstance(name, str):
        raise TypeError(f"offsets.{what}() takes a str, not {type(name).__name__}")
    if len(name) > MAX_NAME:
        from ..errors import UnknownNameError

        raise UnknownNameError(name, [], where=f"any table: names are at most {MAX_NAME} characters")


class FirstChoice:
    """What the C API keeps of the table in use (`Runtime.chosen`) while only the build-id's table
    is chosen: what its Match will say (an exact match: the whole choice puts it first)."""

    kind = "exact"

    def __init__(self, t) -> None:
        self.table, self.hexversion = t.name, t.build.hexversion


class FirstTable:
    """The build-id's table (shipped, or this build's own) as a first lookup reads it: in C
    (`_lookup.open_table` and `struct_row`: compact_read's reading and checks, so that neither it
    nor tables.py is imported), what `Runtime.from_first` asks of a table (`Loaded`'s names). A
    struct is found by its key alone; another name (a typedef's, an alias), and a struct the C
    reading declines (ValueError: a damaged or unusual file), are for the whole way (`select`),
    whose first table this is, read by tables.py."""

    own = False
    fallbacks: tuple = ()

    def __init__(self, c_table: dict, source: str, build: BuildIdentity, name: str, struct_row) -> None:
        self._c, self.source, self.build, self.name, self._struct_row = c_table, source, build, name, struct_row
        self.earning = None                 # set by `Runtime.by_build_id`, as a Loaded's
        self._rows: dict = {}

    @property
    def order(self) -> list:
        """The struct keys, in the table's order."""
        return self._c["keys"][1:-1].split(" ") if self._c["n"] else []

    def split(self, name: str) -> tuple:
        """(struct, field path) of a name, as Loaded.split."""
        if "@" not in name:
            struct, _, path = name.partition(".")
            return struct, path
        from ..layout.names import split

        return split(name, lambda s: self.resolve_struct(s) is not None)

    def resolve_struct(self, name: str):
        """`name` where it is a struct key whose row the C reading gives; else None (the whole way)."""
        try:
            return name if self._row(name) is not None else None
        except ValueError:
            return None

    def _row(self, key: str):
        """The struct `key`'s row (`_lookup.struct_row`, kept), None where it is no key; ValueError
        where the C reading declines it."""
        row = self._rows.get(key)
        if row is None:
            row = self._struct_row(self._c, key)
            if row is not None:
                self._rows[key] = row
        return row

    def fields(self, key: str) -> dict:
        """path -> (offset, size, type, bit_offset, bit_width, array_len, flexible), as Loaded.fields."""
        row = self._row(key)
        if row is None:
            raise KeyError(key)
        return row[6]

    def size(self, key: str) -> int:
        return self._row(key)[2]

    def exact(self, key: str) -> bool:
        return self.earning.struct(self, key)

    def earned(self, key: str, path=None):
        return "exact" if self.exact(key) else None

    def where(self) -> str:
        return f"table {self.name}"


class Answers(dict):
    """name -> answer of one runtime, filled on first use (`__missing__`: `fill(answers, name)`,
    one of the three below) under its lock. One class for the three (each class costs every
    process that loads a JIT about 0.1M instructions to make)."""

    __slots__ = ("runtime", "fill")

    def __init__(self, runtime: "Runtime", fill) -> None:
        super().__init__()
        self.runtime, self.fill = runtime, fill

    def __missing__(self, name):
        return self.fill(self, name)


def offset_answer(answers: Answers, name):
    """The byte offset of STRUCT.FIELD `name`, as the table has earned it (kept where it is the table in use's)."""
    rt = answers.runtime
    with rt.lock:
        t, key, path = rt.lookup(name, "get")
        fields = t.fields(key)
        if not path:
            from ..errors import UnknownNameError

            raise UnknownNameError(name, [f"{name}.{p}" for p in list(fields)[:3]],
                                   where=f"{t.where()} as a field (it is a struct: offsets.sizeof({name!r}) "
                                         f"is its size)")
        row = fields.get(path)
        if row is None:
            from ..errors import UnknownNameError
            from .refusals import field_suggestions

            raise UnknownNameError(name, field_suggestions(t, key, name, path), where=f"struct {key} of {t.where()}")
        if t.earned(key, path) is None:
            raise rt.not_earned(t, name)
        if rt.in_use(t):
            prefix = key + "."
            if t.exact(key):
                answers.update((prefix + p, r[0]) for p, r in fields.items())     # r[0]: the offset
            answers[name] = row[0]
        return row[0]


def size_answer(answers: Answers, name):
    """The size of struct `name`, as the table has earned it."""
    rt = answers.runtime
    with rt.lock:
        t, key, path = rt.lookup(name, "sizeof")
        if path:
            from ..errors import UnknownNameError

            raise UnknownNameError(name, [name.partition(".")[0]],
                                   where=f"{t.where()} as a struct (offsets.field({name!r}).size is a field's size)")
        if t.earned(key) is None:
            raise rt.not_earned(t, name)
        size = t.size(key)
        if rt.in_use(t):
            answers[name] = size
        return size


def constant_answer(answers: Answers, name):
    """The value of constant `name`, as the table has earned it."""
    rt = answers.runtime
    with rt.lock:
        t, row, how = rt.constant(name, "constant")
        if rt.in_use(t):
            answers[name] = row.value
        return row.value


class Runtime:
    """An interpreter's runtime: the lock every choice and every miss takes (`lock`), this
    interpreter's identity (`identity()`, computed once), the table in use (`state`: (Loaded,
    Match), or (the build-id's table, None) while only it is chosen: a FirstTable where `_lookup`
    reads it, else a Loaded), and the answers kept (`offsets`, `sizes`, `constants`). `reset()`
    forgets all but the lock. What a first lookup by build-id does not need is in whole_choice.py,
    which the methods of the same names call."""

    #: The prover this runtime hands every table it chooses (the live check in this process).
    prove = staticmethod(prove_here)

    def __init__(self) -> None:
        self.lock = RLock()
        self.state = None
        self.me = None
        self.offsets = Answers(self, offset_answer)
        self.sizes, self.constants = Answers(self, size_answer), Answers(self, constant_answer)
        self.validated: set = set()       # compact files use_table() has checked in full: (path, size, mtimes)
        self.shipped_names = None         # refusals.ShippedNames, made at the first unknown name

    # ------------------------------------------------------------ what this interpreter is
    def identity(self) -> BuildIdentity:
        """This interpreter's whole identity, computed once (whole_choice.identity)."""
        if self.me is None:
            from . import whole_choice

            return whole_choice.identity(self)
        return self.me

    def index(self) -> dict:
        """The shipped tables' index (tables.shipped_index)."""
        from .tables import shipped_index

        return shipped_index()

    # ------------------------------------------------------------ which table
    def select(self, me: BuildIdentity, entries: list, load=None, check=None, strict: bool = False, autoscan=None):
        """(table, Match) for identity `me` among `entries` (whole_choice.select: choice.py's one rule)."""
        from . import whole_choice

        return whole_choice.select(self, me, entries, load, check, strict, autoscan)

    def current(self) -> "Loaded":
        """The table in use, chosen by `select` (now, if it is not yet: whole_choice.current)."""
        state = self.state
        if state is None or state[1] is None:
            from . import whole_choice

            return whole_choice.current(self)
        return state[0]

    def first(self):
        """The table a lookup asks first: the one in use, or, before any is chosen, the one this
        binary's build-id chooses alone (`by_build_id`), else the one `select` chooses now."""
        state = self.state
        if state is None:
            with self.lock:
                if self.state is None:
                    t = self.by_build_id()
                    if t is not None:
                        self.state = (t, None)
                    else:
                        self.current()
                state = self.state
        return state[0]

    def by_build_id(self):
        """The table that records the build-id of the binary holding this interpreter (`_lookup.image`,
        in C), when `select` would choose it first whatever the rest of the identity says: it is for
        what the interpreter shows of its build (earning.by_build_id_alone: version, hexversion,
        pointer size, the flags sys shows; so it is exact for every struct, by build-id), and it is
        the only one that records it among this build's own tables of its version where there are
        any (which rank first: `offsets scan --install`, or one made on first use), else among the
        shipped ones. Else None, and `select` chooses. So the first lookup needs neither sysconfig,
        the headers' digests, the vendor's records nor /proc/self/maps read in Python; whatever it
        cannot answer from this table alone (a name it lacks, how the table matched, a constant)
        waits for `select`, whose first table it is."""
        if "identity" in self.__dict__:         # an identity given in place of this interpreter's (a test's)
            return None
        try:
            from .._lookup import image
        except ImportError:
            return None
        found = image()
        if found is None:
            return None
        shown, build_id = BuildIdentity.of_shown(running_shown()), found[1]
        own = own_files(shown.version)
        if own:                     # they rank first: one of them, or `select`
            entries, load = self.own_entries(own)
            named = [e for e in entries if build_id in (e.get("build_ids") or ())]
        else:
            found = self.build_id_entries(build_id)
            if found is None:
                return None
            named, load = found
        if len(named) != 1:
            return None
        earn = by_build_id_alone(entry_build(named[0]), shown, build_id, prove_here)
        if earn is None:
            return None
        t = load(named[0])
        if t is None:
            return None
        earn.build, t.earning, t.own = t.build, earn, bool(own)
        return t

    def own_entries(self, files: list):
        """(this build's own tables at `files` as entries, a loader of one): each read in C, as a
        `FirstTable` its entry carries, where `_lookup` reads them all; else by tables.py
        (tables.own_entries, which leaves a damaged one out)."""
        try:
            from .._lookup import open_table, struct_row
        except ImportError:
            open_table = None
        out = [] if open_table is not None else None
        for path in files if out is not None else ():
            try:
                c_table = open_table(path, None, None, None)
            except ValueError:
                out = None          # one it declines (damaged, or unusual): tables.py reads them all
                break
            b = BuildIdentity.of_table(c_table["build"])
            t = FirstTable(c_table, path, b, b.table_name, struct_row)
            out.append(dict(index_entry(t.name, path, b.as_dict()), own=True, loaded=t))
        if out is not None:
            return out, lambda e: e["loaded"]
        from .tables import _load_entry, own_entries

        return own_entries(files), _load_entry

    def build_id_entries(self, build_id: str):
        """(the shipped entries that record `build_id`, a loader of one) from the build-id file, not
        the whole index.json; None where that file cannot say. Read in C (`_lookup.build_id_entries`,
        its table a `FirstTable`, None where the C reading declines it), else by tables.py
        (tables.shipped_by_build_id: where `_lookup` is not built, or not on Linux)."""
        try:
            from .._lookup import build_id_entries, open_table, struct_row
        except ImportError:
            build_id_entries = None
        if build_id_entries is None:
            from .tables import shipped_by_build_id

            return shipped_by_build_id(build_id, prove_here)
        folder = compact_dir()
        found = build_id_entries(os.path.join(folder, "build_ids.txt"), build_id)
        if found is None:
            return None
        entries, _, pool_sha256 = found

        def load(e: dict):
            path = os.path.join(folder, e["file"])
            try:
                c_table = open_table(path, e["head_sha256"], os.path.join(folder, "layouts.jsonl"), pool_sha256)
            except ValueError:
                return None
            return FirstTable(c_table, path, entry_build(e), e["name"], struct_row)
        return entries, load

    def chosen(self):
        """The table in use as the C API's capsule keeps it (_offsets.c: its name, how it matched,
        its hexversion), chosen now as a first lookup chooses it (`first`)."""
        self.first()
        state = self.state
        return state[1] if state[1] is not None else FirstChoice(state[0])

    def build(self) -> "Match":
        """How the table in use matched (chosen now, if it is not yet)."""
        self.current()
        return self.state[1]

    def in_use(self, t) -> bool:
        """Whether `t` is the table in use or one of its fallbacks: only their answers are kept."""
        state = self.state
        return state is not None and (t is state[0] or t in state[0].fallbacks)

    def install(self, table: "Loaded", match) -> None:
        """Switch tables, no thread keeping an old answer (whole_choice.install)."""
        from . import whole_choice

        whole_choice.install(self, table, match, RUNTIME)

    def reset(self) -> None:
        """Forget the table in use, the answers kept and this interpreter's identity: the next
        lookup chooses again, as a process's first one does."""
        with self.lock:
            self.state = None
            self.me = None
            self.offsets.clear()
            self.sizes.clear()
            self.constants.clear()

    def after_fork(self) -> None:
        """In a forked child: the lock may have been held by a thread that does not exist here, and
        so may the imports that thread had in progress, and sysconfig's state (below)."""
        self.lock = RLock()
        forget_imports_of_gone_threads()
        forget_half_made_config_vars()

    # ------------------------------------------------------------ which table answers a name
    def from_first(self, name: str, what: str):
        """(table, struct key, field path) of `name` from the build-id's table alone (`first`),
        where it has the struct and (but for a size) the field; None otherwise."""
        t = self.first()
        state = self.state
        if state is None or state[1] is not None:
            return None
        struct, path = t.split(name)
        key = t.resolve_struct(struct)
        if key is None:
            return None
        if what == "sizeof":
            return None if path else (t, key, path)
        return (t, key, path) if path and path in t.fields(key) else None

    def lookup(self, name, what: str):
        """(table, struct key, field path) that answers `name` (STRUCT.FIELD, or a struct for
        sizeof): the first table that earns it; else the first that has it, whose refusal says why."""
        check_name(name, what)
        state = self.state
        if state is None or state[1] is None:
            got = self.from_first(name, what)
            if got is not None:
                return got
        from . import whole_choice

        return whole_choice.lookup(self, name, what)

    def resolver(self, name: str, field: bool):
        """resolve(table) -> (struct key, field path) of `name` in a table, or None (whole_choice.resolver)."""
        from . import whole_choice

        return whole_choice.resolver(self, name, field)

    def earned_in(self, chain: list, name: str, field) -> tuple:
        """(table, struct key, 'exact' | 'proven') of the first table that earns `name`'s answer
        (whole_choice.earned_in)."""
        from . import whole_choice

        return whole_choice.earned_in(self, chain, name, field)

    def autoscan_for(self, head: "Loaded"):
        """This build's own table, made now (once) and in use from now on, or None (whole_choice.autoscan_for)."""
        from . import whole_choice

        return whole_choice.autoscan_for(self, head)

    # ------------------------------------------------------------ refusals (refusals.py)
    def unknown_struct(self, t: "Loaded", name: str, struct: str) -> "UnknownNameError":
        from .refusals import ShippedNames, unknown_struct

        if self.shipped_names is None:
            self.shipped_names = ShippedNames()
        return unknown_struct(t, name, struct, self.index(), self.shipped_names)

    def not_earned(self, t: "Loaded", name: str):
        from .refusals import not_earned

        state = self.state
        return not_earned(t, name, state[0] if state is not None else t, self.identity)

    def how_to_scan(self) -> str:
        from .refusals import how_to_scan

        return how_to_scan(self.identity)

    # ------------------------------------------------------------ answers beyond get and sizeof
    def field(self, name: str, earned_field):
        """The field STRUCT.FIELD as `earned_field` (whole_choice.field)."""
        from . import whole_choice

        return whole_choice.field(self, name, earned_field)

    def constant(self, name, what: str):
        """(table, row, how it is earned) of a constant, or the error to raise (whole_choice.constant)."""
        check_name(name, what)
        from . import whole_choice

        return whole_choice.constant(self, name, prove_constants_here)


#: This interpreter's runtime (a sub-interpreter imports its own).
# ---------------------------------------------------------------- what a forked child forgets
# (defined with the runtime object, so that a child imports nothing before it has forgotten them)
def forget_imports_of_gone_threads() -> None:
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


def forget_half_made_config_vars() -> None:
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


RUNTIME = Runtime()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: RUNTIME.after_fork())
