"""Build description: find a CPython build's inputs and read what it is from its own files.

A build is found from an interpreter (`--python`), an installed prefix (`--prefix`, including
Debian's `usr/` with its multiarch `pyconfig.h`), or a source tree with a configure-made
`pyconfig.h`. The version comes from `patchlevel.h`, the config from `pyconfig.h` plus `--config`,
the pointer size from `pyconfig.h`'s `SIZEOF_VOID_P`; nothing is taken from the host.

From the command line's options to `BuildInputs`, in one direction (`targets` is only called,
never calls back): `cli/scan.py`'s `build_inputs` picks the entry (`from_python`, `from_prefix`,
`from_source`); the entry finds the headers, then resolves the target once (`targets`: the
interpreter's multiarch, `--target`, the one architecture a Debian forwarder serves, or the host);
`_assemble` then reads the rest for that target (the pyconfig.h that applies, the config, the
core's flags) and checks it (`checked`).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from .. import children, data_cache
from ..atomic_write import replace
from ..layout import identity
from ..remote.process_root import resolve, split
from . import process_headers, targets
from .makefile import Makefile
from ..errors import BuildError, interpreter_failure
from ..layout.model import CONFIGS

_LEVELS = {"PY_RELEASE_LEVEL_ALPHA": 0xA, "PY_RELEASE_LEVEL_BETA": 0xB, "PY_RELEASE_LEVEL_GAMMA": 0xC,
           "PY_RELEASE_LEVEL_FINAL": 0xF}


@dataclass(frozen=True)
class BuildInputs:
    """Where a build's files are, and what it was asked to be scanned as."""

    include_dir: Path               # the directory holding Python.h
    include_root: Path              # what -I points at so Debian's forwarding pyconfig.h resolves
    pyconfig: Path                  # the real pyconfig.h (not a forwarder)
    target: targets.TargetInfo
    config: str = "release"
    source: Optional[Path] = None
    sysroot: Optional[Path] = None
    vendor: str = identity.UPSTREAM
    #: the core's compile flags (PY_CORE_CFLAGS, CFLAGS_NODIST) from the build's sysconfig data or
    #: Makefile; None when the build gives none (then its defines are unknown)
    cflags: Optional[str] = None
    #: what stands in for an input of this version not at hand, and why (`model.Build.stand_in`)
    stand_in: Optional[str] = None

    @property
    def version(self) -> str:
        return read_version(self.include_dir)[0]

    @property
    def hexversion(self) -> int:
        return read_version(self.include_dir)[1]

    @property
    def table_name(self) -> str:
        """The name a scan of this build gives its table (`model.Build.table_name`), known before
        scanning: the layout flags a scan finds that name a config are the ones `config` turns on."""
        return identity.table_name(self.version, dict.fromkeys(CONFIGS[self.config], True), self.target.triple,
                                   self.vendor)

    def layout_defines(self) -> Optional[dict]:
        """The core's defines that some header tests (identity.layout_defines), or None if unknown."""
        if self.cflags is None:
            return None
        return _layout_defines(self.cflags, tuple(header_files(self)))

    def defines(self) -> tuple[str, ...]:
        """The macros every unit gets on top of pyconfig.h: the core's layout defines, as the
        build compiled its core, then `--config`'s."""
        core = [f"-D{k}" + (f"={v}" if v else "") for k, v in (self.layout_defines() or {}).items()]
        return tuple(core) + tuple(f"-D{m}=1" for m in CONFIGS[self.config])

    @property
    def pyconfig_h(self) -> Path:
        """The pyconfig.h the compiler includes: `pyconfig` itself when it is so named, else a copy
        named pyconfig.h in the cache (content-addressed), so `Python.h` finds it and the digest
        is the one a file named pyconfig.h gives."""
        return pyconfig_named(self.pyconfig)


def pyconfig_named(path: Path) -> Path:
    """`path` if it is named pyconfig.h, else its content-addressed copy `pyconfig.h` in the cache."""
    if path.name == "pyconfig.h":
        return path
    data = path.read_bytes()
    copy = data_cache.folder() / "pyconfig" / hashlib.sha256(data).hexdigest()[:32] / "pyconfig.h"
    if not copy.is_file() or copy.read_bytes() != data:
        replace(copy, data)
    return copy


@lru_cache(maxsize=64)
def _layout_defines(cflags: str, headers: tuple) -> dict:
    return identity.layout_defines(cflags, [Path(h).read_text(errors="replace") for h in headers])


def makefile_cflags(makefile: Path) -> Optional[str]:
    """PY_CORE_CFLAGS and CFLAGS_NODIST of an installed or configure-made Makefile, expanded."""
    try:
        mk = Makefile(makefile.read_text(errors="replace"), {})
    except OSError:
        return None
    return " ".join(x for x in (mk.expand("$(PY_CORE_CFLAGS)"), mk.expand("$(CFLAGS_NODIST)")) if x.strip())


def _installed_makefile(prefix: Path, inc: Path, t: targets.TargetInfo) -> Optional[Path]:
    """lib/python3.X/config-3.X[d]-MULTIARCH/Makefile of an installed prefix (Debian's -dev has it)."""
    lib = prefix / "lib" / re.sub(r"[dt]+$", "", inc.name)
    tag = inc.name[len("python"):]
    for name in (f"config-{tag}-{t.multiarch}", f"config-{tag}"):
        makefile = _within(lib / name / "Makefile")
        if makefile.is_file():
            return makefile
    return None


def read_version(include_dir: Path) -> tuple[str, int]:
    """(`3.11.7`, 0x030b07f0) from the build's `patchlevel.h`."""
    path = include_dir / "patchlevel.h"
    try:
        text = path.read_text(errors="replace")
    except OSError:
        raise BuildError(f"{include_dir} is not a CPython include directory (no readable patchlevel.h)") from None
    m = dict(re.findall(r"#define\s+(PY_\w+)\s+(\S+)", text))
    try:
        major, minor, micro = int(m["PY_MAJOR_VERSION"]), int(m["PY_MINOR_VERSION"]), int(m["PY_MICRO_VERSION"])
        level, serial = _LEVELS[m["PY_RELEASE_LEVEL"]], int(m["PY_RELEASE_SERIAL"])
        version = m["PY_VERSION"].strip('"')
    except (KeyError, ValueError):
        raise BuildError(f"{path}: no PY_MAJOR_VERSION/PY_MINOR_VERSION/PY_MICRO_VERSION/PY_VERSION defines") from None
    return version, (major << 24) | (minor << 16) | (micro << 8) | (level << 4) | serial


def pyconfig_defines(path: Path) -> dict[str, str]:
    """The `#define NAME VALUE` lines of a pyconfig.h (VALUE '' for a bare define)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        raise BuildError(f"cannot read {path}: {e.strerror}") from None
    return {n: v.strip() for n, v in re.findall(r"^\s*#\s*define\s+(\w+)[ \t]*(.*)$", text, re.M)}


def _real_pyconfig(include_dir: Path, include_root: Path, t: targets.TargetInfo) -> Path:
    """The pyconfig.h that applies to target `t`, following Debian's multiarch forwarder."""
    path = _within(include_dir / "pyconfig.h")
    if not path.is_file():
        raise BuildError(f"{include_dir} has no pyconfig.h: pass --pyconfig (a configure-made pyconfig.h)")
    text = path.read_text(errors="replace")
    listed = sorted(set(re.findall(r"#\s*include\s*<([\w-]+)/" + re.escape(include_dir.name) + r"/pyconfig\.h>", text)))
    if not listed:
        return path  # not a Debian forwarder: the real thing
    forwarded = _within(include_root / t.multiarch / include_dir.name / "pyconfig.h")
    if forwarded.is_file():
        return forwarded
    raise BuildError(f"{path} forwards to a per-architecture pyconfig.h, but {forwarded} is missing "
                     f"(present for: {', '.join(a for a in listed if (include_root / a).is_dir()) or 'none'}); "
                     f"pass the matching --target")


def _find_include_dir(prefix: Path, abiflags: Optional[str] = None) -> Path:
    """The one include/python3.X<abiflags>/ of `prefix`; `abiflags` ('', 'd', 't') picks among several."""
    if not prefix.is_dir():
        raise BuildError(f"prefix {prefix} does not exist")
    inc = _within(prefix / "include") if _within(prefix / "include").is_dir() else prefix
    if (inc / "Python.h").is_file():
        return inc
    found = sorted({_within(d) for d in inc.glob("python3*") if _within(d / "Python.h").is_file()})
    if not found:
        dangling = sorted(d / "Python.h" for d in inc.glob("python3*") if (d / "Python.h").is_symlink())
        if dangling:
            raise BuildError(f"{dangling[0]} is a symlink to {os.readlink(dangling[0])}, which is missing: unpack the "
                             f"package that holds it too (Debian: libpython3.X-dev beside libpython3.X-dbg)")
        raise BuildError(f"{prefix} is not a CPython build: no include/python3.*/Python.h")
    if len(found) > 1 and abiflags is not None:
        found = [d for d in found if re.fullmatch(r"python\d+\.\d+" + re.escape(abiflags), d.name)] or found
    if len(found) > 1:
        raise BuildError(f"{prefix} holds several builds ({', '.join(d.name for d in found)}); "
                         f"pass --config (debug picks the 'd' one) or --include-dir with the one to scan")
    return found[0]


def _guess_target(include_root: Path, include_dir: Path, target: Optional[str]) -> targets.TargetInfo:
    """`--target` if given; else the one architecture a Debian forwarder has headers for; else the host."""
    if target:
        return targets.target(target)
    pyconfig = _within(include_dir / "pyconfig.h")
    if pyconfig.is_file() and "SIZEOF_VOID_P" not in pyconfig.read_text(errors="replace"):
        present = [t for t in targets.TARGETS.values()
                   if _within(include_root / t.multiarch / include_dir.name / "pyconfig.h").is_file()]
        if len(present) == 1:
            return present[0]
    return targets.host()


def _config_of(pyconfig: Path, config: Optional[str]) -> str:
    if config is not None:
        if config not in CONFIGS:
            raise BuildError(f"unknown --config {config!r}; choose one of: {', '.join(CONFIGS)}")
        return config
    defines = pyconfig_defines(pyconfig)
    if "Py_GIL_DISABLED" in defines:
        return "free-threaded"
    return "debug" if "Py_DEBUG" in defines else "release"


def _real(path) -> Path:
    """`path` with its symlinks resolved; under another process's root, within it (process_root)."""
    return Path(resolve(path))


def _within(path) -> Path:
    """`path` as it is; under another process's root, its symlinks resolved within that root (the
    kernel would resolve an absolute one against this machine's root)."""
    return Path(resolve(path)) if split(path) else Path(path)


def from_prefix(prefix, source=None, target=None, config=None, pyconfig=None, include_dir=None,
                sysroot=None, abiflags: Optional[str] = None, vendor: str = identity.UPSTREAM,
                cflags: Optional[str] = None) -> BuildInputs:
    """The build installed under `prefix` (a `--prefix` install or Debian's unpacked `usr/`); its
    core's flags from `cflags`, else from the prefix's installed Makefile."""
    prefix = _real(prefix)
    if abiflags is None and config is not None:
        abiflags = {"release": "", "debug": "d", "free-threaded": "t"}.get(config)
    inc = _real(include_dir) if include_dir else _find_include_dir(prefix, abiflags)
    t = _guess_target(inc.parent, inc, target)
    forwarded = Path(t.multiarch, inc.name, "pyconfig.h")
    real = _within(inc.parent / forwarded)
    inc, root = process_headers.readable(inc, (str(forwarded), str(real)) if real.is_file() else None)
    return _assemble(inc, root, t, pyconfig=pyconfig, config=config, source=source, sysroot=sysroot,
                     vendor=vendor, cflags=cflags, prefix=prefix)


def from_source(source, pyconfig, target=None, config=None, sysroot=None,
                vendor: str = identity.UPSTREAM) -> BuildInputs:
    """A bare CPython source tree with a configure-made pyconfig.h (and the core's flags from the
    Makefile configure made beside it, when there is one)."""
    source = _real(source)
    inc = _within(source / "Include")
    if not (inc / "Python.h").is_file():
        raise BuildError(f"{source} is not a CPython source tree (no Include/Python.h)")
    if pyconfig is None:
        raise BuildError("a source tree needs --pyconfig (the pyconfig.h configure made for the build)")
    real = _real(pyconfig)
    if not real.is_file():
        raise BuildError(f"pyconfig.h {real} does not exist")
    t = targets.target(target) if target else targets.host()
    mk = real.parent / "Makefile"
    cflags = makefile_cflags(mk) if mk.is_file() else None
    return _assemble(inc, inc, t, pyconfig=real, config=config, source=source, sysroot=sysroot, vendor=vendor,
                     cflags=cflags)


def from_python(python: str = sys.executable, source=None, config=None) -> BuildInputs:
    """The build of interpreter `python`, found by running it (never importing it here): its
    headers, target, config and core flags as it reports them."""
    info = describe(python)
    inc = Path(info["include"])
    if not (inc / "Python.h").is_file():
        raise BuildError(f"{python} has no C headers at {inc} (install its -dev package)")
    t = targets.by_multiarch(info["multiarch"]) or targets.host()
    return _assemble(_real(inc), _real(inc).parent, t, config=config or native_config(info), source=source,
                     vendor=info["vendor"] or identity.UPSTREAM, cflags=info["cflags"],
                     prefix=_real(inc.parent.parent))


def _assemble(inc: Path, root: Path, t: targets.TargetInfo, *, pyconfig=None, config=None, source=None,
              sysroot=None, vendor: str = identity.UPSTREAM, cflags: Optional[str] = None,
              prefix: Optional[Path] = None) -> BuildInputs:
    """The last steps of every entry, once the headers (`inc`, under `root`) and the target `t`
    are known: the pyconfig.h that applies (`pyconfig`, else the one of `inc` for `t`), the config
    (`config`, else what that pyconfig.h says), the core's flags (`cflags`, else the installed
    Makefile of `prefix`), checked."""
    real = _real(pyconfig) if pyconfig else _real_pyconfig(inc, root, t)
    if cflags is None and prefix is not None:
        mk = _installed_makefile(prefix, inc, t)
        cflags = makefile_cflags(mk) if mk else None
    return checked(BuildInputs(inc, root, real, t, _config_of(real, config),
                                _real(source) if source else None, _real(sysroot) if sysroot else None,
                                vendor, cflags))


def describe(python: str) -> dict:
    """What interpreter `python` says of its build (identity.running()), by running identity.py
    with it (never importing it here), isolated and without `site`: no `.pth` file or
    sitecustomize of its (a JIT loaded at startup) runs."""
    try:
        proc = children.run([python, "-I", "-S", identity.__file__], f"{python} (asked what build it is)",
                            BuildError, timeout=120, errors="replace")
        if not proc.returncode:
            return json.loads(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        raise BuildError(f"cannot run {python}: {getattr(e, 'strerror', None) or e}") from None
    raise BuildError(interpreter_failure(python, proc.stderr))


def shared_libpython(info: dict) -> Optional[Path]:
    """The shared libpython of a described interpreter (where its DWARF is), or None if static."""
    for name in (info.get("soname"), info.get("ldlibrary")):
        if name and (name.endswith(".so") or ".so." in name):
            p = Path(info["libdir"]) / name
            if p.is_file():
                return _real(p)
    return None


def native_config(info: dict) -> str:
    """The config a described interpreter was built as: release, debug or free-threaded."""
    flags = info["config"]
    return "free-threaded" if flags["Py_GIL_DISABLED"] else "debug" if flags["Py_DEBUG"] else "release"


def interpreter_libpython(python: str = sys.executable) -> Optional[Path]:
    """The shared libpython interpreter `python` runs on (found by running it), or None if it is
    linked statically."""
    return shared_libpython(describe(python))


def checked(b: BuildInputs) -> BuildInputs:
    read_version(b.include_dir)
    # a configure-made pyconfig.h defines it once; Windows's PC/pyconfig.h once per `#ifdef MS_WIN64` branch
    sizes = re.findall(r"^\s*#\s*define\s+SIZEOF_VOID_P[ \t]+(\d+)", b.pyconfig.read_text(errors="replace"), re.M)
    if not sizes:
        raise BuildError(f"{b.pyconfig} defines no SIZEOF_VOID_P: not a configure-made pyconfig.h")
    size = sizes[-1] if b.target.system != "windows" else str(b.target.pointer_size) \
        if str(b.target.pointer_size) in sizes else sizes[0]
    if int(size) != b.target.pointer_size:
        raise BuildError(f"{b.pyconfig} is for {size}-byte pointers but target {b.target.triple} has "
                         f"{b.target.pointer_size}: pass the pyconfig.h of that target, or the right --target")
    return b


digest_files = identity.digest_files
headers_digest = identity.headers_digest


def header_files(b: BuildInputs) -> list[Path]:
    """Every header of the build's include directory (identity.header_files)."""
    return sorted(Path(p) for p in identity.header_files(str(b.include_dir)))
