"""`python -m offsets.tools.debian_records`: the live check of each table of a Debian release or
debug build, run by its own interpreter (x86_64 and i686 natively; aarch64, 32-bit ARM, ppc64el,
s390x and riscv64 under qemu-user), recorded as the table's `live` check in generated/index.yaml.
`make tables` runs it after the live records of this machine's own interpreters.

The interpreter is Debian's package of the table's exact version (`python3.Xd` of its -dbg
packages for debug), unpacked by name with its C library and run through that library's loader
(debian_interpreters.py). It is the table's build when its executable's GNU build-id, read from
the file here, is one the table records; under qemu a 32-bit guest cannot read its own ELF header
(its memory is mapped at an offset in qemu's), so the build-id is read here, not by the runtime
inside. That interpreter then checks the table in its own process (check/verify.py's
`live_check_text`: `__basicsize__` of builtin types, real objects read through the table's
offsets, the constants it shows; s390x big-endian). A check with 0 failures is recorded (`live:
{checks, constants, build_id, under: qemu-..., mismatches: 0}`; `under` only for another CPU); one
that fails stops the step with the failures listed, and nothing is written. A table with a `live`
record is not checked again (unless `--again`): the record stays while its bytes do. Debian ships
no free-threaded interpreter (those tables are derived), so they have none.
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from ..errors import FetchError, VerifyError
from ..progress import say

EXAMPLES = """  python -m offsets.tools.debian_records                check and record every Debian release and debug table
  python -m offsets.tools.debian_records --only s390x   the tables whose file name contains s390x
  python -m offsets.tools.debian_records --again        check again tables that have a live record

exit status: 0 every check run passed (and is recorded), 1 a check failed (nothing written),
2 an error (no qemu-user: `make test-venv` installs it)."""


#: The configs whose interpreters Debian ships (its free-threaded tables are derived: none ships)
CONFIGS = ("release", "debug")


def check_table(b, path: Path, say: Callable[[str], None], config: str = "release") -> Optional[dict]:
    """The live record of the table at `path` by its own interpreter `b` (debian_interpreters.builds()'s);
    None where that interpreter is not its build, or Debian no longer serves its packages (said);
    `VerifyError` if it fails."""
    from ..layout import compact, table_yaml
    from ..remote.elf import build_id_of
    from . import debian_interpreters
    from .live_records import STDIN_CHECK

    text = path.read_text()
    try:
        _, exe = debian_interpreters.interpreter(b, config)
    except FetchError as e:
        say(f"    {path.name}: its interpreter cannot be had: {e}; not checked")
        return None
    found = build_id_of(str(exe))
    if found is None or found not in re.findall(r'\{build_id: "?(\w+)"?,', text):
        say(f"    {path.name}: {exe.name} (build-id {found}) is not a binary the table records: not its build")
        return None
    table = table_yaml.loads(text, str(path))
    started = time.monotonic()
    got = json.loads(debian_interpreters.run(b, STDIN_CHECK, stdin=compact.dumps(table, path.stem), config=config).strip().splitlines()[-1])
    qemu = debian_interpreters.RUNNER[b[1]]
    how = f"under {qemu}" if qemu else "natively"
    if got["failed"]:
        shown = "\n".join(f"  {m}" for m in got["failed"][:10])
        raise VerifyError(f"{path.name} fails the live check by its own interpreter ({how}, build-id {found}): "
                          f"{len(got['failed'])} failure(s) of {got['checks']} checks; not recorded:\n{shown}")
    rec = {"checks": got["checks"] - got["constants"], "constants": got["constants"], "build_id": found,
           **({"under": qemu} if qemu else {}), "mismatches": 0}
    say(f"    {path.name}: live {how}: {rec['checks']} checks of real objects and __basicsize__, "
        f"{rec['constants']} constants, 0 mismatches ({got['skipped']} not run; {time.monotonic() - started:.0f} s)")
    return rec


def record(out: Path, only: Optional[str] = None, again: bool = False, say: Callable[[str], None] = say) -> dict:
    """Run the live check of each Debian release or debug table of `out` (whose file name contains `only`) by
    its own interpreter, and add each passing one to its record in `out`/index.yaml (written once, at the end).
    Table file name -> its new `live` entry. `VerifyError` if a check fails (nothing written),
    `BuildError` if a table's record is not of its bytes, or its CPU's qemu is missing."""
    from ..check import verified
    from .live_records import record_each, wanted
    from . import debian_interpreters

    rows = verified.index_rows(out)
    todo = []
    for config in CONFIGS:
        for b in debian_interpreters.builds(debian_interpreters.RUNNER, config):
            path = out / (debian_interpreters.table_name(b, config) + ".yaml")
            if path.is_file() and wanted(rows, path.name, only, again):
                todo.append((path.name, f"its interpreter, {debian_interpreters.RUNNER[b[1]] or 'natively'}",
                             lambda b=b, path=path, config=config: check_table(b, path, say, config)))
    return record_each(out, rows, todo, say)


def main(argv=None) -> int:
    from .live_records import records_main

    return records_main("debian_records", __doc__, EXAMPLES, record, "Debian live records written", argv)


if __name__ == "__main__":
    sys.exit(main())
