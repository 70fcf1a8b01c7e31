"""Write an output file safely: the whole new content, or nothing, and never anything but a file.

Every writer of the package (scan -o, report -o, the compact tables, the C headers, the matrix) goes
through `write`, and every cache entry through `replace`, the same steps without the checks an
output needs (the cache's own entries, data_cache.py), and every
folder made whole for the cache through `write_folder` (a configured tree, dtrace's header, a
process's headers). The bytes go to a temporary file created exclusively (O_EXCL, a name no one can
predict) in the target's own folder, which is then renamed over the target: a reader sees the old
file or the new one, two writers cannot trip over each other's temporary file, and a planted symlink
is never followed. A target that exists and is not a regular file (a device, a FIFO, a folder,
/proc) is refused with an `OutputError` before anything is written; so is any `OSError`. A
command's output (`-o`) is checked by `output` too: its folder exists, and it is not one of the
files the command reads.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from .errors import OutputError
from .regular_file import open_regular

STDOUT = "-"
#: Paths that name streams of a process (/dev/stdout is whatever fd 1 is) or kernel objects.
_KERNEL = ("/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/", "/sys/")


def target(path, probe: bool = False) -> Path:
    """The file `path` names, checked before any work is done: it does not exist yet, or it is a
    regular file (through a symlink too: the file the link names is the one replaced). With
    `probe`, a temporary file is also made and removed in its folder, to fail before long work."""
    given = os.path.abspath(path)
    if given.startswith(_KERNEL):
        raise OutputError(f"refusing to write {given}: it is a stream or a kernel file, not a regular file "
                          f"(give '-' for standard output)")
    path = Path(os.path.realpath(path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if probe:
            _probe(path.parent)
        return path
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise OutputError(f"refusing to write {path}: it is {kind}; give the path of a file "
                          f"(or '-' for standard output)")
    if probe:
        _probe(path.parent)
    return path


def _probe(folder: Path) -> None:
    """A file can be created in `folder`, or in its nearest existing ancestor when `write` would
    make the folders (nothing is left behind, no folder made)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        if not folder.is_dir():
            raise NotADirectoryError(20, "Not a directory")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".offsets-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise OutputError(f"cannot write in {folder}: {e.strerror or e}") from None


def unchanged(path: Path, data: bytes) -> bool:
    """True if `path` is a regular file holding exactly `data` (read only when the sizes agree)."""
    try:
        if os.stat(path).st_size != len(data):
            return False
        with open_regular(path) as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


def output(path, inputs=(), probe: bool = False) -> Path:
    """A command's output file `path` (`target`), checked before any work: its folder exists (a
    command makes none), and it is none of `inputs`, the files the command reads (the same file by
    device and inode: through a symlink or a hard link too), which writing it would replace."""
    dest = target(path)
    if not dest.parent.is_dir():
        raise OutputError(f"cannot write {path}: the folder {dest.parent} does not exist (make it first)")
    try:
        st = os.stat(dest)
    except OSError:
        st = None
    for i in inputs if st is not None else ():
        try:
            same = os.path.samestat(st, os.stat(i))
        except OSError:
            continue
        if same:
            raise OutputError(f"refusing to write {path}: it is the input {i}, which the output would replace; "
                              f"give another output file")
    if probe:
        _probe(dest.parent)
    return dest


def write(path, content, if_changed: bool = False, inputs=None) -> bool:
    """Write `content` (str, as UTF-8, or bytes) to `path`, or to standard output if `path` is '-'.
    With `if_changed`, a file already holding these bytes is left alone. With `inputs` (a command's
    output), `path` is checked by `output` instead, and no folder is made. True if written."""
    data = content.encode() if isinstance(content, str) else content
    if str(path) == STDOUT:
        out = getattr(sys.stdout, "buffer", None)
        if out is None:                     # a text stream (redirected in process)
            sys.stdout.write(data.decode())
            return True
        sys.stdout.flush()
        out.write(data)
        out.flush()
        return True
    dest = target(path) if inputs is None else output(path, inputs)
    if if_changed and unchanged(dest, data):
        return False
    check = target if inputs is None else (lambda p: output(p, inputs))
    try:
        mask = os.umask(0)
        os.umask(mask)
        # still a file (or nothing), and none of the inputs, just before the rename
        replace(dest, data, mode=0o666 & ~mask, before_rename=lambda: check(dest), folders=inputs is None)
    except OSError as e:
        raise OutputError(f"cannot write {dest}: {e.strerror or e}") from None
    return True


def write_folder(out, fill) -> Path:
    """Make the folder `out` whole or not at all: `fill(tmp)` fills a private temporary folder
    created beside it, which is then renamed to `out`; when another process made `out` meanwhile,
    theirs is kept (the same content: what a cache folder is named for) and the temporary one
    removed, as it is when `fill` raises. Returns `out`."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        fill(tmp)
        try:
            os.rename(tmp, out)
            tmp = None
        except OSError:              # made meanwhile by another process
            pass
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def replace(path, data: bytes, mode=None, before_rename=None, folders: bool = True) -> None:
    """Put `data` in `path` (its folders made first, unless not `folders`): written to a temporary file created
    exclusively in the same folder, then renamed over `path`, so a reader sees the old file or the
    new one, never a part, and two writers never share a temporary file. The temporary file has
    `mode` (default: only the owner may read it); `before_rename()` runs just before the rename.
    Any `OSError` is raised as it is, and no temporary file is left behind."""
    folder = os.path.dirname(os.path.abspath(path))
    if folders:
        os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
