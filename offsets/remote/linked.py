"""The libpython an interpreter executable loads, found where the dynamic loader finds it.

A build configured with `--enable-shared` (pyenv's, python.org's, uv's, Docker's images) keeps its
interpreter in `libpython3.X.so`; its `python3.X` only starts it. `offsets identify --binary
python3.X` then reads the libpython that executable needs: the DT_NEEDED entry named `libpython*`,
searched as glibc's ld.so searches a name without a slash, in its order:

1. the executable's DT_RPATH, only when it has no DT_RUNPATH;
2. LD_LIBRARY_PATH, for a file of this machine's own root (a process in a container has an
   environment of its own, which is not read here);
3. its DT_RUNPATH;
4. the directories `/etc/ld.so.conf` names (with its `include`s), which ld.so's cache holds;
5. `/lib` and `/usr/lib` (`/lib64` and `/usr/lib64` first for a 64-bit file).

`$ORIGIN` (or `${ORIGIN}`) is the executable's own directory; an entry with any other `$` token is
passed over. So is a file of another ELF class or CPU, as ld.so passes over it. Not searched: the
`glibc-hwcaps` subdirectories, where no distributor puts a libpython. Under a process's
root (`/proc/PID/root/...`) every directory is read within that root (`process_root.at`).

This is the file the loader would map when the executable starts here, in this environment; where
it matters which file a running process maps, `offsets identify --pid` reads its memory map.
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from typing import Optional

from . import process_root
from .elf import DT_NEEDED, DT_RPATH, DT_RUNPATH, Elf, ElfError

_LIBPYTHON = re.compile(r"libpython\d")
_ORIGIN = re.compile(r"\$(?:ORIGIN\b|\{ORIGIN\})")
#: The most `include` levels of ld.so.conf followed.
_CONF_DEPTH = 8


@dataclass(frozen=True)
class Linked:
    path: str           # the libpython's path (under the executable's process root, if any)
    name: str           # its DT_NEEDED name
    how: str            # where it was found: `DT_RUNPATH /opt/py/lib`, `LD_LIBRARY_PATH /x` ...


@dataclass(frozen=True)
class NotFound:
    needed: tuple       # the executable's DT_NEEDED libpython names (empty: it needs none)
    searched: tuple     # the directories looked in, in order


def libpython(real: str, elf: Elf):
    """The `Linked` libpython of the executable `elf` (at the resolved path `real`), or `NotFound`."""
    names = elf.linked_names()
    needed = tuple(n for n in names.get(DT_NEEDED, ()) if "/" not in n and _LIBPYTHON.match(n))
    if not needed:
        return NotFound((), ())
    root, seen = process_root.split(real) or ("", real)
    origin = os.path.dirname(seen)
    searched = []
    for how, directory in _directories(names, root, origin, elf.bits):
        if directory in searched:
            continue
        searched.append(directory)
        for name in needed:
            candidate = process_root.at(root, os.path.join(directory, name))
            if _loadable(candidate, elf):
                return Linked(candidate, name, f"{how} {directory}")
    return NotFound(needed, tuple(searched))


def _directories(names: dict, root: str, origin: str, bits: int):
    """(how, directory) in ld.so's order, `$ORIGIN` expanded, entries with other tokens left out."""
    def split(how: str, paths) -> list:
        out = []
        for text in paths:
            for d in text.split(":"):
                d = _ORIGIN.sub(lambda m: origin, d) or "."     # an empty entry: the working directory
                if "$" not in d:
                    out.append((how, d if os.path.isabs(d) else os.path.join(os.getcwd(), d)))
        return out

    runpath = names.get(DT_RUNPATH, ())
    found = [] if runpath else split("DT_RPATH", names.get(DT_RPATH, ()))
    library_path = os.environ.get("LD_LIBRARY_PATH")
    if library_path and not root:
        found += split("LD_LIBRARY_PATH", [library_path])
    found += split("DT_RUNPATH", runpath)
    found += [("/etc/ld.so.conf", d) for d in _conf_dirs(root, "/etc/ld.so.conf", 0)]
    defaults = (["/lib64", "/usr/lib64"] if bits == 64 else []) + ["/lib", "/usr/lib"]
    found += [("the default directories", d) for d in defaults]
    return found


def _conf_dirs(root: str, path: str, depth: int) -> list:
    """The directories an ld.so.conf file names, its `include` globs followed (relative to /etc)."""
    try:
        with open(process_root.at(root, path), errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out: list = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("hwcap "):
            continue
        if line.startswith("include ") and depth < _CONF_DEPTH:
            for pattern in line.split()[1:]:
                pattern = pattern if os.path.isabs(pattern) else os.path.join("/etc", pattern)
                for match in sorted(glob.glob(root + pattern)):
                    out += _conf_dirs(root, match[len(root):], depth + 1)
        elif os.path.isabs(line):
            out.append(line)
    return out


def _loadable(path: str, exe: Elf) -> bool:
    """Whether ld.so would take `path` for `exe`: an ELF file of its class and CPU."""
    if not os.path.isfile(path):
        return False
    try:
        with Elf(path) as lib:
            return lib.bits == exe.bits and lib.machine == exe.machine and lib.endian == exe.endian
    except (ElfError, OSError):
        return False
