"""CPython builds that no shipped table was made from, as users run them: one function per case, each
returning the interpreter's path, made into the cache on first use (`$OFFSETS_CACHE/foreign/`, or
`$OFFSETS_CACHE/build/` for the compiled ones) and reused after. `make bench` (bench_needs.py)
and the tests use them; `cases()` lists them with what each stands for.

- `without_macros(version)`: a copy of pyenv's build (build_copy.py: its own bin/, include/ and
  site-packages, the same libpython through the executable's RUNPATH) whose `pyconfig.h` lacks
  `HAVE_CLOSE_RANGE` and `HAVE_MEMFD_CREATE`, as configure writes it on an older C library;
- `no_headers(version)`: the same copy with its include directory removed, as slim images ship;
- `rebuilt(version)`: the copy without headers, with a libpython of its own: the same bytes but
  another GNU build-id (the note's bytes rewritten), as if the same code were built again; the
  copied executable's RUNPATH is made `$ORIGIN/../lib`, so it loads that copy;
- `variant(version, name, drop, edit)`: the copy with its headers, pyconfig.h without some macros,
  text appended to some headers, and its own build-id (or, `rewrite=no_build_id`, none): what only
  its headers can vouch for; `unreadable_pyconfig(version)`: one whose pyconfig.h is a link to
  nothing; `second_libpython(version)`: a copy of the libpython under another soname, to be mapped
  beside it;
- `elsewhere(config)`: python.org's 3.13.15 configured as another machine would (static, other
  options, another configure cache: scripts/build-cpython's `elsewhere` configs), release or
  free-threaded, compiled into `$OFFSETS_CACHE/build/` (about 2 minutes on 2 cores).

`Case.truth()` says where the build's own layouts are: the binary whose DWARF describes it and the
include directory that gcc compiles it against (the pyenv original's, for a copy).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .. import cache_lock
from .build_copy import _replace_once, other_build_id, own_runpath
from ..data_cache import folder
from ..errors import BuildError

CHECKOUT = Path(__file__).resolve().parents[2]
#: what configure leaves out of pyconfig.h on an older C library (glibc before 2.34)
OLD_LIBC_MACROS = ("HAVE_CLOSE_RANGE", "HAVE_MEMFD_CREATE")
#: bumped when a recipe below changes: copies made by an older one are made again
RECIPE = 2
ELSEWHERE_VERSION = "3.13.15"


@dataclass(frozen=True)
class Truth:
    """A build's own layouts: the binary with its DWARF, and the include directory (with pyconfig.h)
    of the build it is, for gcc."""

    binary: Path
    include: Path


def pyenv_prefix(version: str) -> Path:
    """pyenv's prefix of CPython `version` (PYENV_ROOT, else `pyenv root`, else ~/.pyenv); BuildError if
    it is not installed."""
    root = os.environ.get("PYENV_ROOT")
    if not root and shutil.which("pyenv"):
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() or None
    prefix = Path(root or Path.home() / ".pyenv") / "versions" / version
    if not (prefix / "bin" / f"python{_minor(version)}").is_file():
        raise BuildError(f"pyenv has no CPython {version} (`pyenv install {version}`)")
    return prefix


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _libpython(prefix: Path, version: str) -> Path:
    return prefix / "lib" / f"libpython{_minor(version)}.so.1.0"


def _made(dest: Path, stamp: str, make) -> Path:
    """`dest` as `make(tmp)` makes it, once per `stamp` (the recipe and the base's libpython), under a lock."""
    marker = dest / ".made"
    if marker.is_file() and marker.read_text() == stamp:
        return dest
    with cache_lock.held(f"foreign/{dest.name}"):
        if marker.is_file() and marker.read_text() == stamp:
            return dest
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        make(tmp)
        (tmp / ".made").write_text(stamp)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest


def _stamp(version: str, prefix: Path) -> str:
    st = _libpython(prefix, version).stat()
    return f"{RECIPE} {prefix} {st.st_size} {st.st_mtime_ns}"


def _copy(base: Path, version: str, dest: Path) -> Path:
    """build_copy.copy_build run in the base interpreter itself (it copies what that interpreter is)."""
    make = ("import sys; from pathlib import Path; from offsets.tools.build_copy import copy_build; "
            "print(copy_build(Path(sys.argv[1]), Path(sys.argv[2]), unshipped=False))")
    python = base / "bin" / f"python{_minor(version)}"
    out = subprocess.run([str(python), "-S", "-c", make, str(base), str(dest)], capture_output=True, text=True,
                         env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(CHECKOUT)})
    if out.returncode:
        raise BuildError(f"copying {python}: {out.stderr.strip()[-500:]}")
    return Path(out.stdout.strip())


def _interpreter(dest: Path, version: str) -> Path:
    return dest / "bin" / f"python{_minor(version)}"


def without_macros(version: str, macros=OLD_LIBC_MACROS) -> Path:
    """Case a: pyenv's `version` copied, its pyconfig.h without `macros` (those of them it defines)."""
    base = pyenv_prefix(version)
    dest = folder() / "foreign" / f"pyenv-{version}-without-{'-'.join(m.lower() for m in macros)}"

    def make(tmp: Path) -> None:
        _copy(base, version, tmp)
        header = next((tmp / "include").glob("python*/pyconfig.h"))
        lines = header.read_text().splitlines(True)
        kept = [ln for ln in lines if not any(ln.startswith((f"#define {m} ", f"#define {m}\n")) for m in macros)]
        if len(kept) == len(lines):      # 3.9 has no close_range check: HAVE_MEMFD_CREATE alone goes
            raise BuildError(f"{header} defines none of {', '.join(macros)}")
        header.write_text("".join(kept))

    return _interpreter(_made(dest, _stamp(version, base), make), version)


def no_headers(version: str, then=None, name: str = "no-headers") -> Path:
    """Case b: pyenv's `version` copied without its include directory (and `then(copy, base)` done to it)."""
    base = pyenv_prefix(version)
    dest = folder() / "foreign" / f"pyenv-{version}-{name}"

    def make(tmp: Path) -> None:
        _copy(base, version, tmp)
        shutil.rmtree(tmp / "include")
        if then is not None:
            then(tmp, base)

    return _interpreter(_made(dest, _stamp(version, base), make), version)


def _own_libpython(tmp: Path, base: Path, version: str, rewrite=other_build_id) -> None:
    """Give the copy `tmp` a libpython of its own (`rewrite(path)` done to it: another build-id by
    default), which its executable loads (RUNPATH `$ORIGIN/../lib`)."""
    lib = tmp / "lib" / _libpython(base, version).name
    lib.unlink()
    shutil.copy2(_libpython(base, version), lib)
    rewrite(lib)
    own_runpath(_interpreter(tmp, version), str(base / "lib"))


def rebuilt(version: str) -> Path:
    """Case d: pyenv's `version` copied without headers, with its own libpython under another build-id."""
    return no_headers(version, lambda tmp, base: _own_libpython(tmp, base, version), "rebuilt-no-headers")


def variant(version: str, name: str, drop: tuple = (), edit: tuple = (), own_build_id: bool = True,
            rewrite=other_build_id) -> Path:
    """pyenv's `version` copied with its headers, as another configure run or a patched header would
    make it: pyconfig.h without the macros `drop`, each (header, text) of `edit` appended to that
    header of the include directory, and (`own_build_id`) a libpython of its own (`rewrite` done to
    it: another build-id, or `no_build_id`), so that only the headers can vouch for it (`name`: the
    copy's folder)."""
    base = pyenv_prefix(version)
    dest = folder() / "foreign" / f"pyenv-{version}-{name}"

    def make(tmp: Path) -> None:
        _copy(base, version, tmp)
        include = next((tmp / "include").glob("python*"))
        if drop:
            header = include / "pyconfig.h"
            lines = header.read_text().splitlines(True)
            kept = [ln for ln in lines if not any(ln.startswith((f"#define {m} ", f"#define {m}\n")) for m in drop)]
            if len(lines) - len(kept) != len(drop):
                raise BuildError(f"{header} does not define each of {', '.join(drop)}")
            header.write_text("".join(kept))
        for rel, text in edit:
            with open(include / rel, "a") as f:
                f.write(text)
        if own_build_id:
            _own_libpython(tmp, base, version, rewrite)

    stamp = f"{_stamp(version, base)} {drop} {edit} {own_build_id} {rewrite.__name__}"
    return _interpreter(_made(dest, stamp, make), version)


def no_build_id(path: Path) -> None:
    """Make the GNU build-id note of the ELF file `path` a note of no one's (its owner's name `GNU`
    rewritten as `NUL`): the file then has no build-id, as one linked without --build-id."""
    from ..remote.elf import build_id_of

    found = build_id_of(str(path))
    if found is None:
        raise BuildError(f"{path} has no GNU build-id note")
    _replace_once(path, b"GNU\0" + bytes.fromhex(found), b"NUL\0" + bytes.fromhex(found))


def unreadable_pyconfig(version: str) -> Path:
    """pyenv's `version` copied with its own libpython under another build-id, its pyconfig.h a
    symbolic link to nothing: headers whose pyconfig.h no one can read."""
    base = pyenv_prefix(version)
    dest = folder() / "foreign" / f"pyenv-{version}-unreadable-pyconfig"

    def make(tmp: Path) -> None:
        _copy(base, version, tmp)
        header = next((tmp / "include").glob("python*")) / "pyconfig.h"
        header.unlink()
        header.symlink_to("pyconfig.h.missing")
        _own_libpython(tmp, base, version)

    return _interpreter(_made(dest, _stamp(version, base), make), version)


def second_libpython(version: str) -> Path:
    """A copy of pyenv's libpython of `version` under another soname (`...so.1.9`), so that a
    process can map it beside the original (LD_PRELOAD): two ELF files that both hold an interpreter."""
    base = pyenv_prefix(version)
    dest = folder() / "foreign" / f"pyenv-{version}-second-libpython"
    name = _libpython(base, version).name

    def make(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        shutil.copy2(_libpython(base, version), tmp / name)
        _replace_once(tmp / name, b"\0" + name.encode() + b"\0", b"\0" + name[:-1].encode() + b"9\0")

    return _made(dest, _stamp(version, base), make) / name


def elsewhere(config: str = "release") -> Path:
    """Case c: python.org's 3.13.15 configured elsewhere (`release` or `free-threaded`), compiled by
    scripts/build-cpython into the cache on first use."""
    name = {"release": "elsewhere", "free-threaded": "free-threaded-elsewhere"}[config]
    out = subprocess.run([str(CHECKOUT / "scripts" / "build-cpython"), ELSEWHERE_VERSION, name],
                         capture_output=True, text=True)
    if out.returncode:
        raise BuildError(f"scripts/build-cpython {ELSEWHERE_VERSION} {name} failed: {out.stderr.strip()[-800:]}")
    prefix = Path(out.stdout.strip().splitlines()[-1])
    return prefix / "bin" / f"python{_minor(ELSEWHERE_VERSION)}{'t' if config == 'free-threaded' else ''}"


@dataclass(frozen=True)
class Case:
    name: str            # what the bench prints
    version: str         # CPython version
    make: object         # () -> interpreter path
    free_threaded: bool = False
    pyenv: Optional[str] = None    # the pyenv build it is a copy of

    def truth(self) -> Truth:
        """The binary and include directory of the build this case is."""
        if self.pyenv:
            base = pyenv_prefix(self.pyenv)
            return Truth(_libpython(base, self.pyenv), next((base / "include").glob("python*")))
        python = self.make()
        prefix = python.parent.parent
        return Truth(python, next((prefix / "include").glob("python*")))


def cases() -> list:
    """Issue 26's foreign-build cases and issue 27's rebuilt ones, in the order `make bench` prints them."""
    out = []
    for v in ("3.9.18", "3.12.1", "3.13.0"):
        out.append(Case(f"pyenv {v}, pyconfig.h without {' and '.join(OLD_LIBC_MACROS)}", v,
                        lambda v=v: without_macros(v), pyenv=v))
    out.append(Case("pyenv 3.12.1 without include/", "3.12.1", lambda: no_headers("3.12.1"), pyenv="3.12.1"))
    out.append(Case(f"python.org {ELSEWHERE_VERSION} configured elsewhere (static, other options)", ELSEWHERE_VERSION,
                    lambda: elsewhere("release")))
    out.append(Case(f"python.org {ELSEWHERE_VERSION} free-threaded, configured elsewhere", ELSEWHERE_VERSION,
                    lambda: elsewhere("free-threaded"), free_threaded=True))
    for v in ("3.9.18", "3.12.1", "3.13.0"):
        out.append(Case(f"pyenv {v} rebuilt (another build-id), without include/", v, lambda v=v: rebuilt(v),
                        pyenv=v))
    return out
