"""`python -m offsets.runtime NAME...`: the table this interpreter uses, and each answer with how
it was earned; `--unproven FILE`: the names of a needs list that are not answered, and why."""
from __future__ import annotations

import sys

from ..errors import OffsetsError


def read_needs(path: str) -> list:
    """The names of a needs list: a JSON list, or one name a line (`#` starts a comment)."""
    from ..regular_file import open_regular

    with open_regular(path, "r", encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("["):
        from ..layout.json_read import loads

        return [str(n) for n in loads(text)]
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def main(argv=None) -> int:
    """`python -m offsets.runtime NAME...`: the table this interpreter uses, and each answer with how
    it was earned (runs on any interpreter, with no third-party package); `--unproven FILE`: the
    names of a needs list (`read_needs`) that are not answered, each with why no proof reaches it."""
    from .core import RUNTIME

    names = sys.argv[1:] if argv is None else argv
    try:
        m = RUNTIME.build()
    except OffsetsError as e:
        print(f"offsets: error: {e}", file=sys.stderr)
        return e.exit_code
    print(f"table: {m.table} ({m.kind}: {m.detail}) [{m.checked_by}]")
    if names[:1] == ["--unproven"] and len(names) == 2:
        try:
            needs = read_needs(names[1])
        except OSError as e:          # NotRegularFile too
            print(f"offsets: error: cannot read needs list {names[1]}: {e.strerror or e}", file=sys.stderr)
            return 2
        missing = m.unproven(needs)
        print(f"{len(needs) - len(missing)} of {len(needs)} names answered; not answered:")
        for name, why in missing:
            print(f"  {name}: {why}")
        return 2 if missing else 0
    status = 0
    for name in names:
        try:
            if "." in name:
                from .earned_field import EarnedField

                f = RUNTIME.field(name, EarnedField)
                print(f"  {name:<34} {f.offset:>6}  {f.earned}")
            else:
                print(f"  {name:<34} {RUNTIME.sizes[name]:>6}  {m.earned(name)} (size)")
        except (OffsetsError, KeyError) as e:
            status = 2
            print(f"  {name:<34} {'-':>6}  refused: {e}")
    return status

