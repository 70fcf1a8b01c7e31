"""`offsets diff`, `offsets history`, `offsets check`, `offsets report`: layout drift across builds.

Exit codes: 0 no drift, 1 drift (in the watched names, or anywhere without --watch; for `check`, a
committed table that is stale or missing), 2 an error.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from . import HelpFormatter, build_arguments, has_build_options, jobs_argument
from ..errors import TableError, VerifyError

DIFF_EPILOG = """examples:
  offsets diff generated/cpython-3.12.1-x86_64-linux-gnu.yaml generated/cpython-3.13.0-x86_64-linux-gnu.yaml
  offsets diff OLD.yaml NEW.yaml --watch my-jit-fields.txt --format markdown
  offsets diff OLD.yaml --python python3.13         NEW is that interpreter's build, scanned now

A watch file lists one name per line, `STRUCT.FIELD`, `STRUCT` (all its fields) or a constant
(`FRAME_OWNED_BY_CSTACK`); `#` starts a comment. Names go through the alias map, so `listiterobject.it_index` also finds
`_PyListIterObject.it_index`. A name neither table knows is an error (exit 2).
Exit status: 0 no drift, 1 drift in what is watched (everything without --watch), 2 error."""

CHECK_EPILOG = """examples:
  offsets check --baseline generated/ --python python3.13
  offsets check --baseline generated/ --prefix deb/usr --target aarch64-linux-gnu

Rescans the build, finds the committed table of the same identity (cpython-VERSION-[CONFIG-]TRIPLE.yaml)
in the baseline directory, and compares them byte for byte. Exit status: 0 up to date; 1 missing,
stale or different (the layout changes are printed); 2 error."""


#: How much of the unified diff `check` prints when only non-layout parts of a table differ.
CHECK_DIFF_LINES = 40


def register(sub) -> None:
    d = sub.add_parser("diff", help="compare two layout tables (or a table and a build)", formatter_class=HelpFormatter,
                       description="List structs and fields added, removed, moved, resized, retyped, probably "
                                   "renamed, bitfields changed, and struct size/alignment changes.",
                       epilog=DIFF_EPILOG)
    d.add_argument("old", metavar="OLD.yaml", help="the table to compare from")
    d.add_argument("new", metavar="NEW.yaml", nargs="?",
                   help="the table to compare with (default: scan the build named by the options below)")
    d.add_argument("--watch", metavar="FILE", help="only these names decide the verdict (one per line)")
    d.add_argument("--format", "-f", choices=("text", "markdown", "json", "github"), default="text",
                   help="text (coloured on a terminal), markdown (a PR comment), json (docs/drift-json.md), "
                        "github (Actions annotations)")
    d.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text format (auto: on a terminal, unless NO_COLOR is set)")
    build_arguments(d, "the build to scan instead of NEW.yaml (default: the running interpreter)")
    jobs_argument(d)
    d.set_defaults(func=run_diff)

    h = sub.add_parser("history", help="a field's offset and size (a struct's size, a constant's value) across "
                                       "every shipped table", formatter_class=HelpFormatter,
                       description="Print NAME in every table of a directory, grouped by config and target, in "
                                   "version order, marking where it changed.",
                       epilog="examples:\n  offsets history listiterobject.it_index\n"
                              "  offsets history PyThreadState --tables generated/\n"
                              "  offsets history FRAME_OWNED_BY_CSTACK          3 up to 3.13, 4 from 3.14")
    h.add_argument("name", help="STRUCT.FIELD, STRUCT or a constant (aliases across versions work)")
    h.add_argument("--tables", metavar="DIR", help="a directory of tables (default: the tables the package ships)")
    h.set_defaults(func=run_history)

    c = sub.add_parser("check", help="rescan a build and compare it with its committed table",
                       formatter_class=HelpFormatter, description="Fail when a committed table is stale.",
                       epilog=CHECK_EPILOG)
    c.add_argument("--baseline", metavar="DIR", required=True, help="the directory of committed tables (generated/)")
    build_arguments(c, "the build to rescan (default: the running interpreter)")
    jobs_argument(c)
    c.set_defaults(func=run_check)

    r = sub.add_parser("report", help="write an HTML page of struct layouts as byte maps across versions",
                       formatter_class=HelpFormatter,
                       description="One self-contained HTML file (no external resources): for each --struct, "
                                   "one byte map per table side by side, a row per platform (Linux with glibc, "
                                   "Windows, ...), fields changed since the column to the left highlighted; the "
                                   "--constant values in a table, changes highlighted; and, per platform, what "
                                   "checked its tables (compilers, DWARF, binaries of the builds).",
                       epilog="examples:\n  offsets report --struct PyObject --struct PyFrameObject -o layouts.html\n"
                              "  offsets report -c FRAME_OWNED_BY_CSTACK -c Py_TAG_BITS -s _PyInterpreterFrame "
                              "-o frames.html")
    r.add_argument("tables", metavar="TABLE.yaml", nargs="*", help="the tables, one column each "
                                                                   "(default: every table in --tables DIR)")
    r.add_argument("--tables", dest="tables_dir", metavar="DIR", help="a directory of tables (default: the tables the package ships)")
    r.add_argument("--struct", "-s", action="append", default=[], metavar="NAME", help="a struct to draw (repeat)")
    r.add_argument("--constant", "-c", action="append", default=[], metavar="NAME",
                   help="a constant to list across the tables (repeat), e.g. FRAME_OWNED_BY_CSTACK")
    r.add_argument("-o", "--output", metavar="FILE", required=True, help="the HTML file to write ('-' for stdout)")
    r.set_defaults(func=run_report)


def _scan(args):
    """The build scanned as `offsets scan` would (DWARF-filled where it applies)."""
    from .scan import scan_table

    return scan_table(args)


def run_diff(args) -> int:
    from ..drift import diff, formats as drift_format
    from ..drift.tables import load_one

    old = load_one(args.old)
    if args.new and has_build_options(args):
        raise TableError("give either NEW.yaml or build options (--python, --prefix ...), not both")
    if not args.new and not has_build_options(args):
        print(f"offsets: no NEW.yaml: comparing with the build of the running interpreter ({sys.executable}), "
              f"scanned now; name another with --python EXE", file=sys.stderr)
    new = load_one(args.new) if args.new else _scan(args)
    watches = None
    if args.watch:
        from ..regular_file import read_text     # no yaml: diff needs only the runtime

        text = read_text(args.watch, "watch file")
        watches = diff.resolve_watch(diff.parse_watch(text), old, new, where=args.watch)
    report = drift_format.Report(old.build, new.build, diff.diff(old, new), watches, args.watch)
    colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                        and not os.environ.get("NO_COLOR"))
    sys.stdout.write(drift_format.render(report, args.format, colour))
    return report.exit_code


def run_history(args) -> int:
    from ..drift.history import format_text, history, table_paths

    tables = _tables_for(table_paths(args.tables), [args.name])
    sys.stdout.write(format_text(args.name, history(args.name, tables)))
    return 0


def _tables_for(paths, names):
    """The tables at `paths`, holding only the structs `names` name (all of them when one is unknown,
    so that the error suggests the closest names)."""
    from ..drift import tables as drift_tables

    tables = drift_tables.load(paths, names)
    return tables if drift_tables.names_found(tables, names) else drift_tables.load(paths)


def run_check(args) -> int:
    from ..drift import diff, formats as drift_format
    from ..layout import table_yaml
    from ..drift.history import load_table

    if not Path(args.baseline).is_dir():
        raise TableError(f"--baseline {args.baseline}: no such folder (give the directory of committed tables, "
                         f"like a checkout's generated/)")
    fresh = _scan(args)
    path = Path(args.baseline) / f"{fresh.build.table_name}.yaml"
    if not path.exists():
        raise VerifyError(f"no committed table {path} for CPython {fresh.build.version} "
                          f"({fresh.build.config_name}, {fresh.build.target.triple}): run `make tables` and commit it")
    from ..regular_file import read_text

    committed_text = read_text(path, "committed table")
    committed = load_table(path) if "\n  binaries:\n" in committed_text else None
    if committed is not None:
        fresh = _binaries_as_committed(fresh, committed, args)
    if table_yaml.dumps(fresh) == committed_text:
        print(f"{path}: up to date")
        return 0
    committed = committed or load_table(path)
    changes = diff.diff(committed, fresh)
    if changes:
        report = drift_format.Report(committed.build, fresh.build, changes)
        sys.stdout.write(drift_format.text(report))
    else:
        import difflib

        lines = list(difflib.unified_diff(committed_text.splitlines(), table_yaml.dumps(fresh).splitlines(),
                                          str(path), "rescan", lineterm="", n=1))
        print("\n".join(lines[:CHECK_DIFF_LINES]))
        if len(lines) > CHECK_DIFF_LINES:
            print(f"... ({len(lines) - CHECK_DIFF_LINES} more lines)")
    parts = [what for what, a, b in (
        ("build inputs", committed.build.inputs, fresh.build.inputs),
        ("build config", committed.build.config, fresh.build.config),
        ("the binaries it was verified against", committed.build.binaries, fresh.build.binaries),
        ("scanner versions", committed.scanner, fresh.scanner), ("other names", committed.names, fresh.names),
        ("skipped units", committed.skipped, fresh.skipped), ("conflicts", committed.conflicts, fresh.conflicts),
        ("constants left out", committed.constants_left_out, fresh.constants_left_out))
        if a != b]
    if any(committed.structs[k].defined_in != s.defined_in for k, s in fresh.structs.items() if k in committed.structs):
        parts.append("definition lines")
    hint = ""
    if committed.build.inputs.get("source") and not fresh.build.inputs.get("source"):
        hint = " (the committed table was scanned with --source: pass the same source tree)"
    if any(committed.constants[k].defined_in != c.defined_in for k, c in fresh.constants.items()
           if k in committed.constants):
        parts.append("where constants are defined")
    what = f"{len(changes)} layout change(s)" if changes else "no layout change"
    raise VerifyError(f"{path} is stale: {what}" + (f"; differs in {', '.join(parts)}" if parts else "")
                      + f"{hint}; run `make tables` and commit the result")


def _binaries_as_committed(fresh, committed, args):
    """A rescan knows no binaries: `make tables` records the build-ids it verified the table against.
    When the rescanned interpreter's own binary is one of them, the rescan is of that very build and
    carries the same record; otherwise (a rebuilt interpreter) the difference is reported."""
    from dataclasses import replace

    if fresh.build.binaries or not args.python:
        return fresh
    from ..check.verify import code_binary
    from ..remote.elf import build_id_of
    from ..scan.build_inputs import describe

    binary = code_binary(describe(args.python))
    mine = build_id_of(str(binary)) if binary is not None else None
    if mine in {x.build_id for x in committed.build.binaries}:
        return replace(fresh, build=replace(fresh.build, binaries=committed.build.binaries))
    return fresh


def run_report(args) -> int:
    from ..drift.history import table_paths
    from ..drift.report import render

    if not args.struct and not args.constant:
        from . import UsageError

        raise UsageError("name at least one --struct or --constant to draw (see `offsets report --help`)")
    from ..atomic_write import STDOUT, output, write

    paths = args.tables or table_paths(args.tables_dir)
    if args.output != STDOUT:
        output(args.output, paths, probe=True)     # refuse a device, a folder, /proc, an input before the work
    from ..drift.checked import of_paths

    tables = _tables_for(paths, args.struct + args.constant)
    html = render(tables, args.struct, args.constant, checked=of_paths(paths))
    write(args.output, html, inputs=paths)
    if args.output != STDOUT:
        print(f"{args.output}: {len(args.struct)} struct(s), {len(args.constant)} constant(s) across "
              f"{len(tables)} table(s)", file=sys.stderr)
    return 0
