"""Checks against the compiler and the build: gcc `offsetof` probes, DWARF, verification records.

probe.py      gcc offsetof/sizeof/bitfield probes, read back from the object file
verify.py     `offsets verify`: a table against its build's own inputs (gcc, DWARF, the live interpreter)
verified.py   generated/index.yaml's records of what verified each committed table
"""
