"""`make tables`: regenerate a checkout's generated/ (tables, index, C headers) and the package's
compact tables, or with `--check` only say what is stale.

Three kinds of files, each made by its own module, all written here, the same way:
- generated/cpython-*.yaml and generated/index.yaml: `matrix.regenerate` (scan each build of
  data/matrix.yaml, verify each new table against its own inputs before writing it), then
  `live_records.record` (the live check of each table whose own interpreter is on this machine,
  run by that interpreter, added to its record), `debian_records.record` (the same by Debian's
  interpreters fetched by name, other CPUs' under qemu-user), `built_records.record` (the builds
  scripts/build-cpython compiles here, matched by their headers) and `windows_records.record` (python.org's Windows
  builds' checks of the Windows tables: their DLLs' bytes, and the live check under Wine); not with
  `--check`, which runs no interpreter;
- generated/pyoffsets_*.h: `c_header.expected_files`;
- offsets/data/compact/: `compact.expected_files`.
A file is written only if its bytes change; a generated file that nothing calls for any more is
removed. The headers and the compact tables are made from the YAML in generated/ (in two processes
at once); with `--check` from the committed YAML, so a stale table makes them stale only once it is
rewritten.

This is a tool of the checkout, not of the installed package: the repository is `--root`, by
default the current directory when it holds generated/ and offsets/.
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import importlib
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Optional

from .. import data_cache
from ..atomic_write import write
from ..errors import BuildError, OffsetsError
from ..progress import say

EXAMPLES = """examples:
  python -m offsets.tools.regenerate                 rewrite whatever is stale (what `make tables` runs)
  python -m offsets.tools.regenerate --check         change nothing; exit 1 and list what is stale
  python -m offsets.tools.regenerate --check --only 'pyenv 3.11.7'
                                                     one table of the matrix (labels: --list)
  python -m offsets.tools.regenerate --derived-only  only the C headers and compact tables, from generated/
  python -m offsets.tools.regenerate --tables-only   only the tables and their index
  python -m offsets.tools.regenerate --verify --only 3.15.2
                                                     scan nothing: verify committed tables again (gcc, DWARF)
  python -m offsets.tools.live_records               only the live checks by the tables' own interpreters here
  python -m offsets.tools.debian_records             only the live checks by Debian's interpreters of their tables
  python -m offsets.tools.built_records              only the live checks by the builds made here (3.13.15, musl)
  python -m offsets.tools.windows_records            only python.org's Windows builds' checks of their tables
"""

#: Lines of unified diff shown per stale file with --check.
DIFF_LINES = 12
#: Characters shown of each diff line (a compact table's struct is one long line).
WIDTH = 160


def repository(root: Optional[str] = None) -> Path:
    """The checkout to regenerate: `root`, else the current directory; it must hold generated/ and
    offsets/ (the installed package has no generated/ to write to)."""
    path = Path(root) if root else Path.cwd()
    missing = [d for d in ("generated", "offsets") if not (path / d).is_dir()]
    if missing:
        where = f"--root {root}" if root else f"the current directory ({path.name or path})"
        raise BuildError(f"{where} is not an offsets checkout (no {' or '.join(d + '/' for d in missing)}): "
                         f"run this in the repository, or pass --root REPO")
    return path


#: The emitters of derived files: folder (relative to the checkout) -> module with `expected_files(root)`.
EMITTERS = {"generated": "offsets.layout.c_header", "offsets/data/compact": "offsets.layout.compact"}


def code_digest() -> str:
    """sha256 of everything an emitter's output can depend on besides the YAML: the package's code
    and data (its compact tables, an output, left out) and the YAML and schema libraries' versions."""
    package = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(f"{sys.version}|{metadata.version('pyyaml')}|{metadata.version('jsonschema')}".encode())
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package).as_posix()
        if path.is_file() and "__pycache__" not in rel and not rel.startswith("data/compact/"):
            h.update(f"{rel}\0{path.stat().st_size}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _emit(module: str, root: Path) -> dict[str, str]:
    return importlib.import_module(module).expected_files(root)


def derived(root: Path, use_cache: bool = True) -> dict[str, dict[str, str]]:
    """Folder (relative to `root`) -> the files its emitter makes from generated/*.yaml: name -> text.
    Content-keyed: a result is reused while the YAML bytes and the code are the same (`code_digest`);
    the emitters that must run run in two processes at once."""
    tables = sorted((root / "generated").glob("cpython-*.yaml")) + \
        [p for p in (root / "generated" / "index.yaml",) if p.is_file()]      # what verified each: index.json's `checked`
    inputs = [[p.name, data_cache.file_sha256(p)] for p in tables]
    code = code_digest() if use_cache else ""
    keys = {folder: hashlib.sha256(json.dumps([module, code, inputs]).encode()).hexdigest()
            for folder, module in EMITTERS.items()}
    store = data_cache.folder() / "regenerate"
    entry = {f: store / f"{EMITTERS[f]}.json" for f in EMITTERS}   # the last result of each, no more
    out = {f: data_cache.load(entry[f], k) for f, k in keys.items()} if use_cache else {}
    todo = [f for f in EMITTERS if not isinstance(out.get(f), dict)]
    if todo:
        with ProcessPoolExecutor(max_workers=min(2, len(todo))) as pool:   # each reads generated/ itself
            running = {f: pool.submit(_emit, EMITTERS[f], root) for f in todo}
            for f in todo:
                out[f] = running[f].result()
                if use_cache:
                    data_cache.store(entry[f], keys[f], out[f])
    return out


def sync(folder: Path, want: dict[str, str], strays: list[Path], check: bool) -> dict[str, Optional[str]]:
    """Make `folder` hold `want` (name -> text): write what differs, remove `strays` not in `want`
    (nothing with `check`). Returns the stale names -> expected text (None: to be removed)."""
    stale: dict[str, Optional[str]] = {}
    for name, text in sorted(want.items()):
        path = folder / name
        if path.exists() and path.read_text() == text:
            continue
        stale[name] = text
        if not check:
            write(path, text)
    for path in sorted(strays):
        if path.name not in want:
            stale[path.name] = None
            if not check:
                path.unlink()
    return stale


def diff_hint(root: Path, rel: str, new: Optional[str]) -> list[str]:
    """The first lines of the unified diff from the file `rel` to `new` (None: removed)."""
    path = root / rel
    old = path.read_text().splitlines(True) if path.exists() else []
    lines = list(difflib.unified_diff(old, (new or "").splitlines(True), f"a/{rel}",
                                      "/dev/null" if new is None else f"b/{rel}", n=1))
    if len(lines) > DIFF_LINES:
        lines = lines[:DIFF_LINES] + [f"... ({len(lines) - DIFF_LINES} more diff lines)\n"]
    return [(line.rstrip("\n")[:WIDTH] + (" ..." if len(line.rstrip("\n")) > WIDTH else "")) + "\n"
            for line in lines]


def run(root: Path, check: bool, only: Optional[str], derived_only: bool,
        use_cache: bool = True, jobs: int = 1, tables_only: bool = False) -> dict[str, Optional[str]]:
    """Regenerate (or with `check`, compare) everything (the tables alone with `tables_only`, what is
    derived from them alone with `derived_only`); the stale files, relative to `root` -> text."""
    from . import matrix

    stale: dict[str, Optional[str]] = {}
    gen = root / "generated"
    if not derived_only:
        found = matrix.regenerate(gen, matrix.select(only), check, partial=bool(only), workers=jobs)
        stale.update({f"generated/{name}": text for name, text in found.items()})
        if not check:     # each table whose own interpreter is here or can be had: its checks, in its record
            from . import debian_records, live_records, built_records, windows_records

            if any([live_records.record(gen), debian_records.record(gen), built_records.record(gen),    # all run
                    windows_records.record(gen)]):
                stale["generated/index.yaml"] = (gen / "index.yaml").read_text()
    for folder, want in ({} if tables_only else derived(root, use_cache)).items():
        strays = list(gen.glob("pyoffsets_*.h")) if folder == "generated" else \
            [p for p in (root / folder).glob("*") if p.is_file()] if (root / folder).is_dir() else []
        if folder == "offsets/data/compact" and not check:
            (root / folder).mkdir(parents=True, exist_ok=True)
        found = sync(root / folder, want, strays, check)
        stale.update({f"{folder}/{name}": text for name, text in found.items()})
    return stale


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m offsets.tools.regenerate", description=__doc__, epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 listing the stale files (with the start of each diff)")
    p.add_argument("--root", metavar="REPO", help="the checkout (default: the current directory)")
    p.add_argument("--only", metavar="TEXT", help="only the matrix jobs whose label contains TEXT (the other "
                   "tables and their index rows are left as they are)")
    p.add_argument("--derived-only", action="store_true",
                   help="scan nothing: only the C headers and compact tables, from generated/*.yaml")
    p.add_argument("--tables-only", action="store_true",
                   help="only the tables and their index: leave the C headers and compact tables alone")
    p.add_argument("--verify", action="store_true", help="scan and write nothing: check every committed table "
                   "of the matrix (or of --only) against gcc's offsetof probes over its own inputs, and DWARF")
    p.add_argument("--no-cache", action="store_true", help="make the C headers and compact tables again even "
                   "when neither generated/ nor the code changed since they were last made")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                   help="make N tables at once (default 1: each scan and verification already uses every core, "
                        "and with warm caches the processes cost more than they save)")
    p.add_argument("--list", action="store_true", help="print the labels of the matrix jobs and exit")
    args = p.parse_args(argv)
    try:
        from . import matrix

        if args.list:
            print("\n".join(j.label for j in matrix.jobs()))
            return 0
        root = repository(args.root)
        if args.verify:
            return matrix.verify_all(matrix.select(args.only), root / "generated")
        if args.derived_only and args.tables_only:
            print("offsets: error: --derived-only and --tables-only exclude each other", file=sys.stderr)
            return 2
        stale = run(root, args.check, args.only, args.derived_only, not args.no_cache, args.jobs, args.tables_only)
    except OffsetsError as e:
        print(f"offsets: error: {e}", file=sys.stderr)
        return e.exit_code
    if not stale:
        say("everything is up to date")
        return 0
    if not args.check:
        say(f"updated: {', '.join(sorted(stale))}")
        return 0
    for rel in sorted(stale):
        sys.stdout.writelines(diff_hint(root, rel, stale[rel]))
    say(f"stale: {', '.join(sorted(stale))}; run `python -m offsets.tools.regenerate` (make tables)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
