/* A translation unit that includes pyoffsets.h and never calls PyOffsets_Import(): its getters
 * must fail with RuntimeError, not read through a NULL or stale pointer. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pyoffsets.h"

PyObject *
noimport_get(PyObject *self, PyObject *args)
{
    const char *name;
    Py_ssize_t v;
    if (!PyArg_ParseTuple(args, "s", &name)) {
        return NULL;
    }
    v = PyOffsets_Get(name);
    if (v >= 0 || PyOffsets_TableName() != NULL) {
        return PyErr_Format(PyExc_AssertionError, "a getter answered before PyOffsets_Import()");
    }
    return NULL;   /* the RuntimeError the getter set */
}
