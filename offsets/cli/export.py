"""`offsets export`: tables as C, Rust, Go or JSON for readers in other languages."""
from __future__ import annotations

from pathlib import Path

from . import HelpFormatter

EPILOG = """examples:
  offsets export --index -o build-ids.json              # every known build-id -> its table, version, flags
  offsets export --lang c cpython-3.14.10-debian-x86_64-linux-gnu -o pyoffsets.h
  offsets export --lang rust generated/cpython-3.1*.yaml -o pyoffsets.rs
  offsets export --lang go --fields PyThreadState.current_frame,_PyInterpreterFrame cpython-3.13.0-x86_64-linux-gnu
  offsets export --lang json all

TABLE is a table file (YAML or compact), the name of a shipped table (`offsets export --list`), or
`all` (every shipped table). Each table's layout is keyed by the GNU build-ids of its binaries, and by
its version, triple and config (release, debug, freethreaded, freethreaded-debug): a reader matches a
process's interpreter binary by build-id first (`offsets identify`). A lookup by version (C's
pyoffsets_by_version(hexversion, triple, config); by_version in Rust, ByVersion in Go) answers only
where every layout exported for those three is the same, and by hexversion alone only where every
layout of that version is: never one of several builds that differ.

--fields debug-offsets (the default) exports CPython's own _Py_DebugOffsets sections and names
(interpreter_frame.previous, code_object.linetable ...) for every version, those before 3.13 too,
each with its offset and size ({0, sizeof} for a section's size); an item a table lacks is absent
(UINT64_MAX in C, Item::ABSENT in Rust, Absent in Go, null in JSON). The constants a reader needs
(FRAME_OWNED_BY_*, Py_TAG_BITS, PyUnicode_*_KIND) come with them where the tables have them.

--index writes JSON for agents that identify a process by its binary: every GNU build-id the
tables (default: all shipped) record -> the table, its version, hexversion, layout flags, target,
vendor, and the binary (its file in its package or prefix, and where it came from). Read a
process's build-id with `offsets identify --pid PID --json`, or from the ELF note of its libpython
or executable; a build-id in the index is exact for every field of its table."""


def register(sub) -> None:
    p = sub.add_parser("export", help="tables as C, Rust, Go or JSON for readers in other languages",
                       formatter_class=HelpFormatter, epilog=EPILOG,
                       description="Write the offsets (and constants) readers need, for one or more builds, in "
                                   "the conventions of another language.")
    p.add_argument("tables", nargs="*", metavar="TABLE", help="table files, shipped table names, or `all`")
    p.add_argument("--lang", choices=("c", "rust", "go", "json"), help="the language (required unless --list)")
    p.add_argument("--fields", default="debug-offsets", metavar="LIST",
                   help="`debug-offsets` (default), or STRUCT.FIELD,STRUCT,... (a STRUCT alone: its size)")
    p.add_argument("--constants", metavar="LIST", help="constants to export (default: the ones a stack reader needs)")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write (default: stdout)")
    p.add_argument("--list", action="store_true", help="list the shipped tables' names")
    p.add_argument("--index", action="store_true", help="JSON: every recorded build-id with its table, version and "
                                                        "flags (of TABLEs, default all shipped)")
    p.set_defaults(func=run_export)


def shipped_names() -> list:
    from ..runtime.tables import shipped_index

    return sorted(e["name"] for e in shipped_index()["tables"])


def load(spec: str) -> list:
    """The tables `spec` names: a file, a shipped table's name, or `all`."""
    from ..errors import UnknownNameError, close_matches
    from ..layout import compact
    from ..layout.compact import COMPACT_DIR

    if spec == "all":
        return [compact.load(COMPACT_DIR / f"{n}.jsonl") for n in shipped_names()]
    if Path(spec).is_file():
        from ..drift.tables import load_one

        return [load_one(spec)]
    names = shipped_names()
    name = spec
    for suffix in (".jsonl", ".yaml"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    if name in names:
        return [compact.load(COMPACT_DIR / f"{name}.jsonl")]
    raise UnknownNameError(spec, close_matches(spec, names, 0.6), where="table files or shipped tables "
                                                                        "(`offsets export --list`)")


def read_files(specs: list) -> list:
    """The files the table specs name (a file, or the shipped tables' files): what an output may not be."""
    from ..layout.compact import COMPACT_DIR

    files = [s for s in specs if Path(s).is_file()]
    if len(files) < len(specs):         # a shipped table's name, or `all`
        files += [str(p) for p in COMPACT_DIR.iterdir() if p.is_file()]
    return files


def builds(spec: str) -> list:
    """(table name, model.Build) of the tables `spec` names, reading only their headers where shipped."""
    from ..layout.compact import COMPACT_DIR
    from ..layout.compact_read import open_table
    from ..layout.model import Build

    names = shipped_names() if spec == "all" else None
    if names is None:
        stem = spec[:-len(".jsonl")] if spec.endswith(".jsonl") else spec
        names = [stem] if not Path(spec).is_file() and stem in shipped_names() else None
    if names is None:
        return [(t.build.table_name, t.build) for t in load(spec)]
    return [(n, Build.from_dict(open_table(str(COMPACT_DIR / f"{n}.jsonl"))[0]["build"])) for n in names]


def run_export(args) -> int:
    from .. import export
    from ..atomic_write import output, write

    if args.list:
        print("\n".join(shipped_names()))
        return 0
    specs = args.tables or (["all"] if args.index else [])
    inputs = read_files(specs)
    if args.output and args.output != "-":
        output(args.output, inputs)         # before the work: a missing folder, an input, a device
    if args.index:
        text = export.build_id_index([b for spec in specs for b in builds(spec)])
        if args.output and args.output != "-":
            write(args.output, text, inputs=inputs)
        else:
            print(text, end="")
        return 0
    if not args.lang or not args.tables:
        from . import UsageError

        raise UsageError("give --lang and at least one TABLE (see `offsets export --help`)")
    tables = [t for spec in args.tables for t in load(spec)]
    constants = tuple(c.strip() for c in args.constants.split(",") if c.strip()) if args.constants is not None \
        else export.READER_CONSTANTS
    note = f"generated by `offsets export --lang {args.lang}` from {', '.join(t.build.table_name for t in tables)}"
    if len(note) > 300:
        note = f"generated by `offsets export --lang {args.lang}` from {len(tables)} tables"
    text = export.export(tables, args.lang, args.fields, constants, note)
    if args.output and args.output != "-":
        write(args.output, text, inputs=inputs)
    else:
        print(text, end="")
    return 0
