"""A slow test's result remembered across runs, under a key of everything that result depends on.

The key: the test's name and parameters, the sha256 of every file of the `offsets` package (any
change to the scanner, its data or this package re-runs the test), and libclang's version. The
entry also lists every file the scans read, with its sha256 (the translation units' own record,
system and builtin headers included); a warm run re-hashes them all and reuses the result only
if each is unchanged. Anything else is a miss and the test does its full work again. Entries are
`offsets.data_cache` entries under `$OFFSETS_CACHE/results/` (a damaged one is a miss).
"""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from offsets import data_cache
from offsets.scan import unit_cache
from offsets.layout.identity import cache_dir

PACKAGE = Path(__file__).resolve().parent.parent / "offsets"


@lru_cache(maxsize=None)
def package_digest() -> str:
    """sha256 of the relative path and bytes of every file of the package (no bytecode, no builds)."""
    h = hashlib.sha256()
    for p in sorted(PACKAGE.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".so"):
            h.update(str(p.relative_to(PACKAGE)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def key_of(name: str, *parts) -> str:
    from offsets.scan.clang_scan import libclang_version

    blob = json.dumps([name, package_digest(), libclang_version(), [str(p) for p in parts]])
    return hashlib.sha256(blob.encode()).hexdigest()


def _path(key: str) -> Path:
    return Path(cache_dir()) / "results" / f"{key}.json"


def recall(key: str):
    """The result remembered under `key` if every file its scans read is unchanged, else None."""
    doc = data_cache.load(_path(key), key)
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict) or not doc["files"]:
        return None
    try:
        if any(unit_cache.file_digest(p) != d for p, d in doc["files"].items()):
            return None
    except OSError:
        return None
    return doc.get("result")


def remember(key: str, files: dict, result) -> None:
    """Keep `result` under `key`, valid while every file of `files` (path -> digest) is unchanged."""
    data_cache.store(_path(key), key, {"files": dict(sorted(files.items())), "result": result})


def spy_files_read(monkeypatch) -> dict:
    """A dict that collects path -> digest of every file the translation units of each later
    `scanner.scan` read (from the units' own results), filled as the scans run."""
    from offsets.scan import scanner
    from offsets.scan.clang_scan import UnitResult

    files: dict = {}
    real = scanner.parse_units

    def parse_units(unit_list, opts, side=None):
        results = real(unit_list, opts, side)
        for r in results:
            if isinstance(r, UnitResult):
                files.update(r.files)
        return results

    monkeypatch.setattr(scanner, "parse_units", parse_units)
    return files


def inputs_key(b, binary=None) -> list:
    """Everything a gcc or DWARF check of a table depends on besides the package and the table: the build's
    inputs (headers, pyconfig.h, every file of a source tree but Lib/ and Doc/), the DWARF binary,
    the compilers and the system headers (each file's size and times)."""
    import compile_memo
    from offsets.layout.identity import digest_files, headers_digest

    parts = [repr(b), headers_digest(b.include_dir), digest_files([b.pyconfig_h], b.pyconfig_h.parent),
             unit_cache.file_digest(binary) if binary else None,
             [compile_memo.compiler_identity(cc) for cc in ("gcc", "aarch64-linux-gnu-gcc", "clang")]]
    if b.source:
        tree = [p for p in Path(b.source).rglob("*")
                if p.is_file() and p.relative_to(b.source).parts[0] not in ("Lib", "Doc")]
        parts.append(digest_files(tree, b.source))
    for root in ["/usr/include", *([str(b.sysroot)] if b.sysroot else [])]:
        parts.append(_system_headers_stamp(root))
    return parts


@lru_cache(maxsize=None)
def _system_headers_stamp(root: str) -> str:
    """The digest of every file's path, size and time under `root` (the system's headers), once per
    session (a test session installs no system headers)."""
    stamp = sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in Path(root).rglob("*") if p.is_file())
    return hashlib.sha256(repr(stamp).encode()).hexdigest()


_TEXTS: dict = {}


def table_digest(table) -> str:
    """sha256 of `table`'s YAML text, made once per table object (kept alive with it, so its id is its own)."""
    got = _TEXTS.get(id(table))
    if got is None or got[0] is not table:
        from offsets.layout import table_yaml

        got = _TEXTS[id(table)] = (table, hashlib.sha256(table_yaml.dumps(table).encode()).hexdigest())
    return got[1]


def probed(label: str, table, b, run, *parts):
    """`run()` (an `offsets.check.probe` call over `table` and build `b`), or the clean `ProbeReport` it
    gave before under the package, the table's text, `inputs_key(b)` and `parts`. A report with
    mismatches is never remembered, so it is made again, and fails again, every run."""
    from offsets.check.probe import ProbeReport

    key = key_of(label, table_digest(table), *inputs_key(b), *parts)
    doc = recall(key)
    if doc is not None:
        return ProbeReport(doc["compiler"], doc["structs"], doc["fields"], doc["bitfields"], frozenset(doc["checked"]),
                           (), tuple(doc["skipped"]), doc["types"])
    report = run()
    if not report.mismatches:
        files = {str(b.pyconfig_h): unit_cache.file_digest(b.pyconfig_h)}
        remember(key, files, {"compiler": report.compiler, "structs": report.structs, "fields": report.fields,
                              "bitfields": report.bitfields, "checked": sorted(report.checked),
                              "skipped": list(report.skipped), "types": report.types})
    return report


def passed_before(name: str, files, *parts) -> bool:
    """Whether the checks named `name` passed under this package (every file of `offsets/`, which
    holds the shipped data), libclang, `parts` and the files `files` as they are now."""
    return recall(key_of(name, *parts)) is not None if files else False


def passed(name: str, files, *parts) -> None:
    """Remember that the checks named `name` passed (call it after the last assertion)."""
    remember(key_of(name, *parts), {str(p): unit_cache.file_digest(p) for p in files}, True)
