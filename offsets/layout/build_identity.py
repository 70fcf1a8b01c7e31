"""One build's identity as the runtime compares builds (runtime/earning.py, docs/identity.md): the
running interpreter, another process or binary (remote/identify.py), a table's build (its compact
header's `build`) and an index entry are each a `BuildIdentity`.

Immutable, with slots, and free of `dataclasses` (every process that loads a JIT makes one at its
first lookup). A field a role has no value for is None or empty: a table's build has no `build_id`
of its own (it records `binaries`), a running build records none.
"""
from .identity_base import LAYOUT_FLAGS, UPSTREAM, flag_set, table_name

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
        """An index entry's build (compact_read.index_entry's form: build-ids without files)."""
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
