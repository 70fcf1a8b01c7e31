"""`offsets diff`, `history` and `check` end to end on the committed tables and the pyenv builds.

`test_check_pyenv_build` is how CI (`.ci/run` -> `make test`) checks that every committed table of
a pyenv build is what a rescan of that build gives today.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import dwarf_fields, missing_input, pyenv_dwarf, pyenv_python3
from offsets.cli import main

REPO = Path(__file__).parent.parent
GENERATED = REPO / "generated"


def table_path(version):
    path = GENERATED / f"cpython-{version}-x86_64-linux-gnu.yaml"
    if not path.exists():
        missing_input(f"{path.name} is not committed")
    return path


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def offsets(*args):
    proc = subprocess.run([sys.executable, "-m", "offsets", *map(str, args)], capture_output=True, text=True)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def pyenv_versions():
    try:
        out = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout.split()
    except FileNotFoundError:
        return []
    return [v for v in out if re.fullmatch(r"\d+\.\d+\.\d+", v)]


def altered(tmp_path, version="3.12.1", struct="PyListObject", field="allocated", new_offset=24):
    """A copy of a committed table with one field's offset changed in the YAML text."""
    text = table_path(version).read_text()
    block = re.search(rf"^  {struct}:\n(?:    .*\n)+", text, re.M)
    line = re.search(rf"^      {field}: {{offset: (\d+),", block.group(0), re.M)
    start = block.start() + line.start(1)
    out = tmp_path / f"cpython-{version}-x86_64-linux-gnu.yaml"
    out.write_text(text[:start] + str(new_offset) + text[block.start() + line.end(1):])
    return out, int(line.group(1))


# -- diff ----------------------------------------------------------------------------------------

def test_diff_table_with_itself_is_empty(capsys):
    t = table_path("3.12.1")
    assert run(capsys, "diff", t, t) == (
        0, "CPython 3.12.1 (release, x86_64-linux-gnu) -> CPython 3.12.1 (release, x86_64-linux-gnu)\nno drift\n", "")
    code, out, _ = run(capsys, "diff", t, t, "--format", "json")
    assert code == 0 and json.loads(out)["changes"] == [] and json.loads(out)["drift"] is False


def test_diff_hand_altered_copy_is_caught(tmp_path, capsys):
    copy, was = altered(tmp_path)
    assert was == 32
    code, out, err = run(capsys, "diff", table_path("3.12.1"), copy)
    assert (code, err) == (1, "")
    assert out == ("CPython 3.12.1 (release, x86_64-linux-gnu) -> CPython 3.12.1 (release, x86_64-linux-gnu)\n"
                   "PyListObject\n  ~ allocated: moved: offset 32 -> 24\n1 change(s) in 1 struct(s)\n")
    code, out, _ = run(capsys, "diff", table_path("3.12.1"), copy, "--format", "github")
    assert code == 1 and out.splitlines()[0] == \
        "::error title=offsets%3A CPython 3.12.1 -> 3.12.1::PyListObject.allocated: moved: offset 32 -> 24"


def test_diff_watch_verdicts_on_real_tables(tmp_path, capsys):
    watch = tmp_path / "jit.txt"
    watch.write_text("# what the JIT reads\nPyObject.ob_refcnt\nPyObject.ob_type\nPyListObject.ob_item\n")
    old, new = table_path("3.11.7"), table_path("3.12.1")
    code, out, _ = run(capsys, "diff", old, new, "--watch", watch)
    assert code == 0
    assert out.splitlines()[1:] == [
        "no drift in the 3 watched name(s); " + out.split("; ")[1].rstrip("\n")]
    assert re.fullmatch(r"\d+ other change\(s\) not watched", out.split("; ")[1].strip())
    watch.write_text("PyFrameObject.f_back\n_PyInterpreterFrame.f_code  # moved to the front in 3.12\n")
    code, out, _ = run(capsys, "diff", table_path("3.10.13"), old, "--watch", watch, "--format", "markdown")
    assert code == 1
    # the numbers: the DWARF of pyenv's libpython3.10 and 3.11 (gcc's record), not the tables
    back = [dwarf_fields(v, "PyFrameObject")["f_back"].offset for v in ("3.10.13", "3.11.7")]
    frame = pyenv_dwarf("3.11.7").structs["_PyInterpreterFrame"]
    assert f"| ~ | `PyFrameObject` | `f_back` | moved: offset {back[0]} -> {back[1]} |" in out.splitlines()
    assert f"| + | `_PyInterpreterFrame` |  | struct added ({frame.size} bytes, align {frame.align}) |" in out.splitlines()
    code, out, _ = run(capsys, "diff", old, new, "--watch", watch, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["watch"] == ["PyFrameObject.f_back", "_PyInterpreterFrame.f_code"]
    code_at = [dwarf_fields(v, "_PyInterpreterFrame")["f_code"].offset for v in ("3.11.7", "3.12.1")]
    assert [(c["kind"], c["field"], c["old"], c["new"]) for c in doc["changes"] if c["watched"]
            and c["field"] == "f_code"] == [("moved", "f_code", *code_at)]


def test_diff_errors_exit_2(tmp_path, capsys):
    watch = tmp_path / "jit.txt"
    watch.write_text("PyObject.ob_type\nPyListObject.ob_iten\n")
    t = table_path("3.12.1")
    code, out, err = run(capsys, "diff", t, t, "--watch", watch)
    assert (code, out) == (2, "")
    assert err == (f"offsets: error: unknown name 'PyListObject.ob_iten' in {watch} line 2 (neither CPython "
                   "3.12.1 nor 3.12.1 has it); did you mean PyListObject.ob_item, PyListObject.ob_base?\n")
    assert run(capsys, "diff", t, t, "--python", sys.executable)[0] == 2
    code, _, err = run(capsys, "diff", tmp_path / "missing.yaml", t)
    assert code == 2 and "cannot read table" in err


def test_diff_against_a_build_scanned_on_the_fly(capsys):
    py = pyenv_python3("3.12.1")
    if py is None:
        missing_input("no pyenv 3.12.1")
    code, out, err = run(capsys, "diff", table_path("3.11.7"), "--python", py, "--format", "json")
    doc = json.loads(out)
    assert doc["new"]["version"] == "3.12.1" and code == 1
    assert [c for c in doc["changes"] if c["struct"] == "PyObject"] == [
        {"kind": "field-added", "struct": "PyObject", "old_struct": "PyObject", "field": "ob_refcnt_split",
         "old": None, "new": {"offset": 0, "size": 8, "type": "uint32_t[2]", "array_len": 2}, "drift": True,
         "watched": True, "message": "PyObject.ob_refcnt_split: added (offset 0, size 8, uint32_t[2])"}]


# -- history -------------------------------------------------------------------------------------

@pytest.fixture
def tables_dir(tmp_path):
    d = tmp_path / "tables"
    d.mkdir()
    for v in ("3.10.13", "3.11.7", "3.12.1", "3.13.0"):
        (d / table_path(v).name).symlink_to(table_path(v))
    return d


def history_row(version, changed, field=None, note=""):
    """A `history` row, its numbers from the DWARF of pyenv's libpython `version` (not the tables)."""
    mark = "*" if changed else " "
    if field is None:
        return f" {mark} {version:<7}  -" + (f"      ({note})" if note else "")
    return f" {mark} {version:<7}  offset {field.offset:>4}  size {field.size:>3}  {field.type}" + (f"  ({note})" if note else "")


def test_history_of_a_field(tables_dir, capsys):
    f = {v: dwarf_fields(v, "PyFrameObject")["f_back"] for v in ("3.10.13", "3.11.7", "3.12.1", "3.13.0")}
    assert (f["3.10.13"].offset, f["3.10.13"].type) != (f["3.11.7"].offset, f["3.11.7"].type)
    assert f["3.11.7"] == f["3.12.1"] == f["3.13.0"]
    change = (f"offset {f['3.10.13'].offset} -> {f['3.11.7'].offset}, "
              f"type {f['3.10.13'].type} -> {f['3.11.7'].type}")
    assert run(capsys, "history", "PyFrameObject.f_back", "--tables", tables_dir) == (0, "\n".join([
        "PyFrameObject.f_back: offset and size in 4 tables (* = changed from the version above)",
        "release x86_64-linux-gnu",
        history_row("3.10.13", False, f["3.10.13"]),
        history_row("3.11.7", True, f["3.11.7"], change),
        history_row("3.12.1", False, f["3.12.1"]),
        history_row("3.13.0", False, f["3.13.0"])]) + "\n", "")


def test_history_of_a_struct_and_of_an_alias(tables_dir, capsys):
    size = {v: pyenv_dwarf(v).structs["PyFrameObject"].size for v in ("3.10.13", "3.11.7", "3.12.1", "3.13.0")}
    rows, before = [], None
    for v, s in size.items():
        rows.append(f" {'*' if before not in (None, s) else ' '} {v:<7}  size {s:>4}"
                    + (f"  (size {before} -> {s})" if before not in (None, s) else ""))
        before = s
    assert run(capsys, "history", "PyFrameObject", "--tables", tables_dir)[1] == "\n".join([
        "PyFrameObject: size of the struct in 4 tables (* = changed from the version above)",
        "release x86_64-linux-gnu", *rows]) + "\n"
    assert [r[1] for r in rows] == [" ", "*", " ", "*"]   # 3.11 shrank it, 3.13 grew it
    code, out, _ = run(capsys, "history", "_PyInterpreterFrame.f_code", "--tables", tables_dir)
    f = {v: dwarf_fields(v, "_PyInterpreterFrame").get("f_code") for v in ("3.11.7", "3.12.1", "3.13.0")}
    assert "_PyInterpreterFrame" not in pyenv_dwarf("3.10.13").structs
    assert f["3.13.0"] is None   # 3.13 made it `PyObject *f_executable`
    assert code == 0 and out.splitlines()[2:] == [
        history_row("3.10.13", False),
        history_row("3.11.7", True, f["3.11.7"], "appears"),
        history_row("3.12.1", True, f["3.12.1"], f"offset {f['3.11.7'].offset} -> {f['3.12.1'].offset}"),
        history_row("3.13.0", True, None, "gone")]
    code, out, err = run(capsys, "history", "PyFrameObject.f_bak", "--tables", tables_dir)
    assert (code, out) == (2, "") and "did you mean PyFrameObject.f_back" in err


# -- check ---------------------------------------------------------------------------------------

PYENV_BUILDS = [v for v in pyenv_versions() if (GENERATED / f"cpython-{v}-x86_64-linux-gnu.yaml").exists()]
#: The builds `make test` rescans (the oldest and the newest); `make prove` the others
#: (tests/prove/test_beyond_samples.py)
PYENV_BUILDS_SAMPLE = sorted({PYENV_BUILDS[0], PYENV_BUILDS[-1]}) if PYENV_BUILDS else []


@pytest.mark.slow
@pytest.mark.parametrize("version", PYENV_BUILDS_SAMPLE or ["none"])
def test_check_pyenv_build(version, capsys):
    """CI's stale-table check: rescan the build, compare with generated/ byte for byte (in this
    process, whose tables are read once: tests/table_memo.py)."""
    if version == "none":
        missing_input("pyenv has none of the CPython builds generated/ has x86_64 tables for")
    code, out, err = run(capsys, "check", "--baseline", GENERATED, "--python", pyenv_python3(version), "-j", "1")
    assert (code, err) == (0, ""), f"{out}\n{err}"
    assert out == f"{GENERATED / f'cpython-{version}-x86_64-linux-gnu.yaml'}: up to date\n"


@pytest.mark.slow
def test_check_catches_a_stale_or_missing_table(tmp_path):
    py = pyenv_python3("3.12.1")
    if py is None:
        missing_input("no pyenv 3.12.1")
    copy, _ = altered(tmp_path)
    code, out, err = offsets("check", "--baseline", tmp_path, "--python", py, "-j", "1")
    assert code == 1
    assert "PyListObject\n  ~ allocated: moved: offset 24 -> 32\n" in out
    assert err.startswith(f"offsets: error: {copy} is stale: 1 layout change(s)") and err.count("\n") == 1
    copy.unlink()
    code, out, err = offsets("check", "--baseline", tmp_path, "--python", py, "-j", "1")
    assert (code, out) == (1, "")
    assert err == (f"offsets: error: no committed table {copy} for CPython 3.12.1 (release, x86_64-linux-gnu): "
                   "run `make tables` and commit it\n")


# -- check on the golden fixture (a scan takes a moment): each branch -----------------------------

FAKE = REPO / "tests" / "fixtures" / "fakepy"
FAKE_BUILD = ("--prefix", FAKE, "--target", "x86_64-linux-gnu", "-j", "1")


@pytest.fixture
def fake_baseline(tmp_path):
    """A baseline directory holding the fixture's table under the name `check` looks for."""
    from offsets.layout import table_yaml

    scanned = tmp_path / "scan.yaml"
    assert offsets("scan", "-q", *FAKE_BUILD, "-o", scanned)[0] == 0
    base = tmp_path / "baseline"
    base.mkdir()
    path = base / f"{table_yaml.load(scanned).build.table_name}.yaml"
    scanned.rename(path)
    return path


def test_check_branches_on_the_fixture(fake_baseline):
    base, path = fake_baseline.parent, fake_baseline
    good = path.read_text()
    assert offsets("check", "--baseline", base, *FAKE_BUILD) == (0, f"{path}: up to date\n", "")
    # not the layout: a digest of the inputs and a definition line; the unified diff shows both lines
    digest = re.search(r"pyconfig_h: \"?(sha256:\w+)", good).group(1)
    line = re.search(r"defined_in: \"?(Include/[^\":]+:)(\d+)", good)
    stale = good.replace(digest, "sha256:" + "0" * 64).replace(line[0], line[0][:-len(line[2])] + str(int(line[2]) + 1), 1)
    path.write_text(stale)
    code, out, err = offsets("check", "--baseline", base, *FAKE_BUILD)
    assert code == 1 and out.startswith(f"--- {path}\n+++ rescan\n@@ ")
    changed = [ln for ln in out.splitlines() if ln[:1] in "-+" and not ln.startswith(("---", "+++"))]
    assert [ln[0] for ln in changed] == ["-", "+", "-", "+"]
    assert "sha256:" + "0" * 64 in changed[0] and digest in changed[1] and digest not in changed[0]
    assert f"{line[1]}{int(line[2]) + 1}" in changed[2] and f"{line[1]}{line[2]}" in changed[3]
    assert err == (f"offsets: error: {path} is stale: no layout change; differs in build inputs, definition lines; "
                   "run `make tables` and commit the result\n")
    # the layout: a field moved, reported as a change, not as text
    moved = re.sub(r"(\n      ob_type: \{offset: )8,", r"\g<1>0,", good, count=1)
    assert moved != good
    path.write_text(moved)
    code, out, err = offsets("check", "--baseline", base, *FAKE_BUILD)
    assert code == 1 and "  ~ ob_type: moved: offset 0 -> 8\n" in out and "+++" not in out
    assert err.startswith(f"offsets: error: {path} is stale: 1 layout change(s)") and err.count("\n") == 1


def test_diff_colour(fake_baseline, tmp_path):
    """--color always/never; auto colours a terminal unless NO_COLOR is set, and never a pipe."""
    import os
    import pty

    moved = tmp_path / "moved.yaml"
    moved.write_text(re.sub(r"(\n      ob_type: \{offset: )8,", r"\g<1>0,", fake_baseline.read_text(), count=1))
    args = ("diff", fake_baseline, moved)
    plain = "  ~ ob_type: moved: offset 8 -> 0\n"
    painted = "  \033[33m~\033[0m ob_type: moved: offset 8 -> 0\n"

    def on_terminal(*extra, env=None):
        """stdout of `offsets diff` on a pseudo-terminal."""
        main_fd, tty = pty.openpty()
        proc = subprocess.run([sys.executable, "-m", "offsets", *map(str, args), *extra], stdout=tty,
                              stderr=subprocess.PIPE, env=env or dict(os.environ), text=True)
        os.close(tty)
        chunks = []
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(main_fd)
        assert proc.returncode == 1, proc.stderr
        return b"".join(chunks).decode().replace("\r\n", "\n")

    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    for extra, want in ((("--color", "always"), painted), (("--color", "never"), plain), ((), plain)):
        proc = subprocess.run([sys.executable, "-m", "offsets", *map(str, args), *extra], capture_output=True,
                              text=True, env=env)
        assert proc.returncode == 1 and want in proc.stdout and ("\033[" in proc.stdout) == (want == painted), extra
    assert painted in on_terminal(env=env)
    out = on_terminal(env={**env, "NO_COLOR": "1"})
    assert plain in out and "\033[" not in out
    assert painted in on_terminal("--color", "always", env={**env, "NO_COLOR": "1"})
    assert "\033[" not in on_terminal("--color", "never", env=env)
