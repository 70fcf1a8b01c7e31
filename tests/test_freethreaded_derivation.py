"""Debian ships no free-threaded CPython, so free-threaded tables are derived: the release
pyconfig.h plus `Py_GIL_DISABLED` (`--config free-threaded`). Proven here against the real thing:
CPython 3.13.15's own ./configure run with and without --disable-gil.

(The compiled proof, a real free-threaded libpython's DWARF against the derived table, is
`scripts/prove-freethreaded`, too slow for every test run; see its header.)
"""
from __future__ import annotations

import dataclasses

import pytest

from offsets.scan import build_inputs as build, debian, scanner
from offsets.tools import matrix
from offsets.layout import table_yaml

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tree():
    return debian.source("python3.13", "sid", "3.13.15-1")


def test_configure_differs_only_in_py_gil_disabled(tree):
    release = build.pyconfig_defines(matrix._configured_pyconfig(tree, "release"))
    real = build.pyconfig_defines(matrix._configured_pyconfig(tree, "free-threaded"))
    assert {k: v for k, v in real.items() if release.get(k) != v} == {"Py_GIL_DISABLED": "1"}
    assert set(release) - set(real) == set()


def test_derived_table_equals_the_real_free_threaded_configs(tree):
    def headers_only(pyconfig, config):
        b = build.from_source(tree, pyconfig, target="x86_64-linux-gnu", config=config)
        return scanner.scan(dataclasses.replace(b, source=None))

    derived = headers_only(matrix._configured_pyconfig(tree, "release"), "free-threaded")
    real = headers_only(matrix._configured_pyconfig(tree, "free-threaded"), None)
    assert real.build.config["Py_GIL_DISABLED"] and derived.build.config["Py_GIL_DISABLED"]
    assert derived.structs["PyObject"].size > 16  # ob_tid, ob_ref_local, ob_ref_shared...
    same_inputs = dataclasses.replace(derived.build, inputs=real.build.inputs)
    # The one difference: the config's own macro. configure writes Py_GIL_DISABLED into pyconfig.h (a
    # constant of CPython's file); the derivation passes it on the command line (no file: left out).
    assert real.constants["Py_GIL_DISABLED"].value == 1 and "Py_GIL_DISABLED" not in derived.constants
    real_constants = {k: c for k, c in real.constants.items() if k != "Py_GIL_DISABLED"}
    assert table_yaml.dumps(dataclasses.replace(derived, build=same_inputs)) == table_yaml.dumps(
        dataclasses.replace(real, constants=real_constants))
