"""`offsets verify`: check a table against gcc, DWARF and the live interpreter (see verify.py)."""
from __future__ import annotations

import sys

from . import HelpFormatter, build_arguments

EPILOG = """checks (each runs where its inputs are found; what could not run is said):
  gcc     offsetof/sizeof/_Alignof and bitfield probes over the same headers, compiled by gcc and
          read back from the object file; needs the build: --python or --prefix, else an
          interpreter on this machine whose version, config, target and headers equal the table's
  dwarf   every struct both the table and a binary's DWARF have: --binary, else the matched
          interpreter's libpython
  binary  an interpreter binary of the build (executable or libpython, stripped or not): its type
          objects' tp_basicsize, Py_Version and 3.13+ _Py_DebugOffsets, read in the file's data at
          the table's offsets: --binary, else the matched interpreter's
  live    when the table is the running interpreter's build: __basicsize__ of builtin types, and
          real objects read through the table's offsets

examples:
  offsets verify generated/cpython-3.11.7-x86_64-linux-gnu.yaml
  offsets verify t.yaml --python python3.12 --binary /usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0
  offsets verify t.yaml --prefix deb/usr --target aarch64-linux-gnu

exit status: 0 every check agrees, 1 a mismatch (each one listed), 2 an error (including having
nothing to compare against)."""


def register(sub) -> None:
    p = sub.add_parser("verify", help="check a table against gcc, DWARF and the running interpreter",
                       formatter_class=HelpFormatter, epilog=EPILOG,
                       description="Check every number of a layout table against independent truth and "
                                   "print what was compared.")
    p.add_argument("table", metavar="TABLE.yaml", help="the table to check")
    build_arguments(p, "the build the table is of (default: a matching interpreter on this machine)")
    p.add_argument("--binary", metavar="LIBPYTHON.so", help="a binary of the build: its DWARF (built with -g) and, "
                                                         "when it holds the interpreter, its own data (binary check)")
    p.add_argument("--skip", action="append", choices=("gcc", "dwarf", "binary", "live"), default=[],
                   help="leave a check out (repeatable)")
    p.set_defaults(func=run_verify)


def run_verify(args) -> int:
    from ..layout import table_yaml
    from ..check import verify
    from .scan import build_inputs
    from ..errors import VerifyError

    table = table_yaml.load(args.table)
    given = any((args.python, args.prefix, args.source, args.pyconfig))
    b = build_inputs(args) if given else None
    inputs = verify.find_inputs(table, build=b, binary=args.binary, python=args.python)
    t = table.build
    print(f"verifying {args.table}: CPython {t.version} {t.config_name} {t.target.triple}")
    result = verify.verify(table, inputs, use_gcc="gcc" not in args.skip, use_dwarf="dwarf" not in args.skip,
                           use_live="live" not in args.skip, use_binary="binary" not in args.skip, say=print)
    for why in result.not_run:
        print(f"not run: {why}")
    bad = result.mismatches
    if bad:
        print(f"{len(bad)} mismatches:")
        for m in bad:
            print(f"  {m}")
        sys.stdout.flush()
        raise VerifyError(f"{args.table} disagrees with {', '.join(sorted({c.name for c in result.checks if c.mismatches}))} "
                          f"in {len(bad)} places; first: {bad[0]}")
    print(f"ok: the table agrees with {', '.join(c.name for c in result.checks)}")
    return 0
