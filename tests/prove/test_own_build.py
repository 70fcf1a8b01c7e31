"""The running build's own table (`offsets scan --install`), on real builds no table ships.

For Debian sid's python3.13 and upstream 3.13.15 compiled from the pristine tarball (release and
free-threaded): after
`offsets scan --python PY --install` (run from the project's environment), the runtime running
inside PY answers every field of every header-defined struct of the installed table, and gcc's
`offsetof`/`sizeof` over that build's own installed headers (offsets/check/probe.py) agrees with each
answer. 0 refused, 0 wrong. Debian's `gchead-alignment.diff` shows: `PyInterpreterState.gc.generations`
is 7424 upstream and 7420 on Debian. Without that table, the shipped tables may refuse a field of
these builds, never answer it wrong.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import realbuilds
from offsets.scan import build_inputs
from offsets.layout import compact, table_yaml
from offsets.check import probe

#: gcc's offsetof(PyInterpreterState, gc.generations) on each build (PyGC_Head's alignment differs).
GENERATIONS = {"sid-3.13": 7420, "upstream-3.13.15-release": 7424, "upstream-3.13.15-free-threaded": 7424}

#: Runs inside PY: offsets' answer for each (struct, field), and the table it chose.
ASK = r"""
import json, sys
import offsets
from offsets.errors import OffsetsError
out = {"answers": []}
for struct, path in json.loads(sys.stdin.read()):
    name = struct + "." + path
    try:
        f = offsets.field(name)
        out["answers"].append([name, offsets.get(name), f.size, f.bit_offset, f.bit_width])
    except OffsetsError as e:
        out["answers"].append([name, "refused: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])])
out["table"] = str(offsets.build())
print(json.dumps(out))
"""


def _ask(python, tables_dir, pairs) -> dict:
    return json.loads(realbuilds.run_in(python, ASK, env={"OFFSETS_TABLES": str(tables_dir)}, stdin=json.dumps(pairs)))


@pytest.mark.parametrize("which", sorted(GENERATIONS))
def test_gcc_knows_the_two_layouts(which, interpreter, headers_of):
    """The premise, from gcc alone: the two builds of one version differ in PyInterpreterState."""
    py = interpreter(which)
    assert headers_of(py).values(["offsetof(PyInterpreterState, gc.generations)"]) == [GENERATIONS[which]]


def _judged(py, table, tables_dir, headers_of) -> dict:
    """gcc's numbers for every field of every header-defined struct of `table` (over PY's own
    headers), against what the runtime inside PY answers with OFFSETS_TABLES=`tables_dir`."""
    core = [d for d in headers_of(py).flags if d.startswith(("-D", "-U"))
            and d.split("=")[0] not in ("-DNDEBUG", "-D_FORTIFY_SOURCE", "-DPy_BUILD_CORE")]
    assert not core, f"{py}'s core is compiled with {core}: gcc's probe of its headers would need them too"
    report = probe.probe_headers(table, build_inputs.from_python(str(py)))
    assert not report.mismatches, "gcc disagrees with the table:\n" + "\n".join(map(str, report.mismatches[:20]))
    header = [s for key, s in table.structs.items()
              if not s.defined_in.rsplit(":", 1)[0].endswith(".c") and "@" not in key]
    unprobed = [f"{s.name}.{f.path}" for s in probe.header_structs(table) for f in s.fields
                if f"{s.name}.{f.path}" not in report.checked]
    assert not unprobed, f"gcc did not check {len(unprobed)} fields: {unprobed[:10]}"
    print(f"\n{py}: gcc agrees with the table on {report.summary()}; "
          f"{len(header) - len(probe.header_structs(table))} header structs came from DWARF, not probed")
    # the table is gcc-confirmed: its numbers are the truth the runtime's answers are judged by
    want = {f"{s.name}.{f.path}": [f.offset, f.size, f.bit_offset, f.bit_width] for s in header for f in s.fields}
    out = _ask(py, tables_dir, [[s.name, f.path] for s in header for f in s.fields])
    out["refused"] = [a for a in out["answers"] if isinstance(a[1], str)]
    out["wrong"] = [(a, want[a[0]]) for a in out["answers"] if not isinstance(a[1], str) and a[1:] != want[a[0]]]
    out["exact"] = len(want) - len(out["refused"]) - len(out["wrong"])
    print(f"{out['exact']} of {len(want)} fields exact, {len(out['refused'])} refused, {len(out['wrong'])} wrong; "
          f"table: {out['table'][:160]}")
    for (name, *got), truth in out["wrong"][:20]:
        print(f"  WRONG {name}: offsets says (offset, size, bit offset, bit width) {got}, gcc {truth}")
    out["answer"] = {a[0]: a[1] for a in out["answers"]}
    return out


@pytest.mark.parametrize("which", sorted(GENERATIONS))
def test_shipped_tables_never_answer_what_gcc_denies(which, interpreter, headers_of, tmp_path):
    """Without its own table, PY may be refused, never answered wrong (rule 3): every field of PY's
    headers (as `offsets scan` lists them; gcc confirms each number) against the shipped tables' answers."""
    py = interpreter(which)
    proc = subprocess.run([sys.executable, "-m", "offsets", "scan", "--python", str(py), "--no-dwarf", "-q",
                           "-o", str(tmp_path / "own.yaml")], capture_output=True, text=True, env=realbuilds.clean_env())
    assert proc.returncode == 0, f"offsets scan --python {py} failed:\n{proc.stderr[-3000:]}"
    (tmp_path / "empty").mkdir()
    out = _judged(py, table_yaml.load(tmp_path / "own.yaml"), tmp_path / "empty", headers_of)
    assert not out["wrong"], f"{which}: {len(out['wrong'])} wrong answers from the shipped tables: {out['wrong'][:5]}"


@pytest.mark.parametrize("which", sorted(GENERATIONS))
def test_own_build_table_answers_every_header_field_exactly(which, interpreter, headers_of, installed_tables):
    py = interpreter(which)
    tables_dir = installed_tables(py)
    files = sorted(tables_dir.rglob("*.jsonl"))
    assert len(files) == 1, f"offsets scan --install put {len(files)} compact tables into {tables_dir}: {files}"
    out = _judged(py, compact.load(files[0]), tables_dir, headers_of)
    assert not out["refused"] and not out["wrong"], \
        f"{which}: refused: {out['refused'][:5]}; wrong ((name, got...), gcc): {out['wrong'][:5]}"
    gcc = headers_of(py).values(["offsetof(PyInterpreterState, gc.generations)"])[0]
    assert out["answer"]["PyInterpreterState.gc.generations"] == gcc == GENERATIONS[which]
