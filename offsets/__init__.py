"""offsets: where every field of CPython's internal structs lives, for every CPython build.

Data flow, one module per stage:

    build.py, targets.py, debian.py   build description: find a build's inputs, read what it is
    units.py, sources.py              translation units to parse, with their flags
    clang_scan.py                     the only module that imports clang.cindex: one unit -> layouts
    scanner.py                        parallel, cached scan of all units -> one Table
    model.py                          Build, Target, Struct, Field, Table: frozen values
    table_yaml.py                     Table <-> YAML (schema in data/table.schema.json)
    names.py                          struct.field names, aliases across versions, suggestions
    cli.py                            the `offsets` command
"""
__version__ = "0.1.0"
