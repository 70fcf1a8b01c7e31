"""Every committed generated/pyoffsets_<table>.h survives a JIT's build flags: gcc and clang, C11 and
C++17, `-Wall -Wextra -Werror -pedantic`, alone and after its own build's Python.h with the layout
proof on (PYOFFSETS_CHECK_LAYOUT, the only include being Python.h, as docs/c-api.md says).

Any diagnostic fails, not only a non-zero exit status: stderr must be empty. The truth is the
compilers: `_Static_assert(offsetof(...) == N)` over the build's own headers.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import compile_memo
import sampling
from conftest import missing_input
from offsets.layout import c_header, table_yaml, targets
from offsets.scan import targets as scan_targets

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
HEADERS = sorted(GENERATED.glob("pyoffsets_cpython-*.h"))
STRICT = ["-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "-o", os.devnull]   # a real compile: -Wunused too
LANGS = {"c11": ["-x", "c", "-std=c11"], "c++17": ["-x", "c++", "-std=c++17"]}


def compilers(triple: str) -> dict:
    """name -> argv prefix of each compiler that targets `triple` (gcc: native, -m32 or the cross gcc)."""
    arch = triple.split("-", 1)[0]
    if triple in targets.ZIG_TARGETS:             # zig's clang, GNU mode (make test installs ziglang)
        zig = [sys.executable, "-m", "ziglang"]
        gcc, gxx = [*zig, "cc", "-target", targets.ZIG_TARGETS[triple]], [*zig, "c++", "-target", targets.ZIG_TARGETS[triple]]
        if importlib.util.find_spec("ziglang") is None:
            gcc = gxx = ["zig-is-not-installed"]
    elif targets.system(triple) == "windows":       # mingw-w64's gcc (make test installs it)
        gcc, gxx = ["x86_64-w64-mingw32-gcc"], ["x86_64-w64-mingw32-g++"]
    else:
        gcc = {"x86_64": ["gcc"], "i686": ["gcc", "-m32"]}.get(arch, [f"{triple}-gcc"])
        # the other CPUs' headers are compiled as C++ by clang++ alone (make test installs no g++ for them)
        gxx = {"x86_64": ["g++"], "i686": ["g++", "-m32"], "aarch64": ["aarch64-linux-gnu-g++"]}.get(arch)
    clang = ["clang", f"--target={triple}"]
    out = {"gcc": gcc, "clang": clang, "clang++": ["clang++", f"--target={triple}"], **({"g++": gxx} if gxx else {})}
    if targets.system(triple) == "macos":         # Darwin's thread-local storage needs a system version
        out = {n: cc + list(scan_targets.MACOS[triple]) for n, cc in out.items()}
        out["clang++"].append("-stdlib=libc++")   # Apple's C++ library (without it clang++ warns it has none)
    missing = [n for n, cc in out.items() if shutil.which(cc[0]) is None]
    if missing and os.environ.get("CI"):
        pytest.fail(f"missing compilers {missing} (make test installs gcc and clang)")
    return {n: cc for n, cc in out.items() if n not in missing}


def lang_of(name: str) -> str:
    return "c++17" if name.endswith("++") else "c11"


def compile_all(jobs: list) -> list:
    """[(argv prefix, lang, source, flags)] compiled concurrently; the failures, each with its exit status
    and every diagnostic (a clean compile has an empty stderr, not only exit status 0). A compile
    already clean with the same compiler, flags, source and every file it read is not repeated
    (tests/compile_memo.py)."""
    return compile_memo.compile_all([(cc + LANGS[lang] + STRICT + list(flags) + [str(src)], src)
                                     for cc, lang, src, flags in jobs])


def compile_clean(cc: list, lang: str, src: Path, flags=()) -> str:
    """'' when the compile is clean; else the exit status and every diagnostic."""
    return "".join(compile_all([(cc, lang, src, flags)]))


def triple_of(header: Path) -> str:
    return next(t for t in targets.TABLE_TARGETS if header.name.endswith(f"-{t}.h"))


@pytest.mark.parametrize("header", HEADERS, ids=[h.name for h in HEADERS])
def test_generated_header_alone_is_strict_clean(header, tmp_path):
    src = tmp_path / "alone.c"
    src.write_text(f'#include "{header.name}"\nint pyoffsets_table_len = (int)sizeof(PYOFFSETS_TABLE);\n')
    ccs = compilers(triple_of(header))
    assert ccs, "no compiler for this target"
    errors = compile_all([(cc, lang_of(name), src, [f"-I{GENERATED}"]) for name, cc in ccs.items()])
    assert not errors, "\n".join(errors)


def test_qualified_names_become_valid_unique_identifiers():
    """block@Modules/_collectionsmodule.c -> PYOFFSETS_block_AT_Modules__collectionsmodule__c_...; every
    macro of every header a C identifier, defined once (the preprocessor's truth is the test above)."""
    import re

    assert c_header.macro("block@Modules/_collectionsmodule.c", "leftlink") == \
        "PYOFFSETS_block_AT_Modules__collectionsmodule__c_leftlink"
    for h in HEADERS:
        names = re.findall(r"^#define (\S+) ", h.read_text(), re.M)
        bad = [n for n in names if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
        assert not bad, (h.name, bad[:5])
        assert len(names) == len(set(names)), h.name


#: The builds whose pyconfig.h ./configure makes on this machine that `make test` checks here: those
#: other tests of make test configure anyway (test_freethreaded_derivation, test_vendor_difference,
#: test_ambiguous_names). The others' headers are checked by `make prove` (tests/prove/
#: test_configured_headers.py), whose cache keeps its configured trees: each costs 30-50 s cold.
CONFIGURED_SAMPLE = ("cpython-3.13.15-x86_64-linux-gnu", "cpython-3.13.15-debian-x86_64-linux-gnu",
                     "cpython-3.13.15-debian-freethreaded-x86_64-linux-gnu")


def table_of(header: Path) -> str:
    return header.name[len("pyoffsets_"):-2]


@functools.lru_cache(maxsize=None)
def _jobs() -> dict:
    """table name -> its job of data/matrix.yaml (read and checked once per process: 14 ms a time)."""
    from offsets.tools import matrix

    return {j.table[:-len(".yaml")]: j for j in matrix.jobs()}


def checked_by_make_test(header: Path) -> bool:
    """Not the Windows tables' headers: Windows's own Python.h is not yet compiled here (with
    mingw-w64's headers it needs more than the scan's flags); their fields are proven by mingw-w64
    gcc's probes when `make tables` verifies them, and alone they compile clean above."""
    if targets.system(triple_of(header)) == "windows":
        return False
    job = _jobs().get(table_of(header))
    return job is None or not job.configures or table_of(header) in CONFIGURED_SAMPLE


_inputs: dict = {}


def inputs_of(name: str):
    """The BuildInputs of the matrix's build of table `name` for its headers (no source package
    asked for: `Job.headers`), each found once per process."""
    if name not in _inputs:
        job = _jobs().get(name)
        if job is None:
            pytest.fail(f"no inputs for {name}: not in offsets/data/matrix.yaml")
        try:
            _inputs[name] = job.headers()
        except Exception as e:   # an input not fetched: the failure names it
            pytest.fail(f"no inputs for {name}: {job.label}: {e}")
    return _inputs[name]


#: The headers whose layout proof `make test` compiles: of those it checks, the oldest and newest of
#: each kind (tests/sampling.py); `make prove` the others (tests/prove/test_beyond_samples.py)
PROOF_SAMPLE, PROOF_REST = sampling.split([h for h in HEADERS if checked_by_make_test(h)], table_of)


@pytest.mark.slow
@pytest.mark.parametrize("header", PROOF_SAMPLE, ids=lambda h: h.name)
def test_layout_proof_after_its_own_python_h_is_strict_clean(header, tmp_path):
    """Python.h, then PYOFFSETS_CHECK_LAYOUT and the header: thousands of static assertions, 0 diagnostics;
    with Py_BUILD_CORE the constants' too."""
    layout_proof_is_strict_clean(header, inputs_of(table_of(header)), tmp_path)


def layout_proof_is_strict_clean(header: Path, b, tmp_path: Path) -> None:
    from offsets.scan import targets

    text = header.read_text()
    n = text.count("PYOFFSETS_STATIC_ASSERT(")
    assert n > 100, f"{header.name} asserts only {n} things"
    src = tmp_path / "proof.c"
    src.write_text(f'#include <Python.h>\n#define PYOFFSETS_CHECK_LAYOUT 1\n#include "{header.name}"\n'
                   "int pyoffsets_proof_unit;\n")
    flags = [f"-I{b.include_dir}", f"-I{b.include_root}", f"-I{b.pyconfig.parent}", f"-I{GENERATED}", *b.defines()]
    cross = b.target != targets.host() or b.sysroot is not None
    system = [f"-isystem{d}" for d in targets.system_includes(b.target, b.sysroot)] if cross else []
    jobs = []
    for cname, cc in compilers(b.target.triple).items():
        own = ["-nostdinc", f"-isystem{builtin_include(cc)}", *system] if cross else []
        jobs.append((cc, lang_of(cname), src, own + flags))
        if b.hexversion >= 0x03080000:   # the constants' context; 3.6/3.7's Python.h is not core-clean in C++
            jobs.append((cc, lang_of(cname), src, own + flags + ["-DPy_BUILD_CORE"]))
    errors = compile_all(jobs)
    assert not errors, "\n".join(errors)


def builtin_include(cc: list) -> str:
    """The compiler's own headers (stddef.h...), kept when a cross compile drops the host's with -nostdinc."""
    return subprocess.run(cc + ["-print-file-name=include"], capture_output=True, text=True, check=True).stdout.strip()


def test_a_wrong_constant_fails_the_proof(tmp_path):
    """The proof can fail: one wrong offset in the running interpreter's own header stops the compile."""
    import sysconfig

    import offsets

    header = GENERATED / f"pyoffsets_{offsets.build().table}.h"
    if not header.exists():
        missing_input(f"no generated header for {offsets.build().table} (`make tables` makes it)")
    text = header.read_text()
    assert "PYOFFSETS_STATIC_ASSERT(offsetof(PyListObject, ob_item) == PYOFFSETS_PyListObject_ob_item," in text
    right = "#define PYOFFSETS_PyListObject_ob_item 24\n"
    assert right in text
    (tmp_path / header.name).write_text(text.replace(right, right.replace(" 24", " 32")))
    src = tmp_path / "proof.c"
    src.write_text(f'#include <Python.h>\n#define PYOFFSETS_CHECK_LAYOUT 1\n#include "{header.name}"\n')
    err = compile_clean(["gcc"], "c11", src, [f"-I{sysconfig.get_paths()['include']}", f"-I{tmp_path}"])
    assert "PyListObject.ob_item" in err


def test_a_warning_alone_fails_the_check(tmp_path):
    """What the headers did before (`#define PYOFFSETS_block@Modules/x.c_leftlink 0`): gcc only warns
    without -Werror, exit status 0; the check still fails, because it reads stderr."""
    src = tmp_path / "old.c"
    src.write_text("#define PYOFFSETS_block@Modules/x.c_leftlink 0\nint pyoffsets_unit;\n")
    proc = subprocess.run(["gcc", "-x", "c", "-std=c11", "-pedantic", "-c", "-o", os.devnull, str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "whitespace after the macro name" in proc.stderr
    global STRICT
    saved, STRICT = STRICT, [f for f in STRICT if f != "-Werror"]
    try:
        assert "whitespace after the macro name" in compile_clean(["gcc"], "c11", src)
    finally:
        STRICT = saved
