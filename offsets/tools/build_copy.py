"""A CPython build of its own, made from an installed one in a moment: for `make bench`'s startup
figures and the deployment tests (tests/deployment.py), which need a build no table ships.

`copy_build(base, dest, unshipped=...)` makes, at `dest`, `bin/python3.X` (a copy of `base`'s ELF,
which keeps loading `base`'s libpython), its own include directory (copied; with `unshipped`, one
line is added to `Python.h`, so that its digests are no shipped table's), its own empty
`site-packages`, and the rest of the standard library and `lib/libpython*` linked in. The copy finds
`dest` as its prefix by itself (CPython's getpath: the standard library beside `bin/`), so its
`sysconfig` include directory is the copy's; with `unshipped` it also loads a libpython of its own,
the same bytes under another GNU build-id (the note's bytes rewritten, the executable's RUNPATH made
`$ORIGIN/../lib`), so that no shipped table's build-id vouches for it either. `paths` go into `site-packages/00-offsets.pth` (what
`pip install` would have made importable).
"""
from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

VERSION = "%d.%d" % sys.version_info[:2]
#: what `unshipped` adds to the copy's Python.h
UNSHIPPED_LINE = "/* offsets: a build no table ships */\n"


def base_python(base: Path) -> Path:
    """The interpreter a prefix installed, of this Python's version and ABI flags."""
    return base / "bin" / f"python{VERSION}{sys.abiflags}"


def copy_build(base: Path, dest: Path, unshipped: bool, paths=(), site_dirs=()) -> Path:
    """The copy's bin/python3.X (see the module's docstring); `site_dirs` are processed as site
    directories at its start (their .pth files run), so that its start does what theirs does."""
    stdlib = f"python{VERSION}"
    (dest / "bin").mkdir(parents=True)
    python = dest / "bin" / base_python(base).name
    shutil.copy2(base_python(base), python)
    lib = dest / "lib" / stdlib
    lib.mkdir(parents=True)
    for entry in (base / "lib" / stdlib).iterdir():
        if entry.name != "site-packages":
            (lib / entry.name).symlink_to(entry)
    for entry in (base / "lib").iterdir():
        if entry.name.startswith("libpython"):
            (dest / "lib" / entry.name).symlink_to(entry)
    if unshipped and sysconfig.get_config_var("INSTSONAME"):
        own = dest / "lib" / sysconfig.get_config_var("INSTSONAME")     # its own, under another build-id
        own.unlink()
        shutil.copy2(base / "lib" / own.name, own)
        other_build_id(own)
        own_runpath(python, str(base / "lib"))
    site = lib / "site-packages"
    site.mkdir()
    include = Path(sysconfig.get_paths()["include"])
    shutil.copytree(include, dest / "include" / include.name, symlinks=True)
    if unshipped:
        header = dest / "include" / include.name / "Python.h"
        header.write_text(header.read_text() + UNSHIPPED_LINE)
    lines = [str(p) for p in paths] + [f"import site; site.addsitedir({str(d)!r})" for d in site_dirs]
    if lines:
        (site / "00-offsets.pth").write_text("\n".join(lines) + "\n")
    return python


def site_packages(python: Path) -> Path:
    """The site-packages of a copy made by copy_build."""
    return python.parent.parent / "lib" / f"python{VERSION}" / "site-packages"


def _replace_once(path: Path, old: bytes, new: bytes) -> None:
    """Write `new` over the one occurrence of `old` in the file `path` (same length)."""
    data = path.read_bytes()
    if len(old) != len(new) or data.count(old) != 1:
        raise ValueError(f"{path}: {old!r} occurs {data.count(old)} times, expected once")
    at = data.index(old)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(new)


def other_build_id(path: Path) -> str:
    """Give the ELF file `path` another GNU build-id (each byte of the note's descriptor inverted):
    the same code, as if built again. Returns the new build-id in hex."""
    from ..remote import elf_id

    with open(path, "rb") as f:
        def read(at, n):
            f.seek(at)
            return f.read(n)
        old = elf_id.build_id(read, loaded=False)
    if old is None:
        raise ValueError(f"{path} has no GNU build-id note")
    new = bytes(b ^ 0xFF for b in bytes.fromhex(old))
    _replace_once(path, bytes.fromhex(old), new)
    return new.hex()


def own_runpath(path: Path, old: str, runpath: str = "$ORIGIN/../lib") -> None:
    """Make the RUNPATH `old` of the executable `path` `runpath` (written over the old string in
    .dynstr, which must be as long or longer)."""
    if len(runpath) > len(old):
        raise ValueError(f"{path}: its RUNPATH {old!r} is shorter than {runpath!r}")
    _replace_once(path, b"\0" + old.encode() + b"\0", b"\0" + runpath.encode() + bytes(len(old) - len(runpath) + 1))
