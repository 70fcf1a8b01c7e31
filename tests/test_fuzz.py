"""Fuzzing every reader of user input: mutated tables (YAML and compact), names and --watch files.

Each case must end in a result or an `OffsetsError` (which the CLI prints as one line, exit 2):
never another exception, never more than `CASE_SECONDS`, never more than `CASE_MB` of memory.
The readers run in process (the CLI's own functions; a few cases through `offsets.cli.main`), so
thousands of cases fit in well under a minute. The seed is printed, and OFFSETS_FUZZ_SEED=N
replays a run; OFFSETS_FUZZ_SCALE=K runs K times as many cases.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import re
import resource
import signal
import sys
from pathlib import Path

import pytest

from test_hardening import TABLE

from hypothesis import HealthCheck, given, seed, settings, strategies as st   # the test extra of pyproject.toml

from offsets.layout import compact, compact_read, names, table_yaml, yaml_strict
from offsets.drift import diff, report
from offsets import runtime
from offsets.cli import main
from offsets.errors import OffsetsError

SEED = int(os.environ.get("OFFSETS_FUZZ_SEED", random.SystemRandom().randrange(2 ** 32)))
SCALE = max(1, int(os.environ.get("OFFSETS_FUZZ_SCALE", "1")))
CASE_SECONDS = 5
CASE_MB = 200

#: The hand-made table of test_hardening, with a bitfield, a flexible array and a union added.
BASE = TABLE + """\
  PyTupleObject:
    kind: struct
    size: 24
    align: 8
    defined_in: "Include/tupleobject.h:1"
    fields:
      ob_base: {offset: 0, size: 24, type: PyVarObject}
      ob_item: {offset: 24, size: 0, type: "PyObject *[]", flexible: true}
  state_t:
    kind: union
    size: 8
    align: 8
    defined_in: "Include/s.h:1"
    fields:
      word: {offset: 0, size: 8, type: uint64_t}
      kind: {offset: 0, size: 4, type: unsigned int, bit_offset: 2, bit_width: 3}
      bytes: {offset: 0, size: 8, type: "char[8]", array_len: 8}
"""
TOKENS = [b"-1", b"0", b"24.0", b"1e30", b"99999999999999999999", b"2147483648", b"1048576", b"true", b"null",
          b"~", b".inf", b".nan", b"0x10", b"&a ", b"*a", b"<<: *a", b"!!python/object:os.system ", b"!!binary ",
          b"\xff", b"\x00", b"\xc3(", b"[", b"]", b"{", b"}", b": ", b"\n", b"  ", b"- ", b"? ", b"'", b'"',
          b"#", b",", b"ob_item", b"PyObject", b"structs", b"fields", b"offset", b"size", b"align", b"\t"]


@pytest.fixture(scope="module", autouse=True)
def announce(pytestconfig):
    """The seed, on the terminal whatever the capture mode."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\nfuzz seed {SEED} (replay: OFFSETS_FUZZ_SEED={SEED})", file=sys.stderr, flush=True)
    yield


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"a case ran over {CASE_SECONDS} s (seed {SEED})")


@contextlib.contextmanager
def bounded():
    """One case: within CASE_SECONDS (SIGALRM) and CASE_MB more than the process's peak so far."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
    assert grown < CASE_MB, f"a case grew the process by {grown:.0f} MB (seed {SEED})"


def expect_clean(fn, *args):
    """fn(*args), or None if it raised an OffsetsError; any other exception fails the test."""
    with bounded():
        try:
            return fn(*args)
        except OffsetsError as e:
            assert "\n" not in str(e), str(e)
            return None
        except Hang:
            raise
        except Exception as e:
            raise AssertionError(f"{type(e).__name__} escaped (seed {SEED}, replay: OFFSETS_FUZZ_SEED={SEED}): {e}") from e


#: What a number of a table may become ("number" mutations keep the YAML valid, so the model sees them).
NUMBERS = [b"0", b"1", b"3", b"7", b"9", b"12", b"23", b"25", b"31", b"33", b"64", b"4096", b"4097", b"-8",
           b"24.0", b"1e29", b"2147483647", b"2147483648", b"true", b"null", b"'16'", b"[]", b"{}"]


def mutations(size: int):
    op = st.tuples(st.integers(0, size), st.sampled_from(["insert", "replace", "delete", "repeat", "number", "number"]),
                   st.one_of(st.sampled_from(TOKENS), st.binary(min_size=1, max_size=6)), st.integers(1, 40))
    return st.lists(op, min_size=1, max_size=4)


def mutate(data: bytes, ops) -> bytes:
    for at, kind, payload, n in ops:
        at = min(at, len(data))
        if kind == "insert":
            data = data[:at] + payload + data[at:]
        elif kind == "replace":
            data = data[:at] + payload + data[at + len(payload):]
        elif kind == "delete":
            data = data[:at] + data[at + n:]
        elif kind == "number":                  # the at-th number (cyclically) becomes NUMBERS[n]
            found = list(re.finditer(rb"(?<![\w.])\d+(?![\w.])", data))
            if found:
                m = found[at % len(found)]
                data = data[:m.start()] + NUMBERS[n % len(NUMBERS)] + data[m.end():]
        else:                                   # a line repeated: duplicate keys, bigger documents
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end + 1
            data = data[:end] + data[start:end] * n + data[end:]
    return data


class Unsealed(compact_read.Pool):
    """A pool that takes any line for the node asked for (its checksum is not what is tested)."""

    def check(self, node, line):
        pass


BASE_TABLE = table_yaml.loads(BASE)
BASE_COMPACT = compact.dumps(BASE_TABLE, "fuzz").encode()


def use(table) -> None:
    """Everything a reader does with a table it accepted: look names up, draw it, diff it, compact it."""
    for s in table.structs.values():
        for f in s.fields[:20]:
            names.resolve(table, f"{s.name}.{f.path}")
    report.render([BASE_TABLE, table], list(table.structs)[:3] or ["PyObject"])
    diff.diff(BASE_TABLE, table)
    loaded = runtime.Loaded(*compact_read.parse(compact.dumps(table, "fuzz")), "fuzz", {})
    for key in loaded.order:
        loaded.fields(key)


def fuzz_settings(n: int):
    return settings(max_examples=n * SCALE, deadline=None, database=None, derandomize=False,
                    suppress_health_check=list(HealthCheck))


@seed(SEED)
@fuzz_settings(1500)
@given(mutations(len(BASE)))
def test_mutated_yaml_tables(ops):
    data = mutate(BASE.encode(), ops)

    def read():
        return table_yaml.loads(yaml_strict.decode(data, "fuzz"), "fuzz")

    table = expect_clean(read)
    if table is not None:
        expect_clean(use, table)


@seed(SEED)
@fuzz_settings(1000)
@given(mutations(len(BASE_COMPACT)), st.booleans())
def test_mutated_compact_tables(ops, keep_checksums):
    data = mutate(BASE_COMPACT, ops)

    def read():
        head, pool = compact_read.parse(data)
        if not keep_checksums:      # reach the checks behind the layouts' checksums too
            pool.__class__ = Unsealed
        loaded = runtime.Loaded(head, pool, "fuzz", {})
        for key in loaded.order:
            loaded.size(key)
            loaded.fields(key)
        return compact.table_of(head, pool)

    expect_clean(read)


NAME = st.one_of(
    st.text(max_size=60),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}(\.[A-Za-z_.]{0,12}){0,3}", fullmatch=True),
    st.sampled_from(["PyObject", "PyListObject.ob_item", "_object.ob_type", "state_t.kind", ".", "..", "a..b",
                     "PyObject.", "x" * 100000, "PyListObject.ob_base.ob_refcnt", "\x00", "PyObject.ob_type.x"]))


@seed(SEED)
@fuzz_settings(800)
@given(NAME)
def test_names(name):
    expect_clean(names.resolve, BASE_TABLE, name)
    expect_clean(diff.resolve_watch, [(1, name)], BASE_TABLE, BASE_TABLE)


@seed(SEED)
@fuzz_settings(600)
@given(st.one_of(st.binary(max_size=300), st.lists(NAME, max_size=8).map(lambda ns: "\n".join(ns).encode("utf-8", "surrogatepass"))))
def test_watch_files(data):
    def read():
        return diff.resolve_watch(diff.parse_watch(yaml_strict.decode(data, "watch file")), BASE_TABLE, BASE_TABLE)

    expect_clean(read)


@seed(SEED)
@fuzz_settings(60)
@given(mutations(len(BASE)), NAME)
def test_the_command_line(tmp_path_factory, ops, name):
    """The CLI end to end (in process): `get` on a mutated table, `diff --watch` a mutated name."""
    d = tmp_path_factory.mktemp("cli", numbered=True)
    table, watch = Path(d) / "t.yaml", Path(d) / "w.txt"
    table.write_bytes(mutate(BASE.encode(), ops))
    watch.write_bytes(name.encode("utf-8", "surrogatepass"))
    for args in (["get", name, "-t", table], ["diff", table, table, "--watch", watch]):
        out, err = io.StringIO(), io.StringIO()
        with bounded(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
        lines = err.getvalue().strip().splitlines()
        assert code in (0, 1) or (code == 2 and len(lines) == 1 and lines[0].startswith("offsets: error:")), \
            (args, code, err.getvalue()[:500])
