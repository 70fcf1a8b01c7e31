"""`make bench`'s figure of the package as pip installs it (bench_startup.pip_installed), run for
real: a wheel built from this checkout offline, installed by pip into a venv of the interpreter the
bench runs on, byte-compiled, and its first lookup, the floor under it and the same lookup read
by the C extension alone measured there (the shipped table of this interpreter's build-id)."""
from __future__ import annotations

from pathlib import Path

from offsets.tools import bench_startup


def test_the_first_lookup_is_measured_where_pip_installed_the_package(tmp_path):
    got = bench_startup.pip_installed(tmp_path, runs=3)
    assert "error" not in got, got
    package = Path(got["package"])
    assert package.is_relative_to(tmp_path / "venv") and package.parent.name == "site-packages"
    assert list((package / "runtime" / "__pycache__").glob("core.*.pyc")), "pip byte-compiles what it installs"
    assert list(package.glob("_lookup.*.so"))
    assert got["extra_ms"] > max(got["floor"]["extra_ms"], 0) and got["ratio"] > got["floor"]["ratio"]
    assert got["c_alone"] is not None, "pyenv's interpreter's build-id is in a shipped table"
    assert got["extra_ms"] > got["c_alone"]["extra_ms"]
    lines = bench_startup.pip_report(got)
    assert len(lines) == 3 and "the floor under it" in lines[1] and lines[2].endswith(" ms")
