"""`Match`: the table in use and how it was chosen (exact, proven or user), what checked it, and how
it earns each struct's answers; what `offsets.build()` returns. Made when a table is chosen by the
whole choice, or named by `use_table` (a first lookup that the build-id answers makes none).
"""
from .tables import shipped_index


class Match:
    """The table in use and how it was chosen: `kind` is exact, proven or user. `runtime` is the
    runtime whose table it describes: the one given, else the one it is installed into."""

    def __init__(self, table: str, kind: str, detail: str, source: str, build: "BuildIdentity", check=None,
                 loaded: "Loaded" = None, runtime: "Runtime" = None) -> None:
        self.table, self.kind, self.detail, self.source, self._build, self.check = \
            table, kind, detail, source, build, check
        self._loaded = loaded
        self._runtime = runtime         # else the one it is installed into (core.Runtime.install)

    @property
    def build(self):
        """The table's `model.Build` (version, hexversion, config, target, vendor, defines, digests)."""
        from ..layout.model import Build

        return Build.from_dict(self._build.as_dict())

    @property
    def version(self) -> str:
        return self._build.version

    @property
    def hexversion(self) -> int:
        return self._build.hexversion

    @property
    def checked(self) -> list:
        """What checked the table in use before it shipped, one line each (index.json's `checked`, from
        generated/index.yaml: compilers, DWARF, binaries of its build); [] for a table not shipped."""
        t = self._loaded
        if t is None or t.own or self.kind == "user":
            return []
        index = self._runtime.index() if self._runtime is not None else shipped_index()
        found = [e for e in index["tables"] if e["name"] == self.table]
        return list(found[0].get("checked") or ()) if found else []

    @property
    def checked_by(self) -> str:
        """What checked the table in use, in words: before it shipped (`checked`), and whether any
        binary of its build did; where it answers by proof, this process's live check too."""
        checked = self.checked
        if self.kind == "user":
            said = "a table given to use_table(): what checked it is not recorded"
        elif not checked:
            said = ("made on this machine from this build's own headers (offsets scan --install): no second "
                    "compiler, DWARF or binary checked it")
        else:
            said = "checked by " + "; ".join(checked)
            if not any(c.startswith("the binary ") for c in checked):
                said += "; never against a binary of its build (none was at hand)"
        if self.kind == "proven" and self.check is not None:
            said += f"; here, by this process's live check ({self.check.summary()})"
        return said

    def earned(self, struct: str) -> str:
        """How answers about `struct` are earned: 'exact', 'exact (by TABLE)' when another table of
        the chain answers it, 'proven (N fields)', or 'refused'."""
        rt = self._runtime
        with rt.lock:
            chain = [self._loaded] + self._loaded.fallbacks if self._loaded else []
            t, key, how = rt.earned_in(chain, struct, False)
            if t is None:
                if not any(c.resolve_struct(struct) is not None for c in chain):
                    from ..errors import UnknownNameError

                    raise UnknownNameError(struct, [], where=f"table {self.table}")
                return "refused"
            by = "" if t is self._loaded else f" (by {t.name})"
            if how == "exact":
                return "exact" + by
            n = sum(1 for k, _ in t.earning.proven if k == key)
            return f"proven ({n} field{'s' if n != 1 else ''} read live){by}"

    def unproven(self, names) -> list:
        """[(name, why)] of `names` (STRUCT.FIELD, or STRUCT for its size) that the table in use
        answers neither exactly nor proven: what a JIT's needs list would be refused, and why."""
        from ..proofs.unproven import reasons

        t = self._loaded
        with self._runtime.lock:
            if t is not None and t.earning.check is None and not t.earning.exact:
                t.prove()
            return reasons(t, names) if t is not None else [(n, "no table loaded") for n in names]

    def __repr__(self) -> str:
        return f"<offsets table {self.table}: {self.kind} match: {self.detail}>"

    __str__ = __repr__
