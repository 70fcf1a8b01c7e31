"""A table's dependency data in the compact form: what the runtime compares, struct by struct, with
the headers a build has installed (docs/identity.md, "Per struct"). Standard library only.

The header's `depends` (null for a table made before dependency sets) is the id of a node

    ["D", LEAVES, VALUES, FILES, DIGESTS, SETS, STRUCT_SETS, CONSTANT_SETS]

- LEAVES (a text node's id): the leaf macros' names, sorted, separated by spaces; VALUES: their
  values, aligned (a string, or null for undefined);
- FILES (a text node's id): the installed files (`Include/...`) of any set, sorted, separated by
  spaces; DIGESTS: the first `DIGEST_CHARS` hex digits of each one's sha256, one after the other;
- SETS (a node's id): a list of sets, each `LEAVES|FILES[+]`, each part tokens separated by spaces:
  a leaf's or a file's index (base 36); `*`, every leaf whose name starts with `_` (pyconfig.h's
  macros for the C library, which every set holding a C library type has); `^K`, everything set K
  (an earlier one) holds. A `+` at the end: the set has files that are not installed (a source
  tree's), which only a vendor's package version vouches for;
- STRUCT_SETS (a text node's id): each struct's set index (base 36) in the order of the header's
  structs (sorted), `-` for a struct whose closure is not known;
- CONSTANT_SETS: the set of the constants of each of FILES, aligned (`-`: none). The constants of
  pyconfig.h depend on themselves; those of other files (a source tree's) have no set.

Names, files, sets and struct sets are nodes of their own, so the builds of one release that
share them (Debian's per CPU) store them once. The model keeps full digests of every file; this
form keeps what a running build can be compared with: installed files only, their digests cut to
64 bits.
"""
from __future__ import annotations

from ..errors import CorruptTableError

#: The hex digits of a file's sha256 kept (64 bits: a changed header is never taken for the same).
DIGEST_CHARS = 16
NODE = "D"
INSTALLED = "Include/"
C_LIBRARY = "*"
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def b36(n: int) -> str:
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = _ALPHABET[r] + out
        if not n:
            return out


def parts(table) -> dict:
    """A `model.Table`'s dependency data as the node's fields hold them before the pool has them
    (`put`): leaves, values, files, digests, sets, struct_sets (struct key -> set index), and
    constant_sets; None for a table without dependencies."""
    d = table.dependencies
    if d is None:
        return None
    leaves = sorted(d.macros)
    li = {n: i for i, n in enumerate(leaves)}
    c_library = frozenset(n for n in leaves if n.startswith("_"))
    files = sorted(f for f in d.files if f.startswith(INSTALLED))
    fi = {f: i for i, f in enumerate(files)}

    def items(s) -> frozenset:
        macros = set(s.macros)
        out = {("f", fi[f]) for f in s.files if f in fi}
        if c_library and c_library <= macros:
            macros -= c_library
            out.add(("*", 0))
        return frozenset(out | {("l", li[n]) for n in macros} | ({("+", 0)} if any(f not in fi for f in s.files) else set()))

    keys = sorted(table.structs)
    wanted = [table.structs[k].depends for k in keys] + [d.constants.get(f) for f in files]
    distinct = sorted({items(s) for s in wanted if s is not None}, key=lambda x: (len(x), sorted(x)))
    index = {x: i for i, x in enumerate(distinct)}
    sets = []
    for i, x in enumerate(distinct):
        base = max((j for j in range(i) if distinct[j] <= x), key=lambda j: len(distinct[j]), default=None)
        rest = x - distinct[base] if base is not None else x
        head = [f"^{b36(base)}"] if base is not None else []
        macro_part = head + (["*"] if ("*", 0) in rest else []) + [b36(n) for k, n in sorted(rest) if k == "l"]
        file_part = [b36(n) for k, n in sorted(rest) if k == "f"]
        sets.append(" ".join(macro_part) + "|" + " ".join(file_part) + ("+" if ("+", 0) in rest else ""))

    def ref(s) -> str:
        return "-" if s is None else b36(index[items(s)])

    return {"leaves": " ".join(leaves), "values": [d.macros[n] for n in leaves], "files": " ".join(files),
            "digests": "".join(d.files[f][len("sha256:"):][:DIGEST_CHARS] for f in files), "sets": sets,
            "struct_sets": {k: ref(table.structs[k].depends) for k in keys},
            "constant_sets": " ".join(ref(d.constants.get(f)) for f in files)}


def put(pool, found: dict, struct_keys: list) -> str:
    """The id of the `["D", ...]` node of `parts`' result in a `compact.PoolWriter`, its struct sets
    in the order `struct_keys` (a struct it does not name has none)."""
    refs = " ".join(found["struct_sets"].get(k, "-") for k in struct_keys)
    return pool.put([NODE, pool.put(found["leaves"]), found["values"], pool.put(found["files"]), found["digests"],
                     pool.put(found["sets"]), pool.put(refs), found["constant_sets"]])


def read(raw, text, node, struct_keys: list):
    """A `["D", ...]` node read back into `parts`' form (for tools that rewrite a compact table),
    or None when it is not one."""
    try:
        kind, leaves, values, files, digests, sets, struct_sets, constant_sets = raw
        if kind != NODE:
            return None
        return {"leaves": text(leaves), "values": list(values), "files": text(files), "digests": digests,
                "sets": list(node(sets)),   # copies: the pool keeps what it decoded, for every reader
                "struct_sets": dict(zip(struct_keys, text(struct_sets).split())), "constant_sets": constant_sets}
    except (TypeError, ValueError, CorruptTableError):
        return None


class View:
    """A table's dependency data, read: `struct(i)` / `constants(file)` give a set as (leaves,
    installed files, has source files), or None where it is not known. Built only by `view`, which
    checks the data's shape, so that damaged data is no view at all (the next rule down)."""

    def __init__(self, leaves, values, files, digests, sets, struct_sets, constant_sets) -> None:
        self.leaves, self.files = leaves, files
        self.values = dict(zip(leaves, values))
        self.digests = {f: digests[i * DIGEST_CHARS:(i + 1) * DIGEST_CHARS] for i, f in enumerate(files)}
        self._sets, self._struct_sets = sets, struct_sets
        self._constants = dict(zip(files, constant_sets))
        self._decoded: dict = {}
        self.c_library = tuple(n for n in leaves if n.startswith("_"))

    def _set(self, index: str):
        """A set decoded (and its indices checked) on first use; None when it is malformed."""
        got = self._decoded.get(index)
        if got is None:
            try:
                got = self._decode(index)
            except (IndexError, ValueError, TypeError, AttributeError, RecursionError):
                got = False
            self._decoded[index] = got
        return got or None

    def _decode(self, index: str):
        k = _index(index, len(self._sets))
        text = self._sets[k]
        source = text.endswith("+")
        macros, bar, files = text.rstrip("+").partition("|")
        if bar != "|":
            raise ValueError("a set without its two parts")
        names, named = set(), {self.files[_index(i, len(self.files))] for i in files.split()}
        for part in macros.split():
            if part.startswith("^"):
                base = self._set(b36(_index(part[1:], k)))        # an earlier set only
                names.update(base[0])
                named.update(base[1])
                source = source or base[2]
            elif part == C_LIBRARY:
                names.update(self.c_library)
            else:
                names.add(self.leaves[_index(part, len(self.leaves))])
        return tuple(sorted(names)), tuple(sorted(named)), source

    def struct(self, i: int):
        index = self._struct_sets[i]
        return None if index == "-" else self._set(index)

    def constants(self, file: str):
        index = self._constants.get(file, "-")
        return None if index == "-" else self._set(index)


def _index(text: str, below: int) -> int:
    """A base-36 index, which must be under `below` (ValueError otherwise)."""
    n = int(text, 36)
    if not (text.isalnum() and 0 <= n < below):
        raise ValueError(f"index {text!r} out of range")
    return n


def view(raw, text, node, structs: int):
    """The `View` of a decoded `["D", ...]` node (`text(id)`, `node(id)`: the pool's text and node
    readers) of a table with `structs` structs, or None when the data is not of this form (damaged:
    its structs are then known by no set)."""
    try:
        kind, leaves, values, files, digests, sets, struct_sets, constant_sets = raw
        if kind != NODE:
            return None
        leaves, files, sets = text(leaves).split(), text(files).split(), node(sets)
        struct_sets, constant_sets = text(struct_sets).split(), constant_sets.split()
        # the shape at C speed; each set's indices are checked as it is decoded (View._set)
        ok = (isinstance(values, list) and len(values) == len(leaves) and all(v is None or isinstance(v, str) for v in values)
              and isinstance(digests, str) and len(digests) == DIGEST_CHARS * len(files)
              and not digests.strip("0123456789abcdef") and isinstance(sets, list)
              and all(isinstance(x, str) for x in sets)
              and len(struct_sets) == structs and len(constant_sets) == len(files))
    except (TypeError, ValueError, AttributeError, LookupError, CorruptTableError):
        return None     # damaged: the table's structs are known by no set (a struct's own row is still checked)
    return View(leaves, values, files, digests, sets, struct_sets, constant_sets) if ok else None
