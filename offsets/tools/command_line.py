"""The command line every tool of the checkout shares: `--help` prints the tool's docstring and its
examples and exits before any work starts; an argument the tool does not take is one clear line."""
from __future__ import annotations

import argparse


def parser(module: str, doc: str, examples: str) -> argparse.ArgumentParser:
    """An argument parser for `python -m offsets.tools.<module>`: its docstring as the description,
    `examples` (one command a line, each with what it does) after the options."""
    return argparse.ArgumentParser(prog=f"python -m offsets.tools.{module}", description=doc,
                                   epilog="examples:\n" + examples,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def no_arguments(module: str, doc: str, examples: str, argv=None) -> None:
    """Parse a tool's command line that takes no arguments: `--help` prints and exits (0), anything
    else exits 2 with usage."""
    parser(module, doc, examples).parse_args(argv)
