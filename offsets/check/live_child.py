"""Run by a table's own interpreter (tools/live_records.py starts it): the live check of the compact
table in the file `argv[1]`, printed as one JSON line, when the table records the build-id of the
binary this interpreter runs on, or (a build made here whose build-id no table can record:
built_records.py's) when the runtime's rule matches it by the installed headers it compares struct
by struct (`by: inputs`); else why it is not this build. Needs no YAML and no third-party
package: it runs wherever the runtime runs.

The line: `{"build": false, "why": ...}`, or `{"build": true, "by": ..., "build_id": ..., "checks": N,
"constants": K, "failed": [...], "skipped": S, "version": ...}` (`checks` counts every check,
`constants` those of constants). Exit status 0 when it printed the line, whatever the check found.
"""
import json
import sys


def main(argv=None) -> int:
    from ..layout import compact_read
    from ..layout.build_identity import BuildIdentity
    from ..runtime.earning import earning
    from ..runtime import running_identity
    from .verify import live_check_text

    path = (sys.argv[1:] if argv is None else argv)[0]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, _ = compact_read.parse(text, path)
    me = running_identity()
    build = BuildIdentity.of_table(head["build"])
    how = earning(build, me)
    if how.by not in ("build-id", "inputs"):
        recorded = build.build_ids
        why = (f"the table records {'build-id ' + ', '.join(recorded) if recorded else 'no build-id'}, not that of "
               f"this interpreter's binary ({me.build_id or 'none found'})" + ("" if how.by else f"; {how.why}"))
        print(json.dumps({"build": False, "why": why}))
        return 0
    c = live_check_text(text, path)
    counts = dict(c.counts)
    print(json.dumps({"build": True, "by": how.by, "build_id": me.build_id if how.by == "build-id" else None,
                      "checks": c.fields, "constants": counts["constants"], "failed": list(c.mismatches),
                      "skipped": counts["not run"], "version": sys.version.split()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
