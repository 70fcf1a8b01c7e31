"""Paths inside another process's root (`/proc/PID/root/...`), resolved as that process resolves them.

The kernel follows `/proc/PID/root` into the process's root (a container's own files), but every
absolute symlink met below it, and every `..` above it, it resolves against the *reader's* root: a
container's `/opt/py/include -> /srv/headers` read from the host names the host's `/srv/headers`.
`os.path.realpath` and `Path.resolve()` go wrong sooner: they replace `/proc/PID/root` itself with
what readlink shows there (`/` for a container), so the whole path names the host's file.

So a path under a process's root is resolved here one component at a time within that root (as
openat2's RESOLVE_IN_ROOT does): an absolute link restarts at the root, `..` stops at it. The result
is `/proc/PID/root` followed by a path without symlinks, which the kernel then reads as the process
would. Any other path is resolved by `os.path.realpath`.

Used by the remote reader (`offsets identify`) and by the scanner (`offsets scan --prefix
/proc/PID/root/PREFIX`, the command identify's refusal gives).
"""
from __future__ import annotations

import os
import re
from typing import Optional

#: `/proc/PID/root` (or a thread's `/proc/PID/task/TID/root`, or `/proc/self/root`) at a path's start.
PROCESS_ROOT = re.compile(r"/proc/(?:\d+|self|thread-self)(?:/task/\d+)?/root(?=/|$)")
#: The most symlinks followed in one path (the kernel's own limit is 40).
MAX_LINKS = 40


def split(path) -> Optional[tuple]:
    """(`/proc/PID/root`, the rest as that process sees it, from `/`) for a path under a process's
    root; None for any other path. Only slashes are normalised: `..` is the resolver's to follow."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        text = os.path.join(os.getcwd(), text)
    text = re.sub(r"/{2,}", "/", text)
    m = PROCESS_ROOT.match(text)
    if m is None:
        return None
    return m.group(0), text[m.end():] or "/"


def resolve_in(root: str, path: str) -> str:
    """`path`, as the process whose root is `root` sees it, with every symlink resolved within that
    root. Components that do not exist are kept as they are, as `os.path.realpath` keeps them; so
    are the rest after MAX_LINKS links (opening it then fails with the kernel's ELOOP)."""
    found = _walk(root, path, [0])
    return found[len(root):] if root else found


def resolve(path) -> str:
    """`path` with every symlink resolved, like `os.path.realpath`, except that under a process's
    root (the path's own, or one a symlink leads into) it is resolved within that root:
    `/proc/PID/root` + a path without symlinks."""
    parts = split(path)
    if parts is not None:
        return _walk(parts[0], parts[1], [0])
    return _walk("", os.path.join(os.getcwd(), os.fspath(path)), [0])


def _walk(root: str, path: str, links: list) -> str:
    """`root` + `path` resolved within `root` ('' for this process's own, where a link into
    another process's root continues within that one); `links` counts the links followed."""
    done: list = []
    todo = [c for c in path.split("/") if c][::-1]
    while todo:
        part = todo.pop()
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        try:
            target = os.readlink(root + "/" + "/".join(done + [part]))
        except OSError:          # not a link, or not there
            done.append(part)
            continue
        links[0] += 1
        if links[0] > MAX_LINKS:
            done += [part] + todo[::-1]
            break
        if target.startswith("/"):
            inner = None if root else split(target)
            if inner is not None:
                return _walk(inner[0], inner[1] + "/" + "/".join(todo[::-1]), links)
            done = []
        todo += [c for c in target.split("/") if c][::-1]
    return root + "/" + "/".join(done)


def at(root: str, path: str) -> str:
    """What to open for `path` as the process whose root is `root` sees it; `root` '' is this
    process's own root, where the kernel resolves `path` correctly itself."""
    return root + resolve_in(root, path) if root else path


def escaping(directory) -> list:
    """The files and directories below `directory` (a resolved path under a process's root) that
    the kernel would read from outside that root, or from elsewhere in it than the process would:
    symlinks to absolute paths, or with `..` past the root. [] for a path under no process root."""
    parts = split(directory)
    if parts is None:
        return []
    root = parts[0]
    out, todo, seen = [], [os.fspath(directory)], set()
    while todo:
        here = todo.pop()
        st = _stat(here)
        if st is None or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for e in entries:
            if not e.is_symlink():
                if e.is_dir(follow_symlinks=False):
                    todo.append(e.path)
                continue
            real = resolve(e.path)
            mine, kernels = _stat(real), _stat(e.path)
            if mine is None and kernels is None:
                continue          # dangling either way: the reader reports a missing file
            if mine is None or kernels is None or not os.path.samestat(mine, kernels):
                out.append(e.path)
            elif os.path.isdir(real) and split(real)[0] == root:
                todo.append(real)
    return sorted(out)


def _stat(path):
    try:
        return os.stat(path)
    except OSError:
        return None
