"""Other stack readers, side by side with `offsets stack` on the same processes (the
comparison `make prove` and `make bench` show): py-spy and pystack from PyPI, each run on a parked
target (parked_target.py) and its output turned into {thread id: [(function, file, line), ...] innermost first}.

py-spy names functions by qualified name on 3.11+ (`Parker.method`); the comparison takes the last
dotted part, which is what `traceback` reports (`co_name`)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
_PYSTACK_THREAD = re.compile(r"^Traceback for thread (\d+)")
_PYSTACK_FRAME = re.compile(r'^\s+\(Python\) File "(.*)", line (-?\d+), in (.*)$')


def tool(name: str):
    found = BIN / name
    return str(found) if found.exists() else shutil.which(name)


def py_spy(pid: int, timeout: float = 120) -> dict:
    proc = subprocess.run([tool("py-spy"), "dump", "--pid", str(pid), "--json"], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode:
        raise RuntimeError(f"py-spy: {proc.stderr.strip()[-500:]}")
    return {t["thread_id"]: [(f["name"].rsplit(".", 1)[-1], f["filename"], f["line"]) for f in t["frames"]]
            for t in json.loads(proc.stdout)}


def pystack(pid: int, natives: dict, timeout: float = 120) -> dict:
    """pystack remote --no-block (threads by their kernel ids, mapped back through `natives`)."""
    proc = subprocess.run([tool("pystack"), "remote", str(pid), "--no-block", "--no-color"], capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode:
        raise RuntimeError(f"pystack: {(proc.stderr or proc.stdout).strip()[-500:]}")
    by_native = {v: k for k, v in natives.items()}
    out, current = {}, None
    for line in proc.stdout.splitlines():
        m = _PYSTACK_THREAD.match(line)
        if m:
            current = out.setdefault(by_native.get(int(m.group(1)), int(m.group(1))), [])
            continue
        m = _PYSTACK_FRAME.match(line)
        if m and current is not None:
            current.append((m.group(3), m.group(1), int(m.group(2))))
    return {k: list(reversed(v)) for k, v in out.items()}


def verdict(record: dict, got) -> str:
    """`ok`, or what differs from the target's own record."""
    if isinstance(got, Exception):
        return f"error: {str(got).splitlines()[0][:80] if str(got) else type(got).__name__}"
    if set(got) != set(record):
        return f"threads differ ({len(got)} read, {len(record)} recorded)"
    bad = [tid for tid in record if [tuple(f) for f in got[tid]] != record[tid]]
    return "ok" if not bad else f"{len(bad)} of {len(record)} threads differ"
