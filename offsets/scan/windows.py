"""Windows builds: the inputs of python.org's Windows builds (x64, and arm64), as its PCbuild projects compile the core.

A Windows build's headers are the source tree's `Include/` (or an installed `include/python3.X/`
of the same version), its `pyconfig.h` is the tree's own `PC/pyconfig.h` (`PC/pyconfig.h.in` from
3.13, which PCbuild copies, uncommenting `Py_GIL_DISABLED` for a free-threaded build), and the
core's defines are those PCbuild's `pyproject.props` and `pythoncore.vcxproj` add (`CORE_DEFINES`).
Where no Windows `pyconfig.h` of that exact version is at hand, another version's stands in, and
the table says so (`model.Build.stand_in`).
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Optional

from .. import data_cache
from ..atomic_write import replace, write_folder
from ..errors import BuildError
from ..layout import identity
from . import build_inputs, targets

#: What PCbuild defines for the core (pythoncore.vcxproj and pyproject.props) of an x64 build;
#: `NDEBUG` becomes `_DEBUG` in a debug build (then PC/pyconfig.h defines `Py_DEBUG`).
CORE_DEFINES = ("WIN32", "_WIN64", "_USRDLL", "Py_BUILD_CORE", "Py_BUILD_CORE_BUILTIN", "Py_ENABLE_SHARED",
                "_Py_HAVE_ZLIB")
#: The targets pyproject.props's `_PlatformPreprocessorDefinition` adds `_WIN64` for: x64 only (an
#: ARM64 build's core gets none; its compiler defines `_WIN64` and `_M_ARM64` itself, as MSVC does).
WIN64_DEFINED = ("x86_64-pc-windows-msvc",)
#: The line of PC/pyconfig.h.in that PCbuild uncomments for a free-threaded build (3.13+).
GIL_LINE = "/* #define Py_GIL_DISABLED 1 */"


def core_cflags(config: str, triple: str = "x86_64-pc-windows-msvc") -> str:
    """The core's defines for a build of `triple` as a command line (`build_inputs.BuildInputs.cflags`)."""
    defines = [d for d in CORE_DEFINES if d != "_WIN64" or triple in WIN64_DEFINED]
    return " ".join(f"-D{d}" for d in defines + (["_DEBUG"] if config == "debug" else ["NDEBUG"]))


def source_pyconfig(tree: Path) -> Path:
    """The Windows pyconfig.h of a CPython source tree: `PC/pyconfig.h`, or `PC/pyconfig.h.in` (3.13+)."""
    for rel in ("PC/pyconfig.h.in", "PC/pyconfig.h"):
        if (tree / rel).is_file():
            return tree / rel
    raise BuildError(f"{tree} has no PC/pyconfig.h or PC/pyconfig.h.in: not a CPython source tree with Windows's files")


def pyconfig(path: Path, config: str) -> Path:
    """`path` (PC/pyconfig.h or PC/pyconfig.h.in) as PCbuild writes it for `config`, as a file named
    pyconfig.h (content-addressed in the cache): for free-threaded, its `Py_GIL_DISABLED` line
    uncommented (a pyconfig.h without that line is refused: that version has no free-threaded build)."""
    text = path.read_text(errors="replace")
    if config == "free-threaded":
        if GIL_LINE not in text:
            raise BuildError(f"{path} has no {GIL_LINE!r} line: no free-threaded Windows build of its version")
        text = text.replace(GIL_LINE, "#define Py_GIL_DISABLED 1")
    data = text.encode()
    out = data_cache.folder() / "windows" / "pyconfig" / hashlib.sha256(data).hexdigest()[:32] / "pyconfig.h"
    if not out.is_file() or out.read_bytes() != data:
        replace(out, data)
    return out


def headers_alone(include_dir: Path) -> Path:
    """An installed include directory (pyenv's `include/python3.X`) without its own (Linux)
    pyconfig.h, copied into the cache: `Python.h` includes "pyconfig.h" from beside itself first."""
    if not (include_dir / "pyconfig.h").exists():
        return include_dir
    files = sorted(p for p in include_dir.rglob("*.h") if p.name != "pyconfig.h" or p.parent != include_dir)
    digest = hashlib.sha256()
    for p in files:
        digest.update(str(p.relative_to(include_dir)).encode() + b"\0" + p.read_bytes() + b"\0")
    out = data_cache.folder() / "windows" / "include" / digest.hexdigest()[:32] / include_dir.name
    if not (out / "Python.h").is_file():
        def fill(tmp: Path) -> None:
            for p in files:
                dest = tmp / p.relative_to(include_dir)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, dest)
        write_folder(out, fill)
    return out


def inputs(include_dir: Path, pyconfig_in: Path, config: str, triple: str = "x86_64-pc-windows-msvc",
           stand_in: Optional[str] = None, vendor: str = identity.UPSTREAM) -> build_inputs.BuildInputs:
    """The inputs of a Windows build: its headers (`include_dir`), its Windows pyconfig.h (or the
    one standing in, with `stand_in` saying which and why) made for `config`, PCbuild's defines."""
    t = targets.target(triple)
    if t.system != "windows":
        raise BuildError(f"{triple} is not a Windows target")
    inc = headers_alone(Path(include_dir))
    return build_inputs.checked(build_inputs.BuildInputs(
        inc, inc, pyconfig(Path(pyconfig_in), config), t, config, None, None, vendor, core_cflags(config, triple),
        stand_in))
