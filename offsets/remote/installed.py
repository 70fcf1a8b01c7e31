"""What a build has installed beside its interpreter binary, read under a root (another process's
`/proc/PID/root`, or `/` for a file): its prefix, its headers and their digests, its sysconfig data
(the core's compile flags, its multiarch), its vendor's package records. The same inputs
`identity.running()` computes for the running interpreter, for a build that cannot be asked.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Optional

from ..layout import identity
from ..layout.build_identity import once
from ..regular_file import read_most
from .process_root import at, escaping

#: The most of a `_sysconfigdata_*.py` read (CPython's are 20 to 60 KB).
MAX_SYSCONFIG_BYTES = 4 << 20


def prefix_of(binary: str, minor: str, root: str = "") -> Optional[str]:
    """The prefix of the build whose interpreter binary is `binary` (a path as its process sees it):
    `PREFIX/bin/python3.X`, `PREFIX/lib/libpython3.X.so.1.0` or `PREFIX/lib/MULTIARCH/libpython...`;
    None unless `PREFIX/lib/python3.X*` (the standard library) is there."""
    d = os.path.dirname(binary)
    candidates = [os.path.dirname(d)]
    if os.path.basename(os.path.dirname(d)) == "lib":
        candidates.append(os.path.dirname(os.path.dirname(d)))
    for prefix in candidates:
        lib = at(root, os.path.join(prefix, "lib"))
        try:
            names = os.listdir(lib)
        except OSError:
            continue
        if any(re.fullmatch(r"python%s[a-z]*" % re.escape(minor), n) for n in names):
            return prefix
    return None


def abi_flags(minor: str, config: dict) -> str:
    """The ABI flags of the build's file names: `t` free-threaded (3.13+), `d` debug, `m` pymalloc (to 3.7)."""
    major_minor = tuple(int(x) for x in minor.split("."))
    flags = ("t" if config.get("Py_GIL_DISABLED") else "") + ("d" if config.get("Py_DEBUG") else "")
    return flags + ("m" if major_minor < (3, 8) else "")


def sysconfig_vars(root: str, prefix: str, minor: str, abiflags: str, multiarch: str = "") -> dict:
    """The build's `build_time_vars` (its `_sysconfigdata_ABIFLAGS_*.py`), read as a literal, never
    run; {} when there is none."""
    inside = os.path.join(prefix, "lib", "python" + minor + ("t" if "t" in abiflags else ""))
    lib = at(root, inside)
    try:
        names = sorted(n for n in os.listdir(lib) if n.startswith("_sysconfigdata_") and n.endswith(".py"))
    except OSError:
        return {}
    want = "_sysconfigdata_%s_" % abiflags
    picks = [n for n in names if n.startswith(want) and (not multiarch or multiarch in n)] or \
        [n for n in names if n.startswith(want)]
    for name in picks:
        try:
            with open(at(root, os.path.join(inside, name)), "rb") as f:
                text = read_most(f, MAX_SYSCONFIG_BYTES).decode("utf-8", "replace")
            tree = ast.parse(text)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "build_time_vars" for t in node.targets):
                try:
                    found = ast.literal_eval(node.value)
                except ValueError:
                    continue
                if isinstance(found, dict):
                    return found
    return {}


def include_dir(root: str, prefix: str, minor: str, abiflags: str) -> Optional[str]:
    """The build's include directory under `root` when it holds `Python.h`, else None."""
    for flags in (abiflags, abiflags.replace("m", "")):
        d = at(root, os.path.join(prefix, "include", "python" + minor + flags))
        if os.path.isfile(at(root, os.path.join(d[len(root):], "Python.h"))):
            return d
    return None


def describe(root: str, binary: str, minor: str, config: dict, triple: str) -> dict:
    """What is installed beside `binary` under `root`: {prefix, include, files (its headers, read on
    demand: identity.InstalledFiles), whole_inputs (their whole digests, on demand), vendor,
    vendor_evidence}, each None where there is nothing, and `note`: why its headers are not read,
    when they are not."""
    out = {"prefix": None, "include": None, "files": None, "whole_inputs": None, "vendor": None,
           "vendor_evidence": "the binary lies in no prefix with a standard library beside it", "note": ""}
    prefix = prefix_of(binary, minor, root)
    if prefix is None:
        return out
    out["prefix"] = prefix
    out["vendor"], out["vendor_evidence"] = identity.vendor_evidence(prefix, minor, root=root,
                                                                     at=lambda path: at(root, path))
    flags = abi_flags(minor, config)
    include = include_dir(root, prefix, minor, flags)
    if include is None:
        return out
    v = sysconfig_vars(root, prefix, minor, flags, triple)
    multiarch = v.get("MULTIARCH") or triple
    cflags = " ".join(x for x in (v.get("PY_CORE_CFLAGS"), v.get("CFLAGS_NODIST")) if x)
    out["include"] = include[len(root):] if root and include.startswith(root) else include
    forwarded = os.path.join(os.path.dirname(out["include"]), multiarch, os.path.basename(out["include"]), "pyconfig.h")
    leaks = (escaping(include) + [p for p in (root + forwarded,) if _elsewhere(p, at(root, forwarded))]) if root else []
    if leaks:
        out["note"] = (f"its headers link outside its root ({leaks[0]}" + (f" and {len(leaks) - 1} more" if len(leaks) > 1
                       else "") + "), where this machine's files would be read: their digests are not taken")
        return out
    out["files"] = identity.InstalledFiles(include, cflags, multiarch)
    out["whole_inputs"] = once(lambda: identity.installed_inputs(include, cflags, multiarch))
    return out


def _elsewhere(kernels: str, mine: str) -> bool:
    """Whether the kernel opens another file for `kernels` than the process would (`mine`)."""
    try:
        theirs = os.stat(kernels)
    except OSError:
        return os.path.exists(mine)
    try:
        return not os.path.samestat(theirs, os.stat(mine))
    except OSError:
        return True
