"""`open_regular`: open a file for reading only if it is a regular file, and never wait to open it;
`read_text`: the text of one, at most `MAX_TABLE_BYTES` of strict UTF-8 (a table, a watch list);
`read_most`: what `f.read(most)` reads, without the buffer of `most` bytes it makes first.

Every reader of a file a user names (a table, a watch list, a needs list, a binary) or of the cache
(proofs, digests, own tables, the scan's entries) opens it here: `open()` of a FIFO waits for a
writer forever, and a device or a folder is no file to read either. The file is opened non-blocking
(which changes nothing for a regular file) and checked on its descriptor (no race between a check
and the open); anything else is `NotRegularFile`, which is an OSError (a reader that takes an
unreadable file as a miss or a refusal does so for this too) and an OffsetsError (one line, exit 2).
Standard library only: `offsets diff --watch` reads its watch file here without the scan extra, and
`layout/yaml_strict.py` reads each table here before parsing it.
"""
from __future__ import annotations

import os
import stat

from .errors import NotRegularFile, TableError

#: The largest table read, in bytes (docs/table-format.md): the largest generated table is about
#: 1 MB; this leaves sixteen times that, and keeps a load well under a second and 200 MB.
MAX_TABLE_BYTES = 16 * 1024 * 1024

#: How a file is opened: for reading, not inherited by a child; non-blocking where POSIX has FIFOs
#: (an open of one returns at once); binary on Windows (os.open's default there is text: \r\n read as \n)
_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
          | getattr(os, "O_NOINHERIT", 0))

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_regular(path, mode: str = "rb", **text):
    """`open(path, mode, **text)` for reading, of a regular file only (NotRegularFile otherwise)."""
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
            raise NotRegularFile(os.fspath(path), kind)
        if _FLAGS & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        f = os.fdopen(fd, mode, **text)
    except BaseException:
        os.close(fd)
        raise
    return f


def read_text(path, what: str = "table", limit: int = MAX_TABLE_BYTES) -> str:
    """The text of a regular file of at most `limit` bytes, decoded as UTF-8; `TableError` otherwise."""
    try:
        with open_regular(path) as f:
            st = os.fstat(f.fileno())
            if st.st_size > limit:
                raise TableError(_too_big(what, path, st.st_size, limit))
            data = read_most(f, limit + 1)
    except OSError as e:
        raise TableError(f"cannot read {what} {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise TableError(_too_big(what, path, len(data), limit))
    return decode(data, f"{what} {path}")


def read_most(f, most: int):
    """`f.read(most)`, without the buffer of `most` bytes CPython's read(n) makes first: that costs
    about as much as reading a small file again, and raises MemoryError where the address space is
    limited (RLIMIT_AS) to less than it. Read in pieces of 64 KiB; str or bytes, as `f` reads."""
    pieces = []
    while most > 0:
        piece = f.read(min(most, 1 << 16))
        if not piece:
            break
        pieces.append(piece)
        most -= len(piece)
    return pieces[0][:0].join(pieces) if pieces else f.read(0)


def decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TableError(f"{where}: not UTF-8 (byte {data[e.start]:#04x} at line {line}); "
                         f"tables are UTF-8 text") from None


def _too_big(what: str, path, size: int, limit: int) -> str:
    return (f"{what} {path} is {size} bytes, more than the {limit // (1024 * 1024)} MiB a table may have "
            f"(docs/table-format.md)")
