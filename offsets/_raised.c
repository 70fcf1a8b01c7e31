/* offsets._raised: the reads of the live check (offsets/runtime/live_raised.py) that Python code
 * cannot make, each of a state that Python code never sees.
 *
 * raised_state: this thread's state while an exception is being raised. CPython takes the raised
 * exception out of the thread state before it runs any Python code, and ctypes raises an exception
 * set by a function it calls as soon as that call returns. So this function sets the exception
 * given (PyErr_Restore: its type, itself and its traceback), writes the first `n` bytes of this
 * thread's state to the pipe `fd` (write(2) reports an address it cannot read as EFAULT, where a
 * copy would crash), and clears the exception again, with no Python code run in between. It touches
 * nothing but this thread's own state, and holds its references to the exception throughout.
 *
 * eval_frame_state: bytes of this interpreter's state while its eval-frame function (PEP 523) is
 * one of this module's, which only calls CPython's own. Where none is set (CPython's own is in use)
 * it is set, the bytes written, and CPython's set back, all while this thread holds the GIL and runs
 * no Python code: no other thread of the interpreter runs meanwhile, so none sees it. Only in
 * builds with a GIL, and only up to 3.12 (3.13 counts each change as a rare event that stops its
 * optimizer). Where another function is set (a JIT's), nothing is changed: the bytes are written as
 * they are, with that function's address.
 *
 * Neither starts nor blocks on anything: the check's pipe is empty and larger than `n`. */
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

#if PY_VERSION_HEX >= 0x03090000 && PY_VERSION_HEX < 0x030D0000 && !defined(Py_GIL_DISABLED)
#  if PY_VERSION_HEX >= 0x030B0000
typedef struct _PyInterpreterFrame evaluated;
#  else
typedef PyFrameObject evaluated;
#  endif
/* The eval-frame function set while the bytes are written: CPython's own, called. */
static PyObject *
passthrough(PyThreadState *ts, evaluated *frame, int throwflag)
{
    return _PyEval_EvalFrameDefault(ts, frame, throwflag);
}
#  define HAVE_EVAL_FRAME_STATE 1
#endif

/* eval_frame_state(fd, start, n) -> (bytes written or -errno, the eval-frame function's address) */
static PyObject *
eval_frame_state(PyObject *module, PyObject *args)
{
    int fd, err = 0;
    Py_ssize_t start, n, written;

    if (!PyArg_ParseTuple(args, "inn", &fd, &start, &n)) {
        return NULL;
    }
    if (start < 0 || n <= 0 || n > 32768) {
        PyErr_SetString(PyExc_ValueError, "eval_frame_state(a pipe, a start, 1 to 32768 bytes)");
        return NULL;
    }
#ifdef HAVE_EVAL_FRAME_STATE
    {
        PyInterpreterState *interp = PyInterpreterState_Get();
        _PyFrameEvalFunction own = _PyInterpreterState_GetEvalFrameFunc(interp), seen = own;
        if (own == _PyEval_EvalFrameDefault) {
            seen = (_PyFrameEvalFunction)passthrough;
            _PyInterpreterState_SetEvalFrameFunc(interp, seen);
        }
        written = write(fd, (const char *)interp + start, (size_t)n);
        if (written < 0) {
            err = errno;
        }
        if (own == _PyEval_EvalFrameDefault) {
            _PyInterpreterState_SetEvalFrameFunc(interp, own);
        }
        return Py_BuildValue("nK", written < 0 ? -err : written, (unsigned long long)(size_t)seen);
    }
#else
    (void)fd;
    (void)err;
    (void)written;
    Py_RETURN_NONE;
#endif
}

static PyMethodDef methods[] = {
    {"raised_state", raised_state, METH_VARARGS,
     "raised_state(exception, fd, n): write this thread's state's first n bytes to fd while exception is raised."},
    {"eval_frame_state", eval_frame_state, METH_VARARGS,
     "eval_frame_state(fd, start, n): write n bytes of this interpreter's state from start to fd while its "
     "eval-frame function is not CPython's own; (written, that function's address), or None where not read."},
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
    PyModuleDef_HEAD_INIT, "offsets._raised",
    "The live check's reads of states Python code never sees (a raised exception, the eval-frame function).",
    0, methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__raised(void)
{
    return PyModuleDef_Init(&module);
}
