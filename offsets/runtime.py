"""The runtime API: where a field is in the interpreter that is running, or a clear refusal.

    offsets.get("listiterobject.it_index")    # byte offset (a bitfield: its storage unit's)
    offsets.sizeof("listiterobject")          # struct size
    offsets.field("PyASCIIObject.state.kind") # model.Field: offset, size, type, bits, array length
    offsets.build()                           # the table in use and how it was matched
    offsets.use_table("mine.yaml")            # a table of your own (a patched or forked CPython)

The table is picked from the shipped compact tables (`compact.py`) on first use: exactly this
build's identity (hexversion, layout flags, target triple, pointer size) is used as is; a table of
the same minor version and another patch level only if the live check (`live_check.py`) passes,
and never with OFFSETS_STRICT=1. Nothing here imports yaml or clang or parses YAML, and a struct's
fields are decoded only when one of them is first asked for.

`get` and `sizeof` are the `__getitem__` of dicts filled on demand, so a known name costs one
C-level dict lookup; `__missing__` resolves the rest (typedef and tag names, the aliases of
`data/aliases.yaml`) or raises `UnknownNameError` with the closest names.
"""
from __future__ import annotations

import json
import os
import sys

from .errors import NoMatchingTable, OffsetsError, TableError, UnknownNameError, close_matches

_HERE = os.path.dirname(os.path.abspath(__file__))
COMPACT_DIR = os.path.join(_HERE, "data", "compact")
#: Flags that `Py_DEBUG` turns on by itself (pyport.h), so tables and interpreters agree on them.
_IMPLIED = {"Py_DEBUG": ("Py_REF_DEBUG",)}
_FLAGS = ("Py_DEBUG", "Py_GIL_DISABLED", "Py_TRACE_REFS", "Py_REF_DEBUG", "Py_STATS")


# ---------------------------------------------------------------- the table in use
class Loaded:
    """One table as the runtime holds it: the compact header, and struct lines read and decoded on
    demand: from `lines` when given, else from the file `source` at the offsets the header gives."""

    def __init__(self, head: dict, lines, source: str, aliases: dict, base: int = 0) -> None:
        self.head, self.lines, self.source, self.aliases = head, lines, source, aliases
        b = head["build"]
        self.build = b
        self.name = table_name(b["version"], b["config"], b["target"]["triple"])
        self.order = {n: i for i, n in enumerate(head["structs"])}
        self.names = head["names"]
        self._rows: dict = {}
        #: struct key -> why it is not answered (a loose match: it moved between shipped patch releases)
        self.refused: dict = {}
        if lines is None:
            self._starts, at = [], base
            for size in head["sizes"]:
                self._starts.append(at)
                at += size

    def _line(self, i: int):
        if self.lines is not None:
            line = self.lines[i]
        else:
            try:
                with open(self.source, "rb") as f:
                    f.seek(self._starts[i])
                    line = f.read(self.head["sizes"][i])
            except OSError as e:
                raise TableError(f"cannot read table {self.source}: {e.strerror}") from None
        crcs = self.head.get("crc32")
        if crcs is not None:
            import zlib

            raw = line.encode() if isinstance(line, str) else line
            if zlib.crc32(raw.rstrip(b"\n")) != crcs[i]:
                raise _corrupt(self.source, f"struct line {i + 2} fails its checksum")
        return line

    def resolve_struct(self, name: str):
        """The table's key for a struct, typedef, tag or alias name; None if it has none."""
        for candidate in (name, *self.aliases.get(name, ())):
            key = self.names.get(candidate, candidate)
            if key in self.order:
                return key
        return None

    def _row(self, key: str) -> list:
        row = self._rows.get(key)
        if row is None:
            row = self._decode(key)
            row[6] = {f[0]: tuple(f[1:]) for f in row[6]}
            self._rows[key] = row
        return row

    def _decode(self, key: str) -> list:
        """A struct line as a list, refused unless every number in it is one a layout can have."""
        from .compact import check_row

        try:
            return check_row(json.loads(self._line(self.order[key])), key)
        except ValueError as e:
            raise _corrupt(self.source, str(e)) from None

    def layout(self, key: str) -> str:
        """The struct's layout (kind, size, alignment, fields) without where it is defined, as text."""
        row = self._decode(key)
        return json.dumps([row[1], row[2], row[3], row[6]])

    def fields(self, key: str) -> dict:
        """path -> (offset, size, type, bit_offset, bit_width, array_len, flexible)."""
        return self._row(key)[6]

    def size(self, key: str) -> int:
        return self._row(key)[2]

    def struct_names(self) -> list:
        return list(self.order) + list(self.names)

    def where(self) -> str:
        return f"table {self.name}"


def table_name(version: str, config: dict, triple: str) -> str:
    words = [w for flag, w in (("Py_GIL_DISABLED", "freethreaded"), ("Py_DEBUG", "debug")) if config.get(flag)]
    return f"cpython-{version}-{'-'.join(words) + '-' if words else ''}{triple}"


_index_doc = None


def _corrupt(path: str, what: str) -> TableError:
    return TableError(f"{path} is corrupt: {what}; reinstall offsets, or in a checkout run "
                      f"`python -m offsets.compact --write`")


def shipped_index() -> dict:
    """`data/compact/index.json`: the shipped tables' identities and the alias groups, checked
    against the digest it carries."""
    global _index_doc
    if _index_doc is None:
        from .compact import check_index

        path = os.path.join(COMPACT_DIR, "index.json")
        try:
            with open(path, "rb") as f:
                doc = json.loads(f.read(1 << 24))
        except OSError as e:
            raise TableError(f"the shipped tables are missing ({path}: {e.strerror}); reinstall offsets, "
                             f"or in a checkout run `python -m offsets.compact --write`") from None
        except ValueError:
            raise _corrupt(path, "not JSON") from None
        why = check_index(doc)
        if why:
            raise _corrupt(path, why)
        _index_doc = doc
    return _index_doc


def load_compact(path: str, head_sha256: str = None) -> Loaded:
    """A compact table (`compact.py`), of which only the header line is read now; a shipped one
    must have the header its `index.json` entry vouches for (`head_sha256`)."""
    from .compact import MAX_HEAD_BYTES, check_head

    try:
        with open(path, "rb") as f:
            first = f.readline(MAX_HEAD_BYTES + 1)
    except OSError as e:
        raise TableError(f"cannot read table {path}: {e.strerror}") from None
    if head_sha256 is not None:
        import hashlib

        if hashlib.sha256(first.rstrip(b"\n")).hexdigest() != head_sha256:
            raise _corrupt(path, "its header fails the checksum of index.json")
    try:
        head = json.loads(first)
    except ValueError:
        raise TableError(f"{path}: not a compact table (its first line is not JSON)") from None
    why = check_head(head)
    if why:
        raise TableError(f"{path}: not a compact table of format 1 ({why}); reinstall offsets or run "
                         f"`python -m offsets.compact --write`")
    return Loaded(head, None, path, shipped_index()["aliases"], base=len(first))


def load_shipped(entry: dict) -> Loaded:
    return load_compact(os.path.join(COMPACT_DIR, entry["file"]), entry["head_sha256"])


# ---------------------------------------------------------------- which table
def running_identity() -> dict:
    """This interpreter's build identity, in the terms of the tables (read from sys and sysconfig)."""
    import sysconfig

    v = sysconfig.get_config_var
    config = {"Py_DEBUG": bool(v("Py_DEBUG")), "Py_GIL_DISABLED": bool(v("Py_GIL_DISABLED")),
              "Py_TRACE_REFS": bool(v("Py_TRACE_REFS")) or hasattr(sys, "getobjects"),
              "Py_REF_DEBUG": bool(v("Py_REF_DEBUG")) or hasattr(sys, "gettotalrefcount"),
              "Py_STATS": bool(v("Py_STATS"))}
    triple = v("MULTIARCH") or _normalize_triple(v("HOST_GNU_TYPE") or "")
    vi = sys.version_info
    version = f"{vi.major}.{vi.minor}.{vi.micro}" + ("" if vi.releaselevel == "final" else
                                                      {"alpha": "a", "beta": "b", "candidate": "rc"}[vi.releaselevel]
                                                      + str(vi.serial))
    return {"version": version, "hexversion": sys.hexversion, "config": config, "triple": triple,
            "pointer_size": 8 if sys.maxsize > 2 ** 32 else 4}


def _normalize_triple(host: str) -> str:
    parts = host.split("-")
    if len(parts) == 4 and parts[1] in ("pc", "unknown"):
        parts.pop(1)
    return "-".join(parts)


def _flags(config: dict) -> tuple:
    on = {f for f in _FLAGS if config.get(f)}
    for flag, implied in _IMPLIED.items():
        if flag in on:
            on.update(implied)
    return tuple(sorted(on))


def describe(identity: dict) -> str:
    flags = ", ".join(_flags(identity["config"])) or "release"
    return f"CPython {identity['version']} ({flags}, {identity['triple']}, {identity['pointer_size']}-byte pointers)"


class Match:
    """The table in use and how it was chosen: `kind` is exact, loose or user."""

    def __init__(self, table: str, kind: str, detail: str, source: str, build: dict, check=None) -> None:
        self.table, self.kind, self.detail, self.source, self._build, self.check = \
            table, kind, detail, source, build, check

    @property
    def build(self):
        """The table's `model.Build` (version, hexversion, config, target, input digests)."""
        from .model import Build, Target

        b = self._build
        return Build(version=b["version"], hexversion=b["hexversion"], config=dict(b["config"]),
                     target=Target(**b["target"]), inputs=dict(b.get("inputs", {})))

    @property
    def version(self) -> str:
        return self._build["version"]

    def __repr__(self) -> str:
        return f"<offsets table {self.table}: {self.kind} match: {self.detail}>"

    __str__ = __repr__


def select(identity: dict, entries: list, load=load_shipped, check=None, strict: bool = False):
    """The table for `identity` among the shipped `entries`, and how it matched: exact, else the
    same minor version at the nearest patch level whose live `check` passes (not in `strict` mode);
    `NoMatchingTable` otherwise."""
    def same_abi(e):
        return (_flags(e["config"]) == _flags(identity["config"]) and e["triple"] == identity["triple"]
                and e["pointer_size"] == identity["pointer_size"])

    for e in entries:
        if e["hexversion"] == identity["hexversion"] and same_abi(e):
            t = load(e)
            return t, Match(t.name, "exact", f"built for {describe(identity)}", t.source, t.build)
    minor = identity["hexversion"] >> 16
    near = sorted((e for e in entries if e["hexversion"] >> 16 == minor and same_abi(e)),
                  key=lambda e: (abs(e["hexversion"] - identity["hexversion"]), -e["hexversion"]))
    failures = []
    if near and strict:
        raise _no_match(identity, entries, f"OFFSETS_STRICT=1 refuses the looser match "
                                           f"{', '.join(e['name'] for e in near)} (same minor version, other patch level)")
    if check is None:
        from .live_check import check
    for e in near:
        t = load(e)
        result = check(t)
        if result.ok:
            t.refused = moved_within_minor(near, load)
            refused = (f"; refused, as they differ between the shipped {e['version'].rsplit('.', 1)[0]} tables: "
                       f"{', '.join(sorted(t.refused))}" if t.refused else "")
            return t, Match(t.name, "loose", f"table of CPython {e['version']} used for {identity['version']}: "
                                             f"same minor version and layout flags, live check: {result.summary()}"
                                             + refused, t.source, t.build, result)
        failures.append(f"{e['name']} failed the live check: {result.summary()}")
    raise _no_match(identity, entries, "; ".join(failures) or
                    "none is of this minor version with these layout flags, target and pointer size")


def moved_within_minor(tables: list, load) -> dict:
    """Structs whose layout differs between shipped tables of one minor version (patch releases do
    move fields: 3.11.2 and 3.11.7 differ in _sre's SRE_STATE): struct -> which versions say what.
    A loosely matched table cannot vouch for these, whatever the live check says about others."""
    if len(tables) < 2:
        return {}
    layouts: dict = {}
    for e in tables:
        t = load(e)
        for key in t.order:
            layouts.setdefault(key, {}).setdefault(t.layout(key), []).append(e["version"])
    return {key: " vs ".join(f"{'/'.join(v)}: {len(json.loads(lay)[3])} fields, {json.loads(lay)[1]} bytes"
                             for lay, v in seen.items())
            for key, seen in layouts.items() if len(seen) > 1}


def _no_match(identity: dict, entries: list, why: str) -> NoMatchingTable:
    shipped = ", ".join(e["name"] for e in sorted(entries, key=lambda e: (e["triple"], e["hexversion"])))
    return NoMatchingTable(
        f"no shipped table fits {describe(identity)}{': ' + why if why else ''}; shipped: {shipped or 'none'}; "
        f"scan this build with `offsets scan -o table.yaml` (needs its C headers) and load it with "
        f"offsets.use_table('table.yaml')")


# ---------------------------------------------------------------- state and the public API
_state = None      # (Loaded, Match)


def _current() -> Loaded:
    global _state
    if _state is None:
        strict = os.environ.get("OFFSETS_STRICT", "") not in ("", "0")
        _set(*select(running_identity(), shipped_index()["tables"], load=load_shipped, strict=strict))
    return _state[0]


def _set(table: Loaded, match: Match) -> None:
    global _state
    _state = (table, match)
    _offsets_index.clear()
    _sizes.clear()
    c = sys.modules.get("offsets._offsets")
    if c is not None:
        c._reset()


def _set_none() -> None:
    """Forget the table in use (the next lookup chooses again); for tests. The capsule refreshes
    its cache when the next table is set."""
    global _state
    _state = None
    _offsets_index.clear()
    _sizes.clear()


def _unknown_struct(t: Loaded, name: str, struct: str) -> UnknownNameError:
    return UnknownNameError(name, close_matches(struct, t.struct_names(), 0.6),
                            where=t.where())


def _lookup(name, what: str):
    if not isinstance(name, str):
        raise TypeError(f"offsets.{what}() takes a str, not {type(name).__name__}")
    t = _current()
    struct, _, path = name.partition(".")
    key = t.resolve_struct(struct)
    if key is None:
        raise _unknown_struct(t, name, struct)
    if key in t.refused:
        raise NoMatchingTable(f"{name}: {key}'s layout differs between the shipped tables of this minor version "
                              f"({t.refused[key]}) and none is exactly this {describe(running_identity())}, so "
                              f"the loosely matched {t.name} cannot vouch for it; scan this build with "
                              f"`offsets scan -o table.yaml` and load it with offsets.use_table('table.yaml')")
    return t, key, path


class _Offsets(dict):
    """name -> byte offset, filled a struct at a time on first use."""

    def __missing__(self, name):
        t, key, path = _lookup(name, "get")
        fields = t.fields(key)
        if not path:
            raise UnknownNameError(name, [f"{name}.{p}" for p in list(fields)[:3]],
                                   where=f"{t.where()} as a field (it is a struct: offsets.sizeof({name!r}) is its size)")
        row = fields.get(path)
        if row is None:
            close = close_matches(path, list(fields), 0.5)
            raise UnknownNameError(name, [f"{name.partition('.')[0]}.{p}" for p in close],
                                   where=f"struct {key} of {t.where()}")
        prefix = key + "."
        self.update((prefix + p, r[0]) for p, r in fields.items())
        self[name] = row[0]
        return row[0]


class _Sizes(dict):
    """struct name -> size, filled on first use."""

    def __missing__(self, name):
        t, key, path = _lookup(name, "sizeof")
        if path:
            raise UnknownNameError(name, [name.partition(".")[0]],
                                   where=f"{t.where()} as a struct (offsets.field({name!r}).size is a field's size)")
        self[name] = size = t.size(key)
        return size


_offsets_index = _Offsets()
_sizes = _Sizes()

#: get(name) -> int: the byte offset of STRUCT.FIELD (nested paths: PyTypeObject.ob_base.ob_base.ob_type;
#: a bitfield: the offset of its storage unit, see field()). Raises UnknownNameError (a KeyError).
get = _offsets_index.__getitem__
#: sizeof(struct) -> int: the size of a struct (typedef, tag and alias names work too).
sizeof = _sizes.__getitem__


def field(name: str):
    """The `model.Field` of STRUCT.FIELD: offset, size, type, bit_offset/bit_width, array_len, flexible."""
    from .model import Field

    t, key, path = _lookup(name, "field")
    get(name)   # the same errors as get()
    o, size, type_, bo, bw, al, fl = t.fields(key)[path]
    return Field(path=path, offset=o, size=size, type=type_, bit_offset=bo, bit_width=bw, array_len=al,
                 flexible=bool(fl))


def build() -> Match:
    """The table in use: its name, build identity, and how it matched this interpreter."""
    _current()
    return _state[1]


def current_table():
    """The table in use as a full `model.Table` (every struct decoded): for the CLI."""
    return current_layouts(_current())


def current_layouts(t: Loaded):
    """A loaded table as a full `model.Table`: every struct decoded and checked."""
    from .compact import table_from_head

    return table_from_head(t.head, [t._line(i) for i in range(len(t.order))])


def use_table(path, verify: bool = True) -> Match:
    """Use the table at `path` (`offsets scan` YAML, or a compact .jsonl) from now on, for Python and C.

    It must be for this interpreter's minor version, layout flags and pointer size (TableError
    otherwise); with `verify` the live check must pass too (VerifyError otherwise).
    """
    path = os.fspath(path)
    if path.endswith(".jsonl"):
        t = load_compact(path)
        current_layouts(t)          # every struct checked by the model and its rules, once
    else:
        from . import compact, table_yaml

        head, lines = compact.split_text(compact.dumps(table_yaml.load(path), path))
        t = Loaded(head, lines, path, shipped_index()["aliases"])
    me = running_identity()
    b = t.build
    mine = (me["hexversion"] >> 16, _flags(me["config"]), me["pointer_size"])
    theirs = (b["hexversion"] >> 16, _flags(b["config"]), b["target"]["pointer_size"])
    if mine != theirs:
        raise TableError(f"{path} is for {t.name}, not for this {describe(me)}: scan this build with "
                         f"`offsets scan -o table.yaml`")
    result = None
    if verify:
        from .errors import VerifyError
        from .live_check import check

        result = check(t)
        if not result.ok:
            raise VerifyError(f"{path} does not describe this interpreter: {result.summary()}")
    how = "live check: " + result.summary() if result else "not checked (verify=False)"
    _set(t, Match(t.name, "user", f"loaded from {path}; {how}", path, t.build, result))
    return _state[1]


def live_check(table: Loaded = None):
    """Run the live check (`live_check.py`) of a table (default: the one in use) against this process."""
    from .live_check import check

    return check(table or _current())


def get_include() -> str:
    """The directory holding pyoffsets.h (installed: inside the package; a checkout: headers/)."""
    for d in (os.path.join(_HERE, "include"), os.path.join(os.path.dirname(_HERE), "headers")):
        if os.path.isfile(os.path.join(d, "pyoffsets.h")):
            return d
    raise OffsetsError(f"pyoffsets.h is in neither {_HERE}/include nor the checkout's headers/: reinstall offsets")
