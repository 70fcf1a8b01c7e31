"""`python -m offsets.tools.live_records`: the live check of each committed table whose own
interpreter is on this machine, run by that interpreter, recorded as the table's `live` check in
generated/index.yaml. `make tables` runs it after the tables are made.

A table's own interpreter is one whose binary's build-id the table records (pyenv's CPython 3.11.7
for cpython-3.11.7-x86_64-linux-gnu.yaml, when it is the build the table was made from): the
candidates are those `offsets verify` looks at (this interpreter, pyenv's, the PATH's), and the
interpreter itself says whether it is the build (check/live_child.py, the runtime's rule by
build-id) before it checks the table: `__basicsize__` of builtin types, real objects read through
the table's offsets, and the constants it shows. The table is handed to it in compact form, made
from the YAML bytes its `verified:` record names (that record must be of these bytes: else `make
tables` first).

A check that passes with 0 failures is recorded (`live: {checks, constants, build_id, mismatches:
0}`); one that fails stops the step with the failures listed, and nothing is recorded (with
`--again`, a failing table's old `live` record is removed). A table with a `live` record is not
checked again (unless `--again`): the record stays while its bytes do.
An interpreter older than the runtime's minimum (3.8) cannot run the check; the step says so.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Optional

from .. import children
from ..check.verified import LIVE
from ..errors import BuildError, OffsetsError, VerifyError
from ..layout.model import Build
from ..progress import say

EXAMPLES = """  python -m offsets.tools.live_records                  check and record every table whose interpreter is here
  python -m offsets.tools.live_records --only 3.12.1    the tables whose file name contains 3.12.1
  python -m offsets.tools.live_records --again          check again tables that have a live record
  python -m offsets.tools.live_records --list           only say which tables' interpreters are here

exit status: 0 every check run passed (and is recorded), 1 a check failed (nothing written),
2 an error."""

#: The oldest interpreter the live check runs in: the runtime's (pyproject.toml's requires-python).
OLDEST = (3, 8)
#: The checkout whose package the interpreters import (this package's parent folder).
CHECKOUT = Path(__file__).resolve().parents[2]
#: Seconds an interpreter may take to run the check of one table.
TIMEOUT = 300
#: Run by an interpreter another tool has shown to be of a table's build (qemu_records.py) or of its
#: minor (windows_records.py): the live check of the compact table on standard input, as JSON.
STDIN_CHECK = r"""
import json, sys
from offsets.check.verify import live_check_text
c = live_check_text(sys.stdin.read(), "<the table to record>")
print(json.dumps({"checks": c.fields, "constants": dict(c.counts)["constants"], "failed": list(c.mismatches),
                  "skipped": dict(c.counts)["not run"], "version": sys.version.split()[0]}))
"""


class Described:
    """`describe` of each interpreter, asked once per real path."""

    def __init__(self) -> None:
        self._seen: dict = {}

    def __call__(self, exe: str) -> Optional[dict]:
        from ..scan.build_inputs import describe

        real = os.path.realpath(exe)
        if real not in self._seen:
            try:
                self._seen[real] = describe(exe)
            except BuildError:
                self._seen[real] = None
        return self._seen[real]


def candidates(table, described: Described) -> list:
    """The interpreters on this machine that say they are the version, config and target of
    `table` (a `Table`, or anything with its `build`), each (path, why it cannot run the check or
    None): those `offsets verify` looks at, one path each."""
    from ..check.verify import candidate_pythons, identity_mismatch

    out, seen = [], set()
    for exe in candidate_pythons(table):
        info = described(exe)
        if info is None or identity_mismatch(table, info) is not None:
            continue
        real = os.path.realpath(info["executable"])
        if real in seen:          # pyenv's shims and a venv's python are the interpreter they run
            continue
        seen.add(real)
        old = tuple(int(x) for x in info["version"].split(".")[:2]) < OLDEST
        out.append((exe, f"CPython {info['version']} is older than {'.'.join(map(str, OLDEST))}, the oldest the "
                         f"live check (the runtime's code) runs on" if old else None))
    return out


def build_of(text: str, origin: str):
    """The table of YAML `text` as far as `candidates` needs it (its `build`), read from the text's
    head alone: a table is loaded whole only when an interpreter of its build is here."""
    import yaml

    from ..layout import table_yaml

    if "\nscanner:" not in text:
        return table_yaml.loads(text, origin)
    b = yaml.safe_load(text[:text.index("\nscanner:")])["build"]
    return SimpleNamespace(build=Build.from_dict(dict(b, hexversion=int(b["hexversion"], 16), binaries=[
        (x["build_id"], x["file"], x["source"]) for x in b.get("binaries", ())])))


def run_child(exe: str, text: str, runner: tuple = ()) -> dict:
    """What interpreter `exe` (run by `runner`, say qemu-user, if given) says of the compact table
    `text` (live_child.py's JSON line)."""
    with tempfile.TemporaryDirectory(prefix="offsets-live-") as d:
        path = Path(d) / "table.jsonl"
        path.write_text(text, encoding="utf-8")
        code = (f"import sys; sys.path.insert(0, {str(CHECKOUT)!r}); from offsets.check import live_child; "
                f"sys.exit(live_child.main([{str(path)!r}]))")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OFFSETS_")}
        env["OFFSETS_AUTOSCAN"] = "0"      # the check reads this table alone: no table is made for it
        try:
            proc = children.run([*runner, exe, "-I", "-S", "-c", code], f"{exe} (the live check)", BuildError,
                                timeout=TIMEOUT, env=env, cwd=d)
        except subprocess.TimeoutExpired:
            raise BuildError(f"{exe} did not finish the live check in {TIMEOUT} s") from None
        except OSError as e:
            raise BuildError(f"cannot run {exe}: {e.strerror or e}") from None
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        tail = "; ".join(proc.stderr.strip().splitlines()[-3:])
        raise BuildError(f"{exe} could not run the live check (exit status {proc.returncode}): {tail}")
    return json.loads(lines[-1])


def record_of(got: dict) -> dict:
    """The `live` entry of a verification record, from a passing check's JSON line."""
    return {"checks": got["checks"] - got["constants"], "constants": got["constants"], "build_id": got["build_id"],
            "mismatches": 0}


def check_table(name: str, table, found: list, say: Callable[[str], None]) -> Optional[dict]:
    """The live record of table `name` (a `Table`) by its own interpreter among `found` (from
    `candidates`); None where none of them is its build (said); `VerifyError` if its check fails."""
    from ..layout import compact

    compact_text = compact.dumps(table, name)
    for exe, why_not in found:
        if why_not:
            say(f"    {name}: {exe}: not run: {why_not}")
            continue
        started = time.monotonic()
        got = run_child(exe, compact_text)
        if not got["build"] or got["by"] != "build-id":       # its headers alone vouch for no binary here
            say(f"    {name}: {exe}: not its build: {got.get('why') or 'the table records no build-id of it'}")
            continue
        if got["failed"]:
            shown = "\n".join(f"  {m}" for m in got["failed"][:10])
            more = f"\n  ... and {len(got['failed']) - 10} more" if len(got["failed"]) > 10 else ""
            raise VerifyError(f"{name} fails the live check by its own interpreter {exe} (CPython {got['version']}, "
                              f"build-id {got['build_id']}): {len(got['failed'])} failure(s) of {got['checks']} "
                              f"checks; not recorded:\n{shown}{more}")
        rec = record_of(got)
        say(f"    {name}: live: {rec['checks']} checks of real objects and __basicsize__, {rec['constants']} "
            f"constants, 0 mismatches ({got['skipped']} not run; {exe}, build-id {got['build_id'][:12]}; "
            f"{time.monotonic() - started:.1f} s)")
        return rec
    return None


def record(out: Path, only: Optional[str] = None, again: bool = False, dry: bool = False,
           say: Callable[[str], None] = say) -> dict:
    """Run the live check of each table of `out` (whose file name contains `only`) whose own
    interpreter is here, and add each passing one to its record in `out`/index.yaml (written once,
    at the end; nothing with `dry`, which only says which interpreters are here). Table file name
    -> its new `live` entry. `VerifyError` if a check fails (nothing written), `BuildError` if a
    table's record is not of its bytes."""
    from ..check import verified
    from ..layout import table_yaml
    from ..scan.targets import host

    rows = verified.index_rows(out)
    names = sorted(p.name for p in out.glob("cpython-*.yaml") if not only or only in p.name)
    here = host().triple
    todo = [n for n in names if (rows.get(n) or {}).get("target") == here]
    described, made = Described(), {}
    for i, name in enumerate(todo, 1):
        rec = rows[name].get("verified")
        if rec and LIVE in rec.get("checks", {}) and not again:
            continue
        text = (out / name).read_text()
        found = candidates(build_of(text, name), described)
        if not found:
            continue
        if not rec or rec.get("sha256") != verified.sha256(text):
            raise BuildError(f"{name}: its verification record in index.yaml is not of its bytes: run `make tables` "
                             f"(which verifies it) before its live check")
        say(f"[{i}/{len(todo)}] {name}: an interpreter of its version here: {', '.join(exe for exe, _ in found)}")
        if dry:
            continue
        table = table_yaml.loads(text, str(out / name))
        try:
            got = check_table(name, table, found, say)
        except VerifyError:
            if rec and LIVE in rec.get("checks", {}):      # --again: its old record no longer holds
                _write(out, rows, {name: None})
            raise
        if got is not None:
            made[name] = got
    if made and not dry:
        _write(out, rows, made)
    return made


def wanted(rows: dict, name: str, only: Optional[str], again: bool) -> bool:
    """Whether table `name` is to be checked live: named by `only` (if given), and without a live
    record unless `again`."""
    return (not only or only in name) and (again or LIVE not in ((rows.get(name) or {}).get("verified") or {})
                                           .get("checks", {}))


def record_each(out: Path, rows: dict, todo: list, say: Callable[[str], None]) -> dict:
    """The live records of `todo` ((table file name, what runs it, a call giving its `live` entry or
    None), each table of `out` whose record is of its bytes), written to `out`/index.yaml once, at
    the end: file name -> entry. A `VerifyError` of a call stops it with nothing written (but a
    failing table's old record removed); `BuildError` if a table's record is not of its bytes."""
    from ..check import verified

    made = {}
    for i, (name, what, check) in enumerate(todo, 1):
        rec = (rows.get(name) or {}).get("verified") or {}
        if rec.get("sha256") != verified.sha256((out / name).read_text()):
            raise BuildError(f"{name}: its verification record in index.yaml is not of its bytes: run `make tables` "
                             f"(which verifies it) before its live check")
        say(f"[{i}/{len(todo)}] {name}: {what}")
        try:
            got = check()
        except VerifyError:
            if LIVE in rec.get("checks", {}):        # --again: its old record no longer holds
                _write(out, rows, {name: None})
            raise
        if got is not None:
            made[name] = got
    if made:
        _write(out, rows, made)
    return made


def _write(out: Path, rows: dict, live: dict) -> None:
    """`out`/index.yaml with the `live` check of each table named in `live` set to its entry there
    (None: removed)."""
    write_checks(out, rows, {name: {LIVE: entry} for name, entry in live.items()})


def write_checks(out: Path, rows: dict, changes: dict) -> None:
    """`out`/index.yaml with the rows `rows` (file name -> row), and in each table named in
    `changes` (file name -> {check name: entry}) those checks of its record set (None: removed)."""
    from ..atomic_write import write
    from .matrix import index_text

    new = []
    for name, row in rows.items():
        if name in changes:
            checks = {k: v for k, v in row["verified"]["checks"].items() if k not in changes[name]}
            checks.update((k, v) for k, v in changes[name].items() if v is not None)
            row = dict(row, verified=dict(row["verified"], checks=checks))
        new.append(row)
    write(out / "index.yaml", index_text(new))


def main(argv=None) -> int:
    from .command_line import parser

    p = parser("live_records", __doc__, EXAMPLES)
    p.add_argument("--root", metavar="REPO", help="the checkout (default: the current directory)")
    p.add_argument("--only", metavar="TEXT", help="only the tables whose file name contains TEXT")
    p.add_argument("--again", action="store_true", help="check again the tables that have a live record")
    p.add_argument("--list", action="store_true", help="run no check: say which tables' interpreters are here")
    args = p.parse_args(argv)
    return run_on_checkout(args.root, lambda out: record(out, args.only, args.again, args.list),
                           None if args.list else "live records written")


def records_main(module: str, doc: str, examples: str, record: Callable, written: str, argv=None,
                 only: str = "only the tables whose file name contains TEXT") -> int:
    """The command line of a records tool (`--root`, `--only`, `--again`) running
    `record(generated/, only, again)` on the checkout: the exit status."""
    from .command_line import parser

    p = parser(module, doc, examples)
    p.add_argument("--root", metavar="REPO", help="the checkout (default: the current directory)")
    p.add_argument("--only", metavar="TEXT", help=only)
    p.add_argument("--again", action="store_true", help="check again the tables that have this record")
    args = p.parse_args(argv)
    return run_on_checkout(args.root, lambda out: record(out, args.only, args.again), written)


def run_on_checkout(root: Optional[str], work: Callable[[Path], dict], written: Optional[str]) -> int:
    """A records tool's run: `work(generated/)` of the checkout `root` (default: the current
    directory), then `written` and the names of the tables it recorded (nothing with None); an
    error as one line. The exit status."""
    out = Path(root or ".") / "generated"
    try:
        if not (out / "index.yaml").is_file():
            raise BuildError(f"{out} has no index.yaml: run this in an offsets checkout, or pass --root REPO")
        made = work(out)
    except OffsetsError as e:
        print(f"offsets: error: {e}", file=sys.stderr)
        return e.exit_code
    if written:
        say(f"{written}: {len(made)}" + (f" ({', '.join(sorted(made))})" if made else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
