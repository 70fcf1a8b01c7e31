/* jitext: a test extension that plays a JIT. Everything it knows about CPython's layouts comes
 * from pyoffsets.h at run time: it reads live objects at the offsets the capsule gives, and the
 * Python side (check_jit.py) compares what it read with what Python says. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "pyoffsets.h"

PyObject *noimport_get(PyObject *self, PyObject *args);   /* noimport.c */

#define AT(obj, off, type) (*(type *)((char *)(obj) + (off)))

static PyObject *
do_import(PyObject *self, PyObject *unused)
{
    if (PyOffsets_Import() < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
get(PyObject *self, PyObject *args)
{
    const char *name;
    Py_ssize_t v;
    if (!PyArg_ParseTuple(args, "s", &name)) {
        return NULL;
    }
    v = PyOffsets_Get(name);
    return v < 0 ? NULL : PyLong_FromSsize_t(v);
}

static PyObject *
size_of(PyObject *self, PyObject *args)
{
    const char *name;
    Py_ssize_t v;
    if (!PyArg_ParseTuple(args, "s", &name)) {
        return NULL;
    }
    v = PyOffsets_Sizeof(name);
    return v < 0 ? NULL : PyLong_FromSsize_t(v);
}

static PyObject *
field(PyObject *self, PyObject *args)
{
    const char *name;
    PyOffsets_FieldInfo f;
    if (!PyArg_ParseTuple(args, "s", &name)) {
        return NULL;
    }
    if (PyOffsets_Field(name, &f) < 0) {
        return NULL;
    }
    return Py_BuildValue("nniini", f.offset, f.size, f.bit_offset, f.bit_width, f.array_len, f.flexible);
}

static PyObject *
table(PyObject *self, PyObject *unused)
{
    const char *name = PyOffsets_TableName(), *match = PyOffsets_Match();
    if (name == NULL || match == NULL) {
        return NULL;
    }
    return Py_BuildValue("ssk", name, match, PyOffsets_TableHexversion());
}

/* listiter(it) -> (it_index, it_seq), read through listiterobject's offsets */
static PyObject *
listiter(PyObject *self, PyObject *it)
{
    Py_ssize_t idx = PyOffsets_Get("listiterobject.it_index"), seq = PyOffsets_Get("listiterobject.it_seq");
    PyObject *s;
    if (idx < 0 || seq < 0) {
        return NULL;
    }
    s = AT(it, seq, PyObject *);
    return Py_BuildValue("nO", AT(it, idx, Py_ssize_t), s ? s : Py_None);
}

/* list_item(lst, i) -> lst[i], read through PyListObject.ob_item */
static PyObject *
list_item(PyObject *self, PyObject *args)
{
    PyObject *lst, *item;
    Py_ssize_t i, off;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &lst, &i)) {
        return NULL;
    }
    if ((off = PyOffsets_Get("PyListObject.ob_item")) < 0) {
        return NULL;
    }
    item = AT(lst, off, PyObject **)[i];
    Py_INCREF(item);
    return item;
}

/* tuple_item(t, i) -> t[i], read through PyTupleObject.ob_item (an inline array) */
static PyObject *
tuple_item(PyObject *self, PyObject *args)
{
    PyObject *t, *item;
    Py_ssize_t i, off;
    if (!PyArg_ParseTuple(args, "O!n", &PyTuple_Type, &t, &i)) {
        return NULL;
    }
    if ((off = PyOffsets_Get("PyTupleObject.ob_item")) < 0) {
        return NULL;
    }
    item = ((PyObject **)((char *)t + off))[i];
    Py_INCREF(item);
    return item;
}

/* long_digits(n, sizeof_digit) -> (sign, [digits]): 3.12+ long_value.lv_tag, else ob_size */
static PyObject *
long_digits(PyObject *self, PyObject *args)
{
    PyObject *n, *out;
    int dsize;
    Py_ssize_t tag_off, digit_off, ndigits, i;
    int sign;
    if (!PyArg_ParseTuple(args, "O!i", &PyLong_Type, &n, &dsize)) {
        return NULL;
    }
    tag_off = PyOffsets_Get("PyLongObject.long_value.lv_tag");
    if (tag_off >= 0) {
        size_t tag = AT(n, tag_off, size_t);
        ndigits = (Py_ssize_t)(tag >> 3);
        sign = 1 - (int)(tag & 3);
        digit_off = PyOffsets_Get("PyLongObject.long_value.ob_digit");
    }
    else {
        Py_ssize_t size, size_off;
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
            return NULL;
        }
        PyErr_Clear();
        if ((size_off = PyOffsets_Get("PyLongObject.ob_base.ob_size")) < 0) {
            return NULL;
        }
        size = AT(n, size_off, Py_ssize_t);
        ndigits = size < 0 ? -size : size;
        sign = (size > 0) - (size < 0);
        digit_off = PyOffsets_Get("PyLongObject.ob_digit");
    }
    if (digit_off < 0) {
        return NULL;
    }
    out = PyList_New(ndigits);
    for (i = 0; out && i < ndigits; i++) {
        unsigned long d = dsize == 4 ? ((uint32_t *)((char *)n + digit_off))[i]
                                     : ((uint16_t *)((char *)n + digit_off))[i];
        PyList_SET_ITEM(out, i, PyLong_FromUnsignedLong(d));
    }
    return out ? Py_BuildValue("iN", sign, out) : NULL;
}

/* frame_code() -> the code object of the Python function calling this, found through the thread
 * state: 3.13+ current_frame -> f_executable; 3.11-3.12 cframe -> current_frame -> f_code;
 * up to 3.10 frame -> f_code. Which path exists is asked of the table, not of PY_VERSION_HEX. */
static PyObject *
frame_code(PyObject *self, PyObject *unused)
{
    char *ts = (char *)PyThreadState_Get(), *frame;
    Py_ssize_t a, b;
    PyObject *code;
    if ((a = PyOffsets_Get("PyThreadState.current_frame")) >= 0) {
        frame = AT(ts, a, char *);
        b = PyOffsets_Get("_PyInterpreterFrame.f_executable");
    }
    else {
        Py_ssize_t c;
        PyErr_Clear();
        a = PyOffsets_Get("PyThreadState.cframe");
        c = a < 0 ? -1 : PyOffsets_Get("_PyCFrame.current_frame");   /* 3.10's CFrame has none */
        if (a >= 0 && c >= 0) {
            frame = AT(AT(ts, a, char *), c, char *);
            b = PyOffsets_Get("_PyInterpreterFrame.f_code");
        }
        else {
            PyErr_Clear();
            if ((a = PyOffsets_Get("PyThreadState.frame")) < 0) {
                return NULL;
            }
            frame = AT(ts, a, char *);
            b = PyOffsets_Get("PyFrameObject.f_code");
        }
    }
    if (b < 0) {
        return NULL;
    }
    code = AT(frame, b, PyObject *);
    Py_INCREF(code);
    return code;
}

static PyObject *
constant(PyObject *self, PyObject *args)
{
    const char *name;
    long long v;
    if (!PyArg_ParseTuple(args, "s", &name)) {
        return NULL;
    }
    if (PyOffsets_Constant(name, &v) < 0) {
        return NULL;
    }
    return PyLong_FromLongLong(v);
}

/* gen_owner(gen) -> the owner byte of a generator's own frame (3.11+), read at the offsets the
 * capsule gives: what a JIT compares with FRAME_OWNED_BY_GENERATOR. */
static PyObject *
gen_owner(PyObject *self, PyObject *gen)
{
    Py_ssize_t frame = PyOffsets_Get("PyGenObject.gi_iframe"), owner;
    if (frame < 0) {
        return NULL;
    }
    owner = PyOffsets_Get("_PyInterpreterFrame.owner");
    if (owner < 0) {
        return NULL;
    }
    return PyLong_FromLong(AT(gen, frame + owner, char));
}

static PyMethodDef methods[] = {
    {"constant", constant, METH_VARARGS, NULL},
    {"gen_owner", gen_owner, METH_O, NULL},
    {"do_import", do_import, METH_NOARGS, NULL},
    {"get", get, METH_VARARGS, NULL},
    {"size_of", size_of, METH_VARARGS, NULL},
    {"field", field, METH_VARARGS, NULL},
    {"table", table, METH_NOARGS, NULL},
    {"listiter", listiter, METH_O, NULL},
    {"list_item", list_item, METH_VARARGS, NULL},
    {"tuple_item", tuple_item, METH_VARARGS, NULL},
    {"long_digits", long_digits, METH_VARARGS, NULL},
    {"frame_code", frame_code, METH_NOARGS, NULL},
    {"noimport_get", noimport_get, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "jitext", NULL, -1, methods};

PyMODINIT_FUNC
PyInit_jitext(void)
{
    PyObject *m = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
    /* a JIT that uses offsets keeps a free-threaded interpreter free-threaded (single-phase init) */
    if (m != NULL && PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    return m;
}
