"""offsets: where every field of CPython's internal structs lives, for every CPython build.

The package is the pipeline, one subpackage per stage (docs/architecture.md has the data between them):

    scan/      a build's inputs -> translation units -> libclang (and a binary's DWARF) -> one Table
    layout/    the Table model, its rules and names, and its forms: YAML, compact (what the runtime reads), C
    check/     gcc offsetof probes, `offsets verify`, the records of what verified each committed table
    runtime/   offsets.get() & co. for the running interpreter, how each answer is earned, the live check (live/)
    proofs/    the proofs a table that is not exact answers by, over a memory reader (this process or another)
    remote/    another process or a binary: its build, its table (the runtime's one rule), its memory and stacks
    export/    offsets and constants for readers in other languages (C, Rust, Go, JSON), by version and build-id
    drift/     diff, history, report: how layouts change across tables
    cli/       the `offsets` command, one module per group of subcommands
    tools/     `make tables` (regenerate, matrix) and `make bench`: run from a checkout

    errors.py, atomic_write.py     shared by every stage: error types, safe writes (files and cache folders)
    data_cache.py, cache_lock.py   the cache's folder, checked JSON entries, generations; one process fills a folder
    progress.py                    the one progress line on standard error
    children.py                    the processes the package starts: they die with it, their output read up to a cap
    regular_file.py                what a user names or the cache holds, read only if it is a regular file
    _offsets.c                     the C API capsule behind headers/pyoffsets.h
    _lookup.c                      what offsets.get, sizeof and constant are: dict lookups with a docstring;
                                   and what a first lookup reads with in C: its build-id, sha256, JSON, and
                                   the build-id's shipped table (_lookup_*.h)

The runtime side (runtime/, proofs/, layout/, remote/, the shared modules) imports nothing from scan/, check/,
drift/, cli/ or tools/, and no module imports itself through others (tests/test_package_layout.py), so
`pip install cpython-offsets` needs no third-party package.
"""
__version__ = "0.1.0"

#: The runtime API (runtime/), imported on first use so that `import offsets` stays cheap.
_RUNTIME = ("get", "sizeof", "field", "build", "get_include", "use_table", "constant", "constant_info")
#: The errors a caller of the runtime catches (errors.py), as `offsets.NoMatchingTable` & co.;
#: `OffsetsError` is the base of every one.
_ERRORS = ("OffsetsError", "NoMatchingTable", "UnknownNameError", "AmbiguousNameError", "TableError",
           "CorruptTableError", "VerifyError")


def __getattr__(name):
    if name in _ERRORS:
        from . import errors

        value = getattr(errors, name)
        globals()[name] = value
        return value
    if name in _RUNTIME:
        from . import runtime

        value = getattr(runtime, name)
        globals()[name] = value
        return value
    if name == "_offsets":   # the C API capsule: PyCapsule_Import("offsets._offsets._C_API") asks for it
        import importlib

        return importlib.import_module("offsets._offsets")
    raise AttributeError(f"module 'offsets' has no attribute {name!r}")


def include_dirs(directory: str = None) -> list:
    """[pyoffsets.h's directory, this build's header's directory]: a setup.py's `include_dirs`, the
    header written now if it is not there yet (runtime/headers.py, handed this package's version)."""
    from .runtime.headers import include_dirs as dirs

    return dirs(directory, version=__version__)


def __dir__():
    return sorted(list(globals()) + list(_RUNTIME) + list(_ERRORS))
