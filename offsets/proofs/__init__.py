"""Proofs that a table describes a build, each written once over a memory reader
(`read(address, n) -> bytes`), whether that memory is this process's (`runtime/live/`) or another's
(`remote/proof.py`). Identity rules (which table is exact) live in `layout/identity.py` and
`runtime/earning.py`; this package only proves.

- `view`: a table as the proofs read it, collecting what each check used;
- `prover`: one proof's table, memory reader and record of what passed;
- `embedding`: what a proven field says about the types it is made of, and the structs they are in;
- `pinch`: a member's offset held between the bounds C's layout rules give (after a proven header,
  or at 0 where a field at 0 is nested);
- `types`: every type object's own record of its layout (`tp_basicsize`, `tp_itemsize`,
  `tp_members`) against the table;
- `result`: what a check found, and what its passing parts proved;
- `unproven`: which names of a needs list no proof reaches, and why.
"""
