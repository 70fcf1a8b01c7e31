"""`offsets.remote.attach(pid)`: another process's CPython build, its table, and answers for it.

    p = offsets.remote.attach(1234)
    p.build                     # identify.Identity: binary, build-id, version, flags, target, vendor
    p.choice                    # the table and how it is earned (exact by build-id, headers or
                                # package; proven by the check in its memory)
    p.get("PyThreadState.interp"), p.sizeof("PyThreadState"), p.field(...), p.constant(NAME)
    p.read(address, size)       # its memory (process_vm_readv, else /proc/PID/mem)
    p.symbol("_PyRuntime")      # where its binary's export is, in the process
    p.threads()                 # every thread's Python stack (frames.py)
    p.close()

Answers follow the runtime's rule: exact, or proven (read in the process by `proof.py`), or
refused with `NoMatchingTable`. Nothing here stops, writes to or signals the process.
"""
from __future__ import annotations

from ..errors import AmbiguousNameError, NoMatchingTable, UnknownNameError, close_matches
from . import choose, frames, identify, proof
from .memory import Memory
from .reader import Reader


class Process:
    def __init__(self, pid: int, strict=None) -> None:
        from ..runtime import strict_mode

        self.pid = pid
        self.build = identify.of_process(pid)
        self.memory = Memory(pid, self.build.byteorder, self.build.pointer_size)
        try:
            self.choice = choose.choose(self.build, prove=self._prove,
                                        strict=strict_mode() if strict is None else strict)
        except BaseException:
            self.memory.close()
            raise
        self.table = self.choice.table
        self.reader = Reader(self.memory, self.table, self.build.symbols, earned=self.table.earned)

    def _prove(self, table):
        return proof.check(table, self.memory, self.build)

    def prove(self):
        """Run the check in the process's memory against the table in use (also for an exact one)."""
        return self._prove(self.table)

    def close(self) -> None:
        self.memory.close()

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<offsets.remote process {self.pid}: CPython {self.build.version}, {self.choice.kind} table " \
               f"{self.table.name}>"

    # ------------------------------------------------------------------ memory
    def read(self, address: int, size: int) -> bytes:
        return self.memory.read(address, size)

    def symbol(self, name: str) -> int:
        """The address in the process of `name`, which the interpreter binary exports."""
        address = self.build.symbols.get(name)
        if address is None:
            from .elf import Elf

            with Elf(self.build.binary_path) as elf:
                sym = elf.symbol(name)
            if sym is None:
                raise UnknownNameError(name, [], where=f"the symbols {self.build.binary} exports")
            address = self.build.bias + sym.value
        return address

    # ------------------------------------------------------------------ the table's answers
    def _lookup(self, name: str):
        t = self.table
        for table in [t] + t.fallbacks:
            struct, path = table.split(name)
            key = table.resolve_struct(struct)
            if key is not None:
                return table, key, path
            qualified = table.qualified(struct)
            if qualified:
                raise AmbiguousNameError(name, qualified, where=table.where())
        struct = t.split(name)[0]
        raise UnknownNameError(name, close_matches(struct, t.struct_names(), 0.6), where=t.where())

    def _refused(self, table, name: str) -> NoMatchingTable:
        return NoMatchingTable(f"{name}: not answered for process {self.pid}: {table.name} is not exactly its build "
                               f"({table.earning.why}) and the check in its memory did not read this; "
                               f"{choose.how_to_scan(self.build)}")

    def field(self, name: str):
        """STRUCT.FIELD as a `runtime.EarnedField` (offset, size, type, bits; `earned`)."""
        from ..runtime import EarnedField

        table, key, path = self._lookup(name)
        fields = table.fields(key)
        if not path or path not in fields:
            where = f"struct {key} of {table.where()}"
            raise UnknownNameError(name, [f"{name.split('.')[0]}.{p}" for p in close_matches(path, list(fields), 0.5)]
                                   if path else [f"{name}.{p}" for p in list(fields)[:3]], where=where)
        earned = table.earned(key, path)
        if earned is None:
            raise self._refused(table, name)
        o, size, type_, bo, bw, al, fl = fields[path]
        return EarnedField(path=path, offset=o, size=size, type=type_, bit_offset=bo, bit_width=bw, array_len=al,
                           flexible=bool(fl), earned=earned)

    def get(self, name: str) -> int:
        """The byte offset of STRUCT.FIELD in this process's build."""
        return self.field(name).offset

    def sizeof(self, name: str) -> int:
        table, key, path = self._lookup(name)
        if path:
            raise UnknownNameError(name, [name.partition(".")[0]], where=f"{table.where()} as a struct")
        if table.earned(key) is None:
            raise self._refused(table, name)
        return table.size(key)

    def constant(self, name: str) -> int:
        """The value of an enumerator or integer macro of this process's build (the table's constants)."""
        value = self.reader.constant(name)
        if value is None:
            raise UnknownNameError(name, [], where=f"the constants of {self.table.name}")
        return value

    # ------------------------------------------------------------------ stacks
    def threads(self) -> list:
        """Every thread's Python stack, innermost frame first (`frames.Thread`)."""
        return frames.all_threads(self.reader, self.build.hexversion)


def attach(pid: int, strict=None) -> Process:
    """The process `pid`, its build and table (see the module's docstring); close() it when done."""
    return Process(pid, strict)
