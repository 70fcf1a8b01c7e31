"""A slim container: the interpreter's headers are not installed, so no digest can be compared.
Inside Debian sid's own interpreters the distributor's record of the package (its changelog beside
the prefix) is the identity: the shipped Debian table of that very package version answers
exactly (and the build-id its tables record for the binary, which comes first); CPython's own `__basicsize__` and `_Py_DebugOffsets` (through the live check) agree."""
from __future__ import annotations

import json

import pytest

import realbuilds

HIDDEN = r"""
import json, sys
from offsets.layout import identity
from offsets import runtime
from offsets.runtime import binary
identity.installed_inputs = lambda include, cflags: None      # as if python3.X-dev were not installed
identity.InstalledFiles.available = property(lambda self: False)
if sys.argv[1:] == ["no-build-id"]:     # and as if the tables recorded no build-id of this binary
    binary.interpreter = lambda: (None, None, "hidden by the test")
m = runtime.build()
me = runtime.running_identity()
check = runtime.live_check()
print(json.dumps({"kind": m.kind, "detail": m.detail, "vendor": me.vendor, "inputs": me.inputs,
                  "tuple_items": runtime.get("PyTupleObject.ob_item"), "truth": tuple.__basicsize__,
                  "check_ok": check.ok, "failed": check.failed}))
"""


@pytest.mark.parametrize("minor", sorted(realbuilds.SID_PYTHON))
def test_without_headers_the_distributors_package_is_the_identity(minor, tmp_path):
    py = realbuilds.sid_python(minor)
    env = {"OFFSETS_TABLES": str(tmp_path), "OFFSETS_AUTOSCAN": "0"}
    pinned = json.loads(realbuilds.run_in(py, HIDDEN, env=env))     # the tables record its build-id: rule 1
    assert pinned["kind"] == "exact" and "build-id" in pinned["detail"], pinned
    out = json.loads(realbuilds.run_in(py, HIDDEN, "no-build-id", env=env))
    assert not out["inputs"] and out["vendor"].startswith(f"debian {minor}.")
    assert out["kind"] == "exact" and "same package" in out["detail"], out
    assert out["tuple_items"] == out["truth"]
    assert out["check_ok"] and not out["failed"], out["failed"]
