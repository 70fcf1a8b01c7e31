"""The JSON form of an export: every layout with its table, version, hexversion, triple, config,
whether a lookup by version answers it (`by_version`: by hexversion, triple and config;
`by_hexversion`: by hexversion alone; items.py), build-ids, items (`"section.name": {"offset",
"size"}`, null where the table lacks it) and constants."""
from __future__ import annotations

import json

FORMAT = 1


def render(items: list, layouts: list, constants: tuple, note: str) -> str:
    doc = {"format": FORMAT, "note": note,
           "items": [f"{it.section}.{it.name}" for it in items],
           "layouts": [{"table": lay.table, "version": lay.version, "hexversion": f"{lay.hexversion:#010x}",
                        "triple": lay.triple, "config": lay.config, "by_version": lay.by_version,
                        "by_hexversion": lay.by_hexversion, "build_ids": list(lay.build_ids),
                        "items": {f"{s}.{n}": None if v is None else {"offset": v[0], "size": v[1]}
                                  for (s, n), v in lay.values.items()},
                        "constants": dict(sorted(lay.constants.items()))}
                       for lay in layouts]}
    return json.dumps(doc, indent=1) + "\n"
