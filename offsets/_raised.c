/* offsets._raised: the one read of the live check (offsets/runtime/live_raised.py) that Python
 * code cannot make: this thread's state while an exception is being raised. CPython takes the
 * raised exception out of the thread state before it runs any Python code, and ctypes raises an
 * exception set by a function it calls as soon as that call returns. So this function sets the
 * exception given (PyErr_Restore: its type, itself and its traceback), writes the first `n` bytes
 * of this thread's state to the pipe `fd` (write(2) reports an address it cannot read as EFAULT,
 * where a copy would crash), and clears the exception again, with no Python code run in between.
 * It touches nothing but this thread's own state, starts and blocks on nothing (the check's pipe
 * is empty and larger than `n`), and holds its references to the exception throughout. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <unistd.h>

/* raised_state(exception, fd, n) -> bytes written (n), or -errno */
static PyObject *
raised_state(PyObject *module, PyObject *args)
{
    PyObject *exc, *tb;
    int fd, err = 0;
    Py_ssize_t n, written;
    PyThreadState *ts;

    if (!PyArg_ParseTuple(args, "Oin", &exc, &fd, &n)) {
        return NULL;
    }
    if (!PyExceptionInstance_Check(exc) || n <= 0 || n > 4096) {
        PyErr_SetString(PyExc_ValueError, "raised_state(an exception instance, a pipe, 1 to 4096 bytes)");
        return NULL;
    }
    ts = PyThreadState_Get();
    tb = PyException_GetTraceback(exc);                 /* a new reference, or NULL */
    Py_INCREF(exc);
    Py_INCREF((PyObject *)Py_TYPE(exc));
    PyErr_Restore((PyObject *)Py_TYPE(exc), exc, tb);  /* takes the three references */
    written = write(fd, (const void *)ts, (size_t)n);
    if (written < 0) {
        err = errno;
    }
    PyErr_Clear();
    return PyLong_FromSsize_t(written < 0 ? -err : written);
}

static PyMethodDef methods[] = {
    {"raised_state", raised_state, METH_VARARGS,
     "raised_state(exception, fd, n): write this thread's state's first n bytes to fd while exception is raised."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "offsets._raised", "The thread state while an exception is raised (the live check's).",
    0, methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__raised(void)
{
    return PyModuleDef_Init(&module);
}
