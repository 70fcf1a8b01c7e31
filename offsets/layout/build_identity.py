"""A build's identity as the runtime compares builds (runtime/earning.py, docs/identity.md): its
words (layout flags, version spelling, distributor, table name), what a running interpreter shows of
its build without sysconfig, the cache's directory and the own tables in it, and `BuildIdentity`, what the running
interpreter, another process or binary (remote/identify.py), a table's build (its compact header's
`build`) and an index entry each are.

`BuildIdentity` is immutable, with slots, and free of `dataclasses` (every process that loads a JIT
makes one at its first lookup). A field a role has no value for is None or empty: a table's build
has no `build_id` of its own (it records `binaries`), a running build records none.

identity.py holds the rest (the layout inputs' digests, vendor evidence, the running target) and
re-exports the words, so both sides name one rule once; interpreters down to 3.6 run it as a script,
and it then imports this file by its path: standard library only, and their syntax.
"""
import os
import sys

#: Configuration macros that change struct layouts, in the order tables list them.
LAYOUT_FLAGS = ("Py_DEBUG", "Py_GIL_DISABLED", "Py_TRACE_REFS", "Py_REF_DEBUG", "Py_STATS")
#: Flags that another flag turns on by itself (pyport.h: Py_DEBUG implies Py_REF_DEBUG).
IMPLIED = {"Py_DEBUG": ("Py_REF_DEBUG",)}
UPSTREAM = "upstream"
#: The relative name every table gives the build's pyconfig.h (scan/units.py's roots).
PYCONFIG = "Include/pyconfig.h"


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


def tables_dir():
    """Where this build's own tables are installed: $OFFSETS_TABLES, else the user cache; None when
    there is neither (no home: cache_dir)."""
    if os.environ.get("OFFSETS_TABLES"):
        return os.environ["OFFSETS_TABLES"]
    cache = cache_dir()
    return os.path.join(cache, "tables") if cache else None


def own_files(version: str) -> list:
    """The paths of the own tables of `version` in `tables_dir()`, sorted ([] where there is none)."""
    d = tables_dir()
    prefix = f"cpython-{version}-"
    try:
        return [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.startswith(prefix) and f.endswith(".jsonl")]
    except (OSError, TypeError):     # no such directory, or none at all (no home)
        return []


def index_entry(name: str, file: str, b: dict) -> dict:
    """A table's row in index.json, of its header's `build`: everything the runtime compares before
    it opens the table (the inputs: the digests of pyconfig.h and of the headers), and the GNU
    build-ids of the binaries it knows (what `offsets identify` matches a process by)."""
    entry = {"name": name, "file": file, "version": b["version"], "hexversion": b["hexversion"],
             "config": dict(b["config"]), "triple": b["target"]["triple"], "pointer_size": b["target"]["pointer_size"],
             "vendor": b.get("vendor"), "defines": b.get("defines"),
             "inputs": {k: v for k, v in sorted((b.get("inputs") or {}).items()) if k in ("pyconfig_h", "headers")}}
    if b.get("binaries"):
        entry["build_ids"] = sorted(x[0] for x in b["binaries"])
    return entry


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


# ---------------------------------------------------------------- the one class
#: The fields of a build, in the order `describe` and `replace` know them.
FIELDS = ("version", "hexversion", "config", "triple", "pointer_size", "vendor", "defines", "inputs", "binaries",
          "stand_in", "build_id", "files", "whole_inputs", "shown", "where")


class BuildIdentity(object):
    """What a layout depends on, as tables are compared by it:

    - `version`, `hexversion`, `config` (layout flag -> on, every flag of LAYOUT_FLAGS), `flags` (the
      flags on, with the implied ones: identity.flag_set), `triple`, `pointer_size`;
    - `vendor`: `upstream`, or `DISTRIBUTOR PACKAGE-VERSION`;
    - `defines`: the core's layout-relevant defines (None: not known);
    - `inputs`: the digests of the layout inputs (`pyconfig_h`, `headers`, ...), {} when not known;
    - `binaries`: the binaries a table records, ((build-id, file, source), ...);
    - `stand_in`: what stands in for an input of this version that was not at hand, and why.

    A build that runs (this interpreter, or another process or binary) also has:

    - `build_id`: the GNU build-id (or CodeView key) of the binary that holds it, or None;
    - `files`: its installed headers (`identity.InstalledFiles`), None when it has none to read;
    - `whole_inputs`: a call giving its whole headers' digests on demand (once: `once`), or None;
    - `shown`: None when every layout flag is known; else flag -> on for the only flags it shows
      (a first lookup's identity without sysconfig: identity.running_shown), its `triple` None;
    - `where`: where it lives (identity.running()'s include, cflags, libdir, ...), or None.
    """

    __slots__ = FIELDS + ("flags",)

    def __init__(self, version, hexversion, config, triple, pointer_size, vendor=None, defines=None, inputs=None,
                 binaries=(), stand_in=None, build_id=None, files=None, whole_inputs=None, shown=None, where=None):
        put = object.__setattr__
        put(self, "version", version)
        put(self, "hexversion", hexversion)
        put(self, "config", {f: bool((config or {}).get(f)) for f in LAYOUT_FLAGS})
        put(self, "flags", flag_set(self.config))
        put(self, "triple", triple)
        put(self, "pointer_size", pointer_size)
        put(self, "vendor", vendor or UPSTREAM)
        put(self, "defines", None if defines is None else dict(defines))
        put(self, "inputs", dict(inputs or {}))
        put(self, "binaries", tuple(tuple(b) for b in binaries or ()))
        put(self, "stand_in", stand_in)
        put(self, "build_id", build_id or None)
        put(self, "files", files)
        put(self, "whole_inputs", whole_inputs)
        put(self, "shown", None if shown is None else dict(shown))
        put(self, "where", None if where is None else dict(where))

    def __setattr__(self, name, value):
        raise AttributeError(f"a BuildIdentity is immutable: {name} cannot be set (use replace())")

    __delattr__ = __setattr__

    # ---------------------------------------------------------------- made from
    @classmethod
    def of_table(cls, b: dict) -> "BuildIdentity":
        """A table's build, from its compact header's `build` (compact.build_dict's form)."""
        t = b["target"]
        return cls(b["version"], b["hexversion"], b["config"], t["triple"], t["pointer_size"], b.get("vendor"),
                   b.get("defines"), b.get("inputs"), b.get("binaries") or (), b.get("stand_in"))

    @classmethod
    def of_entry(cls, e: dict) -> "BuildIdentity":
        """An index entry's build (index_entry's form: build-ids without files)."""
        return cls(e["version"], e["hexversion"], e["config"], e["triple"], e["pointer_size"], e.get("vendor"),
                   e.get("defines"), e.get("inputs"), [(x, "", "") for x in e.get("build_ids") or ()])

    @classmethod
    def of_running(cls, described: dict, **more) -> "BuildIdentity":
        """A running build, from its description (identity.running(): the identity's keys, and where
        it lives, which go to `where`) and `more` fields (files, whole_inputs, build_id)."""
        d = described
        where = {k: v for k, v in d.items() if k not in FIELDS}
        return cls(d["version"], d["hexversion"], d["config"], d["triple"], d["pointer_size"], d.get("vendor"),
                   inputs=d.get("inputs"), where=where, **more)

    @classmethod
    def of_shown(cls, shown: dict) -> "BuildIdentity":
        """What an interpreter shows of its build without sysconfig (identity.running_shown()): no
        triple, and only the flags in `shown` known."""
        return cls(shown["version"], shown["hexversion"], shown["shown"], None, shown["pointer_size"],
                   shown=shown["shown"])

    def replace(self, **changes) -> "BuildIdentity":
        """A copy with `changes` (field name -> value)."""
        unknown = set(changes) - set(FIELDS)
        if unknown:
            raise TypeError(f"BuildIdentity has no field {', '.join(sorted(unknown))}")
        return BuildIdentity(**{f: changes[f] if f in changes else getattr(self, f) for f in FIELDS})

    def as_dict(self) -> dict:
        """The compact header's `build` form (compact.build_dict) of a table's build."""
        out = {"version": self.version, "hexversion": self.hexversion, "config": dict(self.config),
               "target": {"triple": self.triple, "pointer_size": self.pointer_size}, "vendor": self.vendor,
               "defines": None if self.defines is None else dict(sorted(self.defines.items())),
               "inputs": dict(sorted(self.inputs.items()))}
        if self.stand_in is not None:
            out["stand_in"] = self.stand_in
        if self.binaries:
            out["binaries"] = [list(x) for x in self.binaries]
        return out

    # ---------------------------------------------------------------- read
    def on(self, flag: str) -> bool:
        """Whether layout flag `flag` is on (with the implied ones)."""
        return flag in self.flags

    @property
    def target(self) -> tuple:
        """(triple, pointer size)."""
        return self.triple, self.pointer_size

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def build_ids(self) -> tuple:
        """The build-ids of the binaries a table records."""
        return tuple(x[0] for x in self.binaries)

    @property
    def table_name(self) -> str:
        return table_name(self.version, self.config, self.triple, self.vendor)

    def whole(self) -> dict:
        """Its whole headers' digests: `inputs`, else those `whole_inputs` computes now; {} if none."""
        if self.inputs:
            return self.inputs
        return (self.whole_inputs() or {}) if self.whole_inputs is not None else {}

    def describe(self) -> str:
        """`CPython 3.13.5 (upstream, Py_DEBUG, x86_64-linux-gnu, 8-byte pointers)`."""
        return (f"CPython {self.version} ({self.vendor}, {', '.join(self.flags) or 'release'}, {self.triple}, "
                f"{self.pointer_size}-byte pointers)")

    def __repr__(self) -> str:
        return f"<BuildIdentity {self.describe()}>"


def once(call):
    """`call()`'s result, computed at the first call of what this returns and kept."""
    got = []

    def first():
        if not got:
            got.append(call())
        return got[0]
    return first
