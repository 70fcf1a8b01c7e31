"""The live check's runner: does a table describe the interpreter that is running? Asked of the
process itself, by every check module of `offsets.runtime.live`, in one order.

Used before a table that is not exact answers anything (it then answers only what the check read:
`runtime/core.py` hands `proof_cache.check`, which runs `check`, to every table it chooses), by
`offsets.runtime.live_check()` and by `offsets verify`; tests run it against every exact table.
The table's side is handed in: its constants (`runtime/constants.py`) and its minor's type records
(`tables.type_records`); no check module imports them.
"""
from __future__ import annotations

from ...proofs.result import Result
from .. import constants as _constants
from ..tables import type_records
from . import (allocators, basics, caches, capi, config, constants, frames, lines, objects, opcache, outputs, raised,
               records, spec, state, static_types, stdtypes, thread, typeobjects, types, values, versions, wrappers)
from .toolkit import Checker, Memory


def check(table) -> Result:
    """Run every check the table allows against this process; never raises for a wrong table."""
    result = Result()
    try:
        mem = Memory()
    except ImportError as e:      # ctypes: not in 3.12's isolated sub-interpreters, nor in some embedders
        result.failed.append(f"this interpreter cannot read memory: {e}")
        return result
    try:
        c = Checker(table, mem, result, constants=_constants.of)
        basics.basicsize(c)
        basics.objects(c)
        values.check(c)
        capi.check(c)
        lines.check(c)     # before types: co_lines() readies its iterator's static type
        types.check(c, type_records(table.build.version))
        stdtypes.check(c)
        state.check(c)
        objects.check(c)
        typeobjects.check(c)
        frames.check(c)
        thread.check(c)
        caches.check(c)
        wrappers.check(c)
        records.check(c)
        versions.check(c)
        static_types.check(c)
        opcache.check(c)
        outputs.check(c)
        allocators.check(c)
        raised.check(c)
        config.check(c)
        spec.check(c)
        basics.thread_state(c)
        basics.py_debug_offsets(c)
    finally:
        mem.close()
    from ...proofs.pinch import carry_and_pinch, unmarked

    # a failed check proves nothing (tables.py, choose.py): its reads are not carried further
    result.proven = carry_and_pinch(table, result.proven) if result.ok else unmarked(result.proven)
    return result


def check_constants(table) -> Result:
    """The live check of the table's constants (`constants.py`): `ok` needs no failure and at least one pass."""
    return constants.check(table, _constants.of(table), _constants.PROVEN)
