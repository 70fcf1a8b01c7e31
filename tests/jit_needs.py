"""The JIT-needs list (tests/data/jit_needs.yaml): what real JITs and C extensions read of CPython's
structs, and how to ask a real interpreter about it and check its answers.

- `load()`: the list as committed (projects, and per name the projects that read it, one place each
  and the minors);
- `names(minor, free_threaded)`: the names some project reads in that version (`section="constants"`:
  the constants it compiles in, asked as `const:NAME` below);
- `split(table)`: of a table's version, the names it has and those `absent in that version` (no
  struct, field or constant of that name in the table: not an error, the list is for every version);
- `answers(python, names)`: what the runtime alone says in that interpreter (`-S`, no scanner, no own
  tables, `OFFSETS_AUTOSCAN=0`): per name exact / proven / refused / absent / error, and the number
  (`answers_in_wine(minor, names)`: the same inside python.org's Windows build under Wine);
- `truth(...)`: the build's own numbers, independent of every table: gcc's `offsetof`/`sizeof`
  compiled against its headers (remembered across runs like compile_memo.py's compiles) and its
  binary's DWARF (`offsets.scan.dwarf`); `wrong(answers, truth)`: every answer that differs.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "jit_needs.yaml"


@lru_cache(maxsize=None)
def load() -> dict:
    import yaml

    doc = yaml.safe_load(DATA.read_text())
    if doc.get("schema") != 1 or not isinstance(doc.get("needs"), dict):
        raise ValueError(f"{DATA}: not a schema 1 needs list")
    return doc


def _minors(spec: str) -> set:
    """'3.6-3.10, 3.12' -> {'3.6', ..., '3.10', '3.12'}."""
    out = set()
    for part in filter(None, (p.strip() for p in str(spec).split(","))):
        lo, _, hi = part.partition("-")
        a, b = int(lo.split(".")[1]), int((hi or lo).split(".")[1])
        out |= {f"3.{m}" for m in range(a, b + 1)}
    return out


#: how a constant of the list is asked for among the names (`answers`, `truth`, `wrong`)
CONST = "const:"


def names(minor: str, free_threaded: bool = False, section: str = "needs") -> list:
    """The names some project reads in CPython `minor` (release, or free-threaded); section
    "constants": the constants, each as `const:NAME`."""
    out = []
    for name, readers in (load().get(section) or {}).items():
        for r in readers.values():
            spec = r.get("free-threaded", r["versions"]) if free_threaded else r["versions"]
            if minor in _minors(spec):
                out.append(CONST + name if section == "constants" else name)
                break
    return sorted(out)


def split(table) -> tuple:
    """(names the table has, names absent in that version) of the needs of `table`'s version and
    config; `table` is a `model.Table` or the path of a YAML table."""
    from offsets.errors import UnknownNameError
    from offsets.layout.names import find_constant, resolve

    if not hasattr(table, "structs"):
        from offsets.drift import tables

        table = tables.load([str(table)])[0]
    has, absent = [], []
    ft = bool(table.build.config.get("Py_GIL_DISABLED"))
    for name in names(table.build.minor, ft) + names(table.build.minor, ft, "constants"):
        try:
            find_constant(table, name[len(CONST):]) if name.startswith(CONST) else resolve(table, name)
            has.append(name)
        except UnknownNameError:
            absent.append(name)
    return has, absent


# ---------------------------------------------------------------------------------- answers
CHILD = r'''
import json, sys
import offsets
from offsets.errors import AmbiguousNameError, NoMatchingTable, UnknownNameError
out = {}
try:
    m = offsets.build()
    out["__table__"] = [m.table, m.kind]
except NoMatchingTable as e:
    m = None
    out["__table__"] = [None, "refused: " + str(e)[:300]]
for name in json.load(sys.stdin):
    try:
        if m is None:
            raise NoMatchingTable("no table")
        if name.startswith("const:"):
            c = offsets.constant_info(name[6:])
            out[name] = [c.earned, c.value, None, None]
        elif "." in name:
            f = offsets.field(name)
            out[name] = [f.earned, f.offset, f.bit_offset, f.bit_width]
        else:
            v = offsets.sizeof(name)
            out[name] = ["exact" if m.earned(name) == "exact" else "proven", v, None, None]
    except AmbiguousNameError as e:
        out[name] = ["refused", str(e)[:200]]
    except UnknownNameError as e:
        out[name] = ["absent", str(e)[:200]]
    except NoMatchingTable as e:
        out[name] = ["refused", str(e)[:200]]
    except Exception as e:
        out[name] = ["error", "%s: %s" % (type(e).__name__, str(e)[:200])]
json.dump(out, sys.stdout)
'''


def clean_env(tables_dir: str, package=None, **extra) -> dict:
    """The runtime alone: no PYTHON*/OFFSETS_* of ours, no own tables, no autoscan, this checkout
    importable (or `package`, a folder holding an installed copy of it)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OFFSETS_", "PYTHON")) or k == "OFFSETS_CACHE"}
    env.update(OFFSETS_TABLES=tables_dir, OFFSETS_AUTOSCAN="0", PYTHONPATH=str(package or ROOT), **extra)
    return env


def answers(python, wanted, timeout: float = 120, package=None) -> dict:
    """name -> [how, value, bit_offset, bit_width] ([how, message] when not answered) from the
    runtime alone in `python` (`-S`: no site-packages, so no scanner; no own tables), the checkout's
    or `package`'s; '__table__' -> [table, kind] or [None, why]. `python`: the interpreter, or a
    command whose last word it is (`["qemu-aarch64", exe]`)."""
    cmd = [str(python)] if isinstance(python, (str, Path)) else [str(w) for w in python]
    with tempfile.TemporaryDirectory(prefix="offsets-needs-") as tables:
        proc = subprocess.run([*cmd, "-S", "-c", CHILD], input=json.dumps(sorted(wanted)), text=True,
                              capture_output=True, env=clean_env(tables, package), timeout=timeout, cwd=tables)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: the runtime's answers failed: {proc.stderr.strip()[-1500:]}")
    return json.loads(proc.stdout)


def answers_in_wine(minor: str, wanted) -> dict:
    """`answers`, from the runtime alone inside python.org's Windows build of `minor` under Wine
    (offsets/tools/windows_wine.py: no site, no own tables, no autoscan, a cache of its own)."""
    from offsets.tools import windows_wine

    return json.loads(windows_wine.run(minor, CHILD, stdin=json.dumps(sorted(wanted))))


def tally(got: dict, constants: bool = False) -> dict:
    """how -> count (exact, proven, refused, absent, error) of the fields and sizes, or of the constants."""
    out = {k: 0 for k in ("exact", "proven", "refused", "absent", "error")}
    for name, a in got.items():
        if name != "__table__" and name.startswith(CONST) == constants:
            out[a[0]] += 1
    return out


# ------------------------------------------------------------------------------------ truth
def _dwarf_values(binary, wanted) -> dict:
    """name -> (offset, bit_offset, bit_width) of a field, or a struct's size, as `binary`'s DWARF has
    them (its structs under their DWARF names and the alias map's, as the tables resolve names)."""
    from offsets.layout.names import aliases, struct_key
    from offsets.scan import dwarf

    groups = aliases()
    out = {}
    # the interpreter's binary, then the extension modules built beside it (arrayobject is the array module's)
    for i, path_ in enumerate([binary] + dwarf.extension_modules(binary)):
        info = dwarf.read(path_)
        for name in wanted:
            if name.startswith(CONST) or name in out:
                continue
            struct, _, path = name.partition(".")
            key = struct_key(struct, info.structs, info.names, groups)
            if key is None or (i and not _in_tree(info.structs[key])):
                continue
            s = info.structs[key]
            if not path:
                out[name] = s.size
            for f in s.fields:
                if f.path == path:
                    out[name] = (f.offset, f.bit_offset, f.bit_width)
    return out


def _in_tree(s) -> bool:
    """A struct an extension module's own .c file defines (Modules/...), not a header's it includes."""
    return s.defined_in.startswith("Modules/")


_PROBE = "__offsets_jn_"


def _gcc_values(b, wanted: list, work: Path) -> dict:
    """name -> offsetof/sizeof as gcc compiles it after every header of build `b` (offsets.check.probe's
    unit and flags); names gcc does not know there (structs of .c files, bitfields) are left out."""
    from offsets.check import probe
    from offsets.scan import units

    unit, _ = units.header_unit(b)
    cc = probe.compiler_for(b.target)
    flags = probe.gcc_flags(unit.args, b, cc) + ["-iquote", str(b.include_dir)]
    prelude = f'#line 1 "__offsets_headers__.c"\n{unit.text}'
    structs = sorted({n.partition(".")[0] for n in wanted if not n.startswith(CONST)})

    class Named:            # what _spellings reads of a Struct (a union known only by its tag fails: DWARF has it)
        kind = "struct"

        def __init__(self, name):
            self.name = name

    spelled = probe._spellings([Named(s) for s in structs], prelude, cc, flags, work)
    macros = probe._object_macros(prelude, cc, flags, work)
    shadowed = sorted({p for n in wanted if not n.startswith(CONST) for p in n.partition(".")[2].split(".") if p}
                      & macros - set(structs))
    head = [prelude, *(f"#undef {m}" for m in shadowed), f'#line 1 "{_PROBE}"']
    body = []
    for n in wanted:
        if n.startswith(CONST):     # its value's 64 bits, and whether it is negative
            c = n[len(CONST):]
            body.append(f"const unsigned long long {_PROBE}{len(body)}[] = {{(unsigned long long)({c}), ({c}) < 0}};")
            continue
        struct, _, path = n.partition(".")
        t = spelled[struct]
        body.append(f"const unsigned long long {_PROBE}{len(body)} = "
                    + (f"__builtin_offsetof({t}, {path});" if path else f"sizeof({t});"))
    src, obj = work / "needs.c", work / "needs.o"
    for _ in range(4):
        src.write_text("\n".join(head + body) + "\n")
        argv = [*cc, *flags, "-w", "-O0", "-c", str(src), "-o", str(obj)]
        memo = _recall(argv, src)
        if memo is not None:
            return {wanted[i]: v for i, v in memo.items()}
        proc = subprocess.run(argv + ["-MD", "-MF", str(work / "needs.d")], capture_output=True, text=True)
        if not proc.returncode:
            break
        bad = {int(m.group(1)) for m in re.finditer(rf"^{_PROBE}:(\d+):(?:\d+:)? (?:fatal )?error", proc.stderr, re.M)}
        if not bad:
            raise RuntimeError(f"gcc cannot compile the needs probes: {proc.stderr.strip()[-800:]}")
        for line in bad:
            body[line - 1] = "/* not known here */"
    else:
        raise RuntimeError("gcc kept failing on the needs probes")
    symbols = {f"{_PROBE}{i}": i for i, text in enumerate(body) if not text.startswith("/*")}
    found, little, _ = probe._read_symbols(obj, symbols)
    order = "little" if little else "big"
    values = {}
    for sym, data in found.items():
        value = int.from_bytes(data[:8], order)
        if len(data) == 16 and int.from_bytes(data[8:], order):     # a negative constant
            value -= 1 << 64
        values[symbols[sym]] = value
    _remember(argv, src, work / "needs.d", values)
    return {wanted[i]: v for i, v in values.items()}


def _memo_key(argv, src: Path) -> str:
    import compile_memo

    return compile_memo.key_of(argv, src) + "-values"


def _recall(argv, src: Path):
    """The values a clean compile of the same probes gave, while every file it read is unchanged."""
    import compile_memo
    from offsets import data_cache

    key = _memo_key(argv, src)
    doc = data_cache.load(compile_memo._store() / f"{key}.json", key)
    if not isinstance(doc, dict) or not doc.get("deps") or not isinstance(doc.get("values"), dict):
        return None
    try:
        if any(compile_memo._digest(p) != d for p, d in doc["deps"].items()):
            return None
    except OSError:
        return None
    return {int(i): v for i, v in doc["values"].items()}


def _remember(argv, src: Path, depfile: Path, values: dict) -> None:
    import compile_memo
    from offsets import data_cache

    try:
        deps = {p: compile_memo._digest(p) for p in compile_memo.dep_files(depfile, src)}
    except (OSError, ValueError):
        return
    key = _memo_key(argv, src)
    data_cache.store(compile_memo._store() / f"{key}.json", key, {"deps": deps, "values": values})


def truth(binary, build_inputs, wanted) -> tuple:
    """(DWARF's numbers, gcc's numbers) of the build: `binary` (its DWARF), `build_inputs` (a
    `BuildInputs` of its headers, or None)."""
    dwarf = _dwarf_values(binary, wanted) if binary else {}
    gcc = {}
    if build_inputs is not None:
        with tempfile.TemporaryDirectory(prefix="offsets-needs-gcc-") as work:
            gcc = _gcc_values(build_inputs, sorted(wanted), Path(work))
    return dwarf, gcc


def wrong(got: dict, dwarf: dict, gcc: dict) -> tuple:
    """(every answer that differs from DWARF or gcc, with both numbers; names answered that neither knows)."""
    bad, unchecked = [], []
    for name, a in sorted(got.items()):
        if name == "__table__" or a[0] not in ("exact", "proven"):
            continue
        value = a[1] if "." not in name or name.startswith(CONST) else (a[1], a[2], a[3])
        checked = False
        if name in dwarf:
            checked = True
            if dwarf[name] != value:
                bad.append(f"{name}: runtime says {value} ({a[0]}), DWARF says {dwarf[name]}")
        if name in gcc:            # offsetof/sizeof/a constant's value (gcc knows no offsetof of a bitfield)
            checked = True
            if gcc[name] != a[1]:
                bad.append(f"{name}: runtime says {a[1]} ({a[0]}), gcc says {gcc[name]}")
        if not checked:
            unchecked.append(name)
    return bad, unchecked
