"""DWARF DIEs -> the layout model: the reading half of `dwarf.py`.

`Reader` takes units one at a time and keeps each struct or union definition once, keyed by where
it is defined (kind, name, file, line, column, size): a header struct repeated in every unit is
read with pyelftools the first time only (`dwarf_raw` walks the rest from the bytes). `result()`
turns the definitions into `Struct`s with the libclang scanner's rules (key = first typedef name
else tag, `offsetof` designators, anonymous members flattened, bitfield windows) and merges them
with the scanner's own merge under the DWARF policy (`qualify.merge`, `qualify.DWARF`).

Alignment is not in DWARF unless explicit (DW_AT_alignment): it is derived from the members with
the target's rules, a packed record is recognised by its misplaced members, and a record whose
offsets or size natural alignment cannot explain (an `aligned` attribute older DWARF does not
record) is left out with the reason, rather than given an alignment not earned.
"""
from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Optional

from . import storage
from .members import Member, flatten
from .dwarf_raw import RECORDS, REF_FORMS, RawUnit, Sections
from ..errors import LayoutError
from ..layout import targets
from ..layout.model import Struct
from .qualify import DWARF, merge

#: First path components that mark a file of the CPython tree (the rest is the system's).
TREE_DIRS = frozenset({"Include", "Objects", "Python", "Modules", "Parser", "Programs", "PC", "Lib", "Mac"})

_QUALIFIERS = {"DW_TAG_const_type": "const", "DW_TAG_volatile_type": "volatile",
               "DW_TAG_restrict_type": "restrict"}
_DW_OP_PLUS_UCONST = 0x23
_DW_ATE_COMPLEX_FLOAT = 0x3


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
    typedef_align: dict = field(default_factory=dict)   # typedef name -> its own DW_AT_alignment
    packed: bool = False
    done: bool = False                  # every member read
    unexplained: str = ""               # why the layout cannot be trusted (alignment not recorded)


class Reader:
    def __init__(self, machine: str, thorough: bool = False) -> None:
        self.machine = machine
        abi = targets.by_elf_machine(machine)
        self.scalar_align = abi.scalar_align if abi is not None and abi.scalar_align else 16
        self.big_endian = bool(abi and abi.big_endian)    # how members.flatten numbers bitfields
        self.thorough = thorough       # read every unit's definitions, even those met before
        self.defs: dict = {}           # key -> _Def
        self.die_key: dict = {}        # (id(dwarfinfo), offset) -> key of a definition
        self.types: dict = {}          # (id(dwarfinfo), offset) -> _Type
        self.spells: dict = {}         # (id(dwarfinfo), offset) -> C spelling
        self.pending: list = []        # (typedef name, kind, tag) whose record is declared only
        self.units = 0
        self._files: dict = {}         # id(cu) -> (file names, tree roots)
        self._sections: dict = {}      # id(dwarfinfo) -> Sections (or None: no fast walk)

    def _raw(self, cu) -> Optional[RawUnit]:
        di = cu.dwarfinfo
        if id(di) not in self._sections:
            self._sections[id(di)] = Sections.of(di)
        sections = self._sections[id(di)]
        return RawUnit(cu, sections) if sections is not None else None

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
        if attr.form in REF_FORMS:
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
        """A base type's alignment in a struct, by the ABI of the DWARF's machine (layout/targets.py;
        natural up to 16 for a machine the table has no rule for)."""
        if encoding == _DW_ATE_COMPLEX_FLOAT:
            size //= 2
        return min(size, self.scalar_align) or 1

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
        if tag in RECORDS or tag == "DW_TAG_enumeration_type":
            kind = {"DW_TAG_union_type": "union", "DW_TAG_structure_type": "struct"}.get(tag, "enum")
            return f"{kind} {_name(die) or '<anonymous>'}"
        if tag == "DW_TAG_pointer_type":
            return _pointer_spelling(self.spell(self._ref(die)))
        if tag in _QUALIFIERS:
            inner = self.spell(self._ref(die))
            return _qualified(_QUALIFIERS[tag], inner)
        if tag == "DW_TAG_atomic_type":
            return f"_Atomic({self.spell(self._ref(die))})"
        if tag == "DW_TAG_array_type":
            inner = self.spell(self._ref(die))
            dims = "".join(f"[{n}]" if n is not None else "[]" for n in _dims(die))
            stars = _FUNCTION_POINTER.search(inner)
            if stars:                        # array of function pointers: ret (*[N])(args)
                return inner[:stars.end()] + dims + inner[stars.end():]
            return inner + dims
        if tag == "DW_TAG_subroutine_type":
            children = list(die.iter_children())
            args = [self.spell(self._ref(p)) for p in children if p.tag == "DW_TAG_formal_parameter"]
            if any(p.tag == "DW_TAG_unspecified_parameters" for p in children):
                args.append("...")
            elif not args and "DW_AT_prototyped" in die.attributes:
                args = ["void"]
            return f"{self.spell(self._ref(die))} ({', '.join(args)})"
        if tag == "DW_TAG_base_type":
            return _base_name(_name(die) or "")
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
        if tag in RECORDS:
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
        if tag is not None and not tag.isidentifier():
            # not C's: zig links its compiler_rt, written in Zig (whose DWARF says C99), into what it
            # builds, and names its types as Zig spells them (`Target.Cpu.Feature.Set`, `[]u8`)
            return None
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
            if m.tag in RECORDS:
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
                    # DWARF 2/3 numbering: bits from the storage unit's most significant bit, which
                    # is its first in memory on a big-endian machine and its last on a little-endian one
                    unit = ma["DW_AT_byte_size"].value if "DW_AT_byte_size" in ma else t.size
                    at = ma["DW_AT_bit_offset"].value
                    bits += at if self.big_endian else 8 * unit - at - width
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
        if not d.members and d.size:
            return f"size {d.size}, but the DWARF lists none of its members"
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
        raw = None if self.thorough else self._raw(cu)
        if raw is None:
            for die in cu.get_top_DIE().iter_children():
                tag = die.tag
                if tag in RECORDS:
                    self.record(die)
                elif tag == "DW_TAG_typedef":
                    typedefs.append(die)
        else:
            for offset, tag, attrs in raw.top_level():
                if tag == "DW_TAG_typedef":
                    typedefs.append((offset, attrs))
                elif tag in RECORDS:
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
                if "DW_AT_alignment" in attrs:
                    self.defs[key].typedef_align.setdefault(name, int(attrs["DW_AT_alignment"]))
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
            if target is None or target.tag not in RECORDS:
                continue
            key = self.record(target)
            if key is not None:
                if name not in self.defs[key].typedefs:
                    self.defs[key].typedefs.append(name)
                if "DW_AT_alignment" in td.attributes:
                    self.defs[key].typedef_align.setdefault(name, td.attributes["DW_AT_alignment"].value)
            elif _name(target):
                kind = "union" if target.tag == "DW_TAG_union_type" else "struct"
                self.pending.append((name, kind, _name(target)))

    # ---- output

    def members(self, key) -> list:
        """The `members.Member`s of definition `key` (members.flatten lists them as clang_scan does)."""
        return [Member(m.name or "", m.bits, m.type.spell, m.type.size, m.width, m.type.flexible, m.type.array_len,
                       m.type.record, not m.name and m.type.record is not None)
                for m in self.defs[key].members]

    def leaf(self, key) -> bool:
        """A member of this record type is listed, its own members are not: static object storage
        (data/storage.yaml) or a C library type (storage.py)."""
        d = self.defs[key]
        return storage.depth(d.tag) is not None or storage.system_header(d.where)

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
        entries: list = []         # (place, {name: Struct}, other names -> name), one per definition
        conflicts: list = []
        for key, d in self.defs.items():
            d.typedefs = typedefs[key[:6]]
            name = d.typedefs[0] if d.typedefs else d.tag
            if name is None:
                continue
            if d.unexplained:
                conflicts.append(f"{name} ({d.where}): left out, its alignment is not earned: {d.unexplained}")
                continue
            out = flatten(self, key, d.where, storage.depth(d.tag))
            # a typedef may carry an alignment of its own (3.13's `} PyGC_Head Py_ALIGNED(4);`)
            own_align = name in d.typedef_align      # then the tag means another alignment: C names it by `name`
            s = Struct(name, d.kind, d.size, d.typedef_align.get(name, d.align), d.where, tuple(out), origin="dwarf",
                       c_type=f"{d.kind} {d.tag}" if d.tag and not own_align else name)
            others = d.typedefs[1:] + ([d.tag] if d.tag and d.tag != name else [])
            entries.append((d.where, {name: s}, {n: name for n in others}))
        structs, names, more = merge(entries, DWARF)
        return structs, names, sorted(set(conflicts + more))


def _def_of(t: _Type) -> Optional[_Def]:
    """The record whose alignment a type has (through typedefs, qualifiers and arrays), if any."""
    while t is not None and not isinstance(t, _Def):
        t = t.of
    return t


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
    """`T *` for a pointer to `T`, as clang spells it: `char *`, `char **`, `int (*)(void)`."""
    stars = _FUNCTION_POINTER.search(inner)
    if stars:                                 # pointer to a function pointer: ret (**)(args)
        return inner[:stars.end()] + "*" + inner[stars.end():]
    if inner.endswith(")") and " (" in inner and not inner.startswith("_Atomic("):
        ret, args = inner.split(" (", 1)      # a function type: ret (args) -> ret (*)(args)
        return f"{ret}{'' if ret.endswith('*') else ' '}(*)({args}"
    return inner + ("*" if inner.endswith("*") else " *")


def _qualified(qualifier: str, inner: str) -> str:
    """`const T` as clang spells it: `const char`, `char *const`, `int (*const)(void)`."""
    stars = _FUNCTION_POINTER.search(inner)
    if stars:
        return inner[:stars.end()] + qualifier + inner[stars.end():]
    return f"{inner}{qualifier}" if inner.endswith("*") else f"{qualifier} {inner}"


def _base_name(name: str) -> str:
    """GCC's names of base types (`long unsigned int`) as clang spells them (`unsigned long`)."""
    if name.startswith("complex "):
        return "_Complex " + _base_name(name[len("complex "):])
    return _BASE_NAMES.get(name, name)


_FUNCTION_POINTER = re.compile(r"\(\*+")
_BASE_NAMES = {"long int": "long", "long unsigned int": "unsigned long", "short int": "short",
               "short unsigned int": "unsigned short", "long long int": "long long",
               "long long unsigned int": "unsigned long long", "__int128 unsigned": "unsigned __int128"}


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
    # an out-of-tree build (configure run in another directory): the source tree is the directory
    # above a tree directory that holds Include/Python.h, when that tree is on this machine
    for part in TREE_DIRS:
        i = path.find(f"/{part}/")
        if i > 0 and os.path.isfile(path[:i] + "/Include/Python.h"):
            return path[i + 1:]
    return path
