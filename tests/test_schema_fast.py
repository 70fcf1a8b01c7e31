"""The compiled schema check (offsets/layout/schema_fast.py) against jsonschema itself, the reader's
reference: on hundreds of damaged tables, a document the fast check accepts is one jsonschema
accepts; each keyword refuses and takes what jsonschema does; the tables it damages pass undamaged;
and the reader says what it said before about a document the fast check refuses."""
from __future__ import annotations

import copy
import json
import os
import random
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from offsets.errors import TableError
from offsets.layout import schema_fast, table_yaml, yaml_strict

GENERATED = Path(__file__).resolve().parent.parent / "generated"
SEED = int(os.environ.get("OFFSETS_FUZZ_SEED", random.SystemRandom().randrange(2 ** 32)))
#: two of the smaller tables with every kind of content: dependencies, type records, binaries (the largest
#: three pass the fast check in tests/test_committed_tables.py, jsonschema never asked)
SOURCES = ["cpython-3.6.15-x86_64-linux-gnu.yaml", "cpython-3.9.2-debian-x86_64-linux-gnu.yaml"]


def schema() -> dict:
    return json.loads(resources.files("offsets").joinpath("data/table.schema.json").read_text())


@lru_cache(maxsize=None)
def fast():
    return schema_fast.compile_schema(schema())


def reference_valid(doc) -> bool:
    return next(table_yaml._reference_validator().iter_errors(doc), None) is None


@lru_cache(maxsize=None)
def parsed(name: str):
    return yaml_strict.parse((GENERATED / name).read_text(), name)


def _trimmed(node, rng: random.Random, top: bool = True):
    """A copy of the document `node` keeping 3 entries of each mapping below the top that has more
    than 8 (its keys are names: structs, fields, constants; an object the schema describes has 8 or
    fewer) and of each list of more than 5 (a size term has 4 items, a member 5): every kind of node,
    in a document jsonschema judges in milliseconds."""
    if isinstance(node, dict):
        keys = list(node)
        if len(keys) > 8 and not top:
            keys = [keys[i] for i in sorted(rng.sample(range(len(keys)), 3))]
        return {k: _trimmed(node[k], rng, False) for k in keys}
    if isinstance(node, list):
        items = node if len(node) <= 5 else [node[i] for i in sorted(rng.sample(range(len(node)), 3))]
        return [_trimmed(x, rng, False) for x in items]
    return node


def _paths(node, at=()):
    yield at
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, at + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, at + (i,))


#: what a damaged table may hold where it should hold something else
REPLACEMENTS = [None, True, False, 0, 1, -1, 4, 8, 24.0, 4.0, 1.0, 2 ** 64, -2 ** 63 - 1, "", "x", "0x030b07f0",
                "sha256:" + "0" * 64, "sha256:" + "0" * 63, "Include/x.h", "struct a", "union 1", "macro", "dwarf",
                "ab" * 8, "ab" * 7 + "a", "3.12.1", "3.12", "upstream", "debian 1.0", [], [1], ["a"], {},
                {"a": 1}, {"macros": [], "files": []}, [1, "size", None, None], [1, "bad", None, None]]


def _near(v) -> list:
    """Values a damaged table may hold instead of `v`, of its kind or the kinds confused with it."""
    if type(v) is bool:
        return [not v, int(v), None, str(v).lower()]
    if type(v) is int:
        return [v - 1, -1, 0, -v, v + 2 ** 64, float(v), True, str(v), None]
    if type(v) is str:
        return [v + "!", "!" + v, " " + v, v[1:], v[:-1], v.upper(), "", v + "\n", 1, None]
    return []


def _mutate(doc, rng: random.Random):
    paths = list(_paths(doc))
    at = rng.choice(paths[1:])
    parent = doc
    for k in at[:-1]:
        parent = parent[k]
    last = at[-1]
    move = rng.randrange(4)
    if move == 0:                       # a value replaced: by one near it, or by anything
        parent[last] = copy.deepcopy(rng.choice(_near(parent[last]) or REPLACEMENTS))
    elif move == 1:                     # a key or item dropped
        del parent[last]
    elif move == 2 and isinstance(parent, dict):   # a key added
        parent[rng.choice(["x", "flexible", "origin", "kind", "depends", "binaries", "^bad", "Py_DEBUG",
                           "Py_FOO", "Include/a.h", "function-like", "9bad"])] = copy.deepcopy(rng.choice(REPLACEMENTS))
    elif move == 2:                     # an item added
        parent.append(copy.deepcopy(rng.choice(REPLACEMENTS)))
    else:                               # a key renamed
        if isinstance(parent, dict):
            parent[rng.choice(["renamed", str(last).upper(), f"{last}@x", f" {last}"])] = parent.pop(last)


def test_a_document_the_fast_check_accepts_is_one_jsonschema_accepts():
    """Soundness, on 600 tables damaged in one to three places (seed printed; OFFSETS_FUZZ_SEED=N
    replays): never valid for the fast check and invalid for jsonschema. And it is not a check that
    refuses everything: it agrees with jsonschema on nearly every document."""
    print(f"fuzz seed {SEED} (replay: OFFSETS_FUZZ_SEED={SEED})")
    rng = random.Random(SEED)
    agree = cases = 0
    for name in SOURCES:
        for _ in range(300):
            doc = _trimmed(parsed(name), rng)
            assert fast()(doc)      # the damage below is all there is (trimming drops no required key)
            for _ in range(rng.randint(1, 3)):
                _mutate(doc, rng)
            ours, theirs = fast()(doc), reference_valid(doc)
            assert not (ours and not theirs), json.dumps(doc)[:3000]
            agree += ours == theirs
            cases += 1
    assert agree >= 0.97 * cases, (agree, cases)


@pytest.mark.parametrize("name", SOURCES)
def test_the_tables_damaged_above_pass_the_fast_check_undamaged(name):
    assert fast()(parsed(name)) and reference_valid(parsed(name))


def test_a_document_the_fast_check_refuses_is_judged_by_jsonschema():
    """A pointer size of 8.0: jsonschema's enum takes it as 8 (the fast check does not), so the
    model's own check is what refuses it, as before the fast check; a size of -1 is jsonschema's
    error, in its words."""
    from test_hardening import TABLE

    text = TABLE.replace("pointer_size: 8}", "pointer_size: 8.0}")
    assert text != TABLE
    doc = yaml_strict.parse(text, "t")
    assert not fast()(doc) and reference_valid(doc)
    with pytest.raises(TableError) as e:
        table_yaml.loads(text, "t")
    assert "malformed table" not in str(e.value)
    text = TABLE.replace("size: 16", "size: -1", 1)
    assert text != TABLE
    with pytest.raises(TableError, match=r"malformed table at structs/.*/size: -1 is less than the minimum of 0"):
        table_yaml.loads(text, "t")


def test_a_schema_keyword_it_does_not_know_leaves_jsonschema_alone_to_judge():
    s = schema()
    s["properties"]["skipped"]["uniqueItems"] = True
    with pytest.raises(schema_fast.Unsupported, match="uniqueItems"):
        schema_fast.compile_schema(s)
    with pytest.raises(schema_fast.Unsupported, match="recursive"):
        schema_fast.compile_schema({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})


def test_each_keyword_refuses_what_jsonschema_refuses_and_takes_what_it_takes():
    """One schema per keyword the table schema uses, with a document invalid by that keyword alone
    and one valid."""
    cases = [({"type": "integer"}, True, 3), ({"type": ["string", "null"]}, 3, None), ({"const": 1}, True, 1),
             ({"enum": [4, 8]}, 5, 8), ({"pattern": "^a"}, "ba", "ab"), ({"minLength": 1}, "", "a"),
             ({"minimum": 0}, -1, 0), ({"maximum": 3}, 4, 3), ({"minItems": 2}, [1], [1, 2]),
             ({"maxItems": 1}, [1, 2], [1]), ({"prefixItems": [{"type": "string"}]}, [1], ["a", 1]),
             ({"prefixItems": [True], "items": {"type": "string"}}, [1, 2], [1, "a"]),
             ({"required": ["a"]}, {}, {"a": 1}), ({"propertyNames": {"pattern": "^a"}}, {"b": 1}, {"ab": 1}),
             ({"properties": {"a": {"type": "string"}}}, {"a": 1}, {"a": "x", "b": 1}),
             ({"patternProperties": {"^a": {"type": "string"}}}, {"ab": 1}, {"ab": "x", "b": 1}),
             ({"properties": {"a": True}, "additionalProperties": False}, {"b": 1}, {"a": 1}),
             ({"patternProperties": {"^a": True}, "additionalProperties": {"type": "string"}}, {"b": 1},
              {"a": 1, "b": "x"}),
             ({"$defs": {"n": {"type": "string"}}, "$ref": "#/$defs/n"}, 1, "x")]
    for s, bad, good in cases:
        check = schema_fast.compile_schema(s)
        reference = jsonschema.Draft202012Validator(s)
        assert not reference.is_valid(bad) and not check(bad), s
        assert reference.is_valid(good) and check(good), s
