"""The include directory of a build inside another process's root, as the compiler must read it.

clang opens `/proc/PID/root/.../Python.h` through the kernel, which resolves a symlink to an
absolute path below it against this machine's root, not the process's (`offsets/process_root.py`).
When some header of the directory is such a link, the compiler is given a mirror instead: the same
tree of names in the cache, each a link to the file the process itself would read
(`/proc/PID/root` + a path without symlinks). Content-addressed by those links, so a rescan of the
same process reuses it. A directory without such links is used as it is.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional

from .. import data_cache
from ..atomic_write import write_folder
from ..remote.process_root import escaping, resolve, split


def links(directory: Path) -> list:
    """(name relative to `directory`, the file the process reads for it) for every file below it,
    following directories as the process resolves them."""
    out, todo, seen = [], [(str(directory), "")], set()
    while todo:
        here, rel = todo.pop()
        st = os.stat(here)
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        for e in os.scandir(here):
            real = resolve(e.path) if e.is_symlink() else e.path
            name = os.path.join(rel, e.name)
            if os.path.isdir(real):
                todo.append((real, name))
            elif os.path.isfile(real):
                out.append((name, real))
    return sorted(out)


def readable(include_dir: Path, pyconfig: Optional[tuple] = None) -> tuple:
    """(include directory, include root) for the compiler: `include_dir` and its parent when the
    kernel reads every file below it as the process does, else a mirror in the cache and the mirror's
    root. `pyconfig` (name under the root, file): Debian's per-architecture pyconfig.h the mirror's
    root must hold too (`x86_64-linux-gnu/python3.13/pyconfig.h`)."""
    if split(include_dir) is None or not escaping(include_dir):
        return include_dir, include_dir.parent
    entries = [(os.path.join(include_dir.name, name), real) for name, real in links(include_dir)]
    if pyconfig is not None:
        entries.append(pyconfig)
    key = hashlib.sha256(repr(sorted(entries)).encode()).hexdigest()[:32]
    root = data_cache.folder() / "process-headers" / key
    if not root.is_dir():
        def link(tmp: Path) -> None:
            for name, real in entries:
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                os.symlink(real, tmp / name)

        write_folder(root, link)                  # another scan may make it first: the same links
    return root / include_dir.name, root
