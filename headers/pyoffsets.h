/* pyoffsets.h: the C API of `offsets`, for JIT compilers, profilers and debuggers running inside
 * CPython. Where does a field of CPython's internal structs live in the interpreter that is
 * running? This header answers at run time, through a capsule exported by the `offsets` package
 * (the pattern of CPython's own datetime.h):
 *
 *     #include <Python.h>
 *     #include "pyoffsets.h"          // directory: offsets.get_include()
 *
 *     if (PyOffsets_Import() < 0)     // once, with the GIL held; imports offsets._offsets
 *         return NULL;                // exception set: no table fits this build, or API too old
 *     Py_ssize_t idx = PyOffsets_Get("listiterobject.it_index");
 *     if (idx < 0)
 *         return NULL;                // exception set: offsets.errors.UnknownNameError (a KeyError)
 *     long long owner;
 *     if (PyOffsets_Constant("FRAME_OWNED_BY_GENERATOR", &owner) < 0)
 *         return NULL;                // what the bits mean: an enumerator or integer macro
 *
 * Names are "STRUCT.FIELD" with the field's offsetof() designator ("PyTypeObject.ob_base.ob_base.
 * ob_type"; members of anonymous structs and unions are flattened, "PyObject.ob_refcnt" in 3.12+).
 * Typedef, tag and alias names of a struct all work ("_PyListIterObject" and "listiterobject").
 * The table is the one `offsets.build()` reports (chosen by the build's exact identity, or a
 * live-checked table of another patch level of the same minor version; see docs/c-api.md).
 *
 * Threads: any thread may call the getters, with or without the GIL (free-threaded builds stay
 * free-threaded: the capsule's module declares Py_MOD_GIL_NOT_USED). A name already looked up is
 * answered from a lock-free cache, even with no thread state. A first lookup calls into Python:
 * with no attached thread state it returns -1 with errno = EPERM and no exception (nothing can hold
 * one); otherwise errors are -1 with an exception set. After offsets.use_table() returns, no lookup
 * gets the old table's answer. PyOffsets_Import() needs an attached thread state.
 * Sub-interpreters (3.12+: each with its own GIL) may import and call it too: a miss asks the
 * calling interpreter's own offsets.runtime, and answers are shared by the whole process.
 * Before PyOffsets_Import() succeeds, every getter fails cleanly (RuntimeError,
 * -1 / NULL) instead of reading garbage. Repeated lookups of a name cost a string hash and compare
 * (tens of nanoseconds); still, look names up once, when generating code, not per event.
 *
 * Errors: -1 (NULL, 0) with an exception set. A getter called while an exception is already set
 * returns its error value at once and leaves that exception in place, so lookups may be checked
 * together (as below) and the first failure is the one reported.
 *
 *     Py_ssize_t a = PyOffsets_Get("listiterobject.it_index"), b = PyOffsets_Get("listiterobject.it_seq");
 *     if (a < 0 || b < 0)
 *         return NULL;                // the first failure's exception
 *
 * Versioning: the capsule holds a PyOffsets_CAPI whose first member is its api_version. New
 * versions only append members (or keep a promise more strictly), so code compiled against an older
 * pyoffsets.h keeps working with a newer package; PyOffsets_Import() refuses a package older than
 * this header, with ImportError ("upgrade cpython-offsets"). Not installed at all: ImportError from
 * PyCapsule_Import ("No module named 'offsets'").
 *
 * Compile-time constants for one build live in the generated headers
 * generated/pyoffsets_cpython-<version>-<config>-<triple>.h (see docs/c-api.md).
 *
 * Like datetime.h, this header keeps the API pointer in a static variable, one per translation
 * unit: call PyOffsets_Import() in each .c file that uses the getters (it is cheap after the first).
 */
#ifndef PYOFFSETS_H
#define PYOFFSETS_H

#include <Python.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API version this header describes. 1: get, size_of, field, table_name, match, hexversion;
 * 2: constant; 3: a getter called with an exception already set returns its error value (-1, NULL,
 * 0) at once and leaves that exception in place (so several lookups checked together report the
 * first failure). */
#define PYOFFSETS_API_VERSION 3
/* Where the capsule lives: the module offsets._offsets, attribute _C_API. */
#define PYOFFSETS_CAPSULE_NAME "offsets._offsets._C_API"

/* One field, as PyOffsets_Field() describes it. A bitfield is read by loading `size` bytes at
 * `offset` and taking `bit_width` bits from bit `bit_offset` (little-endian numbering). */
typedef struct {
    Py_ssize_t offset;      /* bytes from the start of the outermost struct */
    Py_ssize_t size;        /* bytes; 0 for a flexible array member */
    int bit_offset;         /* -1 unless a bitfield */
    int bit_width;          /* -1 unless a bitfield */
    Py_ssize_t array_len;   /* -1 unless an array of fixed length */
    int flexible;           /* 1 for a flexible array member */
} PyOffsets_FieldInfo;

typedef struct {
    /* v1 */
    unsigned int api_version;                                   /* >= PYOFFSETS_API_VERSION */
    unsigned int reserved;
    Py_ssize_t (*get)(const char *name);                        /* -1 + exception if unknown; */
    Py_ssize_t (*size_of)(const char *struct_name);             /* -1 + errno EPERM if a miss */
    int (*field)(const char *name, PyOffsets_FieldInfo *out);   /* has no thread state */
    const char *(*table_name)(void);     /* "cpython-3.13.0-x86_64-linux-gnu" */
    const char *(*match)(void);          /* "exact", "proven" (answers only what the live check read) or "user" (use_table) */
    unsigned long (*hexversion)(void);   /* PY_VERSION_HEX of the table's build */
    /* v2 */
    int (*constant)(const char *name, long long *value);        /* 0, or -1 like get */
    /* later versions append members here */
} PyOffsets_CAPI;

/* The API in use by this translation unit; NULL until PyOffsets_Import() succeeds. */
static PyOffsets_CAPI *PyOffsetsAPI = NULL;

static inline int
_PyOffsets_NotImported(void)
{
    if (!PyErr_Occurred()) {    /* the first error stays the one reported */
        PyErr_SetString(PyExc_RuntimeError,
                        "pyoffsets.h: call PyOffsets_Import() (and check it returned 0) before the getters");
    }
    return -1;
}

/* Import the capsule: 0 on success, -1 with an exception set (ImportError, NoMatchingTable...). */
static inline int
PyOffsets_Import(void)
{
    PyOffsets_CAPI *api;
    if (PyOffsetsAPI != NULL) {
        return 0;
    }
    if (PyErr_Occurred()) {     /* an earlier failure: it stays the one reported */
        return -1;
    }
    api = (PyOffsets_CAPI *)PyCapsule_Import(PYOFFSETS_CAPSULE_NAME, 0);
    if (api == NULL) {
        return -1;
    }
    if (api->api_version < PYOFFSETS_API_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "offsets C API version %u is older than version %d, which this code was "
                     "compiled for: upgrade it (pip install -U cpython-offsets)", api->api_version,
                     PYOFFSETS_API_VERSION);
        return -1;
    }
    PyOffsetsAPI = api;
    return 0;
}

/* The byte offset of "STRUCT.FIELD" (a bitfield: of its storage unit); -1 with an exception. */
static inline Py_ssize_t
PyOffsets_Get(const char *name)
{
    if (PyOffsetsAPI == NULL) {
        return _PyOffsets_NotImported();
    }
    return PyOffsetsAPI->get(name);
}

/* The size of a struct; -1 with an exception. */
static inline Py_ssize_t
PyOffsets_Sizeof(const char *struct_name)
{
    if (PyOffsetsAPI == NULL) {
        return _PyOffsets_NotImported();
    }
    return PyOffsetsAPI->size_of(struct_name);
}

/* Everything about a field (offset, size, bits, array length); 0, or -1 with an exception. */
static inline int
PyOffsets_Field(const char *name, PyOffsets_FieldInfo *out)
{
    if (PyOffsetsAPI == NULL) {
        return _PyOffsets_NotImported();
    }
    return PyOffsetsAPI->field(name, out);
}

/* The value of a constant of CPython's own files in this build (an enumerator or an integer macro:
 * "FRAME_OWNED_BY_GENERATOR", "Py_TPFLAGS_HEAPTYPE", "PyLong_SHIFT"; "NAME@FILE" where the build
 * gives a name two values) into *value: 0, or -1 with an exception (as PyOffsets_Get). An unsigned
 * value above LLONG_MAX is its 64-bit pattern: read it as (unsigned long long)*value. */
static inline int
PyOffsets_Constant(const char *name, long long *value)
{
    if (PyOffsetsAPI == NULL) {
        return _PyOffsets_NotImported();
    }
    return PyOffsetsAPI->constant(name, value);
}

/* The name of the table in use (valid until offsets.use_table() replaces it); NULL if not
 * imported (with RuntimeError set). */
static inline const char *
PyOffsets_TableName(void)
{
    if (PyOffsetsAPI == NULL) {
        _PyOffsets_NotImported();
        return NULL;
    }
    return PyOffsetsAPI->table_name();
}

/* How the table matched: "exact", "proven" or "user"; NULL if not imported. */
static inline const char *
PyOffsets_Match(void)
{
    if (PyOffsetsAPI == NULL) {
        _PyOffsets_NotImported();
        return NULL;
    }
    return PyOffsetsAPI->match();
}

/* PY_VERSION_HEX of the table's build; 0 if not imported. */
static inline unsigned long
PyOffsets_TableHexversion(void)
{
    if (PyOffsetsAPI == NULL) {
        _PyOffsets_NotImported();
        return 0;
    }
    return PyOffsetsAPI->hexversion();
}

#ifdef __cplusplus
}
#endif
#endif /* PYOFFSETS_H */
