"""Translation units of a build: what to parse, with which flags, and what each unit owns.

The installed headers form one unit (Python.h, then every other header, with `Py_BUILD_CORE`
so internal/ is in reach). A source tree adds its `.c` files (see `sources.py`).
"""
from __future__ import annotations

import os

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from .build_inputs import BuildInputs, header_files, pyconfig_defines
from .clang_headers import builtin_include
from .clang_scan import Unit
from .targets import system_includes


@lru_cache(maxsize=1)
def header_rules() -> dict:
    return yaml.safe_load(resources.files("offsets").joinpath("data/headers.yaml").read_text())


def base_args(b: BuildInputs) -> list[str]:
    """Compiler arguments every unit of the build shares: target, system and CPython includes."""
    args = ["-x", "c", "-std=gnu11", "-target", b.target.triple, *b.target.clang_args, "-nostdinc",
            "-ferror-limit=0"]
    dirs = [builtin_include(), *system_includes(b.target, b.sysroot)]
    if b.target.system == "windows":    # mingw-w64's intrin.h first: clang's MSVC one clashes with its others
        dirs.append(dirs.pop(0))
    for d in dirs:
        args += ["-isystem", str(d)]
    if b.pyconfig_h.parent != b.include_dir:
        args += ["-I", str(b.pyconfig_h.parent)]
    args += ["-I", str(b.include_dir), "-I", str(b.include_dir / "internal")]
    if b.include_root != b.include_dir:
        args += ["-I", str(b.include_root)]
    return args + list(b.defines())


def roots(b: BuildInputs) -> tuple[tuple[str, str], ...]:
    """How absolute paths become the relative names of `defined_in` (`Include/...`, `Objects/...`);
    the build's pyconfig.h is `Include/pyconfig.h` wherever it is (Debian's multiarch directory)."""
    r = [(str(b.pyconfig_h), "Include/pyconfig.h"), (str(b.include_dir) + "/", "Include/")]
    if b.source:
        r.append((str(b.source) + "/", ""))
    return tuple(r)


def header_unit(b: BuildInputs) -> tuple[Unit, list[str]]:
    """The one unit that includes every header, and the headers it leaves out (with why)."""
    order, skipped = _header_order(b)
    return _unit(b, "<headers>", order, ["-DPy_BUILD_CORE=1"]), skipped


def outside_core_unit(b: BuildInputs) -> Unit:
    """Python.h and every public header, as an extension includes them: without `Py_BUILD_CORE`. The
    values its constants take are the ones a unit outside the core sees (scanner.core_only)."""
    order, _ = _header_order(b)
    return _unit(b, "<headers without Py_BUILD_CORE>", [h for h in order if not h.startswith("internal/")], [])


def _unit(b: BuildInputs, name: str, order: list, defines: list) -> Unit:
    text = "".join(f'#include "{h}"\n' for h in order)
    return Unit(name=name, path=str(b.include_dir / "__offsets_headers__.c"), args=tuple(base_args(b) + defines),
                roots=roots(b), owned=(str(b.include_dir) + "/", str(b.pyconfig_h)), text=text)


def _header_order(b: BuildInputs) -> tuple[list, list]:
    """The headers the header unit includes, in order (Python.h first, each after its prerequisites),
    and the ones it leaves out (with why)."""
    rules = header_rules()
    skip, prereq = dict(rules["skip"]), rules["prerequisites"]
    sysdirs = (builtin_include(), *system_includes(b.target, b.sysroot))
    for h, needed in rules.get("needs", {}).items():
        lacking = [n for n in needed if not any((d / alt).is_file() for d in sysdirs for alt in n.split("|"))]
        if lacking:
            skip[h] = f"not scanned: missing dependency {lacking[0]} (not in the {b.target.triple} C include directories)"
    defines = pyconfig_defines(b.pyconfig)
    for h, g in rules.get("generated", {}).items():
        if g["when"] in defines and not (b.include_dir / g["includes"]).is_file():
            skip[h] = (f"not scanned: pyconfig.h defines {g['when']}, so it includes {g['includes']}, which the "
                       f"build generates and {b.include_dir.name}/ lacks; it declares no structs")
    top = sorted(p.name for p in b.include_dir.glob("*.h"))
    internal = sorted("internal/" + p.name for p in (b.include_dir / "internal").glob("*.h"))
    order = ["Python.h"]
    headers = top + internal
    if b.target.system == "windows":
        last = rules.get("windows_last", {})
        headers = [h for h in headers if h not in last] + [h for h in headers if h in last]
    for h in headers:
        for p in prereq.get(h, []) + [h]:
            if p not in order and p not in skip and (b.include_dir / p).is_file() \
                    and not _only_through_parent(b.include_dir / p):
                order.append(p)
    return order, [f"Include/{h}: {skip[h]}" for h in top if h in skip]


_NOT_DIRECTLY = re.compile(r'^\s*#\s*error\s+"this header[^"]*must not be included directly"', re.M)


def _only_through_parent(header: Path) -> bool:
    """A header that refuses direct inclusion (`#error ... must not be included directly`): its
    parent includes it (3.14's pycore_crossinterp_data_registry.h); if none does, it is reported
    as not reached."""
    return bool(_NOT_DIRECTLY.search(header.read_text(errors="replace")))


def unreached_headers(b: BuildInputs, files_read) -> list[str]:
    """Headers of the include directory that no unit read (reported, never silently dropped)."""
    read = {_identity(f) for f in files_read}
    return [f"Include/{p.relative_to(b.include_dir)}: not reached from Python.h with this config"
            for p in header_files(b) if _identity(p) not in read]


def _identity(path) -> tuple:
    """The file a path names, however it is spelled (links, `..`): its device and inode."""
    try:
        st = os.stat(path)
    except OSError:
        return ("missing", str(path))
    return (st.st_dev, st.st_ino)
