"""What a source plan reads of a tree, recorded (`Reads`), so a saved plan is used only while all
of it is unchanged (`witness_holds`), and the `#include` lines of a file (`includes_of`)."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
from pathlib import Path

from .. import data_cache
from ..errors import BuildError
from ..regular_file import read_most

SCANNED_DIRS = ("Objects", "Python", "Modules", "Parser")


#: The largest file of a source tree read as text (CPython's largest .c file is about 1 MB).
MAX_TEXT_BYTES = 64 * 1024 * 1024


def _read(path) -> bytes:
    """A file's bytes; `BuildError` for a file larger than `MAX_TEXT_BYTES` or not a regular file."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_TEXT_BYTES:
            raise BuildError(f"{path}: not a regular file of at most {MAX_TEXT_BYTES // (1024 * 1024)} MB; "
                             f"a source tree holds none such")
        return read_most(f, MAX_TEXT_BYTES + 1)


class Reads:
    """The recorder of one plan: every read of the tree goes through it, and it keeps what was
    read (`witness`: file contents by sha256, whether a path is a file or a directory, which
    program `dtrace` is, the `.c` files of the scanned directories), so a saved plan is used only
    while all of it is unchanged. It also remembers, for this plan only, each file's `#include`s
    and where an include was found (files may change between plans)."""

    def __init__(self) -> None:
        self.witness: dict = {}
        self._includes: dict = {}
        self._found: dict = {}

    def text(self, path) -> str:
        data = _read(path)
        self.witness[("sha256", str(path))] = hashlib.sha256(data).hexdigest()
        return data.decode(errors="replace")

    def isfile(self, path) -> bool:
        found = os.path.isfile(path)
        self.witness.setdefault(("isfile", str(path)), found)
        return found

    def isdir(self, path) -> bool:
        found = os.path.isdir(path)
        self.witness.setdefault(("isdir", str(path)), found)
        return found

    def which(self, program: str):
        found = shutil.which(program)
        self.witness[("which", program)] = found
        return found

    def listing(self, source: Path) -> tuple:
        found = listing(source)
        self.witness[("listing", str(source))] = found
        return found

    def includes(self, path: Path) -> tuple:
        """`includes_of` the file at `path`; () for a file that cannot be read as text (clang's
        unit, under its limit, says why)."""
        if path not in self._includes:
            try:
                self._includes[path] = includes_of(self.text(path))
            except (OSError, BuildError):
                self._includes[path] = ()
        return self._includes[path]

    def find(self, name: str, dirs: tuple) -> str:
        """The first `dir/name` that is a file, or ""."""
        key = (name, dirs)
        if key not in self._found:
            self._found[key] = next((path for path in (os.path.normpath(os.path.join(d, name)) for d in dirs)
                                     if self.isfile(path)), "")
        return self._found[key]


def witness_holds(kind: str, path: str, value) -> bool:
    if kind == "isfile":
        return os.path.isfile(path) == value
    if kind == "isdir":
        return os.path.isdir(path) == value
    if kind == "sha256":
        try:
            return data_cache.file_sha256(path) == value
        except OSError:
            return False
    if kind == "which":
        return shutil.which(path) == value
    if kind == "listing":
        return listing(Path(path)) == value
    return False


def listing(source: Path) -> tuple:
    """The `.c` files of the scanned directories and the tree's top-level directories."""
    found = []
    for d in SCANNED_DIRS:
        for root, _, names in os.walk(source / d):
            found += [os.path.join(root, n) for n in names if n.endswith(".c")]
    tops = [e.name for e in os.scandir(source) if e.is_dir()]
    return tuple(sorted(found)), tuple(sorted(tops))


_DIRECTIVE = re.compile(r'^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif|include)\b[ \t]*(.*)$', re.M)


def includes_of(text: str) -> tuple[tuple[bool, str, frozenset, frozenset], ...]:
    """Each `#include` of a file's text (angle?, name) with the macros that must be defined /
    undefined for it to count (only plain #ifdef/#ifndef/#if defined(M) conditions are understood;
    others count)."""
    out, stack = [], []           # stack of (must_defined, must_undefined) for each open #if
    for kind, rest in _DIRECTIVE.findall(text):
        rest = re.sub(r"/\*.*?\*/|//.*", "", rest).strip()
        if kind in ("ifdef", "ifndef", "if"):
            m = re.fullmatch(r"(!?)\s*defined\s*\(?\s*(\w+)\s*\)?", rest) if kind == "if" else None
            name = rest.split()[0] if kind != "if" and rest else (m.group(2) if m else None)
            positive = kind == "ifdef" or (m is not None and not m.group(1))
            stack.append((name, positive) if name else None)
        elif kind in ("elif", "else"):
            if stack:
                top = stack[-1]
                stack[-1] = (top[0], not top[1]) if (top and kind == "else") else None
        elif kind == "endif":
            if stack:
                stack.pop()
        elif kind == "include":
            m = re.match(r'(["<])([^">]+)[">]', rest)
            if m:
                need = frozenset(c[0] for c in stack if c and c[1])
                need_not = frozenset(c[0] for c in stack if c and not c[1])
                out.append((m.group(1) == "<", m.group(2), need, need_not))
    return tuple(out)
