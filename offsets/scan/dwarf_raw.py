"""A fast walk over a DWARF unit's top-level DIEs, straight from the section bytes.

pyelftools builds an object for every DIE it meets; a libpython has a few hundred thousand
top-level DIEs, most of them the same header structs repeated in every unit. This walk decodes
only the tag of each and, for structs, unions and typedefs, the attributes that identify them
(name, decl_file/line/column, byte_size, declaration, type), so `dwarf_read` asks pyelftools only
for definitions it has not met before. Anything it does not decode (an unknown form, an indexed
string, a big-endian file) is handed to pyelftools, DIE by DIE or unit by unit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

RECORDS = ("DW_TAG_structure_type", "DW_TAG_union_type")
REF_FORMS = ("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8", "DW_FORM_ref_udata")

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
_KNOWN = frozenset(_FIXED) | frozenset(_OFFSET) | frozenset(_LEB) | frozenset(_BLOCK) | {
    "DW_FORM_addr", "DW_FORM_ref_addr", "DW_FORM_string", "DW_FORM_block", "DW_FORM_exprloc"}
_STRINGS = ("DW_FORM_strp", "DW_FORM_line_strp")

#: The attributes decoded for structs, unions and typedefs.
WANTED = ("DW_AT_name", "DW_AT_decl_file", "DW_AT_decl_line", "DW_AT_decl_column",
          "DW_AT_byte_size", "DW_AT_declaration", "DW_AT_sibling", "DW_AT_type", "DW_AT_alignment")
WANTED_TAGS = RECORDS + ("DW_TAG_typedef",)
_SIBLING = ("DW_AT_sibling",)


class _NotDecoded(Exception):
    """An attribute this walk does not decode: pyelftools reads the DIE instead."""


@dataclass(frozen=True)
class Sections:
    """The bytes of one DWARFInfo's .debug_info and string sections."""

    info: bytes
    strings: dict      # form -> section bytes

    @staticmethod
    def of(dwarfinfo) -> Optional["Sections"]:
        """The sections, or None when this walk cannot read them (big-endian, not in memory)."""
        if not dwarfinfo.config.little_endian:
            return None

        def data(sec):
            return sec.stream.getvalue() if sec is not None and hasattr(sec.stream, "getvalue") else None

        info = data(dwarfinfo.debug_info_sec)
        if info is None:
            return None
        strings = {"DW_FORM_strp": data(dwarfinfo.debug_str_sec),
                   "DW_FORM_line_strp": data(dwarfinfo.debug_line_str_sec)}
        return Sections(info, {k: v for k, v in strings.items() if v is not None})


class RawUnit:
    """One unit's top-level DIEs, walked from the bytes (see the module docstring)."""

    def __init__(self, cu, sections: Sections) -> None:
        self.cu = cu
        self.data = sections.info
        self.strings = sections.strings
        self.abbrevs = cu.get_abbrev_table()
        self.plans: dict = {}
        self.offset_size = 4 if cu.dwarf_format() == 32 else 8
        self.address_size = cu["address_size"]
        self.ref_addr_size = self.address_size if cu["version"] == 2 else self.offset_size

    def plan(self, code: int) -> tuple:
        """(tag, has children, ((attribute, form, implicit value), ...) or None if a form is unknown)."""
        p = self.plans.get(code)
        if p is None:
            decl = self.abbrevs.get_abbrev(code)
            specs = tuple((a.name, a.form, a.get("value")) for a in decl["attr_spec"])
            p = (decl["tag"], decl.has_children(), specs if all(f in _KNOWN for _, f, _ in specs) else None)
            self.plans[code] = p
        return p

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
        result, end = self._uleb(pos)
        bits = 7 * (end - pos)
        return (result - (1 << bits) if result >> (bits - 1) & 1 else result), end

    def _attrs(self, pos: int, specs: tuple, want: tuple) -> tuple[dict, int]:
        """Skip a DIE's attributes from `pos`; return those named in `want` and where the DIE ends."""
        data = self.data
        out = {}
        for name, form, implicit in specs:
            keep = name in want
            if form in _FIXED:
                n = _FIXED[form]
                if keep:
                    if form == "DW_FORM_implicit_const":
                        out[name] = implicit
                    elif form == "DW_FORM_flag_present":
                        out[name] = True
                    elif form in REF_FORMS:
                        out[name] = self.cu.cu_offset + int.from_bytes(data[pos:pos + n], "little")
                    elif form.startswith(("DW_FORM_data", "DW_FORM_flag")):
                        out[name] = int.from_bytes(data[pos:pos + n], "little")
                    else:
                        raise _NotDecoded(form)
                pos += n
            elif form in _LEB:
                if not keep:
                    _, pos = self._uleb(pos)
                elif form == "DW_FORM_sdata":
                    out[name], pos = self._sleb(pos)
                elif form in ("DW_FORM_udata", "DW_FORM_ref_udata"):
                    v, pos = self._uleb(pos)
                    out[name] = v + (self.cu.cu_offset if form == "DW_FORM_ref_udata" else 0)
                else:
                    raise _NotDecoded(form)
            elif form in _OFFSET:
                if keep:
                    table = self.strings.get(form)
                    if name != "DW_AT_name" or table is None:
                        raise _NotDecoded(form)
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
                    raise _NotDecoded(form)
                pos += self.ref_addr_size
            elif form in _BLOCK:
                n = _BLOCK[form]
                pos += n + int.from_bytes(data[pos:pos + n], "little")
            else:                            # DW_FORM_block, DW_FORM_exprloc
                n, pos = self._uleb(pos)
                pos += n
        return out, pos

    def _after(self, start: int) -> int:
        """Where the DIE after the one at `start` (and its children) begins, read by pyelftools."""
        die = self.cu.get_DIE_from_refaddr(start)
        sib = die.attributes.get("DW_AT_sibling")
        if sib is not None:
            return self.cu.cu_offset + sib.raw_value if sib.form in REF_FORMS else sib.raw_value
        if not die.has_children:
            return die.offset + die.size
        return self._skip_children(die.offset + die.size)

    def _next(self, start: int, pos: int, children: bool, specs: Optional[tuple], want: tuple) -> tuple:
        """(decoded attributes or None, offset of the next sibling) of the DIE at `start`."""
        if specs is None:
            return None, self._after(start)
        try:
            attrs, end = self._attrs(pos, specs, want + _SIBLING if children else want)
        except _NotDecoded:
            return None, self._after(start)
        if not children:
            return attrs, end
        sib = attrs.get("DW_AT_sibling")
        return attrs, (sib if sib is not None else self._skip_children(end))

    def _skip_children(self, pos: int) -> int:
        while True:
            start = pos
            code, pos = self._uleb(pos)
            if code == 0:
                return pos
            _, children, specs = self.plan(code)
            _, pos = self._next(start, pos, children, specs, ())

    def top_level(self) -> Iterator[tuple[int, str, Optional[dict]]]:
        """(offset, tag, identifying attributes or None if not decoded) of each top-level struct,
        union and typedef DIE of the unit, in order."""
        top = self.cu.get_top_DIE()
        if not top.has_children:
            return
        pos = top.offset + top.size
        while True:
            start = pos
            code, pos = self._uleb(pos)
            if code == 0:
                return
            tag, children, specs = self.plan(code)
            wanted = tag in WANTED_TAGS
            attrs, pos = self._next(start, pos, children, specs, WANTED if wanted else ())
            if wanted:
                yield start, tag, attrs
