/* json_value(data) for offsets._lookup (included by _lookup.c): the value of a JSON text (bytes or
 * str) as a 1-tuple, for the JSON the tables are written in, or None where it leaves the text to
 * CPython's own parser (layout/json_read.py then decides, and raises where json.loads does). A first
 * lookup parses about twenty lines; CPython's scanner (`_json`) costs it another shared object to
 * load, more than the parsing.
 *
 * It reads only what json.loads reads to the same value by one obvious rule, and declines all else:
 * - objects, arrays, `true`, `false`, `null`, with JSON's whitespace (space, tab, CR, LF) around
 *   any token (a key repeated: the last value, as json.loads);
 * - strings of printable ASCII, with the escapes `\" \\ \/ \b \f \n \r \t` (not `\u`);
 * - integers of at most 18 digits, without leading zeros.
 * It declines floats, NaN and Infinity, `\u` escapes, any byte beyond ASCII or below 0x20 in a
 * string, nesting deeper than JSON_DEPTH, and anything json.loads refuses (and more).
 * tests/test_lookup_c.py compares it with json.loads on every line of the shipped tables and on
 * generated texts. */

#define JSON_DEPTH 64

typedef struct {
    const char *p, *end;
    int depth;
} JsonText;

static PyObject *json_any(JsonText *t);

static void
json_space(JsonText *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r')) {
        t->p++;
    }
}

/* A string at t->p (its opening quote); NULL (no error set) to decline. */
static PyObject *
json_string(JsonText *t)
{
    const uint64_t high = 0x8080808080808080ULL, low = 0x2020202020202020ULL, ones = 0x0101010101010101ULL;
    const char *q = ++t->p;
    char *buf, *o;
    int escaped = 0;
    PyObject *out;
    /* eight plain bytes at a time: none beyond ASCII, below 0x20, a quote or a backslash */
    for (; t->end - q >= 8; q += 8) {
        uint64_t w, quote, slash;
        memcpy(&w, q, 8);
        quote = w ^ (ones * '"');
        slash = w ^ (ones * '\\');
        if (((w | ((w - low) & ~w) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash)) & high) != 0) {
            break;
        }
    }
    for (; q < t->end && *q != '"'; q++) {
        unsigned char c = (unsigned char)*q;
        if (c < 0x20 || c >= 0x80) {
            return NULL;
        }
        if (c == '\\') {
            if (++q == t->end) {
                return NULL;
            }
            switch (*q) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                escaped = 1;
                break;
            default:
                return NULL;
            }
        }
    }
    if (q == t->end) {
        return NULL;
    }
    if (!escaped) {
        if ((out = PyUnicode_New(q - t->p, 127)) != NULL) {
            memcpy(PyUnicode_DATA(out), t->p, (size_t)(q - t->p));
        }
        t->p = q + 1;
        return out;
    }
    if ((buf = (char *)PyMem_Malloc((size_t)(q - t->p))) == NULL) {
        return PyErr_NoMemory();
    }
    for (o = buf; t->p < q; t->p++) {
        char c = *t->p;
        if (c == '\\') {
            c = *++t->p;
            c = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
        }
        *o++ = c;
    }
    t->p = q + 1;
    out = PyUnicode_FromStringAndSize(buf, o - buf);
    PyMem_Free(buf);
    return out;
}

static PyObject *
json_integer(JsonText *t)
{
    const char *q = t->p, *digits;
    long long v = 0;
    int negative = *q == '-';
    q += negative;
    digits = q;
    while (q < t->end && *q >= '0' && *q <= '9') {
        if (q - digits == 18) {
            return NULL;
        }
        v = v * 10 + (*q++ - '0');
    }
    if (q == digits || (*digits == '0' && q - digits > 1)
        || (q < t->end && (*q == '.' || *q == 'e' || *q == 'E'))) {
        return NULL;
    }
    t->p = q;
    return PyLong_FromLongLong(negative ? -v : v);
}

static PyObject *
json_word(JsonText *t, const char *word, PyObject *value)
{
    size_t n = strlen(word);
    if ((size_t)(t->end - t->p) < n || memcmp(t->p, word, n) != 0) {
        return NULL;
    }
    t->p += n;
    Py_INCREF(value);
    return value;
}

/* The items of an array or object after its opening bracket, up to its closing one. */
static PyObject *
json_items(JsonText *t, int object)
{
    PyObject *out = object ? PyDict_New() : PyList_New(0), *key = NULL, *item;
    char close = object ? '}' : ']';
    if (out == NULL) {
        return NULL;
    }
    t->p++;
    json_space(t);
    if (t->p < t->end && *t->p == close) {
        t->p++;
        return out;
    }
    for (;;) {
        if (object) {
            if (t->p == t->end || *t->p != '"' || (key = json_string(t)) == NULL) {
                goto fail;
            }
            json_space(t);
            if (t->p == t->end || *t->p++ != ':') {
                goto fail;
            }
            json_space(t);
        }
        if ((item = json_any(t)) == NULL) {
            goto fail;
        }
        if (object ? PyDict_SetItem(out, key, item) : PyList_Append(out, item)) {
            Py_DECREF(item);
            goto fail;
        }
        Py_DECREF(item);
        Py_CLEAR(key);
        json_space(t);
        if (t->p == t->end) {
            goto fail;
        }
        if (*t->p == close) {
            t->p++;
            return out;
        }
        if (*t->p++ != ',') {
            goto fail;
        }
        json_space(t);
    }
fail:
    Py_XDECREF(key);
    Py_DECREF(out);
    return NULL;
}

/* A value at t->p (no space before it); NULL to decline (no error set) or on an error. */
static PyObject *
json_any(JsonText *t)
{
    PyObject *out;
    if (t->p == t->end) {
        return NULL;
    }
    switch (*t->p) {
    case '"':
        return json_string(t);
    case '[': case '{':
        if (++t->depth > JSON_DEPTH) {
            return NULL;
        }
        out = json_items(t, *t->p == '{');
        t->depth--;
        return out;
    case 't':
        return json_word(t, "true", Py_True);
    case 'f':
        return json_word(t, "false", Py_False);
    case 'n':
        return json_word(t, "null", Py_None);
    default:
        return json_integer(t);
    }
}

static PyObject *
json_value(PyObject *self, PyObject *data)
{
    JsonText t;
    Py_buffer view;
    PyObject *value, *out = NULL;
    int viewed = 0;
    if (PyUnicode_Check(data)) {
        Py_ssize_t n;
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(data) < 0) {
            return NULL;
        }
#endif
        if (!PyUnicode_IS_ASCII(data) || (t.p = PyUnicode_AsUTF8AndSize(data, &n)) == NULL) {
            if (PyErr_Occurred()) {
                return NULL;
            }
            Py_RETURN_NONE;
        }
        t.end = t.p + n;
    }
    else if (PyBytes_Check(data) || PyByteArray_Check(data)) {
        if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
            return NULL;
        }
        viewed = 1;
        t.p = (const char *)view.buf;
        t.end = t.p + view.len;
    }
    else {
        Py_RETURN_NONE;
    }
    t.depth = 0;
    json_space(&t);
    value = json_any(&t);
    if (value != NULL) {
        json_space(&t);
        if (t.p == t.end) {
            out = PyTuple_Pack(1, value);
        }
        Py_DECREF(value);
    }
    if (viewed) {
        PyBuffer_Release(&view);
    }
    if (out == NULL && !PyErr_Occurred()) {
        Py_RETURN_NONE;
    }
    return out;
}
