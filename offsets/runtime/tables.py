"""The tables the runtime reads: the shipped compact tables (checked against `index.json`), this
build's own tables (`offsets scan --install`), and `Loaded`, one table with its structs decoded on
demand."""

import os

from ..layout.build_identity import BuildIdentity, own_files, tables_dir  # noqa: F401 (tables.tables_dir)
from ..layout.compact_read import (BUILD_ID_FILE, FIX, FieldRow, StructRow, build_id_entries, index_entry, loads,
                                   open_table)
from .earning import Earning

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPACT_DIR = os.path.join(PACKAGE_DIR, "data", "compact")


def own_table_file(build: BuildIdentity) -> str:
    """The file name an installed table gets: its table name and its headers digest."""
    key = build.inputs.get("headers") or "sha256:none"
    return f"{build.table_name}-{key.split(':')[1][:16]}.jsonl"


class Loaded:
    """One table as the runtime holds it: the compact header, and its structs decoded on demand from
    its layout pool (`compact_read.Pool`); `prover(table)` proves it where it is not exact (the one
    who loads it hands it: `runtime/core.py` this process's live check)."""

    def __init__(self, head: dict, pool, source: str, aliases: dict = None, prover=None) -> None:
        self.head, self.pool, self.source, self._aliases = head, pool, source, aliases
        self.build = BuildIdentity.of_table(head["build"])
        self.name = self.build.table_name
        #: struct key -> its layout reference, in name order
        self.order = head["structs"]
        self._names = None
        self._rows: dict = {}
        self.earning = Earning("build-id", "not compared (a table read for itself)", prover=prover)
        #: other tables this build may use, in order: each answers what it earns where those before it do not
        self.fallbacks: list = []
        #: this build's own table (offsets scan --install, or made now), not a shipped one (set by the chooser)
        self.own = False
        #: the index entries of the nearer tables of its minor whose proofs may answer what this chain
        #: does not, nearest first (set by the chooser, taken one by one: selection.nearer)
        self.near: list = []
        #: makes this build's own table now, where no table of the chain answers a struct exactly
        #: (selection.own_table_now; set by the chooser, used once: core.Runtime.autoscan_for)
        self.autoscan = None
        #: why this build's own table was not made now, once that was tried
        self.not_made = None
        #: the constants by name, and the names only qualified forms have, read on first use (constants.py)
        self._constants = self._qualified_constants = None
        self._depends = self._positions = None
        self._resolved: dict = {}

    @property
    def aliases(self) -> dict:
        """The alias groups names are resolved with: those given, else index.json's, read when a
        name first needs them (a name that is a key or one of the table's names never does)."""
        if self._aliases is None:
            self._aliases = shipped_index()["aliases"]
        return self._aliases

    @property
    def names(self) -> dict:
        """The table's other names: alias or typedef -> struct key (its names node, read when first
        needed: a struct key is never one of them, which the writer refuses, so a lookup by key
        needs none; a table that holds one is corrupt)."""
        if self._names is None:
            names = self.pool.names(self.head["names"])
            if names and not set(names).isdisjoint(self.order.keys()):
                from ..errors import CorruptTableError

                raise CorruptTableError(f"{self.source}: a struct key is also one of its other names; {FIX}")
            self._names = names
        return self._names

    def resolve_struct(self, name: str):
        """The table's key for a struct, typedef, tag or alias name; None if it has none (each name
        that has one resolved once: the table's keys, names and aliases never change; a name it has
        none for is not remembered, so a program asking for ever new names grows nothing)."""
        try:
            return self._resolved[name]
        except KeyError:
            pass
        # names.struct_key's first candidate, without importing it: a key is no other name (`names`)
        key = name if name in self.order else self.names.get(name, name)
        if key not in self.order:
            from ..layout.names import struct_key

            key = struct_key(name, self.order, self.names, self.aliases)
        if key is not None:
            self._resolved[name] = key
        return key

    def split(self, name: str) -> tuple:
        """(struct, field path) of a name; a qualified struct's file keeps its dots
        (`block@Modules/_collectionsmodule.c.leftlink`, see names.split)."""
        if "@" not in name:                     # names.split's plain case, without importing it
            struct, _, path = name.partition(".")
            return struct, path
        from ..layout.names import split

        return split(name, lambda s: self.resolve_struct(s) is not None)

    def qualified(self, name: str) -> list:
        """The qualified forms (`name@FILE`) of a name that means several layouts here (qualify.py)."""
        from ..layout.names import qualified_forms

        return qualified_forms(name, (*self.order, *self.names), self.aliases)

    @property
    def depends(self):
        """The table's dependency data (`compact_depends.View`), None when it has none (or damaged)."""
        if self._depends is None:
            self._depends = self.pool.depends(self.head) or False
        return self._depends or None

    def dependency_set(self, key: str):
        """(leaves, installed files, has source files) struct `key` depends on, or None: not known."""
        view = self.depends
        if view is None:
            return None
        if self._positions is None:
            self._positions = {k: i for i, k in enumerate(self.order)}
        return view.struct(self._positions[key])

    def constant_set(self, file: str):
        """What the constants of installed header `file` depend on, or None: not known."""
        view = self.depends
        return None if view is None else view.constants(file)

    def row(self, key: str) -> StructRow:
        """The struct as a row (compact_read.Pool.row), its `fields` path -> FieldRow, decoded once."""
        return self._row(key)

    def _row(self, key: str) -> StructRow:
        row = self._rows.get(key)
        if row is None:
            got = self._decode(key)
            row = self._rows[key] = StructRow((*got[:6], {f[0]: FieldRow(f[1:]) for f in got[6]}, *got[7:]))
        return row

    def _decode(self, key: str) -> StructRow:
        """A struct as a flat row, refused unless every number in it is one a layout can have."""
        return self.pool.row(key, self.order[key])

    def fields(self, key: str) -> dict:
        """path -> FieldRow (offset, size, type, bit_offset, bit_width, array_len, flexible)."""
        return self._row(key).fields

    def size(self, key: str) -> int:
        return self._row(key).size

    def exact(self, key: str) -> bool:
        """Whether the struct's answers are exact here (earning.py's rule)."""
        return self.earning.struct(self, key)

    def earned(self, key: str, path=None):
        """'exact', 'proven' (the live check read it), or None: how an answer about STRUCT (its
        size when `path` is None) or STRUCT.PATH is earned."""
        if self.exact(key):
            return "exact"
        self.prove()
        return "proven" if (key, path) in self.earning.proven else None

    def prove(self):
        """Run the proof once (for the structs that are not exact): the prover the table's earning was
        handed (the live check in this process, `runtime/core.py`; a check in another process's
        memory, remote/choose.py)."""
        e = self.earning
        if e.check is None:
            if e.prover is None:
                from ..errors import TableError

                raise TableError(f"{self.where()} is not exact ({e.why}) and was handed no prover to prove it")
            e.check = e.prover(self)
            e.proven = set(e.check.proven) if e.check.ok else set()
        return e.check

    def struct_names(self) -> list:
        return list(self.order) + list(self.names)

    def where(self) -> str:
        return f"table {self.name}"


_types = {}


def type_records(version: str) -> dict:
    """tp_name -> type record of `version`'s minor (`data/compact/types.json`, proofs/types.py);
    {} where none is shipped or the file cannot be read."""
    if not _types:
        from ..regular_file import read_most

        found: dict = {}
        try:
            with open(os.path.join(COMPACT_DIR, "types.json"), "rb") as f:
                for line in read_most(f, 1 << 24).splitlines()[1:]:
                    minor, name, symbol, basicsize, itemsize, members = loads(line)
                    found.setdefault(minor, {})[name] = _record(symbol, basicsize, itemsize, members)
        except (OSError, ValueError, TypeError):
            found = {}
        _types["all"] = found
    return _types["all"].get(".".join(version.split(".")[:2]), {})


def _terms(text: str):
    """`compact._terms_text` read back: [[coefficient, kind, struct, path]...], or None."""
    if not text:
        return None
    kinds = {"S": "size", "O": "offset", "P": "pointer", "I": "int"}
    out = []
    for word in text.split(" "):
        sign, kind, rest = (-1 if word[0] == "-" else 1), kinds[word[1]], word[3:]
        if kind == "int":
            out.append([sign * int(rest), kind, None, None])
        else:
            struct, _, path = rest.partition("|")
            out.append([sign, kind, struct or None, path or None])
    return out


def _record(symbol: str, basicsize: str, itemsize: str, members: str) -> dict:
    rec = {"symbol": symbol} if symbol else {}
    for key, text in (("basicsize", basicsize), ("itemsize", itemsize)):
        terms = _terms(text)
        if terms is not None:
            rec[key] = terms
    last, out = None, []
    for entry in members.split(";") if members else ():
        name, code, flags, where = entry.split(",", 3)
        struct, _, path = where.partition("|")
        last = struct or last
        out.append([name, int(code), int(flags), last, path or name])
    if out:
        rec["members"] = out
    return rec


_index_doc = None


def shipped_index() -> dict:
    """`data/compact/index.json`: the shipped tables' identities and the alias groups, checked
    against the digest it carries."""
    global _index_doc
    if _index_doc is None:
        from ..regular_file import read_most

        path = os.path.join(COMPACT_DIR, "index.json")
        try:
            with open(path, "rb") as f:
                text = read_most(f, 1 << 24)
            doc = loads(text)
        except OSError as e:
            from ..errors import TableError

            raise TableError(f"the shipped tables are missing ({path}: {e.strerror}); {FIX}") from None
        except ValueError:
            from ..errors import CorruptTableError

            raise CorruptTableError(f"{path} is corrupt: not JSON; {FIX}") from None
        from ..layout.compact_index import check_index

        why = check_index(doc, text)
        if why:
            from ..errors import CorruptTableError

            raise CorruptTableError(f"{path} is corrupt: {why}; {FIX}")
        _index_doc = doc
    return _index_doc


def load_compact(path: str, head_sha256: str = None, pool_sha256: str = None, prover=None, aliases=None) -> Loaded:
    """A compact table (`compact_read.py`), of which only the header line is read now; a shipped one
    must have the header and pool header its `index.json` vouches for. `prover`: `Loaded`'s;
    `aliases`: the alias groups (default index.json's, read when first needed)."""
    head, pool = open_table(path, head_sha256, pool_sha256)
    return Loaded(head, pool, path, aliases, prover)


def load_shipped(entry: dict, prover=None) -> Loaded:
    return load_compact(os.path.join(COMPACT_DIR, entry["file"]), entry["head_sha256"],
                        shipped_index()["pool_sha256"], prover)


def shipped_by_build_id(build_id: str, prover=None):
    """(the entries of the shipped tables that record `build_id`, a loader of one of them) from the
    build-id file (compact_read.build_id_entries), which a first lookup reads in place of the whole
    index.json (in C where `_lookup` reads it: core.Runtime.build_id_entries); None where that file
    is missing or damaged (index.json then answers)."""
    found = build_id_entries(os.path.join(COMPACT_DIR, BUILD_ID_FILE), build_id)
    if found is None:
        return None
    entries, aliases, pool_sha256 = found

    def load(e: dict) -> Loaded:
        return load_compact(os.path.join(COMPACT_DIR, e["file"]), e["head_sha256"], pool_sha256, prover, aliases)
    return entries, load


def installed_entries(me: BuildIdentity) -> list:
    """This build's own tables in `tables_dir()` (made by `offsets scan --install`), as entries."""
    return own_entries(own_files(me.version))


def own_entries(files: list) -> list:
    """The own tables at `files` as entries (each carrying the table read to list it); a damaged one
    is left out."""
    from ..errors import TableError

    out = []
    for path in files:
        try:
            t = load_compact(path)
        except TableError:
            continue
        out.append(dict(index_entry(t.name, path, t.build.as_dict()), own=True, loaded=t))
    return out


def _load_entry(e: dict) -> Loaded:
    """The table of an entry; an own table's entry carries the one read to list it (used once)."""
    if e.get("own"):
        return e.pop("loaded", None) or load_compact(e["file"])
    return load_shipped(e)


