"""Builds jitdemo for the interpreter that runs this file (see jitdemo.c and docs/c-api.md):

    python setup.py build_ext --inplace

It needs `offsets` installed in that interpreter (for pyoffsets.h, the run-time header) and the
generated header of that exact build, generated/pyoffsets_<table>.h of this repository (or the
directory PYOFFSETS_GENERATED names). The table is the one `offsets.build()` reports; only an
exact match has a header made for this build.
"""
import os
import sys

import offsets
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATED = os.environ.get("PYOFFSETS_GENERATED") or os.path.join(HERE, "..", "..", "generated")

match = offsets.build()
if match.kind != "exact":
    sys.exit(f"jitdemo: offsets matched this interpreter {match.kind}ly ({match.table}); compile-time constants "
             f"need the exact build's header: scan this build (`offsets scan`) and generate its header")
header = f"pyoffsets_{match.table}.h"
if not os.path.isfile(os.path.join(GENERATED, header)):
    sys.exit(f"jitdemo: no {header} in {GENERATED} (set PYOFFSETS_GENERATED to the directory holding it)")

setup(name="jitdemo", version="0", py_modules=[],
      ext_modules=[Extension("jitdemo", ["jitdemo.c"], include_dirs=[offsets.get_include(), GENERATED],
                             define_macros=[("PYOFFSETS_BUILD_HEADER", f'"{header}"')],
                             extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror",
                                                 "-Wno-missing-field-initializers", "-Wno-unused-parameter",
                                                 "-Wno-cast-function-type"])])
