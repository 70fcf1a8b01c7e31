"""Which CPython build a Windows binary is (`offsets identify --binary python313.dll`), read from the
PE image alone (remote/pe.py), never from its file name:

- **its build-id**: the CodeView record that links it to its PDB (GUID and age, as symbol servers
  key it);
- **the version**: the version resource python.org's builds carry (`PC/python_nt.rc`: major, minor,
  then micro x 1000 + release level x 10 + serial), checked against the exported `Py_Version` (3.11+);
- **free-threaded and debug**, from the exports, as for ELF (`identify.FLAG_SYMBOLS`);
- **CPU and pointer size**: the COFF header and the optional header's magic.

No headers are read beside it (the embeddable build has none; an installer's `include/` is not
compared yet), so its table is exact only by a build-id a table records, else proven by the check
the DLL's bytes allow (`proof.check_pe`), else refused.
"""
from __future__ import annotations

import os
import stat
from typing import Optional

from ..errors import NotPython
from ..layout import identity
from . import pe
from .elf import INTERPRETER_SYMBOL

#: The CPU word of a PE image -> the triple of python.org's MSVC builds for it.
TRIPLES = {"x86_64": "x86_64-pc-windows-msvc", "aarch64": "aarch64-pc-windows-msvc", "i686": "i686-pc-windows-msvc"}
#: PC/python_nt.rc's release level digit -> PY_RELEASE_LEVEL
LEVELS = {10: 0xA, 11: 0xB, 12: 0xC, 15: 0xF}


def is_pe(path: str) -> bool:
    """Whether the file at `path` is a regular file that starts as a PE image does (a FIFO or a
    device is never opened here: the ELF reader refuses it in one line)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            return fh.read(2) == b"MZ"
    except OSError:
        return False


def hexversion_of_resource(parts: Optional[tuple]) -> Optional[int]:
    """PY_VERSION_HEX from the fixed file version python_nt.rc writes, or None when it is not one."""
    if parts is None:
        return None
    major, minor, field3, _ = parts
    micro, level, serial = field3 // 1000, LEVELS.get(field3 % 1000 // 10), field3 % 10
    if major != 3 or level is None:
        return None
    return (major << 24) | (minor << 16) | (micro << 8) | (level << 4) | serial


def read(path: str, real: str, flag_symbols: dict) -> dict:
    """What the Windows DLL at `real` (given as `path`) says of its build, as `identify.Identity`'s
    keys (its `hexversion`; `identify` spells the version); `flag_symbols`: identify.FLAG_SYMBOLS."""
    try:
        with open(real, "rb") as fh:
            image = pe.Coff(fh.read(), "its image")
        exports = image.exports()
    except (OSError, pe.PeError) as e:
        raise NotPython(f"{path} is not an interpreter binary: {e}") from None
    if INTERPRETER_SYMBOL not in exports:
        raise NotPython(f"{path} exports no {INTERPRETER_SYMBOL}: not the DLL that holds the interpreter "
                        f"(python3X.dll beside python.exe is)")
    triple = TRIPLES.get(image.cpu or "")
    if triple is None:
        raise NotPython(f"{path}: a CPython for PE machine {image.machine:#x}, which no table is made for")
    from_resource = hexversion_of_resource(image.file_version())
    exported = None
    if "Py_Version" in exports:
        exported = int.from_bytes(image.read_rva(exports["Py_Version"], 4), "little")
    if exported is not None and from_resource is not None and exported != from_resource:
        raise NotPython(f"{path}: its version resource says {_spelled(from_resource)} and its Py_Version "
                        f"{_spelled(exported)}: the image is not one build")
    source = "Py_Version and the version resource" if exported is not None and from_resource is not None else \
        "Py_Version" if exported is not None else "its version resource" if from_resource is not None else ""
    found = {flag: any(s in exports for s in names) for flag, names in flag_symbols.items()}
    found["Py_DEBUG"] = found["Py_REF_DEBUG"]
    build_id = image.codeview()
    return {"binary": path, "build_id": build_id, "hexversion": exported if exported is not None else from_resource,
            "version_from": source or "not found (no Py_Version, no version resource)",
            "config": {f: found[f] for f in identity.LAYOUT_FLAGS}, "triple": triple,
            "pointer_size": image.pointer_size, "byteorder": "little", "opened": real, "image": "pe",
            "build_id_why": "" if build_id else "the DLL has no CodeView (RSDS) record",
            "vendor_evidence": "a Windows DLL: no distributor's record is read",
            "notes": ["a Windows DLL: the headers beside it are not compared, so a table is exact for it only by "
                      "a build-id it records"]}


def _spelled(h: int) -> str:
    return f"{h >> 24}.{(h >> 16) & 0xFF}.{(h >> 8) & 0xFF}"
