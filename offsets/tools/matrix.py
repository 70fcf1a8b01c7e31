"""`make tables`: regenerate every table of generated/ from the builds in data/matrix.yaml.

Inputs are fetched by package name into the cache (never committed); each build is scanned (its
translation units in parallel), private structs of source-less builds are filled from DWARF after a
cross-check, every table is verified against its own inputs (verified.py: a table that fails is
never written), and the tables and generated/index.yaml (with each table's verification record)
are written if changed. The command is `python -m offsets.tools.regenerate` (`make tables`), which also
makes the C headers and the package's compact tables from them.
"""
from __future__ import annotations

import json
import subprocess
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Callable, Optional

import jsonschema
import yaml

from .. import cache_lock
from ..atomic_write import write, write_folder
from ..scan import build_inputs as build, debian, dwarf, macos, scanner, windows, zig
from ..scan.targets import host, target
from ..layout import identity, table_yaml
from ..check import verified, verify
from ..check.binary import with_binaries
from ..errors import BuildError, FetchError, OffsetsError
from ..layout.model import CONFIGS, Table
from ..progress import say


@dataclass(frozen=True)
class Job:
    """One table to make: a label, the name of its table, how to find its inputs, and an optional
    binary with DWARF."""

    label: str
    table: str       # the table's file name, from the data alone (a scan that names it otherwise is refused)
    inputs: Callable[[], build.BuildInputs]
    dwarf: Optional[Callable[[], Optional[Path]]] = None
    #: the build's interpreter binaries, each (path, file in its package or prefix, where it came
    #: from): the table is checked against each (binary check) and records its build-id
    binaries: Optional[Callable[[], list]] = None
    #: its inputs include a pyconfig.h that ./configure makes on this machine (30-50 s, cached)
    configures: bool = False
    #: its inputs without a source tree, for what needs its headers alone (no source package is
    #: asked for); None: `inputs` (which then has none to ask for, or needs it to configure)
    header_inputs: Optional[Callable[[], build.BuildInputs]] = None
    #: `dwarf` fills the .c structs the scan lacks (and the table records its digest); False: it only
    #: checks the table (a binary built on this machine, whose DWARF no other machine can reproduce)
    dwarf_fills: bool = True

    def headers(self) -> build.BuildInputs:
        """The build's inputs for a use of its headers alone: its include directory, pyconfig.h,
        target and defines are those of `inputs`, with no source tree fetched for them."""
        return (self.header_inputs or self.inputs)()


#: The distributors whose packages `make tables` fetches by name: vendor -> the module that does
#: (`unpacked`, `source`, `orig`, and `BINARIES`: the packages holding its interpreter binaries).
VENDORS = {"debian": debian}


def matrix() -> dict:
    """data/matrix.yaml, checked against data/matrix.schema.json and `VENDORS` (a `BuildError` says
    where it is wrong)."""
    return checked_matrix(yaml.safe_load(resources.files("offsets").joinpath("data/matrix.yaml").read_text()))


def checked_matrix(data) -> dict:
    schema = json.loads(resources.files("offsets").joinpath("data/matrix.schema.json").read_text())
    e = next(jsonschema.Draft202012Validator(schema).iter_errors(data), None)
    if e is not None:
        at = "/".join(map(str, e.absolute_path)) or "(top)"
        raise BuildError(f"data/matrix.yaml at {at}: {e.message}")
    for i, entry in enumerate(data["packaged"]):
        if entry["vendor"] not in VENDORS:
            raise BuildError(f"data/matrix.yaml at packaged/{i}/vendor: no module fetches the packages of "
                             f"{entry['vendor']!r} (known: {', '.join(VENDORS)}; tools/matrix.py VENDORS)")
    sources = {e["version"] for e in data["packaged"] if e.get("source")}
    pyconfigs = {"windows": (sources, "no packaged entry of {} with a source package gives its PC/pyconfig.h"),
                 "macos": (set(macos.facts()["builds"]), f"{macos.FACTS} records no python.org pyconfig.h {{}}")}
    for system, (known, missing) in pyconfigs.items():
        for i, w in enumerate(data.get(system, ())):
            at = f"data/matrix.yaml at {system}/{i}"
            if w["pyconfig"] not in known:
                raise BuildError(f"{at}: {missing.format(w['pyconfig'])}")
            if w["headers"] == "source" and w["version"] not in sources:
                raise BuildError(f"{at}: headers from source, but no packaged entry of {w['version']} has a source package")
            if w["headers"] == "pyenv" and w["version"] not in data["pyenv"]:
                raise BuildError(f"{at}: headers from pyenv, but pyenv's list lacks {w['version']}")
            if w["headers"] == "debian" and not any(e["version"] == w["version"] and e.get("dev")
                                                    for e in data["packaged"]):
                raise BuildError(f"{at}: headers from Debian, but no packaged entry of {w['version']} has a -dev package")
            if (w["pyconfig"] != w["version"]) != bool(w.get("why")):
                raise BuildError(f"{at}: `why` goes with, and only with, a pyconfig of another version than {w['version']}")
    return data


def entry(version: str) -> dict:
    """The entry of data/matrix.yaml's `packaged` builds for CPython `version`."""
    found = [e for e in matrix()["packaged"] if e["version"] == version]
    if not found:
        raise BuildError(f"data/matrix.yaml lists no packaged build of CPython {version}")
    return found[0]


def table_file(version: str, config: str, triple: str, vendor: str = identity.UPSTREAM) -> str:
    """The file name of the table of a build (`cpython-3.13.5-debian-x86_64-linux-gnu.yaml`)."""
    flags = {flag: True for flag in CONFIGS[config]}
    return identity.table_name(version, flags, target(triple).triple, vendor) + ".yaml"


@lru_cache(maxsize=None)     # pyenv asks about ten shell processes each time
def _pyenv_python(version: str) -> Path:
    try:
        prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise BuildError(f"pyenv has no CPython {version}: install it (`pyenv install {version}`)") from None
    return Path(prefix) / "bin" / f"python{'.'.join(version.split('.')[:2])}"


def _configured_pyconfig(tree: Path, config: str, extra: tuple = (), label: str = "") -> Path:
    """pyconfig.h made by the tree's own ./configure (cached beside the tree, in a folder named after
    the config and `extra`, or `label` where `extra` names a program; configure also makes the
    Makefile beside it, from which the core's flags are read)."""
    flags = {"release": [], "debug": ["--with-pydebug"], "free-threaded": ["--disable-gil"]}[config] + list(extra)
    out = tree.parent / f"{tree.name}-configure-{config}{label or ''.join(extra)}"
    if not (out / "pyconfig.h").is_file():
        def configure(work: Path) -> None:
            proc = subprocess.run([str(tree / "configure"), "-q", *flags], cwd=work, capture_output=True, text=True)
            if proc.returncode or not (work / "pyconfig.h").is_file():
                raise BuildError(f"{tree}/configure {' '.join(flags)} failed: {proc.stderr.strip().splitlines()[-1:]}")

        # one process configures while another waiting for the same folder takes its result (two
        # test workers ask at once); a lock not had in time only costs the work twice
        with cache_lock.file_lock(str(out.parent / f".{out.name}.lock"), timeout=600):
            if not (out / "pyconfig.h").is_file():
                say(f"running {tree.name}/configure {' '.join(flags)} for its pyconfig.h")
                write_folder(out, configure)   # in a private folder, then renamed: no process sees a half-made one
    return out / "pyconfig.h"


def jobs() -> list[Job]:
    m = matrix()
    out = []
    for v in m["pyenv"]:
        out.append(Job(f"pyenv {v}", table_file(v, "release", host().triple),
                       lambda v=v: build.from_python(str(_pyenv_python(v))),
                       lambda v=v: build.interpreter_libpython(str(_pyenv_python(v))),
                       lambda v=v: _pyenv_binaries(v)))
    for e in m["packaged"]:
        vendor = f"{e['vendor']} {e['package_version']}"
        for config, triple in e["builds"]:
            dwarf = (lambda e=e, t=triple: _packaged_dwarf(e, t)) if config == "debug" and e.get("dbg") else None
            binaries = (lambda e=e, c=config, t=triple: packaged_binaries(e, c, t)) if e.get("dev") else None
            headers = None if e.get("configure") else lambda e=e, c=config, t=triple: _packaged_inputs(e, c, t, False)
            out.append(Job(f"{e['vendor']} {e['version']} {config} {triple}",
                           table_file(e["version"], config, triple, vendor),
                           lambda e=e, c=config, t=triple: _packaged_inputs(e, c, t), dwarf, binaries,
                           bool(e.get("configure")), headers))
        for config, triple in e.get("upstream", ()):
            compiled = (lambda e=e, c=config, t=triple: _compiled_binaries(e["version"], c, t)) \
                if e.get("compiled") and triple in COMPILED else None
            dwarf = None
            if compiled and triple.endswith("-linux-musl"):
                # musl's libpython, linked by zig (whose linker writes no build-id), is the table's
                # DWARF check only: not a binary it records, nor a source of structs (its DWARF
                # differs from machine to machine, and the table would go stale with each build)
                compiled, dwarf = None, (lambda e=e, c=config, t=triple: _compiled_binaries(e["version"], c, t)[0][0])
            out.append(Job(f"upstream {e['version']} {config} {triple}", table_file(e["version"], config, triple),
                           lambda e=e, c=config, t=triple: _upstream_inputs(e, c, t), dwarf, compiled, True,
                           dwarf_fills=dwarf is None))
    for w in m.get("windows", ()):
        for config, triple in w["builds"]:
            out.append(Job(f"windows {w['version']} {config} {triple}", table_file(w["version"], config, triple),
                           lambda w=w, c=config, t=triple: windows_inputs(w, c, t)))
    for mac in m.get("macos", ()):
        for config, triple in mac["builds"]:
            out.append(Job(f"macos {mac['version']} {config} {triple}", table_file(mac["version"], config, triple),
                           lambda mac=mac, t=triple: macos_inputs(mac, t)))
    return out


def _orig(version: str) -> Path:
    """The pristine source tree of the `packaged` entry of `version`."""
    e = entry(version)
    return VENDORS[e["vendor"]].orig(e["source"], e["suite"], e["package_version"])


def _headers_of(entry_: dict) -> Path:
    """The include directory a `windows` or `macos` entry's `headers` names: the pristine sources'
    Include/, pyenv's installed include/python3.X of that version, or (`debian`) the one Debian's
    -dev package of it installs."""
    if entry_["headers"] == "source":
        return _orig(entry_["version"]) / "Include"
    if entry_["headers"] == "debian":
        return _packaged_inputs(entry(entry_["version"]), "release", "x86_64-linux-gnu", False).include_dir
    return build.from_python(str(_pyenv_python(entry_["version"]))).include_dir


def windows_inputs(w: dict, config: str, triple: str) -> build.BuildInputs:
    """A `windows` entry's build: its version's headers (the pristine sources, or pyenv's installed
    ones), the pristine PC/pyconfig.h of `pyconfig`'s packaged entry (standing in, with `why`, when
    that is another version), made for `config` as PCbuild makes it."""
    pc = windows.source_pyconfig(_orig(w["pyconfig"]))
    stand_in = None
    if w["pyconfig"] != w["version"]:
        stand_in = f"{pc.relative_to(pc.parent.parent)} of CPython {w['pyconfig']} stands in for {w['version']}'s: {w['why']}"
    return windows.inputs(_headers_of(w), pc, config, triple, stand_in=stand_in)


def macos_inputs(mac: dict, triple: str) -> build.BuildInputs:
    """A `macos` entry's release build: its version's headers, the pyconfig.h of the facts of
    python.org's framework build `pyconfig` (standing in, with `why`, when that is another version)."""
    stand_in = None
    if mac["pyconfig"] != mac["version"]:
        stand_in = (f"python.org's macOS pyconfig.h of CPython {mac['pyconfig']} ({macos.FACTS}) stands in for "
                    f"{mac['version']}'s: {mac['why']}")
    return macos.inputs(_headers_of(mac), mac["pyconfig"], triple, stand_in=stand_in)


def job_for(row: dict) -> Job:
    """The job that makes the table of index row `row` (its `file`)."""
    for j in jobs():
        if j.table == row["file"]:
            return j
    raise BuildError(f"no job of data/matrix.yaml makes {row['file']}")


#: How the upstream tables' pyconfig.h is made: python.org's own ./configure, shared libpython (as
#: pyenv, Docker's python images and most distributors build it).
UPSTREAM_CONFIGURE = ("--enable-shared",)


#: The triples an upstream build's ./configure runs for here, each with the compiler it is given:
#: this machine's own (its gcc), and musl's (zig cc for that target: its programs are static, so
#: configure runs them here as it would on Alpine; for another CPU, a cross configure: `CROSS`).
UPSTREAM_COMPILERS = {"x86_64-linux-gnu": None, "x86_64-linux-musl": "x86_64-linux-musl",
                      "aarch64-linux-musl": "aarch64-linux-musl"}
#: Another CPU's programs do not run here, so its ./configure cross-compiles: it then takes its own
#: guesses for what it would have run, except where it has none and stops (/dev/ptmx, /dev/ptc,
#: getaddrinfo), answered here as every Linux answers them; a CPython of the same minor runs the
#: build's own scripts (`--with-build-python`, pyenv's).
CROSS = {"aarch64-linux-musl": ("--host=aarch64-linux-musl", "--build=x86_64-pc-linux-gnu", "ac_cv_file__dev_ptmx=yes",
                                "ac_cv_file__dev_ptc=no", "ac_cv_buggy_getaddrinfo=no")}
#: What zig cc is given besides: unoptimized, it compiles in its Debug mode, whose undefined-behaviour
#: traps make configure's run tests fail where gcc's pass (its unaligned-access test then says
#: "aligned memory access is required", and Py_HASH_ALGORITHM changes); Alpine compiles with -O2.
ZIG_CONFIGURE = ("CFLAGS=-O2",)


def _upstream_inputs(e: dict, config: str, triple: str) -> build.BuildInputs:
    """python.org's sources of this version: the pristine orig tarball inside Debian's source
    package, configured on this machine (`./configure --enable-shared` plus the config's flag; for
    musl, with zig cc for it as CC)."""
    if triple not in UPSTREAM_COMPILERS:
        raise BuildError(f"upstream {e['version']}: ./configure makes a pyconfig.h here only for "
                         f"{', '.join(UPSTREAM_COMPILERS)}, not {triple}")
    tree = VENDORS[e["vendor"]].orig(e["source"], e["suite"], e["package_version"])
    extra, label = UPSTREAM_CONFIGURE, ""
    if UPSTREAM_COMPILERS[triple]:
        extra += ("CC=" + " ".join(zig.command(triple)),) + ZIG_CONFIGURE
        label = "".join(UPSTREAM_CONFIGURE) + "-" + UPSTREAM_COMPILERS[triple] + "".join(ZIG_CONFIGURE).replace("CFLAGS=", "")
    if triple in CROSS:
        minor = e["version"].rsplit(".", 1)[0]
        build_python = [v for v in matrix()["pyenv"] if v.startswith(minor + ".")]
        if not build_python:
            raise BuildError(f"upstream {e['version']} for {triple}: a cross configure needs a CPython {minor} "
                             f"to run the build's scripts, and data/matrix.yaml's pyenv list has none")
        extra += CROSS[triple] + (f"--with-build-python={_pyenv_python(build_python[-1])}",)
    return build.from_source(tree, _configured_pyconfig(tree, config, extra, label), target=triple,
                             config=config, vendor="upstream")


_trees: dict = {}


def _packaged_source(e: dict) -> Optional[Path]:
    """The entry's unpacked source package, or None when the archive does not serve it (then the
    debug table's `.c` structs come from the -dbg package's DWARF, and release tables have none)."""
    key = (e["vendor"], e.get("source"), e["suite"], e["package_version"])
    if key not in _trees:
        tree = None
        if e.get("source"):
            try:
                tree = VENDORS[e["vendor"]].source(e["source"], e["suite"], e["package_version"])
            except FetchError as err:
                if e.get("configure"):
                    raise
                say(f"{e['version']}: source {e['source']}={e['package_version']} not served ({err}); "
                    + (f"debug: .c structs from {e['dbg']}'s DWARF; " if e.get("dbg") else "")
                    + "release: headers only")
        _trees[key] = tree
    return _trees[key]


def _packaged_dwarf(e: dict, triple: str) -> Optional[Path]:
    """The debug libpython of the -dbg package when the source package is not served: the debug
    table's `.c` structs are filled from its DWARF after a cross-check."""
    return None if _packaged_source(e) is not None else dbg_library(e, triple)


def _unpacked(e: dict, packages: list, t) -> Path:
    """The entry's `packages` (names) at its package version, unpacked together for target `t`."""
    return VENDORS[e["vendor"]].unpacked([f"{p}={e['package_version']}" for p in packages], t.deb_arch, e["suite"])


def dbg_library(e: dict, triple: str) -> Path:
    """`libpython3.Xd.so.1.0` of the entry's -dbg package (it carries its DWARF itself)."""
    t = target(triple)
    root = _unpacked(e, [e["dev"], e["dbg"]], t)
    lib = root / "usr" / "lib" / t.multiarch / f"libpython{e['version'].rsplit('.', 1)[0]}d.so.1.0"
    if not lib.is_file():
        raise BuildError(f"{e['dbg']}={e['package_version']} has no {lib.relative_to(root)}")
    return lib


def _pyenv_binaries(version: str) -> list:
    """pyenv's libpython of `version` (built --enable-shared: the interpreter is in it)."""
    lib = build.interpreter_libpython(str(_pyenv_python(version)))
    if lib is None:
        raise BuildError(f"pyenv's CPython {version} has no shared libpython: install it with --enable-shared")
    return [(lib, f"lib/{lib.name}", f"pyenv {version}")]


#: The targets scripts/build-cpython compiles python.org's sources for (a `compiled: true` entry's
#: other targets are checked by their compilers alone)
COMPILED = {"x86_64-linux-gnu": None, "x86_64-linux-musl": "musl", "aarch64-linux-musl": "musl-aarch64"}


def _compiled_binaries(version: str, config: str, triple: str = "x86_64-linux-gnu") -> list:
    """The libpython of python.org's `version` as scripts/build-cpython compiles it (the build `make
    prove` runs, cached in $OFFSETS_CACHE/build; for musl, its `musl` or `musl-aarch64` build): the table is verified
    against it and records its build-id (another machine's build of it has another path inside it,
    so another build-id: its headers then vouch for it, struct by struct)."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "build-cpython"
    how = COMPILED.get(triple) or config
    proc = subprocess.run([str(script), version, how], capture_output=True, text=True)
    if proc.returncode:
        raise BuildError(f"scripts/build-cpython {version} {how} failed: {proc.stderr.strip()[-500:]}")
    prefix = Path(proc.stdout.strip().splitlines()[-1])
    minor = version.rsplit(".", 1)[0]
    lib = prefix / "lib" / f"libpython{minor}{'t' if config == 'free-threaded' else ''}.so.1.0"
    if not lib.is_file():
        raise BuildError(f"scripts/build-cpython {version} {how} made no {lib.name}")
    return [(lib, f"lib/{lib.name}", f"python.org {version} ({how}) compiled by scripts/build-cpython")]


def packaged_binaries(e: dict, config: str, triple: str) -> list:
    """The distributor's interpreter binaries of this build (its module's `BINARIES`), fetched by
    package name and exact version: (path, file in the package, `PACKAGE VERSION`) each."""
    wanted = VENDORS[e["vendor"]].BINARIES.get(config, ())
    if not wanted:
        return []
    t = target(triple)
    minor = e["version"].rsplit(".", 1)[0]
    names = [p.format(minor=minor) for p, _ in wanted]
    root = _unpacked(e, names, t)
    out = []
    for (_, file), name in zip(wanted, names):
        rel = file.format(minor=minor, multiarch=t.multiarch)
        if not (root / rel).is_file():
            raise BuildError(f"{name}={e['package_version']} ({t.deb_arch}) has no {rel}")
        out.append((root / rel, rel, f"{name} {e['package_version']}"))
    return out


def _packaged_inputs(e: dict, config: str, triple: str, source: bool = True) -> build.BuildInputs:
    """The entry's build as `make tables` scans it: its -dev package (with -dbg for debug) and,
    with `source`, its source package where the archive serves it (or ./configure's pyconfig.h of it)."""
    t = target(triple)
    tree = _packaged_source(e) if source or e.get("configure") else None
    vendor = f"{e['vendor']} {e['package_version']}"
    if e.get("configure"):
        if t.triple != "x86_64-linux-gnu":
            raise BuildError(f"{e['version']}: ./configure makes a pyconfig.h for this machine only, not {triple}")
        derived = "release" if config == "free-threaded" else config  # free-threaded is derived, see docs
        return build.from_source(tree, _configured_pyconfig(tree, derived), target=triple, config=config,
                                 vendor=vendor)
    root = _unpacked(e, [e["dev"]] + ([e["dbg"]] if config == "debug" else []), t)
    abiflags = "d" if config == "debug" else ""
    return build.from_prefix(root / "usr", source=tree, target=triple, config=config, abiflags=abiflags,
                             vendor=vendor)


def make(job: Job, opts: scanner.ScanOptions) -> tuple[Table, build.BuildInputs, Optional[Path], list]:
    """The job's table, with the build inputs, DWARF binary and interpreter binaries it was made
    from (to verify it); the table records the build-id of each interpreter binary."""
    b = job.inputs()
    table = scanner.scan(b, opts)
    binary = job.dwarf() if job.dwarf else None
    if binary is not None and not job.dwarf_fills:
        compared = dwarf.checked(table, binary)
        say(f"{job.label}: DWARF of {binary.name} agrees on {compared} fields (a check: nothing filled)")
    elif binary is not None:
        table, compared = dwarf.checked_fill(table, binary)
        say(f"{job.label}: DWARF of {binary.name} agrees on {compared} fields; .c structs filled from it")
        table, compared = dwarf.fill_extensions(table, binary)
        say(f"{job.label}: DWARF of its extension modules agrees on {compared} fields; their .c structs filled")
    found = job.binaries() if job.binaries else []
    table = with_binaries(table, found)
    return table, b, binary, [path for path, _, _ in found]


def verify_all(todo: list[Job], out: Path) -> int:
    """`offsets verify` for each job's committed table, with the job's own inputs; a summary row each."""
    rows, failed = [], 0
    for i, job in enumerate(todo, 1):
        try:
            b = job.inputs()
            name = f"{b.table_name}.yaml"
            table = table_yaml.load(out / name)
            binary = job.dwarf() if job.dwarf else None
            inputs = verify.find_inputs(table, build=b, binary=binary)
            inputs.binaries = [path for path, _, _ in (job.binaries() if job.binaries else [])]
            result = verify.verify(table, inputs, use_live=False)
        except OffsetsError as e:
            failed += 1
            rows.append(f"{job.label}: error: {e}")
            say(rows[-1])
            continue
        lines = "; ".join(c.line() for c in result.checks)
        bad = sum(len(c.mismatches) for c in result.checks)
        failed += bool(bad)
        rows.append(f"{name}: {lines}")
        say(f"[{i}/{len(todo)}] {rows[-1]}")
        for c in result.checks:
            for m in c.mismatches:
                say(f"    {c.name}: {m}")
    print("\n".join(rows))
    return 1 if failed else 0


def index_rows(tables: dict[str, Table], records: dict[str, dict]) -> list[dict]:
    rows = []
    for name, t in sorted(tables.items()):
        b = t.build
        origins = {}
        for s in t.structs.values():
            origins[s.origin] = origins.get(s.origin, 0) + 1
        rows.append({"file": name, "version": b.version, "config": b.config_name, "target": b.target.triple,
                     "inputs": dict(sorted(b.inputs.items())), "structs": len(t.structs),
                     "fields": t.field_count, "constants": len(t.constants), "origins": dict(sorted(origins.items())),
                     "verified": records.get(name)})
    return rows


def index_text(rows: list[dict]) -> str:
    """`index.yaml`: each table's row and verification record."""
    return "\n".join(table_yaml.header_lines("Index of the committed tables")) + "\n" + \
        yaml.safe_dump({"tables": rows}, sort_keys=False, width=200)


def select(only: Optional[str] = None) -> list[Job]:
    """The jobs whose label contains `only` (all without it); a selection of nothing, which would
    check nothing and pass, is a `BuildError`."""
    todo = [j for j in jobs() if not only or only in j.label]
    if not todo:
        raise BuildError(f"--only {only!r} matches no job of data/matrix.yaml (labels look like {jobs()[0].label!r})")
    return todo


def _made(label: str, old_rows: dict, check: bool) -> tuple[str, Table, str, Optional[dict]]:
    """The job `label`'s table (name, table, YAML text) and its verification record: the old row's if
    it verified these very bytes, else a new one (none with `check`: nothing is verified then)."""
    job = next(j for j in jobs() if j.label == label)
    table, b, binary, binaries = make(job, scanner.ScanOptions(progress=None))
    name = f"{table.build.table_name}.yaml"
    if name != job.table:
        raise BuildError(f"{label}: the scan made {name}, but data/matrix.yaml says {job.table}: "
                         "its version, config, target or vendor is not this build's")
    text = table_yaml.dumps(table)
    rec = verified.reusable(old_rows.get(name), text)
    if rec is None and not check:   # never written unverified
        result = verified.check(table, b, binary, binaries)
        rec = verified.record(result, text)
        say(f"    {name}: verified: {'; '.join(c.line() for c in result.checks)}")
    return name, table, text, rec


def regenerate(out: Path, todo: list[Job], check: bool, partial: bool, workers: int = 1) -> dict[str, Optional[str]]:
    """Scan each job, verify each table whose bytes are not the ones its record verified (never
    written unverified), and write the tables and `out`/index.yaml if changed (nothing with `check`).
    Returns the stale files of `out`: name -> expected text (None: a table no job makes, removed).
    `partial` (a selection of the jobs): the other tables and their index rows are left as they are.
    Jobs run in `workers` processes at once; their results are taken, and written, in job order."""
    old_rows = verified.index_rows(out)
    tables: dict[str, Table] = {}
    records: dict[str, dict] = {}
    stale: dict[str, Optional[str]] = {}
    labels = [j.label for j in todo]
    pool = ProcessPoolExecutor(max_workers=min(workers, len(todo))) if workers > 1 and len(todo) > 1 else None
    try:
        made = (pool.map if pool else map)(_made, labels, [old_rows] * len(todo), [check] * len(todo))
        for i, (label, (name, table, text, rec)) in enumerate(zip(labels, made), 1):
            if name in tables:
                raise BuildError(f"two jobs make {name}: fix data/matrix.yaml")
            tables[name] = table
            if rec is not None:
                records[name] = rec
            path = out / name
            if not path.exists() or path.read_text() != text or rec is None:
                stale[name] = text
                if not check:
                    write(path, text)
            say(f"[{i}/{len(todo)}] {label}: {name}: {len(table.structs)} structs, {table.field_count} fields"
                f"{' (changed)' if name in stale else ''}")
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    if partial:
        if check:
            return stale
        rows = {r["file"]: r for r in old_rows.values()}   # the other tables' rows stay as they are
        rows.update({r["file"]: r for r in index_rows(tables, records)})
        rows = [rows[k] for k in sorted(rows)]
    else:
        for old in sorted(out.glob("cpython-*.yaml")):
            if old.name not in tables:
                stale[old.name] = None
                if not check:
                    old.unlink()
        rows = index_rows(tables, records)
    text = index_text(rows)
    if _read(out / "index.yaml") != text:
        stale["index.yaml"] = text
        if not check:
            write(out / "index.yaml", text)
    return stale


def _read(path: Path) -> Optional[str]:
    return path.read_text() if path.exists() else None
