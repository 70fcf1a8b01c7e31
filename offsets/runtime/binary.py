"""The binary that holds this process's interpreter, and its GNU build-id, read from the process
itself (docs/identity.md, "By build-id"); on Windows, its DLL and that image's CodeView record
(`image_of_dll`).

The interpreter's own static type objects lie in the data of the ELF that holds it: `id(int)` is
the address of `PyLong_Type`, in libpython (an `--enable-shared` build) or in the executable (a
static one, or a program that links CPython in). `/proc/self/maps` names the file mapped there;
its build-id is read from its image in this process's memory (`/proc/self/mem`, `remote/elf_id.py`),
so a file replaced on disk since it was loaded cannot answer for it. Nothing is started, written
or locked. When any step cannot be taken (no /proc, an unreadable mapping, another libpython
mapped beside it: two ELF files that both hold an interpreter), there is no build-id, and the next
rule decides.

`offsets._lookup.image()` takes the same steps in C (a first lookup then imports neither this
reader of ELF nor `struct`); wherever it finds anything but a build-id the plain way, it answers
None and the steps here decide, so the answer never depends on which one ran. It asks the loader
first (dl_iterate_phdr), which names the same file, base and build-id without the maps' text
(`_lookup.c` says where the two can differ: a file replaced on disk since it was loaded).
"""

import sys

#: The most of /proc/self/maps read (a process maps a few hundred files).
MAX_MAPS = 8 << 20


def _maps():
    """(start, end, offset, inode, path) of each file mapping of this process."""
    from ..regular_file import read_most

    with open("/proc/self/maps", "rb") as f:
        return maps_of(read_most(f, MAX_MAPS))


def maps_of(data: bytes) -> list:
    """(start, end, offset, inode, path) of each file mapping a /proc/PID/maps text (`data`) lists."""
    text = data.decode("utf-8", "replace")
    out = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        lo, _, hi = parts[0].partition("-")
        out.append((int(lo, 16), int(hi, 16), int(parts[2], 16), int(parts[4]), parts[5]))
    return out


_own_maps = _maps


def interpreter():
    """(path, build-id or None, why) of the ELF holding this interpreter, as this process maps it."""
    path, build_id, _, why = image()
    return path, build_id, why


def image():
    """(path, build-id or None, the address its first byte is mapped at or None, why) of the ELF
    holding this interpreter."""
    try:
        from .._lookup import image as in_c
    except ImportError:         # a source tree without its extensions built, or not Linux
        in_c = None
    if _maps is not _own_maps:  # mappings given in place of this process's (a test's): read them here
        in_c = None
    found = in_c() if in_c is not None else None
    return found if found is not None else image_read_here()


def image_read_here():
    """`image()`, all of it read by this module: what `_lookup.image()` leaves to it."""
    from ..remote import elf_id

    if sys.platform == "win32":
        return image_of_dll()

    try:
        maps = _maps()
    except (OSError, ValueError) as e:
        return None, None, None, f"/proc/self/maps cannot be read ({getattr(e, 'strerror', None) or e})"
    here = id(int)
    holding = [m for m in maps if m[0] <= here < m[1]]
    if not holding:
        return None, None, None, "no file mapping holds the interpreter's type objects"
    _, _, _, inode, path = holding[0]
    others = {m[4] for m in maps if elf_id.is_libpython(m[4]) and m[3] != inode}
    if others:
        return path, None, None, f"{path} holds the interpreter, and {sorted(others)[0]} is mapped too"
    starts = [m for m in maps if m[3] == inode and m[4] == path and m[2] == 0]
    if not starts:
        return path, None, None, f"{path}: the start of its image is not mapped"
    base = min(m[0] for m in starts)
    try:
        with open("/proc/self/mem", "rb", buffering=0) as mem:
            def read(where, n):
                mem.seek(base + where)
                return mem.read(n)
            found = elf_id.build_id(read, loaded=True)
    except (OSError, ValueError, OverflowError) as e:
        return path, None, base, f"{path}: its image in this process cannot be read ({getattr(e, 'strerror', None) or e})"
    return path, found, base, "" if found else f"{path} has no GNU build-id note"


def image_of_dll():
    """On Windows, `image()` of the DLL holding the interpreter (`sys.dllhandle`, python3X.dll: the
    module the loader says holds `id(int)`), its build-id the CodeView record of its image as the
    loader mapped it (`remote/pe.py`), read as the live check reads memory (`WindowsMemory`:
    ReadProcessMemory on the process itself, so a bad address fails instead of faulting)."""
    import ctypes
    from ctypes import wintypes

    from ..remote import pe
    from .live.toolkit import Fault, WindowsMemory

    base = getattr(sys, "dllhandle", None)
    if not base:
        return None, None, None, "this interpreter is not held by a DLL (sys.dllhandle)"
    k32 = ctypes.WinDLL("kernel32", use_last_error=True)
    k32.GetModuleHandleExW.argtypes = (wintypes.DWORD, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
    k32.GetModuleFileNameW.argtypes = (ctypes.c_void_p, wintypes.LPWSTR, wintypes.DWORD)
    holder = ctypes.c_void_p()
    # GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | _UNCHANGED_REFCOUNT
    if not k32.GetModuleHandleExW(0x4 | 0x2, id(int), ctypes.byref(holder)) or holder.value != base:
        return None, None, None, "the interpreter's type objects are not in the DLL sys.dllhandle names"
    name = ctypes.create_unicode_buffer(32768)
    path = name.value if k32.GetModuleFileNameW(base, name, len(name)) else None
    mem = WindowsMemory()
    try:
        found = pe.loaded_codeview(lambda offset, n: mem.read(base + offset, n))
    except (Fault, pe.PeError, ValueError) as e:
        return path, None, base, f"{path}: its image in this process cannot be read ({e})"
    return path, found, base, "" if found else f"{path} has no CodeView (RSDS) record"
