"""The build: metadata is in pyproject.toml; this file adds the C extension behind headers/pyoffsets.h.

`pip install .` compiles offsets/_offsets.c (the capsule of the C API), offsets/_lookup.c (what
offsets.get & co. are) and offsets/_raised.c (the live check's read of a thread state while an
exception is raised) for the interpreter that installs it, and puts pyoffsets.h inside the package (offsets/include/, what offsets.get_include()
returns once installed; a checkout's get_include() is headers/). The shipped tables are already in
the package as generated data (offsets/data/compact/, made by `python -m offsets.tools.regenerate`).
"""
import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HEADER = os.path.join("headers", "pyoffsets.h")


class BuildPyWithHeader(build_py):
    """build_py, plus headers/pyoffsets.h copied to offsets/include/ in the built package."""

    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):
            target = os.path.join(self.build_lib, "offsets", "include")
            os.makedirs(target, exist_ok=True)
            shutil.copyfile(HEADER, os.path.join(target, "pyoffsets.h"))

    def get_outputs(self, *args, **kwargs):
        outputs = super().get_outputs(*args, **kwargs)
        if not getattr(self, "editable_mode", False):
            outputs.append(os.path.join(self.build_lib, "offsets", "include", "pyoffsets.h"))
        return outputs


setup(
    ext_modules=[Extension("offsets._offsets", sources=["offsets/_offsets.c"], include_dirs=["headers"],
                           depends=[HEADER]),
                 Extension("offsets._lookup", sources=["offsets/_lookup.c"],      # offsets.get & co., and what a
                           depends=["offsets/_lookup_digest.h", "offsets/_lookup_json.h",     # first lookup reads with
                                    "offsets/_lookup_table.h"]),
                 Extension("offsets._raised", sources=["offsets/_raised.c"])],  # one read of the live check
    cmdclass={"build_py": BuildPyWithHeader},
)
