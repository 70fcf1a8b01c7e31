"""Debian's interpreters of the other CPUs tables are made for (32-bit ARM, ppc64el, s390x, riscv64),
run under qemu-user (offsets/tools/debian_interpreters.py).

`BUILDS` is every such table of data/matrix.yaml, read from it; `SAMPLE` the one per CPU that
`make test` checks (tests/test_other_cpus.py), the others are `make prove`'s
(tests/prove/test_other_cpus.py).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from conftest import missing_tool
from offsets.tools import debian_interpreters
from offsets.tools.debian_interpreters import QEMU, LIBS, root, table_name  # noqa: F401 (the tests' names)

REPO = Path(__file__).resolve().parent.parent
#: (version, triple, matrix entry) of every table of another CPU's release build
BUILDS = debian_interpreters.builds()
#: make test's sample: sid's 3.14 where the CPU has 3.14.10, else its newest
SAMPLE = {t: next((b for b in BUILDS if b[1] == t and b[0] == "3.14.10"), None) or
          [b for b in BUILDS if b[1] == t][-1] for t in QEMU}


def build_id(b) -> str:
    return f"{b[0]}-{b[1]}"


def run(b, code: str, *args: str, timeout: int = 900) -> str:
    """`code` run in that interpreter under qemu with the checkout importable; its stdout (a skip
    without that CPU's qemu-user program)."""
    if shutil.which(QEMU[b[1]]) is None:
        missing_tool(QEMU[b[1]], "make test installs qemu-user")
    return debian_interpreters.run(b, code, *args, timeout=timeout)


#: What the interpreter says of itself: the table the runtime chose and how, its live check, and a
#: field against the interpreter's own record of its layout
LIVE = r"""
import json, platform, sys
from offsets import runtime
m = runtime.build()
check = runtime.live_check()
me = runtime.running_identity()
print(json.dumps({"machine": platform.machine(), "byteorder": sys.byteorder, "version": platform.python_version(),
                  "table": m.table, "kind": m.kind, "detail": m.detail, "target": me.triple,
                  "tuple_items": runtime.get("PyTupleObject.ob_item"), "truth": tuple.__basicsize__,
                  "passed": len(check.passed), "failed": check.failed, "ok": check.ok,
                  "proven": len(check.proven)}))
"""
