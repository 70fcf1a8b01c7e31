"""Translation units of a CPython source tree: each `.c` file of Objects/, Python/, Modules/ and
Parser/ with the flags CPython's own build compiles it with, or why the build does not compile it.

The build's own files say it. Makefile.pre.in: the core objects (its `*_OBJS` lists and the objects
its rules depend on) and each one's recipe (`$(PY_CORE_CFLAGS)`, so `-DPy_BUILD_CORE`, plus
per-file defines such as `-DSOABI=...`). Modules/Setup*: built-in modules (`*static*`,
`-DPy_BUILD_CORE_BUILTIN`) and shared ones (neither: `_testcapimodule.c` must not see the core).
setup.py (up to 3.11): further shared modules. What only configure decides on Linux (the dynload
file, libmpdec's machine, which third-party headers a module needs) is in data/source_units.yaml.

`plan` reads those files once (`read_tree` -> `Tree`), gives each `.c` file the plan of the first of
`RULES` that applies (each rule a function of the tree and one file), then checks its includes
(`inputs_rule`). Every read goes through the recorder passed in (`source_reads.Reads`), whose
witness decides when a saved plan may be used again (`source_units`).
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional

import yaml

from .. import __version__, data_cache
from ..remote.process_root import resolve
from . import code_key
from .build_inputs import BuildInputs, digest_files, pyconfig_defines, read_version
from .clang_headers import builtin_include
from .clang_scan import Unit
from ..errors import BuildError
from .generated_headers import DTRACE_HEADER, dtrace_header
from .makefile import Makefile, compile_command, flags_of, relative
from .source_reads import SCANNED_DIRS, Reads, witness_holds
from .targets import system_includes



@lru_cache(maxsize=1)
def rules() -> dict:
    """The reviewed data file: configure's Linux results, module flags, platform-only files, dependencies."""
    return yaml.safe_load(resources.files("offsets").joinpath("data/source_units.yaml").read_text())


@dataclass(frozen=True)
class Plan:
    """How the build compiles one `.c` file: its -D/-U/-I flags, or why it is not scanned."""

    rel: str
    flags: tuple[str, ...] = ()
    how: str = ""              # "Makefile.pre.in", "built-in module", "shared module"
    skip: str = ""             # the reason, when the file is not scanned


def abiflags(pyconfig: Path, config: str) -> str:
    d = pyconfig_defines(pyconfig)
    t = "t" if "Py_GIL_DISABLED" in d or config == "free-threaded" else ""
    return t + ("d" if "Py_DEBUG" in d or config == "debug" else "")


# --- What the build's own files say (each read through the plan's recorder) ----------------------

def configure_values(b: BuildInputs, source: Path, reads: Reads) -> dict:
    """Makefile.pre.in's @NAME@ substitutions as configure makes them for `b`'s target."""
    data = rules()
    version = read_version(source / "Include")[0]
    minor = ".".join(version.split(".")[:2])
    flags = abiflags(b.pyconfig, b.config)
    fill = {"srcdir": shlex.quote(str(source)), "multiarch": b.target.multiarch, "abiflags": flags,
            "nodot": minor.replace(".", ""), "minor": minor, "mpdec": data["mpdec"][b.target.triple],
            "opt": "" if "d" in flags else "-DNDEBUG"}
    values = dict(data["configure"])
    for opt in _debian_options(source, reads).values():
        values.update(opt.get("configure", {}))
    out = {k: str(v).format(**fill) for k, v in values.items()}
    out.setdefault("CFLAGS_NODIST", _configure_std(source, reads))
    return out


def _configure_std(source: Path, reads: Reads) -> str:
    """The C standard configure.ac adds to CFLAGS_NODIST for gcc (`-std=c99` in 3.6-3.10, `-std=c11`
    from 3.11), read from the tree's configure.ac; "" if it adds none."""
    path = source / "configure.ac"
    text = reads.text(path) if reads.isfile(path) else ""
    m = re.search(r'^\s*CFLAGS_NODIST="\$CFLAGS_NODIST (-std=\w+)"', text, re.M)
    return m.group(1) if m else ""


def _setup_files(mk: Makefile, source: Path, reads: Reads) -> list[tuple[str, str]]:
    """The Setup files makesetup reads (name, text), in its order (the first definition of a module
    wins); for a Debian source package, the Setup.local its debian/rules writes comes first."""
    for _, _, body in mk.rules:
        for line in body:
            if "$(MAKESETUP)" in line and " -c " in line:
                words = mk.words(line.split("$(MAKESETUP)", 1)[1])
                found = []
                for w in words:
                    if "Setup" not in Path(w).name:
                        continue
                    rel = relative(w, source)
                    if Path(rel).name == "Setup.local" and _debian(source, reads):
                        found.append((rel, _debian_setup_local(source, reads)))
                    for cand in (rel, rel + ".in", rel + ".dist"):
                        if reads.isfile(source / cand):
                            found.append((cand, reads.text(source / cand)))
                            break
                return found
    return []


def _debian(source: Path, reads: Reads) -> bool:
    """A Debian source package (debian/rules builds it, with its own Setup.local)."""
    return reads.isfile(source / "debian/rules") and reads.isfile(source / "debian/PVER-minimal.README.Debian.in")


def _debian_setup_local(source: Path, reads: Reads) -> str:
    """What debian/rules' __post_configure writes to Modules/Setup.local: the lines of Modules/Setup
    for the extensions debian/PVER-minimal.README.Debian.in lists, uncommented (built in)."""
    readme = reads.text(source / "debian/PVER-minimal.README.Debian.in")
    names = {w[0] for w in (l.split() for l in readme.splitlines()) if len(w) > 1 and w[1] == "extension"}
    setup = reads.text(source / "Modules/Setup") if reads.isfile(source / "Modules/Setup") else ""
    lines = [l[1:].replace("-Wl,-Bdynamic", "").replace("-Wl,-Bstatic", "") for l in setup.splitlines()
             if l.startswith("#") and l[1:].split()[:1] and l[1:].split()[0] in names]
    return "\n".join(lines) + "\n"


def _debian_options(source: Path, reads: Reads) -> dict:
    """The entries of source_units.yaml's `debian_options` that debian/rules passes to configure."""
    if not _debian(source, reads):
        return {}
    text = reads.text(source / "debian/rules")
    return {opt: v for opt, v in rules()["debian_options"].items() if re.search(re.escape(opt) + r"(?![\w=-])", text)}


def _setup_modules(mk: Makefile, source: Path, values: dict, reads: Reads) -> dict:
    """`Modules/x.c` -> (builtin?, the Setup line's own flags), from the Setup files, first wins;
    builtin? is None for a module listed *disabled*."""
    out: dict = {}
    for _, text in _setup_files(mk, source, reads):
        static = True
        for line in text.splitlines():
            line = re.sub(r"#.*", "", line)
            line = re.sub(r"@(\w+)@", lambda m: "" if m.group(1).endswith("_TRUE") else values.get(m.group(1), ""), line)
            line = line.strip()
            if not line or re.match(r"^\w+\s*=", line):
                continue
            if line.startswith("*") and line.endswith("*"):
                section = line.strip("*")
                if section in ("static", "doconfig"):
                    static = True
                elif section in ("shared", "noconfig"):
                    static = False
                elif section == "disabled":
                    static = None
                continue
            words = line.split()
            cpps = [w for w in words if w.startswith(("-I", "-D", "-U")) or re.fullmatch(r"\$\(\w+_CFLAGS\)", w)]
            for w in words:
                if w.endswith(".c"):
                    rel = str(Path("Modules") / w)
                    if rel not in out:
                        out[rel] = (static, cpps)
    return out


def _setup_py(b: BuildInputs, source: Path, reads: Reads) -> dict:
    """`Modules/x.c` -> `setup_py.SetupFlags`: the files setup.py (3.11 and older) builds as shared
    modules on Linux, with the flags of their `Extension(...)` calls."""
    path = source / "setup.py"
    if not reads.isfile(path):
        return {}
    from . import setup_py

    config: dict = {}
    text = reads.text(b.pyconfig)
    for name in re.findall(r"^/\*\s*#\s*undef\s+(\w+)\s*\*/", text, re.M):
        config[name] = 0                       # as sysconfig reads pyconfig.h
    for name, value in pyconfig_defines(b.pyconfig).items():
        config[name] = int(value) if re.fullmatch(r"-?\d+", value) else (1 if not value else value)
    config["ABIFLAGS"] = abiflags(b.pyconfig, b.config)
    if _debian(source, reads):       # debian/rules runs configure: an option it never names is not passed
        rules_text = reads.text(source / "debian/rules")
        given = frozenset(re.findall(r"(?<![\w-])(--(?:with|without|enable|disable)-[\w-]+)(?![\w-])", rules_text))
        config["CONFIG_ARGS"] = setup_py.ConfigArgs(given, complete=True)
    else:
        config["CONFIG_ARGS"] = setup_py.ConfigArgs(frozenset(), complete=False)
    facts = {"HOST_PLATFORM": frozenset(["linux"]), "CROSS_COMPILING": frozenset([False])}
    found = setup_py.compiled(path, source, facts, config)
    return {rel: f for rel, f in found.items() if reads.isfile(source / rel)}


def _included_by(source: Path, files: list[str], reads: Reads) -> dict:
    """`.c` files that another `.c` file of the tree `#include`s: file -> includer."""
    out = {}
    for rel in files:
        text = reads.text(source / rel)
        for inc in re.findall(r'^\s*#\s*include\s*"([^"]+\.c)"', text, re.M):
            target = (source / rel).parent / inc
            if reads.isfile(target):
                out.setdefault(relative(resolve(target), Path(resolve(source))), rel)
    return out


def _core_objects(mk: Makefile, source: Path) -> dict:
    """`Dir/x.c` -> `Dir/x.o` for the objects Makefile.pre.in builds: its `*_OBJS` lists and the
    objects its rules depend on (Modules/getpath_noop.o), in the scanned directories."""
    objs: set = set()
    for name in mk.vars:
        if name.endswith("_OBJS"):
            objs.update(mk.words(f"$({name})"))
    for _, pre, _ in mk.rules:
        objs.update(w for w in mk.words(pre) if w.endswith(".o"))
    objs = {relative(o, source) for o in objs if o.endswith(".o")}
    return {o[:-2] + ".c": o for o in objs if o.split("/", 1)[0] in SCANNED_DIRS}


@dataclass
class Tree:
    """A source tree as its build's own files describe it for build `b`: what the rules decide from."""

    b: BuildInputs
    reads: Reads
    mk: Makefile                    # Makefile.pre.in, with configure's values
    values: dict                    # configure's @NAME@ values
    sysdirs: tuple                  # clang's builtin headers, then the target's C include directories
    files: list                     # the .c files of the scanned directories
    core_c: dict                    # .c -> .o of Makefile.pre.in's objects (not those Debian leaves unbuilt)
    unbuilt_c: dict                 # .c -> the Debian configure option that leaves it unbuilt
    modules: dict                   # Modules/Setup*: .c -> (builtin? or None if disabled, the line's flags)
    setup_py: dict                  # setup.py: .c -> setup_py.SetupFlags
    included: dict                  # .c -> the .c that #includes it
    generated: dict                 # absolute path -> tree path of each header the build generates and the tree lacks
    needs: dict                     # glob -> third-party headers needed (source_units.yaml, Debian options)
    defined: set                    # the macros every unit has: pyconfig.h's and the build's
    _dtrace: Optional[tuple] = None

    @property
    def source(self) -> Path:
        return self.b.source

    def builddir(self) -> list:
        """What a recipe's `-I.` names: the build directory, whose pyconfig.h is the one given (under
        that name: a pyconfig of another name is included through its copy `pyconfig_h`), then the tree."""
        return list(dict.fromkeys([self.b.pyconfig_h.parent, self.b.pyconfig.parent, self.source]))

    def dtrace(self) -> tuple:
        """`generated_headers.dtrace_header` for this tree, made once (what it looked at recorded)."""
        if self._dtrace is None:
            self._dtrace = dtrace_header(self.mk, self.source, self.sysdirs)
            self.reads.which("dtrace")
            for d in self.sysdirs:
                self.reads.isfile(d / "sys/sdt.h")
            if self._dtrace[0] is not None:
                self.reads.text(self._dtrace[0] / "pydtrace_probes.h")
        return self._dtrace


def read_tree(b: BuildInputs, reads: Reads) -> Tree:
    """What `b`'s source tree's Makefile.pre.in, Setup files, setup.py and `.c` files say."""
    source = b.source
    makefile = source / "Makefile.pre.in"
    if not reads.isfile(makefile):
        raise BuildError(f"{source} has no Makefile.pre.in: not a CPython source tree")
    values = configure_values(b, source, reads)
    mk = Makefile(reads.text(makefile), values)
    mk.vars.setdefault("srcdir", shlex.quote(str(source)))     # split with shell rules: a path may hold spaces
    files = sorted(str(p.relative_to(source)) for d in SCANNED_DIRS for p in (source / d).rglob("*.c") if reads.isfile(p))
    sysdirs = (builtin_include(), *system_includes(b.target, b.sysroot))
    options = _debian_options(source, reads)
    unbuilt_c = {relative(w, source)[:-2] + ".c": opt for opt, o in options.items() if o.get("not_built")
                 for w in mk.words(f"$({o['not_built']})")}
    core_c = {c: o for c, o in _core_objects(mk, source).items() if c not in unbuilt_c}
    modules = _setup_modules(mk, source, values, reads)
    setup_py = _setup_py(b, source, reads)
    included = _included_by(source, files, reads)
    generated_targets = {relative(t, source) for targets, _, _ in mk.rules for t in mk.words(targets)}
    generated = {os.path.normpath(source / t): t for t in generated_targets
                 if t.endswith(".h") and not reads.isfile(source / t)}
    defined = set(pyconfig_defines(b.pyconfig)) | {f[2:].split("=")[0] for f in b.defines()}
    needs = dict(rules()["needs"])
    for opt in options.values():
        needs.update(opt.get("needs", {}))
    return Tree(b, reads, mk, values, sysdirs, files, core_c, unbuilt_c, modules, setup_py, included, generated,
                needs, defined)


# --- The rules: each says how the build compiles one file, or None when it does not apply --------

def generated_rule(t: Tree, rel: str) -> Optional[Plan]:
    """A core object whose `.c` the build generates (Modules/config.c)."""
    if not t.reads.isfile(t.source / rel):
        return Plan(rel, skip="generated during the build (not in the source tree)")
    return None


def platform_rule(t: Tree, rel: str) -> Optional[Plan]:
    """A file the build compiles only on another system (source_units.yaml's `only_on`)."""
    platform = _match(rules()["only_on"], rel)
    return Plan(rel, skip=f"not compiled on Linux: built only on {platform}") if platform else None


def module_rule(t: Tree, rel: str) -> Optional[Plan]:
    """An extension module of Modules/Setup* (built in, or shared) or of setup.py (shared): its
    flags, or why it is not scanned (disabled; a third-party header missing; setup.py decides
    its flags at build time and source_units.yaml does not say them)."""
    if rel not in t.modules and rel not in t.setup_py:
        return None
    static, cpps = t.modules.get(rel, (False, []))
    if static is None:
        return Plan(rel, skip="not compiled: *disabled* in the build's Setup files")
    lacking = [h.split("|") for h in _match(t.needs, rel) or []
               if not any(t.reads.isfile(d / alt) for d in t.sysdirs for alt in h.split("|"))]
    if lacking:
        alts = f" (or {', '.join(lacking[0][1:])})" if len(lacking[0]) > 1 else ""
        return Plan(rel, skip=f"not scanned: missing dependency {lacking[0][0]}{alts}: not in "
                              f"the {t.b.target.triple} C include directories")
    base = "$(PY_BUILTIN_MODULE_CFLAGS)" if static else "$(PY_STDMODULE_CFLAGS) $(CCSHARED)"
    if static and "PY_BUILTIN_MODULE_CFLAGS" not in t.mk.vars:
        base = "$(PY_CORE_CFLAGS)"
    extra = re.sub(r"@(\w+)@", lambda m: t.values.get(m.group(1), ""), _match(rules()["module_cflags"], rel) or "")
    own: tuple = ()
    if rel not in t.modules:          # setup.py's Extension(...) flags
        found = t.setup_py[rel]
        own = found.flags
        if found.unresolved:
            probed = _match(rules()["setup_py"], rel)
            if probed is None and not extra.strip():
                return Plan(rel, skip=f"not scanned: {found.unresolved}; data/source_units.yaml "
                                      f"has no setup_py entry for it")
            own = found.partial + _system_dirs(probed or "", t.sysdirs, t.reads)
    cmd = t.mk.expand(" ".join([base] + cpps + [extra]))
    return Plan(rel, tuple(dict.fromkeys(flags_of(cmd, t.source, t.builddir(), rel) + own)),
                "built-in module" if static else "shared module")


def core_rule(t: Tree, rel: str) -> Optional[Plan]:
    """An object of Makefile.pre.in: the flags of its recipe."""
    if rel not in t.core_c:
        return None
    cmd, _ = compile_command(t.mk, t.core_c[rel], t.source)
    return Plan(rel, flags_of(cmd, t.source, t.builddir(), rel), "Makefile.pre.in")


def unbuilt_rule(t: Tree, rel: str) -> Optional[Plan]:
    """A bundled library a Debian configure option replaces by the system's (expat, libmpdec)."""
    if rel not in t.unbuilt_c:
        return None
    return Plan(rel, skip=f"not compiled: debian/rules configures {t.unbuilt_c[rel]}, so the bundled copy is not built")


def included_rule(t: Tree, rel: str) -> Optional[Plan]:
    """A `.c` file another `.c` file `#include`s."""
    if rel not in t.included:
        return None
    return Plan(rel, skip=f"not compiled on its own (#included by {t.included[rel]})")


def unlisted_rule(t: Tree, rel: str) -> Plan:
    """Any other file: the build does not compile it."""
    return Plan(rel, skip="not compiled by the build on Linux (in none of Makefile.pre.in's object lists, "
                          "Modules/Setup* or setup.py)")


#: The rules in order: the first that applies decides.
RULES = (generated_rule, platform_rule, module_rule, core_rule, unbuilt_rule, included_rule, unlisted_rule)


def classify(t: Tree, rel: str) -> Plan:
    """The plan of the first rule of `RULES` that applies to `rel`."""
    return next(p for p in (rule(t, rel) for rule in RULES) if p is not None)


def inputs_rule(t: Tree, p: Plan) -> Plan:
    """`p`, skipped if a file it includes is missing here (`_missing_input`); a unit that needs the
    dtrace header the build generates gets it, made in the cache (an -I, as an out-of-tree
    build's), when dtrace can make it."""
    if p.skip:
        return p
    defined = t.defined | {f[2:].split("=")[0] for f in p.flags if f.startswith("-D")}
    dirs = [Path(f[2:]) for f in p.flags if f.startswith("-I")]
    module = p.how != "Makefile.pre.in"
    why = _missing_input(t, t.source / p.rel, dirs, defined, module)
    if why == f"not scanned: needs {DTRACE_HEADER}, which the build generates":
        made, reason = t.dtrace()
        if made is None:
            why += f" ({reason})"
        else:
            p = Plan(p.rel, p.flags + (f"-I{made}",), p.how)
            why = _missing_input(t, t.source / p.rel, dirs + [made], defined, module)
    return Plan(p.rel, skip=why) if why else p


def plan(b: BuildInputs, reads: Optional[Reads] = None) -> list[Plan]:
    """A `Plan` for every `.c` file of the source tree's scanned directories, in path order: the
    first rule that applies (`RULES`), then `inputs_rule`. What it read goes to `reads`."""
    t = read_tree(b, reads if reads is not None else Reads())
    plans = [classify(t, rel) for rel in sorted(set(t.files) | set(t.core_c))]
    return [inputs_rule(t, p) for p in plans]


# --- Helpers of the rules ---------------------------------------------------------------------

def _system_dirs(flags: str, sysdirs, reads: Reads) -> tuple[str, ...]:
    """A setup_py entry's flags, `-I{include}/DIR` made `-I` each target C include directory's DIR."""
    out = []
    for f in flags.split():
        if f.startswith("-I{include}/"):
            sub = f[len("-I{include}/"):]
            out += [f"-I{d / sub}" for d in sysdirs if reads.isdir(d / sub)]
        else:
            out.append(f)
    return tuple(out)


def _match(table: dict, rel: str):
    for pattern, value in table.items():
        if fnmatch.fnmatch(rel, pattern):
            return value
    return None


def _missing_input(t: Tree, start: Path, dirs: list[Path], defined: set, module: bool) -> str:
    """Why `start` cannot be parsed here, read from its includes: a header the build generates (and
    the tree lacks), or, for a module, a third-party header that pyconfig.h says the build machine
    had (`#ifdef HAVE_X_H` around it) but the target's include directories lack. "" if neither."""
    dirs = tuple(map(str, dirs))
    every = dirs + tuple(map(str, t.sysdirs))
    seen, todo = set(), [str(start)]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for angle, name, need, need_not in t.reads.includes(Path(f)):
            if not need <= defined or need_not & defined:
                continue            # under a condition that is false for this build
            if angle:
                have = sorted(m for m in need if m.startswith("HAVE_") and m.endswith("_H"))
                if module and have and not t.reads.find(name, every):
                    return f"not scanned: missing dependency {name} (pyconfig.h has {have[0]}, " \
                           f"the target's include directories lack it)"
                continue
            here = (os.path.dirname(f),) + dirs
            found = t.reads.find(name, here)
            if found:
                todo.append(found)
                continue
            for d in here:
                gen = t.generated.get(os.path.normpath(os.path.join(d, name)))
                if gen:
                    return f"not scanned: needs {gen}, which the build generates"
    return ""


# --- Units --------------------------------------------------------------------------------------

def _check_version(b: BuildInputs) -> None:
    inc = b.source / "Include"
    if not (inc / "Python.h").is_file():
        raise BuildError(f"{b.source} is not a CPython source tree (no Include/Python.h)")
    if resolve(inc) != resolve(b.include_dir):
        theirs = read_version(inc)[0]
        if theirs != b.version:
            raise BuildError(f"source tree {b.source} is CPython {theirs} but the headers in {b.include_dir} "
                             f"are {b.version}: pass the source tree of the same version")


def unit_args(b: BuildInputs, flags) -> list[str]:
    """Target, system headers, then the build's own -I/-D flags for one `.c` file, then --config."""
    args = ["-x", "c", "-std=gnu11", "-target", b.target.triple, "-nostdinc", "-ferror-limit=0",
            "-isystem", str(builtin_include())]
    for d in system_includes(b.target, b.sysroot):
        args += ["-isystem", str(d)]
    return args + list(flags) + list(b.defines())


def source_units(b: BuildInputs) -> tuple[list[Unit], list[str], str]:
    """The units of `b`'s source tree, what is skipped (`path: reason`), and a digest of the scanned
    files. Saved in the cache, keyed by the inputs and this planner's code, and used while every
    file the plan read (and the list of `.c` files) is unchanged."""
    _check_version(b)
    path = _plan_path(b)
    saved = _load_plan(path)
    if saved is not None:
        witness, result = saved
        if all(witness_holds(kind, p, v) for (kind, p), v in witness.items()):
            return result
    reads = Reads()
    reads.listing(b.source)
    reads.text(b.pyconfig)
    reads.text(b.source / "Include/patchlevel.h")
    result = _source_units(b, reads)
    units, skipped, digest = result
    data_cache.store(path, path.stem, {"witness": [[kind, p, v] for (kind, p), v in reads.witness.items()],
                                       "units": [[u.name, u.path, u.args, u.roots, u.owned] for u in units],
                                       "skipped": skipped, "digest": digest})
    return result


def _load_plan(path: Path):
    """(witness, result) of a saved plan (`data_cache`: plain data), or None."""
    doc = data_cache.load(path, path.stem)
    try:
        witness = {(kind, p): (tuple(map(tuple, v)) if kind == "listing" else v) for kind, p, v in doc["witness"]}
        units = [Unit(name=n, path=p, args=tuple(a), roots=tuple(map(tuple, r)), owned=tuple(o))
                 for n, p, a, r, o in doc["units"]]
        skipped, digest = list(doc["skipped"]), doc["digest"]
    except Exception:       # noqa: BLE001 - no saved plan, or not one _source_units made: plan afresh
        return None
    if not all(isinstance(x, str) for u in units for x in (u.name, u.path, *u.args, *u.owned)):
        return None
    return witness, (units, skipped, digest)


def _plan_path(b: BuildInputs) -> Path:
    code = hashlib.sha256(f"{__version__}\0{code_key.digest(__name__)}".encode()).hexdigest()[:24]
    blob = json.dumps([code,
                       resources.files("offsets").joinpath("data/source_units.yaml").read_text(), str(b.source),
                       str(b.pyconfig), str(b.include_dir), b.target.triple, str(b.sysroot), b.config, list(b.defines()),
                       str(builtin_include()), [str(d) for d in system_includes(b.target, b.sysroot)]])
    return data_cache.generation(data_cache.folder() / "plans", code) / (hashlib.sha256(blob.encode()).hexdigest() + ".json")


def _source_units(b: BuildInputs, reads: Reads) -> tuple[list[Unit], list[str], str]:
    source = b.source
    owned = tuple(f"{d}/" for d in sorted(source.iterdir()) if d.is_dir() and d.name != "Include")
    units, skipped, scanned = [], [], []
    for p in plan(b, reads):
        if p.skip:
            skipped.append(f"{p.rel}: {p.skip}")
            continue
        path = source / p.rel
        units.append(Unit(name=p.rel, path=str(path), args=tuple(unit_args(b, p.flags)),
                          roots=((f"{source}/", ""),), owned=owned))
        scanned.append(path)
    for f in scanned:
        reads.text(f)
    return units, skipped, digest_files(scanned, source)
