"""The layout model and its serialized forms.

model.py, sanity.py          Build, Target, Struct, Field, Table (frozen values) and the rules no layout breaks
identity.py                  a build's identity: table names, flags, digests of its layout inputs (stdlib only)
build_identity.py            what a first lookup needs of it: flags, version spelling, table name; BuildIdentity
targets.py                   each CPU's ABI facts: pointer size, scalar alignment, compiler macro, ELF machine
names.py                     STRUCT.FIELD names, aliases across versions, suggestions
table_yaml.py, yaml_strict.py  Table <-> YAML (generated/, the reviewable form)
compact.py, compact_read.py  Table -> the compact, content-addressed form the runtime reads, and its reader (its rows)
compact_index.py             index.json's digest and check (the whole choice reads it; a first lookup, build_ids.txt)
c_header.py                  Table -> a per-build C header
"""
