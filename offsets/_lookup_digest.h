/* A table's checksums and ids, for offsets._lookup (included by _lookup.c, so the one extension
 * module a first lookup loads holds them); layout/compact_read.py uses them where it is built.
 *
 * sha256_hex(data): SHA-256 (FIPS 180-4) of a bytes-like object, as lowercase hex, what
 * hashlib.sha256(data).hexdigest() gives. A first lookup checks every table line it reads against
 * its digest; CPython's own sha256 module costs it another shared object to load (about as much
 * as the hashing), and this is as fast. tests/test_lookup_c.py compares it with hashlib's on every
 * length around a block's.
 *
 * Where the CPU has the SHA extensions (x86-64: SHA-NI, asked of cpuid once), the blocks are hashed
 * with them: about a tenth of the portable rounds' time. valgrind's CPU has none, so its counts are
 * the portable rounds'; `_sha256_hex_portable` is them alone, for the tests, and `_sha256_rounds()`
 * names the rounds in use.
 *
 * lower_hex(text): whether `text` is a str of lowercase hex digits only, as compact_read's Python
 * `_hex` says (the ids and line ends of a pool are kilobytes of them). */

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define SHA_ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define SHA_S0(x) (SHA_ROR(x, 2) ^ SHA_ROR(x, 13) ^ SHA_ROR(x, 22))
#define SHA_S1(x) (SHA_ROR(x, 6) ^ SHA_ROR(x, 11) ^ SHA_ROR(x, 25))
#define SHA_G0(x) (SHA_ROR(x, 7) ^ SHA_ROR(x, 18) ^ ((x) >> 3))
#define SHA_G1(x) (SHA_ROR(x, 17) ^ SHA_ROR(x, 19) ^ ((x) >> 10))
#define SHA_CH(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define SHA_MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))
/* One round, the eight words named in their turn (no moves between rounds). */
#define SHA_ROUND(a, b, c, d, e, f, g, h, i)                                      \
    t = h + SHA_S1(e) + SHA_CH(e, f, g) + sha256_k[i] + w[i];                    \
    d += t;                                                                      \
    h = t + SHA_S0(a) + SHA_MAJ(a, b, c);

static void
sha256_block(uint32_t *state, const unsigned char *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, h, t;
    int i;
    for (i = 0; i < 16; i++) {
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    }
    for (; i < 64; i++) {
        w[i] = SHA_G1(w[i - 2]) + w[i - 7] + SHA_G0(w[i - 15]) + w[i - 16];
    }
    a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6], h = state[7];
    for (i = 0; i < 64; i += 8) {
        SHA_ROUND(a, b, c, d, e, f, g, h, i)
        SHA_ROUND(h, a, b, c, d, e, f, g, i + 1)
        SHA_ROUND(g, h, a, b, c, d, e, f, i + 2)
        SHA_ROUND(f, g, h, a, b, c, d, e, i + 3)
        SHA_ROUND(e, f, g, h, a, b, c, d, i + 4)
        SHA_ROUND(d, e, f, g, h, a, b, c, i + 5)
        SHA_ROUND(c, d, e, f, g, h, a, b, i + 6)
        SHA_ROUND(b, c, d, e, f, g, h, a, i + 7)
    }
    state[0] += a, state[1] += b, state[2] += c, state[3] += d;
    state[4] += e, state[5] += f, state[6] += g, state[7] += h;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(_MSC_VER)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_NI 1

/* Blocks data[0:64 * n] into state with SHA-NI: four rounds per step, the message schedule four
 * words per step (sha256msg1, the W[t-7] words, sha256msg2), the state in the ABEF/CDGH halves
 * sha256rnds2 takes. */
__attribute__((target("sha,sse4.1,ssse3"))) static void
sha256_blocks_ni(uint32_t *state, const unsigned char *data, size_t n)
{
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i abef, cdgh, tmp, msg, w[16], abef_before, cdgh_before;
    int i;
    tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[0]), 0xB1);     /* CDAB */
    cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[4]), 0x1B);    /* EFGH */
    abef = _mm_alignr_epi8(tmp, cdgh, 8);                                          /* ABEF */
    cdgh = _mm_blend_epi16(cdgh, tmp, 0xF0);                                       /* CDGH */
    for (; n > 0; n--, data += 64) {
        abef_before = abef, cdgh_before = cdgh;
        for (i = 0; i < 16; i++) {
            if (i < 4) {
                w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * i)), swap);
            } else {
                tmp = _mm_add_epi32(_mm_sha256msg1_epu32(w[i - 4], w[i - 3]), _mm_alignr_epi8(w[i - 1], w[i - 2], 4));
                w[i] = _mm_sha256msg2_epu32(tmp, w[i - 1]);
            }
            msg = _mm_add_epi32(w[i], _mm_loadu_si128((const __m128i *)&sha256_k[4 * i]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, msg);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(msg, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
    }
    tmp = _mm_shuffle_epi32(abef, 0x1B);                                           /* FEBA */
    cdgh = _mm_shuffle_epi32(cdgh, 0xB1);                                          /* DCHG */
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(tmp, cdgh, 0xF0));      /* DCBA */
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(cdgh, tmp, 8));         /* HGFE */
}

/* Whether this CPU has SHA-NI (and the SSE4.1 and SSSE3 it is used with): asked once. */
static int
sha256_has_ni(void)
{
    static int known = -1;
    unsigned a, b, c, d;
    if (known < 0) {
        known = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_1) && (c & bit_SSSE3)
                && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
    }
    return known;
}
#endif

/* Blocks data[0:64 * n] into state: SHA-NI where `fast` and the CPU has it, else the portable rounds. */
static void
sha256_blocks(uint32_t *state, const unsigned char *data, size_t n, int fast)
{
#ifdef SHA256_NI
    if (fast && sha256_has_ni()) {
        sha256_blocks_ni(state, data, n);
        return;
    }
#endif
    (void)fast;
    for (; n > 0; n--, data += 64) {
        sha256_block(state, data);
    }
}

/* The digest of data[0:len] into out[0:32]. */
static void
sha256_of(const unsigned char *data, size_t len, unsigned char *out, int fast)
{
    uint32_t state[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char last[128];
    size_t whole = len - len % 64, rest = len % 64, tail = rest < 56 ? 64 : 128, i;
    uint64_t bits = (uint64_t)len * 8;
    sha256_blocks(state, data, whole / 64, fast);
    memset(last, 0, sizeof last);
    memcpy(last, data + whole, rest);
    last[rest] = 0x80;
    for (i = 0; i < 8; i++) {
        last[tail - 1 - i] = (unsigned char)(bits >> (8 * i));
    }
    sha256_blocks(state, last, tail / 64, fast);
    for (i = 0; i < 32; i++) {
        out[i] = (unsigned char)(state[i / 4] >> (24 - 8 * (i % 4)));
    }
}

static PyObject *
sha256_hex_of(PyObject *arg, int fast)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char digest[32];
    char hex[64];
    Py_buffer view;
    int i;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    sha256_of((const unsigned char *)view.buf, (size_t)view.len, digest, fast);
    PyBuffer_Release(&view);
    for (i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    return PyUnicode_FromStringAndSize(hex, 64);
}

static PyObject *
sha256_hex(PyObject *self, PyObject *arg)
{
    return sha256_hex_of(arg, 1);
}

static PyObject *
sha256_hex_portable(PyObject *self, PyObject *arg)
{
    return sha256_hex_of(arg, 0);
}

static PyObject *
sha256_rounds(PyObject *self, PyObject *unused)
{
#ifdef SHA256_NI
    if (sha256_has_ni()) {
        return PyUnicode_FromString("sha-ni");
    }
#endif
    return PyUnicode_FromString("portable");
}

static PyObject *
lower_hex(PyObject *self, PyObject *text)
{
    const unsigned char *p;
    Py_ssize_t n, i;
    if (!PyUnicode_Check(text)) {
        Py_RETURN_FALSE;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) {
        return NULL;
    }
#endif
    if (!PyUnicode_IS_ASCII(text)) {
        Py_RETURN_FALSE;
    }
    p = (const unsigned char *)PyUnicode_DATA(text);
    n = PyUnicode_GET_LENGTH(text);
    for (i = 0; i < n; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) {
            Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}
