"""`open_regular`: open a file for reading only if it is a regular file, and never wait to open it.

Every reader of a file a user names (a table, a watch list, a needs list, a binary) or of the cache
(proofs, digests, own tables, the scan's entries) opens it here: `open()` of a FIFO waits for a
writer forever, and a device or a folder is no file to read either. The file is opened non-blocking
(which changes nothing for a regular file) and checked on its descriptor (no race between a check
and the open); anything else is `NotRegularFile`, which is an OSError (a reader that takes an
unreadable file as a miss or a refusal does so for this too) and an OffsetsError (one line, exit 2).
"""
from __future__ import annotations

import os
import stat

from .errors import NotRegularFile

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_regular(path, mode: str = "rb", **text):
    """`open(path, mode, **text)` for reading, of a regular file only (NotRegularFile otherwise)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
            raise NotRegularFile(os.fspath(path), kind)
        os.set_blocking(fd, True)
        f = os.fdopen(fd, mode, **text)
    except BaseException:
        os.close(fd)
        raise
    return f
