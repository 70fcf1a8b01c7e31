"""The rotating check of `make prove`: one committed table a day (OFFSETS_VERIFY_SAMPLE=NAME picks
one; `verified.sample` rotates through all, tests/test_verified_tables.py) is verified again from its
own inputs, by gcc's offsetof probes, DWARF and the binary check, and compares as much as its record
in generated/index.yaml says. Truth: gcc, the binaries' DWARF and their own data (type objects,
`_Py_DebugOffsets`), never the scanner. (It costs up to two minutes on a cold cache, which is why
make test leaves it here.)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # tests/: result_memo
import result_memo  # noqa: E402
from offsets.check import verified  # noqa: E402
from offsets.layout import table_yaml  # noqa: E402
from offsets.scan import unit_cache  # noqa: E402
from offsets.tools import matrix  # noqa: E402

GENERATED = Path(__file__).resolve().parents[2] / "generated"


def test_todays_sample_is_verified_again_from_its_own_inputs():
    """Remembered for the day (tests/result_memo.py) under the package, the table's bytes and every
    input of `result_memo.inputs_key`; any change verifies it again."""
    rows = verified.index_rows(GENERATED)
    name = verified.sample(list(rows), os.environ.get("OFFSETS_VERIFY_SAMPLE"))
    row = rows[name]
    assert row.get("verified"), f"{name} has no verification record: run `make tables`"
    job = matrix.job_for(row)
    b = job.inputs()
    binary = job.dwarf() if job.dwarf else None
    binaries = [path for path, _, _ in (job.binaries() if job.binaries else [])]
    key = result_memo.key_of("verified-sample", name, *result_memo.inputs_key(b, binary), *map(str, binaries))
    now = result_memo.recall(key)
    if now is None:
        result = verified.check(table_yaml.load(GENERATED / name), b, binary, binaries)
        now = {c.name: [c.structs, c.fields] for c in result.checks}
        files = [GENERATED / name, b.pyconfig_h] + ([binary] if binary else []) + binaries
        result_memo.remember(key, {str(f): unit_cache.file_digest(f) for f in files}, now)
    now = {n: tuple(v) for n, v in now.items()}
    recorded = {n: (c.get("structs", 0), c["fields"] if "fields" in c else c["constants"])
                for n, c in row["verified"]["checks"].items()}
    assert now == recorded, f"{name}: verified again, it compares {now}, its record says {recorded}"
