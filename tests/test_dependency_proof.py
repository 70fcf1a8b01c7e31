"""Proof that the dependency sets (offsets/scan/depends.py) are right, from the compiler.

- The cut: a build scanned again with pyconfig.h cut down to the macros some set names gives the
  same structs and constants (check/depends_cut.py; libclang's layout of the cut build is the
  truth), and a set made too small is caught by it.
- The flips: macros outside every set, each flipped alone, change no offsetof/sizeof that gcc
  reports over the build's headers.
- The runtime: a build that differs in a macro of a struct's set has that struct refused, and gcc
  over that build's headers lays it out otherwise; one that differs in a macro of no set is exact
  for every struct, and gcc over its headers agrees with every one.

Never checked against depends.py's reasoning: the sets only choose what is cut or flipped.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import result_memo
import runtime_child
from runtime_child import copy_of, run_runtime
from conftest import missing_input
from offsets.check import depends_cut, probe
from offsets.errors import BuildError, FetchError
from offsets.layout import identity
from offsets.tools import foreign_builds, matrix

#: make test's sample of `make tables`' cut (every table there): two pyenv builds' headers. A Debian
#: build with its source tree (its .c files' structs too, a whole scan of the cut build: a CPU-minute
#: and more cold) is `make prove`'s (tests/prove/test_dependency_cut_source.py).
CUT_SAMPLE = ("pyenv 3.12.1", "pyenv 3.9.18")


def _inputs(label: str):
    try:
        return matrix.select(label)[0].inputs()
    except (BuildError, FetchError) as e:
        missing_input(f"{label}: {e}")


def _cut_report(label: str, monkeypatch, pyenv_scans) -> depends_cut.Report:
    """The cut of `label`'s build, remembered (tests/result_memo.py) under the package, libclang and
    every input of the build and of both its scans."""
    b = _inputs(label)
    key = result_memo.key_of("depends-cut", label, *result_memo.inputs_key(b))
    doc = result_memo.recall(key)
    if doc is None:
        files = result_memo.spy_files_read(monkeypatch)
        if label.startswith("pyenv "):
            table = pyenv_scans.get(label.split()[1].rsplit(".", 1)[0])[2]
        else:
            from offsets.scan import scanner

            table = scanner.scan(b, scanner.ScanOptions(progress=None))
        report = depends_cut.check(table, b)
        doc = dict(dataclasses.asdict(report), with_sets=sum(s.depends is not None for s in table.structs.values()),
                   pyconfig=sorted(n for n, v in identity.pyconfig_values(b.pyconfig.read_text()).items()
                                   if v is not None))
        if report.same:
            result_memo.remember(key, files, doc)
    with_sets, defined = doc.pop("with_sets"), doc.pop("pyconfig")
    report = depends_cut.Report(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()})
    return report, with_sets, defined


@pytest.mark.slow
@pytest.mark.parametrize("label", CUT_SAMPLE)
def test_a_pyconfig_cut_to_the_sets_gives_the_same_structs_and_constants(label, monkeypatch, pyenv_scans):
    cut_gives_the_same(label, monkeypatch, pyenv_scans)


def cut_gives_the_same(label: str, monkeypatch, pyenv_scans) -> None:
    report, with_sets, defined = _cut_report(label, monkeypatch, pyenv_scans)
    print(f"\n{label}: {report.line()}; restored: {', '.join(report.restored) or 'none'}; "
          f"{len(report.only_cut)} structs only the cut build has")
    assert report.same, "\n".join(report.mismatches)
    assert report.structs == with_sets > 100 and report.fields > 1000 and report.constants > 500
    # the cut is a real one: most macros go; of the headers', those an older C library lacks too
    assert len(report.dropped) > len(report.kept) + len(report.restored)
    if label.startswith("pyenv"):
        assert {m for m in foreign_builds.OLD_LIBC_MACROS if m in defined} <= set(report.dropped)


@pytest.mark.slow
def test_the_cut_finds_a_set_made_too_small(pyenv_scans):
    """The same check on 3.12.1's table with PY_HAVE_PERF_TRAMPOLINE taken out of every set: the cut
    drops it, and libclang lays out _ceval_runtime_state (and _PyRuntimeState, which holds it) otherwise."""
    exe, b, table = pyenv_scans.get("3.12")
    gone = "PY_HAVE_PERF_TRAMPOLINE"
    assert gone in table.structs["_ceval_runtime_state"].depends.macros

    def smaller(d):
        return None if d is None else dataclasses.replace(d, macros=tuple(m for m in d.macros if m != gone))

    small = dataclasses.replace(
        table, structs={k: dataclasses.replace(s, depends=smaller(s.depends)) for k, s in table.structs.items()},
        dependencies=dataclasses.replace(table.dependencies, constants={
            f: smaller(d) for f, d in table.dependencies.constants.items()}))
    report = depends_cut.check(small, b)
    assert gone in report.dropped and not report.same
    named = {m.split(":", 1)[0] for m in report.mismatches}
    assert {"_ceval_runtime_state", "_PyRuntimeState"} <= named, report.mismatches


def test_the_cut_keeps_the_sets_macros_and_pyconfigs_guard():
    text = ("#ifndef Py_PYCONFIG_H\n#define Py_PYCONFIG_H\n/* #undef HAVE_X */\n#define HAVE_A 1\n"
            "#ifndef _ALL_SOURCE\n# define _ALL_SOURCE 1\n#endif\n#define LONG_ONE (1 + \\\n  2)\n"
            "#define SIZEOF_INT 4\n#endif\n")
    c = depends_cut.cut(text, {"SIZEOF_INT", "_ALL_SOURCE"})
    assert c.kept == ("Py_PYCONFIG_H", "SIZEOF_INT", "_ALL_SOURCE") and c.dropped == ("HAVE_A", "LONG_ONE")
    assert c.text == ("#ifndef Py_PYCONFIG_H\n#define Py_PYCONFIG_H\n/* #undef HAVE_X */\n"
                      "#ifndef _ALL_SOURCE\n# define _ALL_SOURCE 1\n#endif\n#define SIZEOF_INT 4\n#endif\n")
    assert identity.pyconfig_values(c.text) == {"Py_PYCONFIG_H": "", "HAVE_X": None, "_ALL_SOURCE": "1",
                                                "SIZEOF_INT": "4"}


# ---------------------------------------------------------------------------------------------
# Flipping macros outside every set: gcc's offsetof/sizeof over the flipped headers

#: Macros flipped per kind: five kinds, so 25 per build.
PER_KIND = 5
_INTEGER = re.compile(r"-?\d+")


def _kind(name: str, value) -> str:
    if value is None:
        return "undefined"
    if value in ("1", "") and re.fullmatch(r"HAVE_\w+_H", name):
        return "header"
    if value in ("1", "") and name.startswith("HAVE_"):
        return "function"
    return "flag" if value in ("1", "") else "value"


def flip_sample(pyconfig_text: str, in_sets: set) -> list:
    """(macro, kind) of the sample: the pyconfig.h macros that no set names, by kind (a header's
    HAVE_*_H, another HAVE_* (functions, types, members), another flag, a value, one configure
    left undefined), each kind's names sorted and PER_KIND of them taken at even steps from the
    first to the last. Sorted and stepped so that the sample is the same on every run, spread over
    the alphabet rather than the first few names, and covers each way a macro can act on the
    headers: an #include, a declaration, an #if on a value, an #ifdef on a name left undefined."""
    values = identity.pyconfig_values(pyconfig_text)
    kinds: dict = {}
    # left out: configure's stand-ins for C words and types a C library lacks (`/* #undef uid_t */`,
    # `inline`, `const`): defined where the C library has them, they are no build configure makes
    for name in sorted(n for n in values if n not in in_sets and not n[0].islower()):
        kinds.setdefault(_kind(name, values[name]), []).append(name)
    out = []
    for kind in ("header", "function", "flag", "value", "undefined"):
        names = kinds.get(kind, [])
        step = (len(names) - 1) / (PER_KIND - 1)
        out += [(names[round(i * step)], kind) for i in range(min(PER_KIND, len(names)))]
    return out


def flipped_text(text: str, name: str, kind: str) -> str:
    """`text` with `name` flipped: a defined flag undefined, an undefined one defined as 1, a value
    another plausible one (an integer halved, 0 and 1 swapped; a string empty; anything else undefined)."""
    define = re.compile(rf"^[ \t]*#[ \t]*define[ \t]+{name}\b[^\n]*\n", re.M)
    if kind == "undefined":
        out, count = re.subn(rf"^/\*[ \t]*#[ \t]*undef[ \t]+{name}[ \t]*\*/", f"#define {name} 1", text, flags=re.M)
        assert count == 1, f"{name} is listed {count} times as undefined"
        return out
    value = identity.pyconfig_values(text)[name]
    if kind == "value" and _INTEGER.fullmatch(value):
        n = int(value)
        new = str(1 - n if n in (0, 1) else n // 2)
    elif kind == "value" and value.startswith('"'):
        new = '""'
    else:
        new = None
    out, count = define.subn("" if new is None else f"#define {name} {new}\n", text)
    assert count == 1, f"{name} is defined {count} times"
    return out


#: The builds whose pyconfig.h macros outside every set are flipped: `make test` the first, `make
#: prove` the others (tests/prove/test_beyond_samples.py).
FLIPPED, FLIPPED_SAMPLE = ("3.9", "3.12"), ("3.9",)


@pytest.mark.slow
@pytest.mark.parametrize("minor", FLIPPED_SAMPLE)
def test_flipping_a_macro_outside_every_set_changes_no_layout(pyenv_scans, minor):
    exe, b, table = pyenv_scans.get(minor)
    text = b.pyconfig.read_text()
    sample = flip_sample(text, depends_cut.macros(table))
    assert len(sample) >= 20 and {k for _, k in sample} == {"header", "function", "flag", "value", "undefined"}
    headers = probe.header_structs(table)
    for name, kind in sample:
        fb = depends_cut.with_pyconfig(b, flipped_text(text, name, kind))
        assert identity.pyconfig_values(fb.pyconfig.read_text()).get(name) != identity.pyconfig_values(text).get(name)
        report = result_memo.probed(f"flip {name}", table, fb, lambda: probe.probe_headers(table, fb), name, kind)
        assert not report.mismatches, f"{name} ({kind}) flipped: " + "; ".join(map(str, report.mismatches[:5]))
        assert report.structs == len(headers) and report.fields == sum(len(s.fields) for s in headers)
    print(f"\n{table.build.version}: {len(sample)} flips, gcc saw no layout change: "
          + ", ".join(f"{n} ({k})" for n, k in sample))


def test_a_cut_copy_leaves_the_interpreter_s_headers_untouched(pyenv_scans, tmp_path, monkeypatch):
    """The copy a cut or flip scans holds pyenv's headers copied, not hard-linked: a link changes the
    linked file's ctime, on which the runtime's digest memo of installed headers is keyed
    (identity.installed_inputs), so an interpreter described meanwhile missed its memo (a second
    describe of pyenv 3.12 wrote again while the 3.12 flips ran on the other worker)."""
    exe, b, table = pyenv_scans.get("3.12")
    inc = Path(b.include_dir)
    before = {p: (st.st_ctime_ns, st.st_nlink) for p in inc.rglob("*") if p.is_file() for st in [p.stat()]}
    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path / "cache"))
    fb = depends_cut.with_pyconfig(b, b.pyconfig.read_text() + "\n#define OFFSETS_TEST_MACRO 1\n")
    copied = [p for p in Path(fb.include_dir).rglob("*") if p.is_file()]
    assert len(copied) == len(before) > 100
    assert {p: (st.st_ctime_ns, st.st_nlink) for p in inc.rglob("*") if p.is_file() for st in [p.stat()]} == before
    assert all(p.stat().st_nlink == 1 for p in copied)


# ---------------------------------------------------------------------------------------------
# The runtime alone on a copy of pyenv 3.12.1 (another build-id) whose pyconfig.h lacks one macro

@pytest.fixture(scope="module")
def own_312(pyenv_scans, tmp_path_factory):
    return runtime_child.own_table(pyenv_scans, tmp_path_factory, "3.12")


@pytest.mark.slow
def test_a_macro_of_a_structs_set_flipped_makes_it_not_exact(own_312, tmp_path):
    table, tables_dir = own_312
    gone = "PY_HAVE_PERF_TRAMPOLINE"
    python = copy_of(lambda: foreign_builds.variant("3.12.1", f"without-{gone.lower()}-own-id", drop=(gone,)))
    ask = {"structs": sorted(table.structs), "constants": [gone, "Py_TPFLAGS_HEAPTYPE"]}
    got = run_runtime(python, ask, tables_dir, tmp_path)
    assert got["build_id"] and got["kind"] == "exact" and "build-id" not in got["detail"]
    refused = sorted(n for n, how in got["structs"].items() if not how.startswith("exact"))
    assert {"_ceval_runtime_state", "_PyRuntimeState"} <= set(refused), refused
    for name in ("PyListObject", "PyThreadState", "PyInterpreterState", "PyTypeObject", "_PyRuntimeState"):
        want = "refused" if name in refused else "exact"
        assert got["structs"][name].split(" ")[0] == want, (name, got["structs"][name])
    assert got["constants"] == {gone: "refused", "Py_TPFLAGS_HEAPTYPE": "exact"}
    # gcc over the copy's headers: what the runtime refused is laid out otherwise there (or is not
    # there at all), and every struct it calls exact is as the table says
    b = runtime_child.inputs_of(python)
    assert gone not in identity.pyconfig_values(b.pyconfig.read_text())
    exact = [s for s in probe.header_structs(table) if s.name not in refused]
    report = probe.probe_headers(table, b, structs=exact)
    assert not report.mismatches and report.structs == len(exact) > 250, report.mismatches[:5]
    for name in ("_ceval_runtime_state", "_PyRuntimeState"):
        sized = probe.probe_headers(table, b, structs=[dataclasses.replace(table.structs[name], fields=())])
        assert [m.what for m in sized.mismatches] == ["size"], (name, sized.mismatches)
    for name in set(refused) - {"_ceval_runtime_state", "_PyRuntimeState"}:
        with pytest.raises(BuildError):      # not defined without the macro (trampoline_api_st)
            probe.probe_headers(table, b, structs=[dataclasses.replace(table.structs[name], fields=())])


@pytest.mark.slow
def test_a_macro_of_no_set_flipped_leaves_every_struct_exact(own_312, tmp_path):
    table, tables_dir = own_312
    gone = "HAVE_CLOSE_RANGE"
    assert gone not in depends_cut.macros(table)
    python = copy_of(lambda: foreign_builds.variant("3.12.1", f"without-{gone.lower()}-own-id", drop=(gone,)))
    ask = {"structs": sorted(table.structs), "constants": sorted(table.constants)}
    got = run_runtime(python, ask, tables_dir, tmp_path)
    assert set(got["structs"].values()) == {"exact"}
    assert {n for n, how in got["constants"].items() if how != "exact"} == {gone}   # it depends on itself
    report = probe.probe_headers(table, runtime_child.inputs_of(python))
    assert not report.mismatches and report.structs == len(probe.header_structs(table))
