"""`offsets verify`: check one table against every independent truth at hand, and say what was compared.

Four checks, each run where its inputs are found, none of them reading the table's own scanner:

- gcc: `offsetof`/`sizeof`/`_Alignof` and bitfield probes over the same headers (`probe.py`), for
  a build given as `--python`/`--prefix`, or else an interpreter on this machine whose version,
  config, target and header digest equal the table's; and `_Static_assert` of every constant's
  value and type in the same context (`constant_check.py`);
- DWARF: the debug information of a binary (`--binary`, or the matched interpreter's libpython),
  struct by struct (`dwarf.py`);
- binary: an interpreter binary of the build (its executable or libpython, DWARF or not): its type
  objects' `tp_basicsize`, `Py_Version` and 3.13+ `_Py_DebugOffsets` in its initialized data
  (`binary.py`);
- live: when the table is the running interpreter's build, `__basicsize__` of builtin types and
  reads of real objects through the table's offsets (`runtime/live/`), and the constants the
  interpreter itself shows (`runtime/live/constants.py`).

A check that finds a difference names the field and both numbers; having nothing to compare with
is an error, never a pass.
"""
from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from ..scan.build_inputs import BuildInputs, describe, headers_digest, pyconfig_defines, shared_libpython
from ..errors import BuildError
from ..layout.model import CONFIGS, Table
from .outcome import Check

#: Bumped when a check changes what it compares: tables recorded as verified by an older revision
#: are verified again (verified.py). 3: constants. 4: the pyconfig.h cut of the dependency sets.
REVISION = 4


@dataclass(frozen=True)
class Verification:
    table: str
    checks: tuple[Check, ...]
    not_run: tuple[str, ...] = ()     # checks that could not run, and why

    @property
    def mismatches(self) -> list[str]:
        return [f"{c.name}: {m}" for c in self.checks for m in c.mismatches]


@dataclass
class Inputs:
    """What a verification runs against; found from the command line or on this machine."""

    build: Optional[BuildInputs] = None
    binary: Optional[Path] = None
    python: Optional[str] = None      # the interpreter `build` came from, if any
    binary_given: bool = False        # --binary: a binary without DWARF is an error, not a note
    #: interpreter binaries of the build (its executable or libpython) for the binary check
    binaries: list = field(default_factory=list)
    notes: list = field(default_factory=list)       # worth saying about what was found
    rejected: list = field(default_factory=list)    # interpreters looked at, and why each is not the build


# ---------------------------------------------------------------------------------------------
# Which interpreters and builds match a table


def identity_mismatch(table: Table, info: dict) -> Optional[str]:
    """Why interpreter `info` (from `describe`) is not the table's build; None if it is."""
    b = table.build
    if info["version"] != b.version or info["hexversion"] != b.hexversion:
        return f"it is CPython {info['version']}, the table is for {b.version}"
    flags = sorted(f for f in b.config if f in info["config"] and bool(b.config[f]) != info["config"][f])
    if flags:
        return "its " + ", ".join(f"{f}={info['config'][f]}" for f in flags) + " differ from the table's"
    if info["pointer_size"] != b.target.pointer_size:
        return f"it has {info['pointer_size']}-byte pointers, the table {b.target.pointer_size}"
    if info["multiarch"] and info["multiarch"] != b.target.triple:
        from ..scan import targets

        mine = targets.by_multiarch(info["multiarch"])
        if mine is None or mine.triple != b.target.triple:
            return f"it is for {info['multiarch']}, the table for {b.target.triple}"
    return None


def build_mismatch(table: Table, b: BuildInputs) -> Optional[str]:
    """Why build inputs `b` are not the table's build; None if they are."""
    t = table.build
    if b.version != t.version:
        return f"the build is CPython {b.version}, the table is for {t.version}"
    if b.target.triple != t.target.triple:
        return f"the build is for {b.target.triple}, the table for {t.target.triple}"
    have = set(CONFIGS[b.config])
    if b.target.system != "windows":    # Windows's PC/pyconfig.h defines Py_DEBUG under `#ifdef _DEBUG`
        have |= {f for f in ("Py_DEBUG", "Py_GIL_DISABLED") if f in pyconfig_defines(b.pyconfig)}
    want = {f for f in ("Py_DEBUG", "Py_GIL_DISABLED") if t.config.get(f)}
    if have != want:
        return (f"the build has {', '.join(sorted(have)) or 'no Py_DEBUG/Py_GIL_DISABLED'}, "
                f"the table {', '.join(sorted(want)) or 'neither'}")
    return None


def headers_digest_differs(table: Table, b: BuildInputs) -> Optional[str]:
    want = table.build.inputs.get("headers")
    if not want:
        return None
    got = headers_digest(b.include_dir)
    return None if got == want else f"the headers of {b.include_dir} are not the ones the table was scanned from"


def candidate_pythons(table: Table) -> list[str]:
    """Interpreters on this machine that may be the table's build: this one, pyenv's, the PATH's."""
    minor = table.build.minor
    found = [sys.executable]
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    for root in filter(None, roots):
        d = Path(root) / "versions" / table.build.version / "bin" / f"python{minor}"
        found.append(str(d))
    for name in (f"python{minor}", f"python{minor}d", "python3"):
        exe = shutil.which(name)
        if exe:
            found.append(exe)
    found += [f"/usr/bin/python{minor}", f"/usr/local/bin/python{minor}"]
    seen, out = set(), []
    for exe in found:
        real = os.path.realpath(exe)
        if os.path.isfile(real) and os.access(real, os.X_OK) and real not in seen:
            seen.add(real)
            out.append(exe)
    return out


def code_binary(info: dict) -> Optional[Path]:
    """The binary holding an interpreter's code: the file it maps its objects from (identity's
    `mapped`), else its shared libpython as sysconfig names it, else the executable."""
    mapped = info.get("mapped")
    if mapped and Path(mapped).is_file():
        return Path(mapped).resolve()
    exe = Path(info["executable"]).resolve()
    return shared_libpython(info) or (exe if exe.is_file() else None)


def find_inputs(table: Table, build: Optional[BuildInputs] = None, binary=None,
                python: Optional[str] = None) -> Inputs:
    """The build and binary to check `table` against: the given ones (which must be the table's
    build), else an interpreter on this machine that is exactly the table's build."""
    from ..scan import build_inputs as build_mod

    found = Inputs(build=build, binary=Path(binary) if binary else None, python=python, binary_given=bool(binary))
    if build is not None:
        why = build_mismatch(table, build)
        if why:
            raise BuildError(f"cannot verify {table.build.table_name} with that build: {why}; "
                             f"pass the build the table was scanned from")
        differs = headers_digest_differs(table, build)
        if differs:
            found.notes.append(f"gcc: {differs} (checking anyway)")
        if python and found.binary is None:
            found.binary = code_binary(describe(python))
        return found
    why_not = []
    for exe in candidate_pythons(table):
        try:
            info = describe(exe)
        except BuildError as e:
            why_not.append(f"{exe}: {e}")
            continue
        why = identity_mismatch(table, info)
        if why:
            why_not.append(f"{exe}: {why}")
            continue
        try:
            b = build_mod.from_python(exe)
        except BuildError as e:
            why_not.append(f"{exe}: {e}")
            continue
        differs = headers_digest_differs(table, b) or build_mismatch(table, b)
        if differs:
            why_not.append(f"{exe}: {differs}")
            continue
        found.build, found.python = b, exe
        if found.binary is None:
            found.binary = code_binary(info)
        return found
    found.rejected += why_not
    return found


# ---------------------------------------------------------------------------------------------
# The checks


def gcc_check(table: Table, b: BuildInputs) -> Check:
    from . import probe

    r = probe.probe(table, b)
    notes = tuple(r.skipped[:5]) + ((f"... and {len(r.skipped) - 5} more not probed",) if len(r.skipped) > 5 else ())
    return Check("gcc", f"{r.compiler} over {b.include_dir}; {r.bitfields} bitfields, {r.types} field types",
                 r.structs, r.fields,
                 tuple(map(str, r.mismatches)), notes)


def constants_check(table: Table, b: BuildInputs) -> Check:
    """gcc's `_Static_assert` of every constant's value, width and type (`constant_check.py`)."""
    from . import constant_check

    r = constant_check.check(table, b)
    notes = tuple(r.skipped[:5]) + ((f"... and {len(r.skipped) - 5} more not probed",) if len(r.skipped) > 5 else ())
    return Check("constants", f"{r.compiler} _Static_assert over {b.include_dir}", 0, r.constants, r.mismatches,
                 notes, unit="constants")


def dwarf_check(table: Table, binary: Path) -> Check:
    from ..scan import dwarf

    info = dwarf.read(binary)
    notes = []
    if table.build.inputs.get("dwarf") == info.digest:   # structs filled from this very DWARF prove nothing
        own = {k for k, s in table.structs.items() if s.origin == "dwarf"}
        if own:
            notes.append(f"{len(own)} structs came from this binary's DWARF: not compared with it")
            table = replace(table, structs={k: s for k, s in table.structs.items() if k not in own},
                            names={a: t for a, t in table.names.items() if t not in own})
    r = dwarf.compare_report(table, info)
    if r.one_sided:
        notes.append(f"{len(r.one_sided)} fields only one side has (e.g. {r.one_sided[0]})")
    if r.not_compared:
        notes.append(f"{len(r.not_compared)} structs of the same name from other files not compared")
    return Check("dwarf", f"DWARF of {binary}", r.structs, r.fields, tuple(r.mismatches), tuple(notes))


def running_matches(table: Table) -> Optional[str]:
    """Why the running interpreter is not the table's build; None if it is."""
    from ..runtime import running_identity

    me = running_identity()
    info = {"version": me.version, "hexversion": me.hexversion, "config": me.config,
            "pointer_size": me.pointer_size, "multiarch": me.triple}
    return identity_mismatch(table, info)


def live_check(table: Table) -> Check:
    """The live check of `table` by the running interpreter (`live_check_text` of its compact form)."""
    from ..layout import compact

    source = table.build.table_name
    return live_check_text(compact.dumps(table, source), source)


def live_check_text(text: str, source: str) -> Check:
    """The live check, by the running interpreter, of the compact table `text` (made from `source`):
    `__basicsize__` of builtin types and real objects read through its offsets (`runtime/live/`),
    and the constants the interpreter shows; its `counts` say how many of its checks were of
    constants, and how many were not run. Needs no YAML: live_child.py runs it in a table's own
    interpreter."""
    from ..layout import compact_read, names
    from ..runtime.live import runner
    from ..runtime import constants as table_constants
    from .. import runtime

    loaded = runtime.Loaded(*compact_read.parse(text, source), source, names.aliases())
    r = runner.check(loaded)
    failed, passed = list(r.failed), len(r.passed)
    constants = 0
    if table_constants.of(loaded):      # the constants this interpreter shows (opcode.opmap, sys.int_info ...)
        k = runner.check_constants(loaded)
        failed += k.failed
        passed += len(k.passed)
        constants = len(k.passed) + len(k.failed)
    key = loaded.resolve_struct("PyTypeObject")
    if key is not None:   # a static type's __sizeof__ is sizeof(PyTypeObject) (typeobject.c, type___sizeof__)
        got = type.__sizeof__(int)
        if got == loaded.size(key):
            passed += 1
        else:
            failed.append(f"type.__sizeof__(int) == sizeof(PyTypeObject): the running interpreter says {got}, "
                          f"the table gives {loaded.size(key)}")
    notes = (f"{len(r.skipped)} checks not run (the table lacks what they need)",) if r.skipped else ()
    return Check("live", f"the running interpreter {sys.executable}", 0, passed + len(failed),
                 tuple(failed), notes, unit="checks of __basicsize__ and of real objects read through the table",
                 counts=(("constants", constants), ("not run", len(r.skipped))))


def interpreter_binaries(inputs: Inputs, not_run: list) -> list:
    """The binaries for the binary check: the build's own (`inputs.binaries`), and the DWARF binary
    when it holds the interpreter."""
    from ..remote.elf import INTERPRETER_SYMBOL, Elf, ElfError

    found = [Path(p) for p in inputs.binaries]
    if inputs.binary is not None and inputs.binary not in found:
        try:
            with Elf(str(inputs.binary)) as elf:
                holds = elf.symbol(INTERPRETER_SYMBOL) is not None
        except (OSError, ElfError) as e:
            holds = False
            not_run.append(f"binary: {e}")
        if holds:
            found.append(inputs.binary)
        else:
            not_run.append(f"binary: {inputs.binary} does not hold the interpreter (no {INTERPRETER_SYMBOL})")
    if not found:
        not_run.append("binary: no interpreter binary of this build at hand")
    return found


def verify(table: Table, inputs: Inputs, use_gcc: bool = True, use_dwarf: bool = True, use_live: bool = True,
           say: Optional[Callable[[str], None]] = None, use_binary: bool = True) -> Verification:
    """Run every check whose inputs are at hand; `BuildError` if none could run."""
    say = say or (lambda line: None)
    checks, not_run = [], []
    name = table.build.table_name
    if use_gcc:
        if inputs.build is not None:
            c = gcc_check(table, inputs.build)
            checks.append(c)
            say(c.line())
            if table.constants:
                c = constants_check(table, inputs.build)
                checks.append(c)
                say(c.line())
        else:
            from ..scan import targets

            cross = table.build.target.triple != targets.host().triple
            not_run.append(f"gcc: no build of {name} on this machine: pass --python EXE or --prefix DIR"
                           + (f" --target {table.build.target.triple}" if cross else ""))
    if use_dwarf:
        try:
            import offsets.scan.dwarf  # noqa: F401
        except ImportError:
            not_run.append("dwarf: offsets.scan.dwarf is not available")
        else:
            if inputs.binary is not None:
                try:
                    c = dwarf_check(table, inputs.binary)
                except BuildError as e:
                    if not inputs.binary_given:
                        not_run.append(f"dwarf: {e}")
                        c = None
                    else:
                        raise
                if c is not None and c.fields == 0:
                    not_run.append(f"dwarf: {c.source} shares no struct with the table ({'; '.join(c.notes)})")
                elif c is not None:
                    checks.append(c)
                    say(c.line())
            else:
                not_run.append("dwarf: no binary: pass --binary LIBPYTHON.so (built with -g)")
    if use_binary:
        for path in interpreter_binaries(inputs, not_run):
            from .binary import binary_check

            c = binary_check(table, path)
            checks.append(c)
            say(c.line())
    if use_live:
        why = running_matches(table)
        if why is None:
            c = live_check(table)
            checks.append(c)
            say(c.line())
        else:
            not_run.append(f"live: the running interpreter is not this build ({why})")
    for n in inputs.notes:
        say(f"  note: {n}")
    for c in checks:
        for n in c.notes:
            say(f"  {c.name}: {n}")
    if not checks:
        left_out = [n for n, use in (("gcc", use_gcc), ("dwarf", use_dwarf), ("binary", use_binary),
                                     ("live", use_live)) if not use]
        reasons = not_run + inputs.rejected[:3] + ([f"left out: {', '.join(left_out)}"] if left_out else [])
        raise BuildError(f"nothing to verify {name} against: " + "; ".join(reasons))
    return Verification(name, tuple(checks), tuple(not_run))
