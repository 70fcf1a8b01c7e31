"""What the shipped compact tables cost in bytes: the whole package data, and what each table adds.

A table adds its header file, its `index.json` entry, and the layouts no other table uses (with
their ids and line ends in the pool's shards; in the compressed cold pool, what each shard it adds
to grows by, compressed with and without them). Builds of one minor, flags and target are taken in
order (patch level, then vendor): a further one is measured against the store without the ones
after it, which is what adding it cost. The goals: all of the package data in at most 5 MB (what
a JIT's users install beside it), and at most 100 KB per further patch build (so shipping every
patch release stays cheap).

    python -m offsets.tools.store_cost
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..layout.compact_read import COLD_FILE, GROUPS, ID_CHARS, POOL_FILE, SHARDS
from . import command_line
from .verdict import verdict

#: bytes (decimal units, the stricter reading of "4 MB" and "100 KB")
TOTAL_GOAL = 5_000_000
PATCH_GOAL = 100_000


def _entry_bytes(e: dict) -> int:
    """An index.json entry's bytes: indented twice inside the document, and a comma."""
    text = json.dumps(e, indent=1, sort_keys=True)
    return len(text) + 2 * (text.count("\n") + 1) + 2


def pool_lines(lines: list) -> dict:
    """id -> its line's number, of the lines of a pool file (for tools and tests; the reader seeks)."""
    ids = "".join(json.loads(line)["ids"] for line in lines[1:1 + SHARDS])
    return {ids[i:i + ID_CHARS]: 1 + SHARDS + GROUPS + i // ID_CHARS for i in range(0, len(ids), ID_CHARS)}


def pool_nodes(directory: str) -> dict:
    """id -> its line (str), of every node of a directory's pool files, the cold one's decompressed
    (for tools and tests)."""
    import binascii
    import zlib

    with open(os.path.join(directory, POOL_FILE)) as f:
        lines = f.read().splitlines()
    out = {k: lines[i] for k, i in pool_lines(lines).items()}
    path = os.path.join(directory, COLD_FILE)
    if os.path.exists(path):
        with open(path, "rb") as f:
            for line in f.read().splitlines()[1:1 + SHARDS]:
                head, *nodes = zlib.decompress(binascii.a2b_base64(line)).decode().splitlines()
                ids = json.loads(head)["ids"]
                out.update((ids[i * ID_CHARS:(i + 1) * ID_CHARS], n) for i, n in enumerate(nodes))
    return out


def costs(directory: Path) -> dict:
    """{"total": bytes of every file, "tables": {table file: bytes it adds to the store of every
    other table but the later patch builds of its own kind}, "further": the tables that are not
    the first build of their minor, flags and target}."""
    from ..layout.compact import cold_block, cold_line
    from ..layout.compact_read import SHARD_CHARS

    directory = Path(directory)
    lines = (directory / POOL_FILE).read_text().splitlines()
    hot = set(pool_lines(lines))
    nodes = pool_nodes(str(directory))
    width = len(f"{sum(len(line) + 1 for line in nodes.values()):x}")      # of each node's line end

    index = json.loads((directory / "index.json").read_text())
    users: dict = {}
    heads = {}
    for e in index["tables"]:
        head = json.loads((directory / e["file"]).read_text())
        heads[e["file"]] = (e, head)
        ids = head["struct_ids"]
        todo = [ids[i:i + ID_CHARS] for i in range(0, len(ids), ID_CHARS)]
        todo += [head["names"], head["struct_keys"], head["struct_lines"], *head["skipped"], *head["conflicts"]]
        todo += [head[k] for k in ("constants", "depends", "guards") if head.get(k)]
        seen = set()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            value = json.loads(nodes[node])
            if isinstance(value, list) and len(value) in (6, 7) and value[0] in ("struct", "union"):
                # a struct node (its C spelling a seventh item): its member node
                todo.append(value[5])
            elif isinstance(value, list) and value and value[0] == "K":    # constants: an inner node
                todo += value[1]
            elif isinstance(value, list) and value and value[0] == "F":    # a file node, perhaps chunked
                todo += value[2] if len(value) == 3 else []
            elif isinstance(value, list) and value and value[0] == "k":    # a chunk of constants
                pass
            elif isinstance(value, list) and value and value[0] == "D":    # dependency data: its parts
                todo += [value[1], value[3], value[5], value[6]]
            elif isinstance(value, (str, dict)) or (isinstance(value, list) and all(isinstance(x, str) for x in value)):
                pass                                              # text, names, a list of sets
            elif isinstance(value, list):                         # a member node: its members' own
                todo += [m[8] for m in value[0] if len(m) == 9 and m[8]]
        for node in seen:
            users.setdefault(node, set()).add(e["file"])
    kinds: dict = {}
    for f, (e, _) in sorted(heads.items(), key=lambda kv: (kv[1][0]["hexversion"], kv[1][0].get("vendor") or "", kv[0])):
        kinds.setdefault((e["hexversion"] >> 16, json.dumps(e["config"], sort_keys=True), e["triple"]), []).append(f)
    later = {f: set(group[i + 1:]) for group in kinds.values() for i, f in enumerate(group)}
    own: dict = {f: 0 for f in heads}
    cold: dict = {f: set() for f in heads}
    for node, files in users.items():
        for f in files:
            if not files - later[f] - {f}:      # its line, and its id and line end in its shard's line
                if node in hot:
                    own[f] += len(nodes[node]) + 1 + ID_CHARS + width
                else:
                    cold[f].add(node)
    shards: dict = {}
    for k in sorted(set(nodes) - hot):
        shards.setdefault(int(k[:SHARD_CHARS], 16), []).append((k, nodes[k]))
    for f, mine in cold.items():        # each shard it adds to, compressed with and without its nodes
        for k in {int(n[:SHARD_CHARS], 16) for n in mine}:
            rest = [(n, line) for n, line in shards[k] if n not in mine]
            own[f] += len(cold_line(cold_block(shards[k]))) - len(cold_line(cold_block(rest)))
    tables = {f: os.path.getsize(directory / f) + _entry_bytes(e) + own[f] for f, (e, _) in heads.items()}
    further = sorted(f for group in kinds.values() for f in group[1:])
    total = sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
    return {"total": total, "tables": tables, "further": further}


def report(directory: Path) -> str:
    c = costs(directory)
    worst = max(c["further"], key=c["tables"].get)
    return "\n".join([
        f"storage ({len(c['tables'])} tables in {directory.name}/):",
        f"  package data, all tables:            {c['total'] / 1e6:6.2f} MB   (goal <= {TOTAL_GOAL / 1e6:g} MB: "
        f"{verdict(c['total'], TOTAL_GOAL)})",
        f"  a further patch build adds, at most: {c['tables'][worst] / 1e3:6.1f} kB   (goal <= {PATCH_GOAL / 1e3:g} kB: "
        f"{verdict(c['tables'][worst], PATCH_GOAL)}; {worst}, of {len(c['further'])} such tables)",
    ])


EXAMPLES = """  python -m offsets.tools.store_cost            the package data's size and what each shipped table adds
"""


def main(argv=None) -> int:
    command_line.no_arguments("store_cost", __doc__, EXAMPLES, argv)
    from ..layout.compact import COMPACT_DIR

    print(report(COMPACT_DIR))
    return 0


if __name__ == "__main__":
    sys.exit(main())
