/* offsets._offsets: the capsule behind headers/pyoffsets.h.
 *
 * The answers come from offsets.runtime (the table chosen for this interpreter); this module only
 * keeps what C callers asked for in a small hash table keyed by C string, so that a repeated
 * PyOffsets_Get() is a string hash and compare, with no Python object made. A miss calls
 * offsets.runtime.get()/sizeof(), which resolves aliases or raises UnknownNameError.
 * offsets.runtime calls _reset() when the table changes (use_table).
 *
 * Every entry point needs the GIL, as the header says.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "pyoffsets.h"

typedef struct {
    char *name;        /* NULL: empty slot */
    size_t len;
    uint64_t hash;
    Py_ssize_t value;
} Entry;

typedef struct {
    Entry *slots;
    size_t cap;        /* a power of two, or 0 */
    size_t used;
} Cache;

static Cache offsets_cache, sizes_cache;
static PyObject *py_get, *py_sizeof, *py_field, *py_build;   /* offsets.runtime callables */
static char *cur_table_name, *cur_match;
static unsigned long cur_hexversion;

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

static inline Entry *
cache_find(Cache *c, const char *name, size_t len, uint64_t h)
{
    size_t mask, i;
    if (c->cap == 0) {
        return NULL;
    }
    mask = c->cap - 1;
    for (i = (size_t)h & mask;; i = (i + 1) & mask) {
        Entry *e = &c->slots[i];
        if (e->name == NULL) {
            return e;
        }
        if (e->hash == h && e->len == len && memcmp(e->name, name, len) == 0) {
            return e;
        }
    }
}

static void
cache_clear(Cache *c)
{
    size_t i;
    for (i = 0; i < c->cap; i++) {
        PyMem_RawFree(c->slots[i].name);
    }
    PyMem_RawFree(c->slots);
    c->slots = NULL;
    c->cap = c->used = 0;
}

static int
cache_put(Cache *c, const char *name, size_t len, uint64_t h, Py_ssize_t value)
{
    Entry *e;
    char *copy;
    if ((c->used + 1) * 2 > c->cap) {
        size_t i, cap = c->cap ? c->cap * 2 : 64;
        Entry *slots = (Entry *)PyMem_RawCalloc(cap, sizeof(Entry));
        Cache grown;
        if (slots == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        grown.slots = slots;
        grown.cap = cap;
        grown.used = c->used;
        for (i = 0; i < c->cap; i++) {
            if (c->slots[i].name != NULL) {
                *cache_find(&grown, c->slots[i].name, c->slots[i].len, c->slots[i].hash) = c->slots[i];
            }
        }
        PyMem_RawFree(c->slots);
        *c = grown;
    }
    copy = (char *)PyMem_RawMalloc(len + 1);
    if (copy == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(copy, name, len + 1);
    e = cache_find(c, name, len, h);
    e->name = copy;
    e->len = len;
    e->hash = h;
    e->value = value;
    c->used++;
    return 0;
}

static Py_ssize_t
lookup(Cache *c, PyObject *func, const char *name)
{
    uint64_t h;
    size_t len;
    Entry *e;
    PyObject *r;
    Py_ssize_t value;
    if (name == NULL) {
        PyErr_SetString(PyExc_TypeError, "pyoffsets.h: the name is NULL");
        return -1;
    }
    len = strlen(name);
    h = hash_name(name, len);
    e = cache_find(c, name, len, h);
    if (e != NULL && e->name != NULL) {
        return e->value;
    }
    r = PyObject_CallFunction(func, "s", name);
    if (r == NULL) {
        return -1;
    }
    value = PyLong_AsSsize_t(r);
    Py_DECREF(r);
    if (value < 0) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "offsets: negative value %zd for %s", value, name);
        }
        return -1;
    }
    if (cache_put(c, name, len, h, value) < 0) {
        return -1;
    }
    return value;
}

static Py_ssize_t
capi_get(const char *name)
{
    return lookup(&offsets_cache, py_get, name);
}

static Py_ssize_t
capi_size_of(const char *struct_name)
{
    return lookup(&sizes_cache, py_sizeof, struct_name);
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
        PyErr_SetString(PyExc_TypeError, "PyOffsets_Field: NULL argument");
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
        rc = flex == NULL ? -1 : 0;
        if (flex != NULL) {
            out->flexible = PyObject_IsTrue(flex);
            Py_DECREF(flex);
        }
        out->bit_offset = (int)bo;
        out->bit_width = (int)bw;
    }
    Py_DECREF(f);
    return rc ? -1 : 0;
}

static const char *
capi_table_name(void)
{
    return cur_table_name;
}

static const char *
capi_match(void)
{
    return cur_match;
}

static unsigned long
capi_hexversion(void)
{
    return cur_hexversion;
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

/* Forget the cached answers and read the identity of the table in use (choosing it if need be).
 * The previous identity strings are not freed: a caller may still hold them (use_table is rare). */
static int
refresh(void)
{
    PyObject *m, *hv;
    char *name, *match;
    cache_clear(&offsets_cache);
    cache_clear(&sizes_cache);
    m = PyObject_CallObject(py_build, NULL);
    if (m == NULL) {
        return -1;
    }
    name = dup_attr(m, "table");
    match = name ? dup_attr(m, "kind") : NULL;
    hv = match ? PyObject_GetAttrString(m, "_build") : NULL;
    Py_DECREF(m);
    if (hv == NULL) {
        return -1;
    }
    {
        PyObject *h = PyDict_GetItemString(hv, "hexversion");
        unsigned long value = h ? PyLong_AsUnsignedLong(h) : 0;
        Py_DECREF(hv);
        if (h == NULL || PyErr_Occurred()) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "offsets: the table in use has no hexversion");
            }
            return -1;
        }
        cur_hexversion = value;
    }
    cur_table_name = name;
    cur_match = match;
    return 0;
}

static PyObject *
mod_reset(PyObject *self, PyObject *unused)
{
    if (refresh() < 0) {
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
    PyOffsets_CAPI *saved = PyOffsetsAPI;
    if (!PyArg_ParseTuple(args, "sn", &name, &n)) {
        return NULL;
    }
    PyOffsetsAPI = &capi;
    if (PyOffsets_Get(name) < 0 || n <= 0) {
        PyOffsetsAPI = saved;
        return n <= 0 ? PyErr_Format(PyExc_ValueError, "n must be positive") : NULL;
    }
    t0 = now_ns();
    for (i = 0; i < n; i++) {
        sink += PyOffsets_Get(name);
    }
    t0 = now_ns() - t0;
    PyOffsetsAPI = saved;
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

/* _identity() -> (table_name, match, hexversion) as C callers see them, for tests. */
static PyObject *
mod_identity(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("ssk", capi.table_name(), capi.match(), capi.hexversion());
}

static PyMethodDef methods[] = {
    {"_get", mod_get, METH_O, "_get(name): PyOffsets_Get(name) through the capsule."},
    {"_identity", mod_identity, METH_NOARGS, "(table name, match, hexversion) as C callers see them."},
    {"_reset", mod_reset, METH_NOARGS, "Forget cached answers; the table in use changed."},
    {"_bench_get", mod_bench_get, METH_VARARGS, "_bench_get(name, n): ns per PyOffsets_Get(name) call."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "offsets._offsets",
    "The capsule of headers/pyoffsets.h (offsets' C API); import it from C with PyOffsets_Import().",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__offsets(void)
{
    PyObject *m, *rt, *capsule;
    rt = PyImport_ImportModule("offsets.runtime");
    if (rt == NULL) {
        return NULL;
    }
    if (py_get == NULL) {
        py_get = PyObject_GetAttrString(rt, "get");
        py_sizeof = PyObject_GetAttrString(rt, "sizeof");
        py_field = PyObject_GetAttrString(rt, "field");
        py_build = PyObject_GetAttrString(rt, "build");
    }
    Py_DECREF(rt);
    if (!py_get || !py_sizeof || !py_field || !py_build) {
        return NULL;
    }
    if (refresh() < 0) {    /* chooses the table: NoMatchingTable fails the import, clearly */
        return NULL;
    }
    m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    capsule = PyCapsule_New(&capi, PYOFFSETS_CAPSULE_NAME, NULL);
    if (capsule == NULL || PyModule_AddObject(m, "_C_API", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "API_VERSION", PYOFFSETS_API_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
