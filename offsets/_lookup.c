/* offsets._lookup: what offsets.get, offsets.sizeof and offsets.constant are, so that they have a
 * docstring of their own at the speed of the bound dict.__getitem__ they were. A bound builtin
 * method's docstring is its C function's ("Return self[key]."); this module makes the same kind of
 * object (a builtin function, METH_O, whose self is the runtime's dict) with the docstring given:
 * the interpreter calls it as it calls d.__getitem__ (3.11+ specializes both alike), and the call is
 * the dict's own subscript (whose __missing__ fills it on first use).
 *
 * The runtime falls back to the bound method where this module cannot be imported.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* dict.__getitem__(map, name): dict's own subscript (which calls a subclass's __missing__), not the
 * subclass's slot, which is the generic one (dict's __getitem__ is a method, not a slot wrapper). */
static PyObject *
subscript(PyObject *map, PyObject *name)
{
    return PyDict_Type.tp_as_mapping->mp_subscript(map, name);
}

static char *
copy(PyObject *s)
{
    const char *text = PyUnicode_AsUTF8(s);
    char *out = text ? (char *)PyMem_RawMalloc(strlen(text) + 1) : NULL;
    if (text && out == NULL) {
        PyErr_NoMemory();
    }
    return out ? strcpy(out, text) : NULL;
}

/* function(map, name, doc) -> a builtin function `name` with docstring `doc` calling map[arg]. Its
 * method definition lives as long as the process (a few per interpreter that imports the runtime). */
static PyObject *
function(PyObject *self, PyObject *args)
{
    PyObject *map, *name, *doc, *module, *fn;
    PyMethodDef *def;
    if (!PyArg_ParseTuple(args, "O!UU:function", &PyDict_Type, &map, &name, &doc)) {
        return NULL;
    }
    def = (PyMethodDef *)PyMem_RawCalloc(1, sizeof(PyMethodDef));
    if (def == NULL) {
        return PyErr_NoMemory();
    }
    def->ml_name = copy(name);
    def->ml_doc = def->ml_name ? copy(doc) : NULL;
    if (def->ml_doc == NULL) {
        PyMem_RawFree((void *)def->ml_name);
        PyMem_RawFree(def);
        return NULL;
    }
    def->ml_meth = subscript;
    def->ml_flags = METH_O;
    module = PyUnicode_FromString("offsets");
    fn = module ? PyCFunction_NewEx(def, map, module) : NULL;
    Py_XDECREF(module);
    return fn;      /* on failure def is kept: nothing else points at it, and it is small */
}

static PyMethodDef methods[] = {
    {"function", function, METH_VARARGS,
     "function(map, name, doc): a builtin function `name`, documented by `doc`, that returns map[arg]."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot module_slots[] = {
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},   /* no state at all */
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},   /* a call is the dict's own subscript */
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "offsets._lookup",
    "The functions offsets.get, offsets.sizeof and offsets.constant: a docstring at dict speed.",
    0, methods, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__lookup(void)
{
    return PyModuleDef_Init(&module);
}
