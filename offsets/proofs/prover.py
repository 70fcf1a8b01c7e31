"""One proof's means: a table (`view.View`), a memory reader (`read(address, n) -> bytes`, raising
on an address it cannot read) and a `Result` (`runtime/live/runner.py`) to record in. Each expectation
compares a truth the table did not give with what the table gave; when they agree, everything
the table gave for it is proven."""
from __future__ import annotations


class Prover:
    def __init__(self, view, read, pointer_size: int, byteorder: str, result, faults=(Exception,),
                 truth: str = "the running interpreter") -> None:
        self.view, self.read, self.psize, self.byteorder, self.r = view, read, pointer_size, byteorder, result
        #: who says what the table is compared with, in failures
        self.truth = truth
        #: the exceptions a read of a bad address raises (a failure of the check, never a crash)
        self.faults = faults

    # -- the table
    def row(self, struct: str, *paths: str):
        return self.view.row(struct, *paths)

    def off(self, struct: str, *paths: str):
        return self.view.off(struct, *paths)

    def need(self, struct: str, *paths: str) -> int:
        """The offset of the first of `paths`; LookupError (the check is not run) when none is there."""
        return self.view.need(struct, *paths)[0]

    def size(self, struct: str):
        return self.view.size(struct)

    def mark(self, key: str, path=None) -> None:
        self.view.used.add((key, path))

    # -- memory
    def int(self, addr: int, n: int, signed: bool = False) -> int:
        return int.from_bytes(self.read(addr, n), self.byteorder, signed=signed)

    def ptr(self, addr: int, offset: int = 0) -> int:
        return self.int(addr + offset, self.psize)

    def cstring(self, addr: int, limit: int = 256) -> bytes:
        out = b""
        while len(out) < limit:
            chunk = self.read(addr + len(out), 16)
            if b"\0" in chunk:
                return out + chunk[:chunk.index(b"\0")]
            out += chunk
        return out

    def names(self, base: int, struct: str, path: str, limit: int = 512) -> list:
        """The strings an array of `struct` from `base` names at `path` (a `char *`), up to the first NULL."""
        step, at = self.size(struct), self.need(struct, path)
        out = []
        for i in range(limit):
            p = self.ptr(base + i * step, at)
            if not p:
                break
            out.append(self.cstring(p, 256).decode("utf-8", "replace"))
        return out

    def field(self, addr: int, struct: str, *paths: str, signed: bool = False) -> int:
        """The integer value of the first of `paths` the table has in `struct`, at the object at
        `addr`, sized as the table says (a bitfield: its bits)."""
        found = self.row(struct, *paths)
        if found is None:
            raise LookupError(f"{struct}.{'|'.join(paths)} not in the table")
        path, (offset, size, _type, bit_offset, bit_width, *_rest) = found
        if size not in (1, 2, 4, 8):
            raise LookupError(f"{struct}.{path} has size {size}")
        value = self.int(addr + offset, size, signed=signed and bit_width is None)
        if bit_width is not None:
            value = (value >> bit_offset) & ((1 << bit_width) - 1)
        if _type == "_PyStackRef":      # 3.14+: a tagged reference, its low bits tags (Py_TAG_BITS)
            value &= ~0b11
        return value

    def held_once(self, data: bytes, value: int) -> bool:
        """Whether `data` holds `value` as a pointer-sized integer exactly once, at any byte position:
        a field a wrong table puts elsewhere in those bytes cannot read it."""
        pattern = value.to_bytes(self.psize, self.byteorder)
        at, found = data.find(pattern), 0
        while at >= 0 and found < 2:
            found += 1
            at = data.find(pattern, at + 1)
        return found == 1

    # -- recording
    def expect(self, what: str, truth, got) -> bool:
        """Record a check; what the table gave for it is proven when it passes."""
        used = self.view.take_used()
        if truth == got:
            self.r.passed.append(what)
            self.r.proven.update(used)
            return True
        self.r.failed.append(f"{what}: {self.truth} says {truth!r}, the table gives {got!r}")
        return False

    def skip(self, what: str, why: str) -> None:
        self.view.take_used()
        self.r.skipped.append(f"{what}: {why}")

    def run(self, what: str, fn, *args) -> None:
        """fn(*args), a check that is skipped where the table lacks what it needs (LookupError) and
        fails where a read through the table faults."""
        self.view.take_used()
        try:
            fn(*args)
        except LookupError as e:
            self.skip(what, str(e).strip("'\""))
        except self.faults as e:
            self.view.take_used()
            self.r.failed.append(f"{what}: {e} (a pointer read through the table is not valid)")

    def attempt(self, what: str, fn, *args) -> None:
        """`run`, where any other error of the check itself (one that cannot run in this process) is
        recorded as not run: such a check proves nothing, and stops nothing."""
        try:
            self.run(what, fn, *args)
        except Exception as e:      # noqa: BLE001
            self.skip(what, f"could not run here: {type(e).__name__}: {e}")
