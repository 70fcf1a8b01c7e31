/* offsets._lookup: what offsets.get, offsets.sizeof and offsets.constant are, so that they have a
 * docstring of their own at the speed of the bound dict.__getitem__ they were. A bound builtin
 * method's docstring is its C function's ("Return self[key]."); this module makes the same kind of
 * object (a builtin function, METH_O, whose self is the runtime's dict) with the docstring given:
 * the interpreter calls it as it calls d.__getitem__ (3.11+ specializes both alike), and the call is
 * the dict's own subscript (whose __missing__ fills it on first use).
 *
 * It also holds what a first lookup reads a table with at C speed, so that the lookup loads one shared
 * object (each costs about as much as the work it does): image(), this interpreter's build-id;
 * sha256_hex() and lower_hex() (_lookup_digest.h), json_value() (_lookup_json.h); and on Linux the
 * build-id's table, shipped or its own (_lookup_table.h: build_id_entries, open_table, struct_row).
 *
 * The runtime falls back to the bound method, CPython's sha256 and its JSON scanner where this
 * module cannot be imported.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __linux__
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

/* What a first lookup reads its table with, here so that it loads one shared object for all of it. */
#include "_lookup_digest.h"
#include "_lookup_json.h"
#ifdef __linux__
#include "_lookup_table.h"
#endif

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


#ifdef __linux__
/* image() -> (path, build-id, base, why) of the ELF holding this interpreter, as
 * runtime/binary.py's image() finds it (/proc/self/maps, then the image's notes read through
 * /proc/self/mem), or None whenever that answer is anything but a build-id found the plain way: no
 * /proc, another libpython mapped, no note, any read that is short or fails. binary.py then
 * takes its own, pure-Python way, so the answer never depends on which one ran; this one costs
 * microseconds and imports nothing.
 *
 * It asks the loader first (`image_loaded`: dl_iterate_phdr, the note read in place), as the kernel
 * writes the whole maps text for each reading, at a cost that grows with every mapping (a process
 * that imported a big framework maps thousands), and reads the maps where the loader's answer is
 * not the plain one: another libpython loaded, an object without a name or with a relative one, a
 * path that cannot be resolved, a first segment that does not map the file's start. The path is
 * the file's real path (realpath(3), or /proc/self/exe for the program), which is what the maps
 * name. The two differ in two cases only: a file replaced on disk since it was loaded (the maps add
 * "(deleted)" to its path), and a libpython mapped as data without the loader's knowledge (the maps
 * alone see it, and have no build-id). tests/test_first_lookup.py compares them on shared, static,
 * symlinked, relatively named and deleted builds. */
#define MAX_MAPS (8 << 20)
#define MAX_PHNUM 256
#define MAX_NOTES (1 << 16)

typedef struct {
    unsigned long long lo, hi, offset, inode;
    const char *path;
    size_t path_len;
} Mapping;

static int
is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* The bytes after which Python would split the text otherwise than on spaces, tabs and newlines:
 * another line break or whitespace str.splitlines() or str.split() knows, or any byte beyond ASCII. */
static int
odd_byte(unsigned char c)
{
    return c >= 0x80 || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f);
}

/* Whether no byte of the text is an odd one (`odd_byte`), by a table of them (made on first use),
 * eight bytes at a time: a word with no byte beyond ASCII nor below 0x20 has none, and only the
 * others (a line's newline) are looked at byte by byte, as /proc/self/maps holds kilobytes. */
static int
plain(const char *text, size_t len)
{
    static unsigned char odd[256];
    static int made;
    const uint64_t high = 0x8080808080808080ULL, low = 0x2020202020202020ULL;
    size_t i = 0, k;
    if (!made) {
        for (k = 0; k < 256; k++) {
            odd[k] = (unsigned char)odd_byte((unsigned char)k);
        }
        made = 1;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, text + i, 8);
        if (w & high) {
            return 0;
        }
        if ((w - low) & ~w & high) {        /* a byte below 0x20 (a newline, a tab, ...) */
            for (k = i; k < i + 8; k++) {
                if (odd[(unsigned char)text[k]]) {
                    return 0;
                }
            }
        }
    }
    for (; i < len; i++) {
        if (odd[(unsigned char)text[i]]) {
            return 0;
        }
    }
    return 1;
}

/* The number written in [p, end) in `base` (16 or 10): digits only, at least one, and small enough
 * for an unsigned long long; -1 for anything else (a sign, a prefix, an underscore, too many
 * digits), which Python may read otherwise, so the caller falls back. */
static int
number(const char *p, const char *end, int base, unsigned long long *out)
{
    unsigned long long v = 0;
    if (p == end || end - p > (base == 16 ? 16 : 19)) {
        return -1;
    }
    for (; p < end; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : base == 16 && *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                : base == 16 && *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;
        if (d < 0) {
            return -1;
        }
        v = v * (unsigned)base + (unsigned)d;
    }
    *out = v;
    return 0;
}

/* The file mappings of /proc/self/maps' text, as binary._maps() reads it; -1 on anything it would
 * read otherwise (a malformed number), so the caller falls back. */
static Py_ssize_t
parse_maps(char *text, size_t len, Mapping *out, Py_ssize_t most)
{
    Py_ssize_t n = 0;
    char *line = text, *end = text + len;
    while (line < end) {
        char *eol = memchr(line, '\n', (size_t)(end - line));
        char *p = line, *field[6], *fend[5];
        int k;
        if (eol == NULL) {
            eol = end;
        }
        for (k = 0; k < 5; k++) {
            while (p < eol && is_space(*p)) {
                p++;
            }
            field[k] = p;
            while (p < eol && !is_space(*p)) {
                p++;
            }
            fend[k] = p;
            if (field[k] == fend[k]) {
                break;
            }
        }
        while (p < eol && is_space(*p)) {
            p++;
        }
        if (k == 5 && p < eol && *p == '/') {
            char *dash = memchr(field[0], '-', (size_t)(fend[0] - field[0]));
            Mapping *m = &out[n];
            field[5] = p;
            if (dash == NULL || n >= most) {
                return -1;
            }
            if (number(field[0], dash, 16, &m->lo) < 0 || number(dash + 1, fend[0], 16, &m->hi) < 0
                || number(field[2], fend[2], 16, &m->offset) < 0 || number(field[4], fend[4], 10, &m->inode) < 0) {
                return -1;
            }
            m->path = field[5];
            m->path_len = (size_t)(eol - field[5]);
            n++;
        }
        line = eol + 1;
    }
    return n;
}

/* elf_id.is_libpython: `libpython` and a digit, and `.so`, in the file's name. */
static int
is_libpython(const char *path, size_t len)
{
    const char *name = path + len;
    size_t i;
    while (name > path && name[-1] != '/') {
        name--;
    }
    len -= (size_t)(name - path);
    if (len < 10 || memcmp(name, "libpython", 9) != 0 || name[9] < '0' || name[9] > '9') {
        return 0;
    }
    for (i = 0; i + 3 <= len; i++) {
        if (memcmp(name + i, ".so", 3) == 0) {
            return 1;
        }
    }
    return 0;
}

static int
read_at(int fd, unsigned long long where, void *buf, size_t n)
{
    return pread(fd, buf, n, (off_t)where) == (ssize_t)n ? 0 : -1;
}

/* The GNU build-id (hex, into `hex`) among the notes notes[0:size]: 0; 1 where they hold none;
 * -1 for a note Python reads otherwise (it then decides). */
static int
note_build_id(const unsigned char *notes, size_t size, char *hex, size_t hex_size)
{
    size_t at = 0;
    while (at + 12 <= size) {
        uint32_t namesz, descsz, type;
        size_t name_end, desc;
        memcpy(&namesz, notes + at, 4);
        memcpy(&descsz, notes + at + 4, 4);
        memcpy(&type, notes + at + 8, 4);
        name_end = at + 12 + namesz;
        desc = (name_end + 3) & ~(size_t)3;
        if (desc + descsz > size) {
            break;
        }
        if (type == NT_GNU_BUILD_ID && namesz >= 3 && memcmp(notes + at + 12, "GNU", 3) == 0) {
            size_t k, nul = 3;
            while (nul < namesz && notes[at + 12 + nul] == 0) {
                nul++;
            }
            if (nul != namesz || descsz == 0 || 2 * (size_t)descsz + 1 > hex_size) {
                return -1;      /* what Python reads otherwise: it decides */
            }
            for (k = 0; k < descsz; k++) {
                static const char digits[] = "0123456789abcdef";
                hex[2 * k] = digits[notes[desc + k] >> 4];
                hex[2 * k + 1] = digits[notes[desc + k] & 15];
            }
            hex[2 * descsz] = 0;
            return 0;
        }
        at = (desc + descsz + 3) & ~(size_t)3;
    }
    return 1;
}

/* The build-id (hex, into `hex`) of the image mapped at `base`, as elf_id.build_id(loaded=True)
 * finds it in this process's own byte order and word size; 0, or -1 for anything else. */
static int
build_id_at(int fd, unsigned long long base, char *hex, size_t hex_size)
{
    ElfW(Ehdr) eh;
    ElfW(Phdr) ph[MAX_PHNUM];
    unsigned char notes[MAX_NOTES];
    unsigned long long low = (unsigned long long)-1, page;
    int i, n;
    const uint16_t one = 1;
    const unsigned char native = *(const unsigned char *)&one == 1 ? ELFDATA2LSB : ELFDATA2MSB;
    if (read_at(fd, base, &eh, sizeof eh) < 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0
        || eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) || eh.e_ident[EI_DATA] != native
        || eh.e_phnum > MAX_PHNUM || (eh.e_phnum && eh.e_phentsize != sizeof(ElfW(Phdr)))) {
        return -1;
    }
    n = eh.e_phnum;
    if (n && read_at(fd, base + eh.e_phoff, ph, n * sizeof(ElfW(Phdr))) < 0) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < low) {
            low = ph[i].p_vaddr;
        }
    }
    page = (low == (unsigned long long)-1 ? 0 : low) & ~0xFFFULL;
    for (i = 0; i < n; i++) {
        size_t size = ph[i].p_filesz;
        int got;
        if (ph[i].p_type != PT_NOTE || size == 0 || size > MAX_NOTES) {
            continue;
        }
        if (read_at(fd, base + ph[i].p_vaddr - page, notes, size) < 0) {
            return -1;
        }
        if ((got = note_build_id(notes, size, hex, hex_size)) != 1) {
            return got;
        }
    }
    return -1;
}

/* The loaded object that holds `here`, and whether another libpython is loaded (dl_iterate_phdr). */
typedef struct {
    uintptr_t here;
    struct dl_phdr_info holding;
    int found, libpythons;
    const char *other[8];
} Loader;

static int
loaded_object(struct dl_phdr_info *info, size_t size, void *data)
{
    Loader *l = data;
    int i;
    (void)size;
    for (i = 0; i < info->dlpi_phnum && !l->found; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && info->dlpi_addr + ph->p_vaddr <= l->here
            && l->here < info->dlpi_addr + ph->p_vaddr + ph->p_memsz) {
            l->holding = *info;
            l->found = 1;
            return 0;
        }
    }
    if (info->dlpi_name != NULL && is_libpython(info->dlpi_name, strlen(info->dlpi_name))) {
        if (l->libpythons < 8) {
            l->other[l->libpythons] = info->dlpi_name;
        }
        l->libpythons++;
    }
    return 0;
}

/* image() as the loader knows the object holding the interpreter, its note read in place; None
 * where `image_mapped` decides (see image()). glibc's dl_iterate_phdr takes dl_load_write_lock,
 * which dlopen holds only while it links an object into the list, never while constructors run
 * (a constructor waiting for the GIL in another thread cannot block it); libgcc's unwinder calls
 * it for every C++ exception. */
static PyObject *
image_loaded(void)
{
    Loader l;
    char path[PATH_MAX + 1], hex[2 * 64 + 1];
    struct stat mine, other;
    const ElfW(Ehdr) *eh;
    unsigned long long low = (unsigned long long)-1, base = (unsigned long long)-1;
    long pagesize = sysconf(_SC_PAGESIZE);
    int i, got;
    memset(&l, 0, sizeof l);
    l.here = (uintptr_t)&PyLong_Type;
    dl_iterate_phdr(loaded_object, &l);
    if (!l.found || l.holding.dlpi_name == NULL || l.libpythons > 8 || pagesize <= 0) {
        return NULL;
    }
    if (l.holding.dlpi_name[0] == 0) {              /* the program itself: a static build */
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0 || (size_t)n >= sizeof path - 1) {
            return NULL;
        }
        path[n] = 0;
    } else if (l.holding.dlpi_name[0] != '/' || realpath(l.holding.dlpi_name, path) == NULL) {
        return NULL;        /* a name relative to a directory the process may have left since */
    }
    if (path[0] != '/' || strstr(path, " (deleted)") != NULL || !plain(path, strlen(path))) {
        return NULL;
    }
    if (l.libpythons) {                             /* another libpython loaded: the maps decide */
        if (stat(path, &mine) < 0) {
            return NULL;
        }
        for (i = 0; i < l.libpythons; i++) {
            if (l.other[i][0] != '/' || stat(l.other[i], &other) < 0 || other.st_ino != mine.st_ino) {
                return NULL;
            }
        }
    }
    for (i = 0; i < l.holding.dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &l.holding.dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && ph->p_vaddr < low) {
            low = ph->p_vaddr;
        }
        if (ph->p_type == PT_LOAD && ph->p_offset < (unsigned long long)pagesize) {     /* maps the file's start */
            unsigned long long start = l.holding.dlpi_addr + (ph->p_vaddr & ~((unsigned long long)pagesize - 1));
            if (start < base) {
                base = start;
            }
        }
    }
    if (base == (unsigned long long)-1 || low == (unsigned long long)-1
        || base != l.holding.dlpi_addr + (low & ~0xFFFULL)) {
        return NULL;
    }
    eh = (const ElfW(Ehdr) *)(uintptr_t)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_phnum != l.holding.dlpi_phnum
        || (const unsigned char *)(uintptr_t)base + eh->e_phoff != (const unsigned char *)l.holding.dlpi_phdr) {
        return NULL;
    }
    for (i = 0; i < l.holding.dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &l.holding.dlpi_phdr[i];
        if (ph->p_type != PT_NOTE || ph->p_filesz == 0 || ph->p_filesz > MAX_NOTES) {
            continue;
        }
        got = note_build_id((const unsigned char *)(uintptr_t)(l.holding.dlpi_addr + ph->p_vaddr), ph->p_filesz,
                            hex, sizeof hex);
        if (got < 0) {
            return NULL;
        }
        if (got == 0) {
            return Py_BuildValue("(NsKs)", PyUnicode_DecodeUTF8(path, (Py_ssize_t)strlen(path), "replace"), hex,
                                 base, "");
        }
    }
    return NULL;
}

static PyObject *image_mapped(void);

static PyObject *
image(PyObject *self, PyObject *unused)
{
    PyObject *found = image_loaded();
    if (found != NULL || PyErr_Occurred()) {
        return found;
    }
    return image_mapped();
}

/* Each way alone, for the tests. */
static PyObject *
image_loaded_only(PyObject *self, PyObject *unused)
{
    PyObject *found = image_loaded();
    if (found == NULL && !PyErr_Occurred()) {
        Py_RETURN_NONE;
    }
    return found;
}

static PyObject *
image_mapped_only(PyObject *self, PyObject *unused)
{
    return image_mapped();
}

/* image() as /proc/self/maps and /proc/self/mem show it. */
static PyObject *
image_mapped(void)
{
    int fd = -1;
    char *text = NULL, hex[2 * 64 + 1];
    size_t len = 0, cap = 1 << 16;
    Mapping *maps = NULL;
    Py_ssize_t n, i, holding = -1, most;
    unsigned long long here = (unsigned long long)(uintptr_t)&PyLong_Type, base = (unsigned long long)-1;
    PyObject *result = NULL;
    fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        goto fallback;
    }
    for (;;) {
        ssize_t got;
        char *bigger;
        if (len == cap) {
            if (cap >= MAX_MAPS) {
                goto fallback;        /* Python reads only MAX_MAPS bytes: it decides */
            }
            cap *= 2;
        }
        if ((bigger = PyMem_RawRealloc(text, cap)) == NULL) {
            goto fallback;
        }
        text = bigger;
        got = read(fd, text + len, cap - len);
        if (got < 0) {
            goto fallback;
        }
        if (got == 0) {
            break;
        }
        len += (size_t)got;
    }
    close(fd);
    fd = -1;
    if (!plain(text, len)) {
        goto fallback;
    }
    most = (Py_ssize_t)(len / 20) + 1;
    if ((maps = PyMem_RawMalloc((size_t)most * sizeof(Mapping))) == NULL) {
        goto fallback;
    }
    if ((n = parse_maps(text, len, maps, most)) < 0) {
        goto fallback;
    }
    for (i = 0; i < n && holding < 0; i++) {
        if (maps[i].lo <= here && here < maps[i].hi) {
            holding = i;
        }
    }
    if (holding < 0) {
        goto fallback;
    }
    for (i = 0; i < n; i++) {
        const Mapping *m = &maps[i], *h = &maps[holding];
        if (m->inode != h->inode && is_libpython(m->path, m->path_len)) {
            goto fallback;
        }
        if (m->inode == h->inode && m->path_len == h->path_len && memcmp(m->path, h->path, m->path_len) == 0
            && m->offset == 0 && m->lo < base) {
            base = m->lo;
        }
    }
    if (base == (unsigned long long)-1 || (fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC)) < 0
        || build_id_at(fd, base, hex, sizeof hex) < 0) {
        goto fallback;
    }
    result = Py_BuildValue("(NsKs)", PyUnicode_DecodeUTF8(maps[holding].path, (Py_ssize_t)maps[holding].path_len,
                                                          "replace"), hex, base, "");
fallback:
    if (fd >= 0) {
        close(fd);
    }
    PyMem_RawFree(text);
    PyMem_RawFree(maps);
    if (result == NULL && !PyErr_Occurred()) {
        Py_RETURN_NONE;
    }
    return result;
}

/* maps_of(data) -> [(start, end, offset, inode, path), ...] of a /proc/PID/maps text as image()
 * reads it, or None where image() leaves it to Python: for the tests, which compare it with
 * binary.maps_of on texts /proc never shows. */
static PyObject *
maps_of(PyObject *self, PyObject *data)
{
    char *text;
    Py_ssize_t len, n, i, most;
    Mapping *maps;
    PyObject *out;
    if (PyBytes_AsStringAndSize(data, &text, &len) < 0) {
        return NULL;
    }
    if (!plain(text, (size_t)len)) {
        Py_RETURN_NONE;
    }
    most = len / 20 + 1;
    if ((maps = PyMem_RawMalloc((size_t)most * sizeof(Mapping))) == NULL) {
        return PyErr_NoMemory();
    }
    n = parse_maps(text, (size_t)len, maps, most);
    if (n < 0) {
        PyMem_RawFree(maps);
        Py_RETURN_NONE;
    }
    out = PyList_New(n);
    for (i = 0; out != NULL && i < n; i++) {
        PyObject *row = Py_BuildValue("(KKKKN)", maps[i].lo, maps[i].hi, maps[i].offset, maps[i].inode,
                                      PyUnicode_DecodeUTF8(maps[i].path, (Py_ssize_t)maps[i].path_len, "replace"));
        if (row == NULL) {
            Py_CLEAR(out);
        }
        else {
            PyList_SET_ITEM(out, i, row);
        }
    }
    PyMem_RawFree(maps);
    return out;
}
#endif

static PyMethodDef methods[] = {
    {"function", function, METH_VARARGS,
     "function(map, name, doc): a builtin function `name`, documented by `doc`, that returns map[arg]."},
    {"sha256_hex", sha256_hex, METH_O, "sha256_hex(data) -> hashlib.sha256(data).hexdigest()."},
    {"_sha256_hex_portable", sha256_hex_portable, METH_O, "sha256_hex(data) by the portable rounds alone (for the tests)."},
    {"_sha256_rounds", sha256_rounds, METH_NOARGS, "_sha256_rounds() -> 'sha-ni' or 'portable': the rounds sha256_hex uses here."},
    {"lower_hex", lower_hex, METH_O, "lower_hex(text) -> whether text is a str of lowercase hex digits only."},
    {"json_value", json_value, METH_O,
     "json_value(data) -> (json.loads(data),) for the JSON the tables are written in; None: json.loads decides."},
#ifdef __linux__
    {"image", image, METH_NOARGS,
     "image() -> (path, build-id, base, why) of the ELF holding this interpreter, as runtime/binary.py's image() "
     "finds it, or None: binary.py decides."},
    {"_image_loaded", image_loaded_only, METH_NOARGS, "image() as the loader knows it, or None (for the tests)."},
    {"_image_mapped", image_mapped_only, METH_NOARGS, "image() as /proc/self/maps shows it, or None (for the tests)."},
    {"_maps_of", maps_of, METH_O, "_maps_of(data): the mappings image() reads of a maps text, or None (for the tests)."},
    {"build_id_entries", table_build_id_entries, METH_VARARGS,
     "build_id_entries(path, build_id) -> compact_read.build_id_entries(path, build_id), or None where its JSON "
     "reading declines a line."},
    {"open_table", table_open, METH_VARARGS,
     "open_table(path, head_sha256, pool_path, pool_sha256) -> a compact table, opened as compact_read.open_table "
     "opens it (a dict for struct_row; digests None: an own table); ValueError for anything it does not read."},
    {"struct_row", table_struct_row, METH_VARARGS,
     "struct_row(table, key) -> struct `key` of an open_table as Loaded.row gives it (its fields path -> tuple), "
     "or None where it is not a key; ValueError for anything it does not read."},
    {"_table_constants", table_constants, METH_NOARGS, "The format constants _lookup_table.h reads with (for the tests)."},
#endif
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
