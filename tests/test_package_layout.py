"""The package's layout is its pipeline: the runtime side never imports the scanner side.

`pip install cpython-offsets` is what a JIT lists as a run-time dependency; the scanner (libclang), the
checks (gcc), the drift tools and the regeneration tools are `cpython-offsets[scan]`'s. So no module the
runtime reaches, at import or inside a function, may come from `offsets.scan`, `offsets.check`,
`offsets.drift`, `offsets.cli` or `offsets.tools`.
"""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import offsets

PACKAGE = Path(offsets.__file__).resolve().parent
SCANNER_SIDE = ("offsets.scan", "offsets.check", "offsets.drift", "offsets.cli", "offsets.tools")
HEAVY = ("clang", "yaml", "jsonschema", "elftools")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set:
    """Every offsets module `path` imports, at its top or inside any function."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("offsets")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("offsets"):
                found.add(target)
                found |= {f"{target}.{a.name}" for a in node.names}      # `from . import x`: a module or a name
    return found


def edges_of(path: Path, files) -> set:
    """The offsets modules `path` runs when it imports, at its top or inside any function: `from X
    import a` is module X.a when that is a module (else X, for the name), and X too unless X is a
    package `path` is in (importing a module runs its packages' `__init__` first, but a module's own
    packages are under way already); `import X.Y` is X.Y and those of its packages that are not
    `path`'s."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    mine = {".".join(mod.split(".")[:i]) for i in range(1, mod.count(".") + 2)}

    def with_packages(target: str) -> set:
        parts = target.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts))} - mine

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "offsets":
                    found |= {a.name} | with_packages(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                target = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "offsets":
                continue
            found |= with_packages(target) | ({target} - mine)
            for a in node.names:
                found.add(f"{target}.{a.name}" if f"{target}.{a.name}" in files else target)
    return {m for m in found if m in files and m != mod}


def import_graph() -> dict:
    """module -> the offsets modules it imports (`edges_of`), for every module of the package (its C
    extensions, `_offsets.c` & co., import none)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    extensions = {f"offsets.{p.stem}" for p in PACKAGE.glob("_*.c")}
    graph = {m: edges_of(p, set(files) | extensions) for m, p in files.items()}
    return dict(graph, **{m: set() for m in extensions})


def circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(out)


#: Imports that still close a circle, each to be taken away (the test fails once one is gone, so
#: that it is taken off this list): the runtime reads ELF files with remote/'s readers (the build-id
#: of its binary, the allocators' symbols), while remote/ stands on the runtime (its choice of
#: tables, the live check's expectations). The ELF readers belong below both.
NOT_YET = {("offsets.runtime.binary", "offsets.remote"), ("offsets.runtime.live.allocators", "offsets.remote")}


def test_there_is_no_import_circle_in_the_package():
    """Layers import downward only (a toolkit, the checks over it, a runner over them; a table is
    handed its prover): no module reaches itself through the imports of the package, counting those
    inside functions (but for the imports of `NOT_YET`). A circle is printed with one import of each step."""
    graph = import_graph()
    assert "offsets.runtime.tables" in graph["offsets.runtime"]      # the walker sees relative imports
    assert sorted(e for e in NOT_YET if e[1] not in graph[e[0]]) == []
    found = circles({m: {n for n in to if (m, n) not in NOT_YET} for m, to in graph.items()})
    steps = []
    for comp in found:
        inside = set(comp)
        steps.append([f"{m} -> {', '.join(sorted(graph[m] & inside))}" for m in comp])
    assert steps == []


def reached_from(start: str) -> set:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    seen, todo = set(), [start]
    while todo:
        mod = todo.pop()
        if mod in seen or mod not in files:
            continue
        seen.add(mod)
        todo += sorted(imports_of(files[mod]))
    return seen


def test_the_runtime_reaches_no_scanner_module_even_lazily():
    reached = reached_from("offsets.runtime") | reached_from("offsets")
    assert "offsets.runtime.live" in reached and "offsets.layout.compact_read" in reached
    assert sorted(m for m in reached if m.startswith(SCANNER_SIDE)) == []


def test_the_remote_reader_reaches_no_scanner_module_even_lazily():
    """offsets.remote runs inside profilers' environments, like the runtime."""
    reached = set()
    for path in (PACKAGE / "remote").glob("*.py"):
        reached |= reached_from(module_name(path))
    assert "offsets.remote.elf" in reached and "offsets.remote.frames" in reached
    assert sorted(m for m in reached if m.startswith(SCANNER_SIDE)) == []


def test_reading_another_process_loads_no_scanner_module_and_no_third_party_package():
    """identify, the table, every thread's stack: in a fresh process, neither the scanner side nor
    pyyaml, jsonschema, libclang or pyelftools is imported (pyelftools is the scanner's)."""
    from conftest import missing_input, pyenv_python

    exe = pyenv_python("3.10") or pyenv_python("3.9")
    if exe is None:
        missing_input("no pyenv CPython 3.9 or 3.10 to read")
    target = subprocess.Popen([str(exe), "-c", "import time; time.sleep(60)"])
    try:
        code = ("import json, sys, time\nfrom offsets import remote\nfor _ in range(200):\n"
                "    try:\n        p = remote.attach(int(sys.argv[1])); break\n"
                "    except Exception:\n        time.sleep(0.05)\n"
                "p.threads(); p.get('PyThreadState.interp'); p.close()\nprint(json.dumps(sorted(sys.modules)))")
        out = subprocess.run([sys.executable, "-c", code, str(target.pid)], capture_output=True, text=True, check=True,
                             cwd=PACKAGE.parent, env={**os.environ, "OFFSETS_AUTOSCAN": "0"})
    finally:
        target.kill()
        target.wait()
    loaded = json.loads(out.stdout)
    assert "offsets.remote.frames" in loaded
    assert [m for m in loaded if m.startswith(SCANNER_SIDE) or m.split(".")[0] in HEAVY] == []


def test_importing_and_using_the_runtime_loads_no_scanner_module():
    code = ("import json, sys, offsets, offsets.runtime\n"
            "offsets.get('PyListObject.ob_item'); offsets.sizeof('PyObject'); offsets.build()\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent, env={**os.environ, "OFFSETS_AUTOSCAN": "0"})
    loaded = json.loads(out.stdout)
    assert "offsets.runtime" in loaded and "offsets.layout.compact_read" in loaded
    assert [m for m in loaded if m.startswith(SCANNER_SIDE) or m.split(".")[0] in HEAVY] == []


def test_every_module_lives_in_its_stage():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "atomic_write.py", "cache_lock.py", "children.py", "data_cache.py",
                   "errors.py", "progress.py", "regular_file.py"]
    stages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert stages == ["check", "cli", "drift", "export", "layout", "proofs", "remote", "runtime", "scan", "tools"]


def test_every_import_inside_the_package_names_a_module_that_exists():
    """Imports inside functions run only when called: a moved module must not leave one behind."""
    files = {module_name(p) for p in PACKAGE.rglob("*.py")} | {f"offsets.{p.stem}" for p in PACKAGE.glob("_*.c")}
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = module_name(path)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                if target not in files:
                    missing.append(f"{mod}: from {'.' * node.level}{node.module or ''} ({target})")
                elif node.module is None:
                    init = PACKAGE.parent / target.replace(".", "/") / "__init__.py"
                    missing += [f"{mod}: from {'.' * node.level} import {a.name}" for a in node.names
                                if f"{target}.{a.name}" not in files and a.name not in init.read_text()]
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                missing += [f"{mod}: import {n}" for n in names
                            if n.startswith("offsets.") and n not in files and n != "offsets._offsets"]
    assert missing == []


def test_every_import_of_the_python_the_scripts_run_names_what_exists():
    """scripts/* and the Makefile run Python (a script, or code given with `-c '...'`) only when run
    (`make prove`, by hand): a module that moved must not leave an import behind there either
    (scripts/prove-freethreaded imported `offsets.debian` after debian.py moved to `offsets.scan`)."""
    import importlib
    import importlib.util
    import re

    root = PACKAGE.parent
    snippets = []
    for path in sorted((root / "scripts").iterdir()) + [root / "Makefile"]:
        text = path.read_text()
        if text.startswith("#!") and "python" in text.splitlines()[0]:
            snippets.append((path.name, text))
        else:
            snippets += [(path.name, code) for code in re.findall(r"-c '([^']*)'", text)]
    assert len(snippets) >= 6
    missing = []
    for where, code in snippets:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("offsets"):
                if importlib.util.find_spec(node.module) is None:
                    missing.append(f"{where}: from {node.module} import ...")
                    continue
                mod = importlib.import_module(node.module)
                missing += [f"{where}: from {node.module} import {a.name}" for a in node.names
                            if not hasattr(mod, a.name) and importlib.util.find_spec(f"{node.module}.{a.name}") is None]
            elif isinstance(node, ast.Import):
                missing += [f"{where}: import {a.name}" for a in node.names if importlib.util.find_spec(a.name) is None]
    assert missing == []
