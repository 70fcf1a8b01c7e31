"""gcc over a whole source tree (Debian's CPython 3.11.2 source package): every struct of its .c files
and headers that the table has, compiled where the build compiles it, agrees with the table
(`probe.probe`). Here for its cost, about 90 CPU-seconds whenever the package changes; `make test`
keeps the probe of one .c file with an altered field (tests/test_probe_pyenv.py) and gcc over the
private structs of 3.9's and 3.13's Objects/ (tests/test_sources.py)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import result_memo  # noqa: E402


def test_gcc_agrees_with_the_structs_of_a_source_tree(debian311):
    from offsets.check import probe
    from offsets.scan import build_inputs as build

    table = debian311.table()
    b = build.from_source(debian311.tree, debian311.pyconfig("amd64", "x86_64-linux-gnu"))
    report = result_memo.probed("probe-source-tree", table, b, lambda: probe.probe(table, b))
    private = [s for s in table.structs.values() if not s.defined_in.startswith("Include/")]
    print(f"\nCPython {table.build.version} source tree: gcc compared {report.summary()}; "
          f"{len(private)} structs of .c files and the tree's headers, {len(report.skipped)} not probed")
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:50]))
    assert len(private) > 300
    assert len(report.skipped) <= len(private) // 20, report.skipped
    assert report.structs == len(table.structs) - len(report.skipped)
    for name in ("listiterobject.it_index", "listiterobject.it_seq", "PyASCIIObject.state.kind"):
        assert name in report.checked
