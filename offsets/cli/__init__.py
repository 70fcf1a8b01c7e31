"""The `offsets` command: scan builds, look names up, show structs (and more, one module each).

Every `OffsetsError` becomes one line on stderr and its exit code (2 for bad input, 1 for a
failed check); no traceback reaches the user.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from ..errors import OffsetsError

#: Modules that add subcommands: each has `register(subparsers)` and sets `func` on its parser.
COMMAND_MODULES = ("offsets.cli.scan", "offsets.cli.drift", "offsets.cli.verify", "offsets.cli.remote",
                   "offsets.cli.export")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    pass


def table_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--table", "-t", metavar="TABLE.yaml",
                   help="the layout table to read (from `offsets scan -o`, or one in generated/); "
                        "default: the shipped table of the running interpreter")


#: The destinations of `build_arguments`' options (`scan.build_inputs` reads them).
BUILD_OPTIONS = ("python", "prefix", "source", "pyconfig", "include_dir", "target", "config", "sysroot")


def build_arguments(p: argparse.ArgumentParser, title: str) -> None:
    """The options that name a build, the same for every command that takes one (scan, diff, check,
    verify; `scan.build_inputs` reads them): `title` says what the build is to that command."""
    g = p.add_argument_group(title)
    where = g.add_mutually_exclusive_group()
    where.add_argument("--python", metavar="EXE", help="an interpreter: its build (run to learn its prefix and config)")
    where.add_argument("--prefix", metavar="DIR", help="an installed prefix: include/python3.X/ (or Debian's usr/)")
    g.add_argument("--source", metavar="DIR", help="a CPython source tree: also its Objects/, Python/, Modules/, "
                                                 "Parser/ .c files, for private structs")
    g.add_argument("--pyconfig", metavar="FILE", help="the pyconfig.h to use (required with --source alone)")
    g.add_argument("--include-dir", metavar="DIR", help="with --prefix: the include directory, when it holds several")
    g.add_argument("--target", metavar="TRIPLE", help="another CPU: x86_64-linux-gnu, aarch64-linux-gnu, "
                                                     "i686-linux-gnu (default: the host, or the one Debian headers are for)")
    g.add_argument("--config", choices=("release", "debug", "free-threaded"),
                   help="the build as this config (default: what pyconfig.h says)")
    g.add_argument("--sysroot", metavar="DIR", help="the target's C library root (default: the host's, or "
                                                  "Debian's libc6-dev for that CPU, fetched into the cache)")


def has_build_options(args) -> bool:
    """Whether the command line names a build with `build_arguments`' options."""
    return any(getattr(args, dest) for dest in BUILD_OPTIONS)


def jobs_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="parallel parsers (default: one per core)")


def load_table(path):
    """The table at `path`, or the one the runtime picks for this interpreter."""
    if path:
        from ..layout.table_yaml import load

        return load(Path(path))
    from .. import runtime

    return runtime.current_table()


class UsageError(OffsetsError):
    """A command line argparse cannot read: one line, exit 2, like every other error."""


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors raised as `UsageError` (main() prints one line) instead of a
    usage block and `SystemExit`."""

    def error(self, message):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="offsets", formatter_class=HelpFormatter,
        description="Where every field of CPython's internal structs lives, for every CPython build.",
        epilog="examples:\n"
               "  offsets scan                                    scan the running interpreter\n"
               "  offsets get listiterobject.it_index -t t.yaml   one field's offset\n"
               "  offsets show PyThreadState -t t.yaml            a struct, field by field\n"
               "  offsets --cflags                                -I flags of pyoffsets.h and this build's header\n\n"
               "`offsets COMMAND --help` explains each command.")
    from .. import __version__

    p.add_argument("--version", action="version", version=f"offsets {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return p


#: Modules of `pip install 'cpython-offsets[scan]'` (pyproject.toml); the runtime alone has none of them.
SCAN_EXTRA = {"clang", "yaml", "jsonschema", "elftools"}


#: The oldest Python the command runs on: the scanner, the checks and the drift tools use 3.9's
#: standard library (`importlib.resources.files`, `ast.unparse`, `Executor.shutdown(cancel_futures=)`).
#: The runtime alone (`import offsets`, the C API) runs on 3.8 too. The Makefile says the same.
COMMAND_PYTHON = (3, 9)


def old_python() -> str:
    """The one line that refuses this interpreter if it is older than `COMMAND_PYTHON`, else ''."""
    if sys.version_info >= COMMAND_PYTHON:
        return ""
    need, have = ".".join(map(str, COMMAND_PYTHON)), ".".join(map(str, sys.version_info[:3]))
    return (f"offsets: error: the offsets command needs Python {need} or later, and {sys.executable} is {have}: "
            f"run it with a newer interpreter (`offsets scan --python {sys.executable}` scans this one from there)")


#: What `offsets` (and `python -m offsets`) answers with the runtime alone, on any Python 3.8+: the
#: include flags of the per-build header (runtime/headers.py).
RUNTIME_OPTIONS = ("--cflags", "--include-dirs")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in RUNTIME_OPTIONS:
        from .. import __version__
        from ..runtime.headers import main as headers_main

        return headers_main(argv, __version__)
    refusal = old_python()
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    args = None
    try:
        args = parser().parse_args(argv)
        return args.func(args) or 0
    except OffsetsError as e:
        print(f"offsets: error: {e}", file=sys.stderr)
        return e.exit_code
    except ModuleNotFoundError as e:
        if e.name not in SCAN_EXTRA:
            raise
        print(f"offsets: error: `offsets {args.command if args else ''}` needs {e.name}, which comes with the scan extra: "
              f"pip install 'cpython-offsets[scan]'", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("offsets: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
