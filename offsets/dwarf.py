"""Layouts from DWARF: a second, independent reader of struct layouts, for builds without sources.

`read(binary)` takes every complete struct and union from the DWARF of a binary (a plain ELF with
`.debug_info`, or a stripped one with its separate debug file passed in; DWARF 4 or 5, compressed
sections and dwz supplementary files included) and returns the same model the libclang scanner
does: key = first typedef name else tag, `offsetof` designators, anonymous members flattened,
absolute byte offsets, bitfields windowed exactly as `clang_scan` does. `fill` adds to a table the
structs only DWARF has (origin "dwarf"); `compare` cross-checks the structs both have.

Speed: every unit's top-level DIEs are walked once (subprograms skipped by their sibling links), and
a definition met again in another unit (same kind, name, file, line, column and size) is not
re-parsed. Results are cached by the binary's sha256 under `cache_dir()/dwarf/`.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import posixpath
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Optional, Union

from . import __version__
from .errors import BuildError, LayoutError
from .model import Field, Struct, Table

#: Bump when the reader's output changes, so cached results are not reused.
READER_VERSION = 5

#: First path components that mark a file of the CPython tree (the rest is the system's).
TREE_DIRS = frozenset({"Include", "Objects", "Python", "Modules", "Parser", "Programs", "PC", "Lib", "Mac"})

_RECORDS = ("DW_TAG_structure_type", "DW_TAG_union_type")
_QUALIFIERS = {"DW_TAG_const_type": "const", "DW_TAG_volatile_type": "volatile",
               "DW_TAG_restrict_type": "restrict"}
_REF_FORMS = ("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8", "DW_FORM_ref_udata")
_SIBLING = ("DW_AT_sibling",)
_DW_OP_PLUS_UCONST = 0x23
_DW_ATE_COMPLEX_FLOAT = 0x3


@dataclass(frozen=True)
class DwarfInfo:
    """What a binary's DWARF says: structs by name, other names for them, and what was dropped."""

    structs: dict
    names: dict
    conflicts: tuple[str, ...]
    digest: str                     # sha256 over the binary (and its debug file)
    units: int                      # compile (and partial) units read
    seconds: float                  # time the read took (0 when it came from the cache)


@dataclass(frozen=True)
class Comparison:
    """The result of `compare`: what was compared, what disagreed, what only one side has."""

    structs: int
    fields: int
    mismatches: tuple[str, ...]
    one_sided: tuple[str, ...]          # fields only one side has, in a struct both have
    not_compared: tuple[str, ...]       # same name, different definitions (file differs)


@dataclass
class _Type:
    spell: str
    size: Optional[int]                 # None: incomplete (void, function, flexible array)
    own_align: int
    record: Optional[tuple] = None      # definition key, for a struct or union (through typedefs)
    array_len: Optional[int] = None
    flexible: bool = False
    of: object = None                   # the _Def or _Type whose alignment this one has

    @property
    def align(self) -> int:
        # read through: a record's alignment is final only once all its members are read, and a
        # pointer met while reading it may already have asked for its type
        return self.of.align if self.of is not None else self.own_align


@dataclass
class _Member:
    name: Optional[str]
    bits: int                           # offset in bits from the start of the record
    width: Optional[int]                # bitfield width
    type: _Type
    align: int = 1                      # its alignment in the record (explicit, else its type's)
    explicit: Optional[int] = None      # DW_AT_alignment of the member, if any


@dataclass
class _Def:
    kind: str
    tag: Optional[str]
    where: str                          # path:line
    size: int
    align: int = 1
    members: list = field(default_factory=list)
    typedefs: list = field(default_factory=list)
    packed: bool = False
    done: bool = False                  # every member read
    unexplained: str = ""               # why the layout cannot be trusted (alignment not recorded)


# --------------------------------------------------------------------------------------------
# Opening the DWARF


def _digest(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return "sha256:" + h.hexdigest()


def build_id(path) -> Optional[str]:
    """The GNU build-id of an ELF file as hex, or None."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            for sec in elf.iter_sections():
                if sec.header.sh_type == "SHT_NOTE":
                    for note in sec.iter_notes():
                        if note["n_type"] == "NT_GNU_BUILD_ID":
                            return note["n_desc"]
    except ELFError as e:
        raise BuildError(f"{path}: not a readable ELF file ({e})") from None
    return None


def has_dwarf(path) -> bool:
    """Whether the ELF file at `path` carries DWARF itself (not only a link to a debug file)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            return any(elf.get_section_by_name(n) is not None for n in (".debug_info", ".zdebug_info"))
    except ELFError as e:
        raise BuildError(f"{path}: not a readable ELF file ({e})") from None


def debug_file_for(binary, root=None) -> Optional[Path]:
    """The separate debug file of `binary`, found by its build-id under `root`/usr/lib/debug/
    (root: an unpacked package tree), else under any directory above the binary (so an unpacked
    Debian tree is searched) and the system's /usr/lib/debug; None if there is none."""
    bid = build_id(binary)
    if not bid:
        return None
    rel = Path(".build-id") / bid[:2] / f"{bid[2:]}.debug"
    if root is not None:
        bases = [Path(root) / "usr/lib/debug"]
    else:
        bases = [p / d for p in Path(binary).resolve().parents for d in ("usr/lib/debug", "lib/debug")]
    for base in bases:
        if (base / rel).is_file():
            return base / rel
    return None


def _open_dwarf(path: Path):
    """A pyelftools DWARFInfo for `path`, following a dwz supplementary file next to it or under
    the same root (Debian's `/usr/lib/debug/.dwz/...` resolved inside the unpacked tree)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    def loader(name: str):
        candidates = [Path(name)] if not os.path.isabs(name) else []
        candidates.append(path.parent / name.lstrip("/"))
        if os.path.isabs(name):
            # walk up from the debug file: an unpacked Debian tree holds /usr/lib/debug/... below it
            for parent in path.parents:
                candidates.append(parent / name.lstrip("/"))
            candidates.append(Path(name))
        for c in candidates:
            if c.is_file():
                return open(c, "rb")
        raise BuildError(f"{path}: its DWARF refers to the supplementary file {name}, which is not "
                         f"there; unpack the package that holds it next to the debug file")

    stream = open(path, "rb")
    try:
        elf = ELFFile(stream, stream_loader=loader)
        if not elf.has_dwarf_info() or elf.get_section_by_name(".debug_info") is None \
                and elf.get_section_by_name(".zdebug_info") is None:
            raise BuildError(f"{path} has no DWARF (.debug_info); pass its separate debug file "
                             f"(Debian: the -dbg/-dbgsym package, usr/lib/debug/.build-id/)")
        machine = elf["e_machine"]
        info = elf.get_dwarf_info(follow_links=True)
    except ELFError as e:
        stream.close()
        raise BuildError(f"{path}: not a readable ELF file ({e})") from None
    return info, machine, stream


# --------------------------------------------------------------------------------------------
# Reading


class _Reader:
    def __init__(self, machine: str, thorough: bool = False) -> None:
        self.machine = machine
        self.thorough = thorough       # read every unit's definitions, even those met before
        self.defs: dict = {}           # key -> _Def
        self.die_key: dict = {}        # (id(dwarfinfo), offset) -> key of a definition
        self.types: dict = {}          # (id(dwarfinfo), offset) -> _Type
        self.spells: dict = {}         # (id(dwarfinfo), offset) -> C spelling
        self.pending: list = []        # (typedef name, kind, tag) whose record is declared only
        self.units = 0
        self._files: dict = {}         # id(cu) -> (file names, tree roots)

    # ---- where

    def _unit_files(self, cu) -> tuple:
        got = self._files.get(id(cu))
        if got is not None:
            return got
        top = cu.get_top_DIE()
        comp = top.attributes.get("DW_AT_comp_dir")
        comp_dir = _text(comp.value) if comp else ""
        names: list = []
        lp = cu.dwarfinfo.line_program_for_CU(cu)
        if lp is not None:
            h = lp.header
            v5 = h.version >= 5
            dirs = [_text(d) for d in h.include_directory]
            for fe in h.file_entry:
                name = _text(fe.name)
                di = fe.dir_index
                if v5:
                    d = dirs[di] if di < len(dirs) else ""
                else:
                    d = comp_dir if di == 0 else (dirs[di - 1] if di - 1 < len(dirs) else "")
                if not posixpath.isabs(d):
                    d = posixpath.join(comp_dir, d)
                names.append(posixpath.normpath(posixpath.join(d, name)))
            if not v5:
                names.insert(0, "")   # DWARF 4 numbers files from 1
        roots = [comp_dir.rstrip("/"), posixpath.dirname(comp_dir.rstrip("/"))]
        got = (names, roots)
        self._files[id(cu)] = got
        return got

    def _where(self, die) -> tuple[str, int, int]:
        a = die.attributes
        f = a.get("DW_AT_decl_file")
        line = a["DW_AT_decl_line"].value if "DW_AT_decl_line" in a else 0
        col = a["DW_AT_decl_column"].value if "DW_AT_decl_column" in a else 0
        if f is None:
            return "", line, col
        return self._path(die.cu, f.value), line, col

    def _path(self, cu, index: int) -> str:
        names, roots = self._unit_files(cu)
        return _tree_relative(names[index], roots) if 0 <= index < len(names) else ""

    # ---- types

    def _ref(self, die, name: str = "DW_AT_type"):
        attr = die.attributes.get(name)
        if attr is None:
            return None
        if attr.form in _REF_FORMS:
            return die.cu.get_DIE_from_refaddr(die.cu.cu_offset + attr.raw_value)
        return die.get_DIE_from_attribute(name)

    def type_of(self, die) -> _Type:
        """The `_Type` of the type DIE `die` (None stands for void)."""
        if die is None:
            return _Type("void", None, 1)
        memo = (id(die.dwarfinfo), die.offset)
        t = self.types.get(memo)
        if t is None:
            t = self._type(die)
            self.types[memo] = t
        return t

    def _align_of_base(self, size: int, encoding: int) -> int:
        if encoding == _DW_ATE_COMPLEX_FLOAT:
            size //= 2
        if self.machine == "EM_386":
            return min(size, 4) or 1
        return min(size, 16) or 1

    def spell(self, die) -> str:
        """How C spells the type DIE `die` (`PyObject *`, `char[3]`): never reads a record's members,
        so a pointer met while a record is being read cannot start reading its pointee."""
        if die is None:
            return "void"
        memo = (id(die.dwarfinfo), die.offset)
        text = self.spells.get(memo)
        if text is None:
            text = self._spell(die)
            self.spells[memo] = text
        return text

    def _spell(self, die) -> str:
        tag = die.tag
        if tag in _RECORDS or tag == "DW_TAG_enumeration_type":
            kind = {"DW_TAG_union_type": "union", "DW_TAG_structure_type": "struct"}.get(tag, "enum")
            return f"{kind} {_name(die) or '<anonymous>'}"
        if tag == "DW_TAG_pointer_type":
            return _pointer_spelling(self.spell(self._ref(die)))
        if tag in _QUALIFIERS:
            inner = self.spell(self._ref(die))
            return f"{inner} {_QUALIFIERS[tag]}" if inner.endswith("*") else f"{_QUALIFIERS[tag]} {inner}"
        if tag == "DW_TAG_atomic_type":
            return f"_Atomic({self.spell(self._ref(die))})"
        if tag == "DW_TAG_array_type":
            return self.spell(self._ref(die)) + "".join(f"[{n}]" if n is not None else "[]"
                                                        for n in _dims(die))
        if tag == "DW_TAG_subroutine_type":
            children = list(die.iter_children())
            args = [self.spell(self._ref(p)) for p in children if p.tag == "DW_TAG_formal_parameter"]
            if any(p.tag == "DW_TAG_unspecified_parameters" for p in children):
                args.append("...")
            elif not args and "DW_AT_prototyped" in die.attributes:
                args = ["void"]
            return f"{self.spell(self._ref(die))} ({', '.join(args)})"
        return _name(die) or "void"

    def _type(self, die) -> _Type:
        tag = die.tag
        a = die.attributes
        spell = self.spell(die)
        explicit = a["DW_AT_alignment"].value if "DW_AT_alignment" in a else None
        if tag == "DW_TAG_base_type":
            size = a["DW_AT_byte_size"].value
            enc = a["DW_AT_encoding"].value if "DW_AT_encoding" in a else 0
            return _Type(spell, size, explicit or self._align_of_base(size, enc))
        if tag == "DW_TAG_pointer_type":
            size = a["DW_AT_byte_size"].value if "DW_AT_byte_size" in a else die.cu["address_size"]
            return _Type(spell, size, explicit or size)
        if tag == "DW_TAG_typedef":
            inner = self.type_of(self._ref(die))
            return _Type(spell, inner.size, explicit or 1, inner.record, inner.array_len,
                         inner.flexible, None if explicit else inner)
        if tag in _QUALIFIERS:
            inner = self.type_of(self._ref(die))
            return _Type(spell, inner.size, 1, inner.record, inner.array_len, inner.flexible, inner)
        if tag == "DW_TAG_atomic_type":
            inner = self.type_of(self._ref(die))
            return _Type(spell, inner.size, explicit or 1, of=None if explicit else inner)
        if tag in _RECORDS:
            key = self.record(die)
            if key is None:
                return _Type(spell, None, 1)
            d = self.defs[key]
            if not d.done:   # only by-value uses get here, and C forbids a record inside itself
                raise LayoutError(f"{d.where}: {spell} contains itself by value (a DWARF reading error)")
            return _Type(spell, d.size, 1, key, of=d)
        if tag == "DW_TAG_enumeration_type":
            size = a["DW_AT_byte_size"].value if "DW_AT_byte_size" in a else 4
            return _Type(spell, size, explicit or size)
        if tag == "DW_TAG_array_type":
            inner = self.type_of(self._ref(die))
            dims = _dims(die)
            of = None if explicit else inner
            if dims[0] is None or inner.size is None or None in dims[1:]:
                return _Type(spell, None, explicit or 1, flexible=dims[0] is None, of=of)
            total = inner.size
            for n in dims:
                total *= n
            return _Type(spell, total, explicit or 1, array_len=dims[0], of=of)
        if tag in ("DW_TAG_subroutine_type", "DW_TAG_unspecified_type"):
            return _Type(spell, None, 1)
        raise LayoutError(f"DWARF type DIE at {die.offset:#x} has tag {tag}, which the reader does not know")

    # ---- records

    def record(self, die) -> Optional[tuple]:
        """The definition key of a struct/union DIE (reading it the first time), None if declared only."""
        memo = (id(die.dwarfinfo), die.offset)
        key = self.die_key.get(memo)
        if key is not None:
            return key
        a = die.attributes
        if "DW_AT_declaration" in a or "DW_AT_byte_size" not in a:
            return None
        kind = "union" if die.tag == "DW_TAG_union_type" else "struct"
        tag = _name(die)
        path, line, col = self._where(die)
        size = a["DW_AT_byte_size"].value
        key = (kind, tag, path, line, col, size) if path else (kind, tag, id(die.dwarfinfo), die.offset)
        if self.thorough:
            key += (id(die.dwarfinfo), die.cu.cu_offset)
        self.die_key[memo] = key
        if key in self.defs:
            return key
        d = _Def(kind, tag, f"{path or '?'}:{line}", size)
        self.defs[key] = d
        explicit = a["DW_AT_alignment"].value if "DW_AT_alignment" in a else None
        align = explicit or 1
        offsets = []
        for m in die.iter_children():
            if m.tag in _RECORDS:
                self.record(m)
                continue
            if m.tag != "DW_TAG_member":
                continue
            ma = m.attributes
            t = self.type_of(self._ref(m))
            width = ma["DW_AT_bit_size"].value if "DW_AT_bit_size" in ma else None
            if "DW_AT_data_bit_offset" in ma:
                bits = ma["DW_AT_data_bit_offset"].value
            else:
                byte = _member_location(m)
                bits = 8 * byte
                if width is not None and "DW_AT_bit_offset" in ma:
                    # DWARF 2/3 big-endian numbering: bits from the storage unit's most significant bit
                    unit = ma["DW_AT_byte_size"].value if "DW_AT_byte_size" in ma else t.size
                    bits += 8 * unit - ma["DW_AT_bit_offset"].value - width
            mexplicit = ma["DW_AT_alignment"].value if "DW_AT_alignment" in ma else None
            malign = mexplicit or t.align
            name = _name(m)
            if width is None or name:
                align = max(align, malign)
            d.members.append(_Member(name, bits, width, t, malign, mexplicit))
            if width is None:
                offsets.append((bits // 8, malign))
        if size % align or any(off % al for off, al in offsets):
            align = explicit or 1   # packed: DWARF records no `packed`, only the misplaced members
            d.packed = True
        d.align = align
        d.unexplained = self._unexplained(d)
        d.done = True
        return key

    def _unexplained(self, d: _Def) -> str:
        """Why C's layout rules, with the alignments DWARF gives, do not reproduce the record's
        offsets and size ('' if they do). DWARF before version 5 does not record `_Alignas` and
        `aligned` attributes: a record using one cannot be given an alignment that is earned."""
        pos = 0
        for m in d.members:
            inner = _def_of(m.type)
            if inner is not None and inner.unexplained and m.width is None:
                return f"member {m.name or '<anonymous>'}: {inner.unexplained}"
            if m.width is not None:
                pos = max(pos, (m.bits + m.width + 7) // 8)
                continue
            off = m.bits // 8
            al = (m.explicit or 1) if d.packed else m.align
            want = 0 if d.kind == "union" else -(-pos // al) * al
            if off != want:
                return (f"member {m.name or '<anonymous>'} is at {off}, natural alignment puts it at "
                        f"{want} (an alignment attribute this DWARF does not record)")
            pos = max(pos, off + (m.type.size or 0))
        end = -(-pos // d.align) * d.align
        if end != d.size:
            return (f"size {d.size}, natural alignment gives {end} (an alignment attribute this "
                    f"DWARF does not record)")
        return ""

    def read_unit(self, cu) -> None:
        self.units += 1
        typedefs = []
        raw = None if self.thorough else _RawUnit.of(cu)
        if raw is None:
            for die in cu.get_top_DIE().iter_children():
                tag = die.tag
                if tag in _RECORDS:
                    self.record(die)
                elif tag == "DW_TAG_typedef":
                    typedefs.append(die)
        else:
            for offset, tag, attrs in raw.top_level():
                if tag == "DW_TAG_typedef":
                    typedefs.append((offset, attrs))
                elif tag in _RECORDS:
                    key = self._raw_key(cu, tag, attrs)
                    if key in self.defs:
                        self.die_key[(id(cu.dwarfinfo), offset)] = key   # met before: not read again
                    elif key is not False:
                        self.record(cu.get_DIE_from_refaddr(offset))
        if raw is None:
            self._resolve_typedefs(typedefs)
        for offset, attrs in typedefs if raw is not None else ():   # in order: the first name is the key
            key = self.die_key.get((id(cu.dwarfinfo), attrs.get("DW_AT_type"))) if attrs else None
            if key is not None and "DW_AT_name" in attrs:   # straight to a struct read before
                name = _text(attrs["DW_AT_name"])
                if name not in self.defs[key].typedefs:
                    self.defs[key].typedefs.append(name)
            else:
                self._resolve_typedefs([cu.get_DIE_from_refaddr(offset)])
        if hasattr(cu, "_dielist") and hasattr(cu, "_diemap"):
            # forget the unit's parsed DIEs (pyelftools keeps them all): memory stays flat
            del cu._dielist[1:], cu._diemap[1:]

    def _raw_key(self, cu, tag: str, attrs: Optional[dict]):
        """`record`'s key from raw attributes; False for a declaration, None when only `record`
        can tell (attributes not decoded, no file)."""
        if attrs is None:
            return None
        if "DW_AT_declaration" in attrs or "DW_AT_byte_size" not in attrs:
            return False
        kind = "union" if tag == "DW_TAG_union_type" else "struct"
        if "DW_AT_decl_file" not in attrs:
            return None
        path = self._path(cu, attrs["DW_AT_decl_file"])
        if not path:
            return None
        name = attrs.get("DW_AT_name")
        return (kind, _text(name) if name is not None else None, path, attrs.get("DW_AT_decl_line", 0),
                attrs.get("DW_AT_decl_column", 0), attrs["DW_AT_byte_size"])

    def _resolve_typedefs(self, typedefs: list) -> None:
        for td in typedefs:
            name = _name(td)
            target = self._ref(td)
            while target is not None and (target.tag == "DW_TAG_typedef" or target.tag in _QUALIFIERS):
                target = self._ref(target)
            if target is None or target.tag not in _RECORDS:
                continue
            key = self.record(target)
            if key is not None:
                if name not in self.defs[key].typedefs:
                    self.defs[key].typedefs.append(name)
            elif _name(target):
                kind = "union" if target.tag == "DW_TAG_union_type" else "struct"
                self.pending.append((name, kind, _name(target)))

    # ---- output

    def fields(self, key, base_bits: int, prefix: str, out: list) -> None:
        """The `offsetof` fields of definition `key`, exactly as `clang_scan._Walker.record_fields`."""
        d = self.defs[key]
        for m in d.members:
            if m.width is not None and not m.name:
                continue
            bits = base_bits + m.bits
            t = m.type
            if not m.name:
                if t.record is None:
                    raise LayoutError(f"{d.where}: unnamed member of type {t.spell!r} that is not an anonymous struct or union")
                self.fields(t.record, bits, prefix, out)
                continue
            path = prefix + m.name
            if m.width is not None:
                unit = t.size
                start = (bits // (8 * unit)) * unit
                if bits - 8 * start + m.width > 8 * unit:
                    start = bits // 8
                    unit = (bits - 8 * start + m.width + 7) // 8
                out.append(Field(path, start, unit, t.spell, bits - 8 * start, m.width))
                continue
            if bits % 8:
                raise LayoutError(f"{d.where}: field {path!r} starts at bit {bits}, not on a byte")
            if t.flexible:
                out.append(Field(path, bits // 8, 0, t.spell, flexible=True))
                continue
            if t.size is None:
                raise LayoutError(f"{d.where}: field {path!r} has incomplete type {t.spell!r}")
            out.append(Field(path, bits // 8, t.size, t.spell, array_len=t.array_len))
            if t.record is not None:
                self.fields(t.record, bits, path + ".", out)

    def result(self) -> tuple[dict, dict, list[str]]:
        by_tag: dict = {}
        for key, d in self.defs.items():
            if d.tag:
                by_tag.setdefault((d.kind, d.tag), []).append(key)
        for name, kind, tag in self.pending:
            keys = by_tag.get((kind, tag), [])
            if len(keys) == 1 and name not in self.defs[keys[0]].typedefs:
                self.defs[keys[0]].typedefs.append(name)
        typedefs: dict = {}        # same place, any unit -> typedef names (thorough mode splits them)
        for key, d in self.defs.items():
            names = typedefs.setdefault(key[:6], [])
            names += [n for n in d.typedefs if n not in names]
        placed: dict = {}          # (name, defined_in) -> Struct
        conflicts: list = []
        aliases: list = []
        for key, d in self.defs.items():
            d.typedefs = typedefs[key[:6]]
            name = d.typedefs[0] if d.typedefs else d.tag
            if name is None:
                continue
            if d.unexplained:
                conflicts.append(f"{name} ({d.where}): left out, its alignment is not earned: {d.unexplained}")
                continue
            out: list = []
            self.fields(key, 0, "", out)
            s = Struct(name, d.kind, d.size, d.align, d.where, tuple(out), origin="dwarf")
            old = placed.get((name, d.where))
            if old is not None and _layout(old) != _layout(s):
                conflicts.append(f"{name}: two layouts at {d.where} (sizes {old.size} and {s.size}): "
                                 f"dropped, the DWARF does not say which one applies")
                placed[(name, d.where)] = None
                continue
            placed.setdefault((name, d.where), s)
            aliases += [(n, name) for n in d.typedefs[1:] + ([d.tag] if d.tag and d.tag != name else [])]
        by_name: dict = {}
        for (name, where), s in placed.items():
            if s is not None:
                by_name.setdefault(name, []).append(s)
        structs: dict = {}
        for name, variants in by_name.items():
            if len({_layout(s) for s in variants}) == 1:
                structs[name] = variants[0]
                continue
            files = sorted({s.defined_in.rsplit(":", 1)[0] for s in variants})
            conflicts.append(f"{name}: defined differently in {', '.join(files)}")
            for s in variants:
                k = f"{name}@{s.defined_in.rsplit(':', 1)[0]}"
                if k in structs and _layout(structs[k]) != _layout(s):
                    conflicts.append(f"{k}: two layouts in one file: dropped")
                    structs[k] = None
                elif k not in structs:
                    structs[k] = replace(s, name=k)
        structs = {k: v for k, v in sorted(structs.items()) if v is not None}
        names = {}
        for alias, target in aliases:
            if target in structs and alias not in structs:
                names.setdefault(alias, target)
        return structs, dict(sorted(names.items())), sorted(set(conflicts))


def _def_of(t: _Type) -> Optional[_Def]:
    """The record whose alignment a type has (through typedefs, qualifiers and arrays), if any."""
    while t is not None and not isinstance(t, _Def):
        t = t.of
    return t


def _layout(s: Struct) -> tuple:
    return (s.kind, s.size, s.align, tuple((f.path, f.offset, f.size, f.bit_offset, f.bit_width,
                                            f.array_len, f.flexible) for f in s.fields))


def _dims(die) -> list:
    """The dimensions of an array type DIE, outermost first; None for one without a bound."""
    dims = []
    for sub in die.iter_children():
        if sub.tag != "DW_TAG_subrange_type":
            continue
        s = sub.attributes
        if "DW_AT_count" in s and isinstance(s["DW_AT_count"].value, int):
            dims.append(s["DW_AT_count"].value)
        elif "DW_AT_upper_bound" in s and isinstance(s["DW_AT_upper_bound"].value, int):
            ub = s["DW_AT_upper_bound"].value
            lb = s["DW_AT_lower_bound"].value if "DW_AT_lower_bound" in s else 0
            bits = 8 * sub.cu["address_size"]
            dims.append(None if ub in (-1, (1 << bits) - 1, (1 << 32) - 1) else ub - lb + 1)
        else:
            dims.append(None)
    return dims or [None]


def _member_location(m) -> int:
    a = m.attributes.get("DW_AT_data_member_location")
    if a is None:
        return 0
    v = a.value
    if isinstance(v, int):
        return v
    if v and v[0] == _DW_OP_PLUS_UCONST:   # DWARF 2 style: an expression [DW_OP_plus_uconst, uleb]
        n, shift = 0, 0
        for b in v[1:]:
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n
    raise LayoutError(f"member DIE at {m.offset:#x}: data_member_location {v!r} is not a constant")


def _pointer_spelling(inner: str) -> str:
    if inner.endswith(")") and " (" in inner and not inner.startswith("_Atomic("):
        ret, args = inner.split(" (", 1)      # a function type: ret (args) -> ret (*)(args)
        return f"{ret} (*)({args}"
    return inner + ("*" if inner.endswith("*") else " *")


def _text(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _name(die) -> Optional[str]:
    a = die.attributes.get("DW_AT_name")
    return _text(a.value) if a is not None else None


def _tree_relative(path: str, roots: list) -> str:
    """`Objects/listobject.c` for a file of the CPython tree (the compile directory or its parent,
    for builds in a subdirectory); other files keep their absolute path."""
    for root in roots:
        if root and path.startswith(root + "/"):
            rel = path[len(root) + 1:]
            if rel.split("/", 1)[0] in TREE_DIRS:
                return rel
    return path


class _RawUnit:
    """A fast walk over a unit's top-level DIEs straight from the section bytes: the tag of each,
    and the few attributes that identify a struct (name, decl_file/line/column, byte_size,
    declaration), without building pyelftools objects for the DIEs skipped. Units using a form it
    does not know, or big-endian ones, are left to pyelftools (`of` returns None)."""

    _FIXED = {"DW_FORM_data1": 1, "DW_FORM_ref1": 1, "DW_FORM_flag": 1, "DW_FORM_strx1": 1,
              "DW_FORM_addrx1": 1, "DW_FORM_data2": 2, "DW_FORM_ref2": 2, "DW_FORM_strx2": 2,
              "DW_FORM_addrx2": 2, "DW_FORM_strx3": 3, "DW_FORM_addrx3": 3, "DW_FORM_data4": 4,
              "DW_FORM_ref4": 4, "DW_FORM_strx4": 4, "DW_FORM_addrx4": 4, "DW_FORM_ref_sup4": 4,
              "DW_FORM_data8": 8, "DW_FORM_ref8": 8, "DW_FORM_ref_sig8": 8, "DW_FORM_ref_sup8": 8,
              "DW_FORM_data16": 16, "DW_FORM_flag_present": 0, "DW_FORM_implicit_const": 0}
    _OFFSET = ("DW_FORM_strp", "DW_FORM_line_strp", "DW_FORM_sec_offset", "DW_FORM_strp_sup",
               "DW_FORM_GNU_ref_alt", "DW_FORM_GNU_strp_alt")
    _LEB = ("DW_FORM_udata", "DW_FORM_sdata", "DW_FORM_ref_udata", "DW_FORM_strx", "DW_FORM_addrx",
            "DW_FORM_loclistx", "DW_FORM_rnglistx", "DW_FORM_GNU_addr_index", "DW_FORM_GNU_str_index")
    _BLOCK = {"DW_FORM_block1": 1, "DW_FORM_block2": 2, "DW_FORM_block4": 4}
    _WANTED = ("DW_AT_name", "DW_AT_decl_file", "DW_AT_decl_line", "DW_AT_decl_column",
               "DW_AT_byte_size", "DW_AT_declaration", "DW_AT_sibling", "DW_AT_type")
    _WANTED_TAGS = _RECORDS + ("DW_TAG_typedef",)
    _cache: dict = {}

    def __init__(self, cu, data: bytes, strings: dict, plans: dict) -> None:
        self.cu = cu
        self.data = data
        self.strings = strings
        self.plans = plans
        self.offset_size = 4 if cu.dwarf_format() == 32 else 8
        self.address_size = cu["address_size"]
        self.ref_addr_size = self.address_size if cu["version"] == 2 else self.offset_size

    @classmethod
    def of(cls, cu) -> Optional["_RawUnit"]:
        di = cu.dwarfinfo
        if not di.config.little_endian:
            return None
        got = cls._cache.get(id(di))
        if got is None or got[0] is not di:
            def section(sec):
                return sec.stream.getvalue() if sec is not None and hasattr(sec.stream, "getvalue") else None
            got = (di, section(di.debug_info_sec),
                   {"DW_FORM_strp": section(di.debug_str_sec), "DW_FORM_line_strp": section(di.debug_line_str_sec)})
            cls._cache = {id(di): got}
        _, data, strings = got
        if data is None:
            return None
        plans = {}
        known = set(cls._FIXED) | set(cls._OFFSET) | set(cls._LEB) | set(cls._BLOCK) | {
            "DW_FORM_addr", "DW_FORM_ref_addr", "DW_FORM_string", "DW_FORM_block", "DW_FORM_exprloc"}
        for code, decl in cu.get_abbrev_table()._abbrev_map.items():
            specs = []
            for spec in decl["attr_spec"]:
                if spec.form not in known:
                    return None
                specs.append((spec.name, spec.form, spec.get("value")))
            plans[code] = (decl["tag"], decl.has_children(), tuple(specs))
        return cls(cu, data, strings, plans)

    def _uleb(self, pos: int) -> tuple[int, int]:
        data = self.data
        result = shift = 0
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7

    def _sleb(self, pos: int) -> tuple[int, int]:
        data = self.data
        result = shift = 0
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                if b & 0x40:
                    result -= 1 << shift
                return result, pos

    def _attrs(self, pos: int, specs: tuple, want: tuple) -> tuple[Optional[dict], int]:
        """Skip a DIE's attributes from `pos`, returning those named in `want` (-1: not decoded)."""
        data = self.data
        out = {}
        for name, form, implicit in specs:
            keep = name in want
            if form in self._FIXED:
                n = self._FIXED[form]
                if keep:
                    if form == "DW_FORM_implicit_const":
                        out[name] = implicit
                    elif form == "DW_FORM_flag_present":
                        out[name] = True
                    elif form in _REF_FORMS:
                        out[name] = self.cu.cu_offset + int.from_bytes(data[pos:pos + n], "little")
                    elif form.startswith(("DW_FORM_data", "DW_FORM_flag")):
                        out[name] = int.from_bytes(data[pos:pos + n], "little")
                    else:
                        return None, -1       # an indexed string: let pyelftools read this one
                pos += n
            elif form in self._LEB:
                if keep and form == "DW_FORM_sdata":
                    out[name], pos = self._sleb(pos)
                elif keep and form in ("DW_FORM_udata", "DW_FORM_ref_udata"):
                    v, pos = self._uleb(pos)
                    out[name] = v + (self.cu.cu_offset if form == "DW_FORM_ref_udata" else 0)
                elif keep:
                    return None, -1
                else:
                    _, pos = self._uleb(pos)
            elif form in self._OFFSET:
                if keep:
                    table = self.strings.get(form)
                    if name != "DW_AT_name" or table is None:
                        return None, -1
                    at = int.from_bytes(data[pos:pos + self.offset_size], "little")
                    out[name] = table[at:table.index(b"\0", at)]
                pos += self.offset_size
            elif form == "DW_FORM_string":
                end = data.index(b"\0", pos)
                if keep:
                    out[name] = data[pos:end]
                pos = end + 1
            elif form == "DW_FORM_addr":
                pos += self.address_size
            elif form == "DW_FORM_ref_addr":
                if keep:
                    return None, -1
                pos += self.ref_addr_size
            elif form in self._BLOCK:
                n = self._BLOCK[form]
                pos += n + int.from_bytes(data[pos:pos + n], "little")
            else:                            # DW_FORM_block, DW_FORM_exprloc
                n, pos = self._uleb(pos)
                pos += n
        return out, pos

    def _after(self, die) -> int:
        """Where the DIE after `die` and its children starts (pyelftools read `die`)."""
        sib = die.attributes.get("DW_AT_sibling")
        if sib is not None:
            return self.cu.cu_offset + sib.raw_value if sib.form in _REF_FORMS else sib.raw_value
        if not die.has_children:
            return die.offset + die.size
        return self._skip_children(die.offset + die.size)

    def _skip_children(self, pos: int) -> int:
        while True:
            start = pos
            code, pos = self._uleb(pos)
            if code == 0:
                return pos
            tag, children, specs = self.plans[code]
            attrs, end = self._attrs(pos, specs, _SIBLING if children else ())
            if end < 0:
                die = self.cu.get_DIE_from_refaddr(start)
                pos = self._after(die)
                continue
            pos = end
            if children:
                sib = attrs.get("DW_AT_sibling")
                pos = sib if sib is not None else self._skip_children(pos)

    def top_level(self):
        """(offset, tag, identifying attributes or None) of each top-level DIE of the unit that is
        a struct, union or typedef."""
        top = self.cu.get_top_DIE()
        if not top.has_children:
            return
        pos = top.offset + top.size
        while True:
            start = pos
            code, pos = self._uleb(pos)
            if code == 0:
                return
            tag, children, specs = self.plans[code]
            wanted = tag in self._WANTED_TAGS
            attrs, end = self._attrs(pos, specs, self._WANTED if wanted else _SIBLING if children else ())
            if end < 0:   # an attribute this walk does not decode: pyelftools reads the DIE
                die = self.cu.get_DIE_from_refaddr(start)
                if wanted:
                    yield start, tag, None
                pos = self._after(die)
                continue
            if tag in self._WANTED_TAGS:
                yield start, tag, attrs
            if children:
                sib = attrs.get("DW_AT_sibling")
                pos = sib if sib is not None else self._skip_children(end)
            else:
                pos = end


def _read_uncached(binary: Path, debug_file: Optional[Path], thorough: bool) -> tuple:
    info, machine, stream = _open_dwarf(debug_file or binary)
    try:
        r = _Reader(machine, thorough)
        infos = [info]
        if info.supplementary_dwarfinfo is not None:
            infos.insert(0, info.supplementary_dwarfinfo)
        for di in infos:
            for cu in di.iter_CUs():
                r.read_unit(cu)
        structs, names, conflicts = r.result()
        return structs, names, tuple(conflicts), r.units
    finally:
        stream.close()


def read(binary, debug_file=None, use_cache: bool = True, thorough: bool = False) -> DwarfInfo:
    """Every complete struct and union in the DWARF of `binary` (or of `debug_file`, its separate
    debug info), as the model. Cached by content under `cache_dir()/dwarf/`.

    A definition met again in another unit at the same place (kind, name, file, line, column, size)
    is read once; `thorough` reads it in every unit and keeps apart any that differ (slower: it is
    how the shortcut is proven harmless, see tests/test_dwarf.py)."""
    binary = Path(binary)
    if not binary.is_file():
        raise BuildError(f"{binary} does not exist (expected an ELF binary with DWARF, e.g. libpython3.X.so)")
    debug = Path(debug_file) if debug_file else None
    if debug is not None and not debug.is_file():
        raise BuildError(f"debug file {debug} does not exist")
    if debug is None and not has_dwarf(binary):
        debug = debug_file_for(binary)   # None: _open_dwarf says what to pass
    if debug is not None:
        want, got = build_id(binary), build_id(debug)
        if want and got != want:
            raise BuildError(f"debug file {debug} is for build-id {got}, but {binary.name} has build-id {want}: "
                             f"pass the debug file of this very binary (usr/lib/debug/.build-id/{want[:2]}/{want[2:]}.debug)")
    digest = _digest([binary] + ([debug] if debug else []))
    from .debian import cache_dir

    store = cache_dir() / "dwarf"
    mode = "-thorough" if thorough else ""
    path = store / f"{digest.split(':')[1]}-r{READER_VERSION}-{__version__}{mode}.pickle"
    if use_cache:
        try:
            return pickle.loads(path.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
            pass
    start = time.perf_counter()
    structs, names, conflicts, units = _read_uncached(binary, debug, thorough)
    result = DwarfInfo(structs, names, conflicts, digest, units, round(time.perf_counter() - start, 2))
    if use_cache:
        store.mkdir(parents=True, exist_ok=True)
        tmp = store / f".{os.getpid()}.tmp"
        tmp.write_bytes(pickle.dumps(replace(result, seconds=0.0)))
        tmp.replace(path)
    return result


def read_structs(binary, debug_file=None) -> dict:
    """`read(...).structs`: struct name -> `Struct` (origin "dwarf")."""
    return read(binary, debug_file).structs


# --------------------------------------------------------------------------------------------
# Using it with a libclang table


def _as_info(dwarf: Union[DwarfInfo, dict]) -> tuple[dict, dict]:
    if isinstance(dwarf, DwarfInfo):
        return dwarf.structs, dwarf.names
    return dwarf, {}


def _in_tree(s: Struct) -> bool:
    return s.defined_in.split("/", 1)[0] in TREE_DIRS


def _file(s: Struct) -> str:
    return s.defined_in.rsplit(":", 1)[0]


def _counterpart(table: Table, name: str, s: Struct, aliases: dict) -> Optional[str]:
    """The table's struct that is the same C type as DWARF's `name` (same name, same file)."""
    base = name.split("@", 1)[0]
    candidates = [base] + [a for a, t in aliases.items() if t == name]
    for c in candidates:
        key = c if c in table.structs else table.names.get(c)
        if key is not None:
            return key
    return None


def compare_report(table: Table, dwarf: Union[DwarfInfo, dict]) -> Comparison:
    """Check every struct both `table` and `dwarf` have: kind, size, alignment, and every common
    field's offset, size, bits and array length. Structs DWARF lacks (declared but unused in the
    binary) are fine; structs of the same name defined in different files are not compared."""
    structs, aliases = _as_info(dwarf)
    n_structs = n_fields = 0
    mismatches, one_sided, not_compared = [], [], []
    for name, d in structs.items():
        key = _counterpart(table, name, d, aliases)
        if key is None:
            continue
        c = table.structs[key]
        if _file(c) != _file(d):
            not_compared.append(f"{key}: libclang has it from {c.defined_in}, DWARF {name} from {d.defined_in}")
            continue
        n_structs += 1
        for what, a, b in (("kind", c.kind, d.kind), ("size", c.size, d.size), ("align", c.align, d.align)):
            if a != b:
                mismatches.append(f"{key}: {what} is {a} by libclang but {b} by DWARF")
        dfields = {f.path: f for f in d.fields}
        cfields = {f.path: f for f in c.fields}
        for path, cf in cfields.items():
            df = dfields.get(path)
            if df is None:
                one_sided.append(f"{key}.{path}: only libclang has it")
                continue
            n_fields += 1
            for what in ("offset", "size", "bit_offset", "bit_width", "array_len", "flexible"):
                a, b = getattr(cf, what), getattr(df, what)
                if a != b:
                    mismatches.append(f"{key}.{path}: {what} is {a} by libclang but {b} by DWARF")
        one_sided += [f"{key}.{p}: only DWARF has it" for p in dfields if p not in cfields]
    return Comparison(n_structs, n_fields, tuple(mismatches), tuple(one_sided), tuple(not_compared))


def compare(table: Table, dwarf: Union[DwarfInfo, dict]) -> tuple[int, list[str]]:
    """(fields compared, mismatches) between a libclang table and DWARF; see `compare_report`."""
    r = compare_report(table, dwarf)
    return r.fields, list(r.mismatches)


def fill(table: Table, dwarf: Union[DwarfInfo, dict]) -> Table:
    """`table` plus the structs of the CPython tree that only DWARF has (origin "dwarf"), and
    their other names. Structs of system headers are left out; nothing the table has is changed."""
    structs, aliases = _as_info(dwarf)
    new = dict(table.structs)
    names = dict(table.names)
    for name, s in structs.items():
        if not _in_tree(s) or _counterpart(table, name, s, aliases) is not None:
            continue
        if name in new or name in names:
            continue
        new[name] = s
    for alias, target in aliases.items():
        if target in new and new[target].origin == "dwarf" and target not in table.structs \
                and alias not in new and alias not in names:
            names[alias] = target
    inputs = dict(table.build.inputs)
    if isinstance(dwarf, DwarfInfo):
        inputs["dwarf"] = dwarf.digest
    build = replace(table.build, inputs=inputs)
    return replace(table, build=build, structs=dict(sorted(new.items())), names=dict(sorted(names.items())))
