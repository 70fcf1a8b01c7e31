"""What one more build costs the shipped store, measured by writing the store again without it
(tools/store_cost.py): make test's tests/test_store_cost.py leaves it here for its cost."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # tests/

import result_memo  # noqa: E402
from offsets.layout import compact  # noqa: E402
from offsets.tools import store_cost  # noqa: E402
from test_store_cost import SHIPPED, checked_of, full, shipped, size  # noqa: E402,F401 (fixtures)


def test_each_further_patch_build_costs_what_the_store_grew_by(request):
    """The cost `make bench` reports for a table is what the store grew by when it was added (after
    the earlier builds of its kind), and every further patch build meets the 100 KB goal."""
    if result_memo.passed_before("store-further-patch-build-cost", SHIPPED):
        return
    (index, made), full = request.getfixturevalue("shipped"), request.getfixturevalue("full")
    c = store_cost.costs(compact.COMPACT_DIR)
    assert len(c["further"]) >= 10
    assert size(full) == c["total"]
    assert c["tables"]["cpython-3.13.0-x86_64-linux-gnu.jsonl"] and "cpython-3.13.0-x86_64-linux-gnu.jsonl" not in c["further"]
    worst = max(c["further"], key=c["tables"].get)
    def kind(t):
        return t.build.hexversion >> 16, sorted(t.build.config.items()), t.build.target.triple

    for name in (worst,):
        t = next(m[0] for m in made if m[0].build.table_name + ".jsonl" == name)
        before = [m for m in made if kind(m[0]) != kind(t) or (m[0].build.hexversion, m[0].build.vendor)
                  < (t.build.hexversion, t.build.vendor)]
        depends = {m[0].build.table_name: compact.read_parts(compact.COMPACT_DIR / f"{m[0].build.table_name}.jsonl")[1]
                   .get("depends") for m in made}
        grown = size(compact.store_files(before + [m for m in made if m[0] is t], index["aliases"], depends,
                                         checked=checked_of(index))) \
            - size(compact.store_files(before, index["aliases"], depends, checked=checked_of(index)))
        # exact for the hot pool; the cold pool's shards are compressed with and without the table's
        # nodes, among those of every other table (the later ones' too: close, not exact)
        assert abs(grown - c["tables"][name]) <= 0.05 * grown, (name, grown, c["tables"][name])
        assert grown <= store_cost.PATCH_GOAL, (worst, grown)
    assert c["tables"][worst] <= store_cost.PATCH_GOAL, (worst, c["tables"][worst])
    assert json.loads((compact.COMPACT_DIR / "index.json").read_text())["pool_sha256"]
    result_memo.passed("store-further-patch-build-cost", SHIPPED)
