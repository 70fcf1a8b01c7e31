"""Clean compiles remembered across runs, under a key of everything a compile's result depends on.

A compile is deterministic in: the compiler (its driver's path, bytes and `--version`), its whole
argument list, the source text, and every file the preprocessor read (gcc's and clang's `-MD`
list, system headers included, each with its sha256). Only a clean compile (exit 0, empty stderr)
is remembered; a warm run re-hashes every file the compile read and skips the compiler only when
all are unchanged. A compile with any diagnostic is never remembered, so it fails again every run.
Entries live in `$OFFSETS_CACHE/compiles/` as `offsets.data_cache` entries (a damaged one is a miss).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from offsets import data_cache
from offsets.layout.identity import cache_dir


@lru_cache(maxsize=None)
def compiler_identity(driver: str) -> str:
    """The driver's resolved path, the sha256 of its bytes and its `--version` text."""
    path = shutil.which(driver)
    if path is None:
        return f"missing:{driver}"
    real = os.path.realpath(path)
    version = subprocess.run([real, "--version"], capture_output=True, text=True).stdout
    return f"{real}\0{data_cache.file_sha256(real)}\0{version}"


_digests: dict = {}


def _digest(path: str) -> str:
    st = os.stat(path)
    stamp = (path, st.st_size, st.st_mtime_ns, st.st_ino)
    if stamp not in _digests:
        _digests[stamp] = data_cache.file_sha256(path)
    return _digests[stamp]


def key_of(argv: list, src: Path) -> str:
    """The memo key of compiling `src` with `argv` (the source's path replaced by its content)."""
    blob = json.dumps([compiler_identity(argv[0]), [a for a in argv if a != str(src)],
                       hashlib.sha256(src.read_bytes()).hexdigest()])
    return hashlib.sha256(blob.encode()).hexdigest()


def _store() -> Path:
    return Path(cache_dir()) / "compiles"


def remembered(key: str) -> bool:
    """True if a clean compile under `key` read files that all still have the same content."""
    doc = data_cache.load(_store() / f"{key}.json", key)
    if not isinstance(doc, dict) or not isinstance(doc.get("deps"), dict) or not doc["deps"]:
        return False
    try:
        return all(_digest(p) == d for p, d in doc["deps"].items())
    except OSError:
        return False


def dep_files(depfile: Path, src: Path) -> list:
    """The files a `-MD` dependency file lists, the compiled source left out."""
    text = depfile.read_text().replace("\\\n", " ")
    words, word, i = [], "", text.index(": ") + 2
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in " #":
            word += text[i + 1]
            i += 2
            continue
        if c.isspace():
            if word:
                words.append(word)
            word = ""
        else:
            word += c
        i += 1
    if word:
        words.append(word)
    return sorted({os.path.realpath(w) for w in words} - {os.path.realpath(src)})


def remember(key: str, depfile: Path, src: Path) -> None:
    try:
        deps = {p: _digest(p) for p in dep_files(depfile, src)}
    except (OSError, ValueError):
        return
    if deps:
        data_cache.store(_store() / f"{key}.json", key, {"deps": deps})


def compile_all(jobs: list) -> list:
    """[(argv, source)] compiled concurrently unless remembered clean; the failures, each with its
    argv, exit status and every diagnostic (a clean compile has an empty stderr, not only exit 0)."""
    with tempfile.TemporaryDirectory(prefix="offsets-ccmemo-") as tmp:
        procs = []
        for n, (argv, src) in enumerate(jobs):
            key = key_of(argv, src)
            if remembered(key):
                continue
            dep = Path(tmp) / f"{n}.d"
            here = Path(tmp) / str(n)   # its own directory: zig given `-o /dev/null` writes an object there
            here.mkdir()
            procs.append((argv, src, key, dep, subprocess.Popen(argv + ["-MD", "-MF", str(dep)], text=True, cwd=here,
                                                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
        errors = []
        for argv, src, key, dep, p in procs:
            _, err = p.communicate()
            if p.returncode or err.strip():
                errors.append(f"{' '.join(map(str, argv))}: exit {p.returncode}\n{err[-2500:]}")
            else:
                remember(key, dep, src)
    return errors
