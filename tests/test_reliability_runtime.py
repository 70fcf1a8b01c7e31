"""The runtime under faults, each in a cold process of its own (an empty cache and tables folder),
on the oldest interpreter the runtime supports and the newest: a fork while another thread makes
the first lookup, damaged cache and table files, a FIFO where a file is read, one bit flipped in a
kept proof, and a first lookup killed at random points while it writes the cache.

The truth each answer is compared with is the interpreter's own: `PyListObject.ob_item` is the
second to last pointer of a list's `list.__basicsize__` (ob_item, allocated).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, missing_input, pyenv_python
from test_python_versions import MINIMUM, command_python

#: the oldest CPython the runtime supports (README: 3.8 and later), the newest pyenv has, and 3.12
OLDEST, NEWEST = "3.8", "3.13"
#: the `offsets` command's interpreters: the venv's, and the oldest and newest the command supports
PYTHONS = ["venv", MINIMUM, NEWEST]
#: the child's answer, and the interpreter's own: ob_item is a list's second to last pointer
ANSWER = ("import struct; print('answer', offsets.get('PyListObject.ob_item'), "
          "list.__basicsize__ - 2 * struct.calcsize('P'))")


def python_of(minor: str):
    exe = pyenv_python(minor)
    if exe is None:
        missing_input(f"pyenv's CPython {minor} (`pyenv install {minor}`)")
    return exe


def cold_env(tmp_path, **extra) -> dict:
    """An environment with its own empty cache and tables folder, and no autoscan."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFSETS_", "PYTHON"))}
    env.update(OFFSETS_CACHE=str(tmp_path / "cache"), OFFSETS_TABLES=str(tmp_path / "tables"), OFFSETS_AUTOSCAN="0")
    env.update(extra)
    return env


def run(python, code: str, env: dict, *args, timeout: float = 60) -> subprocess.CompletedProcess:
    """`code` in `python -I`, the checkout first on its path (sys.argv[1]), `args` after it."""
    head = "import sys; sys.path.insert(0, sys.argv[1]); import offsets\n"
    return subprocess.run([str(python), "-I", "-c", head + code, str(REPO), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def answer_of(proc: subprocess.CompletedProcess) -> int:
    """The child's answer, which must be the interpreter's own."""
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    [line] = [line for line in proc.stdout.splitlines() if line.startswith("answer ")]
    _, got, truth = line.split()
    assert got == truth, line
    return int(got)


# ---------------------------------------------------------------- a limited address space
#: the address space is limited to 12 MiB more than the process uses (RLIMIT_AS)
SPARE_12_MIB = """
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm() + (12 << 20), resource.getrlimit(resource.RLIMIT_AS)[1]))
"""
LIMITED = """
import os, resource
from offsets.layout import identity
from offsets.runtime import binary, tables
identity._write_memo(sys.argv[2], b"a memo")
""" + SPARE_12_MIB + """try:
    with open(os.path.join(tables.COMPACT_DIR, "index.json"), "rb") as f:
        f.read(1 << 24)
    print("a read of 16 MiB: ok")
except MemoryError:
    print("a read of 16 MiB: MemoryError")
doc, records, maps = tables.shipped_index(), tables.type_records(sys.version.split()[0]), binary._maps()
print("read", bool(doc["tables"]), bool(maps), identity._read_memo(sys.argv[2]) == b"a memo")
"""


@pytest.mark.parametrize("minor", [OLDEST, NEWEST])
def test_a_limited_address_space_reads_the_index_the_type_records_and_the_maps(minor, tmp_path):
    """With 12 MiB of address space to spare (RLIMIT_AS), a read of the most a file may have fails
    (CPython's read(n) makes a buffer of n bytes first), and the whole choice's reads of index.json,
    the type records and /proc/self/maps (`regular_file.read_most`), and of the identity's digest
    memo (a buffer no larger than the file), do not."""
    proc = run(python_of(minor), LIMITED, cold_env(tmp_path), tmp_path / "memo")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:2] == ["a read of 16 MiB: MemoryError", "read True True True"], proc.stdout


#: the other readers of a file's most: a table a user names (`use_table`), another process's /proc
#: files (a profiler's process), a cache entry
LIMITED_READERS = """
import os, resource
from pathlib import Path
from offsets import data_cache, regular_file
from offsets.remote import procfs
table, entry = Path(sys.argv[2]) / "t.yaml", Path(sys.argv[2]) / "entry"
table.write_text("a table's text")
data_cache.store(entry, "key", {"doc": 1})
""" + SPARE_12_MIB + """try:
    with open(table, "rb") as f:
        f.read(1 << 24)
    print("a read of 16 MiB: ok")
except MemoryError:
    print("a read of 16 MiB: MemoryError")
print("read", regular_file.read_text(table) == "a table's text", "python" in procfs.read_text(os.getpid(), "maps"),
      data_cache.load(entry, "key") == {"doc": 1})
"""


@pytest.mark.parametrize("minor", [OLDEST, NEWEST])
def test_a_limited_address_space_reads_a_named_table_a_proc_file_and_a_cache_entry(minor, tmp_path):
    """With 12 MiB of address space to spare, `regular_file.read_text` (16 MiB at most: a table a
    user names), `procfs.read_text` (64 MiB: another process's maps) and `data_cache.load` (256 MiB)
    read a small file; each made a buffer of its most first, and raised MemoryError there."""
    proc = run(python_of(minor), LIMITED_READERS, cold_env(tmp_path), tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:2] == ["a read of 16 MiB: MemoryError", "read True True True"], proc.stdout


# ---------------------------------------------------------------- a fork during the first lookup
FORK_DURING = """
import os, threading, time
first = threading.Thread(target=offsets.get, args=("PyListObject.ob_item",))
first.start()
time.sleep(float(sys.argv[2]))
pid = os.fork()
if pid == 0:
    import faulthandler
    faulthandler.dump_traceback_later(10, exit=True)     # a blocked child says where it waits, and ends
""" + "    " + ANSWER + """
    sys.stdout.flush()
    os._exit(0)
first.join()
print("child", os.waitpid(pid, 0)[1])
"""
#: after starting the first lookup's thread, the fork comes after (s): the imports of the first
#: lookup are under way in the first few milliseconds
DELAYS = (0, 0.0003, 0.001, 0.002, 0.005, 0.02)


@pytest.mark.parametrize("minor", [OLDEST, "3.12", NEWEST])
def test_a_fork_while_another_thread_makes_the_first_lookup(minor, tmp_path):
    """The child of a fork made while another thread's first lookup imports the runtime's modules
    answers: it imports again what that thread had half imported, never waits for that thread's
    import lock (before: blocked forever, on every interpreter)."""
    python = python_of(minor)
    for delay in DELAYS:
        proc = run(python, FORK_DURING, cold_env(tmp_path / str(delay)), delay)
        assert "child 0" in proc.stdout, (delay, proc.stdout, proc.stderr[-3000:])
        answer_of(proc)


# ---------------------------------------------------------------- damaged cache and table files
def proven_copy(minor: str):
    """A copy of pyenv's `minor` that no shipped table is exact for (foreign_builds.rebuilt: no
    headers, another build-id), so its first lookup runs the live check and keeps a proof."""
    from runtime_child import copy_of
    from offsets.tools import foreign_builds

    return copy_of(lambda: foreign_builds.rebuilt(python_of(minor).parent.parent.name))


def proof_entry(env: dict):
    """The one proof entry of a cache."""
    [entry] = list((Path(env["OFFSETS_CACHE"]) / "proofs").iterdir())
    return entry


#: JSON texts the C scanner refuses (each a SystemError on 3.10 and 3.11 before)
NOT_JSON = ['{"format" 7}', "[1 2]", '"\\x"', '{"a": 1', '"ab']
REFUSED = """
from offsets.layout.json_read import loads
for text in %r:
    try:
        loads(text)
    except ValueError:
        continue
    raise SystemExit("parsed: " + text)
print("json" in sys.modules)
""" % (NOT_JSON,)


@pytest.mark.parametrize("minor", [OLDEST, "3.10", "3.11", NEWEST])
def test_a_damaged_table_or_cache_entry_is_a_value_error_and_a_miss(minor, tmp_path):
    """Text that is not JSON is a ValueError on every interpreter (3.10 and 3.11's C scanner raised
    SystemError without json.decoder imported), so a damaged own table is skipped and a damaged
    proof entry is a miss, made again whole; no lookup imports json to read a good file."""
    python = python_of(minor)
    proc = run(python, "offsets.get('PyListObject.ob_item'); print('json' in sys.modules)", cold_env(tmp_path / "good"))
    assert proc.returncode == 0 and proc.stdout.split() == ["False"], proc.stderr[-3000:]
    proc = run(python, REFUSED, cold_env(tmp_path / "refused"))
    assert proc.returncode == 0 and proc.stdout.split() == ["True"], proc.stderr[-3000:]

    env = cold_env(tmp_path / "table")                  # the damaged own table of the issue
    tables = Path(env["OFFSETS_TABLES"])
    tables.mkdir(parents=True)
    (tables / f"cpython-{python.parent.parent.name}-x86_64-linux-gnu-0000000000000000.jsonl").write_text('{"format" 7}\n')
    answer_of(run(python, ANSWER, env))

    copy = proven_copy(minor)
    env = cold_env(tmp_path / "proof")
    cold = run(copy, ANSWER, env)
    answer_of(cold)
    entry = proof_entry(env)
    kept = entry.read_bytes()
    entry.write_text('{"key" 7}')
    again = run(copy, ANSWER, env)
    assert again.stdout == cold.stdout, again.stderr[-3000:]
    assert proof_entry(env) == entry and same_proof(entry.read_bytes(), kept)


def same_proof(a: bytes, b: bytes) -> bool:
    """Two proof entries are whole records of the same check: the same key and parts, the field asked
    proven in both, and no check failed. (Not the same lists: under load a check that needs a quiet
    moment, a collection or a trace function of its own may skip in one run and pass in the next; the
    full suite saw 3.8's entries differ so, 2 runs in 3.)"""
    import json

    def parsed(data: bytes) -> dict:
        return json.loads(data.partition(b"\n")[2] if data[:1] != b"{" else data)

    x, y = parsed(a), parsed(b)
    return (x["key"] == y["key"] and set(x) == set(y) and not x.get("failed") and not y.get("failed")
            and all(["PyListObject", "ob_item"] in d["proven"] and len(d["passed"]) > 100 for d in (x, y)))


# ---------------------------------------------------------------- a FIFO where a file is read
COMMITTED = REPO / "generated" / "cpython-3.11.7-x86_64-linux-gnu.yaml"


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


COMMAND_FIFOS = {"table": ["-m", "offsets", "get", "PyListObject", "-t", "FIFO.yaml"],
                 "compact-table": ["-m", "offsets", "get", "PyListObject", "-t", "FIFO.jsonl"],
                 "watch": ["-m", "offsets", "diff", str(COMMITTED), str(COMMITTED), "--watch", "FIFO"],
                 "binary": ["-m", "offsets", "identify", "--binary", "FIFO"]}
#: the runtime's own command (`make run`'s lookup), which runs where the runtime does
RUNTIME_FIFO = ["-m", "offsets.runtime", "--unproven", "FIFO"]


@pytest.mark.parametrize("argv, minor", [
    *(pytest.param(argv, minor, id=f"{name}-{minor}") for name, argv in COMMAND_FIFOS.items()
      for minor in PYTHONS),
    *(pytest.param(RUNTIME_FIFO, minor, id=f"needs-{minor}") for minor in (OLDEST, "venv", NEWEST)),
])
def test_a_fifo_given_to_the_command_is_refused_in_one_line(argv, minor, tmp_path):
    """A FIFO named as a file to read is refused at once, in one line, with exit status 2 (before:
    the command waited for a writer forever): by the `offsets` command on the venv's interpreter
    and the oldest and newest it supports (each in a venv with the scan extra), and by the
    runtime's own on the runtime's oldest and newest."""
    python = python_of(minor) if minor == OLDEST else command_python(minor)
    name = next(a for a in argv if a.startswith("FIFO"))
    path = fifo(tmp_path / name)
    argv = [str(path) if a == name else a for a in argv]
    proc = subprocess.run([str(python), *argv], capture_output=True, text=True, timeout=30, cwd=REPO,
                          env=cold_env(tmp_path))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "a FIFO, not a regular file" in lines[0], proc.stderr


@pytest.mark.parametrize("minor", [OLDEST, NEWEST])
def test_a_fifo_in_the_tables_or_the_cache_is_passed_over(minor, tmp_path):
    """A FIFO named like this build's own table is not a table (the shipped one answers), and one
    where a proof is kept is a miss, the proof made again in its place (before: the lookup waited
    forever)."""
    python = python_of(minor)
    env = cold_env(tmp_path / "table")
    fifo(Path(env["OFFSETS_TABLES"]) / f"cpython-{python.parent.parent.name}-x86_64-linux-gnu-0000000000000000.jsonl")
    answer_of(run(python, ANSWER, env, timeout=30))

    copy = proven_copy(minor)
    cold_cache = cold_env(tmp_path / "cold")
    cold = run(copy, ANSWER, cold_cache)
    entry = proof_entry(cold_cache)
    env = cold_env(tmp_path / "fifo")
    fifo(Path(env["OFFSETS_CACHE"]) / "proofs" / entry.name)
    again = run(copy, ANSWER, env, timeout=30)
    assert again.stdout == cold.stdout, again.stderr[-3000:]
    assert same_proof(proof_entry(env).read_bytes(), entry.read_bytes())


# ---------------------------------------------------------------- kept proofs: damage and kills
#: what a later process answers of the proven build: each name's offset, or the error refusing it
NAMES = ("PyListObject.ob_item", "PyTupleObject.ob_item", "PyObject.ob_type", "PyVarObject.ob_size",
         "PyDictObject.ma_used", "PyFrameObject.f_back", "PyThreadState.interp", "PyTypeObject.tp_name")
ANSWERS = ANSWER + """
for name in %r:
    try:
        print(name, offsets.get(name))
    except Exception as e:
        print(name, type(e).__name__)
""" % (NAMES,)


def whole(data: bytes):
    """A proof entry as written whole, with its lists in a fixed order; None if it is not one: the
    sha256 of its body (hashlib, not ours), a newline, and the body, JSON."""
    import hashlib
    import json

    digest, _, body = data.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    return {k: sorted(map(str, v)) if isinstance(v, list) else v for k, v in json.loads(body).items()}


def flips(data: bytes, n: int) -> list:
    """(byte, bit) of `n` flips across `data`: its first and last bytes, the digest's line end,
    the proof of PyListObject.ob_item (a flip there is other valid JSON), and bytes spread between."""
    at = data.find(b'["PyListObject", "ob_item"]')
    assert at > 0, "the proof of PyListObject.ob_item"
    places = [0, data.find(b"\n"), at + 4, at + 20, len(data) - 1]
    places += [len(data) * i // (n - len(places) + 1) for i in range(1, n - len(places) + 1)]
    return [(p, i % 8) for i, p in enumerate(places)]


@pytest.mark.parametrize("minor", [OLDEST, NEWEST])
def test_a_bit_flipped_in_a_kept_proof_is_a_miss_made_again(minor, tmp_path):
    """Each later process answers what a cold one does, whichever bit of the kept proof is flipped,
    and the entry is made again whole (before: a flip in a proven name refused that field in every
    later process, and one in `passed` or `key` could turn the proof into another valid one)."""
    copy = proven_copy(minor)
    env = cold_env(tmp_path)
    cold = run(copy, ANSWERS, env)
    answer_of(cold)
    entry = proof_entry(env)
    kept = entry.read_bytes()
    wrong, unmade = [], []
    for byte, bit in flips(kept, 10):
        damaged = bytearray(kept)
        damaged[byte] ^= 1 << bit
        entry.write_bytes(bytes(damaged))
        later = run(copy, ANSWERS, env)
        if later.stdout != cold.stdout:
            wrong.append((byte, bit, later.stdout, later.stderr[-2000:]))
        if proof_entry(env) != entry or whole(entry.read_bytes()) is None or whole(entry.read_bytes()) != whole(kept):
            unmade.append((byte, bit))
    assert wrong == [] and unmade == []


@pytest.mark.parametrize("minor", [OLDEST, NEWEST])
def test_a_first_lookup_killed_anywhere_leaves_a_cache_later_processes_answer_from(minor, tmp_path):
    """SIGKILL at random moments of first lookups that run the live check and keep its proof: no
    process is left, every entry in the cache is whole (a temporary file may stay; no reader
    looks at it), and a later process answers exactly what a cold one does."""
    import random
    import signal
    import time

    copy = proven_copy(minor)
    cold = run(copy, ANSWERS, cold_env(tmp_path / "cold"))
    answer_of(cold)
    env = cold_env(tmp_path / "killed")
    head = "import sys; sys.path.insert(0, sys.argv[1]); import offsets\n"
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    for _ in range(8):
        proc = subprocess.Popen([str(copy), "-I", "-c", head + ANSWERS, str(REPO)], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.6))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        with pytest.raises(ProcessLookupError):          # nothing of that first lookup runs on
            os.killpg(proc.pid, 0)
    cache = Path(env["OFFSETS_CACHE"])
    for path in cache.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            assert whole(path.read_bytes()) is not None, (seed, path)
    later = run(copy, ANSWERS, env)
    assert later.stdout == cold.stdout, (seed, later.stdout, later.stderr[-2000:])
    kept = whole(proof_entry(env).read_bytes())
    assert kept is not None and kept == whole(proof_entry(cold_env(tmp_path / "cold")).read_bytes()), seed
