"""`python -m offsets.tools.musl_records`: the live check of each musl table, run by the build it was
made for (python.org's sources compiled for musl by zig cc here: `scripts/build-cpython VERSION
musl` or `musl-aarch64`, which `make tables` verifies the table against and `make prove` runs),
recorded as the table's `live` check in generated/index.yaml. `make tables` runs it after the
other live records.

zig's linker writes no build-id, so no table can record that build's binary. The build is the
table's when its installed headers and pyconfig.h are the table's inputs, digest for digest, and
the runtime's rule, run inside it (check/live_child.py), matches it by them (`by: inputs`: the same
version, flags and target). That interpreter then checks the table in its
own process (x86_64 natively, aarch64 under qemu-user; both through musl's own loader). A check
with 0 failures is recorded (`live: {checks, constants, by: inputs, under, mismatches: 0}`); one
that fails stops the step with its failures listed, and nothing is written.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Optional

from ..errors import VerifyError
from ..progress import say

EXAMPLES = """  python -m offsets.tools.musl_records                  check and record both musl tables
  python -m offsets.tools.musl_records --only aarch64   the tables whose file name contains aarch64
  python -m offsets.tools.musl_records --again          check again tables that have a live record

exit status: 0 every check run passed (and is recorded), 1 a check failed (nothing written),
2 an error (the build could not be made, or no qemu-user for aarch64)."""

#: a musl table's triple -> what runs its build's programs here (qemu-user for another CPU's)
RUNNERS = {"x86_64-linux-musl": (), "aarch64-linux-musl": ("qemu-aarch64",)}


def interpreter(row: dict) -> tuple:
    """(runner, the interpreter) of the musl build of index row `row`, compiled on first use
    (scripts/build-cpython; cached)."""
    import shutil

    from ..errors import BuildError
    from .matrix import _compiled_binaries

    runner = RUNNERS[row["target"]]
    if runner and shutil.which(runner[0]) is None:
        raise BuildError(f"no {runner[0]}: `apt-get install qemu-user` (make test-venv installs it)")
    lib = _compiled_binaries(str(row["version"]), "release", row["target"])[0][0]
    return runner, lib.parent.parent / "bin" / f"python{str(row['version']).rsplit('.', 1)[0]}"


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
    """The live record of the musl table at `path` (index row `row`) by its build; None where the
    runtime inside does not match it to the table (said); `VerifyError` if the check fails."""
    from ..layout import compact, table_yaml
    from .live_records import run_child

    runner, exe = interpreter(row)
    table = table_yaml.load(path)
    mismatched = differing_inputs(table, exe.parent.parent / "include" / exe.name)
    if mismatched:
        say(f"    {path.name}: the build's installed {' and '.join(mismatched)} are not the table's inputs: not its build")
        return None
    started = time.monotonic()
    got = run_child(str(exe), compact.dumps(table, path.stem), runner)
    how = f"under {runner[0]}" if runner else "natively"
    if not got["build"] or got["by"] != "inputs":
        say(f"    {path.name}: its build ({how}) is not matched to it by its headers: {got.get('why') or got['by']}")
        return None
    if got["failed"]:
        shown = "\n".join(f"  {m}" for m in got["failed"][:10])
        raise VerifyError(f"{path.name} fails the live check by its musl build ({how}): {len(got['failed'])} "
                          f"failure(s) of {got['checks']} checks; not recorded:\n{shown}")
    rec = {"checks": got["checks"] - got["constants"], "constants": got["constants"], "by": "inputs",
           **({"under": runner[0]} if runner else {}), "mismatches": 0}
    say(f"    {path.name}: live {how}, matched by its headers: {rec['checks']} checks of real objects and "
        f"__basicsize__, {rec['constants']} constants, 0 mismatches ({got['skipped']} not run; "
        f"{time.monotonic() - started:.0f} s)")
    return rec


def record(out: Path, only: Optional[str] = None, again: bool = False, say: Callable[[str], None] = say) -> dict:
    """Run the live check of each musl table of `out` (whose file name contains `only`) by its build,
    and add each passing one to its record in `out`/index.yaml (written once, at the end). Table file
    name -> its new `live` entry. `VerifyError` if a check fails (nothing written), `BuildError` if a
    table's record is not of its bytes."""
    from ..check import verified
    from .live_records import record_each, wanted

    rows = verified.index_rows(out)
    todo = [(n, "its musl build", lambda n=n, r=r: check_table(r, out / n, say)) for n, r in sorted(rows.items())
            if r.get("target") in RUNNERS and (out / n).is_file() and wanted(rows, n, only, again)]
    return record_each(out, rows, todo, say)


def main(argv=None) -> int:
    from .live_records import records_main

    return records_main("musl_records", __doc__, EXAMPLES, record, "musl live records written", argv)


if __name__ == "__main__":
    sys.exit(main())
