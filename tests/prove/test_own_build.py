"""The running build's own table (issue 8, rule 2), on real builds no table ships.

For Debian sid's python3.13 and an upstream 3.13.15 compiled from the pristine tarball: after
`offsets scan --python PY --install` (run from the project's environment), the runtime running
inside PY answers every field of every header-defined struct of the installed table, and gcc's
`offsetof`/`sizeof` over that build's own installed headers (offsets/probe.py) agrees with each
answer. 0 refused, 0 wrong. Debian's `gchead-alignment.diff` shows: `PyInterpreterState.gc.generations`
is 7424 upstream and 7420 on Debian.
"""
from __future__ import annotations

import json

import pytest

import realbuilds
from offsets import build_inputs, compact, probe

#: gcc's offsetof(PyInterpreterState, gc.generations) on each build (PyGC_Head's alignment differs).
GENERATIONS = {"sid-3.13": 7420, "upstream-3.13.15-release": 7424}

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
    import subprocess

    env = {**realbuilds.clean_env(), "PYTHONPATH": str(realbuilds.REPO), "OFFSETS_TABLES": str(tables_dir)}
    proc = subprocess.run([str(python), "-c", ASK], input=json.dumps(pairs), capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, f"{python} failed:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


@pytest.mark.parametrize("which", sorted(GENERATIONS))
def test_gcc_knows_the_two_layouts(which, interpreter, headers_of):
    """The premise, from gcc alone: the two builds of one version differ in PyInterpreterState."""
    py = interpreter(which)
    assert headers_of(py).values(["offsetof(PyInterpreterState, gc.generations)"]) == [GENERATIONS[which]]


@pytest.mark.parametrize("which", sorted(GENERATIONS))
def test_own_build_table_answers_every_header_field_exactly(which, interpreter, headers_of, installed_tables):
    py = interpreter(which)
    tables_dir = installed_tables(py)
    files = sorted(tables_dir.rglob("*.jsonl"))
    assert len(files) == 1, f"offsets scan --install put {len(files)} compact tables into {tables_dir}: {files}"
    table = compact.load(files[0])

    # gcc over the build's own installed headers confirms the installed table, field by field
    report = probe.probe_headers(table, build_inputs.from_python(str(py)))
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:20]))
    header = [s for key, s in table.structs.items()
              if not s.defined_in.rsplit(":", 1)[0].endswith(".c") and "@" not in key]
    unprobed = [f"{s.name}.{f.path}" for s in probe.header_structs(table) for f in s.fields
                if f"{s.name}.{f.path}" not in report.checked]
    assert not unprobed, f"gcc did not check {len(unprobed)} fields: {unprobed[:10]}"
    print(f"\n{which}: gcc agrees with the installed table: {report.summary()}; "
          f"{len(header) - len(probe.header_structs(table))} header structs came from DWARF, not probed")

    # the runtime inside PY gives the table's (gcc-confirmed) numbers for every field, refusing none
    pairs = [[s.name, f.path] for s in header for f in s.fields]
    out = _ask(py, tables_dir, pairs)
    want = {f"{s.name}.{f.path}": [f.offset, f.size, f.bit_offset, f.bit_width] for s in header for f in s.fields}
    refused = [a for a in out["answers"] if isinstance(a[1], str)]
    wrong = [a for a in out["answers"] if not isinstance(a[1], str) and a[1:] != want[a[0]]]
    print(f"{which}: {len(pairs) - len(refused) - len(wrong)} of {len(pairs)} fields exact, {len(refused)} refused, "
          f"{len(wrong)} wrong; table: {out['table'][:160]}")
    assert not refused and not wrong, f"refused: {refused[:5]}; wrong (name, got..., want): " \
        f"{[(a, want[a[0]]) for a in wrong[:5]]}"

    gens = {a[0]: a[1] for a in out["answers"]}.get("PyInterpreterState.gc.generations")
    assert gens == GENERATIONS[which] == headers_of(py).values(["offsetof(PyInterpreterState, gc.generations)"])[0]
