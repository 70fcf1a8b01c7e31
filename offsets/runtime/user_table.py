"""The table a user names (`offsets.use_table`): loaded, checked in full once per file, for this
build's minor, flags and target only, and put in use exact (its identity is this build's) or
answering only what this process's live check proves."""

import os

from .core import load_compact, prove_here
from .earning import earning, strict_mode
from .match import Match
from .tables import Loaded


def use_table(rt, path, verify: bool = True) -> Match:
    """Use the table at `path` from now on in runtime `rt` (the public `use_table` says how it is earned)."""
    from ..errors import VerifyError

    path = os.fspath(path)
    if path.endswith(".jsonl"):
        t = load_compact(path)
        st = os.stat(path)
        stamp = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if stamp not in rt.validated:
            from ..layout.compact import table_of

            table_of(t.head, t.pool)      # every struct checked by the model and its rules, once per file
            rt.validated.add(stamp)
    else:
        from ..layout import compact, compact_read, table_yaml

        head, pool = compact_read.parse(compact.dumps(table_yaml.load(path), path), path)
        t = Loaded(head, pool, path, rt.index()["aliases"], prove_here)
    me = rt.identity()
    b = t.build
    if (me.hexversion >> 16, me.flags, me.triple, me.pointer_size) != \
            (b.hexversion >> 16, b.flags, b.triple, b.pointer_size):
        from ..errors import TableError

        raise TableError(f"{path} is for {t.name}, not for this {me.describe()}: {rt.how_to_scan()}")
    earn = earning(b, me, prove_here)
    t.earning = earn
    if not earn.exact and strict_mode():
        from ..errors import TableError

        raise TableError(f"{path} is not exactly this build's table ({earn.why}) and OFFSETS_STRICT allows "
                         f"exact tables only")
    result = None
    if verify or not earn.exact:
        result = t.prove()
        if not result.ok:
            raise VerifyError(f"{path} does not describe this interpreter: {result.summary()}")
    how = ("exact: " + earn.why if earn.exact else
           f"not exact ({earn.why}): answers only the {len(earn.proven)} fields the live check read")
    with rt.lock:
        rt.install(t, Match(t.name, "user", f"loaded from {path}; {how}"
                              + (f"; live check: {result.summary()}" if result else ""),
                              path, t.build, result, loaded=t, runtime=rt))
        return rt.state[1]
