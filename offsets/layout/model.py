"""The layout model: plain frozen values shared by every stage.

`Build` says what a layout depends on, `Field` and `Struct` say where things are, `Constant` what
the bits mean (an enumerator or a macro's integer value), `Table` is one build's complete answer. Invariants are checked at construction, so a bad value cannot exist.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Optional

from . import identity, sanity
from ..errors import ModelError
from .identity import LAYOUT_FLAGS, UPSTREAM

#: The configs a build can be scanned in, and the macros each one turns on.
CONFIGS = {"release": (), "debug": ("Py_DEBUG",), "free-threaded": ("Py_GIL_DISABLED",)}

#: Where a struct's layout came from.
ORIGINS = ("clang", "dwarf")

#: How C names a struct's type: its tag (`struct _gil_runtime_state`) or a typedef name (`PyListObject`).
C_TYPE = re.compile(r"(?:(struct|union) )?[A-Za-z_][A-Za-z0-9_]*")

#: What a constant is: an object-like macro or an enumerator.
CONSTANT_KINDS = ("macro", "enum")

#: Why a macro (or enumerator) of CPython's files is not a constant (counted per table,
#: `Table.constants_left_out`; docs/table-format.md).
LEFT_OUT_REASONS = ("function-like", "empty", "not-expression", "string", "floating", "pointer", "other-type",
                    "not-constant", "too-wide", "outside", "compiler-specific")


@dataclass(frozen=True)
class Target:
    """A CPU and ABI: the triple handed to the compiler, and the pointer size it implies."""

    triple: str
    pointer_size: int

    def __post_init__(self) -> None:
        sanity.check_target(self.triple, self.pointer_size)
        if self.pointer_size not in (4, 8):
            raise ModelError(f"target {self.triple}: pointer size {self.pointer_size} is not 4 or 8")

    @property
    def arch(self) -> str:
        return self.triple.split("-", 1)[0]


#: A GNU build-id: the hex of its note (20 bytes from ld's default sha1; 8 to 64 bytes allowed).
BUILD_ID = re.compile(r"(?:[0-9a-f]{2}){8,64}")


@dataclass(frozen=True)
class Binary:
    """A binary holding this build's interpreter, named by its GNU build-id, which identifies it
    exactly (docs/identity.md): a binary the table was verified against (`python3.14-minimal
    3.14.10-1`'s `usr/bin/python3.14`, pyenv's libpython), or the one an own table was made for."""

    build_id: str
    file: str       # where it lies in its package or prefix (`usr/bin/python3.14`), or its name
    source: str     # what it came from: `python3.14-minimal 3.14.10-1`, `pyenv 3.13.0`, `offsets scan --python`

    def __post_init__(self) -> None:
        if not (isinstance(self.build_id, str) and BUILD_ID.fullmatch(self.build_id)):
            raise ModelError(f"binary {self.file!r}: build-id {str(self.build_id)[:80]!r} is not 8 to 64 bytes of hex")
        if not self.file or self.file.startswith("/") or not self.source:
            raise ModelError(f"binary {self.file!r}: a relative file name and a source are required")


@dataclass(frozen=True)
class Build:
    """What a layout depends on (identity.py): version, layout-changing config flags, target, the
    vendor (`upstream`, or `debian 3.13.5-2+deb13u5`), the core's layout-relevant defines (None:
    not known, so never an exact match by digest), and the input digests; and the binaries of this
    build known by their build-id (sorted by file)."""

    version: str
    hexversion: int
    config: Mapping[str, bool]
    target: Target
    inputs: Mapping[str, Optional[str]] = field(default_factory=dict)
    vendor: str = UPSTREAM
    defines: Optional[Mapping[str, str]] = None
    binaries: tuple[Binary, ...] = ()
    #: what stands in for an input of this version that was not at hand, and why (Windows's
    #: pyconfig.h of another version: `PC/pyconfig.h of CPython 3.11.2 ...`); None: nothing does
    stand_in: Optional[str] = None

    def __post_init__(self) -> None:
        sanity.check_version(self.version, self.hexversion)
        if self.stand_in is not None and not (isinstance(self.stand_in, str) and self.stand_in.strip()):
            raise ModelError(f"build {self.version}: a stand-in is a sentence saying what stands in and why")
        major, minor = (int(x) for x in self.version.split(".")[:2])
        if (self.hexversion >> 24, (self.hexversion >> 16) & 0xFF) != (major, minor):
            raise ModelError(f"version {self.version} does not match hexversion {self.hexversion:#010x}")
        unknown = set(self.config) - set(LAYOUT_FLAGS)
        if unknown:
            raise ModelError(f"unknown config flags {sorted(unknown)}; known: {', '.join(LAYOUT_FLAGS)}")
        if not identity.VENDOR.fullmatch(self.vendor):
            raise ModelError(f"vendor {self.vendor!r} is neither 'upstream' nor 'DISTRIBUTOR PACKAGE-VERSION'")
        ids = [b.build_id for b in self.binaries]
        if len(set(ids)) != len(ids):
            raise ModelError(f"a build-id is listed twice among the binaries of {self.version}")

    @classmethod
    def from_dict(cls, b: Mapping) -> "Build":
        """The build a table saved (`compact.build_dict`'s form: the hexversion an int, each binary
        [build-id, file, source]); a missing (or null) vendor is upstream, missing inputs none."""
        return cls(version=b["version"], hexversion=b["hexversion"], config=dict(b["config"]),
                   target=Target(**b["target"]), inputs=dict(b.get("inputs") or {}),
                   vendor=b.get("vendor") or UPSTREAM,
                   defines=None if b.get("defines") is None else dict(b["defines"]),
                   binaries=tuple(Binary(*x) for x in b.get("binaries") or ()),
                   stand_in=b.get("stand_in"))

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def release(self) -> str:
        """`3.13.15`, or `3.13.15-debian` for a distributor's build: the version as tables name it."""
        who = identity.distributor(self.vendor)
        return self.version if who == UPSTREAM else f"{self.version}-{who}"

    @property
    def config_name(self) -> str:
        """`release`, `debug`, `freethreaded` or `freethreaded-debug`: the word used in table names."""
        return "-".join(identity.config_words(self.config)) or "release"

    @property
    def table_name(self) -> str:
        """`cpython-3.13.5-debian-freethreaded-aarch64-linux-gnu`: what the table file is called
        (the distributor's word only for a vendor other than upstream)."""
        return identity.table_name(self.version, self.config, self.target.triple, self.vendor)


@dataclass(frozen=True)
class DependencySet:
    """What one struct's layout or one constant's value depends on (docs/identity.md, "Per
    struct"): the leaf macros (pyconfig.h's, the core's defines, names nothing in the build
    defines) and the build's files of its text, by relative name (`Include/object.h`). Their
    values are the table's `Dependencies`."""

    macros: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for what, names in (("macros", self.macros), ("files", self.files)):
            if list(names) != sorted(set(names)) or not all(isinstance(n, str) and n for n in names):
                raise ModelError(f"a dependency set's {what} must be distinct names, sorted: {list(names)[:5]}")


@dataclass(frozen=True)
class Dependencies:
    """The values of every dependency set of a table: each leaf macro's (`identity.leaf_value`: its
    body, '' when empty, None when undefined) and each file's digest (`sha256:HEX`); and what the
    constants of each file depend on (one set per file: the union of its constants'; a constant
    of pyconfig.h depends on itself alone, so that file has none)."""

    macros: Mapping[str, Optional[str]] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)
    constants: Mapping[str, DependencySet] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for file, deps in self.constants.items():
            self.check(deps, f"the constants of {file}")
        for name, value in self.macros.items():
            if not (isinstance(name, str) and name) or not (value is None or isinstance(value, str)):
                raise ModelError(f"dependency macro {name!r}: a value is a string or null, not {value!r}")
        for name, digest in self.files.items():
            if not (isinstance(digest, str) and SHA256.fullmatch(digest)):
                raise ModelError(f"dependency file {name!r}: digest {str(digest)[:80]!r} is not sha256:HEX")

    def check(self, deps: Optional[DependencySet], what: str) -> None:
        """A set names only macros and files these values have."""
        if deps is None:
            return
        for names, known, kind in ((deps.macros, self.macros, "macro"), (deps.files, self.files, "file")):
            missing = [n for n in names if n not in known]
            if missing:
                raise ModelError(f"{what} depends on {kind} {missing[0]!r}, which the table's dependencies lack")


#: A file's digest in a table: sha256 of its bytes.
SHA256 = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Field:
    """One member of a struct, named by its `offsetof` designator (`ob_base.ob_type`).

    `offset` is in bytes from the start of the outermost struct. A bitfield is read by loading
    `size` bytes at `offset` as an integer in the target's byte order and taking `bit_width` bits
    from bit `bit_offset`, bit 0 the least significant (`(value >> bit_offset) & mask` on every
    target: on a big-endian one, whose bitfields start at the most significant end, the first
    bitfield of a 4-byte unit has the highest `bit_offset`). `array_len` is set for arrays; a flexible array member has `flexible` and size 0.
    """

    path: str
    offset: int
    size: int
    type: str
    bit_offset: Optional[int] = None
    bit_width: Optional[int] = None
    array_len: Optional[int] = None
    flexible: bool = False

    @classmethod
    def bitfield(cls, path: str, bits: int, width: int, unit: int, type: str, big_endian: bool = False) -> "Field":
        """A bitfield `width` bits wide at bit `bits` of its struct (in memory order, as compilers
        and DWARF's DW_AT_data_bit_offset count), of a type `unit` bytes wide: read from that unit
        aligned down, or, where it straddles it, the smallest byte window. On a `big_endian`
        target memory order runs from the most significant bit, so the shift is counted back."""
        start = (bits // (8 * unit)) * unit
        if bits - 8 * start + width > 8 * unit:
            start = bits // 8
            unit = (bits - 8 * start + width + 7) // 8
        shift = bits - 8 * start
        return cls(path, start, unit, type, 8 * unit - shift - width if big_endian else shift, width)

    def __post_init__(self) -> None:
        where = f"field {self.path!r}"
        sanity.check_field(self)
        if not self.path or self.path.startswith(".") or self.path.endswith(".") or ".." in self.path:
            raise ModelError(f"{where}: not a designator")
        if self.offset < 0 or self.size < 0:
            raise ModelError(f"{where}: negative offset {self.offset} or size {self.size}")
        if (self.bit_offset is None) != (self.bit_width is None):
            raise ModelError(f"{where}: bit_offset and bit_width go together")
        if self.bit_width is not None:
            if self.bit_width < 1 or self.bit_offset < 0 or self.bit_offset + self.bit_width > 8 * self.size:
                raise ModelError(f"{where}: bits {self.bit_offset}+{self.bit_width} do not fit in "
                                 f"{self.size} bytes")
        if self.flexible and (self.size != 0 or self.array_len is not None):
            raise ModelError(f"{where}: a flexible array member has size 0 and no length")
        if self.array_len is not None and self.array_len < 0:
            raise ModelError(f"{where}: negative array length")

    @property
    def is_bitfield(self) -> bool:
        return self.bit_width is not None


@dataclass(frozen=True)
class Struct:
    """A complete struct or union: size, alignment, where it is defined, and every field; and
    `c_type`, how C names it where its body is: the tag when it has one (`struct wrapperbase`: a
    typedef of it may be declared elsewhere, as 3.12's `pytype_slotdef` is in an internal header),
    else the typedef name that defines it (`_PyListIterObject`); None in a table made before the
    scanner recorded it."""

    name: str
    kind: str
    size: int
    align: int
    defined_in: str
    fields: tuple[Field, ...]
    origin: str = "clang"
    #: what its layout depends on; None: not known (its text was not at hand), so everything
    depends: Optional[DependencySet] = None
    c_type: Optional[str] = None

    def __post_init__(self) -> None:
        where = f"struct {self.name!r}"
        if not isinstance(self.name, str) or not self.name or any(c.isspace() for c in self.name):
            raise ModelError(f"{where}: a struct's name is a C name (or NAME@FILE), without blanks")
        sanity.integer(self.size, f"{where}: size")
        sanity.integer(self.align, f"{where}: align", 1, sanity.MAX_ALIGN)
        if self.kind not in ("struct", "union"):
            raise ModelError(f"{where}: kind {self.kind!r} is not struct or union")
        if self.origin not in ORIGINS:
            raise ModelError(f"{where}: origin {self.origin!r} is not one of {ORIGINS}")
        if self.c_type is not None:
            m = C_TYPE.fullmatch(self.c_type) if isinstance(self.c_type, str) else None
            if m is None or m.group(1) not in (None, self.kind):
                raise ModelError(f"{where}: C type {sanity.short(self.c_type)} is neither `{self.kind} TAG` "
                                 "nor a typedef name")
        if self.size < 0 or self.align < 1 or self.align & (self.align - 1):
            raise ModelError(f"{where}: size {self.size} / alignment {self.align} impossible")
        # no `size % align == 0`: a typedef may raise its struct's alignment without padding it
        # (`__attribute__((aligned(8))) typedef struct {...} T;` is 212 bytes, aligned to 8, in gcc)
        seen = set()
        for f in self.fields:
            if f.path in seen:
                raise ModelError(f"{where}: field {f.path!r} appears twice")
            seen.add(f.path)
            end = f.offset + f.size
            if end > self.size and not (f.flexible and f.offset <= self.size):
                raise ModelError(f"{where}: field {f.path!r} ends at {end}, past the size {self.size}")

    def field(self, path: str) -> Field:
        for f in self.fields:
            if f.path == path:
                return f
        raise KeyError(path)


@dataclass(frozen=True)
class Constant:
    """An integer constant of the build: an enumerator, or an object-like macro of CPython's own
    files that is an integer constant expression in the build's context.

    `type` is its C type as the compiler gives it (`sanity.INTEGER_TYPES`: `unsigned long`, never
    a typedef's name; an enumerator is `int` as in C), `size` its width in bytes, and `defined_in`
    the file whose definition is in effect at the end of the translation unit (no line: lines move
    between patch releases, values rarely do). `name` is qualified `NAME@FILE` where the build
    gives one name two values (qualify.py)."""

    name: str
    value: int
    type: str
    size: int
    defined_in: str
    kind: str = "macro"

    def __post_init__(self) -> None:
        sanity.check_constant(self)
        if self.kind not in CONSTANT_KINDS:
            raise ModelError(f"constant {self.name!r}: kind {self.kind!r} is not one of {CONSTANT_KINDS}")

    @property
    def signed(self) -> Optional[bool]:
        """Whether the type is signed; None for plain `char`, whose sign is the target's."""
        return sanity.INTEGER_TYPES[self.type]


@dataclass(frozen=True)
class Table:
    """One build's layouts: every struct by name, plus other names (tags, typedefs) for them.

    `guards`: the include guard of each header of `Include/` a struct or constant is defined in
    (`Include/internal/pycore_list.h` -> `Py_INTERNAL_LIST_H`), which tells a unit that includes the
    generated header whether that header is there. `core_only`: the constants of `Include/` outside
    internal/ whose value a unit without `Py_BUILD_CORE` (Python.h and the public headers) does not
    give as the table does (3.15's `_PyABIInfo_DEFAULT_FLAG_INTERNAL`: 8 with it, 0 without). Both
    None in a table made before the scanner recorded them."""

    build: Build
    scanner: Mapping[str, str]
    structs: Mapping[str, Struct]
    names: Mapping[str, str] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    constants: Mapping[str, Constant] = field(default_factory=dict)
    #: macros of CPython's files that are not constants, counted by reason (`LEFT_OUT_REASONS`)
    constants_left_out: Mapping[str, int] = field(default_factory=dict)
    #: the values of the structs' and constants' dependency sets; None for a table made before them
    dependencies: Optional[Dependencies] = None
    guards: Optional[Mapping[str, str]] = None
    core_only: Optional[tuple[str, ...]] = None
    #: tp_name -> the type's own record of its layout in the scanned sources (scan/type_records.py)
    types: Mapping[str, Mapping] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, s in self.structs.items():
            if key != s.name:
                raise ModelError(f"struct stored as {key!r} is named {s.name!r}")
        for key, c in self.constants.items():
            if key != c.name:
                raise ModelError(f"constant stored as {key!r} is named {c.name!r}")
        for reason, count in self.constants_left_out.items():
            if reason not in LEFT_OUT_REASONS:
                raise ModelError(f"constants left out for {reason!r}: not one of {', '.join(LEFT_OUT_REASONS)}")
            sanity.integer(count, f"constants left out as {reason}", 1)
        if self.dependencies is None:
            if any(s.depends is not None for s in self.structs.values()):
                raise ModelError("structs have dependency sets, but the table has no dependencies")
        else:
            for key, s in self.structs.items():
                self.dependencies.check(s.depends, f"struct {key!r}")
        for header, guard in (self.guards or {}).items():
            if not (header.startswith("Include/") and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", guard)):
                raise ModelError(f"include guard {sanity.short(guard)} of {sanity.short(header)}: not a macro of Include/")
        for name in self.core_only or ():
            if name not in self.constants:
                raise ModelError(f"core-only constant {name!r} is not a constant of the table")
        for alias, target in self.names.items():
            if target not in self.structs:
                raise ModelError(f"name {alias!r} points at {target!r}, which is not in the table")
            if alias in self.structs:
                raise ModelError(f"name {alias!r} is both a struct and an alias")

    @property
    def field_count(self) -> int:
        return sum(len(s.fields) for s in self.structs.values())
