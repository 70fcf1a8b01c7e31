"""The extension of jitdemo (metadata: pyproject.toml; see jitdemo.c and docs/c-api.md):

    pip install .

`offsets.include_dirs()` is pyoffsets.h's directory and the one of this build's generated header
(pyoffsets_build.h, written from the table the runtime chose; an error unless that table is exactly
this build's): no checkout of the offsets repository is needed.
"""
import offsets
from setuptools import Extension, setup

setup(py_modules=[],   # demo.py is run from here, not installed
      ext_modules=[Extension("jitdemo", ["jitdemo.c"], include_dirs=offsets.include_dirs(),
                             extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror",
                                                 "-Wno-missing-field-initializers", "-Wno-unused-parameter",
                                                 "-Wno-cast-function-type"])])
