"""Other processes: which CPython build a process (or a binary) is, and reading its memory with
that build's table. Standard library only, no scanner: it runs in profilers' environments.

    offsets.remote.attach(pid)      -> process.Process: build, table, get/sizeof/constant, read, threads()
    offsets.remote.identify(pid=..., binary=...) -> (identify.Identity, choose.Choice or the refusal)

One job per module:

    elf.py        ELF files with the standard library: header, GNU build-id, symbols, file bytes
    procfs.py     /proc/PID: exists, may be read, maps, root, threads; the process errors
    process_root.py  paths under /proc/PID/root resolved within that root (the scanner's too)
    memory.py     process_vm_readv(2), else /proc/PID/mem; all-or-nothing reads
    installed.py  what a build installed beside its binary: prefix, header digests, sysconfig, vendor
    identify.py   the binary holding the interpreter, and the build it is
    choose.py     the table for that build, and how it is earned (build-id, digests, package, proven)
    anchors.py    truths a binary carries about its layouts (type objects, _Py_DebugOffsets)
    proof.py      the check in the process's memory that makes a table proven
    reader.py     typed reads through a table: fields, object types, str, bytes
    linetable.py  line numbers, in each version's own line-table format
    frames.py     interpreters, thread states and every thread's frames
    process.py    attach(): the library readers use
"""


def attach(pid: int, strict=None):
    """The process `pid` with its build, table and answers (`process.Process`); close() it when done."""
    from .process import attach as _attach

    return _attach(pid, strict)
