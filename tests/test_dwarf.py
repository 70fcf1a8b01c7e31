"""The DWARF reader against independent truth: gcc, the libclang scanner, live interpreters.

- gcc: a fixture compiled with DWARF 2, 4 (old big-endian bitfield encoding) and 5, compressed, and
  split into a separate debug file; every member libclang's AST of the same source lists must be
  in the reader's result and nothing else, each checked against a probe program gcc compiles
  (`offsetof`, `sizeof`, and the bits a bitfield really sets).
- libclang: for every pyenv build, the scan of its headers and the DWARF of its libpython must
  agree on every struct both see (zero mismatches; the counts are printed, run with -s).
- live interpreters: `listiterobject`, which only DWARF has for builds without sources, is checked
  against the running interpreter (`__basicsize__`, and `it_index` read from a real iterator).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import fetched, missing_input, missing_tool, pyenv_python3
from offsets.scan import build_inputs as build, debian, dwarf, scanner
from offsets.errors import BuildError
from offsets.layout.model import Field

FAKE = Path(__file__).parent / "fixtures" / "fakepy" / "include" / "python3.99"
PYENV = ("3.6.15", "3.7.16", "3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0")
#: The pyenv builds `make test` compares libclang and DWARF on (the oldest and the newest); `make
#: prove` the others (tests/prove/test_beyond_samples.py), for their cost (a scan and a DWARF read each).
PYENV_SAMPLE = ("3.6.15", "3.13.0")
GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed (`apt-get install gcc`)")


# --------------------------------------------------------------------------------------------
# gcc fixtures

EDGES = r"""
#include <stddef.h>
#include <stdint.h>

typedef struct Edge {
    char c;
    unsigned long long wide_a:60;
    unsigned long long wide_b:10;       /* does not fit beside wide_a: gcc moves it to the next unit */
    signed int neg:3;
    unsigned int :0;
    unsigned char low:1;
    short grid[3][2];
    union { int as_int; float as_float; };
    struct { struct { char deep; } inner; } outer;
    struct Edge *next;
    void (*callback)(int, const char *);
    double tail[];
} Edge;

typedef struct __attribute__((packed)) {
    char a; int b; short c;
    unsigned int s:30;                  /* straddles its 4-byte unit: the smallest byte window */
} Packed;
typedef struct { char a; _Alignas(16) int b; } Aligned;
typedef struct {
    int whole;
    short low:11, high:5;               /* high ends exactly at its unit's end, a unit not at byte 0 */
} UnitEnd;
typedef union { uint64_t u; unsigned char bytes[8]; struct { uint32_t lo, hi; } half; } Word;
"""


def compile_so(tmp: Path, source: str, flags: list[str], name: str, cc: str = GCC) -> Path:
    """A shared object with DWARF for every type of `source` (types unused are kept)."""
    src = tmp / f"{name}.c"
    src.write_text(source)
    out = tmp / f"{name}.so"
    subprocess.run([cc, "-shared", "-fPIC", "-fno-eliminate-unused-debug-types", *flags,
                    "-IInclude", src.name, "-o", out.name], cwd=tmp, check=True)
    return out


def clang_members(tmp: Path, source: str) -> dict:
    """Typedef name -> its members as clang's AST of `source` lists them, as `offsetof` designators
    with a kind ("bits", "flexible" or "plain"): named members, and the members of anonymous
    structs and unions as the struct's own; unnamed bitfields name nothing. This list comes from
    libclang parsing the source, not from the DWARF reader, so a member the reader drops shows."""
    import clang.cindex as ci

    from offsets.scan.clang_headers import builtin_include

    src = tmp / "members.c"
    src.write_text(source)
    tu = ci.Index.create().parse(str(src), args=[f"-I{builtin_include()}", "-std=gnu11"])
    assert not [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error], list(tu.diagnostics)

    def members(record, prefix=""):
        for m in record.get_fields():
            t = m.type.get_canonical()
            if not m.spelling:
                if t.kind == ci.TypeKind.RECORD:
                    yield from members(t, prefix)
                continue
            path = prefix + m.spelling
            yield path, "bits" if m.is_bitfield() else "flexible" if t.kind == ci.TypeKind.INCOMPLETEARRAY else "plain"
            if t.kind == ci.TypeKind.RECORD:
                yield from members(t, path + ".")

    return {c.spelling: dict(members(c.type.get_canonical())) for c in tu.cursor.get_children()
            if c.kind == ci.CursorKind.TYPEDEF_DECL and c.type.get_canonical().kind == ci.TypeKind.RECORD}


def gcc_truth(tmp: Path, source: str, name: str, members: dict, cc: tuple = (), run: tuple = ()) -> dict:
    """What gcc itself says about each member of struct `name` (path -> kind, from `clang_members`):
    (offset, size) from offsetof/sizeof, and for a bitfield the set of bits (from the start of the
    struct; bit i is bit i % 8 of byte i // 8) that setting it to all ones changes. `cc` and `run`:
    another CPU's gcc (linked statically) and the emulator that runs its program."""
    lines = [source, "#include <stdio.h>\n#include <string.h>\nint main(void) {",
             f"  printf(\"size %zu\\n\", sizeof({name}));"]
    for path, kind in members.items():
        if kind == "bits":
            lines.append(f"  {{ {name} v; memset(&v, 0, sizeof v); v.{path} = -1;"
                         f" unsigned char *p = (unsigned char *)&v; printf(\"bits {path}\");"
                         f" for (size_t i = 0; i < 8 * sizeof v; i++) if (p[i / 8] >> (i % 8) & 1) printf(\" %zu\", i);"
                         f" printf(\"\\n\"); }}")
        elif kind == "flexible":
            lines.append(f"  printf(\"field {path} %zu 0\\n\", offsetof({name}, {path}));")
        else:
            lines.append(f"  printf(\"field {path} %zu %zu\\n\", offsetof({name}, {path}),"
                         f" sizeof((({name} *)0)->{path}));")
    lines.append("  return 0;\n}\n")
    src = tmp / f"truth_{name}.c"
    src.write_text("\n".join(lines))
    exe = tmp / f"truth_{name}"
    subprocess.run([*(cc or [GCC]), "-w", *(["-static"] if cc else []), str(src), "-o", str(exe)], check=True)
    got = {}
    for line in subprocess.run([*run, str(exe)], capture_output=True, text=True, check=True).stdout.splitlines():
        kind, *rest = line.split()
        if kind == "size":
            got["<size>"] = int(rest[0])
        elif kind == "field":
            got[rest[0]] = (int(rest[1]), int(rest[2]))
        else:
            got[rest[0]] = frozenset(int(b) for b in rest[1:])
    return got


def as_truth(f: Field, big_endian: bool = False):
    """A field as `gcc_truth` states it: a bitfield's bits are those of its `size`-byte unit read in
    the target's byte order (bit_offset counts from the unit's least significant bit)."""
    if f.is_bitfield:
        bits = range(f.bit_offset, f.bit_offset + f.bit_width)
        if big_endian:      # the unit's least significant byte is its last
            return frozenset(8 * (f.offset + f.size - 1 - b // 8) + b % 8 for b in bits)
        return frozenset(8 * f.offset + b for b in bits)
    return (f.offset, f.size)


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dwarf")
    (tmp / "Include").symlink_to(FAKE)
    return tmp


DWARF_FLAVOURS = {
    "dwarf5": ["-g", "-gdwarf-5"],
    "dwarf4": ["-g", "-gdwarf-4"],                    # DW_AT_bit_offset, big-endian numbering
    "dwarf2-strict": ["-g", "-gdwarf-2", "-gstrict-dwarf"],  # member locations as expressions
    "dwarf5-compressed": ["-g", "-gdwarf-5", "-gz=zlib"],
}


@needs_gcc
@pytest.mark.parametrize("flavour", DWARF_FLAVOURS)
def test_fixture_layouts_match_gcc(fixture_dir, flavour):
    so = compile_so(fixture_dir, EDGES, DWARF_FLAVOURS[flavour], f"edges_{flavour.replace('-', '_')}")
    got = dwarf.read(so, use_cache=False)
    old = flavour == "dwarf2-strict"   # gcc records _Alignas (DW_AT_alignment) unless strict DWARF < 5
    if old:  # strict DWARF < 5 does not record _Alignas: Aligned's alignment is not earned, so it is left out
        assert "Aligned" not in got.structs
        assert any(c.startswith("Aligned (") and "alignment attribute" in c for c in got.conflicts)
    # both directions: every member clang's AST lists is in the reader's result, and nothing else;
    # each with the offset, size or bits gcc's own probe gives
    members = clang_members(fixture_dir, EDGES)
    for name in ("Edge", "Packed", "Word", "UnitEnd") + (() if old else ("Aligned",)):
        s = got.structs[name]
        truth = gcc_truth(fixture_dir, EDGES, name, members[name])
        assert s.size == truth.pop("<size>"), name
        assert {f.path: as_truth(f) for f in s.fields} == truth, f"{name} ({flavour})"
        assert [f.path for f in s.fields] == list(members[name]), f"{name} ({flavour}): declaration order"
    edge = got.structs["Edge"]
    paths = [f.path for f in edge.fields]
    assert "as_int" in paths and "outer.inner.deep" in paths          # anonymous flattened, named dotted
    assert not any(p.startswith("<") or p == "" for p in paths)       # unnamed bitfields skipped
    assert edge.field("tail").flexible and edge.field("grid").array_len == 3
    assert edge.field("wide_b").offset == 16 and edge.field("wide_b").bit_offset == 0
    straddle = got.structs["Packed"].field("s")
    assert (straddle.offset, straddle.size, straddle.bit_offset, straddle.bit_width) == (7, 4, 0, 30)
    assert got.names.get("Edge") is None and edge.kind == "struct"
    # alignment is inferred (DWARF records it only when explicit): packed, natural, _Alignas
    assert (got.structs["Packed"].align, edge.align) == (1, 8)
    assert old or got.structs["Aligned"].align == 16


@pytest.mark.parametrize("flavour", ["dwarf5", "dwarf4"])
def test_big_endian_layouts_match_gcc(fixture_dir, flavour):
    """s390x is big-endian: its bitfields fill a unit from the most significant bit, and DWARF 4's
    DW_AT_bit_offset counts from there too. The reader's fields of the gcc fixture, compiled for
    s390x, against what that gcc's own program (run under qemu-s390x) says each member takes."""
    cc, qemu = "s390x-linux-gnu-gcc", "qemu-s390x"
    for tool, package in ((cc, "gcc-s390x-linux-gnu"), (qemu, "qemu-user")):
        if shutil.which(tool) is None:
            missing_tool(tool, f"make test installs {package}")
    so = compile_so(fixture_dir, EDGES, DWARF_FLAVOURS[flavour], f"edges_s390x_{flavour}", cc=cc)
    got = dwarf.read(so, use_cache=False)
    assert got.machine == "EM_S390"
    members = clang_members(fixture_dir, EDGES)
    for name in ("Edge", "Packed", "Word", "UnitEnd", "Aligned"):
        s = got.structs[name]
        truth = gcc_truth(fixture_dir, EDGES, name, members[name], cc=(cc,), run=(qemu,))
        assert s.size == truth.pop("<size>"), name
        assert {f.path: as_truth(f, big_endian=True) for f in s.fields} == truth, f"{name} ({flavour})"
    # the first bitfield of a unit is its most significant bits: it reads with the highest shift
    low, high = got.structs["UnitEnd"].field("low"), got.structs["UnitEnd"].field("high")
    assert (low.offset, low.size, low.bit_offset, low.bit_width) == (4, 2, 5, 11)
    assert (high.offset, high.size, high.bit_offset, high.bit_width) == (4, 2, 0, 5)


def gcc_storage_units(so: Path, names) -> dict:
    """(typedef, member) -> (byte offset, size) of each bitfield's storage unit as gcc's DWARF 4 states
    it (DW_AT_data_member_location and DW_AT_byte_size), read with pyelftools, not our reader."""
    from elftools.elf.elffile import ELFFile

    units = {}
    with open(so, "rb") as f:
        for cu in ELFFile(f).get_dwarf_info().iter_CUs():
            for die in cu.iter_DIEs():
                if die.tag != "DW_TAG_typedef" or die.attributes["DW_AT_name"].value.decode() not in names:
                    continue
                record = die.get_DIE_from_attribute("DW_AT_type")
                for m in record.iter_children():
                    a = m.attributes
                    if m.tag == "DW_TAG_member" and "DW_AT_bit_size" in a and "DW_AT_name" in a:
                        units[(die.attributes["DW_AT_name"].value.decode(), a["DW_AT_name"].value.decode())] = \
                            (a["DW_AT_data_member_location"].value, a["DW_AT_byte_size"].value)
    return units


@needs_gcc
@pytest.mark.parametrize("flavour", DWARF_FLAVOURS)
def test_a_read_the_cache_kept_is_the_read_itself(fixture_dir, flavour, tmp_path, monkeypatch):
    """The DWARF cache's miss stores a read, its hit decodes it (plain JSON): with an empty cache,
    the first read and the second (which writes nothing: it used the entry) are the uncached read,
    for each encoding of the gcc fixture (the bitfields of DWARF 4, strict DWARF 2's expressions)."""
    from test_describe import files_of

    so = compile_so(fixture_dir, EDGES, DWARF_FLAVOURS[flavour], f"edges_{flavour.replace('-', '_')}")
    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path / "cache"))
    entries = lambda: {k: v for k, v in files_of(tmp_path / "cache").items() if k.endswith(".json")}  # noqa: E731
    truth = replace(dwarf.read(so, use_cache=False), seconds=0)
    assert not entries()
    first = dwarf.read(so)
    kept = entries()
    assert kept and all(rel.startswith("dwarf/") for rel in kept), kept
    second = dwarf.read(so)
    assert entries() == kept, "the second read did not use the entry the first kept"
    assert replace(first, seconds=0) == truth and replace(second, seconds=0) == truth


@needs_gcc
def test_a_bitfield_is_read_from_gccs_storage_unit(fixture_dir, tmp_path):
    """Field.bitfield's window, from both readers, is the storage unit gcc's DWARF 4 names for the
    bitfield, wherever the bits lie inside it; the boundary case is a bitfield that ends exactly at
    the end of a unit that is not at byte 0 (UnitEnd.high; BITS.Q of CPython's _ctypes_test.c is one)."""
    names = ("Edge", "Packed", "UnitEnd")
    gcc = gcc_storage_units(compile_so(fixture_dir, EDGES, ["-g", "-gdwarf-4"], "edges_units"), names)
    assert gcc[("UnitEnd", "high")] == (4, 2)
    tree = tmp_path / "fake"
    shutil.copytree(FAKE.parent.parent, tree)
    header = tree / "include" / "python3.99" / "Python.h"
    header.write_text(header.read_text() + EDGES)
    scanned = scanner.scan(build.from_prefix(tree, target="x86_64-linux-gnu"), scanner.ScanOptions(use_cache=False))
    read = dwarf.read(compile_so(fixture_dir, EDGES, ["-g", "-gdwarf-5"], "edges_units5"), use_cache=False)
    compared = 0
    for reader, structs in (("libclang", scanned.structs), ("DWARF", read.structs)):
        for (struct, path), (offset, size) in gcc.items():
            f = structs[struct].field(path)
            bits = 8 * f.offset + f.bit_offset
            if 8 * offset <= bits and bits + f.bit_width <= 8 * (offset + size):   # not straddling gcc's unit
                assert (f.offset, f.size) == (offset, size), f"{reader}: {struct}.{path}"
                compared += 1
    assert compared >= 2 * 6
    high = scanned.structs["UnitEnd"].field("high")
    assert (high.offset, high.size, high.bit_offset, high.bit_width) == (4, 2, 11, 5)


@needs_gcc
def test_separate_debug_file(fixture_dir):
    so = compile_so(fixture_dir, EDGES, ["-g"], "edges_split")
    debug = fixture_dir / "edges_split.debug"
    subprocess.run(["objcopy", "--only-keep-debug", "--compress-debug-sections=zlib", str(so), str(debug)], check=True)
    subprocess.run(["objcopy", "--strip-debug", str(so)], check=True)
    with pytest.raises(BuildError, match="no DWARF"):
        dwarf.read(so, use_cache=False)
    got = dwarf.read(so, debug, use_cache=False)
    whole = dwarf.read(compile_so(fixture_dir, EDGES, ["-g"], "edges_whole"), use_cache=False)
    with pytest.raises(BuildError, match="build-id"):  # another build's debug file is refused
        dwarf.read(fixture_dir / "edges_whole.so", debug, use_cache=False)
    assert got.structs["Edge"].fields == whole.structs["Edge"].fields
    assert got.structs["Edge"].size == whole.structs["Edge"].size == 64


@needs_gcc
def test_dwz_supplementary_file(fixture_dir):
    """Debian-style dwz: types moved into a shared file named by .gnu_debugaltlink with an absolute
    /usr/lib/debug/.dwz/ path, resolved inside the unpacked tree. dwz comes from Debian by name."""
    dwz = fetched("Debian's dwz", debian.unpacked, ["dwz"], "amd64", "bookworm") / "usr/bin/dwz"
    tree = fixture_dir / "dwz-tree"
    (tree / "usr/lib/debug/.dwz").mkdir(parents=True)
    one = compile_so(fixture_dir, EDGES, ["-g"], "dwz_one")
    two = compile_so(fixture_dir, EDGES + "int second;\n", ["-g"], "dwz_two")
    plain = dwarf.read(one, use_cache=False)
    subprocess.run([str(dwz), "-m", str(tree / "usr/lib/debug/.dwz/common.debug"),
                    "-M", "/usr/lib/debug/.dwz/common.debug", str(one), str(two)], check=True)
    moved = tree / "usr/lib" / one.name
    shutil.copy(one, moved)
    got = dwarf.read(moved, use_cache=False)
    assert got.units == 2 * plain.units     # the shared partial unit, then the compile unit
    for name in ("Edge", "Packed", "Aligned", "Word"):
        assert got.structs[name].fields == plain.structs[name].fields, name
    with pytest.raises(BuildError, match="supplementary file /usr/lib/debug/.dwz/common.debug"):
        dwarf.read(one, use_cache=False)    # outside the tree: the shared file is not found


@needs_gcc
@pytest.mark.parametrize("flavour", ["dwarf5", "dwarf4"])
def test_fixture_agrees_with_the_libclang_scanner(fixture_dir, flavour):
    """The scanner's golden fixture, compiled by gcc: both readers give the same table."""
    so = compile_so(fixture_dir, '#include "Python.h"\n', DWARF_FLAVOURS[flavour], f"fake_{flavour}")
    table = scanner.scan(build.from_prefix(FAKE.parent.parent, target="x86_64-linux-gnu"),
                         scanner.ScanOptions(use_cache=False))
    info = dwarf.read(so, use_cache=False)
    report = dwarf.compare_report(table, info)
    assert report.mismatches == () and report.one_sided == () and report.not_compared == ()
    assert report.structs == len(table.structs) and report.fields == table.field_count
    assert {s.defined_in for s in info.structs.values() if s.name in table.structs} == \
        {s.defined_in for s in table.structs.values()}
    # and name each struct in C alike: its tag, else the typedef that defines it
    assert {k: info.structs[k].c_type for k in table.structs} == {k: s.c_type for k, s in table.structs.items()}


#: Compilers for another CPU than the fixture table's x86_64, and what ELF calls that CPU.
OTHER_CPUS = {"aarch64": (["aarch64-linux-gnu-gcc"], "EM_AARCH64"), "i686": ([GCC or "gcc", "-m32"], "EM_386")}


@pytest.mark.parametrize("cpu", OTHER_CPUS)
def test_dwarf_of_another_cpu_is_refused(fixture_dir, cpu, tmp_path, capsys):
    """The fake headers compiled for another CPU have DWARF of the same structs, at other offsets:
    an x86_64 table is not compared with it (nor filled from it), and `offsets verify --binary`
    says why in one line, exit 2. The ELF header's e_machine is the truth, not the file name."""
    from offsets.layout import table_yaml
    from offsets.cli import main

    (cc, *flags), machine = OTHER_CPUS[cpu]
    if shutil.which(cc) is None:
        missing_tool(cc, "make test installs gcc-aarch64-linux-gnu")
    so = compile_so(fixture_dir, '#include "Python.h"\n', ["-g", "-ffreestanding", "-nostdlib", *flags], f"fake_{cpu}", cc=cc)
    table = scanner.scan(build.from_prefix(FAKE.parent.parent, target="x86_64-linux-gnu"))
    info = dwarf.read(so, use_cache=False)
    assert info.machine == machine
    for use in (dwarf.compare_report, dwarf.fill):
        with pytest.raises(BuildError, match=f"{so.name} is for {machine}.*the table for x86_64-linux-gnu"):
            use(table, info)
    table_yaml.write(table, tmp_path / "t.yaml")
    code = main(["verify", str(tmp_path / "t.yaml"), "--binary", str(so), "--skip", "gcc", "--skip", "live"])
    out, err = capsys.readouterr()
    assert (code, err.count("\n")) == (2, 1) and f"is for {machine}" in err, (code, out, err)
    assert dwarf.read(compile_so(fixture_dir, '#include "Python.h"\n', ["-g"], "fake_x86_64")).machine == "EM_X86_64"


def test_not_an_elf_file(tmp_path):
    junk = tmp_path / "libjunk.so"
    junk.write_bytes(b"not an ELF file at all")
    with pytest.raises(BuildError, match="not a readable ELF"):
        dwarf.read(junk, use_cache=False)
    with pytest.raises(BuildError, match="does not exist"):
        dwarf.read(tmp_path / "missing.so")


# --------------------------------------------------------------------------------------------
# pyenv builds: libclang against DWARF

_PROBE = ("import json, sys, sysconfig; v = sysconfig.get_config_var; "
          "print(json.dumps({'libdir': v('LIBDIR'), 'soname': v('INSTSONAME')}))")


@lru_cache(maxsize=None)
def pyenv_build(version: str):
    """(table from libclang, DwarfInfo of its libpython, seconds the DWARF read took)."""
    py = pyenv_python3(version)
    if py is None:
        missing_input(f"no pyenv CPython {version} on this machine (`pyenv install {version}` to test it)")
    info = json.loads(subprocess.run([str(py), "-I", "-c", _PROBE], capture_output=True, text=True,
                                     check=True).stdout)
    lib = Path(info["libdir"]) / info["soname"]
    if not lib.is_file():
        missing_input(f"CPython {version} has no shared libpython ({lib}); build it with --enable-shared")
    table = scanner.scan(build.from_python(str(py)))
    start = time.perf_counter()
    d = dwarf.read(lib)
    return table, d, d.seconds or time.perf_counter() - start


@pytest.mark.slow
@pytest.mark.parametrize("version", PYENV_SAMPLE)
def test_libclang_and_dwarf_agree(version):
    table, info, seconds = pyenv_build(version)
    r = dwarf.compare_report(table, info)
    print(f"\nCPython {version}: libclang and DWARF compared {r.structs} structs, {r.fields} fields: "
          f"{len(r.mismatches)} mismatches ({len(table.structs) - r.structs} header structs not in "
          f"the DWARF; DWARF read {info.units} units in {seconds:.1f} s{' (cached)' if not info.seconds else ''})")
    assert r.mismatches == ()
    assert r.one_sided == () and r.not_compared == ()
    # most of the headers' structs are used by libpython, so most are compared
    assert r.structs >= 0.9 * len(table.structs) and r.fields > 1000
    # types are spelled like clang does (not part of the layout, so only nearly always)
    spelled = []
    for k, s in info.structs.items():
        if k in table.structs:
            clang = {g.path: g.type for g in table.structs[k].fields}
            spelled += [(f.type, clang[f.path]) for f in s.fields if f.path in clang]
    same = sum(a == b for a, b in spelled)
    print(f"  types spelled as clang does: {same} of {len(spelled)}")
    assert same >= 0.99 * len(spelled)


@pytest.mark.slow
@pytest.mark.parametrize("version", PYENV_SAMPLE)
def test_extension_modules_agree_too(version):
    """The header structs libpython never uses (datetime.h, py_curses.h) are in the DWARF of the
    extension modules that do: compared there, they leave only a few unused internal structs
    unchecked by DWARF."""
    table, info, _ = pyenv_build(version)
    dynload = sorted(Path(pyenv_python3(version)).parent.parent.glob("lib/python3*/lib-dynload"))
    if not dynload:
        missing_input(f"pyenv's CPython {version} has no lib-dynload directory")
    seen = set(dwarf.compare_keys(table, info))
    for module in ("_datetime", "_curses"):
        found = sorted(dynload[0].glob(f"{module}.cpython-*.so"))
        if not found:
            continue
        ext = dwarf.read(found[0])
        r = dwarf.compare_report(table, ext)
        assert r.mismatches == () and r.one_sided == () and r.not_compared == (), module
        seen |= set(dwarf.compare_keys(table, ext))
    assert "PyDateTime_DateTime" in seen
    unseen = sorted(set(table.structs) - seen)
    print(f"\nCPython {version}: libpython and _datetime/_curses DWARF check {len(seen)} of "
          f"{len(table.structs)} header structs; unused anywhere: {', '.join(unseen) or 'none'}")
    assert len(unseen) <= 10


@pytest.mark.slow
@pytest.mark.parametrize("version", PYENV_SAMPLE)
def test_listiterobject_from_dwarf_matches_the_live_interpreter(version):
    table, info, _ = pyenv_build(version)
    filled = dwarf.fill(table, info)
    minor = tuple(int(x) for x in version.split(".")[:2])
    name = "listiterobject" if minor < (3, 12) else "_PyListIterObject"
    s = filled.structs[name]
    # up to 3.11 it lives in Objects/listobject.c, which a headers-only table cannot have
    assert s.origin == ("dwarf" if minor < (3, 12) else "clang")
    assert s.defined_in.startswith("Objects/listobject.c:" if minor < (3, 12) else "Include/internal/pycore_list.h:")
    assert (s.size, s.field("it_index").offset, s.field("it_seq").offset) == (32, 16, 24)
    if minor >= (3, 12):  # the header's struct and the DWARF's are the same
        assert info.structs[name] == replace(s, origin="dwarf", depends=None)     # DWARF has no text to follow
    probe = ("import ctypes, sys; it = iter([1, 2, 3, 4, 5]); [next(it) for _ in range(3)]; "
             "print(type(it).__basicsize__, ctypes.c_ssize_t.from_address(id(it) + int(sys.argv[1])).value)")
    out = subprocess.run([str(pyenv_python3(version)), "-I", "-c", probe, str(s.field("it_index").offset)],
                         capture_output=True, text=True, check=True).stdout.split()
    assert [int(x) for x in out] == [s.size, 3]


@pytest.mark.slow
def test_fill_adds_only_what_the_table_lacks():
    table, info, _ = pyenv_build("3.11.7")
    filled = dwarf.fill(table, info)
    for key, s in table.structs.items():
        assert filled.structs[key] is s
    added = {k: s for k, s in filled.structs.items() if k not in table.structs}
    assert added and all(s.origin == "dwarf" for s in added.values())
    assert all(s.defined_in.split("/", 1)[0] in dwarf.TREE_DIRS for s in added.values())  # no system structs
    assert filled.build.inputs["dwarf"] == info.digest
    assert set(filled.names) >= set(table.names)


@pytest.mark.slow
def test_compare_finds_a_wrong_offset():
    table, info, _ = pyenv_build("3.11.7")
    assert dwarf.compare(table, info)[1] == []
    s = table.structs["PyListObject"]
    moved = tuple(replace(f, offset=f.offset - 8) if f.path == "allocated" else f for f in s.fields)
    bad = replace(table, structs={**table.structs, "PyListObject": replace(s, fields=moved)})
    fields, mismatches = dwarf.compare(bad, info)
    assert mismatches == ["PyListObject.allocated: offset is 24 by libclang but 32 by DWARF"]
    assert fields == dwarf.compare(table, info)[0]
    smaller = replace(table, structs={**table.structs, "PyListObject": replace(s, size=32, fields=s.fields[:-1])})
    r = dwarf.compare_report(smaller, info)
    assert r.mismatches == ("PyListObject: size is 32 by libclang but 40 by DWARF",)
    assert r.one_sided == ("PyListObject.allocated: only DWARF has it",)
    # alignment: a larger one than DWARF's is wrong; a smaller one at the same size and places is a
    # packed record DWARF cannot see (it records no `packed`), left to gcc's _Alignof
    r = dwarf.compare_report(replace(table, structs={**table.structs, "PyListObject": replace(s, align=16)}), info)
    assert r.mismatches == ("PyListObject: align is 16 by libclang but 8 by DWARF",) and r.not_compared == ()
    r = dwarf.compare_report(replace(table, structs={**table.structs, "PyListObject": replace(s, align=1)}), info)
    assert r.mismatches == () and r.not_compared == (f"PyListObject: align 1 by libclang, at most 8 by DWARF "
                                                      f"({dwarf.NO_PACKING})",)


@pytest.mark.slow
def test_reading_each_definition_once_loses_nothing():
    """The shortcut (a definition met again at the same place is not re-read) against reading every
    unit in full: the same structs, names and conflicts."""
    py = pyenv_python3("3.6.15")
    if py is None:
        missing_input("no pyenv CPython 3.6.15")
    lib = Path(subprocess.run(["pyenv", "prefix", "3.6.15"], capture_output=True, text=True).stdout.strip()) \
        / "lib" / "libpython3.6m.so.1.0"
    fast, full = dwarf.read(lib), dwarf.read(lib, thorough=True)
    assert (fast.structs, fast.names, fast.conflicts) == (full.structs, full.names, full.conflicts)


# --------------------------------------------------------------------------------------------
# Debian: a stripped libpython with its separate (compressed) debug file, and the debug build


DEBIAN_311 = ["libpython3.11", "libpython3.11-dev", "libpython3.11-dbg", "python3.11-dbg"]


@lru_cache(maxsize=None)
def debian_311():
    return fetched("Debian's CPython 3.11 packages", debian.unpacked, DEBIAN_311, "amd64", "bookworm")


def gcc_sizeof(tree: Path, unit: str, type_name: str, pyconfig_dir: Path) -> int:
    """sizeof(`type_name`) as gcc compiles `unit` of the source `tree` (Py_BUILD_CORE) with the
    pyconfig.h of `pyconfig_dir`: the size of an array object of that many bytes, read by nm."""
    out = Path(tempfile.mkdtemp(prefix="offsets-sizeof-"))
    (out / "probe.c").write_text(f'#include "{unit}"\nchar sizeof_probe[sizeof({type_name})];\n')
    subprocess.run([GCC, "-c", "-w", "-DPy_BUILD_CORE", f"-I{tree}", f"-I{tree}/Include", f"-I{tree}/Include/internal",
                    f"-I{pyconfig_dir}", "probe.c", "-o", "probe.o"], cwd=out, check=True)
    nm = subprocess.run(["nm", "-S", "probe.o"], cwd=out, capture_output=True, text=True, check=True).stdout
    (size,) = [int(line.split()[1], 16) for line in nm.splitlines() if line.endswith(" sizeof_probe")]
    shutil.rmtree(out)
    return size


@pytest.mark.slow
@pytest.mark.parametrize("config", ["release", "debug"])
def test_debian_bookworm_311(config, debian311):
    """Release: libpython3.11.so is stripped, its DWARF is in python3.11-dbg's build-id file.
    Debug: libpython3.11d.so (Py_DEBUG) carries its DWARF. Each against libclang's scan of the
    matching headers (usr/include/python3.11 or python3.11d)."""
    root = debian_311()
    lib = root / "usr/lib/x86_64-linux-gnu" / ("libpython3.11.so.1.0" if config == "release" else "libpython3.11d.so.1.0")
    debug = dwarf.debug_file_for(lib, root)
    if config == "release":
        assert debug is not None and debug.parent.parent.name == ".build-id"
        assert not dwarf.has_dwarf(lib) and dwarf.debug_file_for(lib) == debug   # found from the binary
        other = root / "usr/lib/x86_64-linux-gnu/libpython3.11d.so.1.0"
        with pytest.raises(BuildError, match="build-id"):
            dwarf.read(other, debug)
    info = dwarf.read(lib, debug)
    inc = root / "usr/include" / ("python3.11" if config == "release" else "python3.11d")
    table = scanner.scan(build.from_prefix(root / "usr", include_dir=inc, target="x86_64-linux-gnu"))
    assert table.build.config["Py_DEBUG"] is (config == "debug")
    r = dwarf.compare_report(table, info)
    print(f"\nDebian CPython 3.11.2 {config}: libclang and DWARF compared {r.structs} structs, {r.fields} "
          f"fields: {len(r.mismatches)} mismatches (DWARF read {info.units} units in {info.seconds:.1f} s"
          f"{' (cached)' if not info.seconds else ''})")
    assert r.mismatches == () and r.one_sided == () and r.not_compared == ()
    assert r.structs >= 0.9 * len(table.structs) and r.fields >= 0.9 * table.field_count
    s = dwarf.fill(table, info).structs["listiterobject"]
    assert (s.origin, s.size, s.field("it_index").offset) == ("dwarf", 32, 16)
    # Py_DEBUG changes no header struct in 3.11, but it does change PyArena (Python/pyarena.c): gcc
    # compiles that file of the same source (Debian's python3.11) with this build's pyconfig.h
    assert f'"{table.build.version}"' in (debian311.tree / "Include/patchlevel.h").read_text()   # the same release
    size = gcc_sizeof(debian311.tree, "Python/pyarena.c", "PyArena",
                      root / "usr/include/x86_64-linux-gnu" / inc.name)
    assert size == (24 if config == "release" else 64)      # 3 pointers; 5 more size_t counters with Py_DEBUG
    assert info.structs["PyArena"].size == size


@pytest.mark.slow
@pytest.mark.parametrize("arch,triple", [("i386", "i686-linux-gnu"), ("arm64", "aarch64-linux-gnu")])
def test_debian_bookworm_311_debug_other_cpus(arch, triple):
    """Alignment comes from the target's rules, not from DWARF: i686 (8-byte scalars aligned to 4
    in structs) and aarch64 builds of Debian's debug libpython, against libclang for that target."""
    from offsets.scan import targets

    root = fetched(f"Debian's CPython 3.11 packages for {arch}", debian.unpacked,
                   ["libpython3.11-dev", "libpython3.11-dbg"], arch, "bookworm")
    table = scanner.scan(build.from_prefix(root / "usr", target=triple, config="debug", abiflags="d"))
    info = dwarf.read(root / "usr/lib" / targets.target(triple).multiarch / "libpython3.11d.so.1.0")
    r = dwarf.compare_report(table, info)
    print(f"\nDebian CPython 3.11.2 debug {triple}: libclang and DWARF compared {r.structs} structs, "
          f"{r.fields} fields: {len(r.mismatches)} mismatches")
    assert r.mismatches == () and r.one_sided == () and r.not_compared == ()
    assert r.structs >= 0.9 * len(table.structs) and r.fields >= 0.9 * table.field_count
    s = dwarf.fill(table, info).structs["listiterobject"]
    p = table.build.target.pointer_size
    assert (s.origin, s.size, s.field("it_index").offset) == ("dwarf", 4 * p, 2 * p)
