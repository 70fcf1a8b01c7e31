"""Headers a CPython build generates that a scan can make the way the build does, into the cache.

Only `Include/pydtrace_probes.h` (pyconfig.h's WITH_DTRACE, Debian's --with-dtrace): its rule in
Makefile.pre.in runs `$(DTRACE) $(DFLAGS) -o $@ -h -s $<` on Include/pydtrace.d and then a `sed`
renaming. The recipe is read from the Makefile and each line run as what it is (no shell); a line
of another shape means the rule changed and the header is not made. The output goes to a
content-keyed directory of the cache (keyed by the rule, pydtrace.d and the dtrace program), never
into the source tree: the unit gets `-I<that dir>/Include`, as an out-of-tree build's `-IInclude`.
"""
from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from .. import children, data_cache
from ..errors import BuildError
from ..atomic_write import write_folder
from .makefile import Makefile, relative

DTRACE_HEADER = "Include/pydtrace_probes.h"


def dtrace_header(mk: Makefile, source: Path, sysdirs) -> tuple[Path | None, str]:
    """(the directory to add with -I, "") once Include/pydtrace_probes.h is made, or (None, why not)."""
    rule = next(((pre, body) for targets, pre, body in mk.rules
                 if DTRACE_HEADER in [relative(t, source) for t in mk.words(targets)]), None)
    if rule is None:
        return None, f"Makefile.pre.in has no rule for {DTRACE_HEADER}"
    pre, body = rule
    inputs = [relative(p, source) for p in mk.words(pre)]
    if inputs != ["Include/pydtrace.d"] or not (source / "Include/pydtrace.d").is_file():
        return None, f"its rule reads {inputs}, not Include/pydtrace.d alone"
    dtrace = shutil.which(mk.expand("$(DTRACE)").strip() or "dtrace")
    if dtrace is None:
        return None, "the build makes it with dtrace, which is not installed (apt-get install systemtap-sdt-dev)"
    if not any((d / "sys/sdt.h").is_file() for d in sysdirs):
        return None, "dtrace's header includes <sys/sdt.h>, which the target's C include directories lack " \
                     "(Debian: systemtap-sdt-dev for that architecture)"
    steps = []
    for line in body:
        words = shlex.split(mk.expand(line))
        while words and re.fullmatch(r"\w+=.*", words[0]):
            words = words[1:]           # CC="$(CC)" ...: the environment of the command (unused by -h)
        if not words or words[0] == ":" or words[0] == "mkdir" or line.startswith("$(MKDIR_P)"):
            continue
        steps.append(words)
    shapes = [s[:1] + ["..."] for s in steps]
    if not (len(steps) == 3 and steps[0][-5:] == ["-o", "$@", "-h", "-s", "$<"]
            and steps[1][0] == "sed" and len(steps[1]) == 5 and steps[1][2:] == ["$@", ">", "$@.tmp"]
            and re.fullmatch(r"s/(\w+)/(\w+)/", steps[1][1]) and steps[2] == ["mv", "$@.tmp", "$@"]):
        return None, f"its rule in Makefile.pre.in is not dtrace -h, sed, mv as expected: {shapes}"
    old, new = re.fullmatch(r"s/(\w+)/(\w+)/", steps[1][1]).groups()
    key = hashlib.sha256("\0".join([" ".join(" ".join(s) for s in steps),
                                    (source / "Include/pydtrace.d").read_text(errors="replace"),
                                    Path(dtrace).read_bytes().decode(errors="replace")]).encode()).hexdigest()[:24]
    out = data_cache.folder() / "generated" / key
    if (out / DTRACE_HEADER).is_file():
        return out / "Include", ""
    with tempfile.TemporaryDirectory(prefix="offsets-dtrace-") as tmp:
        header = Path(tmp) / "Include" / "pydtrace_probes.h"   # dtrace names its include guard after the file
        header.parent.mkdir()
        proc = children.run([dtrace, *steps[0][1:-5], "-o", str(header), "-h", "-s", str(source / "Include/pydtrace.d")],
                            "dtrace -h", BuildError)
        if proc.returncode or not header.is_file():
            return None, f"dtrace -h failed: {(proc.stderr.strip().splitlines() or ['no message'])[-1]}"
        text = header.read_text()
        header.write_text("".join(re.sub(old, new, ln, count=1) for ln in text.splitlines(keepends=True)))  # sed s///
        write_folder(out, lambda staging: shutil.move(str(header.parent), str(staging / "Include")))
    return out / "Include", ""
