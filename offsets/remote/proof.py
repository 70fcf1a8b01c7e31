"""The check in another process's memory: does a table describe the build that process runs?

What `runtime/live/` does inside a process, done from outside with truths the table did not
give: addresses the binary exports (its type objects, `_PyRuntime`) and the kernel's list of the
process's threads.

1. each exported type object's `tp_basicsize`, read in memory at the table's offset, against the
   size of its instance struct (`anchors.py`, the expectations of `live.BASICSIZE`);
   `PyList_Type.tp_name` is "list"; and every exported type object a type record names against
   its record (`proofs/types.py`, the same proof the runtime makes in process): its sizes and
   each `PyMemberDef` of its `tp_members`;
2. 3.13+: the process's own `_Py_DebugOffsets` (`_PyRuntime.debug_offsets`), member by member;
3. the interpreter and thread-state links: every thread state's `interp` is the interpreter whose
   list holds it, its `native_thread_id` (3.11+) is a thread of the process, the interpreter's
   `sysdict` and `builtins` are dicts;
4. every thread's stack, read by `frames.py` as `offsets stack` reads it: every code object is a
   code object, every name and file name a `str`, every line table a `bytes`;
5. up to 3.11, the allocators in the variables that hold them against the binary's own functions
   (`runtime/live/allocators.py`, the same comparison the runtime makes in process).

A table that is not exact answers only the fields and sizes a passing check read (`proven`), and
what they prove through the type system (`proofs/embedding.py`).
"""
from __future__ import annotations

from ..errors import OffsetsError
from ..proofs.pinch import carry_and_pinch, unmarked
from ..proofs.prover import Prover
from ..proofs.result import Result
from . import anchors, frames, procfs
from .reader import Reader


def check(table, memory, ident) -> Result:
    """Run every check the table allows against the process; never raises for a wrong table."""
    result = Result()
    r = Reader(memory, table, ident.symbols)

    def expect(what: str, truth, got) -> None:
        used = r.take_used()
        if truth == got:
            result.passed.append(what)
            result.proven.update(used)
        else:
            result.failed.append(f"{what}: the process says {truth!r}, the table gives {got!r}")

    def run(what: str, fn) -> None:
        r.take_used()
        try:
            fn()
        except LookupError as e:
            result.skipped.append(f"{what}: {str(e).strip(chr(39))}")
        except OffsetsError as e:
            if not procfs.exists(memory.pid):
                raise
            result.failed.append(f"{what}: {e}")

    def type_objects():
        for label, symbol, struct, expectations in anchors.basicsize_expectations():
            address = ident.symbols.get(symbol)
            expected = anchors.expected_basicsize(r.view, struct, expectations) if address else None
            if expected is None:
                r.take_used()
                continue
            got = r.field(address, "PyTypeObject", "tp_basicsize")
            expect(f"{symbol}.tp_basicsize (__basicsize__) == {expected[0]}", got, expected[1])
        name = r.pointer(r.symbol("PyList_Type"), "PyTypeObject", "tp_name")
        expect("PyList_Type.tp_name", b"list", memory.cstring(name, 64))

    def debug_offsets():
        at = r.offset("_PyRuntimeState", "debug_offsets")
        base = r.symbol("_PyRuntime") + at
        rt_used = r.take_used()
        for what, in_process, in_table, used in anchors.compare_debug_offsets(
                r.view, lambda off, n: memory.read(base + off, n), memory.byteorder, ident.hexversion):
            r.view.used.update(rt_used + used)
            expect(what, in_process, in_table)

    def type_records():
        """Every type object the binary exports that a type record names (proofs/types.py)."""
        from ..proofs import types
        from ..runtime.tables import type_records as shipped
        from .elf import Elf

        records = types.records(shipped(table.build.version))
        with Elf(ident.binary_path) as elf:
            found = [(ident.bias + sym.value, name) for name, rec in sorted(records.items())
                     for sym in [elf.symbol(rec.get("symbol") or "")] if sym is not None]
        prover = Prover(r.view, memory.read, memory.pointer_size, memory.byteorder, result, faults=(OffsetsError,),
                        truth="the process")
        types.check(prover, found, records)

    def allocators():
        """Up to 3.11: the allocators in the variables that hold them, against the binary's own
        functions (runtime/live/allocators.py, which the runtime compares with the copies the C API
        gives it); from 3.12 they are members of `_PyRuntime`, where only the table says where."""
        from ..runtime.live import allocators as la
        from .elf import STT_OBJECT, Elf

        with Elf(ident.binary_path) as elf:
            functions = {n: ident.bias + v for n, v in elf.functions(la.NAMES).items()}
            variables = {n: ident.bias + v for n, v in elf.defined(la.STATICS, STT_OBJECT).items()}
        prover = Prover(r.view, memory.read, memory.pointer_size, memory.byteorder, result, faults=(OffsetsError,),
                        truth="the process")
        for (_, struct, fields, families), name in zip(la.ALLOCATORS, la.STATICS):
            if name in variables:
                prover.run(f"{struct}: {name}", la.compare, prover, name, variables[name], struct, fields, families,
                           functions)
            else:
                result.skipped.append(f"{struct}: the binary defines no variable {name} (3.12+: a member of _PyRuntime)")

    tasks = set(procfs.threads(memory.pid))

    def links():
        interps = frames.interpreters(r)
        expect("_PyRuntime.interpreters.head is an interpreter", True, bool(interps))
        for interp in interps:
            for key in ("sysdict", "builtins"):
                expect(f"PyInterpreterState.{key} is a dict", r.symbol("PyDict_Type"),
                       r.ob_type(r.pointer(interp, "PyInterpreterState", key)))
            for ts in frames.thread_states(r, interp):
                expect("PyThreadState.interp is the interpreter whose list holds it", interp,
                       r.pointer(ts, "PyThreadState", "interp"))
                if r.has("PyThreadState", "native_thread_id"):
                    native = r.field(ts, "PyThreadState", "native_thread_id")
                    expect("PyThreadState.native_thread_id is a thread of the process", True, native in tasks)

    def stacks():
        stack = frames.Stack(r, ident.hexversion, observe=True)
        found = frames.all_threads(r, ident.hexversion, stack)
        n = sum(len(t.frames) for t in found)
        expect(f"{len(found)} threads' stacks read ({n} frames: code, str and bytes objects where expected)",
               True, n > 0)
        generator = getattr(stack, "generator", None)
        in_generators = {owner for owner, inside in stack.observed if inside}
        if generator is not None and in_generators:
            # the frames embedded in generator and coroutine objects are the ones their owner marks
            expect("the owner of every frame inside a generator or coroutine object is FRAME_OWNED_BY_GENERATOR",
                   {generator}, in_generators)
            if {generator} == in_generators:
                result.proven_constants.add("FRAME_OWNED_BY_GENERATOR")
        if n and not result.failed:
            # the other constants the walk read (which owners to leave out, Py_TAG_BITS) selected frames
            # whose every code object, name and line table checked out
            result.proven_constants.update(stack.constants_used)

    for what, fn in (("type objects", type_objects), ("types' own records", type_records),
                     ("_Py_DebugOffsets", debug_offsets), ("interpreters and thread states", links),
                     ("allocators", allocators), ("stacks", stacks)):
        run(what, fn)
    # a failed check proves nothing (tables.py, choose.py): its reads are not carried further
    result.proven = carry_and_pinch(table, result.proven) if result.ok else unmarked(result.proven)
    return result


def check_file(table, ident) -> Result:
    """The check a binary file alone allows (`anchors.compare_binary`: its type objects'
    tp_basicsize, Py_Version, 3.13+ the `_Py_DebugOffsets` of `_PyRuntime`'s initializer)."""
    from .elf import Elf

    result = Result()
    view = anchors.View.of_loaded(table)
    if ident.image == "pe":         # a Windows DLL: its exports and its bytes by RVA
        from . import pe

        try:
            found = anchors.compare_binary(view, pe.ImageView(pe.read(ident.binary_path)), ident.hexversion)
        except (LookupError, OSError, pe.PeError) as e:
            result.failed.append(str(e))
            return result
    else:
        with Elf(ident.binary_path) as elf:
            try:
                found = anchors.compare_binary(view, elf, ident.hexversion)
            except LookupError as e:
                result.failed.append(str(e))
                return result
    for what, in_binary, in_table, used in found:
        if in_binary == in_table:
            result.passed.append(f"{what} (in the binary's data)")
            result.proven.update(used)
        else:
            result.failed.append(f"{what}: the binary holds {in_binary!r}, the table gives {in_table!r}")
    return result
