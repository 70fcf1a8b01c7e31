"""python.org's 3.13.15 configured elsewhere (offsets/tools/foreign_builds.py, scripts/build-cpython's
`elsewhere` configs), release and free-threaded, is what it stands for: a static interpreter (no
libpython mapped), its own DWARF in the executable, and a pyconfig.h without what the configure
cache said is missing, with --enable-loadable-sqlite-extensions."""
from __future__ import annotations

import subprocess

import pytest

from offsets.scan.dwarf import has_dwarf
from offsets.tools import foreign_builds as fb


@pytest.mark.parametrize("config", ["release", "free-threaded"])
def test_the_build_configured_elsewhere(config):
    python = fb.elsewhere(config)
    out = subprocess.run([str(python), "-S", "-c",
                          "import sys, sysconfig; print(sys.version.split()[0]); "
                          "print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('Py_GIL_DISABLED')); "
                          "print(any('libpython' in l for l in open('/proc/self/maps')))"],
                         capture_output=True, text=True, check=True).stdout.split()
    version, include, gil_disabled, shared = out
    assert version == fb.ELSEWHERE_VERSION
    assert gil_disabled == ("1" if config == "free-threaded" else "0")
    assert shared == "False" and has_dwarf(python)
    pyconfig = open(f"{include}/pyconfig.h").read()
    for macro in ("HAVE_CLOSE_RANGE", "HAVE_MEMFD_CREATE", "HAVE_COPY_FILE_RANGE", "Py_ENABLE_SHARED"):
        assert f"#define {macro} " not in pyconfig
    assert "#define PY_SQLITE_ENABLE_LOAD_EXTENSION 1" in pyconfig
    assert fb.cases()[4 if config == "release" else 5].truth().binary == python
