/* offsets._offsets: the capsule behind headers/pyoffsets.h.
 *
 * The answers come from offsets.runtime (the table chosen for this interpreter); this module only
 * keeps what C callers asked for in a small hash table keyed by C string, so that a repeated
 * PyOffsets_Get() is a string hash and compare, with no Python object made. A miss calls
 * offsets.runtime.get()/sizeof(), which resolves aliases or raises UnknownNameError.
 * offsets.runtime calls _reset() when the table changes (use_table).
 *
 * Thread safety, with or without the GIL (it declares Py_MOD_GIL_NOT_USED on 3.13+).
 * The capsule's functions take no module argument, so their state is one per process: a State
 * (both caches and the table's identity) published through one pointer, `current`.
 *   - Readers take no lock: an acquire load of `current`, of the cache's slot array, and of each
 *     probed entry's name. An entry's hash, length and value are written before its name is
 *     published (release store), so a reader that sees the name sees the rest.
 *   - Writers (a miss inserting its answer, a cache growing, _reset) hold `write_lock`, a
 *     PyThread_type_lock: it exists on every CPython 3.8+, needs no thread state, and is never held
 *     across a call into Python (a GIL build's thread waiting for it holds the GIL, so its holder
 *     must not need the GIL: it only copies memory with PyMem_Raw*). A cache grows by copying into
 *     a new slot array and publishing it.
 *   - _reset() builds the new State completely, then swaps `current` under the lock: once it
 *     returns, every lookup that starts reads the new State (issue 8, rule 5). A miss inserts its
 *     answer only if the State it started from is still `current`, so an answer computed from the
 *     old table can never enter the new cache.
 *   - Nothing a reader may still hold is freed: replaced slot arrays and States are kept for the
 *     life of the process (slot arrays double, so the kept ones total less than the live one; a
 *     State per use_table() call, which is rare). This is also what keeps the strings of
 *     PyOffsets_TableName()/PyOffsets_Match() valid, as they always were.
 * A lock rather than per-interpreter state because the capsule is one C struct for the process;
 * the Python callables the misses use belong to the first interpreter that imported the module,
 * and other interpreters are refused at import (Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED on
 * 3.12+, an ImportError before).
 *
 * A lookup whose name is cached needs no thread state. A miss must call into Python: from a thread
 * with no attached thread state it is refused with -1 and errno = EPERM, no exception (there is no
 * thread state to hold one). Names longer than PYOFFSETS_MAX_NAME bytes are refused without calling
 * Python, and every error message quotes at most a bounded prefix of the name.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "pyoffsets.h"

#if defined(__GNUC__) || defined(__clang__)
#  define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#  define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#else
#  error "offsets._offsets needs gcc's or clang's __atomic builtins"
#endif

/* No name a table holds comes near this ("STRUCT.FIELD" designators are < 200 bytes). */
#define PYOFFSETS_MAX_NAME 1024
/* How much of a name an error message quotes. */
#define QUOTE 120

typedef struct {
    const char *name;  /* NULL: empty slot; published last (release) */
    size_t len;
    uint64_t hash;
    Py_ssize_t value;
} Entry;

typedef struct Slots {
    size_t cap;                 /* a power of two */
    struct Slots *retired;      /* replaced arrays, kept (a reader may still probe them) */
    Entry e[1];                 /* cap entries */
} Slots;

typedef struct {
    Slots *slots;               /* NULL until the first insert; replaced on growth (release) */
    size_t used;
} Cache;

typedef struct State {
    Cache offsets, sizes;
    char *table_name, *match;
    unsigned long hexversion;
    struct State *retired;      /* the States before this one, kept */
} State;

static State *current;                  /* LOAD_ACQ to read; swapped under write_lock */
static PyThread_type_lock write_lock;
static PyObject *py_get, *py_sizeof, *py_field, *py_build, *py_unknown;   /* offsets.runtime, errors */
static PyInterpreterState *owner;       /* the interpreter those belong to */

/* A word-at-a-time multiplicative hash: names are short (20-40 bytes), so this is a few
 * multiplies; strlen is vectorized by the C library. */
static inline uint64_t
hash_name(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ len, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    if (i < len) {
        w = 0;
        memcpy(&w, s + i, len - i);
        h = (h ^ w) * 0x94D049BB133111EBULL;
        h ^= h >> 29;
    }
    return h;
}

/* The slot holding `name`, or the empty slot where it would go. */
static inline Entry *
slot_for(Slots *s, const char *name, size_t len, uint64_t h)
{
    size_t mask = s->cap - 1, i;
    for (i = (size_t)h & mask;; i = (i + 1) & mask) {
        Entry *e = &s->e[i];
        const char *n = LOAD_ACQ(&e->name);
        if (n == NULL || (e->hash == h && e->len == len && memcmp(n, name, len) == 0)) {
            return e;
        }
    }
}

/* Lock-free read: the cached value, or -1. */
static inline Py_ssize_t
cache_get(Cache *c, const char *name, size_t len, uint64_t h)
{
    Slots *s = LOAD_ACQ(&c->slots);
    Entry *e;
    if (s == NULL) {
        return -1;
    }
    e = slot_for(s, name, len, h);
    return LOAD_ACQ(&e->name) == NULL ? -1 : e->value;
}

static Slots *
slots_new(size_t cap)
{
    return (Slots *)PyMem_RawCalloc(1, sizeof(Slots) + (cap - 1) * sizeof(Entry));
}

/* With write_lock held. 0, or -1 when out of memory (nothing changed; no exception: the caller
 * still has its answer, it is only not cached). */
static int
cache_put(Cache *c, const char *name, size_t len, uint64_t h, Py_ssize_t value)
{
    Slots *s = c->slots;
    Entry *e;
    char *copy;
    if (s == NULL || (c->used + 1) * 2 > s->cap) {
        size_t i, cap = s ? s->cap * 2 : 64;
        Slots *grown = slots_new(cap);
        if (grown == NULL) {
            return -1;
        }
        grown->cap = cap;
        for (i = 0; s != NULL && i < s->cap; i++) {
            if (s->e[i].name != NULL) {
                *slot_for(grown, s->e[i].name, s->e[i].len, s->e[i].hash) = s->e[i];
            }
        }
        grown->retired = s;
        STORE_REL(&c->slots, grown);
        s = grown;
    }
    e = slot_for(s, name, len, h);
    if (e->name != NULL) {
        return 0;            /* another thread cached it meanwhile */
    }
    copy = (char *)PyMem_RawMalloc(len + 1);
    if (copy == NULL) {
        return -1;
    }
    memcpy(copy, name, len + 1);
    e->len = len;
    e->hash = h;
    e->value = value;
    STORE_REL(&e->name, copy);
    c->used++;
    return 0;
}

/* Whether this thread has an attached thread state (may call into Python). From 3.12 the current
 * thread state is thread-local; before, it is the GIL holder's, whichever thread that is, so ask
 * PyGILState_Check() (this thread's own thread state holds the GIL). */
static int
attached(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyThreadState_GetUnchecked() != NULL;
#elif PY_VERSION_HEX >= 0x030C0000
    return _PyThreadState_UncheckedGet() != NULL;
#else
    return PyGILState_Check();
#endif
}

/* -1 for a name too long to be one: UnknownNameError quoting a bounded prefix. */
static Py_ssize_t
too_long(const char *name, size_t len)
{
    char msg[QUOTE + 160];
    PyObject *quoted, *exc;
    snprintf(msg, sizeof(msg), "unknown name '%.*s...' (%zu bytes; no struct or field name is longer than %d)",
             QUOTE, name, len, PYOFFSETS_MAX_NAME);
    quoted = PyUnicode_DecodeUTF8(name, QUOTE, "replace");
    exc = quoted ? PyObject_CallFunction(py_unknown, "(Os)", quoted, "") : NULL;
    Py_XDECREF(quoted);
    if (exc != NULL) {
        PyObject *args = Py_BuildValue("(s)", msg);    /* the message, not one built from the prefix */
        if (args == NULL || PyObject_SetAttrString(exc, "args", args) < 0) {
            Py_XDECREF(args);
            Py_DECREF(exc);
            return -1;
        }
        Py_DECREF(args);
        PyErr_SetObject(py_unknown, exc);
        Py_DECREF(exc);
    }
    return -1;
}

/* 0 if a miss may go on into Python; else -1 (errno, or an exception when one can be set). */
static int
may_call_python(const char *name, size_t len)
{
    if (!attached()) {
        errno = EPERM;
        return -1;
    }
    if (len > PYOFFSETS_MAX_NAME) {
        return (int)too_long(name, len);
    }
    return 0;
}

/* The first lookup of a name (kept out of line, so that the cached path stays small). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static Py_ssize_t
lookup_miss(State *st, Cache *c, int sizes, const char *name, size_t len, uint64_t h)
{
    PyObject *r;
    Py_ssize_t value;
    if (may_call_python(name, len) < 0) {
        return -1;
    }
    r = PyObject_CallFunction(sizes ? py_sizeof : py_get, "s", name);
    if (r == NULL) {
        return -1;
    }
    value = PyLong_AsSsize_t(r);
    Py_DECREF(r);
    if (value < 0) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "offsets: negative value %zd for %.120s", value, name);
        }
        return -1;
    }
    PyThread_acquire_lock(write_lock, WAIT_LOCK);
    if (LOAD_ACQ(&current) == st) {    /* else the table changed meanwhile: cache nothing */
        (void)cache_put(c, name, len, h, value);
    }
    PyThread_release_lock(write_lock);
    return value;
}

static inline Py_ssize_t
lookup(int sizes, const char *name)
{
    uint64_t h;
    size_t len;
    State *st;
    Cache *c;
    Py_ssize_t value;
    if (name == NULL) {
        if (attached()) {
            PyErr_SetString(PyExc_TypeError, "pyoffsets.h: the name is NULL");
        }
        errno = EINVAL;
        return -1;
    }
    len = strlen(name);
    h = hash_name(name, len);
    st = LOAD_ACQ(&current);
    c = sizes ? &st->sizes : &st->offsets;
    value = cache_get(c, name, len, h);
    return value >= 0 ? value : lookup_miss(st, c, sizes, name, len, h);
}

static Py_ssize_t
capi_get(const char *name)
{
    return lookup(0, name);
}

static Py_ssize_t
capi_size_of(const char *struct_name)
{
    return lookup(1, struct_name);
}

static int
attr_long(PyObject *obj, const char *attr, Py_ssize_t none_value, Py_ssize_t *out)
{
    PyObject *v = PyObject_GetAttrString(obj, attr);
    if (v == NULL) {
        return -1;
    }
    if (v == Py_None) {
        *out = none_value;
    }
    else {
        *out = PyLong_AsSsize_t(v);
    }
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int
capi_field(const char *name, PyOffsets_FieldInfo *out)
{
    Py_ssize_t bo, bw;
    PyObject *f;
    int rc;
    if (name == NULL || out == NULL) {
        if (attached()) {
            PyErr_SetString(PyExc_TypeError, "PyOffsets_Field: NULL argument");
        }
        errno = EINVAL;
        return -1;
    }
    if (may_call_python(name, strlen(name)) < 0) {
        return -1;
    }
    f = PyObject_CallFunction(py_field, "s", name);
    if (f == NULL) {
        return -1;
    }
    rc = attr_long(f, "offset", -1, &out->offset) || attr_long(f, "size", -1, &out->size)
         || attr_long(f, "bit_offset", -1, &bo) || attr_long(f, "bit_width", -1, &bw)
         || attr_long(f, "array_len", -1, &out->array_len);
    if (rc == 0) {
        PyObject *flex = PyObject_GetAttrString(f, "flexible");
        int truth = flex == NULL ? -1 : PyObject_IsTrue(flex);
        Py_XDECREF(flex);
        rc = truth < 0 ? -1 : 0;
        out->flexible = truth > 0;
        out->bit_offset = (int)bo;
        out->bit_width = (int)bw;
    }
    Py_DECREF(f);
    return rc ? -1 : 0;
}

static const char *
capi_table_name(void)
{
    return LOAD_ACQ(&current)->table_name;
}

static const char *
capi_match(void)
{
    return LOAD_ACQ(&current)->match;
}

static unsigned long
capi_hexversion(void)
{
    return LOAD_ACQ(&current)->hexversion;
}

static PyOffsets_CAPI capi = {
    PYOFFSETS_API_VERSION, 0, capi_get, capi_size_of, capi_field, capi_table_name, capi_match,
    capi_hexversion,
};

static char *
dup_attr(PyObject *obj, const char *attr)
{
    PyObject *v = PyObject_GetAttrString(obj, attr);
    const char *s;
    char *copy;
    if (v == NULL) {
        return NULL;
    }
    s = PyUnicode_AsUTF8(v);
    copy = s ? (char *)PyMem_RawMalloc(strlen(s) + 1) : NULL;
    if (s && copy == NULL) {
        PyErr_NoMemory();
    }
    else if (copy) {
        strcpy(copy, s);
    }
    Py_DECREF(v);
    return copy;
}

/* A new State (empty caches) for the table `m` (a runtime.Match; NULL: ask offsets.runtime.build(),
 * which chooses the table if none is chosen yet), swapped in atomically. 0, or -1 with an
 * exception and nothing changed. */
static int
refresh(PyObject *m)
{
    State *st = (State *)PyMem_RawCalloc(1, sizeof(State));
    PyObject *b = NULL, *hv = NULL;
    int rc = -1;
    if (st == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (m == NULL || m == Py_None) {
        m = PyObject_CallObject(py_build, NULL);
    }
    else {
        Py_INCREF(m);
    }
    if (m == NULL || (st->table_name = dup_attr(m, "table")) == NULL || (st->match = dup_attr(m, "kind")) == NULL
        || (b = PyObject_GetAttrString(m, "build")) == NULL || (hv = PyObject_GetAttrString(b, "hexversion")) == NULL) {
        goto done;
    }
    st->hexversion = PyLong_AsUnsignedLong(hv);
    if (st->hexversion == (unsigned long)-1 && PyErr_Occurred()) {
        goto done;
    }
    PyThread_acquire_lock(write_lock, WAIT_LOCK);
    st->retired = current;
    STORE_REL(&current, st);
    PyThread_release_lock(write_lock);
    st = NULL;
    rc = 0;
done:
    Py_XDECREF(hv);
    Py_XDECREF(b);
    Py_XDECREF(m);
    if (st != NULL) {
        PyMem_RawFree(st->table_name);
        PyMem_RawFree(st->match);
        PyMem_RawFree(st);
    }
    return rc;
}

/* _reset(match=None): the table in use changed (offsets.runtime._set passes its Match; without
 * one, offsets.runtime.build() is asked). */
static PyObject *
mod_reset(PyObject *self, PyObject *args)
{
    PyObject *m = NULL;
    if (!PyArg_ParseTuple(args, "|O:_reset", &m) || refresh(m) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static double
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* _bench_get(name, n) -> ns per call of PyOffsets_Get(name), through the header as a client calls it. */
static PyObject *
mod_bench_get(PyObject *self, PyObject *args)
{
    const char *name;
    Py_ssize_t n, i;
    volatile Py_ssize_t sink = 0;
    double t0;
    if (!PyArg_ParseTuple(args, "sn", &name, &n)) {
        return NULL;
    }
    if (PyOffsets_Get(name) < 0 || n <= 0) {     /* PyOffsetsAPI is &capi, set by module_exec */
        return n <= 0 ? PyErr_Format(PyExc_ValueError, "n must be positive") : NULL;
    }
    t0 = now_ns();
    for (i = 0; i < n; i++) {
        sink += PyOffsets_Get(name);
    }
    t0 = now_ns() - t0;
    (void)sink;
    return PyFloat_FromDouble(t0 / (double)n);
}

/* _get(name) -> PyOffsets_Get(name) through the capsule, for tests. */
static PyObject *
mod_get(PyObject *self, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    Py_ssize_t v;
    if (name == NULL) {
        return NULL;
    }
    v = capi.get(name);
    return v < 0 ? NULL : PyLong_FromSsize_t(v);
}

/* _get_detached(name) -> (value, errno): PyOffsets_Get(name) called with no attached thread state,
 * as a thread the interpreter does not know would call it; for tests. */
static PyObject *
mod_get_detached(PyObject *self, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    Py_ssize_t v;
    int err;
    if (name == NULL) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    errno = 0;
    v = capi.get(name);
    err = errno;
    Py_END_ALLOW_THREADS
    return Py_BuildValue("ni", v, err);
}

/* _identity() -> (table_name, match, hexversion) as C callers see them, for tests. */
static PyObject *
mod_identity(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("ssk", capi.table_name(), capi.match(), capi.hexversion());
}

static PyMethodDef methods[] = {
    {"_get", mod_get, METH_O, "_get(name): PyOffsets_Get(name) through the capsule."},
    {"_get_detached", mod_get_detached, METH_O, "_get_detached(name): (PyOffsets_Get(name), errno) with no thread state."},
    {"_identity", mod_identity, METH_NOARGS, "(table name, match, hexversion) as C callers see them."},
    {"_reset", mod_reset, METH_VARARGS, "_reset(match=None): the table in use changed; forget cached answers."},
    {"_bench_get", mod_bench_get, METH_VARARGS, "_bench_get(name, n): ns per PyOffsets_Get(name) call."},
    {NULL, NULL, 0, NULL},
};

static PyInterpreterState *
this_interpreter(void)
{
#if PY_VERSION_HEX >= 0x03090000
    return PyInterpreterState_Get();
#else
    return PyThreadState_Get()->interp;
#endif
}

/* The process-wide state, made by the first interpreter that imports the module. */
static int
init_state(void)
{
    PyObject *rt, *errors;
    if (owner != NULL) {
        if (owner != this_interpreter()) {
            PyErr_SetString(PyExc_ImportError, "offsets._offsets serves one interpreter per process (the first "
                            "that imported it); import it there");
            return -1;
        }
        return 0;
    }
    write_lock = write_lock ? write_lock : PyThread_allocate_lock();
    if (write_lock == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    rt = PyImport_ImportModule("offsets.runtime");
    errors = rt ? PyImport_ImportModule("offsets.errors") : NULL;
    if (errors != NULL) {
        py_get = PyObject_GetAttrString(rt, "get");
        py_sizeof = py_get ? PyObject_GetAttrString(rt, "sizeof") : NULL;
        py_field = py_sizeof ? PyObject_GetAttrString(rt, "field") : NULL;
        py_build = py_field ? PyObject_GetAttrString(rt, "build") : NULL;
        py_unknown = py_build ? PyObject_GetAttrString(errors, "UnknownNameError") : NULL;
    }
    Py_XDECREF(rt);
    Py_XDECREF(errors);
    if (py_unknown == NULL || refresh(NULL) < 0) {   /* chooses the table: NoMatchingTable fails the import */
        Py_CLEAR(py_get);
        Py_CLEAR(py_sizeof);
        Py_CLEAR(py_field);
        Py_CLEAR(py_build);
        Py_CLEAR(py_unknown);
        return -1;
    }
    owner = this_interpreter();
    return 0;
}

static int
module_exec(PyObject *m)
{
    PyObject *capsule;
    if (init_state() < 0) {
        return -1;
    }
    PyOffsetsAPI = &capi;   /* this file's own pyoffsets.h getters (_bench_get) */
    capsule = PyCapsule_New(&capi, PYOFFSETS_CAPSULE_NAME, NULL);
    if (capsule == NULL || PyModule_AddObject(m, "_C_API", capsule) < 0) {
        Py_XDECREF(capsule);
        return -1;
    }
    return PyModule_AddIntConstant(m, "API_VERSION", PYOFFSETS_API_VERSION);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, (void *)module_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},   /* its state is safe without the GIL: see the top of this file */
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "offsets._offsets",
    "The capsule of headers/pyoffsets.h (offsets' C API); import it from C with PyOffsets_Import().",
    0, methods, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__offsets(void)
{
    return PyModuleDef_Init(&module);
}
