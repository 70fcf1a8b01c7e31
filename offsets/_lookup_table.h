/* A table read in C for a first lookup (included by _lookup.c, Linux only), so that it imports
 * neither layout/compact_read.py nor runtime/tables.py: the build-id file's line of a binary
 * (build_id_entries), a compact table's header and its pool's (open_table: a shipped table and the
 * shared pool, each vouched for by the digest the build-id file gives, or an own table, its pool in
 * its file, read only from a regular file), and a struct's row (struct_row), each read and checked
 * as compact_read.py reads and checks it (docs/table-format.md): every line by its sha256, the
 * header by check_head's rules, every number of a row in range.
 *
 * It answers only what it has read and checked in full. Anything else raises ValueError (or, for
 * the build-id file, returns None, as compact_read does): a file that is missing, damaged, not a
 * regular file where no digest vouches for it, or not of this format, a line its JSON reading
 * declines. The runtime (core.py) then takes the whole way, which reads the same files in Python
 * (compact_read.py) and says what is wrong. The cold pool's shards are inflated by CPython's
 * binascii and zlib, imported only for a struct whose layouts are there. An open table keeps what
 * it has read in the dicts it is made of (groups, shards, the line list), so its caller calls it
 * from one thread at a time (the runtime's lock). tests/test_lookup_table.py compares each function
 * with compact_read's on every struct of every shipped table, on an own table and on damaged copies. */

#define TABLE_FORMAT 8
#define ID_CHARS 10
#define SHARDS 256
#define GROUP_SHARDS 16
#define GROUPS (SHARDS / GROUP_SHARDS)
#define DIGEST_CHARS 64
#define GROUP_LINE_BYTES (GROUP_SHARDS * DIGEST_CHARS + 1)
#define MAX_END_DIGITS 8
#define MAX_HEAD_BYTES (4 * 1024 * 1024)
#define MAX_LINE_BYTES (16 * 1024 * 1024)
#define MAX_BUILD_ID_BYTES (1 << 22)
#define MAX_DEPTH 64
#define MAX_BYTES 2147483647LL
#define MAX_ALIGN 4096
#define PROBE_BYTES 2048
#define POOL_FILE "layouts.jsonl"

static PyObject *
declined(const char *why)
{
    PyErr_SetString(PyExc_ValueError, why);
    return NULL;
}

/* ------------------------------------------------------------------ reading */
/* Up to `size` bytes of `fd` from `at` (fewer at its end), as bytes; NULL with ValueError. */
static PyObject *
bytes_at(int fd, long long at, Py_ssize_t size)
{
    PyObject *out;
    Py_ssize_t got = 0;
    if (size < 0 || at < 0) {
        return declined("a range outside the file");
    }
    out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL) {
        return NULL;
    }
    while (got < size) {
        ssize_t n = pread(fd, PyBytes_AS_STRING(out) + got, (size_t)(size - got), (off_t)(at + got));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            Py_DECREF(out);
            return declined("cannot read the file");
        }
        if (n == 0) {
            break;
        }
        got += n;
    }
    if (got != size && _PyBytes_Resize(&out, got) < 0) {
        return NULL;
    }
    return out;
}

/* The files a call (open_table, struct_row) has opened, kept open by this thread until the call
 * returns (`held_begin`, `held_end`): a first lookup reads some twenty lines of the pool, and an
 * open and a close of each cost more than the rest of its reading. Per thread, so that neither
 * sub-interpreters with their own GIL nor a free-threaded build share them; a call inside a call
 * (none today) closes nothing before the outer one returns. Every one is O_CLOEXEC. */
#define HELD_FILES 2
static __thread int held_depth, held_count;
static __thread struct { char *path; int fd; } held[HELD_FILES];

static void
held_begin(void)
{
    held_depth++;
}

static void
held_end(void)
{
    if (--held_depth > 0) {
        return;
    }
    while (held_count > 0) {
        held_count--;
        close(held[held_count].fd);
        PyMem_RawFree(held[held_count].path);
    }
}

/* call(args), the files it opens held until it returns. */
static PyObject *
held_call(PyObject *(*call)(PyObject *), PyObject *args)
{
    PyObject *out;
    held_begin();
    out = call(args);
    held_end();
    return out;
}

/* A descriptor of `path` open for reading: one this thread's call holds (`*owned` 0), else opened
 * now and held where the call has room for it, else the caller's to close (`*owned` 1); -1 where
 * it cannot be opened or is no regular file (opened non-blocking: an own table's file, read again
 * after open_table checked it, may be a FIFO by then). */
static int
held_fd(const char *path, int *owned)
{
    int i, fd;
    struct stat st;
    size_t len = strlen(path) + 1;
    for (i = 0; i < held_count; i++) {
        if (strcmp(held[i].path, path) == 0) {
            *owned = 0;
            return held[i].fd;
        }
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    *owned = 1;
    if (fd >= 0 && held_depth > 0 && held_count < HELD_FILES) {
        char *copy = PyMem_RawMalloc(len);
        if (copy != NULL) {
            memcpy(copy, path, len);
            held[held_count].path = copy;
            held[held_count].fd = fd;
            held_count++;
            *owned = 0;
        }
    }
    return fd;
}

/* Up to `size` bytes of the file `path` from `at`: compact_read._read. */
static PyObject *
file_bytes_at(const char *path, long long at, Py_ssize_t size)
{
    PyObject *out;
    int owned, fd = held_fd(path, &owned);
    if (fd < 0) {
        return declined("cannot open the file");
    }
    out = bytes_at(fd, at, size);
    if (owned) {
        close(fd);
    }
    return out;
}

/* The line of `fd` (`size` bytes) that starts at `at`, without its newline; None where it has none
 * before the end (compact_read.line_at). */
static PyObject *
line_at(int fd, long long at, long long size)
{
    PyObject *data = PyBytes_FromStringAndSize("", 0);
    while (data != NULL && at + PyBytes_GET_SIZE(data) < size) {
        PyObject *more = bytes_at(fd, at + PyBytes_GET_SIZE(data), PROBE_BYTES);
        const char *end;
        if (more == NULL) {
            Py_DECREF(data);
            return NULL;
        }
        if (PyBytes_GET_SIZE(more) == 0) {
            Py_DECREF(more);
            break;
        }
        end = memchr(PyBytes_AS_STRING(more), '\n', (size_t)PyBytes_GET_SIZE(more));
        if (end != NULL) {
            PyObject *part = PyBytes_FromStringAndSize(PyBytes_AS_STRING(more), end - PyBytes_AS_STRING(more));
            Py_DECREF(more);
            if (part == NULL) {
                Py_DECREF(data);
                return NULL;
            }
            PyBytes_ConcatAndDel(&data, part);
            return data;
        }
        PyBytes_ConcatAndDel(&data, more);
    }
    Py_XDECREF(data);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The first line of the file `path` as readline(MAX_HEAD_BYTES + 1) reads it (its newline kept),
 * read in pieces into a buffer that grows with it (a header is some kilobytes); `regular_only`: a
 * file no digest vouches for, read only if it is a regular file (open non-blocking: a FIFO is not). */
static PyObject *
first_line(const char *path, int regular_only)
{
    char *buf = NULL;
    Py_ssize_t got = 0, size = 0, most = MAX_HEAD_BYTES + 1;
    PyObject *out = NULL;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | (regular_only ? O_NONBLOCK : 0));
    if (fd < 0) {
        return declined("cannot open the file");
    }
    if (regular_only && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {    /* regular_file.open_regular */
        close(fd);
        return declined("not a regular file");
    }
    while (got < most) {
        Py_ssize_t want;
        ssize_t n;
        const char *newline;
        if (got == size) {
            char *more;
            size = size ? (2 * size < most ? 2 * size : most) : 8192;
            more = PyMem_RawRealloc(buf, (size_t)size);
            if (more == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            buf = more;
        }
        want = size - got;
        n = pread(fd, buf + got, (size_t)want, (off_t)got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            declined("cannot read the file");
            goto done;
        }
        if (n == 0) {
            break;
        }
        newline = memchr(buf + got, '\n', (size_t)n);
        if (newline != NULL) {
            got = newline - buf + 1;
            break;
        }
        got += n;
    }
    out = PyBytes_FromStringAndSize(buf ? buf : "", got);
done:
    PyMem_RawFree(buf);
    close(fd);
    return out;
}

/* ------------------------------------------------------------------ checking */
/* Whether the sha256 of data[0:len] starts with the `chars` hex digits of `want` (a str). */
static int
digest_is(const char *data, Py_ssize_t len, PyObject *want, Py_ssize_t chars)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char digest[32];
    char hex[64];
    const char *w;
    Py_ssize_t n, i;
    if (!PyUnicode_Check(want) || (w = PyUnicode_AsUTF8AndSize(want, &n)) == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (n != chars || chars > 64) {
        return 0;
    }
    sha256_of((const unsigned char *)data, (size_t)len, digest, 1);
    for (i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    return memcmp(hex, w, (size_t)chars) == 0;
}

/* The JSON value of data[0:len] (json_value's reading), or NULL with ValueError where it declines. */
static PyObject *
json_of(const char *data, Py_ssize_t len)
{
    JsonText t;
    PyObject *value;
    t.p = data;
    t.end = data + len;
    t.depth = 0;
    json_space(&t);
    value = json_any(&t);
    if (value == NULL) {
        return PyErr_Occurred() ? NULL : declined("a line its JSON reading declines");
    }
    json_space(&t);
    if (t.p != t.end) {
        Py_DECREF(value);
        return declined("a line its JSON reading declines");
    }
    return value;
}

static int
is_int(PyObject *v)        /* compact_read._is_int: type(v) is int */
{
    return v != NULL && PyLong_CheckExact(v);
}

static int
int_is(PyObject *v, long long value)   /* v == value, as Python compares an int (or a bool) */
{
    long long got;
    if (v == NULL || !PyLong_Check(v)) {
        return 0;
    }
    got = PyLong_AsLongLong(v);
    if (got == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return got == value;
}

static int
int_in(PyObject *v, long long lo, long long hi, long long *out)    /* is_int(v) and lo <= v <= hi */
{
    long long got;
    if (!is_int(v)) {
        return 0;
    }
    got = PyLong_AsLongLong(v);
    if (got == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (out != NULL) {
        *out = got;
    }
    return lo <= got && got <= hi;
}

/* lower_hex(v) with its text: a str of lowercase hex digits only; NULL if not. */
static const char *
hex_text(PyObject *v, Py_ssize_t *n)
{
    const char *p;
    Py_ssize_t i;
    if (v == NULL || !PyUnicode_Check(v)) {
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(v) < 0) {
        PyErr_Clear();
        return NULL;
    }
#endif
    if (!PyUnicode_IS_ASCII(v) || (p = PyUnicode_AsUTF8AndSize(v, n)) == NULL) {
        PyErr_Clear();
        return NULL;
    }
    for (i = 0; i < *n; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) {
            return NULL;
        }
    }
    return p;
}

static int
is_id(PyObject *v)         /* compact_read._is_id */
{
    Py_ssize_t n;
    return hex_text(v, &n) != NULL && n == ID_CHARS;
}

/* int(text[0:n], 16) of hex digits (at most MAX_END_DIGITS of them). */
static long long
hex_number(const char *text, Py_ssize_t n)
{
    long long v = 0;
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        v = v * 16 + (text[i] <= '9' ? text[i] - '0' : text[i] - 'a' + 10);
    }
    return v;
}

/* compact_read.end_digits: the width of each line end of `ends` for the ids `ids`, or 0. */
static Py_ssize_t
end_digits(PyObject *ids, PyObject *ends)
{
    Py_ssize_t ni, ne, n, width;
    if (hex_text(ids, &ni) == NULL || hex_text(ends, &ne) == NULL || ni % ID_CHARS != 0) {
        return 0;
    }
    n = ni / ID_CHARS;
    width = n ? ne / n : 1;
    return 1 <= width && width <= MAX_END_DIGITS && ne == n * width ? width : 0;
}

static PyObject *
item(PyObject *d, const char *key)     /* d.get(key) of a dict (borrowed), else NULL */
{
    PyObject *v;
    if (d == NULL || !PyDict_Check(d)) {
        return NULL;
    }
    v = PyDict_GetItemString(d, key);
    return v;
}

/* ------------------------------------------------------------------ the build-id file */
/* compact_read.sorted_line: the line from `lo` to `hi` that starts with `key` (a build-id and a
 * space), without its newline; b"" where none does. */
static PyObject *
sorted_line(int fd, long long lo, long long hi, const char *key, Py_ssize_t key_len)
{
    long long end = hi;
    while (hi - lo > PROBE_BYTES) {
        long long mid = (lo + hi) / 2, start;
        PyObject *probe = bytes_at(fd, mid - 1, PROBE_BYTES);
        const char *p, *newline, *space;
        Py_ssize_t n, found_len;
        int order;
        if (probe == NULL) {
            return NULL;
        }
        p = PyBytes_AS_STRING(probe);
        n = PyBytes_GET_SIZE(probe);
        newline = memchr(p, '\n', (size_t)n);
        space = newline ? memchr(newline + 1, ' ', (size_t)(p + n - newline - 1)) : NULL;
        if (space == NULL) {
            Py_DECREF(probe);
            break;
        }
        start = mid + (newline - p);
        found_len = space - newline - 1;
        order = memcmp(newline + 1, key, (size_t)(found_len < key_len - 1 ? found_len : key_len - 1));
        if (order == 0) {
            order = found_len < key_len - 1 ? -1 : found_len > key_len - 1 ? 1 : 0;
        }
        Py_DECREF(probe);
        if (start >= hi || order > 0) {
            hi = mid;
        }
        else {
            lo = start;
            if (order == 0) {
                break;
            }
        }
    }
    while (lo < (hi < end ? hi : end)) {
        PyObject *line = line_at(fd, lo, end);
        if (line == NULL) {
            return NULL;
        }
        if (line == Py_None) {
            Py_DECREF(line);
            line = bytes_at(fd, lo, (Py_ssize_t)(end - lo));
            if (line == NULL) {
                return NULL;
            }
        }
        if (PyBytes_GET_SIZE(line) >= key_len && memcmp(PyBytes_AS_STRING(line), key, (size_t)key_len) == 0) {
            return line;
        }
        lo += PyBytes_GET_SIZE(line) + 1;
        Py_DECREF(line);
    }
    return PyBytes_FromStringAndSize("", 0);
}

/* compact_read.entry_problem(e) == "" */
static int
entry_ok(PyObject *e)
{
    static const char *strs[] = {"name", "file", "version", "triple", "head_sha256", NULL};
    PyObject *file;
    const char *f;
    Py_ssize_t n;
    int i;
    if (!PyDict_Check(e)) {
        return 0;
    }
    for (i = 0; strs[i] != NULL; i++) {
        PyObject *v = item(e, strs[i]);
        if (v == NULL || !PyUnicode_Check(v)) {
            return 0;
        }
    }
    if (!is_int(item(e, "hexversion")) || !is_int(item(e, "pointer_size")) || item(e, "config") == NULL
            || !PyDict_Check(item(e, "config"))) {
        return 0;
    }
    file = item(e, "file");
    if ((f = PyUnicode_AsUTF8AndSize(file, &n)) == NULL) {
        PyErr_Clear();
        return 0;
    }
    return !(memchr(f, '/', (size_t)n) || memchr(f, '\\', (size_t)n) || (n > 0 && f[0] == '.'));
}

/* Whether build_id in (e.get("build_ids") or ()). */
static int
records(PyObject *e, PyObject *build_id)
{
    PyObject *ids = item(e, "build_ids");
    int truth, in;
    if (ids == NULL) {
        return 0;
    }
    truth = PyObject_IsTrue(ids);
    if (truth <= 0) {
        PyErr_Clear();
        return 0;
    }
    in = PySequence_Contains(ids, build_id);
    if (in < 0) {
        PyErr_Clear();
        return 0;
    }
    return in;
}

/* compact_read.build_id_entries(path, build_id): (entries, aliases, pool_sha256), or None. */
static PyObject *
table_build_id_entries(PyObject *self, PyObject *args)
{
    const char *path;
    PyObject *build_id, *key = NULL, *first = NULL, *head = NULL, *line = NULL, *entries = NULL, *out = NULL;
    PyObject *aliases, *pool_sha256, *whole = NULL;
    struct stat st;
    const char *digest, *text, *k;
    Py_ssize_t key_len, n, i;
    int fd;
    if (!PyArg_ParseTuple(args, "sU:build_id_entries", &path, &build_id)) {
        return NULL;
    }
    key = PyUnicode_AsEncodedString(build_id, "ascii", "replace");
    if (key == NULL) {
        return NULL;
    }
    PyBytes_ConcatAndDel(&key, PyBytes_FromStringAndSize(" ", 1));
    if (key == NULL) {
        return NULL;
    }
    k = PyBytes_AS_STRING(key);
    key_len = PyBytes_GET_SIZE(key);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        Py_DECREF(key);
        Py_RETURN_NONE;
    }
    if (fstat(fd, &st) < 0 || st.st_size > MAX_BUILD_ID_BYTES || (first = line_at(fd, 0, (long long)st.st_size)) == NULL
            || first == Py_None) {
        goto none;
    }
    head = json_of(PyBytes_AS_STRING(first), PyBytes_GET_SIZE(first));
    if (head == NULL || !PyDict_Check(head) || !int_is(item(head, "format"), TABLE_FORMAT)
            || !int_is(item(head, "bytes"), (long long)st.st_size - PyBytes_GET_SIZE(first) - 1)
            || item(head, "aliases") == NULL || !PyDict_Check(item(head, "aliases"))
            || item(head, "pool_sha256") == NULL || !PyUnicode_Check(item(head, "pool_sha256"))) {
        goto none;
    }
    aliases = item(head, "aliases");
    pool_sha256 = item(head, "pool_sha256");
    line = sorted_line(fd, PyBytes_GET_SIZE(first) + 1, (long long)st.st_size, k, key_len);
    if (line == NULL) {
        goto none;
    }
    close(fd);
    fd = -1;
    if (PyBytes_GET_SIZE(line) == 0) {
        entries = PyList_New(0);
        goto found;
    }
    digest = PyBytes_AS_STRING(line) + key_len;
    n = PyBytes_GET_SIZE(line) - key_len;
    text = memchr(digest, ' ', (size_t)n);
    if (text == NULL) {             /* partition: no text, and the digest is the whole rest */
        text = digest + n;
    }
    else {
        text++;
    }
    {   /* sha256(first + "\n" + key + text) == digest */
        Py_ssize_t digest_len = (text == digest + n ? n : text - 1 - digest), text_len = digest + n - text;
        PyObject *want = PyUnicode_DecodeASCII(digest, digest_len, "strict");
        whole = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(first) + 1 + key_len + text_len);
        if (want == NULL || whole == NULL) {
            Py_XDECREF(want);
            PyErr_Clear();
            goto none;
        }
        memcpy(PyBytes_AS_STRING(whole), PyBytes_AS_STRING(first), (size_t)PyBytes_GET_SIZE(first));
        PyBytes_AS_STRING(whole)[PyBytes_GET_SIZE(first)] = '\n';
        memcpy(PyBytes_AS_STRING(whole) + PyBytes_GET_SIZE(first) + 1, k, (size_t)key_len);
        memcpy(PyBytes_AS_STRING(whole) + PyBytes_GET_SIZE(first) + 1 + key_len, text, (size_t)text_len);
        i = digest_is(PyBytes_AS_STRING(whole), PyBytes_GET_SIZE(whole), want, 64);
        Py_DECREF(want);
        if (!i) {
            goto none;
        }
        entries = json_of(text, text_len);
    }
    if (entries == NULL || !PyList_Check(entries) || PyList_GET_SIZE(entries) == 0) {
        goto none;
    }
    for (i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *e = PyList_GET_ITEM(entries, i);
        if (!entry_ok(e) || !records(e, build_id)) {
            goto none;
        }
    }
found:
    if (entries != NULL) {
        out = PyTuple_Pack(3, entries, aliases, pool_sha256);
    }
    goto done;
none:
    PyErr_Clear();
    out = Py_None;
    Py_INCREF(out);
done:
    if (fd >= 0) {
        close(fd);
    }
    Py_XDECREF(key);
    Py_XDECREF(first);
    Py_XDECREF(head);
    Py_XDECREF(line);
    Py_XDECREF(entries);
    Py_XDECREF(whole);
    return out;
}

/* ------------------------------------------------------------------ the table and its pool */
/* The first line of `path`, checked against `digest` (None: no digest vouches for it) and decoded:
 * compact_read._first_line. The line's length goes to `*base`. */
static PyObject *
vouched_first_line(const char *path, PyObject *digest, long long *base)
{
    PyObject *line = first_line(path, digest == Py_None), *value;
    Py_ssize_t n;
    if (line == NULL) {
        return NULL;
    }
    n = PyBytes_GET_SIZE(line);
    *base = n;
    while (n > 0 && PyBytes_AS_STRING(line)[n - 1] == '\n') {
        n--;
    }
    if (digest != Py_None && !digest_is(PyBytes_AS_STRING(line), n, digest, 64)) {
        Py_DECREF(line);
        return declined("a header fails its checksum");
    }
    value = json_of(PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line));
    Py_DECREF(line);
    return value;
}

static int
is_str_or_none(PyObject *v)
{
    return v == NULL || v == Py_None || PyUnicode_Check(v);
}

static int
is_dict_or_none(PyObject *v)
{
    return v == NULL || v == Py_None || PyDict_Check(v);
}

static int
ids_list(PyObject *v)          /* a list of ids */
{
    Py_ssize_t i;
    if (v == NULL || !PyList_Check(v)) {
        return 0;
    }
    for (i = 0; i < PyList_GET_SIZE(v); i++) {
        if (!is_id(PyList_GET_ITEM(v, i))) {
            return 0;
        }
    }
    return 1;
}

/* compact_read.check_head(head) == "": a compact table's first line is a header of this format. */
static int
head_ok(PyObject *head)
{
    static const char *types[] = {"i", "u", "l", "ul", "ll", "ull", "s", "us", "c", "sc", "uc", "b", NULL};
    PyObject *b, *target, *binaries, *pool, *sizes, *left_out, *k, *v;
    Py_ssize_t i, n, pos;
    if (!PyDict_Check(head) || !int_is(item(head, "format"), TABLE_FORMAT)) {
        return 0;
    }
    b = item(head, "build");
    target = item(b, "target");
    if (b == NULL || !PyDict_Check(b) || item(b, "version") == NULL || !PyUnicode_Check(item(b, "version"))
            || !is_int(item(b, "hexversion")) || item(b, "config") == NULL || !PyDict_Check(item(b, "config"))
            || target == NULL || !PyDict_Check(target) || item(target, "triple") == NULL
            || !PyUnicode_Check(item(target, "triple"))
            || !(int_is(item(target, "pointer_size"), 4) || int_is(item(target, "pointer_size"), 8))) {
        return 0;
    }
    if (!is_str_or_none(item(b, "vendor")) || !is_dict_or_none(item(b, "defines"))
            || !is_dict_or_none(item(b, "inputs"))
            || !is_str_or_none(item(b, "stand_in"))) {
        return 0;
    }
    binaries = item(b, "binaries");
    if (binaries != NULL) {
        if (!PyList_Check(binaries)) {
            return 0;
        }
        for (i = 0; i < PyList_GET_SIZE(binaries); i++) {
            PyObject *x = PyList_GET_ITEM(binaries, i);
            if (!PyList_Check(x) || PyList_GET_SIZE(x) != 3 || !PyUnicode_Check(PyList_GET_ITEM(x, 0))
                    || !PyUnicode_Check(PyList_GET_ITEM(x, 1)) || !PyUnicode_Check(PyList_GET_ITEM(x, 2))) {
                return 0;
            }
        }
    }
    if (!is_id(item(head, "struct_keys")) || !is_id(item(head, "struct_lines"))
            || hex_text(item(head, "struct_ids"), &n) == NULL || n % ID_CHARS != 0) {
        return 0;
    }
    pool = item(head, "pool");
    if (pool != NULL && PyUnicode_Check(pool)) {
        if (PyUnicode_CompareWithASCIIString(pool, POOL_FILE) != 0) {
            return 0;
        }
    }
    else if (pool == NULL || !PyDict_Check(pool) || end_digits(item(pool, "ids"), item(pool, "ends")) == 0) {
        return 0;
    }
    if (!is_id(item(head, "names")) || item(head, "scanner") == NULL || !PyDict_Check(item(head, "scanner"))
            || !ids_list(item(head, "skipped")) || !ids_list(item(head, "conflicts"))) {
        return 0;
    }
    v = item(head, "depends");
    if (v != NULL && v != Py_None && !is_id(v)) {
        return 0;
    }
    v = item(head, "constants");
    sizes = item(head, "constant_sizes");
    left_out = item(head, "constants_left_out");
    if ((v != NULL && v != Py_None && !is_id(v)) || (sizes != NULL && !PyDict_Check(sizes))
            || (left_out != NULL && !PyDict_Check(left_out))) {
        return 0;
    }
    pos = 0;
    while (sizes != NULL && PyDict_Next(sizes, &pos, &k, &v)) {
        int known = 0;
        for (i = 0; types[i] != NULL && PyUnicode_Check(k); i++) {
            known |= PyUnicode_CompareWithASCIIString(k, types[i]) == 0;
        }
        if (!known || !(int_is(v, 1) || int_is(v, 2) || int_is(v, 4) || int_is(v, 8))) {
            return 0;
        }
    }
    pos = 0;
    while (left_out != NULL && PyDict_Next(left_out, &pos, &k, &v)) {
        if (!PyUnicode_Check(k) || !is_int(v)) {
            return 0;
        }
    }
    return 1;
}

/* A pool file, as a dict: its file, where its lines start, its shards' digests and line ends, what
 * has been read of it (groups, shards), and its cold pool: (file, digest) of the hot pool's, opened
 * when a node the hot one lacks is asked for (`cold_pool`); `compressed` for the cold one, whose
 * shard lines are the base64 of a zlib stream of the line and its nodes (compact_read.ColdPool). */
static PyObject *
open_pool(const char *path, PyObject *digest, int compressed)
{
    long long base, groups_at;
    PyObject *head = vouched_first_line(path, digest, &base), *pool = NULL, *shards, *ends, *cold, *cold_at = NULL;
    Py_ssize_t nd, ne, width;
    const char *e;
    if (head == NULL) {
        return NULL;
    }
    shards = item(head, "shards");
    ends = item(head, "ends");
    cold = compressed ? NULL : item(head, "cold");
    if (!PyDict_Check(head) || !int_is(item(head, "format"), TABLE_FORMAT) || hex_text(shards, &nd) == NULL
            || nd != GROUPS * DIGEST_CHARS || (e = hex_text(ends, &ne)) == NULL || ne % SHARDS != 0
            || ne / SHARDS < 1 || ne / SHARDS > MAX_END_DIGITS) {
        Py_DECREF(head);
        return declined("a pool header of another format");
    }
    if (cold != NULL && cold != Py_None) {
        const char *slash = strrchr(path, '/');
        if (hex_text(cold, &nd) == NULL || nd != DIGEST_CHARS) {
            Py_DECREF(head);
            return declined("a pool header of another format");
        }
        PyObject *folder = PyUnicode_DecodeFSDefaultAndSize(path, slash ? slash - path + 1 : 0);
        cold_at = folder != NULL ? Py_BuildValue("(NO)", PyUnicode_FromFormat("%Ucold.jsonl", folder), cold) : NULL;
        Py_XDECREF(folder);
        if (cold_at == NULL) {
            Py_DECREF(head);
            return NULL;
        }
    }
    else {
        cold_at = Py_None;
        Py_INCREF(cold_at);
    }
    width = ne / SHARDS;
    groups_at = base + hex_number(e + ne - width, width);
    pool = Py_BuildValue("{s:s,s:L,s:L,s:n,s:O,s:O,s:N,s:O,s:O,s:{},s:{}}", "path", path, "base", base,
                         "groups_at", groups_at, "width", width, "digests", shards, "ends", ends, "cold", cold_at,
                         "cold_pool", Py_None, "compressed", compressed ? Py_True : Py_False, "groups", "shards");
    Py_DECREF(head);
    return pool;
}

static long long
dict_long(PyObject *d, const char *key)
{
    return PyLong_AsLongLong(PyDict_GetItemString(d, key));
}

/* Shard k's digest, from its group line (read and checked when first needed): SharedPool._shard_digest. */
static PyObject *
shard_digest(PyObject *pool, int k)
{
    int g = k / GROUP_SHARDS, i = k % GROUP_SHARDS;
    PyObject *groups = PyDict_GetItemString(pool, "groups"), *key = PyLong_FromLong(g), *line;
    if (key == NULL) {
        return NULL;
    }
    line = PyDict_GetItem(groups, key);
    if (line == NULL) {
        PyObject *want, *read;
        const char *digests = PyUnicode_AsUTF8(PyDict_GetItemString(pool, "digests"));
        read = file_bytes_at(PyUnicode_AsUTF8(PyDict_GetItemString(pool, "path")),
                             dict_long(pool, "groups_at") + (long long)g * GROUP_LINE_BYTES, GROUP_LINE_BYTES);
        if (read == NULL || digests == NULL) {
            Py_XDECREF(read);
            Py_DECREF(key);
            return NULL;
        }
        want = PyUnicode_FromStringAndSize(digests + g * DIGEST_CHARS, DIGEST_CHARS);
        if (want == NULL || PyBytes_GET_SIZE(read) == 0 || PyBytes_AS_STRING(read)[PyBytes_GET_SIZE(read) - 1] != '\n'
                || !digest_is(PyBytes_AS_STRING(read), PyBytes_GET_SIZE(read) - 1, want, 64)) {
            Py_XDECREF(want);
            Py_DECREF(read);
            Py_DECREF(key);
            return declined("a group line fails its checksum");
        }
        Py_DECREF(want);
        line = PyUnicode_DecodeASCII(PyBytes_AS_STRING(read), PyBytes_GET_SIZE(read) - 1, "strict");
        Py_DECREF(read);
        if (line == NULL || PyDict_SetItem(groups, key, line) < 0) {
            Py_XDECREF(line);
            Py_DECREF(key);
            PyErr_Clear();
            return declined("a group line that is not text");
        }
        Py_DECREF(line);
    }
    Py_DECREF(key);
    return PyUnicode_Substring(line, (Py_ssize_t)i * DIGEST_CHARS, (Py_ssize_t)(i + 1) * DIGEST_CHARS);
}

/* A cold shard's line inflated (ColdPool._shard_text), through CPython's binascii and zlib. */
static PyObject *
inflated(PyObject *raw)
{
    PyObject *binascii = PyImport_ImportModule("binascii"), *zlib = PyImport_ImportModule("zlib");
    PyObject *data = NULL, *inflate = NULL, *text = NULL, *tail = NULL, *eof = NULL;
    if (binascii != NULL && zlib != NULL && (data = PyObject_CallMethod(binascii, "a2b_base64", "O", raw)) != NULL
            && (inflate = PyObject_CallMethod(zlib, "decompressobj", NULL)) != NULL) {
        text = PyObject_CallMethod(inflate, "decompress", "On", data, (Py_ssize_t)(MAX_HEAD_BYTES + MAX_LINE_BYTES));
        tail = PyObject_GetAttrString(inflate, "unconsumed_tail");
        eof = PyObject_GetAttrString(inflate, "eof");
        if (text != NULL && (tail == NULL || PyObject_IsTrue(tail) != 0 || eof != Py_True || !PyBytes_Check(text))) {
            Py_CLEAR(text);
        }
    }
    Py_XDECREF(binascii);
    Py_XDECREF(zlib);
    Py_XDECREF(data);
    Py_XDECREF(inflate);
    Py_XDECREF(tail);
    Py_XDECREF(eof);
    if (text == NULL) {
        PyErr_Clear();
        return declined("a cold shard that is not base64 of a zlib stream of a shard");
    }
    return text;
}

/* Shard k: (ids, ends, where its nodes start, width, its node lines where they are held in memory
 * (a cold shard's) or None), read and checked once: SharedPool._shard (and ColdPool's). */
static PyObject *
shard(PyObject *pool, int k)
{
    PyObject *shards = PyDict_GetItemString(pool, "shards"), *key = PyLong_FromLong(k), *got, *line, *head, *want;
    PyObject *lines = NULL;
    const char *ends, *p, *newline;
    long long start, size, first;
    Py_ssize_t w, n, width;
    if (key == NULL) {
        return NULL;
    }
    got = PyDict_GetItem(shards, key);
    if (got != NULL) {
        Py_DECREF(key);
        Py_INCREF(got);
        return got;
    }
    w = (Py_ssize_t)dict_long(pool, "width");
    ends = PyUnicode_AsUTF8(PyDict_GetItemString(pool, "ends"));
    start = k ? hex_number(ends + (k - 1) * w, w) : 0;
    size = hex_number(ends + k * w, w) - start;
    if (size < 1 || size > MAX_HEAD_BYTES) {
        Py_DECREF(key);
        return declined("a shard's line range is malformed");
    }
    line = file_bytes_at(PyUnicode_AsUTF8(PyDict_GetItemString(pool, "path")), dict_long(pool, "base") + start,
                         (Py_ssize_t)size);
    if (line == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    n = PyBytes_GET_SIZE(line);
    while (n > 0 && PyBytes_AS_STRING(line)[n - 1] == '\n') {
        n--;
    }
    if (n != PyBytes_GET_SIZE(line) && _PyBytes_Resize(&line, n) < 0) {
        Py_DECREF(key);
        return NULL;
    }
    if (PyDict_GetItemString(pool, "compressed") == Py_True) {
        PyObject *text = inflated(line);
        Py_DECREF(line);
        if (text == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        line = text;
    }
    p = PyBytes_AS_STRING(line);
    n = PyBytes_GET_SIZE(line);
    want = shard_digest(pool, k);
    if (want == NULL || !digest_is(p, n, want, 64)) {
        Py_XDECREF(want);
        Py_DECREF(line);
        Py_DECREF(key);
        return PyErr_Occurred() ? NULL : declined("a shard fails its checksum");
    }
    Py_DECREF(want);
    newline = memchr(p, '\n', (size_t)n);
    head = json_of(p, newline ? newline - p : n);
    if (head == NULL || !PyDict_Check(head) || (width = end_digits(item(head, "ids"), item(head, "ends"))) == 0
            || !int_in(item(head, "start"), 0, (1LL << (4 * MAX_END_DIGITS)) - 1, &first)) {
        Py_XDECREF(head);
        Py_DECREF(line);
        Py_DECREF(key);
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_ValueError)) {
            return NULL;
        }
        PyErr_Clear();
        return declined("a shard's node list is malformed");
    }
    if (PyDict_GetItemString(pool, "compressed") == Py_True) {      /* ColdPool._shard_pool */
        Py_ssize_t ids_len = PyUnicode_GET_LENGTH(item(head, "ids"));
        PyObject *nodes = PyBytes_FromStringAndSize(newline ? newline + 1 : p + n, newline ? p + n - newline - 1 : 0);
        PyObject *sep = PyBytes_FromStringAndSize("\n", 1);
        lines = nodes != NULL && sep != NULL ? PyObject_CallMethod(nodes, "split", "O", sep) : NULL;
        Py_XDECREF(nodes);
        Py_XDECREF(sep);
        if (lines != NULL && PyList_GET_SIZE(lines) > 0
                && PyBytes_GET_SIZE(PyList_GET_ITEM(lines, PyList_GET_SIZE(lines) - 1)) == 0) {
            PyList_SetSlice(lines, PyList_GET_SIZE(lines) - 1, PyList_GET_SIZE(lines), NULL);
        }
        if (lines == NULL || PyList_GET_SIZE(lines) * ID_CHARS != ids_len) {
            Py_XDECREF(lines);
            Py_DECREF(head);
            Py_DECREF(line);
            Py_DECREF(key);
            return PyErr_Occurred() ? NULL : declined("a cold shard's nodes are not its ids");
        }
    }
    else {
        lines = Py_None;
        Py_INCREF(lines);
    }
    Py_DECREF(line);
    got = Py_BuildValue("(OOLnN)", item(head, "ids"), item(head, "ends"),
                        dict_long(pool, "groups_at") + (long long)GROUPS * GROUP_LINE_BYTES + first, width, lines);
    Py_DECREF(head);
    if (got == NULL || PyDict_SetItem(shards, key, got) < 0) {
        Py_XDECREF(got);
        Py_DECREF(key);
        return NULL;
    }
    Py_DECREF(key);
    return got;
}

/* The node `node` (a str), its line checked against its id and decoded: SharedPool's Pool.node,
 * from the cold pool where the hot one lacks it. */
static PyObject *
pool_node(PyObject *pool, PyObject *node)
{
    PyObject *sh, *line, *value, *held;
    const char *id, *ids, *ends, *p;
    Py_ssize_t n, count, lo, hi, w, i;
    long long start, size, at;
    if (!is_id(node)) {
        return declined("a node id that is not one");
    }
    id = PyUnicode_AsUTF8(node);
    sh = PyDict_GetItemString(pool, "single");      /* a table's own pool: its nodes are one list */
    if (sh != NULL) {
        Py_INCREF(sh);
    }
    else if ((sh = shard(pool, (int)hex_number(id, 2))) == NULL) {
        return NULL;
    }
    ids = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(sh, 0), &n);
    count = n / ID_CHARS;
    lo = 0;
    hi = count;
    while (lo < hi) {                   /* Pool._index */
        Py_ssize_t mid = (lo + hi) / 2;
        if (memcmp(ids + mid * ID_CHARS, id, ID_CHARS) < 0) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    if (lo >= count || memcmp(ids + lo * ID_CHARS, id, ID_CHARS) != 0) {
        PyObject *cold = PyDict_GetItemString(pool, "cold"), *cold_pool = PyDict_GetItemString(pool, "cold_pool");
        Py_DECREF(sh);
        if (cold == Py_None) {
            return declined("a node that is not in its pool");
        }
        if (cold_pool == Py_None) {
            const char *cold_path = PyUnicode_AsUTF8(PyTuple_GET_ITEM(cold, 0));
            cold_pool = cold_path != NULL ? open_pool(cold_path, PyTuple_GET_ITEM(cold, 1), 1) : NULL;
            if (cold_pool == NULL || PyDict_SetItemString(pool, "cold_pool", cold_pool) < 0) {
                Py_XDECREF(cold_pool);
                return NULL;
            }
            Py_DECREF(cold_pool);
        }
        return pool_node(cold_pool, node);
    }
    i = lo;
    held = PyTuple_GET_ITEM(sh, 4);
    if (held != Py_None) {
        line = PyList_GET_ITEM(held, i);
        Py_INCREF(line);
    }
    else {
        ends = PyUnicode_AsUTF8(PyTuple_GET_ITEM(sh, 1));
        at = PyLong_AsLongLong(PyTuple_GET_ITEM(sh, 2));
        w = PyLong_AsSsize_t(PyTuple_GET_ITEM(sh, 3));
        start = i ? hex_number(ends + (i - 1) * w, w) : 0;      /* Pool._span */
        size = hex_number(ends + i * w, w) - start;
        if (size < 1 || size > MAX_LINE_BYTES) {
            Py_DECREF(sh);
            return declined("a node's line range is malformed");
        }
        line = file_bytes_at(PyUnicode_AsUTF8(PyDict_GetItemString(pool, "path")), at + start, (Py_ssize_t)size);
    }
    Py_DECREF(sh);
    if (line == NULL) {
        return NULL;
    }
    p = PyBytes_AS_STRING(line);
    n = PyBytes_GET_SIZE(line);
    while (n > 0 && p[n - 1] == '\n') {
        n--;
    }
    if (!digest_is(p, n, node, ID_CHARS)) {
        Py_DECREF(line);
        return declined("a node fails its checksum");
    }
    value = json_of(p, n);
    Py_DECREF(line);
    return value;
}

static PyObject *
pool_text(PyObject *pool, PyObject *node)      /* Pool.text */
{
    PyObject *text = pool_node(pool, node);
    if (text != NULL && !PyUnicode_Check(text)) {
        Py_DECREF(text);
        return declined("a text node that is not one");
    }
    return text;
}

static Py_ssize_t
n_ids_of(PyObject *ids)       /* how many ids a checked string of them holds */
{
    return PyUnicode_GET_LENGTH(ids) / ID_CHARS;
}

/* compact_read.open_table(path, head_sha256, pool_sha256), as a dict: the pool (open_pool, or the
 * table's own pool of its header's ids and line ends), the struct keys' text (" k1 k2 ... "), the
 * ids, the line list's node (read when a struct of a line is first asked for), and the build. A
 * header no digest vouches for (head_sha256 None: an own table) is read only from a regular file. */
static PyObject *
table_open_held(PyObject *args)
{
    const char *path, *pool_path;
    PyObject *head_sha256, *pool_sha256, *head, *pool = NULL, *keys = NULL, *lines_text = NULL, *out = NULL;
    PyObject *ids, *own;
    long long base;
    Py_ssize_t n_ids, spaces = 0, i, n;
    const char *k;
    if (!PyArg_ParseTuple(args, "sOzO:open_table", &path, &head_sha256, &pool_path, &pool_sha256)) {
        return NULL;
    }
    if ((head_sha256 != Py_None && !PyUnicode_Check(head_sha256))
            || (pool_sha256 != Py_None && !PyUnicode_Check(pool_sha256))) {
        PyErr_SetString(PyExc_TypeError, "open_table: a digest is a str or None");
        return NULL;
    }
    head = vouched_first_line(path, head_sha256, &base);
    if (head == NULL) {
        return NULL;
    }
    if (!head_ok(head)) {
        Py_DECREF(head);
        return declined("not a compact table of this format");
    }
    ids = item(head, "struct_ids");
    own = item(head, "pool");
    if (PyDict_Check(own)) {                /* Pool(path, ids, ends, base) */
        pool = Py_BuildValue("{s:s,s:(OOLnO),s:O,s:{}}", "path", path, "single", item(own, "ids"), item(own, "ends"),
                             base, end_digits(item(own, "ids"), item(own, "ends")), Py_None, "cold", Py_None, "shards");
    }
    else if (pool_path == NULL) {
        declined("a table of the shared pool, and no pool given");
        goto done;
    }
    else {
        pool = open_pool(pool_path, pool_sha256, 0);
    }
    if (pool == NULL) {
        goto done;
    }
    keys = pool_text(pool, item(head, "struct_keys"));         /* compact_read.struct_map */
    if (keys == NULL) {
        goto done;
    }
    k = PyUnicode_AsUTF8AndSize(keys, &n);
    if (k == NULL) {
        goto done;
    }
    for (i = 0; i < n; i++) {
        spaces += k[i] == ' ';
    }
    if ((n ? spaces + 1 : 0) != n_ids_of(ids)) {
        declined("its struct list is malformed");
        goto done;
    }
    if (n_ids_of(ids) == 0) {
        lines_text = pool_text(pool, item(head, "struct_lines"));
        if (lines_text == NULL) {
            goto done;
        }
        if (PyUnicode_GET_LENGTH(lines_text) != 0) {
            declined("its struct list is malformed");
            goto done;
        }
    }
    n_ids = n_ids_of(ids);
    out = Py_BuildValue("{s:O,s:N,s:O,s:O,s:n,s:O}", "pool", pool, "keys", PyUnicode_FromFormat(" %U ", keys),
                        "ids", ids, "struct_lines", item(head, "struct_lines"), "n", n_ids,
                        "build", item(head, "build"));
done:
    Py_DECREF(head);
    Py_XDECREF(pool);
    Py_XDECREF(keys);
    Py_XDECREF(lines_text);
    return out;
}

static PyObject *
table_open(PyObject *self, PyObject *args)
{
    return held_call(table_open_held, args);
}

/* ------------------------------------------------------------------ a struct */
static PyObject *
members_of(PyObject *pool, PyObject *node)    /* Pool.members */
{
    PyObject *got = is_id(node) ? pool_node(pool, node) : NULL, *out;
    if (got == NULL && PyErr_Occurred()) {
        return NULL;
    }
    if (got == NULL || !PyList_Check(got) || PyList_GET_SIZE(got) != 1 || !PyList_Check(PyList_GET_ITEM(got, 0))) {
        Py_XDECREF(got);
        return declined("its members are not a member node");
    }
    out = PyList_GET_ITEM(got, 0);
    Py_INCREF(out);
    Py_DECREF(got);
    return out;
}

/* Pool._expand, each field checked as compact_read.check_row checks it (against the struct's size)
 * and put in `fields` as path -> (offset, size, type, bit_offset, bit_width, array_len, flexible). */
static int
expand(PyObject *pool, PyObject *members, PyObject *prefix, long long base, long long struct_size, PyObject *fields,
       int depth)
{
    Py_ssize_t i, j;
    if (depth > MAX_DEPTH) {
        declined("members nested deeper than 64");
        return -1;
    }
    for (i = 0; i < PyList_GET_SIZE(members); i++) {
        PyObject *m = PyList_GET_ITEM(members, i), *v[9], *path, *row, *sub;
        long long offset, size;
        Py_ssize_t len;
        if (!PyList_Check(m) || (len = PyList_GET_SIZE(m)) < 4 || len > 9 || !PyUnicode_Check(PyList_GET_ITEM(m, 0))
                || !is_int(PyList_GET_ITEM(m, 1))) {
            declined("a member is malformed");
            return -1;
        }
        for (j = 0; j < 9; j++) {
            v[j] = j < len ? PyList_GET_ITEM(m, j) : Py_None;       /* MEMBER_DEFAULTS */
        }
        if (len < 8) {
            v[7] = NULL;            /* flexible: 0 */
        }
        if (!int_in(v[1], -(1LL << 40), 1LL << 40, &offset)) {
            declined("a field is malformed");
            return -1;
        }
        offset += base;
        if (!int_in(v[2], 0, MAX_BYTES, &size) || offset < 0 || offset > MAX_BYTES || !PyUnicode_Check(v[3])
                || offset + size > struct_size) {
            declined("a field is malformed");
            return -1;
        }
        for (j = 4; j < 7; j++) {
            if (v[j] != Py_None && !int_in(v[j], 0, MAX_BYTES, NULL)) {
                declined("a field is malformed");
                return -1;
            }
        }
        if (v[7] != NULL && !(int_is(v[7], 0) || int_is(v[7], 1))) {
            declined("a field is malformed");
            return -1;
        }
        path = PyUnicode_Concat(prefix, v[0]);
        if (path == NULL) {
            return -1;
        }
        row = Py_BuildValue("(LOOOOON)", offset, v[2], v[3], v[4], v[5], v[6],
                            v[7] != NULL ? (Py_INCREF(v[7]), v[7]) : PyLong_FromLong(0));
        if (row == NULL || PyDict_SetItem(fields, path, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(path);
            return -1;
        }
        Py_DECREF(row);
        if (v[8] != Py_None) {
            PyObject *dotted;
            int failed;
            sub = members_of(pool, v[8]);
            dotted = sub != NULL ? PyUnicode_FromFormat("%U.", path) : NULL;
            failed = dotted == NULL || expand(pool, sub, dotted, offset, struct_size, fields, depth + 1) < 0;
            Py_XDECREF(sub);
            Py_XDECREF(dotted);
            if (failed) {
                Py_DECREF(path);
                return -1;
            }
        }
        Py_DECREF(path);
    }
    return 0;
}

/* The struct `key` of an open table (table_open), or None where it is not one of its keys:
 * (key, kind, size, align, defined_in, origin, fields[, c_type]) as Loaded.row gives it, its fields
 * path -> (offset, size, type, bit_offset, bit_width, array_len, flexible). compact_read's
 * StructMap.__getitem__, Pool.row and check_row. */
static PyObject *
table_struct_row_held(PyObject *args)
{
    PyObject *table, *key, *pool, *token, *lines, *ref_line = NULL, *node = NULL, *s = NULL, *members = NULL;
    PyObject *fields = NULL, *defined_in = NULL, *out = NULL, *empty = NULL;
    Py_ssize_t at, i, n, len;
    long long size, line = -1;
    if (!PyArg_ParseTuple(args, "O!U:struct_row", &PyDict_Type, &table, &key)) {
        return NULL;
    }
    pool = PyDict_GetItemString(table, "pool");
    if (PyUnicode_GET_LENGTH(key) == 0 || PyUnicode_FindChar(key, ' ', 0, PyUnicode_GET_LENGTH(key), 1) >= 0) {
        Py_RETURN_NONE;
    }
    token = PyUnicode_FromFormat(" %U ", key);
    if (token == NULL) {
        return NULL;
    }
    at = PyUnicode_Find(PyDict_GetItemString(table, "keys"), token, 0, PY_SSIZE_T_MAX, 1);
    if (at == -1) {
        Py_DECREF(token);
        Py_RETURN_NONE;
    }
    if (at < -1 || PyUnicode_Find(PyDict_GetItemString(table, "keys"), token, at + 1, PY_SSIZE_T_MAX, 1) != -1) {
        Py_DECREF(token);
        return PyErr_Occurred() ? NULL : declined("its struct list is malformed (a key twice)");
    }
    n = PyUnicode_Count(PyDict_GetItemString(table, "keys"), empty = PyUnicode_FromString(" "), 0, at);
    Py_XDECREF(empty);
    empty = NULL;
    Py_DECREF(token);
    if (n < 0) {
        return NULL;
    }
    /* n: the key's position. Its line: the line list, read once (StructMap._lines) */
    lines = PyDict_GetItemString(table, "lines");
    if (lines == NULL) {
        PyObject *all = pool_text(pool, PyDict_GetItemString(table, "struct_lines"));
        if (all == NULL) {
            return NULL;
        }
        lines = PyUnicode_Split(all, empty = PyUnicode_FromString(" "), -1);
        Py_DECREF(all);
        Py_XDECREF(empty);
        if (lines == NULL) {
            return NULL;
        }
        if (PyList_GET_SIZE(lines) != PyLong_AsSsize_t(PyDict_GetItemString(table, "n"))) {
            Py_DECREF(lines);
            return declined("its struct list is malformed");
        }
        if (PyDict_SetItemString(table, "lines", lines) < 0) {
            Py_DECREF(lines);
            return NULL;
        }
        Py_DECREF(lines);
    }
    ref_line = PyList_GET_ITEM(lines, n);
    node = PyUnicode_Substring(PyDict_GetItemString(table, "ids"), n * ID_CHARS, (n + 1) * ID_CHARS);
    if (node == NULL) {
        return NULL;
    }
    if (PyUnicode_CompareWithASCIIString(ref_line, "-") != 0) {
        const char *l = PyUnicode_AsUTF8AndSize(ref_line, &len);
        line = 0;
        if (l == NULL || len == 0 || len > 8) {
            PyErr_Clear();
            Py_DECREF(node);
            return declined("a struct's line this reading does not read");
        }
        for (i = 0; i < len; i++) {                 /* int(line, 36), of its plain digits */
            int d = l[i] >= '0' && l[i] <= '9' ? l[i] - '0' : l[i] >= 'a' && l[i] <= 'z' ? l[i] - 'a' + 10 : -1;
            if (d < 0) {
                Py_DECREF(node);
                return declined("a struct's line this reading does not read");
            }
            line = line * 36 + d;
        }
        if (line > MAX_LINE_BYTES) {
            Py_DECREF(node);
            return declined("a struct's line is malformed");
        }
    }
    s = pool_node(pool, node);
    if (s == NULL) {
        goto done;
    }
    if (!PyList_Check(s) || (len = PyList_GET_SIZE(s)) < 6 || len > 7 || !PyUnicode_Check(PyList_GET_ITEM(s, 3))) {
        declined("not a struct node");
        goto done;
    }
    /* check_row: kind, size, align, and c_type a str where there is one */
    if (!PyUnicode_Check(PyList_GET_ITEM(s, 0))
            || (PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(s, 0), "struct")
                && PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(s, 0), "union"))
            || !int_in(PyList_GET_ITEM(s, 1), 0, MAX_BYTES, &size) || !int_in(PyList_GET_ITEM(s, 2), 1, MAX_ALIGN, NULL)
            || (len == 7 && !PyUnicode_Check(PyList_GET_ITEM(s, 6)))) {
        declined("not a struct of this format");
        goto done;
    }
    defined_in = line < 0 ? (Py_INCREF(PyList_GET_ITEM(s, 3)), PyList_GET_ITEM(s, 3))
                          : PyUnicode_FromFormat("%U:%lld", PyList_GET_ITEM(s, 3), line);
    members = members_of(pool, PyList_GET_ITEM(s, 5));
    fields = PyDict_New();
    empty = PyUnicode_FromString("");
    if (defined_in == NULL || members == NULL || fields == NULL || empty == NULL
            || expand(pool, members, empty, 0, size, fields, 0) < 0) {
        goto done;
    }
    out = len == 7 ? Py_BuildValue("(OOOOOOOO)", key, PyList_GET_ITEM(s, 0), PyList_GET_ITEM(s, 1),
                                   PyList_GET_ITEM(s, 2), defined_in, PyList_GET_ITEM(s, 4), fields,
                                   PyList_GET_ITEM(s, 6))
                   : Py_BuildValue("(OOOOOOO)", key, PyList_GET_ITEM(s, 0), PyList_GET_ITEM(s, 1),
                                   PyList_GET_ITEM(s, 2), defined_in, PyList_GET_ITEM(s, 4), fields);
done:
    Py_DECREF(node);
    Py_XDECREF(s);
    Py_XDECREF(members);
    Py_XDECREF(fields);
    Py_XDECREF(defined_in);
    Py_XDECREF(empty);
    return out;
}

static PyObject *
table_struct_row(PyObject *self, PyObject *args)
{
    return held_call(table_struct_row_held, args);
}

/* The constants above, for the test that they are compact_read's. */
static PyObject *
table_constants(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:L,s:i,s:i,s:s}", "FORMAT", TABLE_FORMAT,
                         "ID_CHARS", ID_CHARS, "SHARDS", SHARDS, "GROUP_SHARDS", GROUP_SHARDS, "DIGEST_CHARS",
                         DIGEST_CHARS, "MAX_END_DIGITS", MAX_END_DIGITS, "MAX_HEAD_BYTES", MAX_HEAD_BYTES,
                         "MAX_LINE_BYTES", MAX_LINE_BYTES, "MAX_BUILD_ID_BYTES", MAX_BUILD_ID_BYTES,
                         "MAX_DEPTH", MAX_DEPTH, "MAX_BYTES", MAX_BYTES, "MAX_ALIGN", MAX_ALIGN,
                         "PROBE_BYTES", PROBE_BYTES, "POOL_FILE", POOL_FILE);
}
