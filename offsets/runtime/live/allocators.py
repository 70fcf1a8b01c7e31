"""Part of the live check (`runner.py`): the memory allocators, which the interpreter copies into a
buffer of the check's own (`PyMem_GetAllocator`, `PyObject_GetArenaAllocator`), read back through
the table. The truth is the binary's own symbol table: each function pointer must be the address
of the function of its name (`_PyMem_RawMalloc` for `malloc`), as the symbol table of the ELF file
that holds the interpreter gives it (static functions too, where the file keeps its `.symtab`),
moved by where this process mapped that file.

The file is read from disk, so it must be the one this process mapped: its build-id must be the
one read from its image in memory (runtime/binary.py); a file without one, or replaced since, is
not read. The allocators in use must be one of the families below, each of whose functions is at
a distinct address: a table that puts a field anywhere else reads another function's address, the
context pointer, or the zeros past the struct in the check's buffer. Where another allocator is
installed (tracemalloc's hooks, an embedder's own), no family matches and nothing is proven. The
check calls no allocator function: it only compares addresses.
"""
from __future__ import annotations


#: larger than either struct in any CPython
ROOM = 128
#: PyMem_GetAllocator(PYMEM_DOMAIN_RAW)'s functions, in the order of FIELDS: CPython's defaults, or
#: those of its debug hooks (PYTHONMALLOC=debug, a debug build) that wrap them
RAW = (("_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc", "_PyMem_RawFree"),
       ("_PyMem_DebugRawMalloc", "_PyMem_DebugRawCalloc", "_PyMem_DebugRawRealloc", "_PyMem_DebugRawFree"))
FIELDS = ("malloc", "calloc", "realloc", "free")
#: PyObject_GetArenaAllocator's functions (alloc, free): with mmap (up to 3.11, and from 3.12), or malloc
ARENA = (("_PyObject_ArenaMmap", "_PyObject_ArenaMunmap"), ("_PyMem_ArenaAlloc", "_PyMem_ArenaFree"),
         ("_PyObject_ArenaMalloc", "_PyObject_ArenaFree"))
ARENA_FIELDS = ("alloc", "free")
NAMES = [n for family in RAW + ARENA for n in family]
#: (what, struct, fields, families) of each allocator the check compares
ALLOCATORS = (("PyMem_GetAllocator(PYMEM_DOMAIN_RAW)", "PyMemAllocatorEx", FIELDS, RAW),
              ("PyObject_GetArenaAllocator", "PyObjectArenaAllocator", ARENA_FIELDS, ARENA))
#: the variables that hold them up to 3.11 (static in obmalloc.c; from 3.12 members of `_PyRuntime`,
#: where only the table says where): what a reader of another process reads (remote/proof.py)
STATICS = ("_PyMem_Raw", "_PyObject_Arena")
PYMEM_DOMAIN_RAW = 0


def check(c) -> None:
    c.attempt("PyMemAllocatorEx and PyObjectArenaAllocator against the binary's symbols", _check, c)


def _check(c) -> None:
    import ctypes

    addresses = functions(NAMES)
    api = ctypes.pythonapi
    raw = ctypes.create_string_buffer(ROOM)
    ctypes.PYFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)(("PyMem_GetAllocator", api))(
        PYMEM_DOMAIN_RAW, ctypes.addressof(raw))
    arena = ctypes.create_string_buffer(ROOM)
    ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("PyObject_GetArenaAllocator", api))(ctypes.addressof(arena))
    for (label, struct, fields, families), buf in zip(ALLOCATORS, (raw, arena)):
        c.run(f"{struct}: {label}", compare, c, label, ctypes.addressof(buf), struct, fields, families, addresses)
    del raw, arena


def compare(c, label: str, at: int, struct: str, fields: tuple, families: tuple, addresses: dict) -> None:
    """The allocator struct at `at` in the memory `c` reads (a buffer of the check's own, or another
    process's variable): its fields where the table puts them against the one family of `addresses`
    (name -> address in that memory) each of whose functions is there once within the struct's size
    as the table gives it. So a field the table puts elsewhere in it reads another value (past the
    struct lie zeros in the check's buffer, and in another process whatever the binary's data holds
    next, such as the copies of the same functions the debug hooks keep: not compared)."""
    rows, size = c.view.fields(struct), c.view.bound(struct)
    if rows is None or not size or size > ROOM or any(f not in rows or not 0 <= rows[f][0] <= size - c.psize
                                                      for f in fields):
        raise LookupError(f"{struct}: the table lacks one of {fields}, or its size is past the check's {ROOM} bytes")
    window = c.read(at, size)
    for family in families:
        truth = [addresses.get(n) for n in family]
        if None not in truth and all(c.held_once(window, a) for a in truth):
            break
    else:
        raise LookupError(f"none of the binary's own allocators {[f[0] for f in families]} "
                          "(another allocator is installed, or the binary keeps no symbol table)")
    c.expect(f"{struct}.{', '.join(fields)}: {label} gives {', '.join(family)}", truth,
             [c.field(at, struct, f) for f in fields])


def functions(names: list) -> dict:
    """name -> this process's address of each of `names` the interpreter's binary defines as a
    function; LookupError where its file cannot be read or shown to be the one mapped."""
    from ...remote.elf import Elf, ElfError
    from .. import binary

    path, build_id, base, why = binary.image()
    if build_id is None or base is None:
        raise LookupError(f"the binary's symbols cannot be read: {why}")
    try:
        with Elf(path) as f:
            if f.build_id() != build_id:
                raise LookupError(f"{path} on disk is not the file this process mapped (another build-id)")
            bias = base - f.first_vaddr()
            return {n: v + bias for n, v in f.functions(names).items()}
    except (OSError, ElfError) as e:
        raise LookupError(f"{path} cannot be read: {e}") from None
