"""Other processes: which CPython build a process (or a binary) is, and reading its memory with
that build's table (issue 22). Standard library only, no scanner: it runs in profilers' environments.

    elf.py        ELF files with the standard library: header, GNU build-id, symbols, file bytes
    anchors.py    truths a binary carries about its layouts (type objects, _Py_DebugOffsets)
"""
