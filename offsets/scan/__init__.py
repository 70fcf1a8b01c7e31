"""Scanning: a build's inputs -> translation units -> libclang -> one `Table`.

build_inputs.py, targets.py, debian.py   what a build is made of (headers, pyconfig.h, sources, target)
process_headers.py                       another process's include directory as the compiler must read it
units.py, sources.py, source_reads.py, makefile.py, setup_py.py, generated_headers.py
                                         the translation units to parse, with the build's own flags
clang_headers.py, clang_scan.py, preamble.py
                                         libclang: builtin headers, one unit -> layouts, shared preambles
scanner.py, unit_cache.py, workers.py    the parallel, cached scan of every unit (in workers under a memory
                                         limit), merged into one Table
code_key.py                              the code a cached result depends on: part of every scan cache's key
qualify.py, storage.py, members.py       naming, listing and flattening rules both readers share
dwarf.py, dwarf_read.py, dwarf_raw.py    the second reader: layouts from a binary's DWARF
"""
