/* offsets._lookup: what offsets.get, offsets.sizeof and offsets.constant are, so that they have a
 * docstring and a plain repr of their own at the speed of the bound dict.__getitem__ they were: a
 * call is one vectorcall into PyObject_GetItem() of the runtime's dict (whose __missing__ fills it
 * on first use). A bound builtin method's docstring is its C function's ("Return self[key]."), so
 * only a callable of our own can say what the function does.
 *
 * The runtime falls back to the bound method where this module cannot be imported (an isolated
 * sub-interpreter with its own GIL: the type is static, one per process).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#if PY_VERSION_HEX >= 0x03090000
#  define LOOKUP_VECTORCALL_FLAG Py_TPFLAGS_HAVE_VECTORCALL
#else
#  define LOOKUP_VECTORCALL_FLAG _Py_TPFLAGS_HAVE_VECTORCALL
#endif

typedef struct {
    PyObject_HEAD
    PyObject *map;      /* the runtime's dict: name -> answer, __missing__ filling it */
    PyObject *name;     /* "get" */
    PyObject *doc;
    vectorcallfunc vectorcall;
} Lookup;

static PyObject *
lookup_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Lookup *lk = (Lookup *)self;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        return PyErr_Format(PyExc_TypeError, "offsets.%U() takes exactly one argument, the name", lk->name);
    }
    return PyObject_GetItem(lk->map, args[0]);
}

static PyObject *
lookup_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *map, *name, *doc;
    Lookup *lk;
    if (!PyArg_ParseTuple(args, "O!UU:Lookup", &PyDict_Type, &map, &name, &doc)) {
        return NULL;
    }
    lk = (Lookup *)type->tp_alloc(type, 0);
    if (lk == NULL) {
        return NULL;
    }
    Py_INCREF(map);
    Py_INCREF(name);
    Py_INCREF(doc);
    lk->map = map;
    lk->name = name;
    lk->doc = doc;
    lk->vectorcall = lookup_vectorcall;
    return (PyObject *)lk;
}

static int
lookup_traverse(Lookup *lk, visitproc visit, void *arg)
{
    Py_VISIT(lk->map);
    return 0;
}

static int
lookup_clear(Lookup *lk)
{
    Py_CLEAR(lk->map);
    return 0;
}

static void
lookup_dealloc(Lookup *lk)
{
    PyObject_GC_UnTrack(lk);
    (void)lookup_clear(lk);
    Py_CLEAR(lk->name);
    Py_CLEAR(lk->doc);
    Py_TYPE(lk)->tp_free((PyObject *)lk);
}

static PyObject *
lookup_repr(Lookup *lk)
{
    return PyUnicode_FromFormat("<function offsets.%U>", lk->name);
}

static PyMemberDef lookup_members[] = {
    {"__doc__", T_OBJECT, offsetof(Lookup, doc), READONLY, NULL},
    {"__name__", T_OBJECT, offsetof(Lookup, name), READONLY, NULL},
    {"__qualname__", T_OBJECT, offsetof(Lookup, name), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *
lookup_module(PyObject *self, void *unused)
{
    return PyUnicode_FromString("offsets");
}

static PyGetSetDef lookup_getset[] = {
    {"__module__", lookup_module, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LookupType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    "offsets._lookup.Lookup",                   /* tp_name */
    sizeof(Lookup),                             /* tp_basicsize */
    0,                                          /* tp_itemsize */
    (destructor)lookup_dealloc,                 /* tp_dealloc */
    offsetof(Lookup, vectorcall),               /* tp_vectorcall_offset */
    0, 0, 0,                                    /* tp_getattr, tp_setattr, tp_as_async */
    (reprfunc)lookup_repr,                      /* tp_repr */
    0, 0, 0, 0,                                 /* tp_as_number, tp_as_sequence, tp_as_mapping, tp_hash */
    PyVectorcall_Call,                          /* tp_call */
    0,                                          /* tp_str */
    0, 0, 0,                                    /* tp_getattro, tp_setattro, tp_as_buffer */
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | LOOKUP_VECTORCALL_FLAG,   /* tp_flags */
    "Lookup(dict, name, doc): dict[name], with a docstring of its own (offsets.get & co.)",   /* tp_doc */
    (traverseproc)lookup_traverse,              /* tp_traverse */
    (inquiry)lookup_clear,                      /* tp_clear */
    0, 0, 0, 0,                                 /* tp_richcompare, tp_weaklistoffset, tp_iter, tp_iternext */
    0,                                          /* tp_methods */
    lookup_members,                             /* tp_members */
    lookup_getset,                              /* tp_getset */
    0, 0, 0, 0, 0, 0, 0,                        /* tp_base ... tp_alloc */
    lookup_new,                                 /* tp_new */
};

static int
module_exec(PyObject *m)
{
    if (PyType_Ready(&LookupType) < 0) {
        return -1;
    }
    Py_INCREF(&LookupType);
    if (PyModule_AddObject(m, "Lookup", (PyObject *)&LookupType) < 0) {
        Py_DECREF(&LookupType);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, (void *)module_exec},
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},   /* no state: a call is the dict's own lookup */
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "offsets._lookup",
    "The callables offsets.get, offsets.sizeof and offsets.constant (a docstring at dict speed).",
    0, NULL, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__lookup(void)
{
    return PyModuleDef_Init(&module);
}
