"""Reading compact tables (format 8: 7 with the shard digests on group lines), with the standard
library only: what the runtime decodes.

A compact table is one JSON header line: the build; its structs as `struct_keys` (a text node of
their names, sorted, separated by spaces), `struct_ids` (each one's layout id, one after the
other) and `struct_lines` (a text node of each one's `defined_in` line in base 36, `-` for none),
which a reader turns into `structs`, name -> layout id or [layout id, line] (`struct_map`); and
the ids of its names and notes. The layouts are content-addressed
nodes in a pool: a node is one JSON line, and its id is the first `ID_CHARS` hex digits of the
line's sha256, so one layout is stored once however many builds share it, and every line read is
checked against the id it was asked for (a damaged pool is an error, never a wrong number).

    struct node:  [kind, size, align, file, origin, members(, c_type)]   (members: the id of a member node;
                  c_type: how C names it, `struct TAG` or a typedef name, where the table records it)
    member node:  [[member, ...]]
    member:       [name, offset, size, type, bit_offset, bit_width, array_len, flexible, child]
    names node:   {alias: struct key, ...}         (and the header's `guards`: {header: include guard, ...})
    text node:    "a note" (one of a table's `skipped` or `conflicts`)
    depends node: ["D", ...]     the header's `depends`: what each struct depends on (compact_depends.py)
    constants:    ["K", [id, ...]]                       an inner node: file nodes or inner nodes
                  ["F", file, names, values(, types)]    a file node with its constants, or
                  ["F", file, [chunk id, ...]]           one with them in chunks
                  ["k", names, values(, types)]          a chunk of a file's constants

A table's constants are one tree (the header's `constants`: the root's id, or null): a file node
per file, with its constants sorted by name, in chunks cut after a name whose sha256 is a
multiple of `CHUNK` when it has more than `CHUNK` of them; the file nodes, in file order, under
inner nodes cut the same way by their ids. So a build that differs from another in one value adds
one chunk and the few nodes above it, and a file whose constants are the same is stored once.
A set of constants is three parallel lists: `names`, one string of names separated by spaces, each
written `N:REST` when it starts with the first N characters of the name before it; `values`, a
list of integers; `types`, absent when every one is a macro of type int, else a string of one
code per constant separated by spaces: the type's (`TYPE_CODES`, empty for int; its width is the
header's `constant_sizes`, so the targets share them), then `e` for an enumerator.
`constants_left_out` (the header) counts the macros that are no constants, by reason.

A member's offset is relative to its parent; `child` is the id of the member node of its own
members (the fields `name.*` of the flat table); trailing default values (None, 0) are left out.
The shipped tables share one pool, `layouts.jsonl` (`"pool": "layouts.jsonl"` in their header);
a table of its own (`offsets scan --install`) carries its nodes after its header (`"pool":
{"ids": IDS, "ends": ENDS}`), where

    IDS:   the nodes' ids in sorted order, written one after the other (ID_CHARS hex digits each)
    ENDS:  where each node's line ends (after its newline), in bytes from the first node line,
           as hex numbers of one width (the fewest digits the last end needs), one after the other

A pool file is sharded by the first SHARD_CHARS hex digits of an id (256 shards). Its first line is
`{"shards": DIGESTS, "ends": ENDS, ...}`: the sha256 (hex) of each group line, one after the other,
and where each shard's line ends (in bytes from the first shard line). Then a line per shard,
`{"ids": IDS, "start": START, "ends": ENDS}`, of the nodes whose ids start with its digits (START:
where its first node starts, in bytes from the first node line; its ENDS from there). Then the group
lines: GROUP_SHARDS shards' line digests (sha256, hex) one after the other, for shards 0-15, 16-31,
and so on. Then the nodes, in id order. A reader decodes the small first line (whose sha256
index.json vouches for), then only the group lines and shards of the nodes it needs, each checked
against its digest as it is read, and seeks to those nodes. (Until format 7 the first line held the
256 shard digests themselves, 17 kB that every first lookup hashed.) Every process that loads a
table pays for what it decodes and checks. Since format 7 the nodes a field's lookup never reads
(constants, dependency data, include guards, skipped units and conflicts) are in a second pool file,
`cold.jsonl`, whose first line has the same form (`layouts.jsonl`'s first line names its sha256 as
`cold`) and whose shard lines are each the base64 of a zlib stream of what a shard line and its
nodes would be uncompressed (the shard's digest is of those bytes): 1.4 MB of them take about 0.4
MB, and `zlib` is imported only by a process that reads one (a constant, or the dependency data of a
build no build-id matches). A node the hot pool lacks is looked for there. Before format 5, the
pool's first line listed its ~12,000 ids and sizes as JSON items (half of a first lookup). Now the
strings are checked at C speed (their digits and lengths), a node is found by bisection over them,
and the range of its line is checked as it is read.
"""

import os
from stat import S_ISREG

from .build_identity import index_entry  # noqa: F401 (compact_read.index_entry: a table's row in index.json)

try:        # a first lookup loads no other shared object for its checksums and JSON, and checks its ids at C speed
    from .._lookup import json_value as _json_value, lower_hex as _hex, sha256_hex
except ImportError:                       # a source tree without its extensions built
    _json_value = None

    def sha256_hex(data) -> str:
        from .identity import sha256

        return sha256(data).hexdigest()

    def _hex(text) -> bool:
        """Whether `text` is a str of lowercase hex digits only."""
        return isinstance(text, str) and text.isascii() and not text.encode("ascii").translate(None, HEX_DIGITS)

FORMAT = 8
ID_CHARS = 10
POOL_FILE = "layouts.jsonl"
#: The pool of what a lookup of a field never reads (constants, dependency data, include guards,
#: skipped units, conflicts), each shard compressed: `ColdPool`.
COLD_FILE = "cold.jsonl"
#: The shipped tables that record build-ids, by build-id: what a first lookup reads in place of
#: index.json (`build_id_entries`).
BUILD_ID_FILE = "build_ids.txt"
#: The keys of an index entry the build-id file carries (the same values as index.json's).
BUILD_ID_KEYS = ("name", "file", "head_sha256", "version", "hexversion", "config", "triple", "pointer_size",
                 "vendor", "build_ids")
#: The longest build-id file read.
MAX_BUILD_ID_BYTES = 1 << 22
#: The longest header line a compact table or pool may have.
MAX_HEAD_BYTES = 4 * 1024 * 1024
#: The longest node line.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The most hex digits of a pool's line ends (a pool of up to 2**32 bytes).
MAX_END_DIGITS = 8
#: A pool file's node is in the shard of the first SHARD_CHARS hex digits of its id.
SHARD_CHARS = 2
SHARDS = 16 ** SHARD_CHARS
DIGEST_CHARS = 64
#: A group line holds the digests of this many shards, one after the other.
GROUP_SHARDS = 16
GROUPS = SHARDS // GROUP_SHARDS
GROUP_LINE_BYTES = GROUP_SHARDS * DIGEST_CHARS + 1
HEX_DIGITS = b"0123456789abcdef"
#: The deepest nesting of members (a struct in a struct ...).
MAX_DEPTH = 64
#: A member's values when left out at its end.
MEMBER_DEFAULTS = (None, None, None, None, None, None, None, 0, None)
FIX = "reinstall cpython-offsets, or in a checkout run `make tables`"
#: A constants node is cut after about one row (or child) in CHUNK.
CHUNK = 16
LEAF, INNER, FILE_NODE = "k", "K", "F"
#: The C integer types a constant can have (clang's canonical spellings), each with its
#: signedness; None: plain `char`, signed or not as the target has it.
INTEGER_TYPES = {"_Bool": False, "char": None, "signed char": True, "unsigned char": False, "short": True,
                 "unsigned short": False, "int": True, "unsigned int": False, "long": True,
                 "unsigned long": False, "long long": True, "unsigned long long": False}
#: The C integer type of a constant -> its code in a row (INTEGER_TYPES).
TYPE_CODES = {"int": "i", "unsigned int": "u", "long": "l", "unsigned long": "ul", "long long": "ll",
              "unsigned long long": "ull", "short": "s", "unsigned short": "us", "char": "c", "signed char": "sc",
              "unsigned char": "uc", "_Bool": "b"}
TYPES = {code: t for t, code in TYPE_CODES.items()}
ENUM = "e"
#: A name shares at least this many first characters with the one before it to be written N:REST.
SHARED_PREFIX = 4


# ---------------------------------------------------------------- the rows a reader makes
# The named records the runtime reads a table's rows as: a struct, a field, a constant. Each is a
# tuple (cheap to make, one per row decoded) whose items also have names, so no reader counts positions.
#: Offsets and sizes stay below 2 GiB: no CPython struct comes near, and a C `int` holds them.
MAX_BYTES = 2 ** 31 - 1
#: The largest alignment a table may state (a page; CPython's largest is 64).
MAX_ALIGN = 4096


def _item(i: int, doc: str):
    return property(lambda self: self[i], doc=doc)


class FieldRow(tuple):
    """Where a field lies: (offset, size, type, bit_offset, bit_width, array_len, flexible)."""

    __slots__ = ()
    offset = _item(0, "byte offset in its struct")
    size = _item(1, "bytes")
    type = _item(2, "its C type's spelling")
    bit_offset = _item(3, "a bit-field's first bit in its unit, else None")
    bit_width = _item(4, "a bit-field's width in bits, else None")
    array_len = _item(5, "an array's element count, else None")
    flexible = _item(6, "1 for a flexible array member, else 0")


class StructRow(tuple):
    """A struct as one row: (name, kind, size, align, defined_in, origin, fields, c_type); `fields` is
    path -> FieldRow once `Loaded.row` has decoded it, `c_type` None unless the table records it."""

    __slots__ = ()
    name = _item(0, "its key in the table")
    kind = _item(1, "'struct' or 'union'")
    size = _item(2, "sizeof, in bytes")
    align = _item(3, "alignof, in bytes")
    defined_in = _item(4, "FILE:LINE of its definition")
    origin = _item(5, "'clang' or 'dwarf'")
    fields = _item(6, "its fields")

    @property
    def c_type(self):
        """How C names it (`struct _gil_runtime_state`), where the table records it; else None."""
        return self[7] if len(self) > 7 else None


class ConstantRow(tuple):
    """A constant: (name, value, type, size, defined_in, kind)."""

    __slots__ = ()
    name = _item(0, "its name (`NAME@FILE` where several files define it)")
    value = _item(1, "its integer value")
    type = _item(2, "its C integer type, or None for int")
    size = _item(3, "its type's size in bytes")
    defined_in = _item(4, "the file that defines it")
    kind = _item(5, "'macro' or 'enum'")


# ---------------------------------------------------------------- reading
def names_text(names: list) -> str:
    """Sorted names as the `names` string of a constants node (front-coded)."""
    out, before = [], ""
    for n in names:
        k = 0
        for a, b in zip(n, before):
            if a != b:
                break
            k += 1
        out.append(f"{k}:{n[k:]}" if k >= SHARED_PREFIX else n)
        before = n
    return " ".join(out)


def type_code(type_: str, kind: str) -> str:
    return ("" if type_ == "int" else TYPE_CODES[type_]) + (ENUM if kind == "enum" else "")


def cut(key: str) -> bool:
    """Whether a constants node ends after the row named (or the child node with id) `key`."""
    return int(sha256_hex(key.encode())[:8], 16) % CHUNK == 0


def loads(data):
    """json_read.loads(data), without importing json_read where `_lookup.json_value` reads the text
    (every line a first lookup reads)."""
    got = _json_value(data) if _json_value is not None else None
    if got is not None:
        return got[0]
    from .json_read import loads as read

    return read(data)


def _corrupt(what: str) -> "CorruptTableError":
    from ..errors import CorruptTableError     # imported when something is wrong: a first lookup never needs it

    return CorruptTableError(f"{what}; {FIX}")


def node_id(line: bytes) -> str:
    """The id of a node: the start of its line's sha256 (without the newline)."""
    return sha256_hex(line)[:ID_CHARS]


def _is_int(v) -> bool:
    return type(v) is int


def _is_id(v) -> bool:
    return isinstance(v, str) and len(v) == ID_CHARS and _hex(v)


def end_digits(ids: str, ends: str) -> int:
    """The width of each of a pool's line ends (`ends`) for its ids (`ids`), or 0 when the two strings
    are not a pool's: ids of ID_CHARS hex digits each, one end of 1..MAX_END_DIGITS hex digits per id."""
    if not (_hex(ids) and _hex(ends) and len(ids) % ID_CHARS == 0):
        return 0
    n = len(ids) // ID_CHARS
    width = len(ends) // n if n else 1
    return width if 1 <= width <= MAX_END_DIGITS and len(ends) == n * width else 0


class Pool:
    """Layout nodes by id: from `lines` (bytes, in memory) or from the file `source`, whose node
    lines start at byte `base` in the order of `ids` and end where `ends` says (the two strings of a
    pool header, checked by `end_digits`)."""

    def __init__(self, source: str, ids: str, ends: str, base: int = 0, lines: list = None) -> None:
        self.source, self.lines = source, lines
        #: in id order, as written (compact.PoolWriter.head): a node is found by bisection, with nothing
        #: built first (the shared pool has ~12,000). Its line is checked against its id anyway, so a
        #: pool out of order could only fail to find a node, never give another.
        self._ids, self._ends, self._base = ids, ends, base
        self._width = end_digits(ids, ends)
        self._nodes: dict = {}

    def _index(self, node) -> int:
        """The position of `node` in the ids, or -1."""
        ids, k = self._ids, ID_CHARS
        if not (isinstance(node, str) and len(node) == k):
            return -1
        lo, hi = 0, len(ids) // k
        while lo < hi:
            mid = (lo + hi) // 2
            if ids[mid * k:mid * k + k] < node:
                lo = mid + 1
            else:
                hi = mid
        return lo if ids[lo * k:lo * k + k] == node else -1

    def _span(self, i: int) -> tuple:
        """(start, size) of node line `i` in the file, refused unless it is a line's range."""
        w, ends = self._width, self._ends
        start = int(ends[(i - 1) * w:i * w], 16) if i else 0
        size = int(ends[i * w:(i + 1) * w], 16) - start
        if not 1 <= size <= MAX_LINE_BYTES:
            raise _corrupt(f"{self.source}: layout {self._ids[i * ID_CHARS:(i + 1) * ID_CHARS]}: "
                           f"its line's range is malformed")
        return self._base + start, size

    def _line(self, node) -> bytes:
        """The line of `node` (not checked yet)."""
        i = self._index(node)
        if i < 0:
            raise _corrupt(f"{self.source}: layout {str(node)[:20]!r} is not in its pool")
        if self.lines is not None:
            return self.lines[i]
        return _read(self.source, *self._span(i))

    def node(self, node: str) -> list:
        """The node `node`, decoded, once its line is checked against its id."""
        got = self._nodes.get(node)
        if got is not None:
            return got
        line = self._line(node).rstrip(b"\n")
        self.check(node, line)
        try:
            got = loads(line)
        except ValueError:
            raise _corrupt(f"{self.source}: layout {node} is not JSON") from None
        self._nodes[node] = got
        return got

    def check(self, node: str, line: bytes) -> None:
        """A line is the node it was asked for when its digest is the id."""
        if node_id(line) != node:
            raise _corrupt(f"{self.source}: layout {node} fails its checksum")

    def depends(self, head: dict):
        """The table's dependency data (`compact_depends.View`), or None: none recorded, or a node
        that is not one (its structs then have no sets: the next rule down decides)."""
        from .compact_depends import view

        node = head.get("depends")
        return None if node is None else view(self.node(node), self.text, self.node, len(head["structs"]))

    def names(self, node: str) -> dict:
        """A table's names node: alias or typedef -> struct key."""
        names = self.node(node)
        if not (isinstance(names, dict) and all(isinstance(v, str) for v in names.values())):
            raise _corrupt(f"{self.source}: layout {node} is not a names node")
        return names

    def text(self, node: str) -> str:
        text = self.node(node)
        if not isinstance(text, str):
            raise _corrupt(f"{self.source}: layout {node} is not a text node")
        return text

    def notes(self, head: dict, constants: bool = True) -> dict:
        """A table's names, skipped units, conflicts and constants (none unless `constants`), from
        the nodes its header names."""
        core = head.get("core_only")
        if core is not None and not (isinstance(core, list) and all(isinstance(n, str) for n in core)):
            raise _corrupt(f"{self.source}: its core_only is not a list of names")
        return {"names": self.names(head["names"]), "skipped": [self.text(n) for n in head["skipped"]],
                "conflicts": [self.text(n) for n in head["conflicts"]],
                "constants": self.constants(head.get("constants"), head.get("constant_sizes") or {})
                if constants else [],
                "constants_left_out": dict(head.get("constants_left_out") or {}),
                "guards": None if head.get("guards") is None else self.names(head["guards"]),
                "core_only": core}

    def constants(self, root, sizes: dict) -> list:
        """A table's constants as rows (rows.ConstantRow: name, value, type, size, defined_in, kind; file,
        then name order), each checked as `check_constant_row` does."""
        out: list = []
        if root is not None:
            self._constants(root, sizes, out, 0)
        return out

    def _constants(self, node: str, sizes: dict, out: list, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _corrupt(f"{self.source}: constants nested deeper than {MAX_DEPTH}")
        got = self.node(node) if _is_id(node) else None
        if isinstance(got, list) and len(got) == 2 and got[0] == INNER and isinstance(got[1], list):
            for child in got[1]:
                self._constants(child, sizes, out, depth + 1)
            return
        if not (isinstance(got, list) and len(got) in (3, 4, 5) and got[0] == FILE_NODE and isinstance(got[1], str)):
            raise _corrupt(f"{self.source}: layout {str(node)[:20]!r} is not a constants node")
        file, items = got[1], got[2:]
        if len(items) == 1 and isinstance(items[0], list) and all(_is_id(i) for i in items[0]):
            for chunk_id in items[0]:
                chunk = self.node(chunk_id)
                if not (isinstance(chunk, list) and chunk and chunk[0] == LEAF):
                    raise _corrupt(f"{self.source}: layout {chunk_id} is not a chunk of constants")
                self._rows(file, chunk[1:], sizes, out)
        else:
            self._rows(file, items, sizes, out)

    def _rows(self, file: str, parts: list, sizes: dict, out: list) -> None:
        """Append the constants of one set (names, values, types) of `file`, each checked."""
        if not (len(parts) in (2, 3) and isinstance(parts[0], str) and isinstance(parts[1], list)
                and (len(parts) == 2 or isinstance(parts[2], str))):
            raise _corrupt(f"{self.source}: constants of {file[:60]} are malformed")
        names, values = parts[0].split(" "), parts[1]
        codes = parts[2].split(" ") if len(parts) == 3 else [""] * len(names)
        if not (len(names) == len(values) == len(codes)):
            raise _corrupt(f"{self.source}: constants of {file[:60]} are malformed")
        before = ""
        for token, value, code in zip(names, values, codes):
            k, colon, rest = token.partition(":")
            name = before[:int(k)] + rest if colon and k.isdigit() and int(k) <= len(before) else token
            before = name
            kind = "enum" if code.endswith(ENUM) else "macro"
            code = (code[:-len(ENUM)] if kind == "enum" else code) or "i"
            out.append(ConstantRow(check_constant_row([name, value, TYPES.get(code), sizes.get(code), file, kind],
                                                      self.source)))

    def row(self, name: str, ref) -> StructRow:
        """The struct `name` as one flat row (rows.StructRow), each field [path, offset, size, type,
        bit_offset, bit_width, array_len, flexible]."""
        node, line = (ref, None) if isinstance(ref, str) else (ref[0], ref[1])
        s = self.node(node)
        if not (isinstance(s, list) and len(s) in (6, 7)):
            raise _corrupt(f"{self.source}: struct {name[:60]}: layout {node} is not a struct node")
        kind, size, align, file, origin, members, *c_type = s
        defined_in = file if line is None else f"{file}:{line}"
        fields: list = []
        self._expand(self.members(members, name), "", 0, fields, 0)
        return StructRow(check_row([name, kind, size, align, defined_in, origin, fields, *c_type], name, self.source))

    def members(self, node, owner: str) -> list:
        """The members of member node `node` (a struct's, or a member's own: `owner`)."""
        got = self.node(node) if _is_id(node) else None
        if not (isinstance(got, list) and len(got) == 1 and isinstance(got[0], list)):
            raise _corrupt(f"{self.source}: {owner[:60]!r}: its members are not a member node")
        return got[0]

    def _expand(self, members: list, prefix: str, base: int, out: list, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _corrupt(f"{self.source}: members nested deeper than {MAX_DEPTH}")
        for m in members:
            if not (isinstance(m, list) and 4 <= len(m) <= len(MEMBER_DEFAULTS) and isinstance(m[0], str)
                    and _is_int(m[1])):
                raise _corrupt(f"{self.source}: a member under {prefix[:60]!r} is malformed")
            m = m + list(MEMBER_DEFAULTS[len(m):])
            out.append([prefix + m[0], base + m[1], *m[2:8]])
            if m[8] is not None:
                self._expand(self.members(m[8], prefix + m[0]), prefix + m[0] + ".", base + m[1], out, depth + 1)


class SharedPool(Pool):
    """The nodes of a pool file: its first line's `shards` and `ends` (checked by `check_pool_head`)
    say what each group line's digest must be and where each shard's line is; a group line, and a
    shard (checked against the digest its group line gives), is read and checked when a node of it
    is first asked for, and a shard is a `Pool` of its nodes. A node it lacks is looked for in the
    cold pool (`cold`: its file and the sha256 of its first line), opened then."""

    def __init__(self, source: str, digests: str, ends: str, base: int, cold: tuple = None) -> None:
        super().__init__(source, "", "", base)
        self._digests, self._shard_ends = digests, ends
        self._width = len(ends) // SHARDS
        self._groups_at = base + int(ends[-self._width:], 16)       # after the last shard line
        self._shards: dict = {}
        self._groups: dict = {}
        self._cold, self._cold_pool = cold, None

    def _shard_digest(self, k: int) -> str:
        """Shard k's digest, from its group line (read and checked when first needed)."""
        g, i = divmod(k, GROUP_SHARDS)
        line = self._groups.get(g)
        if line is None:
            line = _read(self.source, self._groups_at + g * GROUP_LINE_BYTES, GROUP_LINE_BYTES)
            if not (line.endswith(b"\n") and sha256_hex(line[:-1]) ==
                    self._digests[g * DIGEST_CHARS:(g + 1) * DIGEST_CHARS]):
                raise _corrupt(f"{self.source}: shard {k:02x}: the line of the digests of shards "
                               f"{g * GROUP_SHARDS:02x}-{g * GROUP_SHARDS + GROUP_SHARDS - 1:02x} fails its checksum")
            line = self._groups[g] = line[:-1].decode("ascii")
        return line[i * DIGEST_CHARS:(i + 1) * DIGEST_CHARS]

    def _line(self, node) -> bytes:
        if not (isinstance(node, str) and len(node) == ID_CHARS and _hex(node)):
            raise _corrupt(f"{self.source}: layout {str(node)[:20]!r} is not in its pool")
        shard = self._shard(int(node[:SHARD_CHARS], 16))
        if shard._index(node) < 0 and self._cold is not None:
            if self._cold_pool is None:
                self._cold_pool = _open_cold(*self._cold)
            return self._cold_pool._line(node)
        return shard._line(node)

    def _shard(self, k: int) -> Pool:
        shard = self._shards.get(k)
        if shard is None:
            w, ends = self._width, self._shard_ends
            start = int(ends[(k - 1) * w:k * w], 16) if k else 0
            size = int(ends[k * w:(k + 1) * w], 16) - start
            if not 1 <= size <= MAX_HEAD_BYTES:
                raise _corrupt(f"{self.source}: shard {k:02x}: its line's range is malformed")
            line = self._shard_text(k, _read(self.source, self._base + start, size).rstrip(b"\n"))
            if sha256_hex(line) != self._shard_digest(k):
                raise _corrupt(f"{self.source}: shard {k:02x} fails its checksum")
            line, _, nodes = line.partition(b"\n")
            try:
                head = loads(line)
            except ValueError:
                raise _corrupt(f"{self.source}: shard {k:02x} is not JSON") from None
            if not (isinstance(head, dict) and end_digits(head.get("ids"), head.get("ends"))
                    and _is_int(head.get("start")) and 0 <= head["start"] < 16 ** MAX_END_DIGITS):
                raise _corrupt(f"{self.source}: shard {k:02x}: its node list is malformed")
            shard = self._shards[k] = self._shard_pool(head, ends, w, nodes)
        return shard

    def _shard_text(self, k: int, line: bytes) -> bytes:
        """What shard k's line says (here: itself)."""
        return line

    def _shard_pool(self, head: dict, ends: str, w: int, nodes: bytes) -> Pool:
        """The `Pool` of a shard's nodes (here: where they are in the file)."""
        return Pool(self.source, head["ids"], head["ends"], self._groups_at + GROUPS * GROUP_LINE_BYTES + head["start"])


class ColdPool(SharedPool):
    """The cold pool file (`COLD_FILE`): a shard's line is the base64 of a zlib stream of its line
    and its nodes, which are held in memory once it is read."""

    def _shard_text(self, k: int, line: bytes) -> bytes:
        try:
            import binascii
            import zlib
        except ImportError:
            from ..errors import OffsetsError

            raise OffsetsError("this Python has no zlib module, and the shipped tables keep their constants and "
                               "dependency data compressed: build CPython with zlib (pip needs it too)") from None
        try:
            inflate = zlib.decompressobj()
            text = inflate.decompress(binascii.a2b_base64(line), MAX_HEAD_BYTES + MAX_LINE_BYTES)
        except (binascii.Error, zlib.error, ValueError):
            raise _corrupt(f"{self.source}: shard {k:02x} is not base64 of a zlib stream") from None
        if inflate.unconsumed_tail or not inflate.eof:
            raise _corrupt(f"{self.source}: shard {k:02x} holds more than a shard may")
        return text

    def _shard_pool(self, head: dict, ends: str, w: int, nodes: bytes) -> Pool:
        lines = nodes.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if len(lines) * ID_CHARS != len(head["ids"]):
            raise _corrupt(f"{self.source}: a shard's nodes are not its ids")
        return Pool(self.source, head["ids"], head["ends"], lines=lines)


def _open_cold(path: str, digest: str) -> ColdPool:
    head, base, _ = _first_line(path, digest, POOL_FILE)
    why = check_pool_head(head)
    if why:
        raise _corrupt(f"{path}: {why}")
    return ColdPool(path, head["shards"], head["ends"], base)


def _read(path: str, start: int, size: int) -> bytes:
    """`size` bytes of `path` from `start` (fewer at its end), of a file _first_line opened before,
    as a regular file, and still one (opened non-blocking): through a bare descriptor where the OS
    reads at an offset (a quarter of what `open()` costs: a first lookup reads a dozen lines this way)."""
    try:
        if not _PREAD:
            with open(path, "rb") as f:
                f.seek(start)
                return f.read(size)
        fd = os.open(path, _READ_FLAGS)
        try:
            if not S_ISREG(os.fstat(fd).st_mode):     # an own table's file may be a FIFO by now
                raise _corrupt(f"{path} is no regular file (any more)")
            data = os.pread(fd, size, start)
            while 0 < len(data) < size:
                more = os.pread(fd, size - len(data), start + len(data))
                if not more:
                    break
                data += more
            return data
        finally:
            os.close(fd)
    except OSError as e:
        raise _corrupt(f"cannot read {path}: {e.strerror}") from None


_PREAD = hasattr(os, "pread")
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


_ENTRY = {"name": str, "file": str, "version": str, "hexversion": int, "config": dict, "triple": str,
          "pointer_size": int, "head_sha256": str}


def build_id_entries(path: str, build_id: str):
    """(the index entries that record `build_id`, the aliases, the pool's sha256) from the build-id
    file `compact.build_id_text` writes: its first line a JSON header (format, aliases, pool_sha256,
    and the length of the lines after it), then one `BUILD-ID SHA256 ENTRIES-JSON` line per
    build-id, sorted, whose sha256 covers the header and the line. Only the header and that
    build-id's line are read (`sorted_line`), decoded and hashed. None when the file is missing,
    damaged (another length, a line that fails its checksum) or not of this format: the caller then
    reads index.json, as if there were none."""
    key = build_id.encode("ascii", "replace") + b" "
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        first = line_at(fd, 0, size)
        if size > MAX_BUILD_ID_BYTES or first is None:
            return None
        try:
            head = loads(first)
        except ValueError:
            return None
        if not (isinstance(head, dict) and head.get("format") == FORMAT
                and head.get("bytes") == size - len(first) - 1 and isinstance(head.get("aliases"), dict)
                and isinstance(head.get("pool_sha256"), str)):
            return None
        line = sorted_line(fd, len(first) + 1, size, key)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not line:
        return [], head["aliases"], head["pool_sha256"]
    digest, _, text = line[len(key):].partition(b" ")
    if sha256_hex(first + b"\n" + key + text).encode() != digest:
        return None
    try:
        entries = loads(text)
    except ValueError:
        return None
    if not (isinstance(entries, list) and entries) or any(
            entry_problem(e) or build_id not in (e.get("build_ids") or ()) for e in entries):
        return None
    return entries, head["aliases"], head["pool_sha256"]


#: What each step of `sorted_line` reads: more than a line of the build-id file and the key after it.
PROBE_BYTES = 2048


def line_at(fd: int, at: int, size: int):
    """The line of the file open at `fd` (`size` bytes) that starts at byte `at`, without its
    newline; None where it has none before the end."""
    data = b""
    while at + len(data) < size:
        more = os.pread(fd, PROBE_BYTES, at + len(data))
        if not more:
            break
        end = more.find(b"\n")
        if end >= 0:
            return data + more[:end]
        data += more
    return None


def sorted_line(fd: int, lo: int, hi: int, key: bytes) -> bytes:
    """The line of the file open at `fd` that starts with `key` (a build-id and a space; without
    its newline), among the lines sorted by build-id from byte `lo` (a line's start) to `hi` (the
    end); b"" when none does. A bisection over the bytes: each step reads a probe from the middle
    to the next line's build-id, so a first lookup reads a few kilobytes of the file, not all of
    it. Where a probe holds no whole build-id (a line longer than it), the lines from `lo` are read
    in turn."""
    target, end = key[:-1], hi
    while hi - lo > PROBE_BYTES:
        mid = (lo + hi) // 2
        probe = os.pread(fd, PROBE_BYTES, mid - 1)
        newline = probe.find(b"\n")
        space = probe.find(b" ", newline + 1) if newline >= 0 else -1
        if space < 0:
            break
        start = mid + newline           # the first line that starts at `mid` or after it
        found = probe[newline + 1:space]
        if start >= hi or found > target:
            hi = mid                    # no line starts between `mid` and that one
        else:
            lo = start
            if found == target:
                break
    while lo < min(hi, end):
        line = line_at(fd, lo, end)
        if line is None:                # the last line
            line = os.pread(fd, end - lo, lo)
        if line.startswith(key):
            return line
        lo += len(line) + 1
    return b""


def entry_problem(e) -> str:
    """Why `e` is not an index entry ('' if it is): a key of the index format missing or of another
    type, or a file name that is not a plain name."""
    if not isinstance(e, dict) or any(not isinstance(e.get(k), t) or (t is int and not _is_int(e[k]))
                                      for k, t in _ENTRY.items()):
        return "an entry lacks a key of the index format"
    if "/" in e["file"] or "\\" in e["file"] or e["file"].startswith("."):
        return f"an entry names the file {e['file'][:60]!r}, which is not a plain name"
    return ""


def check_pool_head(head) -> str:
    """Why a pool file's first line is not one of this format ('' if it is): its two strings, at C
    speed (each shard's line is checked as it is read: `SharedPool._shard`)."""
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        return f"not a layout pool of format {FORMAT}"
    digests, ends = head.get("shards"), head.get("ends")
    if not (_hex(digests) and len(digests) == GROUPS * DIGEST_CHARS and _hex(ends) and len(ends) % SHARDS == 0
            and 1 <= len(ends) // SHARDS <= MAX_END_DIGITS):
        return "its shard list is malformed"
    return ""


def check_head(head) -> str:
    """Why a compact table's first line is not a header of this format ('' if it is)."""
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        fmt = head.get("format") if isinstance(head, dict) else None
        return f"compact format {str(fmt)[:20] if _is_int(fmt) else None}"
    b = head.get("build")
    if not (isinstance(b, dict) and isinstance(b.get("version"), str) and _is_int(b.get("hexversion"))
            and isinstance(b.get("config"), dict) and isinstance(b.get("target"), dict)
            and isinstance(b["target"].get("triple"), str) and b["target"].get("pointer_size") in (4, 8)):
        return "its build is malformed"
    if not (isinstance(b.get("vendor"), (str, type(None))) and isinstance(b.get("defines"), (dict, type(None)))
            and isinstance(b.get("inputs"), (dict, type(None))) and isinstance(b.get("stand_in"), (str, type(None)))):
        return "its build's vendor, defines, inputs or stand-in is malformed"
    binaries = b.get("binaries", [])
    if not (isinstance(binaries, list)
            and all(isinstance(x, list) and len(x) == 3 and all(isinstance(v, str) for v in x) for x in binaries)):
        return "its build's binaries are malformed"
    if not (_is_id(head.get("struct_keys")) and _is_id(head.get("struct_lines")) and _hex(head.get("struct_ids"))
            and len(head["struct_ids"]) % ID_CHARS == 0):
        return "its struct list is malformed"
    pool = head.get("pool")
    if isinstance(pool, str):
        if pool != POOL_FILE:
            return f"its pool {pool[:60]!r} is not {POOL_FILE}"
    elif not (isinstance(pool, dict) and end_digits(pool.get("ids"), pool.get("ends"))):
        return "its node list is malformed"
    if not (_is_id(head.get("names")) and isinstance(head.get("scanner"), dict)
            and all(isinstance(head.get(k), list) and all(_is_id(n) for n in head[k]) for k in ("skipped", "conflicts"))):
        return "its names, scanner, skipped or conflicts entry is malformed"
    if not (head.get("depends") is None or _is_id(head["depends"])):
        return "its dependency entry is malformed"
    sizes, left_out = head.get("constant_sizes", {}), head.get("constants_left_out", {})
    if not ((head.get("constants") is None or _is_id(head["constants"]))
            and isinstance(sizes, dict) and all(k in TYPES and v in (1, 2, 4, 8) for k, v in sizes.items())
            and isinstance(left_out, dict) and all(isinstance(k, str) and _is_int(v) for k, v in left_out.items())):
        return "its constants entry is malformed"
    return ""


def check_constant_row(row: list, origin: str = "compact table") -> list:
    """`row` ([name, value, type, size, defined_in, kind]) if it is a constant C could have (the
    rules of `sanity.check_constant`); CorruptTableError if not. The runtime serves these numbers
    without the model, so it checks them here."""
    name, value, type_, size, defined_in, kind = row
    signed = INTEGER_TYPES.get(type_, False)
    ok = (isinstance(name, str) and 0 < len(name) <= 1024 and type_ in INTEGER_TYPES and size in (1, 2, 4, 8)
          and _is_int(value) and kind in ("macro", "enum") and isinstance(defined_in, str))
    if ok:
        low = -(1 << (8 * size - 1)) if signed is not False else 0
        high = 1 if type_ == "_Bool" else (1 << (8 * size - (1 if signed else 0))) - 1
        ok = low <= value <= high
    if not ok:
        raise _corrupt(f"{origin}: constant {str(name)[:60]!r} is malformed")
    return row


def check_row(row, key: str, origin: str = "compact table") -> list:
    """`row` (a decoded struct) if its shape and numbers are those of a layout; CorruptTableError if not.
    The runtime serves these numbers without the model, so it checks them here."""
    if not (isinstance(row, list) and len(row) in (7, 8) and row[0] == key and row[1] in ("struct", "union")
            and _is_int(row[2]) and 0 <= row[2] <= MAX_BYTES and _is_int(row[3]) and 1 <= row[3] <= MAX_ALIGN
            and isinstance(row[6], list) and (len(row) == 7 or isinstance(row[7], str))):
        raise _corrupt(f"{origin}: struct {str(key)[:60]}: not a struct of format {FORMAT}")
    for f in row[6]:
        if not (isinstance(f, list) and len(f) == 8 and isinstance(f[0], str) and isinstance(f[3], str)
                and _is_int(f[1]) and _is_int(f[2]) and 0 <= f[1] <= MAX_BYTES and 0 <= f[2] <= MAX_BYTES
                and all(v is None or (_is_int(v) and 0 <= v <= MAX_BYTES) for v in f[4:7]) and f[7] in (0, 1)
                and f[1] + f[2] <= row[2]):
            raise _corrupt(f"{origin}: struct {key}: field {str(f[0] if isinstance(f, list) and f else f)[:60]!r} "
                          f"is malformed")
    return row


class StructMap:
    """A header's structs as a read-only mapping, key -> layout id (or [layout id, line]), in key
    order, over its key list's text: a key is found in that text at C speed, where it must be once
    (a first lookup asks for one of a thousand), the line list (`lines_of()`) is read when a value
    is first made, and the keys are split, and checked to be each there once, when iterated."""

    __slots__ = ("_text", "_n", "_ids", "_lines_of", "_lines", "_keys", "_found", "_origin")

    def __init__(self, text: str, ids: str, lines_of, origin: str) -> None:
        self._text, self._n, self._ids, self._origin = f" {text} ", len(ids) // ID_CHARS, ids, origin
        self._lines_of, self._lines, self._keys, self._found = lines_of, None, None, {}

    def _malformed(self, what: str):
        return _corrupt(f"{self._origin}: its struct list is malformed{what}")

    def _index(self, key) -> int:
        """The position of `key` in the key list, or -1."""
        i = self._found.get(key) if isinstance(key, str) else -1
        if i is not None:
            return i
        if not key or " " in key:
            return -1
        token = f" {key} "
        at = self._text.find(token)
        if at < 0:
            return -1
        if self._text.find(token, at + 1) >= 0:
            raise self._malformed(f" ({str(key)[:60]!r} twice)")
        i = self._found[key] = self._text.count(" ", 0, at)
        return i

    def __getitem__(self, key: str):
        i = self._index(key)
        if i < 0:
            raise KeyError(key)
        lines = self._lines
        if lines is None:
            lines = self._lines_of().split(" ")
            if len(lines) != self._n:
                raise self._malformed("")
            self._lines = lines
        node, line = self._ids[i * ID_CHARS:(i + 1) * ID_CHARS], lines[i]
        if line == "-":
            return node
        try:
            at = int(line, 36)
        except ValueError:
            at = -1
        if not 0 <= at <= MAX_LINE_BYTES:
            raise self._malformed(f" (the line of {str(key)[:60]!r})")
        return [node, at]

    def get(self, key: str, default=None):
        return self[key] if self._index(key) >= 0 else default

    def __contains__(self, key) -> bool:
        return self._index(key) >= 0

    def keys(self) -> list:
        if self._keys is None:
            keys = self._text[1:-1].split(" ") if self._n else []
            if len(set(keys)) != len(keys):
                raise self._malformed("")
            self._keys = keys
        return list(self._keys)

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return self._n

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def values(self):
        return [self[k] for k in self.keys()]


def struct_map(head: dict, pool: "Pool", origin: str) -> StructMap:
    """The header's structs (`StructMap`): its key list and line list (text nodes, the line list
    read when first needed) with its string of ids, one entry each (`head["structs"]` once read)."""
    text, ids = pool.text(head["struct_keys"]), head["struct_ids"]
    out = StructMap(text, ids, lambda: pool.text(head["struct_lines"]) if ids else "", origin)
    if (text.count(" ") + 1 if text else 0) != len(ids) // ID_CHARS or (not ids and pool.text(head["struct_lines"])):
        raise out._malformed("")
    return out


def _open(path: str, vouched: bool):
    if vouched:
        return open(path, "rb")
    from ..regular_file import open_regular

    return open_regular(path)


def _first_line(path: str, digest: str = None, vouch: str = "index.json", vouched: bool = None) -> tuple:
    """The decoded first line of `path`, its length and its sha256, which must be `digest` (which
    the file `vouch` records) when given. A file no digest vouches for (an own table, one a user
    names) is read only if it is a regular file (a shipped one costs no import for that)."""
    try:
        with _open(path, digest is not None if vouched is None else vouched) as f:
            first = f.readline(MAX_HEAD_BYTES + 1)
    except OSError as e:
        raise _corrupt(f"cannot read {path}: {e.strerror}") from None
    sha = sha256_hex(first.rstrip(b"\n"))
    if digest is not None and sha != digest:
        raise _corrupt(f"{path}: its header fails the checksum of {vouch}")
    try:
        return loads(first), len(first), sha
    except ValueError:
        raise _corrupt(f"{path}: not a compact table (its first line is not JSON)") from None


_shared: dict = {}      # pool file -> (Pool, the sha256 of its header)


def shared_pool(directory: str, digest: str = None) -> Pool:
    """The pool file of a directory of tables (read once per process); its header's sha256 must be
    `digest` when given, also when an earlier reader opened it without one."""
    path = os.path.join(directory, POOL_FILE)
    if path not in _shared:
        head, base, sha = _first_line(path, vouched=digest is not None)
        why = check_pool_head(head)
        if why:
            raise _corrupt(f"{path}: {why}")
        cold = head.get("cold")
        if cold is not None and not (_hex(cold) and len(cold) == DIGEST_CHARS):
            raise _corrupt(f"{path}: its cold pool's checksum is malformed")
        _shared[path] = SharedPool(path, head["shards"], head["ends"], base,
                                   None if cold is None else (os.path.join(directory, COLD_FILE), cold)), sha
    pool, sha = _shared[path]
    if digest is not None and sha != digest:
        raise _corrupt(f"{path}: its header fails the checksum of index.json")
    return pool


def open_table(path: str, head_sha256: str = None, pool_sha256: str = None) -> tuple:
    """(header, pool) of the compact table at `path`, of which only the header is read now."""
    head, base, _ = _first_line(path, head_sha256)
    why = check_head(head)
    if why:
        raise _corrupt(f"{path}: not a compact table of format {FORMAT} ({why})")
    pool = head["pool"]
    pool = shared_pool(os.path.dirname(path), pool_sha256) if isinstance(pool, str) else \
        Pool(path, pool["ids"], pool["ends"], base)
    head["structs"] = struct_map(head, pool, path)
    return head, pool


def parse(text, origin: str = "compact table") -> tuple:
    """(header, pool) of a whole compact table's text (str or bytes) that carries its own nodes."""
    data = text.encode() if isinstance(text, str) else text
    lines = data.split(b"\n")
    try:
        head = loads(lines[0])
    except ValueError:
        raise _corrupt(f"{origin}: not a compact table (its first line is not JSON)") from None
    why = check_head(head)
    if why:
        raise _corrupt(f"{origin}: not a compact table of format {FORMAT} ({why})")
    pool = head["pool"]
    if isinstance(pool, str):
        raise _corrupt(f"{origin}: its layouts are in {pool}, not in the text")
    n = len(pool["ids"]) // ID_CHARS
    if len(lines) < n + 1:
        raise _corrupt(f"{origin}: truncated ({len(lines) - 1} layout lines for {n})")
    pool = Pool(origin, pool["ids"], pool["ends"], lines=lines[1:1 + n])
    head["structs"] = struct_map(head, pool, origin)
    return head, pool


def __getattr__(name):
    if name == "read_most":         # it moved to regular_file.py, the shared readers' module
        from ..regular_file import read_most

        return read_most
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
