"""What `make test` samples of a per-table list, and what it leaves to `make prove`
(tests/prove/test_beyond_samples.py runs the rest): of the tables of one kind (the same vendor,
config and target: a table's name after its version), the oldest and the newest version."""
from __future__ import annotations


def _version_and_kind(name: str) -> tuple:
    """cpython-3.13.15-debian-freethreaded-x86_64-linux-gnu -> ((3, 13, 15), 'debian-freethreaded-x86_64-linux-gnu')."""
    _, version, kind = name.split("-", 2)
    return tuple(int(x) for x in version.split(".")), kind


def ends_of_each_kind(names) -> set:
    """The oldest and the newest table of each kind among `names` (table names)."""
    kinds: dict = {}
    for n in names:
        version, kind = _version_and_kind(n)
        kinds.setdefault(kind, []).append((version, n))
    return {min(v)[1] for v in kinds.values()} | {max(v)[1] for v in kinds.values()}


def split(items, name_of=str) -> tuple:
    """(what make test runs, what make prove runs): `items` (each named by `name_of`) in order."""
    items = list(items)
    keep = ends_of_each_kind([name_of(x) for x in items])
    return [x for x in items if name_of(x) in keep], [x for x in items if name_of(x) not in keep]
