"""Builds the test extension against the *installed* offsets' pyoffsets.h (offsets.get_include()).

    python setup.py build_ext --build-lib OUT --build-temp TMP
"""
import offsets
from setuptools import Extension, setup

setup(name="jitext", version="0", py_modules=[],
      ext_modules=[Extension("jitext", ["jitext.c", "noimport.c"], include_dirs=[offsets.get_include()],
                             extra_compile_args=["-Wall", "-Werror", "-Wno-unused-function"])])
