"""A name that means two layouts in one build is never answered unqualified (offsets/scan/qualify.py).

Truth: gcc's `sizeof`/`offsetof` over the very `.c` files (probe.py, and a compiled program for
the tiny tree), never the scanner's own numbers.
"""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from offsets.scan import build_inputs as build, scanner, sources
from offsets.layout import compact, compact_read, names
from offsets import runtime
from offsets.errors import AmbiguousNameError, UnknownNameError
from offsets.layout.model import Build, Table, Target

AMD64 = ("amd64", "x86_64-linux-gnu")

# Objects/a.c: `BLOCK` is a typedef (expat's xmlparse.c, 16 bytes), `thing` a tag.
# Objects/b.c: `BLOCK` is a tag (the deque block of _collectionsmodule.c, 528 bytes), `thing` a typedef.
A_C = """#include "Python.h"
typedef struct block { struct block *next; int size; char s[1]; } BLOCK;
struct thing { int x; };
BLOCK *a_block; struct thing *a_thing;
"""
B_C = """#include "Python.h"
typedef struct BLOCK { struct BLOCK *leftlink; PyObject *data[64]; struct BLOCK *rightlink; } block;
typedef struct { double d; char c; } thing;
block *b_block; thing *b_thing;
"""
TRUTH = """#include <stddef.h>
#include <stdio.h>
int main(void) {
#ifdef A
    printf("%zu %zu %zu\\n", sizeof(BLOCK), offsetof(BLOCK, size), sizeof(struct thing));
#else
    printf("%zu %zu %zu\\n", sizeof(struct BLOCK), offsetof(struct BLOCK, rightlink), sizeof(thing));
#endif
    return 0;
}
"""
MAKEFILE = """\
OBJECT_OBJS= Objects/a.o Objects/b.o
PY_CPPFLAGS= -I. -I$(srcdir)/Include -I$(srcdir)/Include/internal
PY_CORE_CFLAGS= $(PY_CPPFLAGS) -DPy_BUILD_CORE
.c.o:
\t$(CC) -c $(PY_CORE_CFLAGS) -o $@ $<
"""


@pytest.fixture(scope="module")
def collision(tmp_path_factory, debian311):
    """A tiny tree whose two files give `BLOCK` and `thing` two layouts each: its table, and gcc's numbers."""
    tree = tmp_path_factory.mktemp("collide") / "cpython"
    shutil.copytree(debian311.tree / "Include", tree / "Include")
    (tree / "Objects").mkdir()
    (tree / "Makefile.pre.in").write_text(MAKEFILE)
    (tree / "Objects/a.c").write_text(A_C)
    (tree / "Objects/b.c").write_text(B_C)
    pyconfig = debian311.pyconfig(*AMD64)
    b = build.from_source(tree, pyconfig)
    truth = {}
    for f, flag in (("a.c", "-DA"), ("b.c", "-DB")):
        exe = tree / f"truth-{f}"
        main = tree / "truth.c"
        main.write_text(TRUTH)
        subprocess.run(["gcc", "-w", flag, "-DPy_BUILD_CORE", "-I", str(pyconfig.parent), "-I", str(tree / "Include"),
                        "-I", str(tree / "Include/internal"), "-include", str(tree / "Objects" / f), str(main),
                        "-o", str(exe)], check=True)
        truth[f] = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    return scanner.scan(b, scanner.ScanOptions(jobs=1)), truth


def test_tag_against_typedef_is_refused_unqualified_with_the_candidates(collision):
    t, truth = collision
    for plain in ("BLOCK", "block", "thing"):
        assert plain not in t.structs and plain not in t.names
        with pytest.raises(AmbiguousNameError) as e:
            names.resolve(t, plain)
        assert e.value.suggestions == [f"{plain}@Objects/a.c", f"{plain}@Objects/b.c"]
        assert isinstance(e.value, (KeyError, UnknownNameError)) and "ask for one of" in str(e.value)
    with pytest.raises(AmbiguousNameError):
        names.resolve(t, "BLOCK.size")


def test_qualified_names_answer_what_gcc_says(collision):
    t, truth = collision
    a_size, a_off, a_thing = truth["a.c"]
    b_size, b_off, b_thing = truth["b.c"]
    assert (a_size, b_size) == (16, 528)       # expat's BLOCK and the deque block, on x86_64
    assert names.resolve(t, "BLOCK@Objects/a.c")[0].size == a_size
    assert names.resolve(t, "BLOCK@Objects/a.c.size")[1].offset == a_off
    assert names.resolve(t, "block@Objects/a.c")[0].size == a_size          # expat's tag: the same struct
    assert names.resolve(t, "BLOCK@Objects/b.c.rightlink")[1].offset == b_off
    assert names.resolve(t, "block@Objects/b.c")[0].size == b_size
    assert names.resolve(t, "thing@Objects/a.c")[0].size == a_thing
    assert names.resolve(t, "thing@Objects/b.c")[0].size == b_thing
    assert any(c.startswith("BLOCK: defined differently in Objects/a.c, Objects/b.c") for c in t.conflicts)


def test_runtime_and_cli_take_the_qualified_syntax(collision, tmp_path):
    t, truth = collision
    loaded = runtime.Loaded(*compact_read.parse(compact.dumps(t, "collide")), "collide", names.aliases())
    from offsets import _offsets   # the C API: PyOffsets_Get through the capsule

    runtime.RUNTIME.install(loaded, runtime.Match("collide", "user", "a test table", "collide", loaded.build, loaded=loaded))
    try:
        assert _offsets._get("BLOCK@Objects/b.c.rightlink") == truth["b.c"][1]
        with pytest.raises(AmbiguousNameError):
            _offsets._get("BLOCK.leftlink")
        assert runtime.get("BLOCK@Objects/b.c.rightlink") == truth["b.c"][1]
        assert runtime.sizeof("block@Objects/a.c") == truth["a.c"][0]
        assert runtime.field("BLOCK@Objects/a.c.size").offset == truth["a.c"][1]
        with pytest.raises(AmbiguousNameError) as e:
            runtime.get("BLOCK.leftlink")
        assert e.value.suggestions == ["BLOCK@Objects/a.c", "BLOCK@Objects/b.c"]
        with pytest.raises(AmbiguousNameError):
            runtime.sizeof("thing")
    finally:
        runtime.reset()
    from offsets.layout import table_yaml

    path = tmp_path / "collide.yaml"
    table_yaml.write(t, path)
    ok = subprocess.run([sys.executable, "-m", "offsets", "get", "BLOCK@Objects/b.c.rightlink", "-t", str(path)],
                        capture_output=True, text=True)
    assert (ok.returncode, ok.stdout.strip()) == (0, str(truth["b.c"][1]))
    bad = subprocess.run([sys.executable, "-m", "offsets", "get", "BLOCK", "-t", str(path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "BLOCK@Objects/a.c, BLOCK@Objects/b.c" in bad.stderr


def test_block_with_expat_scanned():
    """Python.org's 3.13.15 builds its bundled expat: `BLOCK` is xmlparse.c's typedef and
    _collectionsmodule.c's tag. gcc's offsetof probes over both files agree with the qualified structs."""
    from offsets.check import probe
    from offsets.tools import matrix

    job = next(j for j in matrix.jobs() if j.label == "upstream 3.13.15 release x86_64-linux-gnu")
    b = job.inputs()
    wanted = ("Modules/expat/xmlparse.c", "Modules/_collectionsmodule.c")
    units = [u for u in sources.source_units(b)[0] if u.name in wanted]
    assert sorted(u.name for u in units) == sorted(wanted)
    structs, aliases, conflicts = scanner.merge(scanner.parse_units(units, scanner.ScanOptions(jobs=1)))
    t = Table(build=Build(b.version, b.hexversion, {}, Target(b.target.triple, 8)),
              scanner={}, structs=structs, names=aliases, conflicts=tuple(conflicts))
    with pytest.raises(AmbiguousNameError) as e:
        names.resolve(t, "BLOCK")
    assert e.value.suggestions == ["BLOCK@Modules/_collectionsmodule.c", "BLOCK@Modules/expat/xmlparse.c"]
    deque = names.resolve(t, "block@Modules/_collectionsmodule.c")[0]
    expat = names.resolve(t, "BLOCK@Modules/expat/xmlparse.c")[0]
    assert names.resolve(t, "BLOCK@Modules/_collectionsmodule.c")[0] is deque
    items, _ = probe.source_probes(t, b)
    checked = [i for i in items if i.struct in (deque.name, expat.name)]
    report = probe.probe_sources(t, b, checked)
    assert report.mismatches == () and len(checked) >= 2
    assert (expat.size, deque.size) == (16, 528)


def test_dwarf_fill_qualifies_a_header_name_a_c_file_redefines(tmp_path):
    """Headers-only scan + DWARF (pyenv's way): the header's `thing2` and a `.c` file's `thing2`
    are two layouts, so the filled table answers neither plainly; gcc gives both sizes."""
    from pathlib import Path

    from offsets.scan import dwarf

    fake = Path(__file__).parent / "fixtures" / "fakepy"
    tree = tmp_path / "fake"
    shutil.copytree(fake, tree)
    inc = tree / "include" / "python3.99"
    header = inc / "Python.h"
    header.write_text(header.read_text() + "\ntypedef struct { int a; } thing2;\n")
    table = scanner.scan(build.from_prefix(tree, target="x86_64-linux-gnu"), scanner.ScanOptions(use_cache=False))
    assert "thing2" in table.structs
    work = tmp_path / "build"
    (work / "Modules").mkdir(parents=True)
    shutil.copytree(inc, work / "Include")
    (work / "Modules/a.c").write_text('#include "Python.h"\nthing2 a_thing;\n'
                                      'unsigned long a_size(void) { return sizeof(thing2); }\n')
    (work / "Modules/b.c").write_text("typedef struct { long x; char y[9]; } thing2;\nthing2 b_thing;\n"
                                      "unsigned long b_size(void) { return sizeof(thing2); }\n")
    so = work / "libboth.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-g", "-IInclude", "Modules/a.c", "Modules/b.c", "-o", so.name],
                   cwd=work, check=True)
    main = work / "main.c"
    main.write_text("#include <stdio.h>\nunsigned long a_size(void), b_size(void);\n"
                    'int main(void) { printf("%lu %lu\\n", a_size(), b_size()); return 0; }\n')
    subprocess.run(["gcc", main.name, "-L.", "-lboth", "-Wl,-rpath,$ORIGIN", "-o", "main"], cwd=work, check=True)
    a_size, b_size = (int(x) for x in subprocess.run([str(work / "main")], capture_output=True, text=True,
                                                      check=True).stdout.split())
    filled, _ = dwarf.checked_fill(table, so)
    with pytest.raises(AmbiguousNameError) as e:
        names.resolve(filled, "thing2")
    assert [k.split(":")[0] for k in e.value.suggestions] == ["thing2@Include/Python.h", "thing2@Modules/b.c"]
    assert names.resolve(filled, "thing2@Include/Python.h")[0].size == a_size
    assert names.resolve(filled, "thing2@Modules/b.c.y")[0].size == b_size
