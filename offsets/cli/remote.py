"""`offsets identify` and `offsets stack`: another process's CPython build, and its threads' stacks."""
from __future__ import annotations

import json
import sys

from . import HelpFormatter

IDENTIFY_EPILOG = """examples:
  offsets identify --pid 1234               which build process 1234 runs, and the table for it
  offsets identify --pid 1234 --json        the same, for machines
  offsets identify --binary /usr/bin/python3.14
  offsets identify --binary /usr/local/bin/python3.13    (--enable-shared: the libpython it loads)
  offsets identify --binary /opt/py/lib/libpython3.13.so.1.0

The binary holding the interpreter is the one of the process's mapped files that defines
Py_Initialize (its executable, its libpython, or the program a dynamic loader started), read through
/proc/PID/root (containers work). An executable given with --binary that only starts its libpython
is read through the libpython it loads, found as the dynamic loader finds it here (its RPATH,
LD_LIBRARY_PATH, its RUNPATH, /etc/ld.so.conf, /lib and /usr/lib). The table is exact when it records that binary's GNU build-id, or
when the build's installed headers (or, without them, its distributor's package version) are the
table's; otherwise it must pass a check in the process's memory, and answers only what that read.
JSON keys: pid, binary, build_id, build_id_why (why there is none), version, hexversion, free_threaded, debug, config, target,
pointer_size, vendor, prefix, headers, loaded_by and found_by (the executable given, where its libpython was
found), table, earned (exact, proven or refused), earned_by, detail.

exit status: 0 a table answers for it, 1 no table does (the message says how to make one), 2 an
error (no such process, not permitted, not a Python process ...)."""

STACK_EPILOG = """examples:
  offsets stack --pid 1234                  every thread's Python stack, innermost frame first
  offsets stack --pid 1234 --json           {"pid", "build": {...}, "threads": [{"thread_id", "frames":
                                            [{"function", "file", "line"}]}]}

The process is read while it runs (never stopped or signalled): a thread that changes while it is
read may end the read with an error; run it again."""


def register(sub) -> None:
    p = sub.add_parser("identify", help="which CPython build a process (or binary) is, and its table",
                       formatter_class=HelpFormatter, epilog=IDENTIFY_EPILOG,
                       description="Name the exact build of a running CPython or of an interpreter binary: "
                                   "binary, GNU build-id, version, free-threaded, debug, CPU, vendor, and "
                                   "the table that answers for it.")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--pid", type=int, metavar="PID", help="a running process")
    what.add_argument("--binary", metavar="FILE", help="an interpreter binary (executable or libpython)")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=run_identify)

    s = sub.add_parser("stack", help="every thread's Python stack of a running CPython",
                       formatter_class=HelpFormatter, epilog=STACK_EPILOG,
                       description="Read every thread's Python stack (function, file, line) of another "
                                   "process through its build's table.")
    s.add_argument("--pid", type=int, metavar="PID", required=True, help="the process")
    s.add_argument("--json", action="store_true", help="one JSON object")
    s.set_defaults(func=run_stack)


def identify(pid=None, binary=None) -> tuple:
    """(Identity, Choice or None, the refusal or None, Memory or None)."""
    from ..errors import NoMatchingTable
    from ..remote import choose, identify as ident_mod, proof
    from ..remote.memory import Memory
    from ..runtime import strict_mode

    ident = ident_mod.of_process(pid) if pid is not None else ident_mod.of_binary(binary)
    memory = Memory(pid, ident.byteorder, ident.pointer_size) if pid is not None else None
    prove = (lambda t: proof.check(t, memory, ident)) if memory else None
    try:
        return ident, choose.choose(ident, prove, strict_mode()), None, memory
    except NoMatchingTable as e:
        return ident, None, e, memory


def build_keys(ident, choice, refusal) -> dict:
    keys = ident.keys()
    if choice is not None:
        keys.update(choice.keys())
    else:
        keys.update({"table": None, "earned": "refused", "earned_by": None, "detail": str(refusal)})
    return keys


def run_identify(args) -> int:
    ident, choice, refusal, memory = identify(args.pid, args.binary)
    if memory is not None:
        memory.close()
    keys = build_keys(ident, choice, refusal)
    if args.json:
        print(json.dumps(keys, indent=1))
    else:
        print(describe(keys))
    if refusal is not None:
        print(f"offsets: {refusal}", file=sys.stderr)
        return 1
    return 0


def describe(k: dict) -> str:
    config = ", ".join(f for f, on in k["config"].items() if on) or "release"
    who = f"process {k['pid']}: " if k["pid"] else ""
    lines = [f"{who}{k['binary']}"]
    if k.get("loaded_by"):
        lines.append(f"  loaded by  {k['loaded_by']} (found through {k['found_by']})")
    lines += [
             f"  build-id   {k['build_id'] or 'none (' + k['build_id_why'] + ')'}",
             f"  version    {k['version'] or '?'} ({k['version_from']})",
             f"  config     {config} (free-threaded: {'yes' if k['free_threaded'] else 'no'}, "
             f"debug: {'yes' if k['debug'] else 'no'})",
             f"  target     {k['target']}, {k['pointer_size']}-byte pointers",
             f"  vendor     {k['vendor']} ({k['vendor_evidence']})",
             f"  headers    {k['headers'] or 'not installed'}"]
    if k["table"]:
        lines.append(f"  table      {k['table']}: {k['earned']} by {k['earned_by']} ({k['detail']})")
    else:
        lines.append("  table      none: refused (see below)")
    return "\n".join(lines)


def run_stack(args) -> int:
    from ..remote.process import attach

    with attach(args.pid) as p:
        threads = p.threads()
        keys = build_keys(p.build, p.choice, None)
    if args.json:
        print(json.dumps({"pid": args.pid, "build": keys, "threads": [t.keys() for t in threads]}, indent=1))
        return 0
    print(f"process {args.pid}: CPython {keys['version']} ({keys['vendor']}, "
          f"{', '.join(f for f, on in keys['config'].items() if on) or 'release'}, {keys['target']}); table "
          f"{keys['table']} ({keys['earned']} by {keys['earned_by']})")
    for t in threads:
        native = f" (native {t.native_thread_id})" if t.native_thread_id is not None else ""
        print(f"\nthread {t.thread_id}{native}: {len(t.frames)} frame{'s' if len(t.frames) != 1 else ''}")
        for f in t.frames:
            print(f"  {f.function} ({f.file}:{f.line if f.line is not None else '?'})")
    return 0
