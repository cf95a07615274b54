/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  A float's shortest repr: the Ryu algorithm (Ulf Adams, "Ryu: fast float-to-string conversion",
 * PLDI 2018), written here from the paper; the reference implementation
 * (github.com/ulfjack/ryu) is Apache-2.0 / Boost-1.0 licensed and no code of it is copied. */
#ifndef GRPO_SCAN_RYU_H
#define GRPO_SCAN_RYU_H

/* ---- a float's repr() without Python's dtoa (export) ------------------------------------
 *
 * float.__repr__ (PyOS_double_to_string, mode 'r') finds the shortest digits that read back as
 * the same double with David Gay's bignum dtoa: ~600 ns for the 16-17 digit values most metrics
 * are, most of a big export's writing (~700,000 cells).  Ryu (Ulf Adams, PLDI 2018) finds the
 * same digits (the shortest; of those, the nearest to the value; ties to even) with two 128-bit
 * products.  Its tables of 5^i and 2^k / 5^i are exact integers, computed in Python at import
 * of export.py (float_tables); until then, and where no 128-bit integer type exists, repr()'s
 * own function is used.  tests/test_scan_equivalence.py compares it with repr() over random bit
 * patterns, the edges of every exponent and hypothesis's floats. */

#define RYU_INV_N 342          /* floor(2^(bits(5^i) - 1 + RYU_BITS) / 5^i) + 1, i < RYU_INV_N */
#define RYU_POS_N 326          /* 5^i >> (bits(5^i) - RYU_BITS), i < RYU_POS_N */
#define RYU_BITS 125
#ifdef __SIZEOF_INT128__
static uint64_t ryu_inv[RYU_INV_N][2], ryu_pos[RYU_POS_N][2];   /* (low, high) 64-bit halves */
static int ryu_ready;

static inline int32_t pow5bits(int32_t e) { return (int32_t)(((uint32_t)e * 1217359) >> 19) + 1; }
static inline uint32_t log10_pow2(int32_t e) { return ((uint32_t)e * 78913) >> 18; }
static inline uint32_t log10_pow5(int32_t e) { return ((uint32_t)e * 732923) >> 20; }

static inline int multiple_of_pow5(uint64_t v, uint32_t p)
{
    uint32_t count = 0;
    while (v != 0 && v % 5 == 0) {
        v /= 5;
        count++;
    }
    return count >= p;
}

static inline int multiple_of_pow2(uint64_t v, uint32_t p) { return p < 64 && (v & ((1ull << p) - 1)) == 0; }

static inline uint64_t mul_shift(uint64_t m, const uint64_t *mul, int32_t j)
{
    unsigned __int128 b0 = (unsigned __int128)m * mul[0], b2 = (unsigned __int128)m * mul[1];
    return (uint64_t)(((b0 >> 64) + b2) >> (j - 64));
}

/* One digit off the value vr and its interval's ends vp, vm: vr's digit dropped becomes *last,
 * and *vr_zeros (every digit dropped before it was 0) is kept up to date. */
static inline void drop_digit(uint64_t *vr, uint64_t *vp, uint64_t *vm, uint32_t *last, int *vr_zeros)
{
    *vr_zeros &= *last == 0;
    *last = (uint32_t)(*vr % 10);
    *vr /= 10;
    *vp /= 10;
    *vm /= 10;
}

/* The shortest digits of a finite nonzero double's magnitude: *digits x 10^*exp10. */
static void ryu_digits(uint64_t mantissa, uint32_t exponent, uint64_t *digits, int32_t *exp10)
{
    int32_t e2;
    uint64_t m2;
    if (exponent == 0) {
        e2 = 1 - 1023 - 52 - 2;
        m2 = mantissa;
    } else {
        e2 = (int32_t)exponent - 1023 - 52 - 2;
        m2 = (1ull << 52) | mantissa;
    }
    int accept_bounds = (m2 & 1) == 0;   /* round-half-even reads back an even mantissa's bounds */
    uint64_t mv = 4 * m2;
    uint32_t mm_shift = mantissa != 0 || exponent <= 1;
    uint64_t vr, vp, vm;
    int32_t e10;
    int vm_zeros = 0, vr_zeros = 0;
    if (e2 >= 0) {
        uint32_t q = log10_pow2(e2) - (e2 > 3);
        e10 = (int32_t)q;
        int32_t k = RYU_BITS + pow5bits((int32_t)q) - 1;
        int32_t i = -e2 + (int32_t)q + k;
        vr = mul_shift(4 * m2, ryu_inv[q], i);
        vp = mul_shift(4 * m2 + 2, ryu_inv[q], i);
        vm = mul_shift(4 * m2 - 1 - mm_shift, ryu_inv[q], i);
        if (q <= 21) {
            if (mv % 5 == 0)
                vr_zeros = multiple_of_pow5(mv, q);
            else if (accept_bounds)
                vm_zeros = multiple_of_pow5(mv - 1 - mm_shift, q);
            else
                vp -= multiple_of_pow5(mv + 2, q);
        }
    } else {
        uint32_t q = log10_pow5(-e2) - (-e2 > 1);
        e10 = (int32_t)q + e2;
        int32_t i = -e2 - (int32_t)q;
        int32_t k = pow5bits(i) - RYU_BITS;
        int32_t j = (int32_t)q - k;
        vr = mul_shift(4 * m2, ryu_pos[i], j);
        vp = mul_shift(4 * m2 + 2, ryu_pos[i], j);
        vm = mul_shift(4 * m2 - 1 - mm_shift, ryu_pos[i], j);
        if (q <= 1) {
            vr_zeros = 1;
            if (accept_bounds)
                vm_zeros = mm_shift == 1;
            else
                vp--;
        } else if (q < 63) {
            vr_zeros = multiple_of_pow2(mv, q);
        }
    }
    int32_t removed = 0;
    uint32_t last = 0;
    uint64_t out;
    if (vm_zeros || vr_zeros) {
        while (vp / 10 > vm / 10) {
            vm_zeros &= vm % 10 == 0;
            drop_digit(&vr, &vp, &vm, &last, &vr_zeros);
            removed++;
        }
        if (vm_zeros) {
            while (vm % 10 == 0) {
                drop_digit(&vr, &vp, &vm, &last, &vr_zeros);
                removed++;
            }
        }
        if (vr_zeros && last == 5 && vr % 2 == 0)
            last = 4;   /* exactly ...50..0: round to even */
        out = vr + ((vr == vm && (!accept_bounds || !vm_zeros)) || last >= 5);
    } else {
        int round_up = 0;
        while (vp / 10 > vm / 10) {
            round_up = vr % 10 >= 5;
            vr /= 10;
            vp /= 10;
            vm /= 10;
            removed++;
        }
        out = vr + (vr == vm || round_up);
    }
    *digits = out;
    *exp10 = e10 + removed;
}

static const char DIGIT_PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                  "8081828384858687888990919293949596979899";

/* The decimal digits of v (at most 20 of them), most significant first, into d: their count.
 * Two at a time from the end (a CSV export writes some 700,000 floats; one division per digit
 * and a reversal were two thirds of ryu_repr). */
static int decimal_digits(uint64_t v, char *d)
{
    char tmp[20];
    int i = 20;
    while (v >= 100) {
        uint64_t q = v / 100;
        i -= 2;
        memcpy(tmp + i, DIGIT_PAIRS + 2 * (v - q * 100), 2);
        v = q;
    }
    if (v >= 10) {
        i -= 2;
        memcpy(tmp + i, DIGIT_PAIRS + 2 * v, 2);
    } else {
        tmp[--i] = (char)('0' + v);
    }
    memcpy(d, tmp + i, (size_t)(20 - i));
    return 20 - i;
}

/* repr(x) of a finite nonzero double into buf (at least 32 bytes): its length. */
static int ryu_repr(double x, char *buf)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    uint64_t digits;
    int32_t e10;
    ryu_digits(bits & ((1ull << 52) - 1), (uint32_t)((bits >> 52) & 0x7ff), &digits, &e10);
    char d[24];
    int nd = decimal_digits(digits, d);
    int decpt = nd + e10, n = 0;   /* the point sits after digit decpt (format_float_short's) */
    if (bits >> 63)
        buf[n++] = '-';
    if (decpt <= -4 || decpt > 16) {   /* repr's exponent form: d[.ddd]e[+-]XX */
        buf[n++] = d[0];
        if (nd > 1) {
            buf[n++] = '.';
            memcpy(buf + n, d + 1, (size_t)(nd - 1));
            n += nd - 1;
        }
        int e = decpt - 1;
        buf[n++] = 'e';
        buf[n++] = e < 0 ? '-' : '+';
        if (e < 0)
            e = -e;
        if (e >= 100)
            buf[n++] = (char)('0' + e / 100);
        buf[n++] = (char)('0' + e / 10 % 10);
        buf[n++] = (char)('0' + e % 10);
    } else if (decpt <= 0) {   /* 0.000ddd */
        buf[n++] = '0';
        buf[n++] = '.';
        for (int z = 0; z < -decpt; z++)
            buf[n++] = '0';
        memcpy(buf + n, d, (size_t)nd);
        n += nd;
    } else if (decpt < nd) {   /* dd.ddd */
        memcpy(buf + n, d, (size_t)decpt);
        n += decpt;
        buf[n++] = '.';
        memcpy(buf + n, d + decpt, (size_t)(nd - decpt));
        n += nd - decpt;
    } else {   /* ddd000.0 */
        memcpy(buf + n, d, (size_t)nd);
        n += nd;
        for (int z = nd; z < decpt; z++)
            buf[n++] = '0';
        buf[n++] = '.';
        buf[n++] = '0';
    }
    return n;
}
#endif

/* float_tables(inv, pos): Ryu's tables (RYU_INV_N and RYU_POS_N pairs of little-endian uint64,
 * low half first), made by export.py; False where this build has no 128-bit integers. */
static PyObject *float_tables(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer inv, pos;
    if (!PyArg_ParseTuple(args, "y*y*", &inv, &pos))
        return NULL;
    PyObject *res = NULL;
    if (inv.len != RYU_INV_N * 16 || pos.len != RYU_POS_N * 16) {
        PyErr_SetString(PyExc_ValueError, "float_tables(): tables of another size");
        goto done;
    }
#ifdef __SIZEOF_INT128__
    const unsigned char *p = inv.buf;
    for (int i = 0; i < RYU_INV_N * 2; i++, p += 8) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--)
            v = v << 8 | p[b];
        ryu_inv[i / 2][i % 2] = v;
    }
    p = pos.buf;
    for (int i = 0; i < RYU_POS_N * 2; i++, p += 8) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--)
            v = v << 8 | p[b];
        ryu_pos[i / 2][i % 2] = v;
    }
    ryu_ready = 1;
    res = Py_NewRef(Py_True);
#else
    res = Py_NewRef(Py_False);
#endif
done:
    PyBuffer_Release(&inv);
    PyBuffer_Release(&pos);
    return res;
}

/* float_repr(x) -> str: repr(x) as csv_rows writes it (tests). */
static PyObject *float_repr(PyObject *Py_UNUSED(module), PyObject *arg)
{
    if (!PyFloat_CheckExact(arg)) {
        PyErr_SetString(PyExc_TypeError, "float_repr(): a float");
        return NULL;
    }
    double x = PyFloat_AS_DOUBLE(arg);
#ifdef __SIZEOF_INT128__
    if (ryu_ready && isfinite(x) && x != 0.0) {
        char buf[32];
        int n = ryu_repr(x, buf);
        return PyUnicode_DecodeASCII(buf, n, NULL);
    }
#endif
    return PyObject_Repr(arg);
}

#endif /* GRPO_SCAN_RYU_H */
