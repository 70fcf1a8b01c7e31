"""The compiler check: gcc's `offsetof`/`sizeof`/`_Alignof` against a table, read from an object file.

For every field of every struct a table holds, a C file of probes is generated and compiled with
gcc (`-c`, the same `-I`/`-D` flags as the scan, gcc's own builtin headers), and the numbers are
read back from the object file with pyelftools, so a cross compiler serves as well as the host's:

    const unsigned long long __offsets_probe_N[] = {sizeof(T), _Alignof(T), offsetof(T, f), sizeof(((T *)0)->f), ...};
    const T __offsets_bits_N_M = {.state.kind = -1};      /* a bitfield: its set bits in the object's bytes */

Header-defined structs are probed in one translation unit that includes every header the scan
read; a struct of a `.c` file is probed in a unit that `#include`s that file with its own flags.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional, Sequence

from elftools.elf.elffile import ELFFile

from ..scan import sources, targets, units, zig
from ..scan.clang_headers import builtin_include
from ..scan.build_inputs import BuildInputs
from .. import children
from ..remote import pe
from . import macho_object
from ..errors import BuildError
from ..layout.model import Struct, Table

_PROBE = "__offsets_probe_"
_BITS = "__offsets_bits_"
_TYPECHECK = "__offsets_tc_"
_TYPES = "__offsets_type_"
_ERROR = re.compile(r"^(.*?):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$")


@dataclass(frozen=True)
class Mismatch:
    """One number on which the table and the compiler disagree."""

    struct: str
    path: str          # '' for the struct itself
    what: str          # size, align, offset, bits
    table: str
    compiler: str
    by: str = "gcc"

    def __str__(self) -> str:
        name = f"{self.struct}.{self.path}" if self.path else self.struct
        return f"{name}: table says {self.what} {self.table}, {self.by} says {self.compiler}"


@dataclass(frozen=True)
class SourceProbe:
    """A struct defined in a `.c` file: the file to `#include`, and the flags its unit compiles with."""

    struct: str                  # the table key (`name` or `name@file` for a conflict)
    include_file: Path
    flags: tuple[str, ...] = ()  # the unit's compiler flags (clang-only ones are dropped for gcc)
    #: For a struct of a header of the tree: other units that include that header, tried in turn
    #: when this one does not define the struct (stringlib's headers define `STRINGLIB(prework)`).
    alternates: tuple[tuple[Path, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class ProbeReport:
    """What the compiler was asked, and where it disagreed."""

    compiler: str
    structs: int
    fields: int
    bitfields: int
    checked: frozenset        # `struct.path` of every field compared
    mismatches: tuple[Mismatch, ...]
    skipped: tuple[str, ...] = ()
    types: int = 0            # fields whose type spelling was compared too

    def __add__(self, other: "ProbeReport") -> "ProbeReport":
        return ProbeReport(self.compiler if self.compiler == other.compiler else f"{self.compiler}, {other.compiler}",
                           self.structs + other.structs, self.fields + other.fields,
                           self.bitfields + other.bitfields, self.checked | other.checked,
                           self.mismatches + other.mismatches, self.skipped + other.skipped,
                           self.types + other.types)

    def summary(self) -> str:
        return (f"{self.structs} structs / {self.fields} fields compared ({self.bitfields} bitfields, "
                f"{self.types} types), {len(self.mismatches)} mismatches")


# ---------------------------------------------------------------------------------------------
# The compiler and its flags


def compiler_for(t: targets.TargetInfo) -> list[str]:
    """The gcc command line start that compiles for target `t` from this machine."""
    host = targets.host()
    if t == host:
        cmd, package = ["gcc"], "gcc"
    elif t.host_gcc_flag and t.host_gcc_flag[0] == host.triple:
        cmd, package = ["gcc", t.host_gcc_flag[1]], "gcc"
    else:
        cmd, package = [f"{t.triple}-gcc"], f"gcc-{t.triple.replace('_', '-')}"
    if t.system != "windows" and t.triple in zig.TARGETS:  # macOS, musl: no Debian gcc; zig's clang, its own C library
        return zig.cc(t.triple) + list(t.clang_args)
    if t.system == "windows":
        # -fdata-sections: a section per probe (COFF symbols have no size); MS_WIN64: what MSVC's
        # `_WIN64` makes PC/pyconfig.h define, which before 3.13 it leaves a mingw-w64 compile of a
        # 64-bit build to pass itself (as distutils did); -mlong-double-64: MSVC's `long double` is
        # a double (mingw-w64 gcc's is x87's 16 bytes), which `_Alignof(max_align_t)` reads
        win64 = ["-DMS_WIN64"] if t.pointer_size == 8 else []
        if t.triple in zig.TARGETS:         # no mingw-w64 gcc for it in Debian: zig's clang (its long double is a double)
            return zig.cc(t.triple) + ["-fdata-sections"] + win64
        cmd = [f"{t.multiarch}-gcc", "-fdata-sections", "-mlong-double-64"] + win64
        package = f"gcc-mingw-w64-{t.triple.split('-')[0].replace('_', '-')}"
    if shutil.which(cmd[0]) is None:
        raise BuildError(f"no C compiler for {t.triple}: {cmd[0]} is not on PATH (apt-get install {package})")
    return cmd


@lru_cache(maxsize=None)
def _builtin_dirs(cc: tuple[str, ...]) -> tuple[str, ...]:
    if zig.is_zig(cc):
        return (str(zig.builtin_headers()),)
    out = []
    for name in ("include", "include-fixed"):
        d = children.run([*cc, f"-print-file-name={name}"], cc[0], check=True).stdout.strip()
        if Path(d).is_dir():
            out.append(d)
    return tuple(out)


def gcc_flags(clang_args: Sequence[str], b: BuildInputs, cc: Sequence[str]) -> list[str]:
    """A unit's clang arguments made gcc's: keep -I/-D and the language, drop clang's target and
    builtin headers. On the host gcc uses its own C library headers; for another target gcc's
    builtin headers plus the same C library headers the scan used."""
    clang_only = {str(builtin_include())}
    host = b.target == targets.host() and b.sysroot is None
    system = [str(d) for d in targets.system_includes(b.target, b.sysroot)]
    out: list[str] = []
    it = iter(clang_args)
    for a in it:
        if a in ("-target", "-isystem"):
            value = next(it)
            if a == "-isystem" and value not in clang_only and value not in system:
                out += [a, value]
        elif a == "-nostdinc" or a.startswith(("-ferror-limit", "-fgnuc-version")):
            continue
        else:
            out.append(a)
    if not host:
        pre = ["-nostdinc"]
        for d in [*_builtin_dirs(tuple(cc)), *system]:
            pre += ["-isystem", d]
        out = pre + out
    return out


# ---------------------------------------------------------------------------------------------
# Generating and reading probes


def _c_name(key: str) -> str:
    return key.split("@", 1)[0]


@dataclass
class _Plan:
    """The probe text of one unit, and what each number in it stands for."""

    structs: list          # the Structs probed, in symbol-number order
    text: str = ""
    arrays: dict = None    # symbol -> [(struct key, Field or None for the struct, what)]
    bits: dict = None      # symbol -> (struct key, Field)


def _spellings(structs: Sequence[Struct], prelude: str, cc: list, flags: list, work: Path) -> dict:
    """The C type of each struct: its key where that is a typedef name, else `struct KEY`/`union KEY`.

    Decided by gcc itself: `typedef KEY t;` fails for a name that is only a tag."""
    lines = [prelude, "#line 1 \"__offsets_typecheck__\""]
    lines += [f"typedef {_c_name(s.name)} {_TYPECHECK}{i};" for i, s in enumerate(structs)]
    src = work / "typecheck.c"
    src.write_text("\n".join(lines) + "\n")
    proc = children.run([*cc, *flags, "-w", *zig.syntax_only(cc, work), str(src)], cc[0])
    tags = set()
    other = []
    for line in proc.stderr.splitlines():
        m = _ERROR.match(line)
        if not m:
            continue
        if m.group(1) == "__offsets_typecheck__":
            tags.add(int(m.group(2)) - 1)
        else:
            other.append(line)
    if other:
        raise BuildError(f"gcc cannot compile the build's headers: {other[0]} ({len(other)} errors; "
                         f"command: {' '.join([*cc, *flags])})")
    if proc.returncode and not tags:
        raise BuildError(f"gcc failed on the probe prelude: {proc.stderr.strip()[-500:]}")
    return {s.name: (f"{s.kind} {_c_name(s.name)}" if i in tags else _c_name(s.name)) for i, s in enumerate(structs)}


def _object_macros(prelude: str, cc: list, flags: list, work: Path) -> set:
    """The object-like macros defined after `prelude` (3.6's graminit.h defines `test`, a field name)."""
    src = work / "macros.c"
    src.write_text(prelude + "\n")
    # in `work`: zig cc, asked only to preprocess for macOS, still writes an object named after the
    # source into the current directory
    proc = children.run([*cc, *flags, "-w", "-dM", "-E", str(src)], cc[0], cwd=str(work))
    if proc.returncode:
        raise BuildError(f"gcc cannot preprocess the build's headers: {proc.stderr.strip()[-500:]}")
    return set(re.findall(r"^#define (\w+)(?: |$)", proc.stdout, re.M))


def _undefs(structs: Sequence[Struct], macros: set) -> list[str]:
    members = {part for s in structs for f in s.fields for part in f.path.split(".")}
    types = {_c_name(s.name) for s in structs}
    shadowed = sorted((members & set(macros)) - types)
    return ["", "/* field names the headers also define as macros */", *(f"#undef {m}" for m in shadowed)]


def _plan(structs: Sequence[Struct], ctypes: dict, prelude: str, macros: set = frozenset()) -> _Plan:
    plan = _Plan(list(structs), arrays={}, bits={})
    out = [prelude, *_undefs(structs, macros)]
    out += ["", "/* probes generated by offsets.check.probe; one array per struct, one object per bitfield */",
           f"const unsigned long long {_PROBE}pointer[] = {{sizeof(void *)}};"]
    plan.arrays[f"{_PROBE}pointer"] = [("", None, "pointer")]
    for i, s in enumerate(structs):
        t = ctypes[s.name]
        items = [f"sizeof({t})", f"_Alignof({t})"]
        meaning = [(s.name, None, "size"), (s.name, None, "align")]
        for j, f in enumerate(s.fields):
            if f.is_bitfield:
                # An object of the innermost named member holding the bitfield (not of the whole
                # struct: _PyRuntimeState is 160 kB and holds 1600 bitfields), plus where it starts.
                sym = f"{_BITS}{i}_{j}"
                parent, _, leaf = f.path.rpartition(".")
                container = f"__typeof__((({t} *)0)->{parent})" if parent else t
                out.append(f"const {container} {sym} = {{.{leaf} = -1}};")
                base = f"__builtin_offsetof({t}, {parent})" if parent else "0"
                out.append(f"const unsigned long long {sym}_base[] = {{{base}}};")
                plan.bits[sym] = (s.name, f)
                continue
            items.append(f"__builtin_offsetof({t}, {f.path})")
            meaning.append((s.name, f, "offset"))
            if not f.flexible:
                items.append(f"sizeof((({t} *)0)->{f.path})")
                meaning.append((s.name, f, "size"))
            if f.array_len is not None:
                items.append(f"sizeof((({t} *)0)->{f.path}) / sizeof((({t} *)0)->{f.path}[0])")
                meaning.append((s.name, f, "array length"))
        sym = f"{_PROBE}{i}"
        out.append(f"const unsigned long long {sym}[] = {{{', '.join(items)}}};")
        plan.arrays[sym] = meaning
    plan.text = "\n".join(out) + "\n"
    return plan


def _read_symbols(obj: Path, names: Iterable[str], sizes: Optional[dict] = None) -> tuple[dict, bool, int]:
    """The bytes of each named symbol of a relocatable object, its endianness and ELF class (a
    COFF object of mingw-w64 gcc's: little-endian, and 64 or 32 by its machine; its symbols carry
    no size, so each runs to the next symbol or its section's padded end, cut to `sizes`' where given;
    a Mach-O object of zig cc's for macOS likewise, 64-bit little-endian: check/macho_object.py)."""
    with open(obj, "rb") as fh:
        head = fh.read(4)
    if macho_object.is_macho(head):
        found = macho_object.symbol_bytes(obj, names)
        return {k: v[:(sizes or {}).get(k, len(v))] for k, v in found.items()}, True, 64
    if head[:4] != b"\x7fELF" and pe.is_coff(head):
        coff = pe.read(obj)
        found = coff.symbol_bytes(names)
        return {k: v[:(sizes or {}).get(k, len(v))] for k, v in found.items()}, True, 32 if coff.cpu == "i686" else 64
    wanted = set(names)
    found = {}
    with open(obj, "rb") as fh:
        elf = ELFFile(fh)
        symtab = elf.get_section_by_name(".symtab")
        if symtab is None:
            raise BuildError(f"{obj}: gcc's object file has no symbol table")
        sections = {}
        for sym in symtab.iter_symbols():
            if sym.name not in wanted:
                continue
            shndx = sym["st_shndx"]
            if not isinstance(shndx, int):
                raise BuildError(f"{obj}: probe symbol {sym.name} is not defined in a section ({shndx})")
            if shndx not in sections:
                sec = elf.get_section(shndx)
                sections[shndx] = None if sec["sh_type"] == "SHT_NOBITS" else sec.data()
            data = sections[shndx]
            start, size = sym["st_value"], sym["st_size"]
            found[sym.name] = bytes(size) if data is None else data[start:start + size]
        return found, elf.little_endian, elf.elfclass


def _set_bits(data: bytes) -> list[int]:
    """The set bits of `data`, each numbered 8 * its byte + its place in that byte (0: least significant)."""
    return [8 * i + k for i, byte in enumerate(data) for k in range(8) if byte >> k & 1]


def _field_bits(f, little: bool) -> list[int]:
    """The bits bitfield `f` takes, numbered as `_set_bits` numbers them: the table's bit_offset
    counts from the least significant bit of its `size`-byte unit read in the target's byte order."""
    out = []
    for s in range(f.bit_offset, f.bit_offset + f.bit_width):
        byte = s // 8 if little else f.size - 1 - s // 8
        out.append(8 * (f.offset + byte) + s % 8)
    return sorted(out)


def _compare(plan: _Plan, found: dict, little: bool, pointer_size: int, by: str) -> tuple[list, set]:
    mismatches: list[Mismatch] = []
    checked: set = set()
    structs = {s.name: s for s in plan.structs}
    for sym, meaning in plan.arrays.items():
        data = found.get(sym)
        if data is None or len(data) != 8 * len(meaning):
            raise BuildError(f"probe {sym} is missing from gcc's object file (or has {len(data or b'')} bytes, "
                             f"{8 * len(meaning)} expected)")
        values = [int.from_bytes(data[k:k + 8], "little" if little else "big") for k in range(0, len(data), 8)]
        for (key, f, what), got in zip(meaning, values):
            if what == "pointer":
                if got != pointer_size:
                    raise BuildError(f"gcc compiles for {got}-byte pointers, the table is for {pointer_size}: "
                                     f"wrong compiler for this target")
                continue
            s = structs[key]
            if f is not None:
                want = {"offset": f.offset, "size": f.size, "array length": f.array_len}[what]
                checked.add(f"{key}.{f.path}")
            else:
                want = s.size if what == "size" else s.align
            if want != got:
                mismatches.append(Mismatch(key, f.path if f else "", what, str(want), str(got), by))
    for sym, (key, f) in plan.bits.items():
        data = found.get(sym)
        if data is None:
            raise BuildError(f"bitfield probe {sym} ({key}.{f.path}) is missing from gcc's object file")
        base = found.get(sym + "_base")
        if base is None or len(base) != 8:
            raise BuildError(f"bitfield probe {sym}_base ({key}.{f.path}) is missing from gcc's object file")
        start = 8 * int.from_bytes(base, "little" if little else "big")
        bits = [start + k for k in _set_bits(data)]
        checked.add(f"{key}.{f.path}")
        want_lo, want_w = f.offset * 8 + f.bit_offset, f.bit_width
        if not bits:
            mismatches.append(Mismatch(key, f.path, "bits", f"{want_lo}+{want_w}", "no bits set", by))
            continue
        if not little:      # the unit's bytes run from its most significant: compare the bits themselves
            want = _field_bits(f, little)
            if bits != want:
                mismatches.append(Mismatch(key, f.path, "bits", f"bits {want} (byte {f.offset} bit {f.bit_offset} "
                                           f"of {f.size} big-endian)", f"bits {bits}", by))
            continue
        lo, width = bits[0], bits[-1] - bits[0] + 1
        if len(bits) != width or (lo, width) != (want_lo, want_w):
            got = f"{lo}+{width}" if len(bits) == width else f"bits {bits}"
            mismatches.append(Mismatch(key, f.path, "bits", f"{want_lo}+{want_w} (byte {f.offset} bit {f.bit_offset})",
                                       f"{got} (byte {lo // 8} bit {lo % 8})", by))
    return mismatches, checked


def _type_probes(structs: Sequence[Struct], ctypes: dict, prelude: str, macros: set, cc: list, flags: list,
                 work: Path, by: str, before: Optional[str] = None) -> tuple[list, int, list, Optional[Path]]:
    """Each field's type as the table spells it against gcc's `__typeof__` of the member
    (`__builtin_types_compatible_p`: typedef names and top-level qualifiers do not count).
    Bitfields and spellings with an untagged record (`struct <anonymous>`) are left out; a spelling
    gcc cannot parse is a mismatch too. `before`: the C text the probes follow (default: `prelude`
    and the macro #undefs; the offset probes' text too, to compile both at once). Returns
    (mismatches, types compared, notes, the object file when it compiled, else None)."""
    head = [before.rstrip("\n") if before is not None else "\n".join([prelude, *_undefs(structs, macros)]),
            '#line 1 "__offsets_types__"']
    lines: dict = {}            # line number after the #line -> (struct, field)
    body: list = []
    for i, s in enumerate(structs):
        t = ctypes[s.name]
        body.append(f"const unsigned char {_TYPES}{i}[] = {{1,")
        for f in s.fields:
            if f.is_bitfield or "<anonymous>" in f.type:
                continue
            lines[len(body) + 1] = (s, f)
            body.append(f"  __builtin_types_compatible_p(__typeof__((({t} *)0)->{f.path}), {f.type}),")
        body.append("};")
    obj = work / "types.o"
    proc, dropped = _compile_dropping(head, body, lines, cc, flags, work / "types.c", obj)
    unspellable = [Mismatch(s.name, f.path, "type", repr(f.type), "it is no type here", by) for s, f in dropped]
    if proc.returncode:
        first = next((ln for ln in proc.stderr.splitlines() if _ERROR.match(ln)), proc.stderr.strip()[:300])
        return unspellable, 0, [f"field types not compared: gcc could not compile the type probes ({first})"], None
    sizes = {f"{_TYPES}{i}": 1 + sum(1 for s_, _ in lines.values() if s_.name == s.name) for i, s in enumerate(structs)}
    found, _, _ = _read_symbols(obj, list(sizes), sizes)
    differ = []
    index = {}
    for n in sorted(lines):
        s, f = lines[n]
        index.setdefault(s.name, []).append(f)
    for i, s in enumerate(structs):
        data = found.get(f"{_TYPES}{i}")
        fields = index.get(s.name, [])
        if data is None or len(data) != 1 + len(fields):
            raise BuildError(f"type probe {_TYPES}{i} ({s.name}) has {len(data or b'')} bytes in gcc's object "
                             f"file, {1 + len(fields)} expected")
        differ += [(s, f) for f, ok in zip(fields, data[1:]) if not ok]
    notes = []
    if differ and zig.is_zig(cc):
        atomic = _atomic_of_table_type(differ, ctypes, head, cc, flags, work)
        if atomic:
            differ = [(s, f) for s, f in differ if (s.name, f.path) not in atomic]
            notes.append(f"{len(atomic)} field types compared as _Atomic(the table's type): clang's GNU target reads "
                         f"the `_Atomic(T)` that clang's MSVC target reads as T (mimalloc's atomic.h: `_MSC_VER`), "
                         f"which gcc's check ignores as a qualifier: {', '.join(sorted(f'{a}.{b}' for a, b in atomic))}")
    mismatches = [Mismatch(s.name, f.path, "type", repr(f.type), "a different type", by) for s, f in differ]
    return unspellable + mismatches, len(lines) + len(unspellable), notes, obj


def _compile_dropping(head: list, body: list, lines: dict, cc: list, flags: list, src: Path, obj: Path):
    """Compile `head + body` into `obj`, commenting out the body lines the compiler rejects (up to
    four tries); `lines` (body line number -> what it probes) loses them. The last try's process
    and what was dropped, in line order."""
    dropped = []
    for attempt in range(4):
        src.write_text("\n".join(head + body) + "\n")
        proc = children.run([*cc, *flags, "-w", "-O0", "-c", str(src), "-o", str(obj)], cc[0])
        if not proc.returncode:
            break
        bad = {int(m.group(2)) for m in map(_ERROR.match, proc.stderr.splitlines())
               if m and m.group(1) == "__offsets_types__" and int(m.group(2)) in lines}
        if not bad or attempt == 3:
            break
        for n in sorted(bad):
            dropped.append(lines.pop(n))
            body[n - 1] = "  /* " + body[n - 1].replace("*/", "* /") + " */"
    return proc, dropped


def _atomic_of_table_type(fields: list, ctypes: dict, head: list, cc: list, flags: list, work: Path) -> set:
    """(struct, path) of the fields whose type is exactly `_Atomic(T)`, T the table's type: what gcc's
    `__builtin_types_compatible_p` equates with T (it ignores `_Atomic` as a qualifier) and clang's
    does not. A T that `_Atomic` cannot take (an array, a function) is a compile error: not one."""
    body, lines = [], {}
    for st, f in fields:
        lines[len(body) + 1] = (st.name, f.path)
        body.append(f"const unsigned char {_TYPES}a{len(body)}[] = {{__builtin_types_compatible_p("
                    f"__typeof__((({ctypes[st.name]} *)0)->{f.path}), _Atomic({f.type}))}};")
    obj = work / "atomic.o"
    if _compile_dropping(head, body, lines, cc, flags, work / "atomic.c", obj)[0].returncode:
        return set()
    names = {f"{_TYPES}a{n - 1}": n for n in lines}
    found, _, _ = _read_symbols(obj, list(names), {k: 1 for k in names})
    return {lines[n] for k, n in names.items() if found.get(k) == b"\x01"}


def probe_unit(structs: Sequence[Struct], prelude: str, cc: list, flags: list, pointer_size: int,
               work: Optional[Path] = None) -> ProbeReport:
    """Compile probes for `structs` after `prelude` (the C text that defines them) and compare."""
    structs = list(structs)
    if not structs:
        return ProbeReport(" ".join(cc), 0, 0, 0, frozenset(), ())
    for s in structs:
        if not re.fullmatch(r"[A-Za-z_]\w*", _c_name(s.name)):
            raise BuildError(f"struct {s.name!r} ({s.defined_in}) has no C name to probe: a table key must be a "
                             f"tag or typedef name; rescan with this version of offsets")
    with tempfile.TemporaryDirectory(prefix="offsets-probe-") as tmp:
        work = Path(work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        ctypes = _spellings(structs, prelude, cc, flags, work)
        macros = _object_macros(prelude, cc, flags, work)
        plan = _plan(structs, ctypes, prelude, macros)
        # one compile for the offset and the type probes; if the type probes cannot be compiled,
        # each on its own, as the types are then not compared while the offsets still are
        bad_types, ntypes, notes, obj = _type_probes(structs, ctypes, prelude, macros, cc, flags, work, zig.name(cc),
                                                     before=plan.text)
        if obj is None:
            src, obj = work / "probe.c", work / "probe.o"
            src.write_text(plan.text)
            proc = children.run([*cc, *flags, "-w", "-O0", "-c", str(src), "-o", str(obj)], cc[0])
            if proc.returncode:
                errors = [line for line in proc.stderr.splitlines() if _ERROR.match(line)] or proc.stderr.splitlines()
                raise BuildError(f"gcc could not compile the probes: {errors[0] if errors else '(no message)'} "
                                 f"({len(errors)} errors)")
            bad_types, ntypes, notes, _ = _type_probes(structs, ctypes, prelude, macros, cc, flags, work, zig.name(cc))
        sizes = {**{sym: 8 * len(m) for sym, m in plan.arrays.items()}, **{b + "_base": 8 for b in plan.bits}}
        found, little, _ = _read_symbols(obj, [*plan.arrays, *plan.bits, *(b + "_base" for b in plan.bits)], sizes)
        mismatches, checked = _compare(plan, found, little, pointer_size, zig.name(cc))
    return ProbeReport(" ".join(cc), len(structs), len(checked), len(plan.bits), frozenset(checked),
                       tuple(mismatches + bad_types), tuple(notes), ntypes)


# ---------------------------------------------------------------------------------------------
# What to probe


def header_structs(table: Table) -> list[Struct]:
    """The structs a table holds that a header defines (`Include/...`), conflicts left out, and
    only those libclang scanned: a struct filled from DWARF may live in a header the build never
    includes on its own (3.13's mimalloc prim.h); DWARF is its witness."""
    return [s for key, s in table.structs.items()
            if s.defined_in.startswith("Include/") and "@" not in key and s.origin == "clang"]


def probe_headers(table: Table, b: BuildInputs, work: Optional[Path] = None,
                  structs: Optional[Sequence[Struct]] = None) -> ProbeReport:
    """gcc's answer for every field of every header-defined struct of `table` (or of `structs`),
    built from `b`."""
    unit, _ = units.header_unit(b)
    cc = compiler_for(b.target)
    flags = gcc_flags(unit.args, b, cc)
    prelude = f'#line 1 "__offsets_headers__.c"\n{unit.text}'
    flags += ["-iquote", str(b.include_dir)]   # the unit's text names headers relative to the include dir
    return probe_unit(header_structs(table) if structs is None else structs, prelude, cc, flags,
                      table.build.target.pointer_size, work)


def source_probes(table: Table, b: BuildInputs) -> tuple[list[SourceProbe], list[str]]:
    """A `SourceProbe` for each struct of `table` defined in a `.c` file of `b`'s source tree, and
    what cannot be probed (with why). Empty when there is no source tree."""
    wanted = [s for s in table.structs.values() if not s.defined_in.startswith("Include/")]
    from_dwarf = [s for s in table.structs.values() if s.origin == "dwarf"]
    if from_dwarf and b.source is None:
        return [], [f"{len(from_dwarf)} structs filled from DWARF: no source tree to compile them from (--source)"]
    if not wanted:
        return [], []
    if b.source is None:
        return [], [f"{len(wanted)} structs of .c files: no source tree given (--source)"]
    src_units = sources.source_units(b)[0]
    by_file = {}
    for u in src_units:
        rel = str(Path(u.path).resolve().relative_to(b.source)) if Path(u.path).is_absolute() else u.path
        by_file[rel] = u
    probes, skipped = [], []
    includers = None
    for s in wanted:
        file = s.defined_in.rsplit(":", 1)[0]
        u = by_file.get(file)
        if u is None:   # a header of the source tree (Modules/_ctypes/ctypes.h): a unit that includes it
            if includers is None:
                includers = _includers(b.source, by_file)
            found = includers.get(file, [])
            if not found:
                skipped.append(f"{s.name}: defined in {file}, which no translation unit of the build includes directly")
                continue
            u, *others = found[:6]
            probes.append(SourceProbe(s.name, Path(u.path), tuple(u.args),
                                      tuple((Path(o.path), tuple(o.args)) for o in others)))
            continue
        probes.append(SourceProbe(s.name, Path(u.path), tuple(u.args)))
    return probes, skipped


_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def _includers(source: Path, by_file: dict) -> dict:
    """Header (relative to the tree) -> the units, in name order, whose file includes it by a path
    relative to the file's own directory."""
    out: dict = {}
    for rel in sorted(by_file):
        text = (source / rel).read_text(errors="replace")
        for name in _INCLUDE.findall(text):
            header = os.path.normpath(os.path.join(os.path.dirname(rel), name))
            if by_file[rel] not in out.setdefault(header, []):
                out[header].append(by_file[rel])
    return out


def probe_sources(table: Table, b: BuildInputs, items: Sequence[SourceProbe],
                  work: Optional[Path] = None) -> ProbeReport:
    """Probe structs of `.c` files: one unit per file, which `#include`s it with its own flags."""
    cc = compiler_for(b.target)
    psize = table.build.target.pointer_size

    def run(path, flags, structs):
        return probe_unit(structs, f'#include "{path}"', cc, gcc_flags(flags, b, cc), psize, work)

    groups: dict = {}
    for it in items:
        defined = table.structs[it.struct].defined_in.rsplit(":", 1)[0]
        via_header = not str(it.include_file).endswith("/" + defined)
        groups.setdefault((it.include_file, it.flags, via_header), []).append(it)
    empty = ProbeReport(" ".join(cc), 0, 0, 0, frozenset(), ())
    ordered = sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][2]))
    direct = [(path, flags, [table.structs[it.struct] for it in its]) for (path, flags, via), its in ordered if not via]
    vias = [(path, flags, its) for (path, flags, via), its in ordered if via]

    def via_header(path, flags, its) -> ProbeReport:
        structs = [table.structs[it.struct] for it in its]
        try:
            return run(path, flags, structs)
        except BuildError:
            pass
        report = empty
        for it, s in zip(its, structs):   # one at a time, through each unit that includes its header
            errors = []
            for p, f in ((it.include_file, it.flags), *it.alternates):
                try:
                    report = report + run(p, f, [s])
                    break
                except BuildError as e:
                    errors.append(f"{p.name}: {e}")
            else:
                report = report + ProbeReport(report.compiler, 0, 0, 0, frozenset(), (), (
                    f"{s.name}: no unit including {s.defined_in.rsplit(':', 1)[0]} defines it as the table "
                    f"does ({errors[0][:200]})",))
        return report

    # every unit in the pool at once (gcc runs in its own process); the reports are summed in this
    # order whatever order they finish in. A file that defines its structs: a failure is an error.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        running = [pool.submit(run, *job) for job in direct] + [pool.submit(via_header, *job) for job in vias]
        report = empty
        for future in running:
            report = report + future.result()
    return report


def probe(table: Table, b: BuildInputs, work: Optional[Path] = None) -> ProbeReport:
    """Every struct of `table` that gcc can see from `b`: headers, then `.c` files where possible."""
    report = probe_headers(table, b, work)
    items, skipped = source_probes(table, b)
    if items:
        report = report + probe_sources(table, b, items, work)
    conflicts = [k for k in table.structs if "@" in k and k not in {i.struct for i in items}]
    skipped += [f"{k}: a conflicting definition, not probed" for k in conflicts]
    return ProbeReport(report.compiler, report.structs, report.fields, report.bitfields, report.checked,
                       report.mismatches, report.skipped + tuple(skipped), report.types)
