"""Record the facts of python.org's macOS framework builds' pyconfig.h in data/macos_pyconfig.yaml,
which the macOS tables are made from (scan/macos.py).

The public repository schriftgestalt/GlyphsPythonPlugin commits python.org's universal2 framework
(its include/ directory with pyconfig.h) on one branch per minor. Fetch it (a git directory) and
point this at it. For each branch, the pyconfig.h is preprocessed for both of the framework's CPUs
(zig cc, `-E -dM`, less what the compiler predefines; the two must agree), and kept of it are the
macros the framework's own headers read, the feature-test macros (a leading `_`) that Apple's headers
read, and whatever a kept value names. Nothing of the repository is committed but these values.
"""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from .. import children
from ..errors import BuildError
from ..scan import macos, zig

REPOSITORY = "schriftgestalt/GlyphsPythonPlugin"
#: the branches that hold a framework, one minor each
BRANCHES = ("py39", "py310", "py311", "current")
CPUS = ("aarch64-macos-none", "x86_64-macos-none")
_NAME = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def git(git_dir: Path, *args: str) -> str:
    """What `git --git-dir GIT_DIR ARGS` prints (children.run: bounded, and it dies with this process)."""
    return children.run(["git", "--git-dir", str(git_dir), *args], "git", check=True, errors="replace").stdout


def _defines(cpu: str, path: Path) -> dict:
    """name -> `#define` line of what `path` defines for zig's target `cpu`, less the predefined."""
    def dump(src: str) -> dict:
        cmd = [sys.executable, "-m", "ziglang", "cc", "-target", cpu, "-E", "-dM", "-x", "c", src]
        with tempfile.TemporaryDirectory() as work:     # zig writes an object beside `-E` for macOS
            out = children.run(cmd, "zig cc", check=True, cwd=work).stdout
        return {_NAME.search(line[len("#define "):]).group(): line for line in out.splitlines()
                if line.startswith("#define ")}
    predefined = dump("/dev/null")
    return {k: v for k, v in dump(str(path)).items() if predefined.get(k) != v}


def record(git_dir: Path, branch: str) -> tuple[str, dict]:
    """(version, its record) of the framework on `branch`."""
    names = git(git_dir, "ls-tree", "-r", "--name-only", branch).splitlines()
    found = [n for n in names if re.fullmatch(r"Python\.framework/Versions/3\.\d+/include/python3\.\d+/pyconfig\.h", n)]
    if len(found) != 1:
        raise BuildError(f"{branch}: {len(found)} framework pyconfig.h files, not one")
    path = found[0]
    include = path.rsplit("/", 1)[0]
    patchlevel = git(git_dir, "show", f"{branch}:{include}/patchlevel.h")
    version = re.search(r'#define\s+PY_VERSION\s+"([^"]+)"', patchlevel).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        pc = Path(tmp) / "pyconfig.h"
        pc.write_text(git(git_dir, "show", f"{branch}:{path}"))
        each = [_defines(cpu, pc) for cpu in CPUS]
    if each[0] != each[1]:
        differ = sorted(k for k in set(each[0]) | set(each[1]) if each[0].get(k) != each[1].get(k))
        raise BuildError(f"{branch}: pyconfig.h defines differently for arm64 and x86_64: {', '.join(differ)}")
    defined = each[0]
    read = set()
    for h in names:
        if h.startswith(include + "/") and h.endswith(".h") and h != path:
            read |= set(_NAME.findall(git(git_dir, "show", f"{branch}:{h}")))
    keep = {k for k in defined if (k in read or k.startswith("_")) and k != "Py_PYCONFIG_H"}
    while True:     # what a kept value names
        more = {n for k in keep for n in _NAME.findall(defined[k][len("#define "):])[1:] if n in defined} - keep
        if not more:
            break
        keep |= more
    values = {k: defined[k][len("#define "):][len(k):].strip() for k in sorted(keep)}
    commit = git(git_dir, "rev-parse", branch).strip()
    return version, {"branch": branch, "commit": commit, "path": path, "defines": values}


HEAD = f"""# python.org's macOS framework builds' configuration: of each one's pyconfig.h, the macros its
# own headers read and the feature-test macros Apple's headers read, as the preprocessor defines them
# for arm64 and x86_64 alike. Read from the public repository {REPOSITORY}, which commits
# the framework; made by `python -m offsets.tools.macos_pyconfig GIT_DIR`, do not edit. scan/macos.py
# writes each one back as a pyconfig.h for the macOS tables.
"""


def render(records: dict) -> str:
    """The facts file's text: deterministic (versions and names in order, values quoted)."""
    import json

    out = [HEAD.rstrip("\n"), "source:", f"  repository: {REPOSITORY}", "builds:"]
    for version in sorted(records, key=lambda v: tuple(int(x) for x in v.split("."))):
        r = records[version]
        out += [f'  "{version}":', f"    branch: {r['branch']}", f"    commit: {r['commit']}",
                f"    path: {r['path']}", "    defines:"]
        out += [f"      {k}: {json.dumps(v)}" for k, v in r["defines"].items()]
    return "\n".join(out) + "\n"


EXAMPLES = f"""  python -m offsets.tools.macos_pyconfig GIT_DIR            every branch's facts into offsets/data/macos_pyconfig.yaml
  python -m offsets.tools.macos_pyconfig GIT_DIR --check    fail if the committed facts differ from GIT_DIR's
  (GIT_DIR: a clone of https://github.com/{REPOSITORY}, e.g. `git clone --bare`)
"""


def main(argv=None) -> int:
    from . import command_line

    p = command_line.parser("macos_pyconfig", __doc__.split("\n\n")[0], EXAMPLES)
    p.add_argument("git_dir", type=Path, nargs="?", help=f"a git directory of {REPOSITORY}")
    p.add_argument("--check", action="store_true", help="compare with the committed file; write nothing")
    args = p.parse_args(argv)
    if args.git_dir is None:
        p.error(f"GIT_DIR is required: a clone of https://github.com/{REPOSITORY}")
    zig.home()
    records = {}
    for branch in BRANCHES:
        version, rec = record(args.git_dir, branch)
        records[version] = rec
        print(f"{branch}: python.org {version}, {len(rec['defines'])} macros", file=sys.stderr)
    text = render(records)
    out = Path(__file__).resolve().parent.parent / macos.FACTS
    if args.check:
        same = out.is_file() and out.read_text() == text
        print(f"{out.name}: {'up to date' if same else 'differs from ' + str(args.git_dir)}")
        return 0 if same else 1
    out.write_text(text)
    print(f"wrote {out.name}: {len(records)} builds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
