"""`python -m offsets.tools.built_records`: the live check of each table of a build `make tables`
compiles here (python.org's sources by `scripts/build-cpython`: 3.13.15 release and free-threaded
for x86_64 glibc, and for musl by zig cc, `musl` and `musl-aarch64`; the table is verified against
that build, and `make prove` runs it), run by that build's interpreter, recorded as the table's
`live` check in generated/index.yaml. `make tables` runs it after the other live records.

A build is the table's by its libpython's build-id where the table records it. Else (zig's linker
writes no build-id; a glibc build compiled again here has a new one: its paths and times differ)
it is the table's when its installed headers and pyconfig.h are the table's inputs, digest for
digest, and the runtime's rule, run inside it (check/live_child.py), matches it by them (`by:
inputs`: the same version, flags and target). That interpreter then checks
the table in its own process (natively; aarch64 musl under qemu-user, through musl's own loader).
A check with 0 failures is recorded (`live: {checks, constants, build_id | by: inputs, under,
mismatches: 0}`); one that fails stops the step with its failures listed, and nothing is written.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Optional

from ..errors import VerifyError
from ..progress import say

EXAMPLES = """  python -m offsets.tools.built_records                  check and record the tables of builds made here
  python -m offsets.tools.built_records --only aarch64   the tables whose file name contains aarch64
  python -m offsets.tools.built_records --again          check again tables that have a live record

exit status: 0 every check run passed (and is recorded), 1 a check failed (nothing written),
2 an error (the build could not be made, or no qemu-user for aarch64)."""

#: the triple of a table whose build is compiled here -> what runs its programs (qemu-user for another CPU's)
RUNNERS = {"x86_64-linux-gnu": (), "x86_64-linux-musl": (), "aarch64-linux-musl": ("qemu-aarch64",)}
#: what a table of a build compiled here says of its binary (matrix._compiled_binaries)
COMPILED_HERE = "compiled by scripts/build-cpython"


def is_built_here(row: dict, text: str) -> bool:
    """Whether the table of index row `row` (YAML `text`) is of a build scripts/build-cpython makes:
    a musl table, or one whose binary it records as compiled by it."""
    return row.get("target") in RUNNERS and (row["target"].endswith("-linux-musl") or COMPILED_HERE in text)


def interpreter(row: dict) -> tuple:
    """(runner, the interpreter) of the build of index row `row`, compiled on first use
    (scripts/build-cpython; cached)."""
    import shutil

    from ..errors import BuildError
    from .matrix import _compiled_binaries

    runner = RUNNERS[row["target"]]
    if runner and shutil.which(runner[0]) is None:
        raise BuildError(f"no {runner[0]}: `apt-get install qemu-user` (make test-venv installs it)")
    config = {"freethreaded": "free-threaded"}.get(row.get("config"), row.get("config") or "release")   # the index's word
    lib = _compiled_binaries(str(row["version"]), config, row["target"])[0][0]
    minor = str(row["version"]).rsplit(".", 1)[0]
    return runner, lib.parent.parent / "bin" / f"python{minor}{'t' if config == 'free-threaded' else ''}"


def differing_inputs(table, include: Path) -> list:
    """Which of the table's inputs (its headers, pyconfig.h) the build installed in `include` does
    not have, digest for digest (the digests the runtime's rule compares: layout/identity.py)."""
    from ..layout import identity

    got = {"headers": identity.headers_digest(str(include)),
           "pyconfig_h": identity.digest_files([str(include / "pyconfig.h")], str(include))}
    return [f"{'headers' if k == 'headers' else 'pyconfig.h'} ({got[k][:19]}..., the table's "
            f"{str(table.build.inputs.get(k))[:19]}...)" for k in ("headers", "pyconfig_h")
            if got[k] != table.build.inputs.get(k)]


def check_table(row: dict, path: Path, say: Callable[[str], None]) -> Optional[dict]:
    """The live record of the table at `path` (index row `row`) by its build; None where that build
    is not the table's (said); `VerifyError` if the check fails."""
    from ..layout import compact, table_yaml
    from .live_records import run_child

    runner, exe = interpreter(row)
    table = table_yaml.load(path)
    mismatched = differing_inputs(table, exe.parent.parent / "include" / exe.name)
    started = time.monotonic()
    got = run_child(str(exe), compact.dumps(table, path.stem), runner)
    how = f"under {runner[0]}" if runner else "natively"
    by = got.get("by")
    if not got["build"] or (by == "inputs" and mismatched):
        why = got.get("why") or f"the build's installed {' and '.join(mismatched)} are not the table's inputs"
        say(f"    {path.name}: its build ({how}) is not the table's: {why}")
        return None
    if got["failed"]:
        shown = "\n".join(f"  {m}" for m in got["failed"][:10])
        raise VerifyError(f"{path.name} fails the live check by its build made here ({how}): {len(got['failed'])} "
                          f"failure(s) of {got['checks']} checks; not recorded:\n{shown}")
    rec = {"checks": got["checks"] - got["constants"], "constants": got["constants"],
           **({"by": "inputs"} if by == "inputs" else {"build_id": got["build_id"]}),
           **({"under": runner[0]} if runner else {}), "mismatches": 0}
    say(f"    {path.name}: live {how}, matched by {'its headers' if by == 'inputs' else 'its build-id'}: "
        f"{rec['checks']} checks of real objects and __basicsize__, {rec['constants']} constants, 0 mismatches "
        f"({got['skipped']} not run; {time.monotonic() - started:.0f} s)")
    return rec


def record(out: Path, only: Optional[str] = None, again: bool = False, say: Callable[[str], None] = say) -> dict:
    """Run the live check of each table of `out` of a build made here (whose file name contains
    `only`) by that build, and add each passing one to its record in `out`/index.yaml (written once,
    at the end). Table file name -> its new `live` entry. `VerifyError` if a check fails (nothing
    written), `BuildError` if a table's record is not of its bytes."""
    from ..check import verified
    from .live_records import record_each, wanted

    rows = verified.index_rows(out)
    todo = [(n, "its build made here", lambda n=n, r=r: check_table(r, out / n, say))
            for n, r in sorted(rows.items()) if (out / n).is_file() and wanted(rows, n, only, again)
            and is_built_here(r, (out / n).read_text())]
    return record_each(out, rows, todo, say)


def main(argv=None) -> int:
    from .live_records import records_main

    return records_main("built_records", __doc__, EXAMPLES, record, "live records of builds made here written", argv)


if __name__ == "__main__":
    sys.exit(main())
