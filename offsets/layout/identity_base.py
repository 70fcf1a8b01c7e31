"""What a first lookup needs of identity.py: a build's words (its layout flags, version spelling,
distributor and table name), what a running interpreter shows of its build without sysconfig, the
one sha256 (`sha256_hex` at C speed where offsets._lookup is built) and the cache's directory.

identity.py holds the rest (the layout inputs' digests, vendor evidence, the running target) and
re-exports all of this, so both sides name one rule once. Standard library only, and old syntax
only: identity.py, run as a script by interpreters down to 3.6, imports this file by its path.
"""
import os
import sys

#: Configuration macros that change struct layouts, in the order tables list them.
LAYOUT_FLAGS = ("Py_DEBUG", "Py_GIL_DISABLED", "Py_TRACE_REFS", "Py_REF_DEBUG", "Py_STATS")
#: Flags that another flag turns on by itself (pyport.h: Py_DEBUG implies Py_REF_DEBUG).
IMPLIED = {"Py_DEBUG": ("Py_REF_DEBUG",)}
UPSTREAM = "upstream"
#: Where a table names a struct defined by pyconfig.h (earning.py reads its leaf values).
PYCONFIG = "Include/pyconfig.h"


def _sha256_type():
    """hashlib.sha256, without importing hashlib (and OpenSSL) when CPython's own builtin module is there."""
    for name in ("_sha2", "_sha256") if sys.version_info >= (3, 12) else ("_sha256",):
        try:
            return __import__(name).sha256
        except (ImportError, AttributeError):
            pass
    import hashlib

    return hashlib.sha256


_sha256 = []      # the type, once picked


def sha256(data=b""):
    """hashlib.sha256(data): a hash object with update() and hexdigest(), CPython's builtin module's
    where it is there (imported on first use: a first lookup hashes with `sha256_hex`)."""
    if not _sha256:
        _sha256.append(_sha256_type())
    return _sha256[0](data)


try:
    from .._lookup import sha256_hex
except ImportError:     # not built, or identity.py's sibling in another interpreter (no package)
    def sha256_hex(data):
        """hashlib.sha256(data).hexdigest() (offsets._lookup's, at C speed, where it is built: a first
        lookup then loads no other shared object for its checksums)."""
        return sha256(data).hexdigest()


# ---------------------------------------------------------------- names
def flag_set(config):
    """The layout flags a config turns on, with the implied ones, sorted."""
    on = {f for f in LAYOUT_FLAGS if config.get(f)}
    for flag, implied in IMPLIED.items():
        if flag in on:
            on.update(implied)
    return tuple(sorted(on))


def config_words(config):
    return [w for flag, w in (("Py_GIL_DISABLED", "freethreaded"), ("Py_DEBUG", "debug")) if config.get(flag)]


def distributor(vendor):
    """`debian` for `debian 3.13.5-2`; `upstream` for `upstream` (or no vendor)."""
    return (vendor or UPSTREAM).split()[0]


def table_name(version, config, triple, vendor=UPSTREAM):
    """`cpython-3.13.5-debian-freethreaded-aarch64-linux-gnu`: version, the distributor unless
    upstream, the config words, the triple."""
    words = [version] + ([] if distributor(vendor) == UPSTREAM else [distributor(vendor)])
    return "cpython-" + "-".join(words + config_words(config) + [triple])


def source_dependent(defined_in, origin):
    """Whether a struct's layout comes from a `.c` file (or a binary's DWARF), not from the headers."""
    return origin == "dwarf" or ".c:" in defined_in or defined_in.endswith(".c")


def cache_dir():
    """`$OFFSETS_CACHE`, else `$XDG_CACHE_HOME/offsets`, else `~/.cache/offsets`: the one cache of
    downloads, scans, digests and own tables (scan/debian.py and runtime/tables.py use it). None
    when there is no home to put it in: HOME unset and no home in the password database (a container
    running under an arbitrary uid), where `~` would name a folder `~` in the current directory."""
    if os.environ.get("OFFSETS_CACHE"):
        return os.path.realpath(os.environ["OFFSETS_CACHE"])
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "offsets")
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        return None
    return os.path.join(home, ".cache", "offsets")


# ---------------------------------------------------------------- the running interpreter
def version_string(vi):
    """`3.14.0rc1` for sys.version_info (3, 14, 0, 'candidate', 1): CPython's own PY_VERSION spelling."""
    level = {"alpha": "a", "beta": "b", "candidate": "rc"}.get(vi[3])
    return "%d.%d.%d" % tuple(vi[:3]) + ("%s%d" % (level, vi[4]) if level else "")


def running_shown():
    """What this interpreter shows of its own build without sysconfig (which costs a first lookup
    about a millisecond): its version, hexversion and pointer size, and the layout flags it shows
    (`shown`, flag -> on): Py_REF_DEBUG by sys.gettotalrefcount, Py_TRACE_REFS by sys.getobjects,
    and where it has sys.abiflags, Py_DEBUG (`d`) and Py_GIL_DISABLED (`t`). The triple and the
    flags it does not show are its binary's: a build-id names them (earning.by_build_id_alone)."""
    shown = {"Py_REF_DEBUG": hasattr(sys, "gettotalrefcount"), "Py_TRACE_REFS": hasattr(sys, "getobjects")}
    abiflags = getattr(sys, "abiflags", None)
    if abiflags is not None:
        shown.update(Py_DEBUG="d" in abiflags, Py_GIL_DISABLED="t" in abiflags)
    return {"version": version_string(sys.version_info), "hexversion": sys.hexversion,
            "pointer_size": 8 if sys.maxsize > 2 ** 32 else 4, "shown": shown}
