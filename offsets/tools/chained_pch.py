"""Whether this libclang loads a precompiled header saved on top of another (a chained one).

A shared preamble (offsets/scan/preamble.py) ends at the include of Python.h, because the units that
share one part ways at their next include. Going further would need one precompiled header per such
include, each saved after parsing on its parent's; libclang saves that file, but parsing a unit on it
crashes the process (16.0.6, the scanner's, and 18.1.1, both on x86_64). This shows it on three
small headers, in a child process so that the crash is a line of output:

    python -m offsets.tools.chained_pch
    base.pch: loads
    chained.pch: crashes (SIGSEGV)
"""
from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from . import command_line

HEADERS = {
    "a.h": "#ifndef A_H\n#define A_H\nstruct a { int x; };\n#endif\n",
    "b.h": '#ifndef B_H\n#define B_H\n#include "a.h"\nstruct b { struct a a; long y; };\n#endif\n',
    "m.c": '#include "a.h"\n#include "b.h"\nstruct m { struct b b; };\n',
}

#: Run in a child: build a.h's precompiled header, then b.h's on it, then parse m.c on the one named.
_CHILD = """
import sys
from offsets.scan.clang_scan import _cindex
ci = _cindex()
d, which = sys.argv[1], sys.argv[2]
opts = ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES | ci.TranslationUnit.PARSE_INCOMPLETE
head = ["-x", "c-header", "-I" + d]
ci.Index.create().parse(d + "/a.h", args=head, options=opts).save(d + "/base.pch")
ci.Index.create().parse(d + "/b.h", args=head + ["-include-pch", d + "/base.pch"], options=opts).save(d + "/chained.pch")
tu = ci.Index.create().parse(d + "/m.c", args=["-x", "c", "-I" + d, "-include-pch", d + "/" + which], options=opts)
print(len([x for x in tu.diagnostics if x.severity >= ci.Diagnostic.Error]))
"""


def outcome(which: str, folder: str) -> str:
    """'loads' (no error), 'loads with N errors', or how the child that parsed on `which` ended."""
    run = subprocess.run([sys.executable, "-c", _CHILD, folder, which], capture_output=True, text=True)
    if run.returncode < 0:
        sig = -run.returncode
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        return f"crashes ({name})"
    if run.returncode != 0:
        last = run.stderr.strip().splitlines()[-1:] or ["no message"]
        return f"fails: {last[0]}"
    errors = int(run.stdout.split()[-1])
    return "loads" if errors == 0 else f"loads with {errors} errors"


EXAMPLES = """  python -m offsets.tools.chained_pch           whether this libclang loads a chained precompiled header
"""


def main(argv=None) -> int:
    command_line.no_arguments("chained_pch", __doc__, EXAMPLES, argv)
    with tempfile.TemporaryDirectory(prefix="offsets-chained-pch-") as folder:
        for name, text in HEADERS.items():
            Path(folder, name).write_text(text)
        for which in ("base.pch", "chained.pch"):
            print(f"{which}: {outcome(which, folder)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
