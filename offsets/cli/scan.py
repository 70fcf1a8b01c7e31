"""`offsets scan`, `offsets get`, `offsets show`: make a table, read names from one."""
from __future__ import annotations

import sys
from pathlib import Path

from .. import progress
from . import HelpFormatter, build_arguments, jobs_argument, load_table, table_argument

SCAN_EPILOG = """examples:
  offsets scan                                  the running interpreter (written to ./NAME.yaml)
  offsets scan --python python3.11 -o t.yaml    another interpreter (run to learn its prefix/config)
  offsets scan --prefix /opt/py311 --source cpython-3.11/ -o t.yaml
                                                an installed prefix, plus the .c files of its sources
  offsets scan --prefix deb/usr --target aarch64-linux-gnu --config debug -o t.yaml
                                                Debian's unpacked libpython3.11-dbg for arm64
  offsets scan --source cpython/ --pyconfig build/pyconfig.h -o t.yaml
                                                a bare source tree with a configure-made pyconfig.h
  offsets scan --python /usr/bin/python3.13 --install
                                                make that interpreter's own table and install it where
                                                its runtime finds it ($OFFSETS_TABLES, else
                                                ~/.cache/offsets/tables): offsets.get() inside it is
                                                then exact for every struct of its headers

Any clang error aborts the scan (exit 2) and no table is written, unless --keep-going, which
writes a table listing what was skipped. Results are cached per translation unit in
$OFFSETS_CACHE (default ~/.cache/offsets): an unchanged rescan takes well under a second."""


def register(sub) -> None:
    p = sub.add_parser("scan", help="scan a CPython build into a layout table", formatter_class=HelpFormatter,
                       description="Parse a CPython build's headers (and sources) with libclang and write "
                                   "every struct's layout as a YAML table.", epilog=SCAN_EPILOG)
    build_arguments(p, "the build to scan (default: the running interpreter)")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write the table: a file, a directory (the table "
                                                        "is named cpython-VERSION-[CONFIG-]TRIPLE.yaml in it), or '-' "
                                                        "for stdout; default: the current directory")
    p.add_argument("--dwarf", metavar="BINARY", help="fill the structs only .c files define from this binary's "
                                                   "DWARF, after checking it agrees on every struct both have "
                                                   "(default with --python: its libpython, if it has DWARF)")
    p.add_argument("--no-dwarf", action="store_true", help="do not read DWARF")
    p.add_argument("--vendor", metavar="WHO", help="who built it: 'upstream' (pristine python.org sources) or "
                                                 "'DISTRIBUTOR PACKAGE-VERSION', e.g. 'debian 3.13.5-2' (default: "
                                                 "with --python, what its package records say; else upstream)")
    p.add_argument("--install", action="store_true", help="also install the table (compact form) where the "
                                                        "runtime of that build finds it: --tables, $OFFSETS_TABLES, "
                                                        "or ~/.cache/offsets/tables")
    p.add_argument("--tables", metavar="DIR", help="with --install: the directory to install into")
    p.add_argument("--keep-going", action="store_true", help="skip translation units that fail, and list them in the table")
    jobs_argument(p)
    p.add_argument("--no-cache", action="store_true", help="parse everything again, ignoring the cache")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run_scan)

    g = sub.add_parser("get", help="print one field's offset (or a struct's size)", formatter_class=HelpFormatter,
                       description="Print the byte offset of STRUCT.FIELD, or the size of STRUCT.",
                       epilog="examples:\n  offsets get listiterobject.it_index -t t.yaml    16 on x86_64\n"
                              "  offsets get PyObject -t t.yaml                   the size of PyObject\n"
                              "  offsets get PyASCIIObject.state.kind -t t.yaml   a bitfield: offset, then bits")
    g.add_argument("name", help="STRUCT.FIELD (nested: PyTypeObject.ob_base.ob_base.ob_type) or STRUCT")
    table_argument(g)
    g.set_defaults(func=run_get)

    k = sub.add_parser("constant", help="print a constant's value (an enumerator or integer macro)",
                       formatter_class=HelpFormatter,
                       description="Print the value of an enumerator or integer macro of CPython's own files (as "
                                   "`offsets get` prints an offset); with --verbose also its C type, width, kind, the "
                                   "file that defines it and how the answer is earned.",
                       epilog="examples:\n  offsets constant FRAME_OWNED_BY_CSTACK           3 on 3.13, 4 on 3.14\n"
                              "  offsets constant -v Py_TPFLAGS_HEAPTYPE          512 (unsigned long, 8 bytes, macro, ...)\n"
                              "  offsets constant SIZE@Modules/_decimal/libmpdec/transpose.c -t t.yaml")
    k.add_argument("name", help="the constant (NAME@FILE where the build gives the name two values)")
    k.add_argument("-v", "--verbose", action="store_true", help="also its type, width, kind, file and how it is earned")
    table_argument(k)
    k.set_defaults(func=run_constant)

    s = sub.add_parser("show", help="print a struct field by field", formatter_class=HelpFormatter,
                       description="Print a struct's size, alignment, origin and every field.",
                       epilog="examples:\n  offsets show listiterobject -t t.yaml\n"
                              "  offsets show PyThreadState -v     # and what checked this interpreter's table")
    s.add_argument("struct", help="a struct, union or typedef name (aliases across versions work too)")
    s.add_argument("-v", "--verbose", action="store_true",
                   help="also the table in use, what checked it, and how this struct is earned here (no --table)")
    table_argument(s)
    s.set_defaults(func=run_show)


def build_inputs(args, vendor: str = None):
    """The `BuildInputs` that `build_arguments`' options name (the running interpreter's when none
    does), made by `vendor` when given."""
    from dataclasses import replace

    from ..scan import build_inputs as build
    from ..layout import identity

    if args.prefix:
        b = build.from_prefix(args.prefix, source=args.source, target=args.target, config=args.config,
                              pyconfig=args.pyconfig, include_dir=args.include_dir, sysroot=args.sysroot)
    elif args.source and args.pyconfig and not args.python:
        b = build.from_source(args.source, args.pyconfig, target=args.target, config=args.config,
                              sysroot=args.sysroot)
    else:
        b = build.from_python(args.python or sys.executable, source=args.source, config=args.config)
    if vendor:
        if not identity.VENDOR.fullmatch(vendor):
            from ..errors import BuildError

            raise BuildError(f"--vendor {vendor!r}: say 'upstream' or 'DISTRIBUTOR PACKAGE-VERSION' "
                             f"(e.g. 'debian 3.13.5-2')")
        b = replace(b, vendor=vendor)
    return b


def scan_table(args, say=lambda msg: None, keep_going: bool = False, use_cache: bool = True,
               dwarf_from: str = None, use_dwarf: bool = True, vendor: str = None):
    """The table of the build `build_arguments`' options name (`args.jobs` parsers): scanned, then
    filled from the DWARF of `dwarf_from` (default: `_default_dwarf`) unless not `use_dwarf`."""
    from ..scan import scanner

    b = build_inputs(args, vendor)
    say(f"scanning CPython {b.version} ({b.config}, {b.target.triple}) from {b.include_dir}")
    table = scanner.scan(b, scanner.ScanOptions(keep_going=keep_going, jobs=args.jobs, use_cache=use_cache,
                                                progress=say))
    binary = (dwarf_from or _default_dwarf(args, b)) if use_dwarf else None
    if binary:
        from ..scan import dwarf

        table, compared = dwarf.checked_fill(table, binary)
        table, more = dwarf.fill_extensions(table, binary)
        say(f"DWARF of {binary} and its extension modules: agrees on {compared + more} fields; "
            f"{sum(s.origin == 'dwarf' for s in table.structs.values())} structs filled from it")
    return table


def run_scan(args) -> int:
    from ..scan import scanner
    from ..layout import table_yaml

    from ..atomic_write import STDOUT, output

    say = (lambda m: None) if args.quiet else progress.say
    out = args.output or "."
    folder = out != STDOUT and (out.endswith("/") or Path(out).is_dir())
    inputs = read_files(args)
    if out != STDOUT and not folder:
        output(out, inputs, probe=True)     # refuse a device, a FIFO, /proc, an input before scanning
    table = scan_table(args, say, keep_going=args.keep_going, use_cache=not args.no_cache, dwarf_from=args.dwarf,
                       use_dwarf=not args.no_dwarf, vendor=args.vendor)
    if folder:
        out = str(Path(out) / f"{table.build.table_name}.yaml")
    counts = (f"{len(table.structs)} structs, {table.field_count} fields"
              + (f", {len(table.skipped)} skipped" if table.skipped else "")
              + (f", {len(table.conflicts)} conflicting definitions" if table.conflicts else ""))
    if args.install:
        table = own_binaries(table, args)
        if table.build.binaries:
            say(f"the table records the build-id of {', '.join(x.file for x in table.build.binaries)}")
        path = install(table, args.tables)
        say(f"installed {path}: {counts}")
        if not args.output:
            return 0
    table_yaml.write(table, out, inputs=inputs)
    say(f"{'stdout' if out == '-' else out}: {counts}")
    return 0


def read_files(args) -> list:
    """The files a scan's command line names to read (the interpreter, pyconfig.h, the DWARF
    binary): an output may not replace one of them."""
    import shutil

    named = [args.pyconfig, args.dwarf, args.python and (shutil.which(args.python) or args.python)]
    return [f for f in named if f]


def own_binaries(table, args):
    """An own table records the build-id of the interpreter binaries it was made for (`offsets
    identify` then knows a process of that build exactly): with --prefix, the interpreter binaries
    installed in it; with --python, that interpreter's libpython or executable."""
    from ..check.binary import interpreter_binaries, with_binaries

    if args.prefix:
        from ..remote.process_root import resolve

        found = interpreter_binaries(Path(resolve(args.prefix)), table.build.minor)
    elif not (args.source and args.pyconfig):
        from ..check.verify import code_binary
        from ..scan.build_inputs import describe

        info = describe(args.python or sys.executable)
        binary = code_binary(info)
        if binary is None:
            return table
        found = [(binary, binary.name)]
    else:
        return table
    return with_binaries(table, [(path, file, "offsets scan --install") for path, file in found])


def install(table, tables=None) -> Path:
    """Write `table` in compact form where the runtime looks for this build's own table."""
    from ..atomic_write import write
    from ..layout import compact
    from ..layout.build_identity import BuildIdentity
    from ..runtime.tables import own_table_file, tables_dir

    folder = tables or tables_dir()
    if folder is None:
        from ..errors import OutputError

        raise OutputError("nowhere to install: HOME is unset and the password database has no home for this user; "
                          "give --tables DIR or set OFFSETS_TABLES")
    path = Path(folder) / own_table_file(BuildIdentity.of_table(compact.build_dict(table.build)))
    write(path, compact.dumps(table, "offsets scan --install"))
    return path


def _default_dwarf(args, b):
    """With --python (or no build option): that interpreter's libpython, when it carries DWARF and
    the scan is of the interpreter's own config (a release libpython proves nothing of --config
    free-threaded)."""
    if args.prefix or (args.source and args.pyconfig and not args.python):
        return None
    from ..scan import build_inputs as build, dwarf

    info = build.describe(args.python or sys.executable)
    if build.native_config(info) != b.config:
        return None
    lib = build.shared_libpython(info)
    return lib if lib is not None and dwarf.has_dwarf(lib) else None


def describe_field(f) -> str:
    text = f"{f.offset}"
    if f.is_bitfield:
        text += f" bits {f.bit_offset}+{f.bit_width} of {f.size} bytes"
    return text


def run_get(args) -> int:
    if args.table is None:   # this interpreter's table, under the runtime's rules (docs/identity.md)
        from .. import runtime

        print(describe_field(runtime.field(args.name)) if "." in args.name else runtime.sizeof(args.name))
        return 0
    from ..layout.names import resolve

    s, f = resolve(load_table(args.table), args.name)
    print(describe_field(f) if f else s.size)
    return 0


def run_constant(args) -> int:
    if args.table is None:   # this interpreter's table, under the runtime's rules (docs/identity.md)
        from .. import runtime

        c = runtime.constant_info(args.name)
        print(f"{c.value} ({c.type}, {c.size} bytes, {c.kind}, {c.defined_in}; {c.earned})" if args.verbose else c.value)
        return 0
    from ..layout.names import find_constant

    c = find_constant(load_table(args.table), args.name)
    print(f"{c.value} ({c.type}, {c.size} bytes, {c.kind}, {c.defined_in})" if args.verbose else c.value)
    return 0


def run_show(args) -> int:
    from ..layout.names import resolve

    table = load_table(args.table)
    s, _ = resolve(table, args.struct)
    b = table.build
    print(f"{s.kind} {s.name}: size {s.size}, align {s.align}, {s.defined_in} "
          f"[CPython {b.version} {b.config_name} {b.target.triple}, from {s.origin}]")
    if args.verbose and args.table is None:     # this interpreter's table: what checked it, how the struct is earned
        from .. import runtime

        m = runtime.build()
        print(f"  table {m.table}, {m.kind}: {m.checked_by}; {s.name} here: {m.earned(s.name)}")
    width = max([len(f.path) for f in s.fields] + [5])
    print(f"  {'offset':>6} {'size':>5}  {'field':<{width}}  type")
    for f in s.fields:
        bits = f"  bits {f.bit_offset}+{f.bit_width}" if f.is_bitfield else ""
        flex = "  (flexible)" if f.flexible else ""
        print(f"  {f.offset:>6} {f.size:>5}  {f.path:<{width}}  {f.type}{bits}{flex}")
    return 0
