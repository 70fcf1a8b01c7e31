"""`offsets export`: each language's output compiles without a warning and holds the
numbers gcc's `offsetof`/`sizeof` give over the build's own headers (pyenv's CPython 3.13.0:
headers installed, the table shipped); `--fields debug-offsets` holds what the running 3.13.0's
own `_Py_DebugOffsets` says. A table with one number altered makes the compiled check fail.

Truth: gcc over pyenv 3.13.0's headers, and that interpreter's `_PyRuntime.debug_offsets`.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import REPO, missing_input, missing_tool, pyenv_python
from offsets.cli import main
from offsets.export import export, items
from offsets.layout import table_yaml

TABLE = REPO / "generated" / "cpython-3.13.0-x86_64-linux-gnu.yaml"
#: What a stack reader of 3.13 needs, as STRUCT.FIELD (a STRUCT alone: its size).
FIELDS = ["PyThreadState.current_frame", "PyThreadState.interp", "PyThreadState.next", "PyThreadState.thread_id",
          "_PyInterpreterFrame.previous", "_PyInterpreterFrame.f_executable", "_PyInterpreterFrame.instr_ptr",
          "_PyInterpreterFrame.owner", "PyCodeObject.co_filename", "PyCodeObject.co_name",
          "PyCodeObject.co_linetable", "PyCodeObject.co_firstlineno", "PyCodeObject.co_code_adaptive",
          "PyASCIIObject.length", "PyASCIIObject", "_PyInterpreterFrame", "PyObject.ob_type"]
HEADERS = ["Python.h", "internal/pycore_frame.h", "internal/pycore_runtime.h", "internal/pycore_interp.h"]


@pytest.fixture(scope="module")
def py313():
    exe = pyenv_python("3.13")
    if exe is None:
        missing_input("pyenv has no CPython 3.13 (its headers are the truth here)")
    return exe


def gcc_truth(py313, tmp_path) -> dict:
    """name -> (offset, size) of FIELDS, as gcc compiles them over 3.13.0's headers."""
    include = py313.parent.parent / "include" / "python3.13"
    lines = ["#define Py_BUILD_CORE 1"] + [f'#include "{h}"' for h in HEADERS] + \
        ["#include <stdio.h>", "#include <stddef.h>", "int main(void) {"]
    for name in FIELDS:
        struct, _, path = name.partition(".")
        if path:
            lines.append(f'    printf("{name} %zu %zu\\n", offsetof({struct}, {path}), '
                         f'sizeof((({struct} *)0)->{path}));')
        else:
            lines.append(f'    printf("{name} 0 %zu\\n", sizeof({struct}));')
    lines += ["    return 0;", "}"]
    tmp_path.mkdir(exist_ok=True)
    src = tmp_path / "truth.c"
    src.write_text("\n".join(lines) + "\n")
    subprocess.run(["gcc", "-std=c11", "-I", str(include), str(src), "-o", str(tmp_path / "truth")], check=True)
    out = subprocess.run([str(tmp_path / "truth")], capture_output=True, text=True, check=True).stdout
    return {n: (int(o), int(s)) for n, o, s in (line.split() for line in out.splitlines())}


def member(name: str) -> tuple:
    struct, _, path = name.partition(".")
    return struct, path.replace(".", "__") if path else "size"


def c_check(table, py313, tmp_path) -> subprocess.CompletedProcess:
    """Compile (-Wall -Wextra -Werror) a program that includes the export and the real headers and
    compares every exported item with offsetof/sizeof; its run."""
    (tmp_path / "export.h").write_text(export([table], "c", ",".join(FIELDS)))
    include = py313.parent.parent / "include" / "python3.13"
    lines = ["#define Py_BUILD_CORE 1"] + [f'#include "{h}"' for h in HEADERS] + \
        ['#include "export.h"', "#include <stdio.h>", "#include <stddef.h>", "int main(void) {", "    int bad = 0;",
         "    const pyoffsets_layout *l = pyoffsets_by_hexversion(PY_VERSION_HEX);",
         '    if (!l) { puts("no layout of this version"); return 2; }']
    for name in FIELDS:
        struct, m = member(name)
        path = name.partition(".")[2]
        want_o = f"offsetof({struct}, {path})" if path else "0"
        want_s = f"sizeof((({struct} *)0)->{path})" if path else f"sizeof({struct})"
        lines.append(f"    if (l->{struct}.{m}.offset != {want_o} || l->{struct}.{m}.size != {want_s}) "
                     f'{{ printf("mismatch {name}: export %llu %llu\\n", (unsigned long long)l->{struct}.{m}.offset, '
                     f"(unsigned long long)l->{struct}.{m}.size); bad = 1; }}")
    lines += ["    return bad;", "}"]
    (tmp_path / "check.c").write_text("\n".join(lines) + "\n")
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(include), "-I", str(tmp_path),
                    str(tmp_path / "check.c"), "-o", str(tmp_path / "check")], check=True, capture_output=True)
    return subprocess.run([str(tmp_path / "check")], capture_output=True, text=True)


def test_the_c_header_compiles_cleanly_and_holds_what_gcc_says(py313, tmp_path):
    run = c_check(table_yaml.load(TABLE), py313, tmp_path)
    assert run.returncode == 0, run.stdout


def test_one_altered_number_fails_the_compiled_c_check(py313, tmp_path):
    t = table_yaml.load(TABLE)
    s = t.structs["_PyInterpreterFrame"]
    fields = tuple(replace(f, offset=f.offset + 8) if f.path == "previous" else f for f in s.fields)
    altered = replace(t, structs={**t.structs, "_PyInterpreterFrame": replace(s, fields=fields)})
    run = c_check(altered, py313, tmp_path)
    assert run.returncode == 1 and "mismatch _PyInterpreterFrame.previous" in run.stdout


def test_rust_compiles_without_warnings_and_holds_what_gcc_says(py313, tmp_path):
    if shutil.which("rustc") is None:
        missing_tool("rustc", "rustup, or Debian's rustc package")
    truth = gcc_truth(py313, tmp_path)
    (tmp_path / "export.rs").write_text(export([table_yaml.load(TABLE)], "rust", ",".join(FIELDS)))
    from offsets.export.lang_rust import snake

    prints = [f'    println!("{n} {{}} {{}}", l.{snake(member(n)[0])}.{snake(member(n)[1])}.offset, '
              f"l.{snake(member(n)[0])}.{snake(member(n)[1])}.size);" for n in FIELDS]
    (tmp_path / "main.rs").write_text("mod export;\nfn main() {\n    let l = export::by_hexversion(0x030d00f0)"
                                      ".unwrap();\n" + "\n".join(prints) + "\n}\n")
    build = subprocess.run(["rustc", "--edition", "2021", "-D", "warnings", str(tmp_path / "main.rs"), "-o",
                            str(tmp_path / "main")], capture_output=True, text=True, cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    out = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout
    assert {n: (int(o), int(s)) for n, o, s in (line.split() for line in out.splitlines())} == truth


def test_go_is_gofmt_formatted_vets_clean_and_holds_what_gcc_says(py313, tmp_path):
    if shutil.which("go") is None or shutil.which("gofmt") is None:
        missing_tool("go", "make test-venv installs Debian's golang-go")
    truth = gcc_truth(py313, tmp_path / "gcc")
    tmp_path = tmp_path / "go"
    pkg = tmp_path / "pyoffsets"
    pkg.mkdir(parents=True)
    (pkg / "pyoffsets.go").write_text(export([table_yaml.load(TABLE)], "go", ",".join(FIELDS)))
    assert subprocess.run(["gofmt", "-l", str(pkg)], capture_output=True, text=True, check=True).stdout == ""
    from offsets.export.lang_go import exported

    (tmp_path / "go.mod").write_text("module check\n\ngo 1.18\n")
    prints = [f'\tfmt.Println("{n}", l.{exported(member(n)[0])}.{exported(member(n)[1])}.Offset, '
              f"l.{exported(member(n)[0])}.{exported(member(n)[1])}.Size)" for n in FIELDS]
    (tmp_path / "main.go").write_text('package main\n\nimport (\n\t"check/pyoffsets"\n\t"fmt"\n)\n\nfunc main() {\n'
                                      "\tl := pyoffsets.ByHexversion(0x030d00f0)\n" + "\n".join(prints) + "\n}\n")
    env = {"GOCACHE": str(tmp_path / "gocache"), "GOPATH": str(tmp_path / "gopath"), "GOFLAGS": "-mod=mod",
           "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(tmp_path)}
    vet = subprocess.run(["go", "vet", "./..."], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert vet.returncode == 0, vet.stderr
    out = subprocess.run(["go", "run", "."], capture_output=True, text=True, cwd=tmp_path, env=env, check=True).stdout
    assert {n: (int(o), int(s)) for n, o, s in (line.split() for line in out.splitlines())} == truth


def test_json_holds_what_gcc_says(py313, tmp_path, capsys):
    truth = gcc_truth(py313, tmp_path)
    assert main(["export", "--lang", "json", "--fields", ",".join(FIELDS), str(TABLE)]) == 0
    doc = json.loads(capsys.readouterr().out)
    (lay,) = doc["layouts"]
    assert lay["version"] == "3.13.0" and lay["hexversion"] == "0x030d00f0"
    got = {n: tuple(lay["items"][".".join(member(n))].values()) for n in FIELDS}
    assert got == truth


def test_debug_offsets_export_is_what_the_running_interpreter_says(py313, capsys):
    """Every `_Py_DebugOffsets` member the export fills for 3.13.0, against the bytes of that
    interpreter's own `_PyRuntime.debug_offsets` (its first member), read with ctypes."""
    assert main(["export", "--lang", "json", "cpython-3.13.0-x86_64-linux-gnu"]) == 0
    (lay,) = json.loads(capsys.readouterr().out)["layouts"]
    t = table_yaml.load(TABLE)
    slots = {f.path: (f.offset, f.size) for f in t.structs["_Py_DebugOffsets"].fields if f.path.count(".") == 1}
    code = ("import ctypes, json, sys\nbase = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime'))\n"
            "slots = json.loads(sys.argv[1])\n"
            "print(json.dumps({k: int.from_bytes(ctypes.string_at(base + o, n), 'little')\n"
            "                  for k, (o, n) in slots.items()}))")
    live = json.loads(subprocess.run([str(py313), "-c", code, json.dumps(slots)], capture_output=True, text=True,
                                     check=True).stdout)
    from offsets.runtime.live.toolkit import debug_offsets

    kinds = {name: meaning[0] for name, meaning in debug_offsets().items()}
    compared = 0
    for name, item in lay["items"].items():
        if item is None or name not in live:
            continue
        assert (item["size"] if kinds[name] == "size" else item["offset"]) == live[name], name
        compared += 1
    assert compared >= 60     # the 3.13 members the table has (73 minus a few it lacks)


def test_refusals_are_one_line(capsys):
    assert main(["export", "--lang", "c", "cpython-9.9.9-x86_64-linux-gnu"]) == 2
    assert main(["export", "--lang", "c", "--fields", "block@Modules/x.c.leftlink", str(TABLE)]) == 2
    assert main(["export", str(TABLE)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(e.startswith("offsets: error: ") for e in err)
    assert "NAME@FILE" in err[1] and "--lang" in err[2]


def test_constants_compile_in_every_language(tmp_path):
    """Where tables carry constants, each language holds them per build, absent where a
    table lacks one. The values here are inputs of the emitters, not facts about CPython."""
    from types import SimpleNamespace

    t = table_yaml.load(TABLE)
    with_constants = SimpleNamespace(build=t.build, structs=t.structs, names=t.names,
                                     constants={"FRAME_OWNED_BY_CSTACK": SimpleNamespace(value=3)})
    without = table_yaml.load(REPO / "generated" / "cpython-3.11.7-x86_64-linux-gnu.yaml")   # 3.12 added it
    names = ("FRAME_OWNED_BY_CSTACK", "Py_TAG_BITS")
    c = export([with_constants, without], "c", "PyThreadState.interp", names)
    assert ".constants = {.FRAME_OWNED_BY_CSTACK = {1, 3}}" in c
    assert ".constants = {.FRAME_OWNED_BY_CSTACK = {0, 0}}" in c
    assert "#define PYOFFSETS_CPYTHON_3_13_0_X86_64_LINUX_GNU_FRAME_OWNED_BY_CSTACK (3)" in c
    assert "Py_TAG_BITS" not in c                   # no table has it: not exported at all
    (tmp_path / "export.h").write_text(c)
    (tmp_path / "main.c").write_text('#include "export.h"\n#include <stdio.h>\nint main(void) {\n    printf("%lld\\n", '
                                     "(long long)pyoffsets_layouts[0].constants.FRAME_OWNED_BY_CSTACK.value);\n"
                                     "    return 0;\n}\n")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", str(tmp_path / "main.c"), "-o",
                    str(tmp_path / "main")], check=True, cwd=tmp_path)
    assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True).stdout == "3\n"
    rust = export([with_constants, without], "rust", "PyThreadState.interp", names)
    assert "pub const FRAME_OWNED_BY_CSTACK: i64 = 3;" in rust and "frame_owned_by_cstack: None," in rust
    if shutil.which("rustc"):
        (tmp_path / "export.rs").write_text(rust)
        (tmp_path / "main.rs").write_text("mod export;\nfn main() {\n    println!(\"{:?}\", "
                                          "export::LAYOUTS[0].constants.frame_owned_by_cstack);\n}\n")
        build = subprocess.run(["rustc", "--edition", "2021", "-D", "warnings", "main.rs"], capture_output=True,
                               text=True, cwd=tmp_path)
        assert build.returncode == 0, build.stderr
        assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True).stdout == "Some(3)\n"
    go = export([with_constants, without], "go", "PyThreadState.interp", names)
    assert 'map[string]int64{"FRAME_OWNED_BY_CSTACK": 3},' in go and 'map[string]int64{},' in go
    if shutil.which("gofmt"):
        (tmp_path / "g").mkdir()
        (tmp_path / "g" / "p.go").write_text(go)
        assert subprocess.run(["gofmt", "-l", str(tmp_path / "g")], capture_output=True, text=True).stdout == ""


#: 3.13.5's builds a lookup by version must tell apart: upstream's and Debian's release (the same
#: items), Debian's debug and 32-bit x86 builds, and python.org's Windows x64 build.
SAME_VERSION = ["cpython-3.13.5-x86_64-linux-gnu", "cpython-3.13.5-debian-x86_64-linux-gnu",
                "cpython-3.13.5-debian-debug-x86_64-linux-gnu", "cpython-3.13.5-debian-i686-linux-gnu",
                "cpython-3.13.5-x86_64-pc-windows-msvc"]
#: (hexversion, triple, config) looked up, and by hexversion alone (triple None)
ASKED = [(0x030d05f0, "x86_64-linux-gnu", "release"), (0x030d05f0, "x86_64-linux-gnu", "debug"),
         (0x030d05f0, "i686-linux-gnu", "release"), (0x030d05f0, "x86_64-pc-windows-msvc", "release"),
         (0x030d05f0, "x86_64-linux-gnu", "freethreaded"), (0x030d04f0, "x86_64-linux-gnu", "release"),
         (0x030d05f0, None, None)]
ITEM = "PyThreadState.current_frame,_PyInterpreterFrame,PyObject.ob_type"


def _answers(tables: list, lang: str, tmp_path) -> list:
    """The table each lookup of ASKED answers (None for none), from a compiled program in `lang`."""
    text = export(tables, lang, ITEM)
    tmp_path.mkdir(parents=True, exist_ok=True)
    if lang == "c":
        calls = [f'pyoffsets_by_version({h:#x}u, "{t}", "{c}")' if t else f"pyoffsets_by_hexversion({h:#x}u)"
                 for h, t, c in ASKED]
        (tmp_path / "export.h").write_text(text)
        (tmp_path / "main.c").write_text('#include "export.h"\n#include <stdio.h>\nint main(void) {\n'
                                         "    const pyoffsets_layout *l;\n" + "".join(
                                             f'    l = {call}; puts(l ? l->table : "-");\n' for call in calls)
                                         + "    return 0;\n}\n")
        subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "main.c", "-o", "main"], check=True,
                       cwd=tmp_path)
        run = [str(tmp_path / "main")]
    elif lang == "rust":
        if shutil.which("rustc") is None:
            missing_tool("rustc", "rustup, or Debian's rustc package")
        calls = [f'export::by_version({h:#x}, "{t}", "{c}")' if t else f"export::by_hexversion({h:#x})"
                 for h, t, c in ASKED]
        (tmp_path / "export.rs").write_text(text)
        (tmp_path / "main.rs").write_text("mod export;\nfn main() {\n" + "".join(
            f'    println!("{{}}", {call}.map_or("-", |l| l.table));\n' for call in calls) + "}\n")
        build = subprocess.run(["rustc", "--edition", "2021", "-D", "warnings", "main.rs"], capture_output=True,
                               text=True, cwd=tmp_path)
        assert build.returncode == 0, build.stderr
        run = [str(tmp_path / "main")]
    else:
        if shutil.which("go") is None:
            missing_tool("go", "make test-venv installs Debian's golang-go")
        calls = [f'pyoffsets.ByVersion({h:#x}, "{t}", "{c}")' if t else f"pyoffsets.ByHexversion({h:#x})"
                 for h, t, c in ASKED]
        (tmp_path / "pyoffsets").mkdir()
        (tmp_path / "pyoffsets" / "pyoffsets.go").write_text(text)
        (tmp_path / "go.mod").write_text("module check\n\ngo 1.18\n")
        (tmp_path / "main.go").write_text('package main\n\nimport (\n\t"check/pyoffsets"\n\t"fmt"\n)\n\n'
                                          "func name(l *pyoffsets.Layout) string {\n\tif l == nil {\n"
                                          '\t\treturn "-"\n\t}\n\treturn l.Table\n}\n\nfunc main() {\n'
                                          + "".join(f"\tfmt.Println(name({call}))\n" for call in calls) + "}\n")
        env = {"GOCACHE": str(tmp_path / "gocache"), "GOPATH": str(tmp_path / "gopath"), "GOFLAGS": "-mod=mod",
               "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(tmp_path)}
        subprocess.run(["go", "build", "-o", "main", "."], check=True, cwd=tmp_path, env=env)
        run = [str(tmp_path / "main")]
    out = subprocess.run(run, capture_output=True, text=True, check=True).stdout.split()
    return [None if o == "-" else o for o in out]


@pytest.mark.parametrize("lang", ["c", "rust", "go"])
def test_a_lookup_by_version_answers_only_the_layout_every_build_of_its_key_has(lang, tmp_path):
    """By version, triple and config, each build kind gets its own layout, and nothing answers a
    config or version no table exported; by hexversion alone, 3.13.5 gets nothing, since its
    debug, 32-bit and Windows builds differ. Upstream's and Debian's release builds for x86_64 share
    the key: the lookup answers only because they have the same items (checked here on the tables)."""
    tables = [table_yaml.load(REPO / "generated" / f"{n}.yaml") for n in SAME_VERSION]
    upstream, debian = (items.layout_of(t, items.items_of(ITEM)) for t in tables[:2])
    assert upstream.values == debian.values
    assert _answers(tables, lang, tmp_path) == [SAME_VERSION[0], SAME_VERSION[2], SAME_VERSION[3], SAME_VERSION[4],
                                                None, None, None]


@pytest.mark.parametrize("lang", ["c", "rust", "go"])
def test_a_lookup_by_version_refuses_where_two_builds_of_its_key_differ(lang, tmp_path):
    """The case the rule must refuse: two builds of the same version, triple and config whose
    items differ (here another vendor's copy of upstream's 3.13.5 with one offset moved). Neither
    is answered by version, each still by its build-id; alone, each is answered by version."""
    t = table_yaml.load(REPO / "generated" / "cpython-3.13.5-x86_64-linux-gnu.yaml")
    s = t.structs["PyThreadState"]
    fields = tuple(replace(f, offset=f.offset + 8) if f.path == "current_frame" else f for f in s.fields)
    other = replace(t, build=replace(t.build, vendor="patched 3.13.5-1"),
                    structs={**t.structs, "PyThreadState": replace(s, fields=fields)})
    assert other.build.table_name != t.build.table_name
    got = _answers([t, other], lang, tmp_path / "both")
    assert got[0] is None and got[-1] is None
    assert _answers([other], lang, tmp_path / "alone")[0] == other.build.table_name
