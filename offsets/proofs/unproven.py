"""What stays unproven, and why: for each name of a needs list (`STRUCT.FIELD` or `STRUCT` for its
size) that a table in use neither answers exactly nor proves, the reason no proof reaches it."""
from __future__ import annotations


def reasons(table, names) -> list:
    """[(name, why)] of the `names` a runtime table (`tables.Loaded`, its check run) does not answer."""
    check = table.earning.check
    skipped = list(check.skipped) if check is not None else []
    failed = list(check.failed) if check is not None else []
    out = []
    for name in names:
        struct, path = table.split(name)
        key = table.resolve_struct(struct)
        if key is None:
            out.append((name, f"{table.name} has no struct {struct}"))
            continue
        if path and path not in table.fields(key):
            out.append((name, f"{table.name} has no field {path} in {key}"))
            continue
        if table.earned(key, path or None) is not None:
            continue
        if failed:
            out.append((name, f"the live check failed, so nothing of {table.name} is answered ({failed[0]})"))
            continue
        proven = sorted(p for k, p in table.earning.proven if k == key and p)
        why = f"no check reads {key}.{path}" if path else f"no check compares sizeof({key}) with a truth"
        why += (f" ({len(proven)} other fields of {key} are proven)" if proven else f" (nothing of {key} is proven)")
        mentions = [s for s in skipped if path and (f"{key}.{path}" in s or f"{struct}.{path}" in s)]
        if mentions:
            why += f"; checks of it not run: {mentions[0]}"
        out.append((name, why))
    return out
