"""Translation units of a CPython source tree: each `.c` file of Objects/, Python/, Modules/ and
Parser/ with the flags CPython's own build compiles it with, or why the build does not compile it.

The build's own files say it. Makefile.pre.in: the core objects (its `*_OBJS` lists and the objects
its rules depend on) and each one's recipe (`$(PY_CORE_CFLAGS)`, so `-DPy_BUILD_CORE`, plus
per-file defines such as `-DSOABI=...`). Modules/Setup*: built-in modules (`*static*`,
`-DPy_BUILD_CORE_BUILTIN`) and shared ones (neither: `_testcapimodule.c` must not see the core).
setup.py (up to 3.11): further shared modules. What only configure decides on Linux (the dynload
file, libmpdec's machine, which third-party headers a module needs) is in data/source_units.yaml.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional

import yaml

from . import data_cache
from .build_inputs import BuildInputs, digest_files, pyconfig_defines, read_version
from .clang_headers import builtin_include
from .clang_scan import Unit
from .errors import BuildError
from .generated_headers import DTRACE_HEADER, dtrace_header
from .makefile import Makefile, compile_command, flags_of, relative
from .targets import system_includes

SCANNED_DIRS = ("Objects", "Python", "Modules", "Parser")


@lru_cache(maxsize=1)
def rules() -> dict:
    """The reviewed data file: configure's Linux results, module flags, platform-only files, dependencies."""
    return yaml.safe_load(resources.files("offsets").joinpath("data/source_units.yaml").read_text())


# What a plan read, so a saved plan is used only while all of it is unchanged: file contents by
# sha256, whether a path is a file, and the .c files of the scanned directories.
_WITNESS: Optional[dict] = None


#: The largest file of a source tree read as text (CPython's largest .c file is about 1 MB).
MAX_TEXT_BYTES = 64 * 1024 * 1024


def _text(path) -> str:
    """A file's text; `BuildError` for a file larger than `MAX_TEXT_BYTES` or not a regular file."""
    import stat

    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_TEXT_BYTES:
            raise BuildError(f"{path}: not a regular file of at most {MAX_TEXT_BYTES // (1024 * 1024)} MB; "
                             f"a source tree holds none such")
        data = f.read(MAX_TEXT_BYTES + 1)
    if _WITNESS is not None:
        _WITNESS[("sha256", str(path))] = hashlib.sha256(data).hexdigest()
    return data.decode(errors="replace")


def _probe(path) -> bool:
    found = os.path.isfile(path)
    if _WITNESS is not None:
        _WITNESS.setdefault(("isfile", str(path)), found)
    return found


def _probe_dir(path) -> bool:
    found = os.path.isdir(path)
    if _WITNESS is not None:
        _WITNESS.setdefault(("isdir", str(path)), found)
    return found


def _witness_holds(kind: str, path: str, value) -> bool:
    if kind == "isfile":
        return os.path.isfile(path) == value
    if kind == "isdir":
        return os.path.isdir(path) == value
    if kind == "sha256":
        try:
            return data_cache.file_sha256(path) == value
        except OSError:
            return False
    if kind == "which":
        return shutil.which(path) == value
    if kind == "listing":
        return _listing(Path(path)) == value
    return False


def _listing(source: Path) -> tuple:
    """The `.c` files of the scanned directories and the tree's top-level directories."""
    found = []
    for d in SCANNED_DIRS:
        for root, _, names in os.walk(source / d):
            found += [os.path.join(root, n) for n in names if n.endswith(".c")]
    tops = [e.name for e in os.scandir(source) if e.is_dir()]
    return tuple(sorted(found)), tuple(sorted(tops))


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


def configure_values(b: BuildInputs, source: Path) -> dict:
    """Makefile.pre.in's @NAME@ substitutions as configure makes them for `b`'s target."""
    data = rules()
    version = read_version(source / "Include")[0]
    minor = ".".join(version.split(".")[:2])
    flags = abiflags(b.pyconfig, b.config)
    fill = {"srcdir": shlex.quote(str(source)), "multiarch": b.target.multiarch, "abiflags": flags,
            "nodot": minor.replace(".", ""), "minor": minor, "mpdec": data["mpdec"][b.target.triple],
            "opt": "" if "d" in flags else "-DNDEBUG"}
    values = dict(data["configure"])
    for opt in _debian_options(source).values():
        values.update(opt.get("configure", {}))
    out = {k: str(v).format(**fill) for k, v in values.items()}
    out.setdefault("CFLAGS_NODIST", _configure_std(source))
    return out


def _configure_std(source: Path) -> str:
    """The C standard configure.ac adds to CFLAGS_NODIST for gcc (`-std=c99` in 3.6-3.10, `-std=c11`
    from 3.11), read from the tree's configure.ac; "" if it adds none."""
    path = source / "configure.ac"
    text = _text(path) if _probe(path) else ""
    m = re.search(r'^\s*CFLAGS_NODIST="\$CFLAGS_NODIST (-std=\w+)"', text, re.M)
    return m.group(1) if m else ""


def _setup_files(mk: Makefile, source: Path) -> list[tuple[str, str]]:
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
                    if Path(rel).name == "Setup.local" and _debian(source):
                        found.append((rel, _debian_setup_local(source)))
                    for cand in (rel, rel + ".in", rel + ".dist"):
                        if _probe(source / cand):
                            found.append((cand, _text(source / cand)))
                            break
                return found
    return []


def _debian(source: Path) -> bool:
    """A Debian source package (debian/rules builds it, with its own Setup.local)."""
    return _probe(source / "debian/rules") and _probe(source / "debian/PVER-minimal.README.Debian.in")


def _debian_setup_local(source: Path) -> str:
    """What debian/rules' __post_configure writes to Modules/Setup.local: the lines of Modules/Setup
    for the extensions debian/PVER-minimal.README.Debian.in lists, uncommented (built in)."""
    readme = _text(source / "debian/PVER-minimal.README.Debian.in")
    names = {w[0] for w in (l.split() for l in readme.splitlines()) if len(w) > 1 and w[1] == "extension"}
    setup = _text(source / "Modules/Setup") if _probe(source / "Modules/Setup") else ""
    lines = [l[1:].replace("-Wl,-Bdynamic", "").replace("-Wl,-Bstatic", "") for l in setup.splitlines()
             if l.startswith("#") and l[1:].split()[:1] and l[1:].split()[0] in names]
    return "\n".join(lines) + "\n"


def _debian_options(source: Path) -> dict:
    """The entries of source_units.yaml's `debian_options` that debian/rules passes to configure."""
    if not _debian(source):
        return {}
    text = _text(source / "debian/rules")
    return {opt: v for opt, v in rules()["debian_options"].items() if re.search(re.escape(opt) + r"(?![\w=-])", text)}


def _setup_modules(mk: Makefile, source: Path, values: dict) -> dict:
    """`Modules/x.c` -> (builtin?, the Setup line's own flags), from the Setup files, first wins."""
    out: dict = {}
    for _, text in _setup_files(mk, source):
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


def _setup_py(b: BuildInputs, source: Path) -> dict:
    """`Modules/x.c` -> `setup_py.SetupFlags`: the files setup.py (3.11 and older) builds as shared
    modules on Linux, with the flags of their `Extension(...)` calls."""
    path = source / "setup.py"
    if not _probe(path):
        return {}
    from . import setup_py

    config: dict = {}
    text = _text(b.pyconfig)
    for name in re.findall(r"^/\*\s*#\s*undef\s+(\w+)\s*\*/", text, re.M):
        config[name] = 0                       # as sysconfig reads pyconfig.h
    for name, value in pyconfig_defines(b.pyconfig).items():
        config[name] = int(value) if re.fullmatch(r"-?\d+", value) else (1 if not value else value)
    config["ABIFLAGS"] = abiflags(b.pyconfig, b.config)
    if _debian(source):       # debian/rules runs configure: an option it never names is not passed
        rules_text = _text(source / "debian/rules")
        given = frozenset(re.findall(r"(?<![\w-])(--(?:with|without|enable|disable)-[\w-]+)(?![\w-])", rules_text))
        config["CONFIG_ARGS"] = setup_py.ConfigArgs(given, complete=True)
    else:
        config["CONFIG_ARGS"] = setup_py.ConfigArgs(frozenset(), complete=False)
    facts = {"HOST_PLATFORM": frozenset(["linux"]), "CROSS_COMPILING": frozenset([False])}
    found = setup_py.compiled(path, source, facts, config)
    return {rel: f for rel, f in found.items() if _probe(source / rel)}


def _system_dirs(flags: str, sysdirs) -> tuple[str, ...]:
    """A setup_py entry's flags, `-I{include}/DIR` made `-I` each target C include directory's DIR."""
    out = []
    for f in flags.split():
        if f.startswith("-I{include}/"):
            sub = f[len("-I{include}/"):]
            out += [f"-I{d / sub}" for d in sysdirs if _probe_dir(d / sub)]
        else:
            out.append(f)
    return tuple(out)


def _included_by(source: Path, files: list[str]) -> dict:
    """`.c` files that another `.c` file of the tree `#include`s: file -> includer."""
    out = {}
    for rel in files:
        text = _text(source / rel)
        for inc in re.findall(r'^\s*#\s*include\s*"([^"]+\.c)"', text, re.M):
            target = (source / rel).parent / inc
            if _probe(target):
                out.setdefault(relative(str(target.resolve()), source.resolve()), rel)
    return out


_DIRECTIVE = re.compile(r'^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif|include)\b[ \t]*(.*)$', re.M)


@lru_cache(maxsize=None)
def _includes(path: Path) -> tuple[tuple[bool, str, frozenset, frozenset], ...]:
    """Each `#include` of a file (angle?, name) with the macros that must be defined / undefined for
    it to count (only plain #ifdef/#ifndef/#if defined(M) conditions are understood; others count)."""
    try:
        text = _text(path)
    except (OSError, BuildError):       # a huge or special file: clang's unit, under its limit, says so
        return ()
    out, stack = [], []           # stack of (must_defined, must_undefined) for each open #if
    for kind, rest in _DIRECTIVE.findall(text):
        rest = re.sub(r"/\*.*?\*/|//.*", "", rest).strip()
        if kind in ("ifdef", "ifndef", "if"):
            m = re.fullmatch(r"(!?)\s*defined\s*\(?\s*(\w+)\s*\)?", rest) if kind == "if" else None
            name = rest.split()[0] if kind != "if" and rest else (m.group(2) if m else None)
            positive = kind == "ifdef" or (m is not None and not m.group(1))
            stack.append((name, positive) if name else None)
        elif kind in ("elif", "else"):
            if stack:
                top = stack[-1]
                stack[-1] = (top[0], not top[1]) if (top and kind == "else") else None
        elif kind == "endif":
            if stack:
                stack.pop()
        elif kind == "include":
            m = re.match(r'(["<])([^">]+)[">]', rest)
            if m:
                need = frozenset(c[0] for c in stack if c and c[1])
                need_not = frozenset(c[0] for c in stack if c and not c[1])
                out.append((m.group(1) == "<", m.group(2), need, need_not))
    return tuple(out)


@lru_cache(maxsize=None)
def _find(name: str, dirs: tuple[str, ...]) -> str:
    """The first `dir/name` that is a file, or ""."""
    for d in dirs:
        path = os.path.normpath(os.path.join(d, name))
        if _probe(path):
            return path
    return ""


def _missing_input(start: Path, dirs: list[Path], sysdirs, defined: set, generated: dict, module: bool) -> str:
    """Why `start` cannot be parsed here, read from its includes: a header the build generates (and
    the tree lacks), or, for a module, a third-party header that pyconfig.h says the build machine
    had (`#ifdef HAVE_X_H` around it) but the target's include directories lack. "" if neither."""
    dirs = tuple(map(str, dirs))
    every = dirs + tuple(map(str, sysdirs))
    seen, todo = set(), [str(start)]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for angle, name, need, need_not in _includes(Path(f)):
            if not need <= defined or need_not & defined:
                continue            # under a condition that is false for this build
            if angle:
                have = sorted(m for m in need if m.startswith("HAVE_") and m.endswith("_H"))
                if module and have and not _find(name, every):
                    return f"not scanned: missing dependency {name} (pyconfig.h has {have[0]}, " \
                           f"the target's include directories lack it)"
                continue
            here = (os.path.dirname(f),) + dirs
            found = _find(name, here)
            if found:
                todo.append(found)
                continue
            for d in here:
                gen = generated.get(os.path.normpath(os.path.join(d, name)))
                if gen:
                    return f"not scanned: needs {gen}, which the build generates"
    return ""


def _match(table: dict, rel: str):
    for pattern, value in table.items():
        if fnmatch.fnmatch(rel, pattern):
            return value
    return None


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


def plan(b: BuildInputs) -> list[Plan]:
    """A `Plan` for every `.c` file of the source tree's scanned directories, in path order."""
    source = b.source
    _includes.cache_clear()     # the two file caches live for one plan: files may change between scans
    _find.cache_clear()
    makefile = source / "Makefile.pre.in"
    if not _probe(makefile):
        raise BuildError(f"{source} has no Makefile.pre.in: not a CPython source tree")
    data = rules()
    values = configure_values(b, source)
    mk = Makefile(_text(makefile), values)
    mk.vars.setdefault("srcdir", shlex.quote(str(source)))     # split with shell rules: a path may hold spaces
    builddir = [b.pyconfig.parent, source]
    files = sorted(str(p.relative_to(source)) for d in SCANNED_DIRS for p in (source / d).rglob("*.c") if _probe(p))
    sysdirs = (builtin_include(), *system_includes(b.target, b.sysroot))

    options = _debian_options(source)
    unbuilt_c = {relative(w, source)[:-2] + ".c": opt for opt, o in options.items() if o.get("not_built")
                 for w in mk.words(f"$({o['not_built']})")}
    core_c = {c: o for c, o in _core_objects(mk, source).items() if c not in unbuilt_c}
    modules = _setup_modules(mk, source, values)
    setup_py = _setup_py(b, source)
    included = _included_by(source, files)
    generated_targets = {relative(t, source) for targets, _, _ in mk.rules for t in mk.words(targets)}

    generated = {os.path.normpath(source / t): t for t in generated_targets if t.endswith(".h") and not _probe(source / t)}
    pyconfig = set(pyconfig_defines(b.pyconfig)) | {f[2:].split("=")[0] for f in b.defines()}
    needs = dict(data["needs"])
    for opt in options.values():
        needs.update(opt.get("needs", {}))
    plans = []
    for rel in sorted(set(files) | set(core_c)):
        if not _probe(source / rel):
            plans.append(Plan(rel, skip="generated during the build (not in the source tree)"))
            continue
        platform = _match(data["only_on"], rel)
        if platform:
            plans.append(Plan(rel, skip=f"not compiled on Linux: built only on {platform}"))
            continue
        if rel in modules or rel in setup_py:
            static, cpps = modules.get(rel, (False, []))
            if static is None:
                plans.append(Plan(rel, skip="not compiled: *disabled* in the build's Setup files"))
                continue
            lacking = [h.split("|") for h in _match(needs, rel) or []
                       if not any(_probe(d / alt) for d in sysdirs for alt in h.split("|"))]
            if lacking:
                alts = f" (or {', '.join(lacking[0][1:])})" if len(lacking[0]) > 1 else ""
                plans.append(Plan(rel, skip=f"not scanned: missing dependency {lacking[0][0]}{alts}: not in "
                                            f"the {b.target.triple} C include directories"))
                continue
            base = "$(PY_BUILTIN_MODULE_CFLAGS)" if static else "$(PY_STDMODULE_CFLAGS) $(CCSHARED)"
            if static and "PY_BUILTIN_MODULE_CFLAGS" not in mk.vars:
                base = "$(PY_CORE_CFLAGS)"
            extra = re.sub(r"@(\w+)@", lambda m: values.get(m.group(1), ""), _match(data["module_cflags"], rel) or "")
            own: tuple = ()
            if rel not in modules:          # setup.py's Extension(...) flags
                found = setup_py[rel]
                own = found.flags
                if found.unresolved:
                    probed = _match(data["setup_py"], rel)
                    if probed is None and not extra.strip():
                        plans.append(Plan(rel, skip=f"not scanned: {found.unresolved}; data/source_units.yaml "
                                                    f"has no setup_py entry for it"))
                        continue
                    own = found.partial + _system_dirs(probed or "", sysdirs)
            cmd = mk.expand(" ".join([base] + cpps + [extra]))
            plans.append(Plan(rel, tuple(dict.fromkeys(flags_of(cmd, source, builddir, rel) + own)),
                              "built-in module" if static else "shared module"))
            continue
        if rel in core_c:
            cmd, _ = compile_command(mk, core_c[rel], source)
            plans.append(Plan(rel, flags_of(cmd, source, builddir, rel), "Makefile.pre.in"))
            continue
        if rel in unbuilt_c:
            plans.append(Plan(rel, skip=f"not compiled: debian/rules configures {unbuilt_c[rel]}, "
                                        f"so the bundled copy is not built"))
            continue
        if rel in included:
            plans.append(Plan(rel, skip=f"not compiled on its own (#included by {included[rel]})"))
            continue
        plans.append(Plan(rel, skip="not compiled by the build on Linux (in none of Makefile.pre.in's "
                                    "object lists, Modules/Setup* or setup.py)"))
    checked, dtrace = [], None
    for p in plans:
        if not p.skip:
            defined = pyconfig | {f[2:].split("=")[0] for f in p.flags if f.startswith("-D")}
            dirs = [Path(f[2:]) for f in p.flags if f.startswith("-I")]
            why = _missing_input(source / p.rel, dirs, sysdirs, defined, generated, p.how != "Makefile.pre.in")
            if why == f"not scanned: needs {DTRACE_HEADER}, which the build generates":
                if dtrace is None:
                    dtrace = dtrace_header(mk, source, sysdirs)
                    if _WITNESS is not None:        # what dtrace_header looked at
                        _WITNESS[("which", "dtrace")] = shutil.which("dtrace")
                        for d in sysdirs:
                            _probe(d / "sys/sdt.h")
                        if dtrace[0] is not None:
                            _text(dtrace[0] / "pydtrace_probes.h")
                if dtrace[0] is None:
                    why += f" ({dtrace[1]})"
                else:           # made in the cache the way the build makes it: an -I as an out-of-tree build's
                    p = Plan(p.rel, p.flags + (f"-I{dtrace[0]}",), p.how)
                    why = _missing_input(source / p.rel, dirs + [dtrace[0]], sysdirs, defined, generated,
                                         p.how != "Makefile.pre.in")
            if why:
                p = Plan(p.rel, skip=why)
        checked.append(p)
    return checked


def _check_version(b: BuildInputs) -> None:
    inc = b.source / "Include"
    if not _probe(inc / "Python.h"):
        raise BuildError(f"{b.source} is not a CPython source tree (no Include/Python.h)")
    if inc.resolve() != b.include_dir.resolve():
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
    global _WITNESS
    _check_version(b)
    path = _plan_path(b)
    saved = _load_plan(path)
    if saved is not None:
        witness, result = saved
        if all(_witness_holds(kind, p, v) for (kind, p), v in witness.items()):
            return result
    _WITNESS = {("listing", str(b.source)): _listing(b.source)}
    try:
        _text(b.pyconfig)
        _text(b.source / "Include/patchlevel.h")
        result = _source_units(b)
        witness = _WITNESS
    finally:
        _WITNESS = None
    units, skipped, digest = result
    data_cache.store(path, path.stem, {"witness": [[kind, p, v] for (kind, p), v in witness.items()],
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
    from . import __version__
    from .debian import cache_dir

    here = Path(__file__).parent
    code = [(here / f).read_text() for f in ("sources.py", "makefile.py", "setup_py.py", "generated_headers.py")]
    blob = json.dumps([__version__, code, resources.files("offsets").joinpath("data/source_units.yaml").read_text(),
                       str(b.source), str(b.pyconfig), str(b.include_dir), b.target.triple, str(b.sysroot), b.config,
                       list(b.defines()), str(builtin_include()), [str(d) for d in system_includes(b.target, b.sysroot)]])
    return cache_dir() / "plans" / (hashlib.sha256(blob.encode()).hexdigest() + ".json")


def _source_units(b: BuildInputs) -> tuple[list[Unit], list[str], str]:
    source = b.source
    owned = tuple(f"{d}/" for d in sorted(source.iterdir()) if d.is_dir() and d.name != "Include")
    units, skipped, scanned = [], [], []
    for p in plan(b):
        if p.skip:
            skipped.append(f"{p.rel}: {p.skip}")
            continue
        path = source / p.rel
        units.append(Unit(name=p.rel, path=str(path), args=tuple(unit_args(b, p.flags)),
                          roots=((f"{source}/", ""),), owned=owned))
        scanned.append(path)
    for f in scanned:
        _text(f)
    return units, skipped, digest_files(scanned, source)
