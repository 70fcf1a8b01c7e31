/* offsets._offsets: the capsule behind headers/pyoffsets.h.
 *
 * The answers come from offsets.runtime (the table chosen for this interpreter); this module only
 * keeps what C callers asked for in a small hash table keyed by C string, so that a repeated
 * PyOffsets_Get() (or PyOffsets_Constant()) is a string hash and compare, with no Python object
 * made. A miss calls offsets.runtime.get()/sizeof()/constant(), which resolves aliases or raises
 * UnknownNameError.
 * offsets.runtime calls _reset() when the table changes (use_table).
 *
 * Thread safety, with or without the GIL (it declares Py_MOD_GIL_NOT_USED on 3.13+).
 * The capsule's functions take no module argument, so the answers are one per process: a State
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
 *     returns, every lookup that starts reads the new State (a JIT that switches tables never mixes
 *     them). A miss inserts its answer only if the State it started from is still `current`, so an
 *     answer computed from the old table can never enter the new cache.
 *   - fork() takes write_lock first (pthread_atfork) and both sides release it after, so a child
 *     never inherits it held by a thread it does not have (Windows has no fork: nothing to do).
 *   - Nothing a reader may still hold is freed: replaced slot arrays and States are kept for the
 *     life of the process (slot arrays double, so the kept ones total less than the live one; a
 *     State per use_table() call, which is rare). This is also what keeps the strings of
 *     PyOffsets_TableName()/PyOffsets_Match() valid, as they always were.
 *
 * Interpreters. Every interpreter of a process may import the module, each with its own
 * GIL on 3.12+ (Py_MOD_PER_INTERPRETER_GIL_SUPPORTED). What is per interpreter is what belongs to
 * one: the Python callables a miss calls (that interpreter's own offsets.runtime), in the module's
 * state, found by importing offsets._offsets in the caller's interpreter (a dict lookup once it is
 * imported; a miss calls into Python anyway). What is one per process is what is true of the
 * process: every interpreter runs the same binary, so an answer one interpreter's table earned
 * (exact, or read live) is the answer in all of them, and the caches stay shared and lock-free.
 * A second interpreter's import adopts the State in use when its own table is the same one (same
 * name, match and hexversion), else makes its own current. Each interpreter remembers the State its
 * Python side chose (`ModState.state`); its misses are cached only while that State is `current`,
 * so after a use_table() in one interpreter, another one's answers (of its own table) are still
 * given to it but never cached for the others. No PyObject is shared between interpreters.
 *
 * A getter called with an exception already set (by this thread: an attached thread state holds
 * it) returns its error value at once and leaves that exception in place, so a caller that makes
 * several lookups before checking them reports the first failure, not an error of a later call run
 * with an exception pending (a SystemError, which hid the UnknownNameError before API version 3).
 *
 * A lookup whose name is cached needs no thread state. A miss must call into Python: from a thread
 * with no attached thread state it is refused with -1 and errno = EPERM, no exception (there is no
 * thread state to hold one). Names longer than PYOFFSETS_MAX_NAME bytes are refused without calling
 * Python, and every error message quotes at most a bounded prefix of the name.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#ifndef _WIN32
#include <pthread.h>                    /* pthread_atfork: Windows has no fork */
#endif
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
    long long value;   /* an offset or size (>= 0), or a constant (any 64-bit pattern) */
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
    Cache offsets, sizes, constants;
    char *table_name, *match;
    unsigned long hexversion;
    struct State *retired;      /* the States before this one, kept */
} State;

static State *current;                  /* LOAD_ACQ to read; swapped under write_lock */
static PyThread_type_lock write_lock;   /* made once per process (CAS), never freed */

/* What a miss calls: offsets.runtime's functions. A new capsule function that asks Python appends
 * its runtime function's name here. (offsets.errors is imported only to raise one of its errors:
 * its exception classes cost a first lookup more than the rest of its imports.) */
enum { RT_GET, RT_SIZEOF, RT_FIELD, RT_BUILD, RT_CONSTANT, N_RUNTIME, N_CALLABLES = N_RUNTIME };
static const char *const runtime_names[N_RUNTIME] = {"get", "sizeof", "field", "_chosen", "constant"};

/* One per interpreter: the module's state. */
typedef struct {
    PyObject *py[N_CALLABLES];  /* that interpreter's own objects */
    State *state;               /* the State its Python side chose (LOAD_ACQ; set under write_lock) */
} ModState;

static struct PyModuleDef module;

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

/* Lock-free read: the cached value, or -1 (an offset or size is never negative). */
static inline Py_ssize_t
cache_get(Cache *c, const char *name, size_t len, uint64_t h)
{
    Slots *s = LOAD_ACQ(&c->slots);
    Entry *e;
    if (s == NULL) {
        return -1;
    }
    e = slot_for(s, name, len, h);
    return LOAD_ACQ(&e->name) == NULL ? -1 : (Py_ssize_t)e->value;
}

/* Lock-free read of any value (a constant may be negative): 1 and *out set if cached, else 0. */
static inline int
cache_find(Cache *c, const char *name, size_t len, uint64_t h, long long *out)
{
    Slots *s = LOAD_ACQ(&c->slots);
    Entry *e;
    if (s == NULL) {
        return 0;
    }
    e = slot_for(s, name, len, h);
    if (LOAD_ACQ(&e->name) == NULL) {
        return 0;
    }
    *out = e->value;
    return 1;
}

static Slots *
slots_new(size_t cap)
{
    return (Slots *)PyMem_RawCalloc(1, sizeof(Slots) + (cap - 1) * sizeof(Entry));
}

/* With write_lock held. 0, or -1 when out of memory (nothing changed; no exception: the caller
 * still has its answer, it is only not cached). */
static int
cache_put(Cache *c, const char *name, size_t len, uint64_t h, long long value)
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
 * thread state is thread-local. Before, it is the GIL holder's, whichever thread that is, and
 * PyGILState_Check() answers 1 for every thread once a sub-interpreter exists (CPython disables
 * it then), so compare the holder's thread with this one. */
static int
attached(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyThreadState_GetUnchecked() != NULL;
#elif PY_VERSION_HEX >= 0x030C0000
    return _PyThreadState_UncheckedGet() != NULL;
#else
    PyThreadState *holder = _PyThreadState_UncheckedGet();
    return holder != NULL && holder->thread_id == PyThread_get_thread_ident();
#endif
}

/* Whether an exception is already set in this thread (then every getter returns its error value at
 * once and leaves it there). With no attached thread state there is none: nothing could hold one. */
static inline int
pending(void)
{
    return attached() && PyErr_Occurred() != NULL;
}

/* The calling interpreter's module state, with a new reference to its module in *mod (imported
 * there if it is not yet: a JIT may call from an interpreter where only the capsule pointer came);
 * NULL with an exception. Needs an attached thread state. */
static ModState *
caller_state(PyObject **mod)
{
    PyObject *name = PyUnicode_FromString("offsets._offsets"), *m = NULL;
    ModState *ms;
    if (name != NULL) {
        m = PyImport_GetModule(name);
        if (m == NULL && !PyErr_Occurred()) {
            m = PyImport_Import(name);
        }
        Py_DECREF(name);
    }
    if (m == NULL) {
        return NULL;
    }
    if (!PyModule_Check(m) || PyModule_GetDef(m) != &module) {
        PyErr_SetString(PyExc_ImportError, "sys.modules['offsets._offsets'] is not offsets' C API module");
        Py_DECREF(m);
        return NULL;
    }
    ms = (ModState *)PyModule_GetState(m);
    if (ms->py[N_RUNTIME - 1] == NULL || LOAD_ACQ(&ms->state) == NULL) {
        PyErr_SetString(PyExc_ImportError, "offsets._offsets is still being imported in this interpreter");
        Py_DECREF(m);
        return NULL;
    }
    *mod = m;
    return ms;
}

/* -1 for a name too long to be one: UnknownNameError quoting a bounded prefix. */
static Py_ssize_t
too_long(const char *name, size_t len)
{
    char msg[QUOTE + 160];
    PyObject *errors = PyImport_ImportModule("offsets.errors"), *quoted = NULL, *exc = NULL;
    PyObject *unknown = errors ? PyObject_GetAttrString(errors, "UnknownNameError") : NULL;
    Py_XDECREF(errors);
    snprintf(msg, sizeof(msg), "unknown name '%.*s...' (%zu bytes; no struct or field name is longer than %d)",
             QUOTE, name, len, PYOFFSETS_MAX_NAME);
    quoted = unknown ? PyUnicode_DecodeUTF8(name, QUOTE, "replace") : NULL;
    exc = quoted ? PyObject_CallFunction(unknown, "(Os)", quoted, "") : NULL;
    Py_XDECREF(quoted);
    if (exc != NULL) {
        PyObject *args = Py_BuildValue("(s)", msg);    /* the message, not one built from the prefix */
        if (args == NULL || PyObject_SetAttrString(exc, "args", args) < 0) {
            Py_XDECREF(args);
            Py_DECREF(exc);
            Py_DECREF(unknown);
            return -1;
        }
        Py_DECREF(args);
        PyErr_SetObject(unknown, exc);
        Py_DECREF(exc);
    }
    Py_XDECREF(unknown);
    return -1;
}

/* The caller's module state if a miss may go on into Python (a new reference to the module in
 * *mod); else NULL: errno EPERM and no exception with no thread state, an exception otherwise. */
static ModState *
may_call_python(const char *name, size_t len, PyObject **mod)
{
    ModState *ms;
    if (!attached()) {
        errno = EPERM;
        return NULL;
    }
    ms = caller_state(mod);
    if (ms != NULL && len > PYOFFSETS_MAX_NAME) {
        (void)too_long(name, len);
        Py_CLEAR(*mod);
        return NULL;
    }
    return ms;
}

/* The first lookup of a name (kept out of line, so that the cached path stays small). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static Py_ssize_t
lookup_miss(State *st, Cache *c, int sizes, const char *name, size_t len, uint64_t h)
{
    PyObject *mod = NULL, *r;
    Py_ssize_t value;
    ModState *ms = may_call_python(name, len, &mod);
    if (ms == NULL) {
        return -1;
    }
    r = PyObject_CallFunction(ms->py[sizes ? RT_SIZEOF : RT_GET], "s", name);
    if (r == NULL) {
        Py_DECREF(mod);
        return -1;
    }
    value = PyLong_AsSsize_t(r);
    Py_DECREF(r);
    if (value < 0) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "offsets: negative value %zd for %.120s", value, name);
        }
        Py_DECREF(mod);
        return -1;
    }
    PyThread_acquire_lock(write_lock, WAIT_LOCK);
    /* else the table changed meanwhile, or this interpreter's is not the one in use: cache nothing */
    if (LOAD_ACQ(&current) == st && LOAD_ACQ(&ms->state) == st) {
        (void)cache_put(c, name, len, h, value);
    }
    PyThread_release_lock(write_lock);
    Py_DECREF(mod);
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
    if (pending()) {
        return -1;
    }
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

/* The first lookup of a constant: offsets.runtime.constant(name), cached as a 64-bit pattern. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int
constant_miss(State *st, const char *name, size_t len, uint64_t h, long long *value)
{
    PyObject *mod = NULL, *r;
    long long v;
    ModState *ms = may_call_python(name, len, &mod);
    if (ms == NULL) {
        return -1;
    }
    r = PyObject_CallFunction(ms->py[RT_CONSTANT], "s", name);
    if (r == NULL) {
        Py_DECREF(mod);
        return -1;
    }
    v = PyLong_AsLongLong(r);
    if (v == -1 && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();          /* an unsigned value above LLONG_MAX: its 64-bit pattern */
        v = (long long)PyLong_AsUnsignedLongLong(r);
    }
    Py_DECREF(r);
    if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(mod);
        return -1;
    }
    PyThread_acquire_lock(write_lock, WAIT_LOCK);
    if (LOAD_ACQ(&current) == st && LOAD_ACQ(&ms->state) == st) {
        (void)cache_put(&st->constants, name, len, h, v);
    }
    PyThread_release_lock(write_lock);
    Py_DECREF(mod);
    *value = v;
    return 0;
}

static int
capi_constant(const char *name, long long *value)
{
    uint64_t h;
    size_t len;
    State *st;
    if (pending()) {
        return -1;
    }
    if (name == NULL || value == NULL) {
        if (attached()) {
            PyErr_SetString(PyExc_TypeError, "PyOffsets_Constant: NULL argument");
        }
        errno = EINVAL;
        return -1;
    }
    len = strlen(name);
    h = hash_name(name, len);
    st = LOAD_ACQ(&current);
    return cache_find(&st->constants, name, len, h, value) ? 0 : constant_miss(st, name, len, h, value);
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
    PyObject *f, *mod = NULL;
    ModState *ms;
    int rc;
    if (pending()) {
        return -1;
    }
    if (name == NULL || out == NULL) {
        if (attached()) {
            PyErr_SetString(PyExc_TypeError, "PyOffsets_Field: NULL argument");
        }
        errno = EINVAL;
        return -1;
    }
    ms = may_call_python(name, strlen(name), &mod);
    if (ms == NULL) {
        return -1;
    }
    f = PyObject_CallFunction(ms->py[RT_FIELD], "s", name);
    Py_DECREF(mod);
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
    return pending() ? NULL : LOAD_ACQ(&current)->table_name;
}

static const char *
capi_match(void)
{
    return pending() ? NULL : LOAD_ACQ(&current)->match;
}

static unsigned long
capi_hexversion(void)
{
    return pending() ? 0 : LOAD_ACQ(&current)->hexversion;
}

static PyOffsets_CAPI capi = {
    PYOFFSETS_API_VERSION, 0, capi_get, capi_size_of, capi_field, capi_table_name, capi_match,
    capi_hexversion, capi_constant,
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

static int
same_table(const State *a, const State *b)
{
    return a->hexversion == b->hexversion && strcmp(a->table_name, b->table_name) == 0
           && strcmp(a->match, b->match) == 0;
}

static void
state_free(State *st)
{
    PyMem_RawFree(st->table_name);
    PyMem_RawFree(st->match);
    PyMem_RawFree(st);
}

/* The State of the table `m` (a runtime.Match; NULL: ask this interpreter's offsets.runtime._chosen(),
 * which chooses the table if none is chosen yet, as a first lookup in Python does) becomes this interpreter's and the process's
 * current one, atomically. With `adopt`, a current State of the same table is kept (its caches
 * too) instead of a new one with empty caches. 0, or -1 with an exception and nothing changed. */
static int
refresh(ModState *ms, PyObject *m, int adopt)
{
    State *st = (State *)PyMem_RawCalloc(1, sizeof(State));
    PyObject *hv = NULL;
    int rc = -1;
    if (st == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (m == NULL || m == Py_None) {
        m = PyObject_CallObject(ms->py[RT_BUILD], NULL);
    }
    else {
        Py_INCREF(m);
    }
    if (m == NULL || (st->table_name = dup_attr(m, "table")) == NULL || (st->match = dup_attr(m, "kind")) == NULL
        || (hv = PyObject_GetAttrString(m, "hexversion")) == NULL) {
        goto done;
    }
    st->hexversion = PyLong_AsUnsignedLong(hv);
    if (st->hexversion == (unsigned long)-1 && PyErr_Occurred()) {
        goto done;
    }
    PyThread_acquire_lock(write_lock, WAIT_LOCK);
    if (adopt && current != NULL && same_table(current, st)) {
        STORE_REL(&ms->state, current);     /* st is freed below */
    }
    else {
        st->retired = current;
        STORE_REL(&current, st);
        STORE_REL(&ms->state, st);
        st = NULL;
    }
    PyThread_release_lock(write_lock);
    rc = 0;
done:
    Py_XDECREF(hv);
    Py_XDECREF(m);
    if (st != NULL) {
        state_free(st);
    }
    return rc;
}

/* _reset(match=None): the table in use changed (offsets.runtime.core.Runtime.install passes its Match; without
 * one, offsets.runtime._chosen() is asked). The first choice of this interpreter (made while the
 * module is imported) adopts the process's State when it is of the same table; any later one
 * (use_table) makes a new State. */
static PyObject *
mod_reset(PyObject *self, PyObject *args)
{
    ModState *ms = (ModState *)PyModule_GetState(self);
    PyObject *m = NULL;
    if (!PyArg_ParseTuple(args, "|O:_reset", &m) || refresh(ms, m, LOAD_ACQ(&ms->state) == NULL) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

#ifdef _WIN32
#include <windows.h>
static double
now_ns(void)
{
    LARGE_INTEGER t, hz;
    QueryPerformanceCounter(&t);
    QueryPerformanceFrequency(&hz);
    return (double)t.QuadPart * 1e9 / (double)hz.QuadPart;
}
#else
static double
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
#endif

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

/* _bench_constant(name, n) -> ns per call of PyOffsets_Constant(name, &value), through the header. */
static PyObject *
mod_bench_constant(PyObject *self, PyObject *args)
{
    const char *name;
    Py_ssize_t n, i;
    long long value;
    volatile long long sink = 0;
    double t0;
    if (!PyArg_ParseTuple(args, "sn", &name, &n)) {
        return NULL;
    }
    if (n <= 0) {
        return PyErr_Format(PyExc_ValueError, "n must be positive");
    }
    if (PyOffsets_Constant(name, &value) < 0) {
        return NULL;
    }
    t0 = now_ns();
    for (i = 0; i < n; i++) {
        (void)PyOffsets_Constant(name, &value);
        sink += value;
    }
    t0 = now_ns() - t0;
    (void)sink;
    return PyFloat_FromDouble(t0 / (double)n);
}

/* _constant(name) -> PyOffsets_Constant(name, &value) through the capsule, as a signed 64-bit
 * pattern, for tests. */
static PyObject *
mod_constant(PyObject *self, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    long long v;
    if (name == NULL) {
        return NULL;
    }
    return capi.constant(name, &v) < 0 ? NULL : PyLong_FromLongLong(v);
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
    {"_constant", mod_constant, METH_O, "_constant(name): PyOffsets_Constant(name) through the capsule (signed 64-bit)."},
    {"_bench_constant", mod_bench_constant, METH_VARARGS,
     "_bench_constant(name, n): ns per PyOffsets_Constant(name, &value) call."},
    {NULL, NULL, 0, NULL},
};

#ifndef _WIN32
/* fork() waits until no thread is inside write_lock (its holders never wait for anything), so a
 * forked child never starts with it held by a thread that does not exist there. */
static void
before_fork(void)
{
    PyThread_acquire_lock(write_lock, WAIT_LOCK);
}

static void
after_fork(void)
{
    PyThread_release_lock(write_lock);
}
#endif

/* The process-wide lock, made by the first import (two interpreters may import at once). */
static int
ensure_write_lock(void)
{
    PyThread_type_lock made, expected = NULL;
    if (LOAD_ACQ(&write_lock) != NULL) {
        return 0;
    }
    made = PyThread_allocate_lock();
    if (made == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (!__atomic_compare_exchange_n(&write_lock, &expected, made, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        PyThread_free_lock(made);   /* another import made it first */
    }
#ifndef _WIN32
    else if (pthread_atfork(before_fork, after_fork, after_fork) != 0) {
        PyErr_SetString(PyExc_ImportError, "offsets._offsets: pthread_atfork failed");
        return -1;
    }
#endif
    return 0;
}

static int
module_clear(PyObject *mod)
{
    ModState *ms = (ModState *)PyModule_GetState(mod);
    int i;
    for (i = 0; ms != NULL && i < N_CALLABLES; i++) {
        Py_CLEAR(ms->py[i]);
    }
    return 0;
}

static int
module_traverse(PyObject *mod, visitproc visit, void *arg)
{
    ModState *ms = (ModState *)PyModule_GetState(mod);
    int i;
    for (i = 0; ms != NULL && i < N_CALLABLES; i++) {
        Py_VISIT(ms->py[i]);
    }
    return 0;
}

static void
module_free(void *mod)
{
    (void)module_clear((PyObject *)mod);
}

/* This interpreter's callables, then its table (chosen now if it is not yet: NoMatchingTable
 * fails the import), adopting the process's State when it is of the same table. */
static int
init_state(ModState *ms)
{
    PyObject *rt;
    int i;
    if (ensure_write_lock() < 0) {
        return -1;
    }
    rt = PyImport_ImportModule("offsets.runtime");
    for (i = 0; rt != NULL && i < N_RUNTIME; i++) {
        if ((ms->py[i] = PyObject_GetAttrString(rt, runtime_names[i])) == NULL) {
            break;
        }
    }
    Py_XDECREF(rt);
    if (ms->py[N_RUNTIME - 1] == NULL || refresh(ms, NULL, 1) < 0) {
        for (i = 0; i < N_CALLABLES; i++) {
            Py_CLEAR(ms->py[i]);
        }
        return -1;
    }
    return 0;
}

static int
module_exec(PyObject *m)
{
    PyObject *capsule;
    if (init_state((ModState *)PyModule_GetState(m)) < 0) {
        return -1;
    }
    STORE_REL(&PyOffsetsAPI, &capi);   /* this file's own pyoffsets.h getters (_bench_get) */
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
    /* each interpreter its own callables; the shared State needs no GIL: see the top of this file */
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},   /* its state is safe without the GIL: see the top of this file */
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "offsets._offsets",
    "The capsule of headers/pyoffsets.h (offsets' C API); import it from C with PyOffsets_Import().",
    sizeof(ModState), methods, module_slots, module_traverse, module_clear, module_free,
};

PyMODINIT_FUNC
PyInit__offsets(void)
{
    return PyModuleDef_Init(&module);
}
