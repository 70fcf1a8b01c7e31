/* jitdemo: what a JIT needs from `offsets`, in one file to copy.
 *
 * Two ways to know where CPython keeps a field, used together:
 *   - compile time: pyoffsets_build.h, the generated header of the exact build this extension is
 *     compiled for (setup.py's offsets.include_dirs() writes it from the table the runtime chose).
 *     Its constants can be baked into generated code; with PYOFFSETS_CHECK_LAYOUT the compiler
 *     proves them against this build's own headers (_Static_assert(offsetof(...) == N)) for every
 *     public struct and every constant visible here. Its macros follow data/aliases.yaml's
 *     canonical names too, so PYOFFSETS_listiterobject_it_index exists on every version.
 *   - run time: pyoffsets.h (directory: offsets.get_include()), which asks the `offsets` package
 *     about the interpreter that is actually running, for any struct (also .c-private ones such as
 *     the list iterator before 3.12, which no compile-time proof can reach).
 * At import, every constant used below is compared with the run-time answer; a difference refuses
 * the import, so the module never runs with a layout it was not compiled for.
 *
 * What the bits mean comes the same two ways: PYOFFSETS_CONST_<NAME> in the generated header
 * (asserted against the build's own enum under PYOFFSETS_CHECK_INTERNAL_LAYOUT, where a JIT
 * includes the internal headers) and PyOffsets_Constant() at run time. gen_owner() reads the
 * `owner` byte of a suspended generator's frame, whose meaning is `enum _frameowner` (3.11+):
 * FRAME_OWNED_BY_GENERATOR is 1, while FRAME_OWNED_BY_CSTACK moved from 3 to 4 in 3.14. Before
 * 3.11 a generator's frame is a PyFrameObject with no owner: on 3.10 the demo reads its `f_state`
 * and compares it with FRAME_SUSPENDED (`enum _framestate`), on 3.8 and 3.9, which have neither
 * enum, it says so (and that the table has no such constant, both ways).
 *
 * walk() follows the chain of frames from the current one outward, as a JIT's frame evaluator or a
 * sampler does, and yields only the frames Python itself shows (sys._getframe(), tracebacks). It
 * skips what CPython's _PyFrame_IsIncomplete() skips (Include/internal/pycore_frame.h, 3.11+):
 *   - the C-stack shim each entry into the interpreter from C pushes (3.12+: owner
 *     FRAME_OWNED_BY_CSTACK; 3.14+: any owner from FRAME_OWNED_BY_INTERPRETER up; from 3.13 its
 *     f_executable is None, not a code object, so the owner is tested first), e.g. under a key
 *     function that sorted() calls;
 *   - an incomplete frame: not a generator's, and its instruction pointer (prev_instr; 3.13:
 *     instr_ptr) before its code's first traceable instruction (co_code_adaptive +
 *     _co_firsttraceable code units). On 3.13 that is also the shim (_Py_InitCleanup, owned by the
 *     thread) under an __init__ that CALL_ALLOC_AND_ENTER_INIT entered without the eval-frame hook.
 * Before 3.11 frames are PyFrameObjects linked by f_back, with nothing to skip. (A free-threaded
 * 3.14+ runs a thread's own copy of the bytecode past the first thread: there the instruction
 * pointer is compared with that copy, _PyFrame_GetBytecode(), which this demo does not do.)
 *
 * Build and run (docs/c-api.md, "A worked example"):
 *     cd examples/jitdemo && pip install . && python demo.py
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "pyoffsets.h"                 /* run time */
#define PYOFFSETS_CHECK_LAYOUT 1       /* compile time, proven against this build's headers */
#include "pyoffsets_build.h"           /* the build being compiled for: offsets.include_dirs() */

/* One name per field on every version: the canonical names (3.12+'s _PyListIterObject included). */
#define IT_INDEX PYOFFSETS_listiterobject_it_index
#define IT_SEQ PYOFFSETS_listiterobject_it_seq
#define TUPLE_ITEMS PYOFFSETS_PyTupleObject_ob_item

/* A suspended generator's frame state: its owner byte (3.11+), its f_state (3.10), or nothing. */
#if defined(PYOFFSETS_CONST_FRAME_OWNED_BY_GENERATOR)          /* 3.11+: Include/internal/pycore_frame.h */
#  define GEN_STATE "owner", "PyGenObject.gi_iframe", "_PyInterpreterFrame.owner", "FRAME_OWNED_BY_GENERATOR"
#  define GEN_STATE_CT PYOFFSETS_PyGenObject_gi_iframe, PYOFFSETS__PyInterpreterFrame_owner, \
                       PYOFFSETS_CONST_FRAME_OWNED_BY_GENERATOR
#  define GEN_STATE_EMBEDDED 1     /* the frame lives inside the generator object */
#elif defined(PYOFFSETS_CONST_FRAME_SUSPENDED)                 /* 3.10: Include/cpython/frameobject.h */
#  define GEN_STATE "f_state", "PyGenObject.gi_frame", "PyFrameObject.f_state", "FRAME_SUSPENDED"
#  define GEN_STATE_CT PYOFFSETS_PyGenObject_gi_frame, PYOFFSETS_PyFrameObject_f_state, PYOFFSETS_CONST_FRAME_SUSPENDED
#  define GEN_STATE_EMBEDDED 0     /* gi_frame points at a frame object */
#endif

/* The current frame's code object: thread state -> frame -> code, a path that changed twice. */
#if defined(PYOFFSETS_PyThreadState_current_frame)             /* 3.13+ */
#  define FRAME_PATH "PyThreadState.current_frame", NULL, "_PyInterpreterFrame.f_executable"
static const Py_ssize_t frame_ct[3] = {PYOFFSETS_PyThreadState_current_frame, -1,
                                       PYOFFSETS__PyInterpreterFrame_f_executable};
#elif defined(PYOFFSETS__PyCFrame_current_frame)               /* 3.11, 3.12 */
#  define FRAME_PATH "PyThreadState.cframe", "_PyCFrame.current_frame", "_PyInterpreterFrame.f_code"
static const Py_ssize_t frame_ct[3] = {PYOFFSETS_PyThreadState_cframe, PYOFFSETS__PyCFrame_current_frame,
                                       PYOFFSETS__PyInterpreterFrame_f_code};
#else                                                          /* up to 3.10 */
#  define FRAME_PATH "PyThreadState.frame", NULL, "PyFrameObject.f_code"
static const Py_ssize_t frame_ct[3] = {PYOFFSETS_PyThreadState_frame, -1, PYOFFSETS_PyFrameObject_f_code};
#endif

/* Walking the chain: the link, the code, and what _PyFrame_IsIncomplete reads (NULL: not in this version). */
#if defined(PYOFFSETS__PyInterpreterFrame_instr_ptr)           /* 3.13+ */
#  define WALK_NAMES "_PyInterpreterFrame.previous", "_PyInterpreterFrame.f_executable", "_PyInterpreterFrame.owner", \
                     "_PyInterpreterFrame.instr_ptr", "PyCodeObject.co_code_adaptive", "PyCodeObject._co_firsttraceable"
#  define WALK_CT PYOFFSETS__PyInterpreterFrame_previous, PYOFFSETS__PyInterpreterFrame_f_executable, \
                  PYOFFSETS__PyInterpreterFrame_owner, PYOFFSETS__PyInterpreterFrame_instr_ptr, \
                  PYOFFSETS_PyCodeObject_co_code_adaptive, PYOFFSETS_PyCodeObject__co_firsttraceable
#elif defined(PYOFFSETS__PyInterpreterFrame_prev_instr)        /* 3.11, 3.12 */
#  define WALK_NAMES "_PyInterpreterFrame.previous", "_PyInterpreterFrame.f_code", "_PyInterpreterFrame.owner", \
                     "_PyInterpreterFrame.prev_instr", "PyCodeObject.co_code_adaptive", "PyCodeObject._co_firsttraceable"
#  define WALK_CT PYOFFSETS__PyInterpreterFrame_previous, PYOFFSETS__PyInterpreterFrame_f_code, \
                  PYOFFSETS__PyInterpreterFrame_owner, PYOFFSETS__PyInterpreterFrame_prev_instr, \
                  PYOFFSETS_PyCodeObject_co_code_adaptive, PYOFFSETS_PyCodeObject__co_firsttraceable
#else                                                          /* up to 3.10: PyFrameObjects */
#  define WALK_NAMES "PyFrameObject.f_back", "PyFrameObject.f_code", NULL, NULL, NULL, NULL
#  define WALK_CT PYOFFSETS_PyFrameObject_f_back, PYOFFSETS_PyFrameObject_f_code, -1, -1, -1, -1
#endif
enum { PREVIOUS, CODE, OWNER, INSTR, CODE_UNITS, FIRST_TRACEABLE, WALK_N };
static const Py_ssize_t walk_ct[WALK_N] = {WALK_CT};
/* The owners walk() tests (enum _frameowner), -1 where a version has no such owner: a shim is
 * owned by the C stack (3.12, 3.13) or, from 3.14, by the C stack or the interpreter (the owners
 * from FRAME_OWNED_BY_INTERPRETER up); 3.14+'s f_executable is a stack reference, tagged in its
 * low bits (Py_TAG_BITS). */
#ifdef PYOFFSETS_CONST_FRAME_OWNED_BY_GENERATOR
#  define OWNED_BY_GENERATOR_CT PYOFFSETS_CONST_FRAME_OWNED_BY_GENERATOR
#else
#  define OWNED_BY_GENERATOR_CT -1
#endif
#if defined(PYOFFSETS_CONST_FRAME_OWNED_BY_INTERPRETER)        /* 3.14+ */
#  define SHIM_OWNER "FRAME_OWNED_BY_INTERPRETER"
#  define SHIM_OWNER_CT PYOFFSETS_CONST_FRAME_OWNED_BY_INTERPRETER
#  define CODE_TAG_BITS_CT PYOFFSETS_CONST_Py_TAG_BITS
#elif defined(PYOFFSETS_CONST_FRAME_OWNED_BY_CSTACK)           /* 3.12, 3.13 */
#  define SHIM_OWNER "FRAME_OWNED_BY_CSTACK"
#  define SHIM_OWNER_CT PYOFFSETS_CONST_FRAME_OWNED_BY_CSTACK
#  define CODE_TAG_BITS_CT -1
#else
#  define SHIM_OWNER "FRAME_OWNED_BY_CSTACK"
#  define SHIM_OWNER_CT -1
#  define CODE_TAG_BITS_CT -1
#endif

#define AT(obj, off, type) (*(type *)((char *)(obj) + (off)))

/* The same offsets, asked at run time (filled at import). */
static Py_ssize_t it_index_rt, it_seq_rt, tuple_items_rt, frame_rt[3], walk_rt[WALK_N];
static long long owned_by_generator_rt = -1, shim_owner_rt = -1, code_tag_bits_rt = -1;
static Py_ssize_t codeunit_size;    /* sizeof(_Py_CODEUNIT): _co_firsttraceable counts code units */
#ifdef GEN_STATE
static const char *const gen_names[4] = {GEN_STATE};
static const long long gen_ct[3] = {GEN_STATE_CT};
static long long gen_rt[3];     /* offsets, then the constant, at run time */
#endif

static PyObject *
listiter(PyObject *self, PyObject *it)
{
    PyObject *a, *b;
    if (strcmp(Py_TYPE(it)->tp_name, "list_iterator") != 0) {
        PyErr_SetString(PyExc_TypeError, "listiter() takes a list iterator");
        return NULL;
    }
    a = AT(it, IT_SEQ, PyObject *);
    b = AT(it, it_seq_rt, PyObject *);
    return Py_BuildValue("(nO)(nO)", AT(it, IT_INDEX, Py_ssize_t), a ? a : Py_None,
                         AT(it, it_index_rt, Py_ssize_t), b ? b : Py_None);
}

static PyObject *
tuple_item(PyObject *self, PyObject *args)
{
    PyObject *t;
    Py_ssize_t i;
    if (!PyArg_ParseTuple(args, "O!n", &PyTuple_Type, &t, &i)) {
        return NULL;
    }
    if (i < 0 || i >= PyTuple_GET_SIZE(t)) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return NULL;
    }
    return Py_BuildValue("OO", ((PyObject **)((char *)t + TUPLE_ITEMS))[i],
                         ((PyObject **)((char *)t + tuple_items_rt))[i]);
}

/* The thread state's current frame (the innermost, which may be one walk() skips). */
static char *
current_frame(const Py_ssize_t off[3])
{
    char *frame = AT(PyThreadState_Get(), off[0], char *);
    if (off[1] >= 0) {
        frame = AT(frame, off[1], char *);
    }
    return frame;
}

static PyObject *
code_through(const Py_ssize_t off[3])
{
    return AT(current_frame(off), off[2], PyObject *);
}

/* frame_code() -> (code, code): the calling Python function's code object, read both ways. */
static PyObject *
frame_code(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("OO", code_through(frame_ct), code_through(frame_rt));
}

enum { COMPLETE, CSTACK_SHIM, INCOMPLETE };

/* A frame's code object (3.14+: its f_executable's tag bits cleared). */
static PyObject *
frame_code_object(char *frame)
{
    uintptr_t code = AT(frame, walk_rt[CODE], uintptr_t);
    return (PyObject *)(code_tag_bits_rt > 0 ? code & ~(uintptr_t)code_tag_bits_rt : code);
}

/* Which frame this is to a walker: CPython's _PyFrame_IsIncomplete(), through offsets. */
static int
frame_kind(char *frame)
{
    char owner, *code;
    if (walk_rt[OWNER] < 0) {
        return COMPLETE;                            /* a PyFrameObject (up to 3.10) */
    }
    owner = AT(frame, walk_rt[OWNER], char);
    if (shim_owner_rt >= 0 && owner >= shim_owner_rt) {
        return CSTACK_SHIM;                         /* 3.13+: its f_executable is None */
    }
    if (owner == owned_by_generator_rt) {
        return COMPLETE;
    }
    code = (char *)frame_code_object(frame);
    return AT(frame, walk_rt[INSTR], char *)
           < code + walk_rt[CODE_UNITS] + codeunit_size * AT(code, walk_rt[FIRST_TRACEABLE], int)
           ? INCOMPLETE : COMPLETE;
}

/* walk() -> ([code, ...], C-stack shims skipped, incomplete frames skipped): the code object of each
 * frame from the caller's outward, as sys._getframe() and f_back show them. */
static PyObject *
walk(PyObject *self, PyObject *unused)
{
    Py_ssize_t skipped[3] = {0, 0, 0};
    char *frame;
    PyObject *codes = PyList_New(0);
    if (codes == NULL) {
        return NULL;
    }
    for (frame = current_frame(frame_rt); frame != NULL; frame = AT(frame, walk_rt[PREVIOUS], char *)) {
        int kind = frame_kind(frame);
        skipped[kind]++;
        if (kind == COMPLETE && PyList_Append(codes, frame_code_object(frame)) < 0) {
            Py_DECREF(codes);
            return NULL;
        }
    }
    return Py_BuildValue("Nnn", codes, skipped[CSTACK_SHIM], skipped[INCOMPLETE]);
}

/* gen_state(gen) -> (what, (state, constant) at compile time, (state, constant) at run time): the
 * state byte of a suspended generator's frame, read both ways, and the constant it must equal;
 * (None, None, None) before 3.10, which has no such state. */
static PyObject *
gen_state(PyObject *self, PyObject *gen)
{
#ifdef GEN_STATE
    const long long *ways[2] = {gen_ct, gen_rt};
    long long got[2];
    int i;
    if (!PyGen_Check(gen)) {
        PyErr_SetString(PyExc_TypeError, "gen_state() takes a generator");
        return NULL;
    }
    for (i = 0; i < 2; i++) {
        char *frame = (char *)gen + ways[i][0];
        if (!GEN_STATE_EMBEDDED) {
            frame = AT(gen, ways[i][0], char *);
        }
        got[i] = GEN_STATE_EMBEDDED ? (long long)AT(frame, ways[i][1], char) : (long long)AT(frame, ways[i][1], signed char);
    }
    return Py_BuildValue("s(LL)(LL)", gen_names[0], got[0], gen_ct[2], got[1], gen_rt[2]);
#else
    (void)gen;
    return Py_BuildValue("(OOO)", Py_None, Py_None, Py_None);
#endif
}

/* Each constant against the run-time answer: the import fails on any difference. */
static int
same(const char *name, Py_ssize_t compiled, Py_ssize_t *out)
{
    if (name == NULL) {
        *out = -1;
        return 0;
    }
    *out = PyOffsets_Get(name);
    if (*out < 0) {
        return -1;
    }
    if (*out != compiled) {
        PyErr_Format(PyExc_ImportError, "jitdemo was compiled for %s, where %s is at %zd; the running "
                     "interpreter (table %s) has it at %zd: rebuild jitdemo", PYOFFSETS_TABLE, name, compiled,
                     PyOffsets_TableName(), *out);
        return -1;
    }
    return 0;
}

/* A constant against its run-time answer; compiled -1: the version has none, and none is asked. */
static int
same_constant(const char *name, long long compiled, long long *out)
{
    *out = -1;
    if (compiled < 0) {
        return 0;
    }
    if (PyOffsets_Constant(name, out) < 0) {
        return -1;
    }
    if (*out != compiled) {
        PyErr_Format(PyExc_ImportError, "jitdemo was compiled for %s, where %s is %lld; the running "
                     "interpreter (table %s) has %lld: rebuild jitdemo", PYOFFSETS_TABLE, name, compiled,
                     PyOffsets_TableName(), *out);
        return -1;
    }
    return 0;
}

static PyMethodDef methods[] = {
    {"listiter", listiter, METH_O, "listiter(it) -> ((it_index, it_seq) at compile time, (...) at run time)"},
    {"tuple_item", tuple_item, METH_VARARGS, "tuple_item(t, i) -> (t[i] at compile time, t[i] at run time)"},
    {"frame_code", frame_code, METH_NOARGS, "frame_code() -> the caller's code object, read both ways"},
    {"walk", walk, METH_NOARGS, "walk() -> ([code of each frame Python shows, innermost first], shims, incomplete)"},
    {"gen_state", gen_state, METH_O, "gen_state(gen) -> (field, (state, constant) compiled, (...) run time)"},
    {NULL, NULL, 0, NULL},
};

static int
jitdemo_exec(PyObject *m)
{
    const char *frame_names[3] = {FRAME_PATH};
    int i;
    if (PyOffsets_Import() < 0 || same("listiterobject.it_index", IT_INDEX, &it_index_rt) < 0
        || same("listiterobject.it_seq", IT_SEQ, &it_seq_rt) < 0
        || same("PyTupleObject.ob_item", TUPLE_ITEMS, &tuple_items_rt) < 0) {
        return -1;
    }
    for (i = 0; i < 3; i++) {
        if (same(frame_names[i], frame_ct[i], &frame_rt[i]) < 0) {
            return -1;
        }
    }
    {
        const char *walk_names[WALK_N] = {WALK_NAMES};
        for (i = 0; i < WALK_N; i++) {
            if (same(walk_names[i], walk_ct[i], &walk_rt[i]) < 0) {
                return -1;
            }
        }
    }
    if (same_constant("FRAME_OWNED_BY_GENERATOR", OWNED_BY_GENERATOR_CT, &owned_by_generator_rt) < 0
        || same_constant(SHIM_OWNER, SHIM_OWNER_CT, &shim_owner_rt) < 0
        || same_constant("Py_TAG_BITS", CODE_TAG_BITS_CT, &code_tag_bits_rt) < 0) {
        return -1;
    }
#if defined(PYOFFSETS_SIZEOF__Py_CODEUNIT)                     /* 3.12+ (3.13: an internal header's) */
    codeunit_size = PyOffsets_Sizeof("_Py_CODEUNIT");
    if (codeunit_size < 0) {
        return -1;
    }
#else
    codeunit_size = sizeof(_Py_CODEUNIT);    /* public before 3.13 (cpython/code.h) */
#endif
#ifdef GEN_STATE
    for (i = 0; i < 2; i++) {
        Py_ssize_t off;
        if (same(gen_names[i + 1], (Py_ssize_t)gen_ct[i], &off) < 0) {
            return -1;
        }
        gen_rt[i] = off;
    }
    if (PyOffsets_Constant(gen_names[3], &gen_rt[2]) < 0) {
        return -1;
    }
    if (gen_rt[2] != gen_ct[2]) {
        PyErr_Format(PyExc_ImportError, "jitdemo was compiled for %s, where %s is %lld; the running "
                     "interpreter (table %s) has %lld: rebuild jitdemo", PYOFFSETS_TABLE, gen_names[3],
                     gen_ct[2], PyOffsets_TableName(), gen_rt[2]);
        return -1;
    }
#endif
    return PyModule_AddStringConstant(m, "COMPILED_FOR", PYOFFSETS_TABLE);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)jitdemo_exec},
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},   /* it keeps no mutable state after import */
#endif
    {0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "jitdemo", NULL, 0, methods, slots, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit_jitdemo(void)
{
    return PyModuleDef_Init(&module);
}
