"""The scan: build inputs in, a complete `Table` out.

Units are parsed in parallel (one worker process per core, each under a memory limit: `workers`;
units that start alike share one precompiled preamble: `preamble`), each result kept in a
content-keyed cache of plain data (`unit_cache`; keyed by the unit's arguments and text and the code
that parses it, `code_key`, valid while every file it read is unchanged; each code's entries in a
generation of their own, `data_cache.generation`), then merged: one struct per name, a tag defined
differently in two `.c` files kept twice as `name@file`; then finished (`finish`: type records and
dependency sets), the part of it that needs no unit's result made in a worker while the units
parse (`SideTask`: the type records' reading of the sources). The units after a shared preamble are
started heaviest first (`weight`), so that both workers end together; the table is made from the
results with Python's cycle collector paused (`collector_paused`).
"""
from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from .. import __version__, data_cache
from . import code_key, storage, unit_cache, units, workers
from .build_inputs import BuildInputs, digest_files, headers_digest
from .clang_scan import Unit, UnitResult, libclang_version, load_libclang, parse_unit
from ..errors import BuildError, ScanError
from ..layout.model import Build, Table, Target


@dataclass(frozen=True)
class ScanOptions:
    keep_going: bool = False
    jobs: int = 0                  # 0: one per core
    use_cache: bool = True
    share_preambles: bool = True   # units starting with the same text share its parse (preamble.py)
    progress: Optional[Callable[[str], None]] = None


#: The code a unit's cached result comes from (`code_key`): parsing, shared preambles, the entry's form.
PARSE_CODE = ("offsets.scan.clang_scan", "offsets.scan.preamble", "offsets.scan.unit_cache")


def _generation(clang: str) -> str:
    """The scan cache's generation (`data_cache.generation`): the code and libclang its entries come from."""
    blob = json.dumps([__version__, storage.digest(), code_key.digest(*PARSE_CODE), clang])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _unit_key(unit: Unit, clang: str) -> str:
    blob = json.dumps([__version__, storage.digest(), code_key.digest(*PARSE_CODE), clang, unit.name, unit.path,
                       unit.args, unit.roots, unit.owned, unit.text])
    return hashlib.sha256(blob.encode()).hexdigest()


def _cached(store: Path, key: str, digests: dict) -> Optional[UnitResult]:
    """The cached result of the unit `key` (`unit_cache`) if every file it read still has the same content."""
    result = unit_cache.read(store, key)
    if result is None:
        return None
    try:
        for f, digest in result.files.items():
            if f not in digests:
                digests[f] = unit_cache.file_digest(f)
            if digests[f] != digest:
                return None
        return result
    except OSError:  # a file it read is gone or unreadable: a miss
        return None


@dataclass
class SideTask:
    """Work for the scan's last steps that needs no unit's result (`fn(arg)`, a module-level
    function), run in a worker while the units parse; `result` stays None when no unit is parsed
    (all from the cache) or it fails (the step then does it itself)."""

    fn: Callable
    arg: Any
    result: Any = None


def parse_units(unit_list: list[Unit], opts: ScanOptions, side: Optional[SideTask] = None) -> list:
    """Parse every unit (from the cache where possible); a `ScanError` in the list for each failure."""
    clang = libclang_version()
    store = data_cache.generation(data_cache.folder() / "scan", _generation(clang)) if opts.use_cache else None
    results: list = [None] * len(unit_list)
    todo = []
    digests: dict = {}  # each file hashed once per scan, however many units read it
    for i, u in enumerate(unit_list):
        hit = _cached(store, _unit_key(u, clang), digests) if opts.use_cache else None
        if hit is not None:
            results[i] = hit
        else:
            todo.append(i)
    if not todo:
        return results
    say = opts.progress or (lambda msg: None)
    say(f"parsing {len(todo)} translation unit(s), {len(unit_list) - len(todo)} from cache")
    with tempfile.TemporaryDirectory(prefix="offsets-preamble-") as workdir, \
            workers.Workers(opts.jobs or os.cpu_count() or 1, start=load_libclang) as pool:
        if side is not None:
            pool.submit("side", "the scan's side task", side.fn, side.arg, priority=(1,))
        done = 0
        for i, out in _parse(pool, [(i, unit_list[i]) for i in todo], opts.share_preambles, workdir):
            if i == "side":
                side.result = None if isinstance(out, ScanError) else out
                continue
            done += 1
            results[i] = out
            if isinstance(out, ScanError):
                if not opts.keep_going:
                    raise out
            elif opts.use_cache:
                unit_cache.write(store, _unit_key(unit_list[i], clang), out)
            if len(todo) > 1:
                say(f"[{done}/{len(todo)}] {unit_list[i].name}")
    return results


def _parse(pool: workers.Workers, todo: list[tuple[int, Unit]], share: bool, workdir: str) -> Iterator[tuple]:
    """(index, result) for each unit of `todo`, as they finish. Shared preambles (preamble.py) are
    built first; a unit waiting for one is parsed once it is there, the others meanwhile."""
    from . import preamble

    for i, u in todo:
        if u.text is not None:                  # text of our own (the header unit): never shared
            pool.submit(i, u.name, _parse_unit, (u, None), priority=(1,))
    pool.dispatch()                             # parsing while the rest is planned
    todo = [(i, u) for i, u in todo if u.text is None]
    builds, uses = [], [None] * len(todo)
    if share and len(todo) > 1:
        builds, uses = preamble.plan([u for _, u in todo], workdir)
        for g, job in enumerate(builds):
            pool.submit(("preamble", g), f"the preamble {job[2]}", preamble.build, job, priority=(0,))
    waiting: dict = {}
    for (i, u), use in zip(todo, uses):
        if use is None:
            pool.submit(i, u.name, _parse_unit, (u, None), priority=(1,))
        else:
            waiting.setdefault(use.group, []).append((i, u, use))
    for key, out in pool.results():
        if isinstance(key, tuple):              # a preamble: its units may go, each where it is usable
            shared = out if isinstance(out, preamble.Shared) else None
            for i, u, use in waiting.pop(key[1]):
                pool.submit(i, u.name, _parse_unit, (u, preamble.usable(shared, use)), priority=(2, -weight(u)))
        else:
            yield key, out


_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def weight(unit: Unit) -> int:
    """How long `unit` may take to parse, to start the longest first (so that no worker is left
    parsing one alone at the end): the bytes of its file and of the files beside it that it
    includes by `"name"`, such as the 2.8 MB of unicodedata_db.h and unicodename_db.h that
    Modules/unicodedata.c includes. Only an order: an unreadable file weighs nothing."""
    try:
        text = Path(unit.path).read_bytes()
    except OSError:
        return 0
    total, here = len(text), os.path.dirname(unit.path)
    for name in dict.fromkeys(_QUOTED_INCLUDE.findall(text)):
        try:
            total += os.path.getsize(os.path.join(here, os.fsdecode(name)))
        except OSError:
            pass
    return total


def _parse_unit(job: tuple) -> UnitResult:
    unit, shared = job
    return parse_unit(unit, shared)


def merge(results: list[UnitResult]) -> tuple[dict, dict, list[str]]:
    """One struct per name across units; a name meaning different layouts (two `.c` files, a tag
    and a typedef, one header laid out per unit) is kept apart as `name@file` or `name@unit`
    (`qualify.merge` under the libclang policy)."""
    from .qualify import CLANG, merge as merge_definitions

    return merge_definitions(((r.name, r.structs, r.names) for r in results), CLANG)


def merge_constants(results: list[UnitResult]) -> tuple[dict, dict]:
    """One constant per name across units, a name of two values qualified as structs' names are
    (`qualify.merge_constants`); and the macros left out, counted by reason (each name once, the
    first unit's reason; none that is a constant somewhere)."""
    from .qualify import merge_constants as merge_values

    constants = merge_values((r.name, r.constants) for r in results)
    plain = {name.split("@", 1)[0] for name in constants}
    why: dict = {}
    for r in results:
        for name, reason in r.left_out.items():
            if name not in plain:
                why.setdefault(name, reason)
    counts: dict = {}
    for reason in why.values():
        counts[reason] = counts.get(reason, 0) + 1
    return constants, dict(sorted(counts.items()))


def units_of(b: BuildInputs) -> tuple[list[Unit], list[str], Optional[str]]:
    """The units a scan of `b` parses (the header units, then its source tree's), what it leaves
    out (with why), and the source tree's digest (None without one)."""
    header_unit, skipped = units.header_unit(b)
    unit_list = [header_unit, units.outside_core_unit(b)]
    source_digest = None
    if b.source:
        from . import sources

        src_units, src_skipped, source_digest = sources.source_units(b)
        unit_list += src_units
        skipped += src_skipped
    return unit_list, skipped, source_digest


def scan(b: BuildInputs, opts: ScanOptions = ScanOptions()) -> Table:
    """Scan build `b` completely and return its table."""
    unit_list, skipped, source_digest = units_of(b)
    sources, side = [], None
    if b.source:
        from . import type_records

        sources = type_records.source_files(b.source)
        side = SideTask(type_records.prepare_tree, (b.source, sources))
    results = parse_units(unit_list, opts, side)
    with collector_paused():
        return _table(b, opts, unit_list, results, skipped, source_digest, sources, side)


@contextmanager
def collector_paused():
    """Python's cycle collector off while a scan makes its table from the units' results, then
    as it was: each of its passes walks every object those results hold, and the merge and the
    finish make many more (a third of the finish's time went to it). Only after the workers have
    stopped: a worker forked with it off would never collect."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _table(b: BuildInputs, opts: ScanOptions, unit_list: list, results: list, skipped: list, source_digest,
           sources: list, side) -> Table:
    """The table of build `b` from its units' `results` (the header unit's first, the unit outside
    the core second)."""
    outside = results.pop(1)      # what the core context changes: no structs or constants of its own
    unit_list.pop(1)
    ok = [r for r in results if isinstance(r, UnitResult)]
    skipped += [f"{u.name}: {r}" for u, r in zip(unit_list, results) if isinstance(r, ScanError)]
    head = results[0]
    if not isinstance(head, UnitResult):
        raise head
    if head.pointer_size != b.target.pointer_size:
        raise BuildError(f"clang gives {head.pointer_size}-byte pointers for {b.target.triple}, "
                         f"the build says {b.target.pointer_size}")
    files_read = set().union(*(r.files for r in ok))
    listed = {s.split(":", 1)[0] for s in skipped}
    skipped += [s for s in units.unreached_headers(b, files_read) if s.split(":", 1)[0] not in listed]
    structs, names, conflicts = merge(ok)
    constants, left_out = merge_constants(ok)
    build = Build(version=b.version, hexversion=b.hexversion,
                  config={k: v for k, v in sorted(head.flags.items())},
                  target=Target(b.target.triple, head.pointer_size),
                  inputs={"pyconfig_h": digest_files([b.pyconfig_h], b.pyconfig_h.parent),
                          "headers": headers_digest(b.include_dir),
                          "source": source_digest},
                  vendor=b.vendor, defines=b.layout_defines(), stand_in=b.stand_in)
    if not isinstance(outside, UnitResult):
        skipped.append(f"<headers without Py_BUILD_CORE>: {outside} (so every constant of Include/ counts as core-only)")
    table = Table(build=build, scanner={"offsets": __version__, "libclang": libclang_version()},
                  structs=structs, names=names, skipped=tuple(skipped), conflicts=tuple(conflicts),
                  constants=constants, constants_left_out=left_out, guards=guards(b, structs, constants),
                  core_only=core_only(constants, outside if isinstance(outside, UnitResult) else None))
    from . import finish

    return finish.finish(table, b, unit_list, files_read, sources, side and side.result, opts.use_cache)


def _public(where: str) -> bool:
    return where.startswith("Include/") and not where.startswith("Include/internal/")


def core_only(constants: dict, outside) -> tuple:
    """The constants of the public headers that a unit without `Py_BUILD_CORE` (`outside`, the result
    of `units.outside_core_unit`; None if it failed: all of them) does not give as the table does: a
    macro it gives another value or no integer value, an enumerator it lacks or values otherwise.
    The generated header asserts these only with `Py_BUILD_CORE` (c_header.py)."""
    out = []
    for name, c in constants.items():
        if "@" in name or not _public(c.defined_in):
            continue
        seen = None if outside is None else outside.constants.get(name)
        if seen is not None:
            differs = seen.value != c.value
        else:       # a macro it does not define is skipped by `#ifdef`; one it defines otherwise is not
            differs = outside is None or c.kind == "enum" or name in outside.left_out
        if differs:
            out.append(name)
    return tuple(sorted(out))


def guards(b: BuildInputs, structs: dict, constants: dict) -> dict:
    """The include guard of each header of Include/ that defines one of `structs` or `constants`
    (`macro_text.include_guard`); a header without one has no entry (its structs stay unasserted)."""
    from .macro_text import include_guard, read_text

    files = {s.defined_in.rsplit(":", 1)[0] for s in structs.values() if s.origin == "clang"}
    files |= {c.defined_in for c in constants.values()}
    out = {}
    for rel in sorted(f for f in files if f.startswith("Include/")):
        path = b.pyconfig_h if rel == "Include/pyconfig.h" else b.include_dir / rel[len("Include/"):]
        guard = include_guard(read_text(str(path)) or "")
        if guard is not None:
            out[rel] = guard
    return out
