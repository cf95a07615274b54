/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  Byte tests and the line walk: anchor and control-byte filters, the SIMD kernels (AVX2, SSSE3)
 * and the scalar walk, UTF-8 checks. */
#ifndef GRPO_SCAN_WALK_H
#define GRPO_SCAN_WALK_H

/* Whether the literal s (n >= 2 bytes) starts at p, reading nothing at or past e.  Its first two
 * bytes are compared inline (most tries fail there, the call to memcmp is not made). */
static inline int lit(uchar *p, uchar *e, const char *s, size_t n)
{
    return (size_t)(e - p) >= n && p[0] == (uchar)s[0] && p[1] == (uchar)s[1] && memcmp(p, s, n) == 0;
}
#define LIT(s) lit(p, e, s, sizeof(s) - 1)

/* Length of the UTF-8 sequence at p when Python's strict decoder accepts it, else 0. */
static int utf8_len(uchar *p, uchar *e)
{
    unsigned c = p[0];
    Py_ssize_t avail = e - p;
    if (c < 0xC2)   /* a continuation byte or an overlong lead */
        return 0;
    if (c < 0xE0)
        return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if (avail < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0))
            return 0;   /* overlong, surrogate */
        return 3;
    }
    if (c < 0xF5) {
        if (avail < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))
            return 0;   /* overlong, past U+10FFFF */
        return 4;
    }
    return 0;
}

/* The anchors of is_candidate; gate has a bit for the first two bytes of each (and for every
 * pair starting with a control byte (CTRL) or a non-ASCII byte), so the scalar loop looks closer only there. */
static const char *const ANCHORS[] = {
    ": {", "Error", "EXEC:", "retrying", "ft ", "f memory", "Traceback", "Max retries", "OfMemory",
    "memory pressure", "Health check failed", "Recovered ", "Watchdog caught", "W&B", "Job '",
    "Fatal async", "Final validation", "checkpoint", "wandb", "tensorboard", "train.py", "train_async.py",
    "+ ray job submit", " skipped: ", " ...", ") {", "step:", "{'", "{\"", "| Loss", "| Reward", "| reward: ",
};
/* A control byte _peel drops (patterns._CONTROL_NO_ESC; NUL included, ESC aside): a line holding
 * one goes to Python (2), as dropping it may join an anchor ("step 0: \x1f{"). */
#define CTRL(c) ((c) < 0x20 ? ((c) != 0x09 && (c) != 0x0a && (c) != 0x0d && (c) != 0x1b) : (c) == 0x7f)
static unsigned char gate[65536 / 8];
#define GATE(a, b) (gate[((unsigned)(a) << 5) | ((unsigned)(b) >> 3)] & (1u << ((b) & 7)))

static void gate_init(void)
{
    for (unsigned a = 0; a < 256; a++)
        if (CTRL(a) || a >= 0x80)
            memset(gate + (a << 5), 0xff, 32);   /* every pair starting with a control byte or non-ASCII */
    for (size_t k = 0; k < sizeof(ANCHORS) / sizeof(ANCHORS[0]); k++) {
        unsigned a = (uchar)ANCHORS[k][0], b = (uchar)ANCHORS[k][1];
        gate[(a << 5) | (b >> 3)] |= (unsigned char)(1u << (b & 7));
    }
}

/* Whether an anchor of is_candidate starts at p (reading nothing at or past e); dispatched on
 * the first byte of each.  ": \xe2\x80\xa6" is is_candidate's ": \u2026". */
static int anchor_at(uchar *p, uchar *e)
{
    switch (*p) {
    case ':': return LIT(": {") || LIT(": \xe2\x80\xa6");
    case 'E': return LIT("Error") || LIT("EXEC:");
    case 'r': return LIT("retrying");
    case 'f': return LIT("ft ") || LIT("f memory");
    case 'T': return LIT("Traceback");
    case 'M': return LIT("Max retries");
    case 'O': return LIT("OfMemory");
    case 'm': return LIT("memory pressure");
    case 'H': return LIT("Health check failed");
    case 'R': return LIT("Recovered ");
    case 'W': return LIT("Watchdog caught") || LIT("W&B");
    case 'J': return LIT("Job '");
    case 'F': return LIT("Fatal async") || LIT("Final validation");
    case 'c': return LIT("checkpoint");
    case 'w': return LIT("wandb");
    case 't': return LIT("tensorboard") || LIT("train.py") || LIT("train_async.py");
    case '+': return LIT("+ ray job submit");
    case ' ': return LIT(" skipped: ") || LIT(" ...");
    case ')': return LIT(") {");
    case 's': return LIT("step:");
    case '{': return LIT("{'") || LIT("{\"");
    case '|': return LIT("| Loss") || LIT("| Reward") || LIT("| reward: ");
    default: return 0;
    }
}

/* The scalar walk of is_cand from p to the line's end e: 1 at the first anchor, 2 at the first
 * control byte (CTRL: NUL...), U+FFFD or invalid UTF-8 sequence (whichever comes first), else 0.  The gate skips the
 * bytes where nothing can start; a valid UTF-8 sequence is stepped over whole. */
static int walk_scalar(uchar *p, uchar *e)
{
    while (p < e) {
        unsigned c = *p;
        if (p + 1 < e && !GATE(c, p[1])) {   /* no anchor, control or non-ASCII byte starts here */
            p++;
            continue;
        }
        if (c >= 0x80) {   /* non-ASCII: must decode cleanly and not be U+FFFD */
            int len = utf8_len(p, e);
            if (len == 0 || (len == 3 && c == 0xEF && p[1] == 0xBF && p[2] == 0xBD))
                return 2;
            p += len;
            continue;
        }
        if (CTRL(c))
            return 2;
        if (anchor_at(p, e))
            return 1;
        p++;
    }
    return 0;
}

/* ---- SIMD walks (x86-64 with GCC or clang; anything else takes walk_scalar) ----------------
 * The same answer as walk_scalar, found faster: a Teddy-style filter (pshufb nibble tables, one
 * bit per bucket of anchors) flags the bytes where the first three bytes of some anchor may
 * start, and every control (CTRL) or non-ASCII byte; only there is a byte looked at, in order.  An anchor
 * is then confirmed by anchor_at exactly as the scalar walk does; at the first control or non-ASCII
 * byte the scalar walk takes over (what it answers from there is what it would have answered
 * from the line's start, as no event came before).  The filter may flag too much, never too
 * little: each bucket's tables hold the nibbles of its anchors' bytes at each position (an
 * anchor of two bytes lets any third byte through).  A walk reads up to WALK_READ bytes past
 * the position it looks at, bounded by the buffer's end (not the line's: bits past the line's
 * end are masked out); the last bytes of a buffer go to walk_scalar. */
#define WALK_READ 34   /* a 32-byte window plus the fingerprint's two further bytes */

/* First three bytes of each anchor (a two-byte anchor: two) and its bucket (0..7).  Several
 * anchors share a fingerprint ("tra": train.py, train_async.py).  The buckets were chosen to
 * flag few bytes that start no anchor on noisy Miles logs (about 1 % of all bytes flagged,
 * nearly all of them starting a real fingerprint like "tra" or "ste"); any choice is exact. */
static const struct { const char *fp; int bucket; } FINGERPRINTS[] = {
    {"Err", 0}, {"EXE", 0}, {"Wat", 0}, {"Fat", 0}, {"Fin", 0}, {"+ r", 0}, {") {", 0},
    {": {", 1}, {": \xe2", 1}, {"Max", 1}, {"OfM", 1},
    {"mem", 2}, {"che", 2}, {" sk", 2},
    {"wan", 3}, {"ste", 3},
    {"ret", 4}, {" ..", 4}, {"| L", 4}, {"| R", 4}, {"| r", 4},
    {"ft ", 5}, {"f m", 5}, {"Rec", 5},
    {"W&B", 6}, {"{'", 6}, {"{\"", 6},
    {"Tra", 7}, {"Hea", 7}, {"Job", 7}, {"ten", 7}, {"tra", 7},
};
/* nib[pos][0]: the buckets allowed by the low nibble of the byte at pos, nib[pos][1]: by the
 * high nibble; twice over (the two 128-bit lanes of an AVX2 register). */
#if defined(__GNUC__) || defined(__clang__)
#define ALIGNED32 __attribute__((aligned(32)))
#else
#define ALIGNED32
#endif
static unsigned char nib[3][2][32] ALIGNED32;
/* The same for the control bytes (CTRL), by the nibbles of the byte itself: bit 0 a byte
 * 0x00..0x0f but tab, '\n' and '\r', bit 1 a byte 0x10..0x1f but ESC, bit 2 DEL. */
static unsigned char ctrl_nib[2][32] ALIGNED32;

static void ctrl_nib_init(void)
{
    for (int lane = 0; lane < 32; lane += 16) {
        for (int x = 0; x < 16; x++)
            ctrl_nib[0][lane + x] = (unsigned char)((x != 0x9 && x != 0xa && x != 0xd ? 1 : 0)
                                                    | (x != 0xb ? 2 : 0) | (x == 0xf ? 4 : 0));
        ctrl_nib[1][lane + 0] = 1;
        ctrl_nib[1][lane + 1] = 2;
        ctrl_nib[1][lane + 7] = 4;
    }
}

/* Whether ctrl_nib says CTRL for exactly the bytes CTRL holds for (checked at import). */
static int ctrl_nib_ok(void)
{
    for (unsigned c = 0; c < 256; c++)
        if (((ctrl_nib[0][c & 15] & ctrl_nib[1][c >> 4]) != 0) != (CTRL(c) != 0))
            return 0;
    return 1;
}

static void nib_init(void)
{
    for (size_t k = 0; k < sizeof(FINGERPRINTS) / sizeof(FINGERPRINTS[0]); k++) {
        const char *fp = FINGERPRINTS[k].fp;
        unsigned char bit = (unsigned char)(1u << FINGERPRINTS[k].bucket);
        for (int pos = 0; pos < 3; pos++) {
            for (int lane = 0; lane < 32; lane += 16) {
                if (pos < (int)strlen(fp)) {
                    nib[pos][0][lane + ((uchar)fp[pos] & 15)] |= bit;
                    nib[pos][1][lane + ((uchar)fp[pos] >> 4)] |= bit;
                } else {
                    for (int x = 0; x < 16; x++) {
                        nib[pos][0][lane + x] |= bit;
                        nib[pos][1][lane + x] |= bit;
                    }
                }
            }
        }
    }
}

/* Every anchor of ANCHORS has a fingerprint (checked once at import: a gap would skip lines). */
static int fingerprints_cover_anchors(void)
{
    for (size_t k = 0; k < sizeof(ANCHORS) / sizeof(ANCHORS[0]); k++) {
        int found = 0;
        for (size_t j = 0; !found && j < sizeof(FINGERPRINTS) / sizeof(FINGERPRINTS[0]); j++) {
            const char *fp = FINGERPRINTS[j].fp;
            found = strncmp(ANCHORS[k], fp, strlen(fp)) == 0;
        }
        if (!found)
            return 0;
    }
    return strncmp(": \xe2", ": \xe2\x80\xa6", 3) == 0;
}

/* A line walk: the line starting at s (its end is the next '\n' or `end`, the buffer's end,
 * stored in *pe) walked as walk_scalar would walk it. */
typedef int (*line_fn)(uchar *s, uchar *end, uchar **pe);
static int simd_on;   /* 0 with the scalar kernel: every SIMD loop takes its scalar form */

static uchar *line_end(uchar *p, uchar *end)
{
    uchar *nl = memchr(p, '\n', (size_t)(end - p));
    return nl != NULL ? nl : end;
}

static int line_scalar(uchar *s, uchar *end, uchar **pe)
{
    *pe = line_end(s, end);
    return walk_scalar(s, *pe);
}

/* An event scan: whether one of patterns._event_anchor's strings is in [s, e) (event_anchor). */
typedef int (*event_fn)(uchar *s, uchar *e);
static int event_scalar(uchar *s, uchar *e);
#define EVENT_BACK 5   /* "out of memory" is flagged at its "f m", 5 bytes in (event_near) */

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86_KERNELS 1
#include <immintrin.h>

static int event_near(uchar *q, uchar *s, uchar *e);

/* The window of 32 bytes at p (p + WALK_READ <= the buffer's end) through the filter: `flags`
 * one bit per byte where an anchor may start or that is a control byte (CTRL) or not ASCII, `nl` per '\n'.  The
 * walk looks at the flagged bytes before the first '\n' in order: a control byte decides 2, an anchor 1,
 * a non-ASCII byte hands over to walk_scalar; a '\n' with nothing decided before it ends the
 * line at 0.  Returns -1 when the line goes on past the window.  An anchor is confirmed
 * against the buffer's end, not the line's: no anchor holds a '\n', so a match never runs
 * past the line. */
static inline int walk_window(uchar *p, uchar *end, uint32_t flags, uint32_t nl, uchar **pe)
{
    uint32_t m = nl ? flags & ((nl & (0u - nl)) - 1) : flags;
    int why = -1;
    while (m) {
        uchar *q = p + __builtin_ctz(m);
        if (CTRL(*q)) {
            why = 2;
        } else if (*q >= 0x80) {
            *pe = nl ? p + __builtin_ctz(nl) : line_end(q, end);
            return walk_scalar(q, *pe);
        } else if (anchor_at(q, end)) {
            why = 1;
        }
        if (why > 0) {
            *pe = nl ? p + __builtin_ctz(nl) : line_end(q, end);
            return why;
        }
        m &= m - 1;
    }
    if (nl) {
        *pe = p + __builtin_ctz(nl);
        return 0;
    }
    return -1;
}

/* The filter on the 16 bytes at p (reads p .. p+17); *nl gets the '\n' bits. */
__attribute__((target("ssse3"))) static inline uint32_t flags_ssse3(uchar *p, uint32_t *nl)
{
    const __m128i low = _mm_set1_epi8(0x0f);
    __m128i v0 = _mm_loadu_si128((const __m128i *)p);
    __m128i lo0 = _mm_and_si128(v0, low), hi0 = _mm_and_si128(_mm_srli_epi16(v0, 4), low);
    /* control bytes (CTRL: NUL among them) by their nibbles, then the anchors' buckets */
    __m128i ctrl = _mm_and_si128(_mm_shuffle_epi8(_mm_load_si128((const __m128i *)ctrl_nib[0]), lo0),
                                 _mm_shuffle_epi8(_mm_load_si128((const __m128i *)ctrl_nib[1]), hi0));
    __m128i hit = _mm_and_si128(_mm_shuffle_epi8(_mm_load_si128((const __m128i *)nib[0][0]), lo0),
                                _mm_shuffle_epi8(_mm_load_si128((const __m128i *)nib[0][1]), hi0));
    for (int pos = 1; pos < 3; pos++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + pos));
        __m128i lo = _mm_shuffle_epi8(_mm_load_si128((const __m128i *)nib[pos][0]), _mm_and_si128(v, low));
        __m128i hi = _mm_shuffle_epi8(_mm_load_si128((const __m128i *)nib[pos][1]),
                                      _mm_and_si128(_mm_srli_epi16(v, 4), low));
        hit = _mm_and_si128(hit, _mm_and_si128(lo, hi));
    }
    hit = _mm_or_si128(hit, ctrl);
    uint32_t none = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(hit, _mm_setzero_si128()));
    *nl = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v0, _mm_set1_epi8('\n')));
    return ((~none & 0xffffu) | (uint32_t)_mm_movemask_epi8(v0)) & 0xffffu;
}

__attribute__((target("ssse3"))) static int line_ssse3(uchar *s, uchar *end, uchar **pe)
{
    for (uchar *p = s;; p += 32) {
        if (end - p < WALK_READ)
            return line_scalar(p, end, pe);
        uint32_t nl0, nl1;
        uint32_t flags = flags_ssse3(p, &nl0) | flags_ssse3(p + 16, &nl1) << 16;
        int why = walk_window(p, end, flags, nl0 | nl1 << 16, pe);
        if (why >= 0)
            return why;
    }
}

/* The filter on the 32 bytes at p (reads p .. p+33); *nl gets the '\n' bits. */
__attribute__((target("avx2"))) static inline uint32_t flags_avx2(uchar *p, uint32_t *nl)
{
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256i v0 = _mm256_loadu_si256((const __m256i *)p);
    __m256i lo0 = _mm256_and_si256(v0, low), hi0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), low);
    /* control bytes (CTRL: NUL among them) by their nibbles, then the anchors' buckets */
    __m256i ctrl = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)ctrl_nib[0]), lo0),
                                    _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)ctrl_nib[1]), hi0));
    __m256i hit = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)nib[0][0]), lo0),
                                   _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)nib[0][1]), hi0));
    for (int pos = 1; pos < 3; pos++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + pos));
        __m256i lo = _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)nib[pos][0]),
                                         _mm256_and_si256(v, low));
        __m256i hi = _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)nib[pos][1]),
                                         _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
        hit = _mm256_and_si256(hit, _mm256_and_si256(lo, hi));
    }
    hit = _mm256_or_si256(hit, ctrl);
    uint32_t none = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(hit, _mm256_setzero_si256()));
    *nl = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, _mm256_set1_epi8('\n')));
    return ~none | (uint32_t)_mm256_movemask_epi8(v0);
}

__attribute__((target("avx2"))) static int line_avx2(uchar *s, uchar *end, uchar **pe)
{
    for (uchar *p = s;; p += 32) {
        if (end - p < WALK_READ)
            return line_scalar(p, end, pe);
        uint32_t nl;
        uint32_t flags = flags_avx2(p, &nl);
        int why = walk_window(p, end, flags, nl, pe);
        if (why >= 0)
            return why;
    }
}

/* The filter's flags on the n < WALK_READ bytes at p, the last of [p, p + n) (copied out, so
 * nothing past them is read; the copy's zeros flag nothing kept: the bits stop at n).  Why:
 * a message is a few dozen bytes, and the walks' scalar tails took most of each. */
__attribute__((target("ssse3"))) static uint64_t tail_ssse3(uchar *p, Py_ssize_t n)
{
    unsigned char w[2 * 32 + 2] = {0};
    uint32_t nl;
    memcpy(w, p, (size_t)n);
    uint64_t m = 0;
    for (int k = 0; k < 4; k++)
        m |= (uint64_t)flags_ssse3(w + 16 * k, &nl) << (16 * k);
    return m & ((1ull << n) - 1);
}

__attribute__((target("avx2"))) static uint64_t tail_avx2(uchar *p, Py_ssize_t n)
{
    unsigned char w[2 * 32 + 2] = {0};
    uint32_t nl;
    memcpy(w, p, (size_t)n);
    uint64_t m = flags_avx2(w, &nl) | (uint64_t)flags_avx2(w + 32, &nl) << 32;
    return m & ((1ull << n) - 1);
}

static inline int trigger_near(uchar *q, uchar *s, uchar *e);

/* event_scalar (triggers 0) or trigger_scalar (1), by the walk's filter: every event anchor and
 * trigger holds one of the walk's fingerprints (event_near, trigger_near say where), so only
 * the flagged bytes are looked at, the last fewer than WALK_READ through the filter from a copy
 * (tail_ssse3 / tail_avx2).  The filter reads up to WALK_READ bytes from a window's start,
 * bounded by e. */
#define FLAGGED_NEAR(q) (triggers ? trigger_near(q, s, e) : event_near(q, s, e))
__attribute__((target("ssse3"))) static inline int flagged_ssse3(uchar *s, uchar *e, int triggers)
{
    uchar *p = s;
    for (; e - p >= WALK_READ; p += 32) {
        uint32_t nl0, nl1;
        for (uint32_t m = flags_ssse3(p, &nl0) | flags_ssse3(p + 16, &nl1) << 16; m; m &= m - 1)
            if (FLAGGED_NEAR(p + __builtin_ctz(m)))
                return 1;
    }
    for (uint64_t m = tail_ssse3(p, e - p); m; m &= m - 1)
        if (FLAGGED_NEAR(p + __builtin_ctzll(m)))
            return 1;
    return 0;
}

__attribute__((target("avx2"))) static inline int flagged_avx2(uchar *s, uchar *e, int triggers)
{
    uchar *p = s;
    for (; e - p >= WALK_READ; p += 32) {
        uint32_t nl;
        for (uint32_t m = flags_avx2(p, &nl); m; m &= m - 1)
            if (FLAGGED_NEAR(p + __builtin_ctz(m)))
                return 1;
    }
    for (uint64_t m = tail_avx2(p, e - p); m; m &= m - 1)
        if (FLAGGED_NEAR(p + __builtin_ctzll(m)))
            return 1;
    return 0;
}
#undef FLAGGED_NEAR

__attribute__((target("ssse3"))) static int event_ssse3(uchar *s, uchar *e) { return flagged_ssse3(s, e, 0); }
__attribute__((target("avx2"))) static int event_avx2(uchar *s, uchar *e) { return flagged_avx2(s, e, 0); }
__attribute__((target("ssse3"))) static int trigger_ssse3(uchar *s, uchar *e) { return flagged_ssse3(s, e, 1); }
__attribute__((target("avx2"))) static int trigger_avx2(uchar *s, uchar *e) { return flagged_avx2(s, e, 1); }
#endif

/* A trigger scan: whether event_trigger_at holds at some byte of [s, e) (may_be_event); its SIMD
 * forms above look only where the walk's filter flags a fingerprint (trigger_near, with TRIGGERS). */
static int trigger_scalar(uchar *s, uchar *e);

/* The kernels this machine runs, best last; `walk` is the one in use (kernel() switches). */
static const struct { const char *name; line_fn fn; event_fn events, triggers; } KERNELS[] = {
    {"scalar", line_scalar, event_scalar, trigger_scalar},
#ifdef HAVE_X86_KERNELS
    {"ssse3", line_ssse3, event_ssse3, trigger_ssse3},
    {"avx2", line_avx2, event_avx2, trigger_avx2},
#endif
};
#define N_KERNELS ((int)(sizeof(KERNELS) / sizeof(KERNELS[0])))
static int kernel_ok[N_KERNELS];
static int kernel_now;
static line_fn walk = line_scalar;
static event_fn event_anchor = event_scalar;
static event_fn trigger_any = trigger_scalar;

static void use_kernel(int k)
{
    kernel_now = k;
    walk = KERNELS[k].fn;
    event_anchor = KERNELS[k].events;
    trigger_any = KERNELS[k].triggers;
    simd_on = k > 0;
}

static void kernels_init(void)
{
    kernel_ok[0] = 1;
#ifdef HAVE_X86_KERNELS
    __builtin_cpu_init();
    kernel_ok[1] = __builtin_cpu_supports("ssse3");
    kernel_ok[2] = __builtin_cpu_supports("avx2");
#endif
    for (int k = 0; k < N_KERNELS; k++)
        if (kernel_ok[k])
            use_kernel(k);
}

/* Whether a pasted table's header or row starts at s (formats.TABLE_START, `\|? *(?:Step[ \t|]|
 * [0-9]+ *[|\t])`): `Step |`, `| Step |`, `Step<tab>`, `12 | `, `| 12 |`, `12<tab>`. */
#define DIGIT_W(c) ((c) >= '0' && (c) <= '9')
static int table_start(uchar *p, uchar *e)
{
    if (p < e && *p == '|')
        p++;
    while (p < e && *p == ' ')
        p++;
    if (e - p >= 5 && memcmp(p, "Step", 4) == 0)
        return p[4] == ' ' || p[4] == '\t' || p[4] == '|';
    if (p >= e || !DIGIT_W(*p))
        return 0;
    while (p < e && DIGIT_W(*p))
        p++;
    while (p < e && *p == ' ')
        p++;
    return p < e && (*p == '|' || *p == '\t');
}

/* parse.is_candidate on the line starting at s (it ends at the next '\n' or at `end`, the
 * buffer's end: *pe), plus the inline path's own conditions: 0 no, 1 an anchor, 2 a line the
 * inline path refuses (a control byte, U+FFFD, bad UTF-8, '\r' end, too long).  The length and '\r' come
 * first, then a line starting `{'`, ` {` or `{"`, then the first anchor or bad byte met from
 * the line's start. */
static int is_cand(uchar *s, uchar *end, uchar **pe)
{
    int why = walk(s, end, pe);
    uchar *e = *pe;
    Py_ssize_t n = e - s;
    if (n > MAX_LINE || (n > 0 && e[-1] == '\r'))
        return 2;
    /* line[:2] == ' {'; "{'" and '{"' anywhere are found by the walk */
    if (n >= 2 && s[0] == ' ' && s[1] == '{')
        return 1;
    if (why == 0 && table_start(s, e))
        return 1;
    return why;
}

/* '[' among the first STAMP_CHARS characters (the line is valid UTF-8: not a candidate). */
static int stamped_chars(uchar *s, uchar *e)
{
    Py_ssize_t chars = 0;
    for (uchar *p = s; p < e; p++) {
        if ((*p & 0xC0) == 0x80)
            continue;   /* inside a character */
        if (chars++ == STAMP_CHARS)
            break;
        if (*p == '[')
            return 1;
    }
    return 0;
}

#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_SSE2_PLAIN 1   /* SSE2 loops (find_byte, plain_flags, printable_end), taken when simd_on */
#include <emmintrin.h>
#endif

/* Whether one of the n bytes at s is not ASCII: 16 bytes at a time where SSE2 is on (at -O2 the
 * compiler left the byte loop scalar: stamped's 64 bytes per noise line without a '[' there were
 * 4 % of a block's walk). */
static int any_high(uchar *s, size_t n)
{
#ifdef HAVE_SSE2_PLAIN
    if (simd_on && n >= 16) {   /* the last 16 bytes end at the last byte (they may overlap) */
        for (size_t i = 0;; i += 16) {
            if (i > n - 16)
                i = n - 16;
            if (_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(s + i))))
                return 1;
            if (i == n - 16)
                return 0;
        }
    }
#endif
    if (n >= 8) {   /* two words, the second ending at the last byte */
        uint64_t a, b;
        for (size_t i = 0;; i += 8) {
            if (i > n - 8)
                i = n - 8;
            memcpy(&a, s + i, 8);
            memcpy(&b, s + n - 8, 8);
            if ((a | b) & 0x8080808080808080ull)
                return 1;
            if (i == n - 8)
                return 0;
        }
    }
    unsigned acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= s[i];
    return (acc & 0x80) != 0;
}

#ifdef HAVE_SSE2_PLAIN

/* memchr(s, c, n), inline: the searches of stamped and paren_key are short (a '[' or ')' within
 * a line's first bytes), where a library call costs more than the search. */
static inline uchar *find_byte(uchar *s, size_t n, unsigned char c)
{
    if (!simd_on)
        return memchr(s, c, n);
    const __m128i want = _mm_set1_epi8((char)c);
    for (; n >= 16; s += 16, n -= 16) {
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)s), want));
        if (m)
            return s + __builtin_ctz(m);
    }
    for (; n > 0; s++, n--)
        if (*s == c)
            return s;
    return NULL;
}
#else
#define find_byte(s, n, c) ((uchar *)memchr(s, c, n))
#endif

/* stamped_chars, by memchr when the bytes decide: a '[' in the first STAMP_CHARS bytes is in
 * the first STAMP_CHARS characters, and with no non-ASCII byte there, bytes are characters. */
static int stamped(uchar *s, uchar *e)
{
    size_t n = (size_t)(e - s);
    if (n <= STAMP_CHARS)
        return find_byte(s, n, '[') != NULL;
    if (find_byte(s, STAMP_CHARS, '[') != NULL)
        return 1;
    return any_high(s, STAMP_CHARS) ? stamped_chars(s, e) : 0;
}

/* source_key for a line starting with '(' or ESC: the length up to the first ')' among the first
 * KEY_CHARS characters, or 0.  By memchr when the bytes decide (as in stamped). */
static Py_ssize_t paren_key(uchar *s, uchar *e)
{
    size_t n = (size_t)(e - s);
    uchar *close = find_byte(s, n < KEY_CHARS ? n : KEY_CHARS, ')');
    if (close != NULL)
        return close - s + 1;
    if (n <= KEY_CHARS || !any_high(s, KEY_CHARS))
        return 0;
    Py_ssize_t chars = 0;
    for (uchar *p = s; p < e; p++) {
        if ((*p & 0xC0) == 0x80)
            continue;
        if (chars++ == KEY_CHARS)
            break;
        if (*p == ')')
            return p - s + 1;
    }
    return 0;
}

/* patterns._source_key's length in bytes, or KEY_PYTHON when it needs the paste regex. */
static Py_ssize_t source_key(uchar *s, uchar *e)
{
    if (s == e)
        return 0;
    if (*s == '(' || *s == 0x1b)
        return paren_key(s, e);
    if (*s == '>' || *s == ' ' || *s == '\t' || (*s >= '0' && *s <= '9') || *s >= 0x80)
        return KEY_PYTHON;   /* str.isdigit() holds for non-ASCII digits too */
    return 0;
}

/* Whether the n bytes at a and b are the same (keys are short: inline, no library call). */
static inline int same_bytes(uchar *a, uchar *b, Py_ssize_t n)
{
#ifdef HAVE_SSE2_PLAIN
    if (simd_on && n >= 16) {   /* 16 bytes at a time, the last 16 ending at the last byte */
        for (Py_ssize_t i = 0;; i += 16) {
            if (i > n - 16)
                i = n - 16;
            __m128i x = _mm_loadu_si128((const __m128i *)(a + i)), y = _mm_loadu_si128((const __m128i *)(b + i));
            if (_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) != 0xffff)
                return 0;
            if (i == n - 16)
                return 1;
        }
    }
#endif
    if (n >= 8) {   /* word by word, the last word ending at the last byte (it may overlap) */
        uint64_t x, y;
        for (Py_ssize_t i = 0;; i += 8) {
            if (i > n - 8)
                i = n - 8;
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y)
                return 0;
            if (i == n - 8)
                return 1;
        }
    }
    for (; n > 0; a++, b++, n--)
        if (*a != *b)
            return 0;
    return 1;
}

#endif /* GRPO_SCAN_WALK_H */
