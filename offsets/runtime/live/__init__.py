"""The live check: does a table describe the interpreter that is running? Asked of the process
itself, in three layers that import downward only:

    toolkit.py       memory reads (write(2) to a pipe: a bad address is a `Fault`, never a crash), the
                     `Checker`, `need`, the readings several checks share, `BASICSIZE`, `debug_offsets`
    the checks       each imports only the toolkit (and proofs/, layout/ and runtime/binary.py below
                     it); what it needs of the table it is handed:
      basics.py        builtin types' `__basicsize__`, a few objects' headers, this thread's state, `_Py_DebugOffsets`
      values.py        objects read through the table, against what Python says of them
      objects.py       more objects' fields (dict views, exceptions, weak references, typing's objects)
      stdtypes.py      more of the standard types' objects (buffers, iterators, tracebacks, exceptions)
      types.py         every reachable type object, against its own record of its layout
      typeobjects.py   type objects' fields that no slot or member shows
      static_types.py  the interpreter's state of each static builtin type (3.12+)
      wrappers.py      builtin types' slots, found through their wrapper descriptors
      capi.py          what the C API says, against a raw read of the same field
      spec.py          `PyType_Spec` and `PyType_Slot`, as `PyType_FromSpec` reads them
      outputs.py       structs the C API fills in the check's own buffers
      config.py        `PyConfig`, as the interpreter's own code writes each field by name
      state.py         the interpreter's and the runtime's own pointers, against `id()` of what they point at
      thread.py        this thread's state, its counters found by what they do
      raised.py        the thread state while an exception is raised, read by `_raised.c`
      frames.py        frames and code objects, against what Python says of them
      lines.py         a line iterator's address range (3.11+)
      caches.py        the specializer's inline caches (3.12+)
      versions.py      the version numbers the specializer gives out (3.12+)
      opcache.py       a code object's opcache (3.8 to 3.10)
      records.py       the binary's own tables of `offsetof` (typeobject.c's slotdefs and others)
      allocators.py    the memory allocators, against the binary's own symbols
      constants.py     the constants (opcodes, type flags, `sys.int_info`, frame owners)
    runner.py        `check(table)` and `check_constants(table)`: every check, in one order, handed the
                     table's constants and type records

The runtime hands its tables `proof_cache.check` (which runs `runner.check`) as their prover; no
table imports the check.
"""
