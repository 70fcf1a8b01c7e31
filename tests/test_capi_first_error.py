"""The C API keeps the first error: the init pattern of docs/c-api.md, exactly as written there (the
block is read from the doc), looks two names up before it checks either; a wrong first name must
end in that name's UnknownNameError, not in a SystemError of the second call run with an exception
pending. Built against the installed pyoffsets.h of pyenv's 3.8 and 3.13 (test_capi's venvs); the
answers of the right names are checked against the venv's own offsets.get(), and every getter is
shown to return its error value at once, leaving a pending exception as it was.
"""
from __future__ import annotations

import json

import pytest

from conftest import missing_input, pyenv_python3
from doc_blocks import block
from test_capi import prepared_venv, run

PATTERN = block("docs/c-api.md", "c", "jit_init(void)")
NAMES = ("listiterobject.it_index", "listiterobject.it_seq")

#: Every getter called with an exception already set: (what it returned, whether that exception is
#: still the one set, untouched).
GETTERS = r"""
static PyObject *
all_getters_with_an_exception_set(PyObject *self, PyObject *unused)
{
    PyObject *first = PyObject_CallFunction(PyExc_ValueError, "s", "the first error"), *type, *value, *tb;
    PyOffsets_FieldInfo info;
    long long constant = 0;
    Py_ssize_t got[6];
    const char *table, *match;
    unsigned long hexversion;
    int kept;
    if (first == NULL || PyOffsets_Get("PyListObject.ob_item") < 0) {   /* cached from here on */
        return NULL;
    }
    PyErr_SetObject(PyExc_ValueError, first);
    got[0] = PyOffsets_Get("PyListObject.ob_item");            /* cached */
    got[1] = PyOffsets_Get("PyTupleObject.ob_item");           /* a miss: would call Python */
    got[2] = PyOffsets_Sizeof("PyListObject");
    got[3] = PyOffsets_Field("PyListObject.ob_item", &info);
    got[4] = PyOffsets_Constant("Py_TPFLAGS_HEAPTYPE", &constant);
    got[5] = PyOffsets_Import();                                /* imported: 0, nothing touched */
    table = PyOffsets_TableName();
    match = PyOffsets_Match();
    hexversion = PyOffsets_TableHexversion();
    PyErr_Fetch(&type, &value, &tb);
    kept = type == PyExc_ValueError && value == first;
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    Py_DECREF(first);
    return Py_BuildValue("[nnnnnn]OOkO", got[0], got[1], got[2], got[3], got[4], got[5],
                         table ? Py_True : Py_None, match ? Py_True : Py_None, hexversion,
                         kept ? Py_True : Py_False);
}
"""


def module(name: str, pattern: str, extra: str = "") -> str:
    methods = '{"init", init, METH_NOARGS, ""},'
    if extra:
        methods += '{"all_getters_with_an_exception_set", all_getters_with_an_exception_set, METH_NOARGS, ""},'
    return pattern + extra + f"""
static PyObject *
init(PyObject *self, PyObject *unused)
{{
    if (jit_init() < 0)
        return NULL;
    return Py_BuildValue("nn", it_index, it_seq);
}}

static PyMethodDef methods[] = {{{methods} {{NULL, NULL, 0, NULL}}}};
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, methods}};
PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&def); }}
"""


def misspelled(which: int) -> str:
    assert all(f'"{n}"' in PATTERN for n in NAMES), "the doc's pattern looks these names up"
    return PATTERN.replace(f'"{NAMES[which]}"', f'"{NAMES[which]}_typo"')


CHECK = r"""
import json, offsets, firstok, firstbad, secondbad
from offsets.errors import UnknownNameError
out = {"ok": list(firstok.init()), "want": [offsets.get(n) for n in %r], "getters": firstok.all_getters_with_an_exception_set()}
for mod in (firstbad, secondbad):
    try:
        mod.init()
    except Exception as e:
        out[mod.__name__] = [type(e).__name__, isinstance(e, UnknownNameError), str(e), e.__context__ is None]
print(json.dumps(out))
""" % (NAMES,)


@pytest.mark.slow
@pytest.mark.parametrize("version", ("3.8", "3.13"))
def test_the_docs_init_pattern_ends_in_the_first_error(version, tmp_path):
    python = pyenv_python3(version)
    if python is None:
        missing_input(f"no pyenv CPython {version} on this machine (`pyenv install {version}` to test it)")
    vpy, _ = prepared_venv(python, version)
    names = {"firstok": module("firstok", PATTERN, GETTERS), "firstbad": module("firstbad", misspelled(0)),
             "secondbad": module("secondbad", misspelled(1))}
    for n, text in names.items():
        (tmp_path / f"{n}.c").write_text(text)
    setup = ("import offsets\nfrom setuptools import Extension, setup\n"
             "setup(name='firstdemo', ext_modules=[Extension(n, [n + '.c'], include_dirs=[offsets.get_include()]) "
             f"for n in {list(names)!r}])\n")
    (tmp_path / "setup.py").write_text(setup)
    run([vpy, "setup.py", "-q", "build_ext", "--inplace"], cwd=tmp_path)
    got = json.loads(run([vpy, "-c", CHECK], cwd=tmp_path).strip().splitlines()[-1])
    assert got["ok"] == got["want"], got
    for mod, which in (("firstbad", 0), ("secondbad", 1)):
        kind, unknown, message, alone = got[mod]
        assert (kind, unknown, alone) == ("UnknownNameError", True, True), got[mod]
        assert f"{NAMES[which]}_typo" in message, got[mod]
    # every getter: its error value at once (-1, -1, -1, -1, -1; Import already done: 0), the
    # identity getters NULL, NULL, 0, and the exception set before them still the one set
    assert got["getters"] == [[-1, -1, -1, -1, -1, 0], None, None, 0, True], got["getters"]
