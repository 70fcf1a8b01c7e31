"""python.org's Windows builds run under Wine: the runtime inside each (this checkout, pure Python: the
package as a JIT's Windows users have it without its C extensions), and what each one's DLL holds
in its own bytes, to check the runtime's answers there against.

    python -m offsets.tools.windows_wine [MINOR ...]   # each build's live check of its Windows table, in Wine

`run(minor, script)` runs a script in the embeddable build of `minor` (windows_builds.embeddable:
fetched by package name; a child that dies with this process, its output bounded: children.py; its
standard input a file) with this checkout importable, a cache and a tables folder of its own
(so a run never reads what another left), no autoscan, and Wine's own state in the cache
(`windows/wine`, made on the first run). The embeddable build's `._pth` file fixes its `sys.path`
(PYTHONPATH is ignored): the script's first line adds the checkout. Its output is read through
pipes (Wine 8 gives a python.exe whose standard streams are files an invalid handle).

`dll_truths(minor)`: name -> value, what python.org's compiler put in the DLL, read without running
it (remote/pe.py): each static type object's `tp_basicsize` where it is one struct's size
(`PyListObject` is `list`'s), and from 3.13 each `_Py_DebugOffsets` slot of `_PyRuntime`. Where a
type object's `tp_basicsize` is and where `_Py_DebugOffsets` lies are read by the committed
Windows table of the minor (their places are the same in every 3.X; its cookie and version read
back prove the latter).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .. import children, data_cache
from ..errors import BuildError
from ..layout import table_yaml
from . import windows_builds

CHECKOUT = Path(__file__).resolve().parents[2]

#: Run in the build: the live check of the committed Windows release table of its minor, as JSON.
LIVE_CHECK = r"""
import json, sys
from offsets.runtime import live_check, tables
from offsets.runtime.core import load_shipped
minor = "%d.%d" % sys.version_info[:2]
entries = [e for e in tables.shipped_index()["tables"] if e["triple"] == "x86_64-pc-windows-msvc"
           and e["version"].startswith(minor + ".") and not any(e["config"].values())]
t = load_shipped(entries[0])
r = live_check(t)
print(json.dumps({"table": t.name, "passed": len(r.passed), "failed": r.failed, "skipped": len(r.skipped)}))
"""


def winpath(path) -> str:
    """A path of this machine as Wine's programs name it (its drive Z: is `/`)."""
    return "Z:" + str(Path(path).resolve()).replace("/", "\\")


def wine() -> str:
    found = shutil.which("wine")
    if found is None:
        raise BuildError("no wine: `apt-get install wine wine64` (make test-venv installs it)")
    return found


def run(minor: str, script: str, stdin: str = "", env: dict = None, timeout: float = 600, package: Path = None) -> str:
    """The standard output of `script` run by python.org's embeddable build of `minor` under Wine
    (`-S`: no site), with this checkout importable (or `package`, a folder holding a copy of the
    package: `package_with_extensions`); `env` adds to the environment (Windows paths: `winpath`). A
    BuildError with the end of its standard error when it fails."""
    python = windows_builds.embeddable(minor) / "python.exe"
    prefix = data_cache.folder() / "windows" / "wine"
    prefix.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="offsets-wine-") as work:
        work = Path(work)
        (work / "tables").mkdir()
        (work / "stdin.txt").write_text(stdin)
        (work / "script.py").write_text(f"import sys\nsys.path.insert(0, {winpath(package or CHECKOUT)!r})\n"
                                        f"sys.stdin = open({winpath(work / 'stdin.txt')!r})\n" + script)
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("OFFSETS_", "PYTHON", "WINE"))}
        clean.update(WINEPREFIX=str(prefix), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=",
                     OFFSETS_CACHE=winpath(work / "cache"), OFFSETS_TABLES=winpath(work / "tables"),
                     OFFSETS_AUTOSCAN="0", **(env or {}))
        proc = children.run([wine(), str(python), "-S", winpath(work / "script.py")], f"{python.name} under Wine",
                            BuildError, timeout=timeout, env=clean, cwd=work)
    if proc.returncode:
        raise BuildError(f"{python} under Wine failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")
    return proc.stdout


#: The package's C extensions, as setup.py lists them: (module, source, include directories of the checkout)
EXTENSIONS = (("_offsets", "offsets/_offsets.c", ("headers",)), ("_lookup", "offsets/_lookup.c", ()))


def compile_extension(minor: str, sources, out: Path, includes=()) -> Path:
    """`sources` (C files) compiled by mingw-w64 gcc into the extension module `out` (a .pyd) for python.org's
    Windows x64 build of `minor`, linked against its DLL: the headers and the Windows pyconfig.h its
    Windows table was made from (tools/matrix.py), with what python.org's MSVC build gives an
    extension that gcc does not define itself (`MS_WIN64`). A BuildError with gcc's message if it fails."""
    from . import matrix
    from ..check import probe
    from ..scan import targets

    entry = next(w for w in matrix.matrix()["windows"] if w["version"].rsplit(".", 1)[0] == minor)
    b = matrix.windows_inputs(entry, "release", windows_builds.TRIPLE)
    cc = probe.compiler_for(targets.target(windows_builds.TRIPLE))[:1]
    dll = windows_builds.dll(minor)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [*cc, "-shared", "-O2", "-DMS_WIN64", "-I", str(b.include_dir), "-I", str(b.pyconfig.parent),
           *(f"-I{i}" for i in includes), *map(str, sources), "-L", str(dll.parent), f"-l{dll.stem}", "-o", str(out)]
    proc = children.run(cmd, "mingw-w64 gcc", BuildError)
    if proc.returncode:
        raise BuildError(f"mingw-w64 gcc could not build {out.name} for {minor}: {proc.stderr.strip()[-1500:]}")
    return out


def package_with_extensions(minor: str, where: Path) -> Path:
    """A copy of this checkout's package under `where` (in `where/package`, the folder to put on
    sys.path) with its C extensions built for python.org's Windows build of `minor` (what pip
    would build there), for `run(..., package=...)`."""
    root = where / "package"
    shutil.copytree(CHECKOUT / "offsets", root / "offsets",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    tag = "cp" + minor.replace(".", "")
    for name, source, includes in EXTENSIONS:
        compile_extension(minor, [CHECKOUT / source], root / "offsets" / f"{name}.{tag}-win_amd64.pyd",
                          [CHECKOUT / i for i in includes])
    return root


def live_check(minor: str) -> dict:
    """The live check of the committed Windows release table of `minor` inside its python.org build:
    {"table", "passed": count, "failed": [why...], "skipped": count}."""
    return json.loads(run(minor, LIVE_CHECK).strip().splitlines()[-1])


def dll_truths(minor: str) -> dict:
    """name (STRUCT.FIELD, or STRUCT for its size) -> the value python.org's DLL of `minor` holds."""
    from ..remote import anchors, pe

    table = table_yaml.load(windows_builds.table_path(minor))
    view = anchors.View.of_table(table)
    image = pe.ImageView(pe.read(windows_builds.dll(minor)))
    order = "little"            # every Windows CPU python.org builds for
    out = {}
    tp = view.row("PyTypeObject", "tp_basicsize")
    for _, symbol, struct, expectations in anchors.basicsize_expectations():
        sym = image.symbol(symbol)
        if tp is not None and sym is not None and expectations[0] == ("size",):
            out[struct] = int.from_bytes(image.file_bytes(sym.value + tp[1][0], tp[1][1]), order)
    runtime, at = image.symbol("_PyRuntime"), view.off("_PyRuntimeState", "debug_offsets")
    if runtime is not None and at is not None:
        def read(offset, n):
            return image.file_bytes(runtime.value + at + offset, n)
        hexversion = windows_builds.hexversion(windows_builds.EMBEDDABLE[minor][1])
        compared = anchors.compare_debug_offsets(view, read, order, hexversion)
        if compared[:2] and any(got != want for _, got, want, _ in compared[:2]):
            raise BuildError(f"{windows_builds.dll(minor).name}: no _Py_DebugOffsets where the table puts it")
        for name, meaning in anchors.debug_offsets_members().items():
            row = (view.fields("_Py_DebugOffsets") or {}).get(name)
            if row is not None:
                key = meaning[1] if meaning[0] == "size" else f"{meaning[1]}.{meaning[2]}"
                out[key] = int.from_bytes(read(row[0], row[1]), order)
    return out


EXAMPLES = """  python -m offsets.tools.windows_wine             each build's live check of its Windows table, in Wine
  python -m offsets.tools.windows_wine 3.11 3.13   only those builds
"""


def main(argv=None) -> int:
    from . import command_line

    p = command_line.parser("windows_wine", __doc__.split("\n\n")[0], EXAMPLES)
    p.add_argument("minors", nargs="*", default=list(windows_builds.EMBEDDABLE), metavar="MINOR",
                   help=f"which builds ({', '.join(windows_builds.EMBEDDABLE)}; default all)")
    args = p.parse_args(argv)
    bad = 0
    for minor in args.minors:
        got = live_check(minor)
        print(f"{windows_builds.EMBEDDABLE[minor][1]} under Wine, live check of {got['table']}: {got['passed']} passed, "
              f"{len(got['failed'])} failed, {got['skipped']} not run")
        for why in got["failed"]:
            print(f"    {why}")
        bad += bool(got["failed"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
