"""Read a YAML document from an untrusted file in bounded time and memory.

The table loader and every other reader of user YAML go through here:

- `read_text`: at most `MAX_TABLE_BYTES` of a regular file, strictly UTF-8 (`offsets/regular_file.py`,
  which needs no yaml: the watch file of `offsets diff` is read there too);
- `parse`: PyYAML's safe (C) parser, then plain values built here from the node graph, refusing
  aliases (a 300-byte "billion laughs" expands to gigabytes in anything that walks the result),
  merge keys, duplicate keys (where the last one would silently win), keys that are not strings,
  and nesting deeper than `MAX_DEPTH`. Each refusal is a `TableError` naming the entry's path.
"""
from __future__ import annotations

import re

import yaml

from ..errors import TableError
from ..regular_file import MAX_TABLE_BYTES, decode, read_text  # noqa: F401 - the readers of YAML read here

#: The deepest nesting of mappings and lists a table may have (a table needs 5).
MAX_DEPTH = 16

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"
_PLAIN = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
_STR, _INT = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int"
#: a decimal integer as PyYAML's int constructor reads it (no sign but -, no leading 0, _ or :), which
#: is what int() makes of it; every other scalar goes through PyYAML's constructors
_DECIMAL = re.compile(r"-?[1-9][0-9]*|0")


def parse(text: str, origin: str = "table", limit: int = MAX_TABLE_BYTES):
    """The plain value (dicts, lists, str, int, float, bool, None) of a single YAML document."""
    if len(text) > limit:
        raise TableError(f"{origin}: {len(text)} characters, more than the {limit // (1024 * 1024)} MiB "
                         f"a table may have (docs/table-format.md)")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else _Builder(loader, origin).value(node, "", 0)
    except yaml.YAMLError as e:
        raise TableError(f"{origin}: not valid YAML: {' '.join(str(e).split())[:200]}") from None
    except RecursionError:
        raise TableError(f"{origin}: nested too deeply") from None
    finally:
        loader.dispose()


class _Builder:
    def __init__(self, loader, origin: str) -> None:
        self.loader, self.origin, self.seen = loader, origin, set()

    def fail(self, node, path: str, what: str) -> TableError:
        line = f" (line {node.start_mark.line + 1})" if node is not None else ""
        return TableError(f"{self.origin}: {what} at {path or '(top)'}{line}")

    def value(self, node, path: str, depth: int):
        if id(node) in self.seen:      # the node an alias names: its own line would mislead
            raise self.fail(None, path, "a YAML alias (tables may not use anchors and aliases)")
        self.seen.add(id(node))
        if depth > MAX_DEPTH:
            raise self.fail(node, path, f"nesting deeper than {MAX_DEPTH} levels")
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _STR:        # what construct_object gives, without its bookkeeping
                return node.value
            if node.tag == _INT and _DECIMAL.fullmatch(node.value):
                return int(node.value)
            return self.loader.construct_object(node)
        if node.tag not in _PLAIN:
            raise self.fail(node, path, f"the tag {node.tag[:40]} (tables use plain mappings and lists)")
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, _join(path, i), depth + 1) for i, item in enumerate(node.value)]
        out = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                raise self.fail(key_node, path, "a YAML merge key (<<)")
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, path, "a key that is not a string")
            key = self.value(key_node, path, depth + 1)
            if not isinstance(key, str):
                raise self.fail(key_node, path, f"the key {str(key)[:40]}, which is not a string")
            where = _join(path, key)
            if key in out:
                raise self.fail(key_node, where, "a duplicate key (each key may appear once)")
            out[key] = self.value(value_node, where, depth + 1)
        return out


def _join(path: str, key) -> str:
    key = str(key) if len(str(key)) <= 80 else str(key)[:77] + "..."
    return f"{path}/{key}" if path else key
