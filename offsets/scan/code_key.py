"""The code a cached result depends on, as one digest: part of every scan cache key.

`digest("offsets.scan.clang_scan", ...)` is the sha256 of those modules' source and of every module
of this package they import, however deep and wherever the import stands (inside a function too),
read with `ast` rather than from what happens to be imported. The unit cache (`scanner`), the DWARF
reads (`dwarf`) and the source plans (`sources`) key their entries on it, so a changed reader, model
rule or cache encoding parses again: a revision number to bump by hand was the rule before, and a
test on a warm cache could not see a scanner change it forgot.

A package's `__init__` is hashed but not followed: it is the package's map (the top one loads the
runtime API lazily), and no scan result runs its code.
"""
from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Optional

PACKAGE_DIR = Path(__file__).resolve().parent.parent
PACKAGE = PACKAGE_DIR.name


def _file(module: str, package_dir: Path) -> Optional[Path]:
    """The source file of `module` (dotted, from the package's name), or None if it is no module of ours."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = package_dir.joinpath(*parts[1:])
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _imports(module: str, path: Path, package_dir: Path) -> set[str]:
    """The package's modules that `module`'s source imports, anywhere in it."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)   # `from . import storage`: a module
    return {m for m in found if _file(m, package_dir) is not None}


def modules(*roots: str, package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Module name -> source file, for `roots` and every module of the package they import."""
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _file(name, package_dir)
        if path is None:
            raise ValueError(f"{name} is not a module of {PACKAGE}")
        seen[name] = path
        if path.name != "__init__.py":
            todo.extend(_imports(name, path, package_dir))
    return seen


@lru_cache(maxsize=None)
def digest(*roots: str, package_dir: Path = PACKAGE_DIR) -> str:
    """sha256 (hex) over the source of `roots` and every module of the package they import."""
    h = hashlib.sha256()
    for name, path in sorted(modules(*roots, package_dir=package_dir).items()):
        data = path.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()
