"""The proofs a table that is not exact answers by (offsets/proofs, runtime/live/): each is a read
of a live interpreter compared with what that interpreter says, so the truths here are live
interpreters (pyenv's, run as subprocesses) and their exact tables, which gcc and their DWARF
verified (generated/index.yaml).

- the type-system rule carries a proof only where two proven real offsets determine the third, and
  a member is pinned only between both of its bounds;
- every check fails on its interpreter's own table with the field it reads moved;
- whatever a table of another release proves in an interpreter is what that interpreter's exact
  table says (0 wrong).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import missing_input, pyenv_python
from offsets.proofs.embedding import by_value, carry
from offsets.proofs.pinch import after_member, at_zero, header_sizes, pinch

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- the type-system rule
def small_table():
    """S embeds T at 8; T has x at 4 and y at 12; U is another struct named in S's rows but laid out
    otherwise (its offsets do not add up): nothing may be carried through it."""
    structs = {
        "S": {"a": (0, 8, "long"), "t": (8, 16, "T"), "t.x": (12, 4, "int"), "t.y": (20, 4, "int"),
              "u": (24, 8, "struct U"), "u.z": (24, 8, "long"), "p": (32, 8, "T *")},
        "T": {"x": (4, 4, "int"), "y": (12, 4, "int")},
        "U": {"z": (4, 8, "long")},
    }
    return (lambda name: name if name in structs else None), (lambda key: structs[key])


def test_a_nested_read_alone_proves_neither_the_member_nor_the_inner_field():
    resolve, fields = small_table()
    assert carry(resolve, fields, {("S", "t.x")}) == {("S", "t.x")}


def test_two_proven_offsets_prove_the_third():
    resolve, fields = small_table()
    # the member's offset by difference, then the other fields of T in S and in T
    got = carry(resolve, fields, {("S", "t.x"), ("T", "x"), ("T", "y")})
    assert {("S", "t"), ("S", "t.y")} <= got
    assert carry(resolve, fields, {("S", "t"), ("S", "t.y")}) >= {("T", "y")}
    assert carry(resolve, fields, {("S", "t"), ("T", "x")}) >= {("S", "t.x")}


def test_nothing_is_carried_through_a_member_whose_offsets_do_not_add_up_or_a_pointer():
    resolve, fields = small_table()
    got = carry(resolve, fields, {("S", "u"), ("S", "u.z"), ("S", "p"), ("S", "a")})
    assert ("U", "z") not in got and not any(k == "T" for k, _ in got)


def header_table(cval_at=16, real_at=0, header_size=16):
    """A complex number's layout: a 16-byte header at 0, then a Py_complex {real, imag}."""
    structs = {
        "S": {"ob_base": (0, header_size, "PyObject"), "ob_base.ob_type": (8, 8, "PyTypeObject *"),
              "cval": (cval_at, 16, "Py_complex"), "cval.real": (cval_at + real_at, 8, "double"),
              "cval.imag": (cval_at + 8, 8, "double")},
        "Py_complex": {"real": (real_at, 8, "double"), "imag": (8, 8, "double")},
        "PyObject": {"ob_type": (8, 8, "PyTypeObject *")},
    }
    sizes = {"S": 32, "Py_complex": 16, "PyObject": header_size}
    return (lambda name: name if name in structs else None), (lambda key: structs[key]), sizes.get


READ = {("S", "ob_base"), ("PyObject", None), ("S", "cval.real"), ("S", "cval.imag")}


def test_a_member_right_after_a_proven_header_is_pinned_by_a_read_of_its_first_member():
    """real(cval) <= 16 (cval.real, at cval's offset, is at or after 0 in Py_complex) and >= 16 (after
    the header at 0, whose size is proven): so cval is at 16, and Py_complex's fields follow."""
    resolve, fields, size = header_table()
    got = carry(resolve, fields, pinch(resolve, fields, size, READ))
    assert {("S", "cval"), ("Py_complex", "real"), ("Py_complex", "imag")} <= got


@pytest.mark.parametrize("change", [
    {"drop": ("PyObject", None)},           # the header's size is not proven
    {"drop": ("S", "ob_base")},             # nor the header at 0
    {"drop": ("S", "cval.real")},           # the read is not of the first member
    {"table": {"cval_at": 24}},             # the member is not right after the header
    {"table": {"real_at": 4}},              # what is read is not at the member's own offset
    {"table": {"header_size": 8}},          # the header's row is not the header's proven size
])
def test_nothing_is_pinned_without_each_bound(change):
    resolve, fields, size = header_table(**change.get("table", {}))
    got = pinch(resolve, fields, size, READ - {change.get("drop")})
    assert ("S", "cval") not in got


def test_a_field_proven_at_offset_0_proves_the_members_on_its_path_at_0():
    structs = {"S": {"u": (0, 24, "union <anonymous>"), "u.lg": (0, 24, "LG"), "u.lg.ptr": (0, 8, "PyObject *"),
                     "u.lg.ver": (8, 8, "long"), "w": (24, 8, "W"), "w.x": (24, 8, "long")}}
    fields = structs.__getitem__
    assert at_zero(fields, {("S", "u.lg.ptr")}) == {("S", "u"), ("S", "u.lg")}
    assert at_zero(fields, {("S", "u.lg.ver"), ("S", "w.x")}) == set()      # not at 0: a sum only


def test_a_header_s_size_lies_between_its_last_field_s_end_and_the_next_member():
    structs = {"T": {"ob_base": (0, 24, "PyVarObject"), "ob_base.ob_size": (16, 8, "Py_ssize_t"),
                     "ob_item": (24, 8, "PyObject *[1]")},
               "PyVarObject": {"ob_refcnt": (0, 8, "Py_ssize_t"), "ob_size": (16, 8, "Py_ssize_t")}}
    sizes = {"T": 32, "PyVarObject": 24}
    resolve, fields = (lambda n: n if n in structs else None), structs.__getitem__
    proven = {("T", "ob_base"), ("T", "ob_item"), ("PyVarObject", "ob_size")}
    assert ("PyVarObject", None) in header_sizes(resolve, fields, sizes.get, proven)
    for drop in proven:      # each bound, and the header at 0, is needed
        assert ("PyVarObject", None) not in header_sizes(resolve, fields, sizes.get, proven - {drop})
    sizes["PyVarObject"] = 32      # a table whose size is not where the bounds meet
    assert ("PyVarObject", None) not in header_sizes(resolve, fields, sizes.get, proven)


def test_a_member_after_a_proven_scalar_is_pinned_by_its_first_field_and_its_alignment():
    rows = {"length": (16, 8, "Py_ssize_t"), "hash": (24, 8, "Py_hash_t"), "state": (32, 4, "struct <anonymous>"),
            "state.interned": (32, 4, "unsigned int"), "wstr": (40, 8, "wchar_t *")}
    fields = {"S": rows}.__getitem__
    read = {("S", "hash"), ("S", "state.interned")}
    assert after_member(fields, read) == {("S", "state")}
    assert after_member(fields, {("S", "state.interned")}) == set()            # the member before is not proven
    assert after_member(fields, {("S", "hash"), ("S", "length")}) == set()     # nothing of it is read
    rows["state"], rows["state.interned"] = (36, 4, "struct <anonymous>"), (36, 4, "unsigned int")
    assert after_member(fields, read) == set()      # not the first place after hash its alignment allows


def test_a_member_after_a_struct_is_pinned_past_its_proven_fields_by_its_elements_alignment():
    """3.13's free lists: lists (items[80], numfree) then dicts (items[80]) after 4 bytes of padding."""
    rows = {"lists": (256, 648, "struct L"), "lists.items": (256, 640, "PyListObject *[80]", None, None, 80),
            "lists.numfree": (896, 4, "int"), "dicts": (904, 648, "struct D"),
            "dicts.items": (904, 640, "PyDictObject *[80]", None, None, 80), "dicts.numfree": (1544, 4, "int")}
    fields = {"S": rows}.__getitem__
    read = {("S", "lists.numfree"), ("S", "dicts.items")}
    assert after_member(fields, read) == {("S", "dicts")}
    assert after_member(fields, {("S", "dicts.items")}) == set()       # nothing of lists proven: no lower bound
    rows["dicts.items"] = (904, 640, "struct E[80]", None, None, 80)    # an array of structs: no alignment known
    assert after_member(fields, read) == set()


def test_a_member_of_a_member_is_pinned_after_its_proven_sibling():
    """3.13's free lists, inside PyInterpreterState.object_state.freelists: the dicts' list after the lists'."""
    rows = {"o": (200, 1296, "struct O"), "o.f": (200, 1296, "struct F"), "o.f.lists": (200, 648, "struct L"),
            "o.f.lists.items": (200, 640, "PyListObject *[80]", None, None, 80), "o.f.lists.numfree": (840, 4, "int"),
            "o.f.dicts": (848, 648, "struct D"), "o.f.dicts.items": (848, 640, "PyDictObject *[80]", None, None, 80),
            "o.f.dicts.numfree": (1488, 4, "int")}
    fields = {"S": rows}.__getitem__
    read = {("S", "o.f.lists.numfree"), ("S", "o.f.dicts.items")}
    assert after_member(fields, read) == {("S", "o.f.dicts")}
    assert after_member(fields, {("S", "o.f.dicts.items"), ("S", "o.f.lists.items")}) == set()    # no end proven
    rows["o.f.dicts.items"], rows["o.f.dicts"] = (856, 640, "PyDictObject *[80]", None, None, 80), (856, 640, "struct D")
    assert after_member(fields, read) == set()      # not the first place after the count its alignment allows


def test_a_member_after_an_array_read_to_its_last_element_is_pinned():
    """3.13's lists' free list after the tuples', whose arrays are read at their last entry (a 20-item
    tuple freed): their data reaches to where the table ends them, and the lists' items start there."""
    rows = {"f": (0, 1000, "struct F"), "f.tuples": (0, 240, "struct T"),
            "f.tuples.items": (0, 160, "PyTupleObject *[20]", None, None, 20),
            "f.tuples.numfree": (160, 80, "int[20]", None, None, 20), "f.lists": (240, 648, "struct L"),
            "f.lists.items": (240, 640, "PyListObject *[80]", None, None, 80)}
    fields = {"S": rows}.__getitem__
    read = {("S", "f.tuples.numfree"), ("S", "f.lists.items")}
    assert after_member(fields, read) == set()      # an element before the last read: the array may end sooner
    assert after_member(fields, read | {("S", "f.tuples.numfree[-1]")}) == {("S", "f.lists")}
    assert after_member(fields, {("S", "f.tuples.numfree[-1]"), ("S", "f.lists.items")}) == set()   # not proven


def test_by_value_types():
    assert [by_value(t) for t in ("PyObject", "struct _object", "const struct gc_generation", "PyObject *",
                                  "struct gc_generation[3]", "void (*)(void)")] == \
        ["PyObject", "_object", "gc_generation", None, None, None]


# ---------------------------------------------------------------- in live interpreters
def run_in(version: str, script: str, *args) -> dict:
    python = pyenv_python(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} here (`pyenv install {version}`)")
    out = subprocess.run([str(python), "-c", script, *args], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


#: Run in an interpreter: its exact shipped table, and copies of it with one field moved. A copy is
#: the exact table's header and pool with that one struct's row replaced, checked as a table's rows
#: are (`compact_read.check_row`); the pool's other rows and its constants are decoded from the file as
#: the runtime decodes them, once.
MOVED_SCRIPT = r"""
import copy, json, sys
from offsets import runtime
from offsets.errors import TableError
from offsets.layout import compact_read
e = next(e for e in runtime.shipped_index()["tables"] if e["hexversion"] == sys.hexversion and
         e["triple"] == runtime.identity.running_target()["triple"] and
         e.get("vendor") in (None, "upstream") and not any(e["config"].values()))
exact = runtime.load_shipped(e)
good = runtime.live_check(exact)
out = {"good": good.ok, "summary": good.summary(), "moved": {}}

decoded = {}      # the exact pool's rows, decoded once for every copy (each copy gets its own list)

class OneRowMoved:
    def __init__(self, pool, key, row):
        self._pool, self._key, self._row = pool, key, row
    def __getattr__(self, name):
        return getattr(self._pool, name)
    def row(self, key, ref):
        if key == self._key:
            return compact_read.check_row(copy.deepcopy(self._row), key, "moved")
        if key not in decoded:
            decoded[key] = self._pool.row(key, ref)
        row = list(decoded[key])
        row[6] = list(row[6])
        return row
    def constants(self, root, sizes):       # the same in every copy, and only read
        if "constants" not in decoded:
            decoded["constants"] = self._pool.constants(root, sizes)
        return decoded["constants"]

for spec in json.loads(sys.argv[1]):
    struct, path, delta = spec
    key = exact.resolve_struct(struct)
    if key is None or (key, path) not in good.proven:   # no check of this version reads it
        continue
    row = list(exact.pool.row(key, exact.order[key]))
    if path is None:      # the struct's size
        row[2] += delta
    for f in row[6]:
        if f[0] == path:
            f[1] += delta
    bad = runtime.Loaded(exact.head, OneRowMoved(exact.pool, key, row), "moved", runtime.shipped_index()["aliases"])
    try:
        bad.fields(key)
    except TableError:     # moved out of its struct: not a table a layout can have
        continue
    res = runtime.live_check(bad)
    out["moved"][f"{struct}.{path or 'size'}{delta:+d}"] = {"ok": res.ok, "proven": (key, path) in res.proven,
                                                  "failed": res.failed[:2]}
print(json.dumps(out))
"""

#: What the C API and the objects' attributes check, each field moved by one slot of its size.
MOVES = [
    ("PyInterpreterState", "gc.generations", 4), ("PyInterpreterState", "gc.generations", -4),
    ("PyInterpreterState", "ceval.recursion_limit", 4), ("PyInterpreterState", "eval_frame", 8),
    ("PyThreadState", "c_profileobj", 8), ("PyThreadState", "c_traceobj", 8), ("PyThreadState", "exc_info", 8),
    ("PyThreadState", "recursion_depth", 4), ("PyThreadState", "py_recursion_remaining", 4),
    ("PyThreadState", "py_recursion_limit", 4), ("PyThreadState", "recursion_remaining", 4),
    ("PyDictObject", "ma_keys", 8), ("PyDictObject", "ma_version_tag", 8), ("PyDictKeysObject", "dk_nentries", 8),
    ("PyDictKeysObject", "dk_indices", 8), ("PyDictKeyEntry", "me_value", 8),
    ("PySetObject", "fill", 8), ("PySetObject", "mask", 8), ("PySetObject", "used", 8),
    ("PyFrameObject", "f_back", 8), ("PyFrameObject", "f_trace", 8), ("_PyInterpreterFrame", "previous", 8),
    ("_PyInterpreterFrame", "frame_obj", 8), ("_PyErr_StackItem", "exc_value", 8),
    ("PyTypeObject", "tp_repr", 8), ("PyTypeObject", "tp_as_number", 8), ("PyNumberMethods", "nb_add", 8),
    ("PyCodeObject", "co_nlocals", 4), ("PyCodeObject", "co_stacksize", 4), ("PyVarObject", "ob_size", 8),
    ("PyMethodObject", "im_func", 8), ("PyCFunctionObject", "m_ml", 8), ("PyFunctionObject", "func_closure", 8),
    ("PyASCIIObject", "hash", 8), ("PyBaseExceptionObject", "traceback", 8), ("PyWeakReference", "wr_callback", 8),
    ("Py_buffer", "len", 8), ("Py_buffer", "shape", 8), ("PyConfig", "base_prefix", 8), ("PyConfig", "orig_argv", 8),
    ("PyWideStringList", "items", -8), ("_PyTupleIterObject", "it_index", 8), ("PyTracebackObject", "tb_lasti", 4),
    ("PyMethodDef", "ml_flags", 4), ("PyDictKeysObject", "dk_usable", 8), ("PyDictUnicodeEntry", "me_value", -8),
    ("PyThreadState", "context", 8), ("PyThreadState", "coroutine_origin_tracking_depth", 4),
    ("PyThreadState", "async_gen_firstiter", 8), ("typevarobject", "bound", 8), ("PyListObject", "allocated", 8),
    ("PyTypeObject", "tp_dictoffset", 8), ("PyTypeObject", "tp_weaklist", 8), ("PyModuleObject", "md_def", 8),
    ("arrayobject", "allocated", 8), ("arraydescr", "itemsize", -4), ("PyGenObject", "gi_exc_state", 8),
    ("PyCoroObject", "cr_qualname", 8), ("_PyInterpreterFrame", "owner", 1), ("PyHeapTypeObject", "ht_cached_keys", 8),
    ("PyCodeObject", "co_nlocalsplus", 4), ("PyMemberDef", "offset", 8), ("PySequenceMethods", "sq_inplace_concat", 8),
    # live_state: the interpreter's pointers, the frozen modules' table
    ("PyInterpreterState", "runtime", 8), ("PyInterpreterState", "imports.importlib", 8),
    ("PyInterpreterState", "importlib", 8), ("PyInterpreterState", "import_func", -8),
    ("PyInterpreterState", "callable_cache.len", 8), ("PyInterpreterState", "cached_objects.typevar_type", 8),
    ("PyInterpreterState", "slice_cache", 8), ("_frozen", "name", 8),
    # live_objects: objects' fields against what they or the interpreter say
    ("_PyDictViewObject", "dv_dict", -8), ("PyNameErrorObject", "name", -8), ("PyCMethodObject", "mm_class", -8),
    ("PyUnicodeObject", "data.any", -8), ("PyASCIIObject", "state.ready", 1), ("PyWeakReference", "wr_next", -8),
    ("PyWeakReference", "wr_prev", 8), ("typevarobject", "evaluate_bound", 8), ("typealiasobject", "compute_value", 8),
    ("typevarobject", "evaluate_default", 8), ("typevartupleobject", "default_value", 8),
    ("PyFunctionObject", "func_typeparams", 8), ("PyHeapTypeObject", "ht_slots", 8), ("PyGetSetDef", "doc", 8),
    ("PyGC_Head", "_gc_next", 8), ("PyGC_Head", "_gc_prev", -8), ("paramspecobject", "bound", 8),
    # live_typeobjects, and am_send through PyType_GetSlot
    ("PyTypeObject", "tp_vectorcall_offset", 8), ("PyMethodDescrObject", "vectorcall", -8),
    ("PyTypeObject", "tp_vectorcall", -8), ("PyTypeObject", "tp_methods", 8), ("PyTypeObject", "tp_subclasses", 8),
    ("PyTypeObject", "tp_version_tag", 4), ("PyTypeObject", "tp_version_tag", -4), ("PyTypeObject", "tp_doc", 8),
    ("PyAsyncMethods", "am_send", -8),
    # live_frames: frames, generators and code objects
    ("_PyInterpreterFrame", "f_locals", 8), ("PyFrameObject", "f_locals", 8), ("PyFrameObject", "f_back", 8),
    ("PyFrameObject", "f_localsplus", -8), ("PyFrameObject", "f_valuestack", 8), ("PyFrameObject", "f_stacktop", 8),
    ("PyFrameObject", "f_iblock", 4), ("PyFrameObject", "f_executing", 1), ("PyFrameObject", "f_lineno", 4),
    ("PyGenObject", "gi_frame_state", 1), ("_PyInterpreterFrame", "prev_instr", 8),
    ("PyCodeObject", "_co_firsttraceable", 4), ("PyCodeObject", "co_framesize", 4),
    ("PyCodeObject", "co_localsplusnames", 8), ("PyCodeObject", "co_localspluskinds", 8),
    # sizes: a struct's size changed (path None)
    ("PyTupleObject", None, 8), ("PyTypeObject", None, 8), ("PyMethodDef", None, 8), ("_frozen", None, 8),
    # live_thread: the thread state's counters found by what they do, and its links
    ("PyThreadState", "tracing", 4), ("PyThreadState", "tracing", -4), ("PyThreadState", "use_tracing", 4),
    ("PyThreadState", "c_recursion_remaining", 4), ("PyThreadState", "context_ver", 8),
    ("PyThreadState", "trash.delete_nesting", 4), ("PyThreadState", "root_cframe", -8), ("_PyCFrame", "previous", -8),
    ("_PyStackChunk", "previous", 8),
    # live_caches: inline caches where opcode._cache_format puts their counters
    ("_PyAttrCache", "counter", 2), ("_PyCallCache", "counter", 2), ("_PyLoadGlobalCache", "counter", 2),
    # live_wrappers: static types' slots where their wrapper descriptors' functions are
    ("PySequenceMethods", "sq_concat", 8), ("PySequenceMethods", "sq_inplace_repeat", -8),
    ("PyMappingMethods", "mp_length", 8), ("PyWrapperDescrObject", "d_wrapped", -8),
    # up to 3.10 and 3.11: wide strings, small ints, zombie frames; keys' and modules' records
    ("PyASCIIObject", "wstr", -8), ("PyCompactUnicodeObject", "wstr_length", -8), ("PyInterpreterState", "small_ints", 8),
    ("PyCodeObject", "co_zombieframe", 8), ("PyDictKeysObject", "dk_refcnt", 8), ("PyModuleDef", "m_base.m_init", 8),
    ("_PyInterpreterFrame", "stacktop", 4), ("PyFrameObject", "f_lineno", 4),
    ("PyInterpreterState", "ceval.tracing_possible", 4), ("PyFrameObject", "f_fast_as_locals", -1),
    ("PyASCIIObject", "state.statically_allocated", 4), ("PyDictValues", "size", 1),
    # live_records: the binary's own tables of offsetof (slotdefs; 3.13+ PYCONFIG_SPEC)
    ("PyTypeObject", "tp_getattr", 8), ("PyTypeObject", "tp_setattr", -8), ("PyConfig", "prefix", 8),
    ("PyConfig", "home", -8), ("PyConfig", "parse_argv", 4),
    # the interpreter's free lists (live_state), the specializer's versions (live_versions)
    ("PyInterpreterState", "list.free_list", 8), ("PyInterpreterState", "list.numfree", 4),
    ("PyInterpreterState", "dict_state.numfree", -4), ("PyInterpreterState", "tuple.free_list", 8),
    ("PyInterpreterState", "tuple.numfree", 4), ("PyInterpreterState", "object_state.freelists.lists.numfree", 4),
    ("PyInterpreterState", "object_state.freelists.tuples.items", 8), ("PyCodeObject", "co_version", 4),
    ("PyFunctionObject", "func_version", 4), ("PyDictKeysObject", "dk_version", 4),
    ("PyInterpreterState", "dict_state.next_keys_version", 8),
    # live_static_types: the static types' states, pinned by their first and last members
    ("PyInterpreterState", "types.builtins", 8), ("static_builtin_state", "tp_dict", 8),
    ("PyInterpreterState", "types.builtins.initialized", -8), ("managed_static_type_state", "tp_subclasses", 8),
    ("managed_static_type_state", "tp_weaklist", -8), ("managed_static_type_state", "type", 8),
    # live_opcache (3.8-3.10)
    ("_PyOpcache", "u.lg.ptr", 8), ("_PyOpcache", "optimized", -8), ("_PyOpcache", None, 8),
    ("PyCodeObject", "co_opcache", 8), ("PyAddrPair", "ap_lower", 4), ("PyAddrPair", "ap_upper", -4),
    ("PyGetSetDef", "get", 8), ("PyGetSetDef", "get", -8), ("PyGetSetDef", "set", 8), ("PyGetSetDef", "set", -8),
    # live_outputs: structs the C API fills in the check's own buffers
    ("PyStatus", "_type", 4), ("PyCompilerFlags", "cf_flags", 4), ("_PyUnicodeWriter", "buffer", 8),
    ("_PyUnicodeWriter", None, 8),
    ("_PyInterpreterFrame", "return_offset", 2), ("_PyInterpreterFrame", "return_offset", -2),
    ("PyHeapTypeObject", "_spec_cache.getitem", 8), ("PyHeapTypeObject", "_spec_cache.getitem_version", 4),
    ("PyInterpreterState", "interpreter_trampoline", 8), ("PyTracebackObject", "tb_lineno", -4),
    ("PyDictKeysObject", "dk_lookup", 8), ("PyDictKeysObject", "dk_lookup", -8),
    ("PyFrameObject", "f_blockstack", 4), ("PyTryBlock", "b_handler", 4), ("PyTryBlock", "b_level", -4),
    ("PyTryBlock", None, 4),
    ("PyInterpreterState", "float_state.free_list", 8), ("PyInterpreterState", "object_state.freelists.floats.items", 8),
    ("PyInterpreterState", "object_state.freelists.slices.slice_cache", 8), ("Py_buffer", None, 8),
    ("gc_generation", "count", -4), ("gc_generation", "head._gc_next", 8),
    # live_config (3.12+: a config of the check's own, set by _PyConfig_FromDict), live_lines, live_spec
    ("PyConfig", "executable", 8), ("PyConfig", "module_search_paths", 16), ("PyConfig", "install_signal_handlers", -4),
    ("PyConfig", "safe_path", 4), ("lineiterator", "li_line.ar_start", 4), ("lineiterator", "li_line.ar_line", -4),
    ("lineiterator", "li_code", 8), ("PyType_Spec", "basicsize", 4), ("PyType_Spec", "name", 8),
    ("PyType_Slot", "pfunc", -8), ("PyTypeObject", "tp_del", 8), ("PyTypeObject", "tp_del", -8),
    # live_outputs: what the parser and a unicode writer of the check's own read
    ("PyCompilerFlags", "cf_feature_version", -4), ("_PyUnicodeWriter", "min_length", 8),
    ("_PyUnicodeWriter", "min_length", -8), ("_PyUnicodeWriter", "overallocate", 1),
    ("Py_buffer", "suboffsets", 8), ("Py_buffer", "internal", -8),
    # live_objects: the collector's own list heads
    ("PyInterpreterState", "gc.generation0", 8), ("PyInterpreterState", "gc.permanent_generation.head._gc_next", 8),
    ("PyInterpreterState", "gc.permanent_generation.head._gc_prev", 8),
    # live_thread: where the chunk before a new data stack chunk ends
    ("_PyStackChunk", "top", 8), ("_PyStackChunk", "top", -8),
    # live_frames: the frame pyexpat adds to a traceback keeps its line
    ("PyFrameObject", "f_lineno", -4),
    # live_allocators: the allocators' functions against the binary's symbols
    ("PyMemAllocatorEx", "malloc", 8), ("PyMemAllocatorEx", "free", -8),
    ("PyObjectArenaAllocator", "alloc", 8), ("PyObjectArenaAllocator", "free", -8),
]


#: The versions `make test` moves each check's field on (the oldest and newest checks); `make prove`
#: the others (tests/prove/test_beyond_samples.py).
MOVED_VERSIONS, MOVED_SAMPLE = ("3.9", "3.12", "3.13"), ("3.9", "3.13")


@pytest.mark.slow
@pytest.mark.parametrize("version", MOVED_SAMPLE)
def test_every_check_fails_on_its_table_with_the_field_it_reads_moved(version):
    """Remembered once passed (tests/result_memo.py) under the package, the moves, the script and the
    interpreter with its libpython."""
    import result_memo

    python = pyenv_python(version)
    files = [] if python is None else [python.resolve(), *sorted(python.resolve().parent.parent.glob("lib/libpython*.so*"))]
    parts = (version, MOVED_SCRIPT, json.dumps(MOVES))
    if result_memo.passed_before("every-check-fails-moved", files, *parts):
        return
    got = run_in(version, MOVED_SCRIPT, json.dumps(MOVES))
    assert got["good"], got["summary"]
    assert len(got["moved"]) >= 25
    passed = {name: m for name, m in got["moved"].items() if m["ok"] or m["proven"]}
    assert passed == {}
    result_memo.passed("every-check-fails-moved", files, *parts)


from live_scripts import WRONG_SCRIPT  # noqa: E402  (tests/prove runs it too)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.9", "3.11", "3.13"])
def test_what_another_release_s_table_proves_is_what_the_exact_table_says(version):
    """pyenv 3.9.18 with Debian's 3.9.2 tables, 3.11.7 with Debian's 3.11.2, 3.13.0 with python.org's
    and Debian's 3.13.5, 3.13.15 and 3.13.18: every field any check proved, passing or not, is right."""
    got = run_in(version, WRONG_SCRIPT)
    assert got, "no other table of this minor version"
    assert sum(g["compared"] for g in got.values()) >= 100
    assert {name: g["wrong"] for name, g in got.items() if g["wrong"]} == {}


#: Run in pyenv's 3.13.0: its table with what Debian's 3.13 patches change (the differences between
#: Debian's and python.org's 3.13.15 tables, field by field) applied, as if the nearest table of a
#: python.org build were Debian's.
VENDOR_SCRIPT = r"""
import json, sys
from offsets import runtime
from offsets.layout import compact, compact_read
index = {e["name"]: e for e in runtime.shipped_index()["tables"]}
up, deb = (runtime.load_shipped(index[n]) for n in ("cpython-3.13.15-x86_64-linux-gnu",
                                                    "cpython-3.13.15-debian-x86_64-linux-gnu"))
e = index["cpython-3.13.0-x86_64-linux-gnu"]
head, notes, rows = compact.read_parts(compact.COMPACT_DIR / e["file"])
moved = []
for key, row in rows.items():
    if up.resolve_struct(key) is None or deb.resolve_struct(key) is None:
        continue
    a, b = up.fields(up.resolve_struct(key)), deb.fields(deb.resolve_struct(key))
    for f in row[6]:
        if f[0] in a and f[0] in b and a[f[0]][0] != b[f[0]][0]:
            f[1] += b[f[0]][0] - a[f[0]][0]
            moved.append((key, f[0]))
    row[2] += deb.size(deb.resolve_struct(key)) - up.size(up.resolve_struct(key))
bad = runtime.Loaded(*compact_read.parse(compact.text_of(head, notes, rows)), "vendor", runtime.shipped_index()["aliases"])
res = runtime.live_check(bad)
print(json.dumps({"moved": moved, "ok": res.ok, "failed": res.failed,
                  "proven": [m for m in moved if tuple(m) in res.proven]}))
"""


@pytest.mark.slow
def test_debian_s_pygc_head_patch_is_caught_in_a_python_org_build():
    got = run_in("3.13", VENDOR_SCRIPT)
    assert ["PyInterpreterState", "gc.generations"] in got["moved"]
    assert not got["ok"] and got["proven"] == []
    assert any(f.startswith("PyInterpreterState.gc (gc.get_threshold") for f in got["failed"]), got["failed"]


# ---------------------------------------------------------------- the sources' type records
ORDER = ["ob_base", "tp_name", "tp_basicsize", "tp_itemsize", "tp_dealloc", "tp_members"]
CONSTANTS = {"Py_T_INT": 1, "_Py_T_OBJECT": 6, "Py_READONLY": 1, "T_PYSSIZET": 19, "READONLY": 1}
SOURCE = r'''
#define OFF(x) offsetof(PyThingObject, x)
static PyMemberDef thing_members[] = {
    {"count",   Py_T_INT,     OFF(count),   Py_READONLY},
    {"__doc__", _Py_T_OBJECT, OFF(doc),     0, "its doc"},
    {"later",   UNKNOWN_TYPE, OFF(later),   0},
    {NULL}  /* Sentinel */
};
#undef OFF
#define OFF(x) offsetof(OtherObject, x)
PyTypeObject PyThing_Type = {
    PyVarObject_HEAD_INIT(&PyType_Type, 0)
    "thing",
    sizeof(PyThingObject) - sizeof(PyObject *), /* tp_basicsize */
    sizeof(PyObject *),
#ifdef Py_GIL_DISABLED
    (destructor)thing_dealloc_ft,
#else
    (destructor)thing_dealloc,
#endif
    thing_members,
};
static PyTypeObject Inherits_Type = { PyVarObject_HEAD_INIT(NULL, 0) "mod.inherits", 0, 0 };
static PyType_Slot spec_slots[] = {{Py_tp_members, thing_members}, {0, NULL}};
static PyType_Spec spec = {.name = "mod.spec", .basicsize = offsetof(PyThingObject, items) + 1,
                           .slots = spec_slots};
static PyType_Spec relative = {.name = "mod.relative", .basicsize = -(Py_ssize_t)sizeof(Extra)};
'''


def test_type_records_read_positional_designated_and_conditional_initializers():
    from offsets.scan.type_records import CHOSEN, read_file

    got = read_file("Modules/thing.c", SOURCE, ORDER, CONSTANTS)
    members = [["count", 1, 1, "PyThingObject", "count"], ["__doc__", 6, 0, "PyThingObject", "doc"]]
    assert got["thing"] == [{"file": "Modules/thing.c", "symbol": "PyThing_Type", "members": members,
                             "basicsize": [[1, "size", "PyThingObject", None], [-1, "pointer", None, None]],
                             "itemsize": [[1, "pointer", None, None]]}]
    assert got["mod.spec"][0]["basicsize"] == [[1, "offset", "PyThingObject", "items"], [1, "int", None, None]]
    assert got["mod.spec"][0]["members"] == members
    assert got["mod.inherits"][0]["basicsize"] == [[0, "int", None, None]]     # left out by `read` (inherited)
    assert got["mod.relative"][0]["basicsize"][0][0] < 0                         # left out by `read` (relative)
    assert CHOSEN not in str(got)


def test_a_conditional_that_shifts_the_positions_cuts_the_initializer_there():
    from offsets.scan.type_records import read_file

    text = SOURCE.replace("    (destructor)thing_dealloc,\n#endif", "    (destructor)thing_dealloc, 0,\n#endif")
    got = read_file("Modules/thing.c", text, ORDER, CONSTANTS)["thing"][0]
    assert "members" not in got and got["itemsize"] == [[1, "pointer", None, None]]


#: Run in an interpreter: every type record of its minor (data/compact/types.json, from other
#: releases' sources) against its own type objects, read with ctypes only (no offsets table): each
#: record's struct and field, evaluated with the interpreter's exact table (gcc-verified), is what the
#: compiled binary holds: tp_basicsize, tp_itemsize and each PyMemberDef's offset.
RECORDS_SCRIPT = r"""
import ctypes, json, sys
from offsets import runtime
from offsets.runtime.live import types as live_types
from offsets.runtime.tables import type_records
e = next(e for e in runtime.shipped_index()["tables"] if e["hexversion"] == sys.hexversion and
         e["triple"] == runtime.identity.running_target()["triple"] and
         e.get("vendor") in (None, "upstream") and not any(e["config"].values()))
t = runtime.load_shipped(e)
records = type_records(e["version"])

class MemberDef(ctypes.Structure):     # PyMemberDef as structmember.h declares it in every version
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("offset", ctypes.c_ssize_t),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]

def value(terms):
    total = 0
    for c, kind, s, p in terms:
        k = s and t.resolve_struct(s)
        if s and (k is None or kind == "offset" and p not in t.fields(k)):
            return None      # not in this table (a .c struct its DWARF did not fill)
        total += c if kind == "int" else c * ctypes.sizeof(ctypes.c_void_p) if kind == "pointer" else \
            c * (t.size(k) if kind == "size" else t.fields(k)[p][0])
    return total

out = {"sizes": 0, "members": 0, "wrong": []}
member_type = type(type.__dict__["__basicsize__"])
for tp in live_types.reachable():
    rec = records.get(live_types.name_of(tp))
    if rec is None:
        continue
    for key, real in (("basicsize", tp.__basicsize__), ("itemsize", tp.__itemsize__)):
        if key in rec and value(rec[key]) is not None:
            out["sizes"] += 1
            if value(rec[key]) != real:
                out["wrong"].append(f"{tp.__name__}.__{key}__ {real}, the record {value(rec[key])}")
    for name, code, flags, struct, path in rec.get("members", ()):
        d = tp.__dict__.get(name)
        if type(d) is not member_type:
            continue
        # PyMemberDescrObject: PyDescr_COMMON (PyObject_HEAD, d_type, d_name, d_qualname), then d_member
        ptr = ctypes.c_void_p.from_address(id(d) + ctypes.sizeof(ctypes.c_void_p) * 5).value
        m = MemberDef.from_address(ptr)
        k = t.resolve_struct(struct)
        if (m.name.decode(), m.type, m.flags) != (name, code, flags) or k is None or path not in t.fields(k):
            continue          # another release's member: not compared (proofs/types.py does the same)
        out["members"] += 1
        if m.offset != t.fields(t.resolve_struct(struct))[path][0]:
            out["wrong"].append(f"{tp.__name__}.{name} at {m.offset}, {struct}.{path} at "
                                f"{t.fields(t.resolve_struct(struct))[path][0]}")
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.9", "3.13"])
def test_the_type_records_of_other_releases_are_what_this_build_s_compiler_made(version):
    got = run_in(version, RECORDS_SCRIPT)
    assert got["sizes"] >= 80 and got["members"] >= 80, got
    assert got["wrong"] == []


def test_the_shipped_form_of_the_records_keeps_only_what_every_table_of_a_minor_agrees_on(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from offsets.layout import compact
    from offsets.runtime import tables

    code = {"symbol": "PyCode_Type", "basicsize": [[1, "offset", "PyCodeObject", "co_code_adaptive"]],
            "itemsize": [[1, "size", "_Py_CODEUNIT", None]],
            "members": [["co_argcount", 1, 1, "PyCodeObject", "co_argcount"],
                        ["__doc__", 6, 0, "block@Modules/_collectionsmodule.c", "doc"]]}
    tup = {"symbol": "PyTuple_Type", "basicsize": [[1, "size", "PyTupleObject", None], [-1, "pointer", None, None]],
           "itemsize": [[1, "pointer", None, None]]}
    made = [SimpleNamespace(build=SimpleNamespace(version="3.13.5"), types={"code": code, "tuple": tup}),
            SimpleNamespace(build=SimpleNamespace(version="3.13.15"),
                            types={"code": code, "tuple": dict(tup, itemsize=[[2, "pointer", None, None]])}),
            SimpleNamespace(build=SimpleNamespace(version="3.9.2"), types={"tuple": tup})]
    (tmp_path / "types.json").write_text(compact.types_text(made))
    monkeypatch.setattr(tables, "COMPACT_DIR", str(tmp_path))
    monkeypatch.setattr(tables, "_types", {})
    assert tables.type_records("3.13.0") == {"code": code}
    assert tables.type_records("3.9.18") == {"tuple": tup}
    assert tables.type_records("3.12.1") == {}


# ---------------------------------------------------------------- another process
@pytest.mark.slow
@pytest.mark.parametrize("minor", ["3.9", "3.12", "3.13"])
def test_stack_reads_a_rebuilt_copy_no_table_is_exact_for(minor, tmp_path, capsys):
    """`offsets stack --pid` on a copy with no headers and another build-id: the table of the same
    code is proven in its memory (types' records, the type system) and every thread's stack is what
    the process recorded of itself."""
    from foreign_copy import foreign_copy
    from parked_target import Parked, stacks_of
    from offsets.cli import main

    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv has no CPython {minor}")
    exe, env = foreign_copy(python, tmp_path / "copy")
    t = Parked(exe, tmp_path, depth=50, env=env)
    try:
        assert main(["stack", "--pid", str(t.pid), "--json"]) == 0, capsys.readouterr().err
        doc = json.loads(capsys.readouterr().out)
        got = stacks_of(doc)
        assert got == t.record
        assert doc["build"]["earned"] == "proven", doc["build"]
    finally:
        t.close()


# ---------------------------------------------------------------- the cache of proofs
def running_table():
    from offsets import runtime

    me = runtime.running_identity()
    e = next(e for e in runtime.shipped_index()["tables"] if runtime.earning(runtime.entry_build(e), me).exact)
    return runtime.load_shipped(e)


def test_a_cached_proof_is_the_check_s_own_result_and_any_change_is_a_miss(tmp_path, monkeypatch):
    from offsets.runtime import proof_cache
    from offsets.runtime.live import runner

    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path))
    t = running_table()
    fresh = runner.check(t)
    first = proof_cache.check(t)          # checked, and kept
    assert first.ok and not getattr(first, "cached", False)
    again = proof_cache.check(running_table())
    assert again.cached and again.proven == fresh.proven and again.passed == fresh.passed
    # the binary's file identity is part of the key: another mtime is another binary
    binary = proof_cache.binary_of()[0]
    real_stat = os.stat

    before = proof_cache.key(t)
    monkeypatch.setattr(proof_cache.os, "stat", lambda path, *a, **k: _shifted(real_stat(path, *a, **k))
                        if path == binary else real_stat(path, *a, **k))
    assert proof_cache.key(t) != before
    assert not getattr(proof_cache.check(running_table()), "cached", False)


def _shifted(st):
    """A stat result one second later in mtime (another build of the same path)."""
    class Later:
        def __getattr__(self, name):
            return getattr(st, name) + (1_000_000_000 if name == "st_mtime_ns" else 0)
    return Later()


def test_a_damaged_or_foreign_entry_is_a_miss_and_a_failed_check_is_not_kept(tmp_path, monkeypatch):
    from offsets.runtime import proof_cache
    from offsets.proofs.result import Result

    monkeypatch.setenv("OFFSETS_CACHE", str(tmp_path))
    t = running_table()
    k = proof_cache.key(t)
    proof_cache.check(t)
    entry = Path(proof_cache._entry(k))
    text = entry.read_text()
    entry.write_text(text[:len(text) // 2])
    assert proof_cache.load(k) is None
    entry.write_text(text.replace(k, "0" * len(k)))
    assert proof_cache.load(k) is None
    entry.unlink()
    failed = Result()
    failed.failed.append("a field moved")
    monkeypatch.setattr("offsets.runtime.live.runner.check", lambda table: failed)
    assert proof_cache.check(t) is failed and not entry.exists()


@pytest.mark.slow
def test_what_stays_unproven_is_listed_with_why(tmp_path):
    """`python -m offsets.runtime --unproven NEEDS` in a rebuilt 3.12 (no table exact): the names of the
    issue's examples are answered now, and what is not says why."""
    from foreign_copy import foreign_copy

    python = pyenv_python("3.12")
    if python is None:
        missing_input("pyenv has no CPython 3.12")
    exe, env = foreign_copy(python, tmp_path / "copy")
    needs = tmp_path / "needs.txt"
    needs.write_text("# the issue's examples\nPyVarObject.ob_size\nPyTypeObject.tp_dictoffset\nPyCodeObject.co_nlocals\n"
                     "PyMethodObject.im_func\nPyCFunctionObject.m_ml\nPyThreadState.datastack_chunk\nNoSuch.field\n")
    out = subprocess.run([str(exe), "-m", "offsets.runtime", "--unproven", str(needs)], capture_output=True, text=True,
                         env={**{k: v for k, v in os.environ.items() if not k.startswith("OFFSETS_")}, **env,
                              "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0", "OFFSETS_CACHE": str(tmp_path)})
    assert out.returncode == 2, out.stderr
    lines = out.stdout.splitlines()
    assert "(proven:" in lines[0] and re.fullmatch(r"\d of 7 names answered; not answered:", lines[1])
    missing = dict(line.strip().split(": ", 1) for line in lines[2:])
    assert missing["NoSuch.field"] == "cpython-3.12.1-x86_64-linux-gnu has no struct NoSuch"
    assert not {"PyVarObject.ob_size", "PyTypeObject.tp_dictoffset", "PyCodeObject.co_nlocals",
                "PyMethodObject.im_func", "PyCFunctionObject.m_ml"} & set(missing)
    assert all(why.startswith(("no check reads", "cpython-3.12.1")) for why in missing.values())


# ---------------------------------------------------------------- .c structs of extension modules
ARRAY_SCRIPT = r"""
import array, ctypes, json, sys
rows = json.loads(sys.argv[1])
a = array.array("i", [7, -8, 9])
obj, descr = rows["arrayobject"], rows["arraydescr"]
def word(addr, n):
    return int.from_bytes(ctypes.string_at(addr, n), sys.byteorder)
items = word(id(a) + obj["ob_item"][0], 8)
d = word(id(a) + obj["ob_descr"][0], 8)
print(json.dumps({"items": ctypes.string_at(items, len(a) * a.itemsize) == a.tobytes(),
                  "allocated": word(id(a) + obj["allocated"][0], obj["allocated"][1]) >= len(a),
                  "size": word(id(a) + obj["ob_base.ob_size"][0], 8), "typecode": chr(word(d + descr["typecode"][0], 1)),
                  "itemsize": word(d + descr["itemsize"][0], descr["itemsize"][1]), "basicsize": type(a).__basicsize__}))
"""


@pytest.mark.slow
def test_the_array_module_s_structs_come_from_its_dwarf_and_gcstate_names_its_struct():
    """pyenv 3.12's lib-dynload/array*.so carries DWARF: arrayobject and arraydescr, read in a live
    array through those offsets, are what the array says of itself (its bytes, length, typecode,
    itemsize, __basicsize__); GCState (a typedef in Modules/gcmodule.c) names struct _gc_runtime_state."""
    from offsets.layout import table_yaml
    from offsets.scan import dwarf

    python = pyenv_python("3.12")
    if python is None:
        missing_input("pyenv has no CPython 3.12")
    lib = python.parent.parent / "lib" / "libpython3.12.so.1.0"
    table, _ = dwarf.checked_fill(table_yaml.load(ROOT / "generated" / "cpython-3.12.1-x86_64-linux-gnu.yaml"), lib)
    assert table.names.get("GCState") == "_gc_runtime_state"
    filled, compared = dwarf.fill_extensions(table, lib)
    assert compared > 100 and {"arrayobject", "arraydescr"} <= set(filled.structs)
    every, compared = dwarf.fill_extensions(table, lib, names=None)     # every module, as the rule reads them
    assert compared > 10000 and "BLAKE2bObject" in every.structs
    assert not {"ACCOUNTING", "ENCODING", "DTD"} & set(every.structs)     # expat's internals are no object's
    rows = {k: {f.path: (f.offset, f.size) for f in filled.structs[k].fields} for k in ("arrayobject", "arraydescr")}
    out = subprocess.run([str(python), "-c", ARRAY_SCRIPT, json.dumps(rows)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got == {"items": True, "allocated": True, "size": 3, "typecode": "i", "itemsize": 4,
                   "basicsize": filled.structs["arrayobject"].size}


# ---------------------------------------------------------------- free-threaded builds and sub-interpreters
SUBINTERPRETER_SCRIPT = r"""
import json, sys
try:
    import _interpreters as interpreters
except ImportError:
    import _xxsubinterpreters as interpreters
out = {}
if sys.argv[1] == "main-first":
    import offsets
    out["main"] = [offsets.get("PyTupleObject.ob_item"), offsets.build().kind]
code = '''
import sys
sys.path.insert(0, %r)
import offsets, offsets.runtime as r
try:
    got = [offsets.get("PyCodeObject.co_nlocals"), offsets.build().kind, "ctypes" in sys.modules]
except Exception as e:
    got = [type(e).__name__]
open(%r, "w").write(repr(got))
''' % (sys.path[0], sys.argv[2])
interpreters.run_string(interpreters.create(), code)
out["sub"] = eval(open(sys.argv[2]).read())
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.parametrize("minor", ["3.12", "3.13"])
def test_a_sub_interpreter_answers_from_the_binary_s_kept_proof_or_refuses(minor, tmp_path):
    """A sub-interpreter alone runs the check itself where it can import ctypes, else refuses, in one
    piece; with its binary's proof kept by the main interpreter it answers what that proof proved
    (the same binary, the same layout) without reading memory at all (no ctypes imported)."""
    from foreign_copy import foreign_copy

    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv has no CPython {minor}")
    exe, env = foreign_copy(python, tmp_path / "copy")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OFFSETS_")}, **env, "PYTHONPATH": str(ROOT),
           "OFFSETS_AUTOSCAN": "0", "OFFSETS_CACHE": str(tmp_path / "cache")}
    runs = {}
    for first in ("sub-only", "main-first"):
        out = subprocess.run([str(exe), "-c", SUBINTERPRETER_SCRIPT, first, str(tmp_path / f"{first}.txt")],
                             capture_output=True, text=True, env=env, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        runs[first] = json.loads(out.stdout)
    assert runs["sub-only"]["sub"] in (["NoMatchingTable"], [runs["main-first"]["sub"][0], "proven", True])
    assert runs["main-first"]["main"][1] == "proven"
    assert runs["main-first"]["sub"][1:] == ["proven", False]


LEGACY_SUBINTERPRETER_SCRIPT = r"""
import json, sys, _testcapi
code = '''
import json, sys
sys.path.insert(0, %r)
from offsets import runtime
e = next(e for e in runtime.shipped_index()["tables"] if e["hexversion"] == sys.hexversion and
         e["triple"] == runtime.identity.running_target()["triple"] and
         e.get("vendor") in (None, "upstream") and not any(e["config"].values()))
r = runtime.live_check(runtime.load_shipped(e))
open(%r, "w").write(json.dumps([r.ok, r.failed[:3]]))
''' % (sys.path[0], sys.argv[1])
assert _testcapi.run_in_subinterp(code) == 0
print(open(sys.argv[1]).read())
"""


@pytest.mark.slow
@pytest.mark.parametrize("minor", ["3.9", "3.12", "3.13"])
def test_the_live_check_passes_in_a_sub_interpreter_that_shares_the_gil(minor, tmp_path):
    """In a legacy sub-interpreter (its own modules, the main interpreter's GIL: mod_wsgi's), every
    check runs or is not run, and none waits for anything (3.9's ctypes callbacks wait there for the
    GIL their thread holds: the check that needs one is not run in a sub-interpreter)."""
    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv has no CPython {minor}")
    out = subprocess.run([str(python), "-c", LEGACY_SUBINTERPRETER_SCRIPT, str(tmp_path / "got.json")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [True, []]


def test_every_module_of_the_live_check_is_part_of_its_cache_key():
    """A kept proof is made again when any code of the check changes: every module of offsets.proofs
    and offsets.runtime.live that the check imports is among the files its key hashes."""
    import sys

    from offsets.runtime import proof_cache
    from offsets.runtime.live import runner

    assert runner.check
    loaded = {os.path.realpath(m.__file__) for name, m in list(sys.modules.items())
              if (name.startswith("offsets.proofs") or name.startswith("offsets.runtime.live")) and getattr(m, "__file__", None)}
    assert len(loaded) > 20
    assert loaded - {os.path.realpath(p) for p in proof_cache.code_files()} == set()


#: The free-threaded table of 3.13.15 checked in pyenv's 3.13.0 (a GIL build): its PyASCIIObject.state
#: is at 48, past the end of a 7-char ASCII str (48 bytes), where a few bits match by chance.
WRONG_STATE_SCRIPT = r"""
import json
from offsets import runtime
e = next(e for e in runtime.shipped_index()["tables"] if e["name"] == "cpython-3.13.15-freethreaded-x86_64-linux-gnu")
got = []
for _ in range(5):
    t = runtime.load_shipped(e)
    r = runtime.live_check(t)
    key = t.resolve_struct("PyASCIIObject")
    got.append([r.ok, t.fields(key)["state.kind"][0], sorted(p for k, p in r.proven if k == key and p and p.startswith("state"))])
print(json.dumps(got))
"""


@pytest.mark.slow
def test_a_few_bits_read_where_a_wrong_table_puts_them_prove_nothing():
    """The kind bits of one str matched by chance (3 bits, at the free-threaded table's offset in a GIL
    build: `state.kind` proven in 4 runs of 4 before); only strs of three kinds prove them, and there
    the second str's bits are its UTF-8 pointer's, NULL. (`state.ascii` still passes by chance at
    times: three of its four strs have a NULL word there, so only the first one's neighbour decides;
    the check fails as a whole, so nothing it proved is used.)"""
    runs = run_in("3.13", WRONG_STATE_SCRIPT)
    assert all(state_at == 48 and not ok for ok, state_at, _ in runs), runs
    assert [p for _, _, proven in runs for p in proven if p in ("state", "state.kind")] == [], runs
