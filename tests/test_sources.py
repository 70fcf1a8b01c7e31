"""Source trees: each `.c` file of a CPython tree is its own unit, with the flags its build uses.

Truth comes from outside the scanner: gcc's offsetof probes of the private structs, a live
CPython 3.11's `list_iterator.__basicsize__`, GNU make's own expansion of a Makefile, and the
build's files themselves (Makefile.pre.in's recipes). Debian's bookworm python3.11 source package
and libpython3.11-dev are fetched by name into $OFFSETS_CACHE; the tree is never modified: tests
that need a broken or tiny tree build one in tmp_path.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import result_memo
from conftest import missing_input, missing_tool, pyenv_python
from offsets.scan import build_inputs as build, scanner, sources
from offsets.check import probe
from offsets.errors import BuildError
from offsets.scan.makefile import Makefile, compile_command, flags_of

SCANNED = ("Objects", "Python", "Modules", "Parser")
AMD64 = ("amd64", "x86_64-linux-gnu")


def amd64_inputs(debian311):
    return build.from_source(debian311.tree, debian311.pyconfig(*AMD64))


def test_listiterobject_it_index_x86_64(debian311):
    t = debian311.table()
    s = t.structs["listiterobject"]
    assert s.defined_in.startswith("Objects/listobject.c:")
    assert s.field("it_index").offset == 16
    assert (t.build.version, t.build.target.pointer_size) == ("3.11.2", 8)
    assert t.build.inputs["source"].startswith("sha256:")


def test_listiterobject_size_matches_a_live_311(debian311):
    exe = pyenv_python("3.11")
    if exe is None:
        missing_input("pyenv has no CPython 3.11 here (`pyenv install 3.11`)")
    live = subprocess.run([str(exe), "-c", "print(type(iter([])).__basicsize__)"], capture_output=True,
                          text=True, check=True).stdout
    assert debian311.table().structs["listiterobject"].size == int(live)


def test_every_c_file_is_a_unit_or_skipped_with_a_reason(debian311):
    b = amd64_inputs(debian311)
    units, skipped, digest = sources.source_units(b)
    tree = debian311.tree
    files = {str(p.relative_to(tree)) for d in SCANNED for p in (tree / d).rglob("*.c")}
    reasons = dict(s.split(": ", 1) for s in skipped)
    names = [u.name for u in units]
    assert len(names) == len(set(names)) and not set(names) & set(reasons)
    assert files <= set(names) | set(reasons)
    assert len(units) >= 190
    assert all(Path(u.path).is_file() and u.path == str(tree / u.name) for u in units)
    for f in ("Modules/_winapi.c", "Modules/overlapped.c", "Python/dynload_win.c", "Python/dynload_hpux.c",
              "Modules/_scproxy.c", "Python/emscripten_signal.c"):
        assert reasons[f].startswith("not compiled"), f
    assert reasons["Modules/getpath.c"].startswith("not scanned: needs Python/frozen_modules/getpath.h")
    system = [Path("/usr/include"), Path("/usr/include/x86_64-linux-gnu")]
    for f, header in (("Modules/_gdbmmodule.c", "gdbm.h"), ("Modules/_tkinter.c", "tcl.h"),
                      ("Modules/nismodule.c", "rpc/rpc.h")):
        if any((d / header).is_file() for d in system):
            assert f in names
        else:
            assert reasons[f].startswith(f"not scanned: missing dependency {header}"), reasons[f]
    assert digest == sources.source_units(b)[2] and digest.startswith("sha256:")
    assert set(debian311.table().skipped) >= set(skipped)


def test_units_carry_the_defines_of_the_build(debian311):
    """Core objects get -DPy_BUILD_CORE (PY_CORE_CFLAGS), dynload_shlib.c its -DSOABI recipe, the
    test module _testcapimodule.c no Py_BUILD_CORE at all, bundled libmpdec its -I."""
    units = {u.name: u.args for u in sources.source_units(amd64_inputs(debian311))[0]}
    makefile = (debian311.tree / "Makefile.pre.in").read_text()
    assert "-DPy_BUILD_CORE" in units["Objects/listobject.c"]
    assert re.search(r"^Python/dynload_shlib\.o:.*\n(\t.*\n)*\t\t-DSOABI='\"\$\(SOABI\)\"'", makefile, re.M)
    assert '-DSOABI="cpython-311-x86_64-linux-gnu"' in units["Python/dynload_shlib.c"]
    assert not any(a.startswith("-DPy_BUILD_CORE") for a in units["Modules/_testcapimodule.c"])
    assert "-DPy_BUILD_CORE_BUILTIN" in units["Modules/atexitmodule.c"]    # Setup.bootstrap: *static*
    assert f"-I{debian311.tree}/Modules/_decimal/libmpdec" in units["Modules/_decimal/_decimal.c"]


def test_a_tag_defined_differently_in_two_files_is_kept_twice(debian311):
    t = debian311.table()
    a, b = t.structs["block@Modules/_collectionsmodule.c"], t.structs["block@Python/pyarena.c"]
    assert a.size != b.size and "block" not in t.structs
    assert "block: defined differently in Modules/_collectionsmodule.c, Python/pyarena.c" in t.conflicts


def test_make_agrees_on_the_expansion(tmp_path):
    """GNU make itself expands the same variables and recipe: the -D/-I flags must be the same."""
    text = ("X = -DA=1 $(if $(EMPTY),-DNO,-DYES)\nOBJS = a.o b.o\nSRCS = $(OBJS:.o=.c)\n"
            "CFLAGS_CORE = $(X) -I$(srcdir)/Include -DSOABI='\"$(SOABI)\"' -DSRCS='\"$(SRCS)\"'\n"
            "srcdir = /src\nSOABI = cpython-311\n"
            "a.o: a.c\n\t$(CC) -c $(CFLAGS_CORE) -DGIT=\"\\\"`echo x`\\\"\" -o $@ a.c\n")
    (tmp_path / "Makefile").write_text(text)
    (tmp_path / "a.c").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # under `make test`
    made = subprocess.run(["make", "-n", "--no-print-directory", "-f", "Makefile", "a.o"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    made = re.sub(r"`[^`]*`", "", made)
    cmd, _ = compile_command(Makefile(text, {}), "a.o", Path("/src"))
    ours = flags_of(cmd, Path("/src"), [Path("/build")], "a.o")
    assert ours == flags_of(made, Path("/src"), [Path("/build")], "a.o")
    assert ours == ("-DA=1", "-DYES", "-I/src/Include", '-DSOABI="cpython-311"', '-DSRCS="a.c b.c"', '-DGIT=""')


# --- a tiny tree in tmp_path, laid out like CPython's: Include/ (copied), Makefile.pre.in, Objects/

TINY_MAKEFILE = """\
OBJECT_OBJS= Objects/a.o Objects/b.o
PY_CFLAGS_NODIST= -I$(srcdir)/Include/internal
PY_CPPFLAGS= -I. -I$(srcdir)/Include
PY_STDMODULE_CFLAGS= $(PY_CFLAGS_NODIST) $(PY_CPPFLAGS)
PY_CORE_CFLAGS= $(PY_STDMODULE_CFLAGS) -DPy_BUILD_CORE
.c.o:
\t$(CC) -c $(PY_CORE_CFLAGS) -o $@ $<
"""


@pytest.fixture
def tiny_tree(tmp_path, debian311):
    tree = tmp_path / "cpython"
    shutil.copytree(debian311.tree / "Include", tree / "Include")
    (tree / "Objects").mkdir()
    (tree / "Makefile.pre.in").write_text(TINY_MAKEFILE)
    (tree / "Objects/a.c").write_text('#include "Python.h"\nstruct dup { int x; };\n'
                                      'typedef struct { PyObject_HEAD long v; } same;\n')
    (tree / "Objects/b.c").write_text('#include "Python.h"\nstruct dup { long x; char c[3]; };\n'
                                      'typedef struct { PyObject_HEAD long v; } same;\n')
    (tree / "Objects/unlisted.c").write_text("struct never { int x; };\n")
    return tree


def test_conflicting_tags_in_a_tiny_tree(tiny_tree, debian311):
    b = build.from_source(tiny_tree, debian311.pyconfig(*AMD64))
    t = scanner.scan(b, scanner.ScanOptions(jobs=1))
    assert t.structs["dup@Objects/a.c"].size == 4 and t.structs["dup@Objects/b.c"].size == 16
    assert t.conflicts == ("dup: defined differently in Objects/a.c, Objects/b.c",)
    assert t.structs["same"].field("v").offset == 16 and "never" not in t.structs
    assert "Objects/unlisted.c: not compiled by the build on Linux" in "\n".join(t.skipped)


def test_the_saved_plan_follows_the_files_it_read(tiny_tree, debian311):
    b = build.from_source(tiny_tree, debian311.pyconfig(*AMD64))
    first = sources.source_units(b)
    assert sources.source_units(b) == first                     # the saved plan
    (tiny_tree / "Objects/c.c").write_text('#include "Python.h"\nstruct c { int x; };\n')   # a new .c file
    assert "Objects/c.c: not compiled by the build on Linux" in "\n".join(sources.source_units(b)[1])
    makefile = tiny_tree / "Makefile.pre.in"                    # a file the plan read changes
    makefile.write_text(makefile.read_text().replace("Objects/b.o", "Objects/b.o Objects/c.o"))
    assert "Objects/c.c" in [u.name for u in sources.source_units(b)[0]]
    (tiny_tree / "Objects/c.c").write_text('#include "Python.h"\n#include "c.h"\n')   # an include it resolves
    makefile.write_text(makefile.read_text() + "Objects/c.h: Objects/c.def\n\tgen $< > $@\n")
    assert dict(s.split(": ", 1) for s in sources.source_units(b)[1])["Objects/c.c"] == \
        "not scanned: needs Objects/c.h, which the build generates"


def test_a_clang_error_in_a_compiled_unit_aborts(tiny_tree, debian311, tmp_path):
    (tiny_tree / "Objects/b.c").write_text('#include "Python.h"\n\nstruct broken { no_such_type x; };\n')
    out = tmp_path / "t.yaml"
    cmd = [sys.executable, "-m", "offsets", "scan", "-q", "--source", str(tiny_tree),
           "--pyconfig", str(debian311.pyconfig(*AMD64)), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 2 and not out.exists()
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{tiny_tree}/Objects/b.c:3:" in lines[0] and "error" in lines[0], proc.stderr
    kept = subprocess.run(cmd + ["--keep-going"], capture_output=True, text=True)
    assert kept.returncode == 0 and "Objects/b.c" in out.read_text()


@pytest.mark.parametrize("prefix", [False, True], ids=["source", "prefix-and-source"])
def test_a_pyconfig_of_any_name_with_an_empty_cache(tiny_tree, debian311, tmp_path, prefix):
    """`--pyconfig DIR/pyconfig-x86_64.h` with `--source` (alone, or with `--prefix`) and nothing in
    the scan cache: the recipes' `-I.` (the build directory) must find the given pyconfig under the
    name Python.h includes. It stopped at the first unit with clang's "'pyconfig.h' file not found"
    (a warm cache hid it). The table is the one the file named pyconfig.h gives."""
    from offsets.layout import table_yaml
    from offsets.scan.clang_headers import builtin_include

    real = debian311.pyconfig(*AMD64)
    odd = tmp_path / "build" / "pyconfig-x86_64.h"
    odd.parent.mkdir()
    shutil.copyfile(real, odd)
    out = tmp_path / "t.yaml"
    env = dict(os.environ, OFFSETS_CACHE=str(tmp_path / "empty-cache"), OFFSETS_CLANG_INCLUDE=str(builtin_include()))
    where = ["--prefix", str(debian311.dev("amd64"))] if prefix else []
    proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "-q", *where, "--source", str(tiny_tree),
                           "--pyconfig", str(odd), "--target", "x86_64-linux-gnu", "-o", str(out)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    got = table_yaml.load(out)
    b = (build.from_prefix(debian311.dev("amd64"), source=tiny_tree, pyconfig=real) if prefix
         else build.from_source(tiny_tree, real))
    named = scanner.scan(b, scanner.ScanOptions(jobs=1, use_cache=False))
    assert got.structs == named.structs and got.build == named.build and got.skipped == named.skipped
    # PyObject_HEAD is 16 bytes on x86_64 release builds (a live interpreter's object.__basicsize__)
    assert got.structs["same"].field("v").offset == object.__basicsize__ == 16


def test_headers_and_tree_of_different_versions_are_refused(tiny_tree, debian311):
    patchlevel = tiny_tree / "Include/patchlevel.h"
    text = patchlevel.read_text()
    patchlevel.write_text(re.sub(r'#define PY_VERSION\s+"3\.11\.2"', '#define PY_VERSION "3.11.9"', text))
    b = build.from_prefix(debian311.dev("amd64"), source=tiny_tree)
    with pytest.raises(BuildError, match="is CPython 3.11.9 but the headers in .* are 3.11.2"):
        sources.source_units(b)


@pytest.fixture(scope="module")
def tree313(debian313):
    """Debian trixie's python3.13 source package and libpython3.13-dev's x86_64 pyconfig.h."""
    return debian313


def test_313_tree_units(tree313):
    units, skipped, _ = sources.source_units(tree313)
    tree = tree313.source
    files = {str(p.relative_to(tree)) for d in SCANNED for p in (tree / d).rglob("*.c")}
    reasons = dict(s.split(": ", 1) for s in skipped)
    assert files <= {u.name for u in units} | set(reasons) and len(units) >= 250
    assert reasons["Objects/mimalloc/static.c"] == "not compiled on its own (#included by Objects/obmalloc.c)"
    assert reasons["Python/frozen.c"].startswith("not scanned: needs Python/frozen_modules/")


def test_one_header_laid_out_differently_by_two_units(tree313):
    """3.13's cjkcodecs.h sizes cjkcodecs_module_state by the codecs of the unit including it."""
    units = {u.name: u for u in sources.source_units(tree313)[0]}
    names = ["Modules/cjkcodecs/_codecs_cn.c", "Modules/cjkcodecs/_codecs_hk.c"]
    results = scanner.parse_units([units[n] for n in names], scanner.ScanOptions(jobs=1))
    sizes = [r.structs["cjkcodecs_module_state"].size for r in results]
    assert sizes[0] != sizes[1]
    structs, _, conflicts = scanner.merge(results)
    assert "cjkcodecs_module_state" not in structs
    assert [structs[f"cjkcodecs_module_state@{n}"].size for n in names] == sizes
    assert any(c.startswith("cjkcodecs_module_state: Modules/cjkcodecs/cjkcodecs.h:") for c in conflicts)
    # the same merge under the DWARF policy (a reader that does not know which units saw a place):
    # neither layout is kept, and the conflict says why
    from offsets.scan import qualify

    structs, _, conflicts = qualify.merge([(r.name, r.structs, r.names) for r in results], qualify.DWARF)
    assert not [k for k in structs if k.startswith("cjkcodecs_module_state")]
    where = results[0].structs["cjkcodecs_module_state"].defined_in
    assert f"cjkcodecs_module_state: two layouts at {where} (sizes {sizes[0]} and {sizes[1]}): dropped, the DWARF " \
           f"does not say which one applies" in conflicts


# --- 3.9: setup.py builds the shared modules, each Extension(...) with its own flags

def test_39_listiterobject_and_setup_py_modules(debian39):
    t = debian39.table()
    s = t.structs["listiterobject"]
    assert s.defined_in.startswith("Objects/listobject.c:") and s.field("it_index").offset == 16
    assert t.build.version == "3.9.2"
    units = {u.name: u.args for u in sources.source_units(debian39.inputs)[0]}
    setup = (debian39.tree / "setup.py").read_text()
    # setup.py: Extension("_asyncio", ..., extra_compile_args=['-DPy_BUILD_CORE_MODULE']); the
    # unit failed without it ("this header requires Py_BUILD_CORE define")
    assert re.search(r"Extension\(\"_asyncio\", \[\"_asynciomodule.c\"\],\s*extra_compile_args=\['-DPy_BUILD_CORE_MODULE'\]", setup)
    assert "-DPy_BUILD_CORE_MODULE" in units["Modules/_asynciomodule.c"]
    assert not any(a.startswith("-DPy_BUILD_CORE") for a in units["Modules/_testcapimodule.c"])
    # a loop over a literal: for loc in (...): Extension('_codecs_%s' % loc, ['cjkcodecs/_codecs_%s.c' % loc])
    assert {f"Modules/cjkcodecs/_codecs_{loc}.c" for loc in ("kr", "jp", "cn", "tw", "hk", "iso2022")} <= set(units)
    # debian/rules passes --with-system-expat: setup.py's branch without the bundled expat
    assert "--with-system-expat" in (debian39.tree / "debian/rules").read_text()
    reasons = dict(s.split(": ", 1) for s in t.skipped)
    assert reasons["Modules/expat/xmlparse.c"].startswith("not compiled")
    assert f"-I{debian39.tree}/Modules/_multiprocessing" in units["Modules/_multiprocessing/semaphore.c"]
    assert "-std=c99" in units["Objects/listobject.c"]     # configure.ac: CFLAGS_NODIST -std=c99 with gcc


def test_39_gcc_agrees_on_objects_structs(debian39):
    t, b = debian39.table(), debian39.inputs
    items, _ = probe.source_probes(t, b)
    wanted = [i for i in items if re.match(r"Objects/[^/]+\.c:", t.structs[i.struct].defined_in)]
    report = result_memo.probed("probe-39-objects", t, b, lambda: probe.probe_sources(t, b, wanted), wanted)
    assert report.mismatches == ()
    assert report.structs >= 30 and "listiterobject.it_index" in report.checked


def test_setup_py_reader_on_branches(tmp_path):
    """Known tests take one branch, unknown ones both; a value differing between them is reported."""
    from offsets.scan import setup_py

    (tmp_path / "Modules").mkdir()
    (tmp_path / "setup.py").write_text('''
import os, sysconfig
HOST_PLATFORM = get_platform()
MACOS = (HOST_PLATFORM == 'darwin')
class B:
    def detect(self):
        args = ['-DPy_BUILD_CORE_MODULE']
        incs = []
        if MACOS:
            args.append('-DMACOSX')
        self.add(Extension('a', ['a.c'], extra_compile_args=args,
                           include_dirs=[os.path.join(self.srcdir, 'Modules', 'x')]))
        if sysconfig.get_config_var('HAVE_FOO'):
            incs.append('/opt/foo')
        self.add(Extension('b', ['b.c'], include_dirs=incs, define_macros=[('M', '1'), ('N', None)]))
        for loc in ('p', 'q'):
            self.add(Extension('c_%s' % loc, ['c_%s.c' % loc], undef_macros=['U_' + loc]))
        self.add(Extension('d', ['d.c'], include_dirs=find_dirs()))
''')
    found = setup_py.compiled(tmp_path / "setup.py", tmp_path, {"HOST_PLATFORM": frozenset(["linux"])}, {})
    assert found["Modules/a.c"].flags == (f"-I{tmp_path}/Modules/x", "-DPy_BUILD_CORE_MODULE")
    assert found["Modules/b.c"].unresolved and found["Modules/b.c"].partial == ("-DM=1", "-DN")
    assert (found["Modules/c_p.c"].flags, found["Modules/c_q.c"].flags) == (("-UU_p",), ("-UU_q",))
    assert "find_dirs()" in found["Modules/d.c"].unresolved
    known = setup_py.compiled(tmp_path / "setup.py", tmp_path, {"HOST_PLATFORM": frozenset(["linux"])}, {"HAVE_FOO": 1})
    assert known["Modules/b.c"].flags == ("-I/opt/foo", "-DM=1", "-DN")


# --- units that include the dtrace header the build generates (Debian: --with-dtrace)

def test_dtrace_units_scanned_with_the_generated_header(debian311):
    t = debian311.table()
    reasons = dict(s.split(": ", 1) for s in t.skipped)
    dtrace_units = ("Python/ceval.c", "Python/import.c", "Python/sysmodule.c", "Modules/gcmodule.c")
    if shutil.which("dtrace") is None:
        for f in dtrace_units:
            assert "systemtap-sdt-dev" in reasons[f], reasons[f]
        missing_tool("dtrace", "make test installs systemtap-sdt-dev; without it the dtrace units are skipped")
    assert not set(dtrace_units) & set(reasons)
    assert t.structs["CallShape"].defined_in.startswith("Python/ceval.c:")
    assert t.structs["frozen_info"].defined_in.startswith("Python/import.c:")
    units = {u.name: u for u in sources.source_units(amd64_inputs(debian311))[0]}
    gen = [a[2:] for a in units["Python/ceval.c"].args if a.startswith("-I") and (Path(a[2:]) / "pydtrace_probes.h").is_file()]
    assert gen and not (debian311.tree / "Include/pydtrace_probes.h").exists()   # made in the cache, not the tree
    header = (Path(gen[-1]) / "pydtrace_probes.h").read_text()
    assert "#define PyDTrace_FUNCTION_ENTRY(" in header and "PYTHON_FUNCTION_ENTRY" not in header
    items, _ = probe.source_probes(t, amd64_inputs(debian311))
    wanted = [i for i in items if t.structs[i.struct].defined_in.split(":")[0] in dtrace_units]
    report = probe.probe_sources(t, amd64_inputs(debian311), wanted)
    assert report.mismatches == () and "CallShape.kwnames" in report.checked and "frozen_info.get_code" in report.checked


# --- 3.13: gcc probes the private structs of Objects/*.c (gcc needs the build's -std=c11)

def test_313_gcc_agrees_on_objects_structs(tree313):
    from offsets.layout.model import Build, Table, Target

    units = [u for u in sources.source_units(tree313)[0] if re.fullmatch(r"Objects/[^/]+\.c", u.name)]
    assert all("-std=c11" in u.args for u in units)          # configure.ac: CFLAGS_NODIST -std=c11 with gcc
    structs, _, _ = scanner.merge(scanner.parse_units(units, scanner.ScanOptions()))
    table = Table(build=Build(version=tree313.version, hexversion=tree313.hexversion, config={},
                              target=Target(tree313.target.triple, 8), inputs={}),
                  scanner={}, structs=structs)
    items, _ = probe.source_probes(table, tree313)
    wanted = [i for i in items if re.match(r"Objects/[^/]+\.c:", structs[i.struct].defined_in)]
    report = result_memo.probed("probe-313-objects", table, tree313, lambda: probe.probe_sources(table, tree313, wanted),
                                wanted)
    assert report.mismatches == () and report.structs >= 40
