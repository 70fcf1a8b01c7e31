"""macOS builds: the inputs of python.org's macOS builds (its universal2 framework: arm64 and x86_64).

A macOS build's headers are the version's `Include/` (the pristine sources, or an installed
`include/python3.X/` without its own pyconfig.h); Apple's C library headers are zig's copy of them
(scan/zig.py); its `pyconfig.h` is written from the facts recorded of python.org's framework build
(`data/macos_pyconfig.yaml`, made by `python -m offsets.tools.macos_pyconfig`): the macros its own
pyconfig.h defines that its headers read, and the feature-test macros Apple's headers read. No
python.org pyconfig.h of every patch version is at hand: where the facts are of another, the table
says which stands in (`model.Build.stand_in`). No macOS binary is at hand to check a table against.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional

import yaml

from .. import data_cache
from ..atomic_write import replace
from ..errors import BuildError
from ..layout import identity
from . import build_inputs, targets
from .windows import headers_alone

FACTS = "data/macos_pyconfig.yaml"
#: What python.org's macOS core is compiled with beyond pyconfig.h (`PY_CORE_CFLAGS`): a release
#: build's `NDEBUG` (`Py_BUILD_CORE` is every header unit's own).
CORE_CFLAGS = "-DNDEBUG"


@lru_cache(maxsize=1)
def facts() -> dict:
    """The recorded facts: `source` (where they were read) and `builds` (version -> its record)."""
    return yaml.safe_load(resources.files("offsets").joinpath(FACTS).read_text())


def pyconfig_text(version: str) -> str:
    """A pyconfig.h that defines what python.org's macOS build of `version` defines (of the facts)."""
    builds = facts()["builds"]
    if version not in builds:
        raise BuildError(f"no facts of python.org's macOS pyconfig.h {version} in {FACTS} "
                         f"(at hand: {', '.join(builds)})")
    rec = builds[version]
    lines = [f"/* python.org's macOS framework pyconfig.h {version}, as {FACTS} records it",
             f"   (read from {facts()['source']['repository']} {rec['commit']}:{rec['path']}) */",
             "#ifndef Py_PYCONFIG_H", "#define Py_PYCONFIG_H"]
    lines += [f"#define {name} {value}".rstrip() for name, value in rec["defines"].items()]
    return "\n".join(lines + ["#endif /* Py_PYCONFIG_H */", ""])


def pyconfig(version: str) -> Path:
    """`pyconfig_text(version)` as a file named pyconfig.h (content-addressed in the cache)."""
    data = pyconfig_text(version).encode()
    out = data_cache.folder() / "macos" / "pyconfig" / hashlib.sha256(data).hexdigest()[:32] / "pyconfig.h"
    if not out.is_file() or out.read_bytes() != data:
        replace(out, data)
    return out


def inputs(include_dir: Path, pyconfig_version: str, triple: str, stand_in: Optional[str] = None,
           vendor: str = identity.UPSTREAM) -> build_inputs.BuildInputs:
    """The inputs of a macOS release build: its headers (`include_dir`) and the pyconfig.h of the
    facts of python.org's `pyconfig_version` (standing in, with `stand_in` saying so, for another)."""
    t = targets.target(triple)
    if t.system != "macos":
        raise BuildError(f"{triple} is not a macOS target")
    inc = headers_alone(Path(include_dir))
    return build_inputs.checked(build_inputs.BuildInputs(
        inc, inc, pyconfig(pyconfig_version), t, "release", None, None, vendor, CORE_CFLAGS, stand_in))
