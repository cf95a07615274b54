/* grpo_tui.lines._scan: optional accelerator for LineParser.feed_block / feed_lines (issue #11).
 *
 * scan(buf) splits a buffer on b"\n" exactly like bytes.split(b"\n") and classifies every line
 * in one pass, so Python never looks at (or decodes) a noise line one by one:
 *
 *   returns (n_lines, cands, keep, starts, heads, lasts)
 *   cands: indices of the lines Python must feed() -- every line `is_candidate` accepts, plus
 *          every line the inline noise path of feed_lines would not take (a control byte such as NUL, U+FFFD or
 *          invalid UTF-8, a trailing '\r', longer than MAX_LINE).  It may only ever say MORE
 *          than is_candidate (feeding a noise line through feed() is exact; skipping a
 *          candidate is not), so the UTF-8 and length tests over-approximate when unsure.
 *   keep:  indices of the noise lines with a '[' in their first 64 characters that the
 *          skipped-line bookkeeping (_remember_skipped: a deque of the newest 16 per source
 *          key, read and emptied by a candidate of that key) can still show: the newest 16
 *          per key before each candidate that may read that key, none before one that only
 *          pops it (see select_kept).  A
 *          superset is exact (a deque shows only its newest 16), so whenever unsure it keeps.
 *   starts: n_lines + 1 int64 offsets (bytes): line i is buf[starts[i]:starts[i+1]-1], so
 *          Python decodes only the lines it reads.
 *   heads: for each candidate, None or the offsets of its Miles header's fields (miles_head)
 *          when feed() would read it exactly so: Python then skips _peel and the regexes.
 *          Also a line under SGLang's own header whose message is noise for sure (sglang_head),
 *          and a header-less line that is noise for sure (quiet_head: feed only tries _rejoin
 *          and reads its source's skipped lines, and Fold.run does both itself where it knows
 *          their outcome: quiet_fold): noise that names an anchor ("step:", "{'", " ...",
 *          "checkpoint") is common, and read whole in Python it cost ~25 us a line.  Megatron's
 *          header-less `saving checkpoint at iteration N` lines come the same way (quiet_head:
 *          HEAD_CKPT), and Fold.run makes their events (ckpt_fold).
 *   lasts: for each candidate, and once more for the buffer's end, the newest stamped noise
 *          line of the run before it, or -1 (it becomes _last_stamped, read lazily).
 *
 * scan_folded(buf), what the parser calls, is scan() then fold() in one call: the candidates
 * that are noise for sure are taken into the noise runs around them (fold_core), and the heads
 * Python would slice and read (a common metric record, an ASCII `ft ` line) come ready, their
 * values made here (ready_head), so Python decodes no line to read them.
 *
 * Speed (issue #11: reading and scanning a 540 MB log within about 1.5 grep-times): a line is
 * walked once, by SIMD where the machine has it (line_avx2/line_ssse3, chosen at import by
 * the CPU; kernel() switches, every kernel gives the same results): a nibble-table filter
 * flags the bytes where an anchor may start and every control (NUL...) or non-ASCII byte, and the walk
 * also finds the line's end.  What the bookkeeping needs of a line (its source key as a small
 * id, its Miles header fields, whether it is a plain candidate) is taken in the same forward
 * pass, while the line is in cache; select_kept then walks back over the ids only.
 *
 * Why the CPython C API and not ctypes/cffi: the call is made once per 4 MiB block and must
 * hand back Python lists of ints; ctypes would need a separate shared library with its own
 * build and loading rules plus a marshalling step in Python, and cffi is a new runtime
 * dependency.  A plain extension is built by setuptools (optional=True: no compiler, no
 * extension, the pure path runs), has no dependency, and releases the GIL while it scans.
 *
 * Safety: every read is bounded by the buffer's end (never by a length read from the log);
 * the buffer is held through the buffer protocol for the whole call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <errno.h>
#include <unistd.h>
#define HAVE_READ_SCAN 1   /* read_scan: a POSIX read(2) and the walk in one stretch without the GIL */
#endif

#define MAX_LINE (1 << 20)   /* parse.MAX_LINE (characters there; bytes here: over-approximate) */
#define STAMP_CHARS 64       /* feed_lines: '[' in raw[:64] */
#define KEY_CHARS 200        /* _source_key: raw.find(")", 0, 200) */
#define PER_KEY 16           /* parse._SKIPPED_PER_SOURCE */
#define REJOIN_PARTS 8       /* parse._REJOIN_PARTS */
#define MAX_KEYS 256         /* distinct keys tracked per buffer; past that their lines are kept */

enum { NOISE = 0, STAMPED = 1, CAND = 2, KEEP = 4, PLAIN = 8, ANCHOR = 16, HEAD = 32, QUIET = 64, OWNED = 128 };
#define KEY_PYTHON ((Py_ssize_t)-1)   /* the key needs Python (_paste_key): always kept */

typedef struct {        /* 16 bytes: a 4 MiB block has some 25 000 of them */
    int64_t start;      /* offset of the line in the buffer */
    int32_t kid;        /* key_id of its source key (stamped and plain lines), or KEY_UNTRACKED
                         * (no key id, or a key that needs Python: then a stamped line is kept) */
    unsigned char cls;  /* NOISE | STAMPED | CAND, plus KEEP (and what a candidate is: PLAIN, HEAD, QUIET...) */
} Line;

typedef const unsigned char uchar;

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
    "Fatal async", "checkpoint", "wandb", "tensorboard", "train.py", "train_async.py",
    "+ ray job submit", " skipped: ", " ...", ") {", "step:", "{'",
};
/* A control byte _peel drops (parse._CONTROL_NO_ESC; NUL included, ESC aside): a line holding
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
    case 'F': return LIT("Fatal async");
    case 'c': return LIT("checkpoint");
    case 'w': return LIT("wandb");
    case 't': return LIT("tensorboard") || LIT("train.py") || LIT("train_async.py");
    case '+': return LIT("+ ray job submit");
    case ' ': return LIT(" skipped: ") || LIT(" ...");
    case ')': return LIT(") {");
    case 's': return LIT("step:");
    case '{': return LIT("{'");
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
    {"Err", 0}, {"EXE", 0}, {"Wat", 0}, {"Fat", 0}, {"+ r", 0}, {") {", 0},
    {": {", 1}, {": \xe2", 1}, {"Max", 1}, {"OfM", 1},
    {"mem", 2}, {"che", 2}, {" sk", 2},
    {"wan", 3}, {"ste", 3},
    {"ret", 4}, {" ..", 4},
    {"ft ", 5}, {"f m", 5}, {"Rec", 5},
    {"W&B", 6}, {"{'", 6},
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

/* An event scan: whether one of parse._event_anchor's strings is in [s, e) (event_anchor). */
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
    /* line[:2] in ("{'", ' {', '{"'); "{'" anywhere is found by the walk */
    if (n >= 2 && ((s[0] == ' ' && s[1] == '{') || (s[0] == '{' && s[1] == '"')))
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

/* parse._source_key's length in bytes, or KEY_PYTHON when it needs the paste regex. */
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

/* A cheap hash of a source key (its length, first and last 8 bytes): key_id compares keys by
 * it first and byte by byte only when it agrees. */
static uint32_t key_hash(uchar *s, Py_ssize_t len)
{
    uint64_t h = (uint64_t)len * 0x9E3779B97F4A7C15ull;
    if (len >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + len - 8, 8);
        h ^= a;
        h *= 0xff51afd7ed558ccdull;
        h ^= b;
        h *= 0xc4ceb9fe1a85ec53ull;
    } else {
        for (Py_ssize_t i = 0; i < len; i++)
            h = (h ^ s[i]) * 0x100000001b3ull;
    }
    return (uint32_t)(h ^ (h >> 29) ^ (h >> 47));
}

/* How common a byte is in log text, roughly (lower: rarer): has() looks for a literal's rarest
 * byte, so that `across cluster]` is sought by its ']', not by every 'a' of a metric line. */
static int commonness_of(unsigned c)
{
    if (c >= 0x80 || c == '[' || c == ']' || c == '{' || c == '}' || c == '|' || c == '\\')
        return 0;
    if (c >= 'A' && c <= 'Z')
        return 1;
    if (c == ' ' || c == '.' || c == ',' || c == ':' || c == '/' || c == '_' || c == '\'' || c == '='
        || c == '-')
        return 3;
    return 2;
}
static unsigned char commonness[256];

static void commonness_init(void)
{
    for (unsigned c = 0; c < 256; c++)
        commonness[c] = (unsigned char)commonness_of(c);
}

/* The index of the rarest byte of the literal s (n >= 1 bytes): has() looks for that one. */
static size_t rarest(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 1; i < n; i++)
        if (commonness[(uchar)s[i]] < commonness[(uchar)s[k]])
            k = i;
    return k;
}

/* A literal the walk looks for in every candidate, with its rarest byte found once, at import
 * (lits_init), not at every search. */
typedef struct {
    const char *s;
    size_t n, k;
} Lit;
#define LITERAL(name, text) static Lit name = {text, sizeof(text) - 1, 0}
LITERAL(L_TRACEBACK, "Traceback");
LITERAL(L_DOTS, "...");
LITERAL(L_ELLIPSIS, "\xe2\x80\xa6");
LITERAL(L_RAY_NOTE, "Ray deduplicates");
LITERAL(L_REPEATED, "[repeated ");
LITERAL(L_ACROSS, "across cluster]");
LITERAL(L_DICT, ": {");
LITERAL(L_DICT_DOTS, ": ...");
LITERAL(L_DICT_ELLIPSIS, ": \xe2\x80\xa6");
LITERAL(L_TRACEBACK_HEAD, "Traceback (most recent call last)");
LITERAL(L_RETRYING, "retrying...");
LITERAL(L_MAX_RETRIES, "Max retries (");
static Lit *const LITS[] = {&L_TRACEBACK, &L_DOTS, &L_ELLIPSIS, &L_RAY_NOTE, &L_REPEATED, &L_ACROSS, &L_DICT,
                            &L_DICT_DOTS, &L_DICT_ELLIPSIS, &L_TRACEBACK_HEAD, &L_RETRYING, &L_MAX_RETRIES};

static void lits_init(void)   /* at import, before any walk: read-only afterwards */
{
    for (size_t i = 0; i < sizeof(LITS) / sizeof(LITS[0]); i++)
        LITS[i]->k = rarest(LITS[i]->s, LITS[i]->n);
}

/* Whether the literal l occurs in [p, e).  By memchr for its rarest byte, then a compare of the
 * whole; where SSE2 is on, first 16 places at a time that hold its rarest byte and the one next
 * to it: "..." and ": ..." are sought by a '.' and a ':', which SGLang's lines hold a dozen of,
 * and a library call for each cost a tenth of the scan of a log with anchored noise. */
static int has_lit(uchar *p, uchar *e, const Lit *l)
{
    const char *s = l->s;
    size_t n = l->n, k = l->k;
    if (e - p < (Py_ssize_t)n)
        return 0;
    uchar *q = p + k, *last = e - n + k;   /* where s[k] sits for a match starting in [p, e-n] */
#if defined(HAVE_SSE2_PLAIN)
    if (simd_on && n >= 2) {
        ptrdiff_t d = k + 1 < n ? 1 : -1;   /* the byte next to s[k] within s: s[k + d] */
        const __m128i a = _mm_set1_epi8(s[k]), b = _mm_set1_epi8(s[(ptrdiff_t)k + d]);
        if (last - q >= 15) {               /* q..q+15 and their neighbours lie in [p, e) */
            for (;; q += 16) {
                if (last - q < 15)
                    q = last - 15;          /* the last 16 end at last (they may overlap) */
                __m128i x = _mm_loadu_si128((const __m128i *)q), y = _mm_loadu_si128((const __m128i *)(q + d));
                for (unsigned m = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(x, a),
                                                                            _mm_cmpeq_epi8(y, b)));
                     m; m &= m - 1)
                    if (memcmp(q + __builtin_ctz(m) - k, s, n) == 0)
                        return 1;
                if (q == last - 15)
                    return 0;
            }
        }
    }
#endif
    while (q <= last) {
        q = memchr(q, s[k], (size_t)(last - q) + 1);
        if (q == NULL)
            return 0;
        if (memcmp(q - k, s, n) == 0)
            return 1;
        q++;
    }
    return 0;
}

/* Whether the literal s (n >= 1 bytes) occurs in [p, e). */
static int has(uchar *p, uchar *e, const char *s, size_t n)
{
    Lit l = {s, n, rarest(s, n)};
    return has_lit(p, e, &l);
}

#define DIGIT(c) ((c) >= '0' && (c) <= '9')

/* An ANSI colour sequence ESC '[' [0-9;]* 'm' at p: its end, or p when there is none. */
static uchar *sgr(uchar *p, uchar *e)
{
    if (e - p < 3 || p[0] != 0x1b || p[1] != '[')
        return p;
    uchar *q = p + 2;
    while (q < e && (DIGIT(*q) || *q == ';'))
        q++;
    return q < e && *q == 'm' ? q + 1 : p;
}

/* The first ']' or byte that is not printable ASCII in [p, e), or e; 16 bytes at a time where
 * SSE2 is on. */
static inline uchar *bracket_or_unprintable(uchar *p, uchar *e)
{
#ifdef HAVE_SSE2_PLAIN
    const __m128i below = _mm_set1_epi8(0x1f), del = _mm_set1_epi8(0x7f), bracket = _mm_set1_epi8(']');
    for (; simd_on && e - p >= 16; p += 16) {   /* signed: 0x80.. is below 0x20 */
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        unsigned ok = (unsigned)_mm_movemask_epi8(_mm_andnot_si128(_mm_cmpeq_epi8(v, del), _mm_cmpgt_epi8(v, below)));
        unsigned m = (~ok & 0xffffu) | (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, bracket));
        if (m)
            return p + __builtin_ctz(m);
    }
#endif
    while (p < e && *p != ']' && *p >= ' ' && *p < 0x7f)
        p++;
    return p;
}

/* Whether the line [s, e) certainly starts with a header the parser reads (parse._peel, then
 * _header): an optional Ray prefix `ESC[..m(Actor pid=N)ESC[..m ` exactly as _RAY takes it,
 * then `[YYYY-MM-DD HH:MM:SS` and a `]` within 40 printable ASCII bytes (_SGLANG matches, if
 * not _MILES).  No '\r' or control byte may change the text _peel leaves (checked by caller).
 * The byte after that `]`, or NULL. */
static uchar *prefix_end(uchar *s, uchar *e, Py_ssize_t key);

static uchar *header_end(uchar *s, uchar *e, Py_ssize_t key)
{
    uchar *p = prefix_end(s, e, key);
    if (p == NULL)
        return NULL;
    static const char shape[] = "[dddd-dd-dd dd:dd:dd";
    if (e - p < (Py_ssize_t)sizeof(shape))
        return NULL;
    unsigned bad = 0;   /* no branch per byte: the compiler unrolls it over the constant shape */
    for (size_t i = 0; i < sizeof(shape) - 1; i++)
        bad |= shape[i] == 'd' ? (unsigned)(p[i] - '0') > 9 : p[i] != (uchar)shape[i];
    if (bad)
        return NULL;
    p += sizeof(shape) - 1;
    uchar *lim = e - p > 41 ? p + 41 : e;   /* a ']' among the next 41 bytes, all printable before it */
    uchar *q = bracket_or_unprintable(p, lim);
    return q < lim && *q == ']' ? q + 1 : NULL;
}

/* Where the text after the line's Ray prefix starts (s itself for key 0) when the prefix is one
 * _peel certainly reads as such: `ESC[..m(Actor pid=N)ESC[..m ` or `(Actor pid=N, ip=X) ` exactly
 * as _RAY takes it (its actor, pid and ip printable ASCII), one blank after it taken; NULL
 * when unsure (header_end's prefix, and a header-less line's: quiet_head). */
static uchar *prefix_end(uchar *s, uchar *e, Py_ssize_t key)
{
    uchar *p = s;
    if (key > 0) {
        p = sgr(p, e);
        if (p >= e || *p != '(')
            return NULL;
        p++;
        uchar *close = s + key - 1;   /* the ')' that ends the key */
        uchar *pid = p;
        while (pid < close && *pid != ' ')
            pid++;
        if (pid < close) {            /* `Actor pid=`: the actor is [^\s()]+ */
            for (uchar *q = p; q < pid; q++)
                if (*q <= ' ' || *q >= 0x7f || *q == '(' || *q == ')')
                    return NULL;
            if (pid == p)
                return NULL;
            p = pid + 1;
        }
        if (close - p < 5 || memcmp(p, "pid=", 4) != 0)
            return NULL;
        uchar *q = p + 4;
        for (; q < close && *q != ','; q++)     /* [^,)]+, kept to printable ASCII */
            if (*q <= ' ' || *q >= 0x7f || *q == '(')
                return NULL;
        if (q < close) {   /* `, ip=[^)]+` (a worker on another node): pid_str makes `pid@ip` */
            if (q == p + 4 || close - q < 6 || memcmp(q, ", ip=", 5) != 0)
                return NULL;
            for (q += 5; q < close; q++)
                if (*q <= ' ' || *q >= 0x7f || *q == '(' || *q == ',')
                    return NULL;
        }
        p = sgr(close + 1, e);
        if (p < e && *p == ' ')
            p++;
    }
    return p;
}

/* The end of the run of ASCII digits at p (not past e); 16 bytes at a time where SSE2 is on. */
static inline uchar *digits_end(uchar *p, uchar *e)
{
#ifdef HAVE_SSE2_PLAIN
    const __m128i below = _mm_set1_epi8('0' - 1), above = _mm_set1_epi8('9' + 1);
    for (; simd_on && e - p >= 16; p += 16) {   /* signed: 0x80.. is below '0' */
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        unsigned d = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(v, below), _mm_cmplt_epi8(v, above)));
        if (d != 0xffffu)
            return p + __builtin_ctz(~d);
    }
#endif
    while (p < e && DIGIT(*p))
        p++;
    return p;
}

/* The first '\'' or '\\' at or after p (e when none before e): where a dict key ends. */
static inline uchar *quote_end(uchar *p, uchar *e)
{
#ifdef HAVE_SSE2_PLAIN
    const __m128i quote = _mm_set1_epi8('\''), backslash = _mm_set1_epi8('\\');
    for (; simd_on && e - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
        if (m)
            return p + __builtin_ctz(m);
    }
#endif
    while (p < e && *p != '\'' && *p != '\\')
        p++;
    return p;
}

/* A number as values._FAST_VALUE reads it, at p: its end, or NULL. */
static uchar *fast_value(uchar *p, uchar *e)
{
    if (p < e && *p == '-')
        p++;
    if (e - p >= 3 && (memcmp(p, "nan", 3) == 0 || memcmp(p, "inf", 3) == 0))
        return p + 3;
    uchar *d = p;
    p = digits_end(p, e);
    int whole = p > d;
    if (p < e && *p == '.') {
        uchar *f = ++p;
        p = digits_end(p, e);
        if (!whole && p == f)
            return NULL;
    } else if (!whole) {
        return NULL;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        uchar *x = p + 1;
        if (x < e && (*x == '-' || *x == '+'))
            x++;
        uchar *xd = x;
        while (x < e && DIGIT(*x))
            x++;
        if (x > xd)
            p = x;   /* else the regex leaves the `e` unread, and the pair fails after it */
    }
    return p;
}

/* Whether [p, e) fullmatches values._FAST_DICT: `{'k': number, ...}` and ASCII blanks (a
 * dict parse_dict reads as complete). */
static int fast_dict(uchar *p, uchar *e)
{
    if (p >= e || *p++ != '{')
        return 0;
    if (p < e && *p == '}')
        goto closed;
    for (;;) {
        if (p >= e || *p++ != '\'')
            return 0;
        p = quote_end(p, e);
        if (e - p < 3 || p[0] != '\'' || p[1] != ':' || p[2] != ' ')
            return 0;
        p = fast_value(p + 3, e);
        if (p == NULL || p >= e)
            return 0;
        if (*p == '}')
            break;
        if (e - p < 2 || p[0] != ',' || p[1] != ' ')
            return 0;
        p += 2;
    }
closed:
    for (p++; p < e; p++)
        if (*p != ' ' && *p != '\t' && *p != '\v' && *p != '\f')
            return 0;
    return 1;
}

/* parse._METRIC_MSG/_METRIC_ANY's kinds. */
static const char *const METRIC_KINDS[] = {"rollout", "perf", "eval", "multi_turn", "step", "passrate"};
#define N_METRIC_KINDS (sizeof(METRIC_KINDS) / sizeof(METRIC_KINDS[0]))

/* Whether `<kind> <digits>` (parse._METRIC_MSG/_METRIC_ANY's kind and id, the id's '-' taken)
 * ends at q, within [s, q): ASCII digits only (metric_any_may sees to the rest). */
static int kind_id_before(uchar *s, uchar *q)
{
    const char *const *kinds = METRIC_KINDS;
    uchar *d = q;
    while (q > s && DIGIT(q[-1]))
        q--;
    if (q == d)
        return 0;
    if (q > s && q[-1] == '-')
        q--;
    if (q == s || q[-1] != ' ')
        return 0;
    q--;
    for (size_t k = 0; k < N_METRIC_KINDS; k++) {
        size_t n = strlen(kinds[k]);
        if ((size_t)(q - s) >= n && memcmp(q - n, kinds[k], n) == 0)
            return 1;
    }
    return 0;
}

/* Whether the '{' at p (p > s) follows `<kind> <digits>: ` (parse._METRIC_MSG/_METRIC_ANY): a
 * dict that may open a record. */
static int metric_brace(uchar *s, uchar *p)
{
    return p - s >= 2 && p[-1] == ' ' && p[-2] == ':' && kind_id_before(s, p - 2);
}

/* What plain_view's pass looks at in each byte. */
enum { PB_OTHER, PB_BRACE, PB_CONTROL, PB_DOT, PB_T, PB_E2 };
static unsigned char plain_byte[256];

static void plain_byte_init(void)
{
    for (int c = 0; c < 0x20; c++)
        plain_byte[c] = PB_CONTROL;
    plain_byte[0x7f] = PB_CONTROL;
    plain_byte['{'] = PB_BRACE;
    plain_byte['.'] = PB_DOT;
    plain_byte['T'] = PB_T;
    plain_byte[0xe2] = PB_E2;
}

/* plain_view's look at the byte p of the line [s, e): 0 when it makes the line not plain;
 * counts the '{'s and remembers the one that may open a metric dict. */
static inline int plain_byte_ok(uchar *s, uchar *p, uchar *e, int *braces, uchar **metric)
{
    switch (plain_byte[*p]) {
    case PB_BRACE:
        ++*braces;
        if (metric_brace(s, p))
            *metric = p;
        return 1;
    case PB_CONTROL:
        return 0;
    case PB_DOT:
        return !(e - p >= 3 && p[1] == '.' && p[2] == '.');
    case PB_T:
        return !lit(p, e, "Traceback", 9);
    case PB_E2:
        return !lit(p, e, "\xe2\x80\xa6", 3);
    default:
        return 1;
    }
}

#ifdef HAVE_SSE2_PLAIN
/* The bytes among the 16 at p (reads p .. p+17) plain_byte_ok must see: '{', control bytes,
 * 'T', 0xE2, and a '.' only where "..." starts (plain_byte_ok passes any other '.'). */
static inline unsigned plain_flags(uchar *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i dot = _mm_set1_epi8('.');
    __m128i m = _mm_and_si128(_mm_cmpeq_epi8(v, dot),
                              _mm_and_si128(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 1)), dot),
                                            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 2)), dot)));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('{')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('T')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xe2)));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v));   /* v <= 0x1f */
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* The first byte in [p, e) that is not printable ASCII (0x20..0x7e), or e: the run of plain
 * text a byte-by-byte check can skip whole.  16 bytes at a time where SSE2 is on (simd_on). */
static uchar *printable_end(uchar *p, uchar *e)
{
#ifdef HAVE_SSE2_PLAIN
    const __m128i below = _mm_set1_epi8(0x1f), del = _mm_set1_epi8(0x7f);
    for (; simd_on && e - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);   /* signed: 0x80.. is below 0x20 */
        unsigned ok = (unsigned)_mm_movemask_epi8(_mm_andnot_si128(_mm_cmpeq_epi8(v, del), _mm_cmpgt_epi8(v, below)));
        if (ok != 0xffffu)
            return p + __builtin_ctz(~ok);
    }
#endif
    while (p < e && *p >= 0x20 && *p < 0x7f)
        p++;
    return p;
}

/* What plain_cand read of a candidate that miles_head would otherwise read again (both are
 * pure functions of the line's bytes, so a result is reused only for the very same bytes). */
typedef struct {
    uchar *hend;       /* header_end(s, e, key) of the line as it is (NULL: no header) */
    uchar *dict, *dict_end;   /* fast_dict(dict, dict_end) holds (dict NULL: not known) */
} Seen;

/* plain_cand on a line whose colours after the prefix were taken out (see below); hend is
 * header_end(s, e, key).  A '{' that fast_dict was seen to accept goes to *seen unless NULL. */
static int plain_view(uchar *s, uchar *e, Py_ssize_t key, uchar *hend, Seen *seen)
{
    if (hend == NULL)
        return 0;
    uchar *metric = NULL, *body = key > 0 ? sgr(s + key, e) : s, *p = body;
    int braces = 0;
    /* One pass over the body for the '{'s, control bytes, and the starts of "Traceback", "..."
     * and U+2026 (in the prefix before it: has() below, for any start there). */
#ifdef HAVE_SSE2_PLAIN
    for (; simd_on && e - p >= 18; p += 16)
        for (unsigned m = plain_flags(p); m; m &= m - 1)
            if (!plain_byte_ok(s, p + __builtin_ctz(m), e, &braces, &metric))
                return 0;
#endif
    for (; p < e; p++)
        if (plain_byte[*p] != PB_OTHER && !plain_byte_ok(s, p, e, &braces, &metric))
            return 0;
    if (metric != NULL && (braces != 1 || !fast_dict(metric, e)))
        return 0;
    if (metric != NULL && seen != NULL) {
        seen->dict = metric;
        seen->dict_end = e;
    }
    uchar *pre = body + 8 < e ? body + 8 : e;   /* a literal starting before body ends by here */
    /* _strip_dedup cuts at Ray's dedup note or mark: past the header they only shorten the
     * message (a dict before them is then no fast_dict here: not plain); in it the header
     * would go, so there they are not allowed. */
    return !has_lit(s, pre, &L_TRACEBACK) && !has_lit(s, pre, &L_DOTS) && !has_lit(s, pre, &L_ELLIPSIS)
           && !has_lit(s, hend, &L_RAY_NOTE) && !has_lit(s, hend, &L_REPEATED) && !has_lit(s, hend, &L_ACROSS);
}

/* A candidate that can only read its own source's skipped lines and cannot open a record or
 * a traceback (after which every line is fed one by one and reads its own key): a line with a
 * header (so no rejoin and no header-less path), no U+FFFD or bad UTF-8 (feed() may find the
 * line unreadable: it reads nothing), no control byte once _peel has taken the
 * colours out, no "Traceback", no elided-dict dots, Ray's dedup note or mark only after the
 * header, and, when a '{' follows `<kind> N: `, that one '{' only, opening a dict parse_dict
 * reads as complete.  Such a line pops its own key (_with_header); any other candidate ends
 * every key's window.  Colours after the prefix (`ESC[32m [repeated 7x ...]ESC[0m`) are
 * taken out first, exactly as _ANSI does for them: what they join is then checked (so
 * `Trace\x1b[0mback` is a traceback); any other ESC sequence makes the line not plain. */
/* Whether [s, e) holds U+FFFD or bytes that are not UTF-8 (they decode to U+FFFD): feed() may
 * find such a line unreadable (more U+FFFD than it reads) and then read no key at all. */
static int has_replacement(uchar *s, uchar *e)
{
    if (!any_high(s, (size_t)(e - s)))
        return 0;
    for (uchar *p = s; p < e;) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        int len = utf8_len(p, e);
        if (len == 0 || (len == 3 && p[0] == 0xEF && p[1] == 0xBF && p[2] == 0xBD))
            return 1;
        p += len;
    }
    return 0;
}

static int plain_rest(uchar *s, uchar *e, Py_ssize_t key, Seen *seen);

static int plain_cand(uchar *s, uchar *e, int why, Py_ssize_t key, Seen *seen)
{
    if (why != 1 || key == KEY_PYTHON)
        return 0;
    seen->hend = header_end(s, e, key);
    return plain_rest(s, e, key, seen);
}

/* plain_cand's tests past header_end (seen->hend: the caller found it). */
static int plain_rest(uchar *s, uchar *e, Py_ssize_t key, Seen *seen)
{
    if (has_replacement(s, e))   /* the line's own bytes: taking colours out may join bad ones */
        return 0;
    uchar *body = key > 0 ? sgr(s + key, e) : s;
    if (memchr(body, 0x1b, (size_t)(e - body)) == NULL)
        return plain_view(s, e, key, seen->hend, seen);
    unsigned char *tmp = PyMem_RawMalloc((size_t)(e - s) + 1);
    if (tmp == NULL)
        return 0;
    memcpy(tmp, s, (size_t)(body - s));   /* the prefix, its colours as they are */
    unsigned char *t = tmp + (body - s);
    for (uchar *p = body; p < e; ) {
        if (*p == 0x1b) {
            uchar *q = sgr(p, e);
            if (q == p) {                   /* not a colour: _ANSI's other forms are not ours */
                PyMem_RawFree(tmp);
                return 0;
            }
            p = q;
        } else {
            *t++ = *p++;
        }
    }
    int res = plain_view(tmp, t, key, header_end(tmp, t, key), NULL);
    PyMem_RawFree(tmp);
    return res;
}

/* The fields of a candidate's Miles header, as byte offsets into its line (-1: absent).  The
 * line's text up to `msg` is ASCII, so they are str offsets too.  After them, what the message
 * is (miles_class), so LineParser._feed_head can skip the work feed() would do for nothing:
 *   H_MSG_END    the message's end: the line's end, or where Ray's dedup mark was cut off (in
 *                characters, not bytes: the message may hold non-ASCII text; all else is ASCII)
 *   H_REPEATED   the dedup count (_strip_dedup: bounded_int(n) or 0)
 *   H_TIME_END   the end of the time text (`date time.ms`) when it is the line's own text, else -1
 *                (a `,ms` is written `.ms` there)
 *   H_DAYS, H_SOD, H_MSV  ts = H_DAYS * 86400 + H_SOD + H_MSV / 1000.0 (parse._fast_ts), valid
 *                when H_CLASS is not HEAD_OTHER
 *   H_CLASS      HEAD_OTHER: read the message in Python (_header_fields); HEAD_NOISE: it is noise
 *                for sure; HEAD_METRIC: `[role-]kind N: {'k': number, ...}` (_METRIC_MSG) with a
 *                dict values._FAST_DICT reads whole and an id bounded_int takes; HEAD_FT: an `ft `
 *                line _classify hands to _ft_event (not one it gives None for: that is noise)
 *   H_ROLE       HEAD_METRIC: the role's start (it ends at H_KIND - 1), or -1
 *   H_KIND, H_KIND_END, H_ID, H_DICT   HEAD_METRIC: the kind, the id's value, the '{'
 *   H_END_B      the message's end in bytes (H_MSG_END in bytes: the C side reads the message)
 *   H_OWN        HEAD_QUIET: the buffer's line (an index) that _catch_up finds newest in its
 *                source's deque when that line is this buffer's and has a header for sure (classify,
 *                own_header), or -1
 *   H_KID        the source key's id in this buffer (key_id) for a plain or quiet head, else -1
 *   H_ERR        HEAD_NOISE: 1 when the line after the message's start holds "Error" (fold keeps
 *                its message for _last_error), 0 when not; -1: not known (fold looks)
 *   H_O_PID .. H_O_MSV   with H_OWN: that line's own header fields H_PID .. H_MSV as miles_head
 *                read them in classify (own_header), offsets into that line, so quiet_fold need
 *                not read its header again; H_O_DATE -1: not read (fold reads it)
 * H_KID and H_ERR are read while the line is in cache: fold reads a buffer's heads after the
 * walk has left it, and looking at each head's key and message again cost it a tenth of the walk.
 * A head whose message the scanner reads whole (a common metric record, an ASCII `ft ` event)
 * comes to Python ready instead (ready_head): its values, not these offsets. */
enum { H_KEY, H_ACTOR, H_ACTOR_END, H_PID, H_PID_END, H_DATE, H_MS, H_PROC, H_PROC_END, H_FILE,
       H_FILE_END, H_MSG, H_MSG_END, H_REPEATED, H_TIME_END, H_DAYS, H_SOD, H_MSV, H_CLASS,
       H_ROLE, H_KIND, H_KIND_END, H_ID, H_DICT, H_END_B, H_OWN, H_KID, H_ERR,
       H_O_PID, H_O_PID_END, H_O_DATE, H_O_MS, H_O_TIME_END, H_O_DAYS, H_O_SOD, H_O_MSV, H_N };
/* The own line's fields kept in H_O_* (quiet_fold reads these of it: pid_str, head_time_text, head_ts). */
static const int OWN_FIELDS[][2] = {{H_PID, H_O_PID}, {H_PID_END, H_O_PID_END}, {H_DATE, H_O_DATE},
                                    {H_MS, H_O_MS}, {H_TIME_END, H_O_TIME_END}, {H_DAYS, H_O_DAYS},
                                    {H_SOD, H_O_SOD}, {H_MSV, H_O_MSV}};
#define N_OWN_FIELDS ((int)(sizeof(OWN_FIELDS) / sizeof(OWN_FIELDS[0])))
enum { HEAD_OTHER = 0, HEAD_NOISE = 1, HEAD_METRIC = 2, HEAD_FT = 3, HEAD_QUIET = 4, HEAD_CKPT = 5 };

#define WORD(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || DIGIT(c) || (c) == '_')
#define ALPHA(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z'))
#define BLANK(c) ((c) == ' ' || (c) == '\t')
/* The bytes of a header's process or file name ([\w.-] in ASCII), by table: the names are a
 * dozen bytes or more, and the test per byte a tenth of a Miles header's read. */
static unsigned char name_byte[256];
#define NAME(c) name_byte[(uchar)(c)]

static void name_byte_init(void)
{
    for (unsigned c = 0; c < 256; c++)
        name_byte[c] = WORD(c) || c == '.' || c == '-';
}
#define MAX_ID 9007199254740991LL   /* records.MAX_ID = 2**53 - 1 */

/* records.bounded_int on ASCII digits [p, e): the value, or -1 (None). */
static long long bounded_digits(uchar *p, uchar *e)
{
    if (e <= p || e - p > 16)
        return -1;
    long long v = 0;
    for (; p < e; p++) {
        if (!DIGIT(*p))
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v <= MAX_ID ? v : -1;
}

/* Backwards from q (not before lo) over blanks and colour sequences ESC '[' [0-9;]* 'm'. */
static uchar *back_blank_sgr(uchar *lo, uchar *q)
{
    for (;;) {
        if (q > lo && BLANK(q[-1])) {
            q--;
            continue;
        }
        if (q > lo && q[-1] == 'm') {
            uchar *r = q - 1;
            while (r > lo && (DIGIT(r[-1]) || r[-1] == ';'))
                r--;
            if (r - lo >= 2 && r[-1] == '[' && r[-2] == 0x1b) {
                q = r - 2;
                continue;
            }
        }
        return q;
    }
}

/* The end of the message in [p, e) as _peel leaves it: e when there is no Ray dedup mark, or
 * where _strip_dedup cuts `<msg> [repeated 7x across cluster]` (colours and blanks around the
 * mark are what _ANSI takes out and rstrip drops).  *rep: the count.  NULL when unsure: Ray's
 * dedup note, an ESC anywhere else, a mark of another shape, a non-ASCII character before it
 * (rstrip drops Unicode blanks too). */
static uchar *dedup_end(uchar *p, uchar *e, long *rep)
{
    *rep = 0;
    if (has_lit(p, e, &L_RAY_NOTE))
        return NULL;
    uchar *end = e;
    if (has_lit(p, e, &L_ACROSS)) {
        uchar *mk = NULL;
        for (uchar *q = e; q - p >= 10; q--)
            if (memcmp(q - 10, "[repeated ", 10) == 0) {
                mk = q - 10;
                break;
            }
        if (mk == NULL)
            return NULL;
        uchar *d = mk + 10, *t = d;
        while (t < e && DIGIT(*t))
            t++;
        if (t == d || !lit(t, e, "x across cluster]", 17))
            return NULL;
        long long n = bounded_digits(d, t);
        if (n > LONG_MAX)
            return NULL;   /* a 32-bit long */
        *rep = n > 0 ? (long)n : 0;
        for (t += 17; t < e; ) {   /* only blanks and colours after the mark */
            uchar *u = sgr(t, e);
            if (u != t)
                t = u;
            else if (BLANK(*t))
                t++;
            else
                return NULL;
        }
        end = back_blank_sgr(p, mk);
        if (end > p && end[-1] >= 0x80)
            return NULL;
    }
    if (memchr(p, 0x1b, (size_t)(end - p)) != NULL)
        return NULL;
    return end;
}

/* Whether one of parse._event_anchor's strings (or "train_async.py") starts at p (not past e).
 * Each is listed in EVENT_ANCHORS or EVENT_INSIDE as well (the SIMD scans rely on those). */
static int event_at(uchar *p, uchar *e)
{
    switch (*p) {
    case 'r': return LIT("retrying");
    case 'T': return LIT("Traceback");
    case 'M': return LIT("Max retries");
    case 'f': return LIT("ft ");
    case 'H': return LIT("Health check failed");
    case 'R': return LIT("Recovered ");
    case 'o': return LIT("out of memory");
    case 'O': return LIT("OutOfMemory");
    case 'm': return LIT("memory pressure");
    case 'W': return LIT("Watchdog caught") || LIT("W&B");
    case 'J': return LIT("Job '");
    case 'F': return LIT("Fatal async");
    case 'c': return LIT("checkpoint");
    case 'w': return LIT("wandb");
    case 't': return LIT("tensorboard") || LIT("train.py") || LIT("train_async.py");
    case 'E': return LIT("EXEC:");
    case ' ': return LIT(" skipped: ") || LIT(" ...");
    case '+': return LIT("+ ray job submit");
    default: return 0;
    }
}

/* The event anchors whose walk fingerprint (FINGERPRINTS) is not their first bytes: it starts
 * `back` bytes in.  Every other one starts with a fingerprint (checked at import). */
static const struct { const char *text; int back; } EVENT_INSIDE[] = {
    {"out of memory", 5},   /* "f m" */
    {"OutOfMemory", 3},     /* "OfM" */
};
static const char *const EVENT_ANCHORS[] = {
    "retrying", "Traceback", "Max retries", "ft ", "Health check failed", "Recovered ", "memory pressure",
    "Watchdog caught", "W&B", "Job '", "Fatal async", "checkpoint", "wandb", "tensorboard", "train.py",
    "train_async.py", "EXEC:", " skipped: ", " ...", "+ ray job submit",
};

#ifdef HAVE_X86_KERNELS
/* Whether an event anchor whose fingerprint the walk's filter flags at q starts at q or, for
 * those of EVENT_INSIDE, that many bytes before (not before s). */
static int event_near(uchar *q, uchar *s, uchar *e)
{
    if (event_at(q, e))
        return 1;
    for (size_t i = 0; i < sizeof(EVENT_INSIDE) / sizeof(EVENT_INSIDE[0]); i++) {
        uchar *p = q - EVENT_INSIDE[i].back;
        if (q - s >= EVENT_INSIDE[i].back && lit(p, e, EVENT_INSIDE[i].text, strlen(EVENT_INSIDE[i].text)))
            return 1;
    }
    return 0;
}
#endif

/* One of parse._event_anchor's strings (or "train_async.py") in [s, e), byte by byte. */
static int event_scalar(uchar *s, uchar *e)
{
    for (uchar *p = s; p < e; p++)
        if (event_at(p, e))
            return 1;
    return 0;
}

/* Whether a fingerprint (FINGERPRINTS) starts the text s, or s + back. */
static int fingerprinted(const char *s, int back)
{
    for (size_t j = 0; j < sizeof(FINGERPRINTS) / sizeof(FINGERPRINTS[0]); j++) {
        const char *fp = FINGERPRINTS[j].fp;
        if (strlen(s) >= (size_t)back + strlen(fp) && strncmp(s + back, fp, strlen(fp)) == 0)
            return 1;
    }
    return 0;
}

/* Every event anchor is flagged by the walk's filter where event_near looks (checked at import:
 * a gap would make the SIMD event scans miss one). */
static int fingerprints_cover_events(void)
{
    for (size_t k = 0; k < sizeof(EVENT_ANCHORS) / sizeof(EVENT_ANCHORS[0]); k++) {
        uchar *a = (uchar *)EVENT_ANCHORS[k];
        if (!fingerprinted(EVENT_ANCHORS[k], 0) || !event_at(a, a + strlen(EVENT_ANCHORS[k])))
            return 0;
    }
    for (size_t k = 0; k < sizeof(EVENT_INSIDE) / sizeof(EVENT_INSIDE[0]); k++) {
        uchar *a = (uchar *)EVENT_INSIDE[k].text;
        if (EVENT_INSIDE[k].back > EVENT_BACK || !fingerprinted(EVENT_INSIDE[k].text, EVENT_INSIDE[k].back)
            || !event_at(a, a + strlen(EVENT_INSIDE[k].text)))
            return 0;
    }
    return 1;
}

/* parse._METRIC_MSG on the message [s, e): 0 no match, 1 a match of the common shape (then
 * h gets its fields: a '{' dict that fast_dict reads whole, an id bounded_int takes), 2 a match
 * or maybe one (anything else: Python reads it). */
static int metric_msg(uchar *s, uchar *e, long *h, uchar *line, const Seen *seen)
{
    const char *const *kinds = METRIC_KINDS;
    uchar *p = s, *role = NULL;
    if (p < e && ALPHA(*p)) {   /* (?:(?P<role>[A-Za-z]\w*)-)?: the whole word, if a '-' ends it */
        uchar *q = p + 1;
        while (q < e && WORD(*q))
            q++;
        if (q < e && *q >= 0x80)
            return 2;           /* \w goes on in Unicode */
        if (q < e && *q == '-') {
            role = p;
            p = q + 1;
        }
    }
    uchar *k1 = NULL;
    for (size_t k = 0; k1 == NULL && k < N_METRIC_KINDS; k++) {
        size_t n = strlen(kinds[k]);
        if ((size_t)(e - p) > n && memcmp(p, kinds[k], n) == 0 && p[n] == ' ')
            k1 = p + n;
    }
    if (k1 == NULL)
        return 0;
    uchar *d = k1 + 1, *t = d;
    if (t < e && *t == '-')
        return 2;
    while (t < e && DIGIT(*t))
        t++;
    if (t < e && *t >= 0x80)
        return 2;               /* \d goes on in Unicode */
    if (t == d || e - t < 3 || t[0] != ':' || t[1] != ' ')
        return 0;
    if (t[2] != '{')
        return t[2] == '.' || t[2] >= 0x80 ? 2 : 0;   /* an elided head (`: ...`, `: \u2026`) */
    long long id = bounded_digits(d, t);
    int dict_ok = (t + 2 == seen->dict && e == seen->dict_end) || fast_dict(t + 2, e);
    if (id < 0 || id > LONG_MAX || !dict_ok)
        return 2;
    h[H_ROLE] = role ? (long)(role - line) : -1;
    h[H_KIND] = (long)(p - line);
    h[H_KIND_END] = (long)(k1 - line);
    h[H_ID] = (long)id;
    h[H_DICT] = (long)(t + 2 - line);
    return 1;
}

typedef struct {
    uchar *v;
    Py_ssize_t n;   /* v == NULL: the field is absent */
} Span;

#define SPAN_IS(sp, s) ((sp).v != NULL && (sp).n == (Py_ssize_t)sizeof(s) - 1 && memcmp((sp).v, s, sizeof(s) - 1) == 0)
#define SPACE(c) ((c) == ' ' || ((c) >= '\t' && (c) <= '\r') || ((c) >= 0x1c && (c) <= 0x1f))

/* One `name=value` of an `ft ` line: the name [w, we) and the value [v, ve). */
typedef struct {
    uchar *w, *we, *v, *ve;
} FtField;

/* The next field of the ASCII text [s, e) from *pp on, as _FT_FIELD.findall reads them
 * (`(?<!\w)(\w+)=("(?:[^"\\]|\\.)*"|\S*)`): 1 and *f set, *pp past it; 0 when there is none. */
static int ft_next(uchar **pp, uchar *s, uchar *e, FtField *f)
{
    uchar *p = *pp;
    while (p < e) {
        if (!WORD(*p) || (p > s && WORD(p[-1]))) {
            p++;
            continue;
        }
        uchar *w = p;
        while (p < e && WORD(*p))
            p++;
        if (p >= e || *p != '=')
            continue;   /* no match from w to here: the next try is at p */
        uchar *we = p++, *v = p;
        if (p < e && *p == '"') {
            uchar *q = p + 1;
            while (q < e && *q != '"') {
                if (*q == '\\') {
                    if (q + 1 >= e) {
                        q = e;
                        break;
                    }
                    q += 2;
                } else {
                    q++;
                }
            }
            if (q < e)
                p = q + 1;
            else
                while (p < e && !SPACE(*p))
                    p++;
        } else {
            while (p < e && !SPACE(*p))
                p++;
        }
        f->w = w;
        f->we = we;
        f->v = v;
        f->ve = p;
        *pp = p;
        return 1;
    }
    *pp = p;
    return 0;
}

/* The fields _ft_event decides on (the last of a name wins, as in dict(findall)). */
typedef struct {
    Span ok, phase, op, fn, attempt, rollout, elapsed;
} FtWant;

static void ft_want(FtWant *want, FtField *f)
{
    Span got = {f->v, f->ve - f->v};
    Py_ssize_t wn = f->we - f->w;
#define FT_NAME(s) (wn == (Py_ssize_t)sizeof(s) - 1 && memcmp(f->w, s, sizeof(s) - 1) == 0)
    if (FT_NAME("ok"))
        want->ok = got;
    else if (FT_NAME("phase"))
        want->phase = got;
    else if (FT_NAME("op"))
        want->op = got;
    else if (FT_NAME("fn"))
        want->fn = got;
    else if (FT_NAME("attempt"))
        want->attempt = got;
    else if (FT_NAME("rollout"))
        want->rollout = got;
    else if (FT_NAME("elapsed_s"))
        want->elapsed = got;
#undef FT_NAME
}

enum { FT_NONE, FT_FAIL, FT_TRAIN_RETRY, FT_WEIGHT_START, FT_WEIGHT_END };

/* LineParser._ft_event's decision on the fields read (FT_NONE: it gives None); *attempt gets
 * train_retry's attempt. */
static int ft_kind(const FtWant *f, long long *attempt)
{
    if (SPAN_IS(f->ok, "false") || SPAN_IS(f->phase, "fail"))
        return FT_FAIL;
    if (SPAN_IS(f->op, "train") && SPAN_IS(f->phase, "start")) {
        long long a = f->attempt.v == NULL ? 0 : bounded_digits(f->attempt.v, f->attempt.v + f->attempt.n);
        *attempt = a < 0 ? 0 : a;   /* bounded_int(...) or 0 */
        return *attempt >= 1 ? FT_TRAIN_RETRY : FT_NONE;
    }
    if ((SPAN_IS(f->op, "update_weights") || SPAN_IS(f->fn, "update_weights"))
        && (SPAN_IS(f->phase, "start") || SPAN_IS(f->phase, "end"))
        && (SPAN_IS(f->op, "update_weights") || SPAN_IS(f->phase, "end")))
        return SPAN_IS(f->phase, "start") ? FT_WEIGHT_START : FT_WEIGHT_END;
    return FT_NONE;
}

/* Whether LineParser._ft_event gives None for the ASCII text [s, e). */
static int ft_none(uchar *s, uchar *e)
{
    FtWant want = {{NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}};
    FtField f;
    long long attempt;
    for (uchar *p = s; ft_next(&p, s, e, &f); )
        ft_want(&want, &f);
    return ft_kind(&want, &attempt) == FT_NONE;
}

/* Whether one of the texts LineParser._classify acts on (header=True) starts at p (for a regex
 * branch, a text each of its matches holds: _OOM's, _CKPT's): where none does and the message
 * neither starts with a blank (_ARG_DUMP, lstrip) nor with "EXEC:", "+ ray job submit", "ft "
 * or "wandb:", _classify gives None and changes nothing.  Why: an
 * event anchor alone ("checkpoint", " ...", "wandb", "tensorboard", "train.py") is common in
 * noise (`Loading checkpoint shards ...`), and such a line read in Python cost ~20 us.  Each
 * text here is listed in TRIGGERS too (the SIMD trigger scans look only where those are). */
static int event_trigger_at(uchar *p, uchar *e, uchar *s)
{
    switch (*p) {
    case 'T': return LIT("Traceback (most recent call last)");
    case 'r': return LIT("retrying...");
    case 'M': return LIT("Max retries (");
    case ' ': return LIT(" skipped: ");
    case 'H': return LIT("Health check failed");
    case 'R': return LIT("Recovered ");
    case 'C': return LIT("CUDA out of memory") || LIT("CUDA error: out of memory");   /* _OOM */
    case 'O': return LIT("OutOfMemoryError");
    case 'k': return LIT("killed due to memory pressure");
    case 'W': return LIT("Watchdog caught collective operation timeout") || (LIT("W&B") && has(s, e, "mode enabled", 12));
    case 'J': return LIT("Job '");
    case 'F': return LIT("Fatal async misuse");
    case 's': return LIT("saving checkpoint ") || LIT("successfully saved checkpoint ");   /* _CKPT */
    case 'S': return LIT("Saving tensorboard log to");
    default: return 0;
    }
}

/* The texts event_trigger_at looks for, one per literal of its branches (`W&B` with what it
 * needs besides).  Each holds one of the walk's FINGERPRINTS some bytes in (the first one's
 * offset is among backs[]: trigger_backs_init, at import, which refuses a text without one or
 * one that event_trigger_at does not take), so the filter flags every trigger somewhere in it. */
static const char *const TRIGGERS[] = {
    "Traceback (most recent call last)", "retrying...", "Max retries (", " skipped: ", "Health check failed",
    "Recovered ", "CUDA out of memory", "CUDA error: out of memory", "OutOfMemoryError",
    "killed due to memory pressure", "Watchdog caught collective operation timeout", "W&B mode enabled", "Job '",
    "Fatal async misuse", "saving checkpoint ", "successfully saved checkpoint ", "Saving tensorboard log to",
};
#define N_TRIGGERS ((int)(sizeof(TRIGGERS) / sizeof(TRIGGERS[0])))
static int n_backs, backs[N_TRIGGERS];  /* where a fingerprint starts in them, each offset once */

static int trigger_backs_init(void)
{
    for (int i = 0; i < N_TRIGGERS; i++) {
        const char *t = TRIGGERS[i];
        int b = 0, n = (int)strlen(t);
        while (b < n && !fingerprinted(t, b))
            b++;
        if (b == n || !event_trigger_at((uchar *)t, (uchar *)t + n, (uchar *)t))
            return 0;
        int k = 0;
        while (k < n_backs && backs[k] != b)
            k++;
        if (k == n_backs)
            backs[n_backs++] = b;
    }
    return 1;
}

static int trigger_scalar(uchar *s, uchar *e)
{
    for (uchar *p = s; p < e; p++)
        if (event_trigger_at(p, e, s))
            return 1;
    return 0;
}

#ifdef HAVE_X86_KERNELS
/* Whether a trigger whose fingerprint the filter flags at q starts that many bytes before q
 * (within [s, e)). */
static inline int trigger_near(uchar *q, uchar *s, uchar *e)
{
    for (int k = 0; k < n_backs; k++)
        if (q - s >= backs[k] && event_trigger_at(q - backs[k], e, s))
            return 1;
    return 0;
}

#endif

/* Whether LineParser._classify(msg, header=True) may give an event for the message [s, e), whose
 * first byte is neither blank nor non-ASCII (0: it gives None for sure, and changes nothing). */
static int may_be_event(uchar *s, uchar *e)
{
    uchar *p = s;
    if (LIT("EXEC:") || LIT("+ ray job submit") || LIT("ft ") || LIT("wandb:"))
        return 1;
    return trigger_any(s, e);
}

/* What LineParser._header_fields makes of the message [s, e) (see H_CLASS). */
static int miles_class(uchar *s, uchar *e, long *h, uchar *line, const Seen *seen)
{
    int metric = 0;
    if (has_lit(s, e, &L_DICT) || has_lit(s, e, &L_DICT_DOTS) || has_lit(s, e, &L_DICT_ELLIPSIS)) {
        metric = metric_msg(s, e, h, line, seen);
        if (metric == 1)
            return HEAD_METRIC;
        if (metric == 2)
            return HEAD_OTHER;
    }
    if (s < e && (BLANK(*s) || *s >= 0x80))
        return HEAD_OTHER;     /* _ARG_DUMP's `  name ... value`, or lstrip's Unicode blanks */
    if (!event_anchor(s, e))   /* _events: no anchor, so no _classify */
        return HEAD_NOISE;
    if (!lit(s, e, "ft ", 3))  /* an anchor, but none of _classify's tests holds: None */
        return may_be_event(s, e) ? HEAD_OTHER : HEAD_NOISE;
    /* _classify: an `ft ` line is read by _ft_event unless one of the tests before it holds */
    /* (HEAD_FT: _feed_head calls _ft_event; HEAD_NOISE: it would give None) */
    if (has_lit(s, e, &L_TRACEBACK_HEAD) || has_lit(s, e, &L_RETRYING) || has_lit(s, e, &L_MAX_RETRIES))
        return HEAD_OTHER;
    for (uchar *p = s; p < e; p++)
        if (*p >= 0x80)
            return HEAD_FT;   /* \w and \S go on in Unicode: _ft_event reads it */
    return ft_none(s, e) ? HEAD_NOISE : HEAD_FT;
}

/* calendar.timegm's day count for `YYYY-MM-DD` at p (digits), or 0 when date() refuses it. */
static int epoch_days(uchar *p, long *days)
{
    long y = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
    long m = (p[5] - '0') * 10 + (p[6] - '0'), d = (p[8] - '0') * 10 + (p[9] - '0');
    static const int before[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    if (y < 1 || m < 1 || m > 12)
        return 0;
    long yb = y - 1;
    long ord = yb * 365 + yb / 4 - yb / 100 + yb / 400 + before[m - 1]
               + (m > 2 && (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) + 1;   /* date(y, m, 1) */
    *days = ord - 719163 + d - 1;   /* 719163: date(1970, 1, 1).toordinal() */
    return 1;
}

/* The head of a line whose header parse._MILES certainly does not match (miles_head checked it up
 * to an ASCII byte where the match fails), as parse._SGLANG reads it: `[date time(.ms)` then
 * anything but ']' up to the ']' header_end found (within 40 bytes), one optional blank, the
 * message to the end e (where _strip_dedup cuts it).  Taken only when the message is noise for
 * sure (miles_class): then _feed_head and fold read no field that _MILES alone has (proc, file),
 * and feed() would do with it just what they do.  Why: SGLang's own lines (`[2026-08-21
 * 10:00:33 TP0] Decode batch, ...`) are most of a Miles log; one with an anchor in it ("step:",
 * "{'", " ...") went to Python whole, ~25 us a line (a log with a quarter of them: 5x slower).
 * date: the header's date; extra, rep: miles_head's.  1 with h set, else 0 (Python reads it). */
static int sglang_head(uchar *s, uchar *e, const Seen *seen, uchar *date, Py_ssize_t extra, long rep, long *h)
{
    uchar *m = seen->hend;     /* just past the ']' */
    if (m == NULL || m > e)
        return 0;              /* (the dedup cut would take the ']': not this header) */
    if (m < e && *m == ' ')
        m++;
    long days;
    if (!epoch_days(date, &days))
        return 0;
    h[H_PROC] = h[H_PROC_END] = h[H_FILE] = h[H_FILE_END] = -1;
    h[H_MSG] = (long)(m - s);
    h[H_MSG_END] = (long)(e - s - extra);
    h[H_END_B] = (long)(e - s);
    h[H_REPEATED] = rep;
    h[H_DAYS] = days;
    h[H_SOD] = ((date[11] - '0') * 10 + (date[12] - '0')) * 3600 + ((date[14] - '0') * 10 + (date[15] - '0')) * 60
               + (date[17] - '0') * 10 + (date[18] - '0');
    h[H_CLASS] = miles_class(m, e, h, s, seen);
    return h[H_CLASS] == HEAD_NOISE;
}

/* Whether LineParser.feed reads the line [s, e) -- a candidate (why == 1) -- as exactly: no cut,
 * no NUL/U+FFFD/bad UTF-8, _peel leaving the text after the Ray prefix as it is but for a dedup
 * mark it cuts off (no other ANSI sequence but the prefix's colours, no control byte, no '\r'
 * split), and parse._MILES matching it.  Then h holds the fields (see the enum) and Python
 * takes them instead of peeling and matching (LineParser._feed_head).  Anything unsure: 0.
 * seen: what plain_cand read of this same line (its header's end, a dict it checked). */
static int miles_head(uchar *s, uchar *e, int why, Py_ssize_t key, const Seen *seen, long *h)
{
    if (why != 1 || key == KEY_PYTHON || seen->hend == NULL)   /* no header */
        return 0;
    for (int i = 0; i < H_N; i++)
        h[i] = -1;
    h[H_KEY] = (long)key;
    uchar *p = s;
    if (key > 0) {   /* header_end checked the prefix's shape: ESC[..m(Actor pid=N)ESC[..m ? */
        p = sgr(p, e) + 1;
        uchar *close = s + key - 1, *sp = p;
        while (sp < close && *sp != ' ')
            sp++;
        if (sp < close) {
            h[H_ACTOR] = (long)(p - s);
            h[H_ACTOR_END] = (long)(sp - s);
            p = sp + 1;
        }
        h[H_PID] = (long)(p + 4 - s);
        h[H_PID_END] = (long)(close - s);
        p = sgr(close + 1, e);
        if (p < e && *p == ' ')
            p++;
    }
    long rep;
    uchar *end = dedup_end(p, e, &rep);
    if (end == NULL)
        return 0;
    /* the text up to the message's end: valid UTF-8, no U+FFFD, no control byte, no '\r' */
    Py_ssize_t extra = 0;   /* bytes past the first of each character: str offsets are that less */
    for (uchar *q = printable_end(p, end); q < end; q = printable_end(q, end)) {
        if (*q >= 0x80) {
            int len = utf8_len(q, end);
            if (len == 0 || (len == 3 && q[0] == 0xEF && q[1] == 0xBF && q[2] == 0xBD))
                return 0;
            q += len;
            extra += len - 1;
        } else if ((*q < ' ' && *q != '\t') || *q == 0x7f) {
            return 0;
        } else {
            q++;
        }
    }
    e = end;
    /* ^\[date time(?:[.,]ms)?(?: ?proc)?\s*\] (?:LEVEL )?file.py:N - msg (header_end read the date) */
    h[H_DATE] = (long)(p + 1 - s);
    uchar *date = p + 1;
    p += 20;
    h[H_TIME_END] = (long)(p - s);
    h[H_MSV] = 0;
    if (e - p >= 4 && (*p == '.' || *p == ',') && DIGIT(p[1]) && DIGIT(p[2]) && DIGIT(p[3])) {
        h[H_MS] = (long)(p + 1 - s);
        h[H_MSV] = (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
        h[H_TIME_END] = *p == '.' ? (long)(p + 4 - s) : -1;
        p += 4;
    }
    uchar *q = p < e && *p == ' ' ? p + 1 : p;
    if (q < e && (WORD(*q) && !DIGIT(*q))) {
        h[H_PROC] = (long)(q - s);
        while (q < e && NAME(*q))
            q++;
        if (q < e && *q >= 0x80)
            return 0;   /* \w goes on in Unicode */
        h[H_PROC_END] = (long)(q - s);
        p = q;
    }
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    if (e - p < 2 || p[0] != ']' || p[1] != ' ')
        return sglang_head(s, e, seen, date, extra, rep, h);   /* (an ASCII byte before the ']') */
    p += 2;
    static const char *levels[] = {"DEBUG ", "INFO ", "WARNING ", "WARN ", "ERROR ", "CRITICAL "};
    for (size_t k = 0; k < sizeof(levels) / sizeof(levels[0]); k++) {
        size_t n = strlen(levels[k]);
        if ((size_t)(e - p) >= n && memcmp(p, levels[k], n) == 0) {
            p += n;
            break;
        }
    }
    uchar *f = p;
    while (p < e && NAME(*p))
        p++;
    if (p >= e || *p != ':' || p - f < 4 || memcmp(p - 3, ".py", 3) != 0)
        return p < e && *p >= 0x80 ? 0 : sglang_head(s, e, seen, date, extra, rep, h);   /* (\w goes on) */
    h[H_FILE] = (long)(f - s);
    h[H_FILE_END] = (long)(p - s);
    uchar *d = ++p;
    while (p < e && DIGIT(*p))
        p++;
    if (p == d || e - p < 3 || memcmp(p, " - ", 3) != 0)
        return p < e && *p >= 0x80 ? 0 : sglang_head(s, e, seen, date, extra, rep, h);   /* (\d goes on) */
    p += 3;   /* a cut dedup mark leaves no blank at the end: then " - " is followed by text */
    h[H_MSG] = (long)(p - s);
    h[H_MSG_END] = (long)(e - s - extra);   /* a str offset (the only one past non-ASCII text) */
    h[H_END_B] = (long)(e - s);
    h[H_REPEATED] = rep;
    long days;
    if (!epoch_days(date, &days)) {
        h[H_CLASS] = HEAD_OTHER;
        return 1;
    }
    h[H_DAYS] = days;
    h[H_SOD] = ((date[11] - '0') * 10 + (date[12] - '0')) * 3600 + ((date[14] - '0') * 10 + (date[15] - '0')) * 60
               + (date[17] - '0') * 10 + (date[18] - '0');
    h[H_CLASS] = miles_class(p, e, h, s, seen);
    return 1;
}

/* Whether parse_verl or parse_trl (LineParser._other_format) may read the text [t, e) as a
 * record: _VERL's `step:` followed by a digit or '-' (or non-ASCII: \d is Unicode), or a `{'`
 * with one of parse_trl's quoted keys in the text; 0 when neither can. */
static int other_format_may(uchar *t, uchar *e)
{
    for (uchar *q = t; e - q >= 5 && (q = memchr(q, 's', (size_t)(e - q - 4))) != NULL; q++)
        if (memcmp(q, "step:", 5) == 0 && q + 5 < e && (DIGIT(q[5]) || q[5] == '-' || q[5] >= 0x80))
            return 1;
    if (!has(t, e, "{'", 2))
        return 0;
    static const char *const trl[] = {"'loss'", "'grad_norm'", "'learning_rate'", "'reward'", "'epoch'",
                                      "'completions/mean_length'", "'eval_loss'", "'train_runtime'"};
    for (size_t k = 0; k < sizeof(trl) / sizeof(trl[0]); k++)
        if (has(t, e, trl[k], strlen(trl[k])))
            return 1;
    return 0;
}

/* The start of the pid in the Ray prefix of [s, e) (key > 0, its shape checked by prefix_end);
 * it ends at the key's ')'.  *actor: the actor's start, or NULL (`(pid=N)`); the actor ends
 * 5 bytes before the pid (" pid="). */
static uchar *pid_span(uchar *s, uchar *e, Py_ssize_t key, uchar **actor)
{
    uchar *p = sgr(s, e) + 1, *close = s + key - 1, *sp = p;
    while (sp < close && *sp != ' ')
        sp++;
    *actor = NULL;
    if (sp < close) {
        *actor = p;
        p = sp + 1;
    }
    return p + 4;
}

/* Whether _peel certainly gives the line [ps, pe) another pid than the Ray-prefixed line [s, e)
 * (key > 0, its prefix checked by prefix_end): none (no prefix, and none _peel_any could find),
 * or one that differs. */
static int pid_differs(uchar *ps, uchar *pe, uchar *s, uchar *e, Py_ssize_t key)
{
    Py_ssize_t pk = source_key(ps, pe);
    if (pk == KEY_PYTHON)
        return 0;
    if (pk == 0)   /* no '(' or ESC first (_RAY after the colours), nor a blank (an indented paste) */
        return ps == pe || (*ps != '(' && *ps != 0x1b && !BLANK(*ps));
    if (prefix_end(ps, pe, pk) == NULL)
        return 0;
    uchar *a, *p1 = pid_span(ps, pe, pk, &a), *p0 = pid_span(s, e, key, &a);
    Py_ssize_t n1 = ps + pk - 1 - p1, n0 = s + key - 1 - p0;
    return n1 != n0 || memcmp(p1, p0, (size_t)n0) != 0;
}

/* Whether parse._METRIC_ANY may find a record in the text [t, e): `kind N: ` then '{', "..."
 * or "\u2026" (any non-ASCII byte there counts), its kind right before a blank, ASCII digits
 * (or a non-ASCII byte: \d is Unicode) and an optional '-' after it.  0: it finds none. */
static int metric_any_may(uchar *t, uchar *e)
{
    if (!has_lit(t, e, &L_DICT) && !has_lit(t, e, &L_DICT_DOTS) && !has_lit(t, e, &L_DICT_ELLIPSIS))
        return 0;                          /* most lines: three quick scans, not a byte loop */
    for (uchar *q = t; e - q >= 3; q++) {
        if (q[0] != ':' || q[1] != ' ' || !(q[2] == '{' || q[2] >= 0x80 || (e - q >= 5 && memcmp(q + 2, "...", 3) == 0)))
            continue;
        uchar *p = q;
        while (p > t && DIGIT(p[-1]))
            p--;
        if ((p > t && p[-1] >= 0x80) || kind_id_before(t, q))
            return 1;                      /* (a non-ASCII byte there: \d is Unicode) */
    }
    return 0;
}

/* Whether LineParser.feed reads the candidate [s, e) (why == 1) as a header-less line that is
 * noise for sure: _peel leaves its text as it is after the Ray prefix (prefix_end; no control
 * byte, ESC, '\r', tab, U+FFFD, bad UTF-8 or dedup mark in it), _header finds none (it starts with neither a blank, a digit, '(',
 * non-ASCII, nor '[' then a digit), and _headerless makes nothing of it: no record _METRIC_ANY
 * may find (metric_any_may: a `: {` of a config dump or a warning is noise), no event (_classify with header=False: may_be_event, and the launch line's
 * train.py + " --"), no verl or TRL record (other_format_may).  What feed does with it then is a
 * few books (LineParser._feed_quiet): _rejoin tried, its own source's skipped lines read
 * (_catch_up), a noise line counted.  h gets H_KEY, the actor and pid, H_MSG (the text's start,
 * a str offset too: the prefix is ASCII), H_END_B, H_CLASS = HEAD_QUIET; 1, or 0 (Python's).
 * Why: such lines (tqdm bars, warnings: `Loading checkpoint shards: 100%|...`) went through
 * feed whole, and made the scanner keep every source's skipped lines before them. */
/* Whether the header-less text [t, e) may be the launch line _classify(header=False) reads
 * (train.py or train_async.py, and " --"). */
static int launch_may(uchar *t, uchar *e)
{
    return (has(t, e, "train.py", 8) || has(t, e, "train_async.py", 14)) && has(t, e, " --", 3);
}

/* Whether LineParser._classify(msg, header=False) gives a checkpoint event for the header-less
 * text [t, e) (printable ASCII, as quiet_head checked; it may start with blanks): no branch
 * before _CKPT's is taken (the launch line's, `ft `, and the texts event_trigger_at names for
 * them), and _CKPT finds its leftmost match.  Then 1, with *saved (`successfully saved`) and
 * the iteration's digits [*d0, *d1); else 0. */
static int ckpt_event(uchar *t, uchar *e, int *saved, uchar **d0, uchar **d1)
{
    uchar *p = t;
    while (p < e && SPACE(*p))
        p++;                                    /* msg.lstrip() */
    if (LIT("EXEC:") || LIT("+ ray job submit") || LIT("ft ") || launch_may(t, e))
        return 0;
    for (p = t; p < e; p++) {                   /* the branches before _CKPT's */
        if (*p == 'W' ? LIT("Watchdog caught collective operation timeout")
                      : *p != 's' && *p != 'S' && event_trigger_at(p, e, t))
            return 0;
    }
    for (p = t; p < e; p++) {   /* (successfully saved|saving) checkpoint (?:from |at )?iteration\s+(\d+) */
        uchar *q;
        if (LIT("successfully saved checkpoint "))
            q = p + 30;
        else if (LIT("saving checkpoint "))
            q = p + 18;
        else
            continue;
        uchar *r = lit(q, e, "from iteration", 14) ? q + 14 : lit(q, e, "at iteration", 12) ? q + 12
                   : lit(q, e, "iteration", 9) ? q + 9 : NULL;
        if (r == NULL || r >= e || !SPACE(*r))
            continue;
        while (r < e && SPACE(*r))
            r++;
        uchar *d = r;
        while (r < e && DIGIT(*r))
            r++;
        if (r == d)
            continue;
        *saved = *p == 's' && p[1] == 'u';
        *d0 = d;
        *d1 = r;
        return 1;
    }
    return 0;
}

static int quiet_head(uchar *s, uchar *e, int why, Py_ssize_t key, long *h)
{
    if (why != 1 || key == KEY_PYTHON || (key == 0 && s < e && (*s == '(' || *s == 0x1b)))
        return 0;
    uchar *t = prefix_end(s, e, key);
    if (t == NULL || t >= e)
        return 0;
    long rep;
    e = dedup_end(t, e, &rep);  /* the message's end: where _strip_dedup cuts Ray's mark */
    if (e == NULL || e <= t)
        return 0;
    uchar c = *t;
    int blank = BLANK(c);       /* after a Ray prefix _peel leaves the blanks (a checkpoint line's) */
    if ((blank && key == 0) || c >= 0x80 || DIGIT(c) || c == '('
        || (c == '[' && (e - t < 2 || DIGIT(t[1]) || t[1] >= 0x80)))
        return 0;
    Py_ssize_t extra = 0;   /* bytes past the first of each character: str offsets are that less */
    for (uchar *q = printable_end(t, e); q < e; q = printable_end(q, e)) {   /* (why == 1 says nothing */
        int len = *q >= 0x80 ? utf8_len(q, e) : 0;                        /* past its anchor) */
        if (len == 0 || (len == 3 && q[0] == 0xEF && q[1] == 0xBF && q[2] == 0xBD))
            return 0;   /* a control byte, ESC, tab, '\r', U+FFFD or bad UTF-8: not as it is */
        extra += len - 1;
        q += len;
    }
    if (has_lit(t, e, &L_ACROSS) || has_lit(t, e, &L_RAY_NOTE) || metric_any_may(t, e))
        return 0;
    int cls = HEAD_QUIET, saved = 0;
    uchar *d0 = NULL, *d1 = NULL;
    if (blank || may_be_event(t, e) || launch_may(t, e)) {
        /* an event line, or one starting with blanks (_ARG_DUMP's, a traceback's): only a
         * checkpoint's, its text all ASCII (_CKPT's \s and \d), is taken */
        if (any_high(t, (size_t)(e - t)) || !ckpt_event(t, e, &saved, &d0, &d1))
            return 0;
        cls = HEAD_CKPT;
    } else if (other_format_may(t, e)) {
        return 0;
    }
    for (int i = 0; i < H_N; i++)
        h[i] = -1;
    if (cls == HEAD_CKPT) {     /* (a quiet head's H_KIND, H_KIND_END and H_ROLE are unused) */
        h[H_KIND] = (long)(d0 - s);
        h[H_KIND_END] = (long)(d1 - s);
        h[H_ROLE] = saved;
    }
    h[H_KEY] = (long)key;
    if (key > 0) {   /* the actor and pid as miles_head reads them (prefix_end checked their shape) */
        uchar *a = NULL, *pid = pid_span(s, e, key, &a);
        if (a != NULL) {
            h[H_ACTOR] = (long)(a - s);
            h[H_ACTOR_END] = (long)(pid - 5 - s);
        }
        h[H_PID] = (long)(pid - s);
        h[H_PID_END] = (long)(key - 1);
    }
    h[H_ID] = 0;     /* (classify: 1 when _rejoin certainly stops at the line before) */
    h[H_MSG] = (long)(t - s);
    h[H_MSG_END] = (long)(e - s - extra);
    h[H_END_B] = (long)(e - s);
    h[H_REPEATED] = rep;
    h[H_CLASS] = cls;
    return 1;
}

/* Whether _catch_up certainly finds a header in the line [s, e), a stamped noise line of the
 * source key of length key: _peel and _header read it as miles_head does (with a date
 * epoch_days takes: _fast_ts gives its time).  Then that line is all _catch_up reads, and the
 * fields of it that quiet_fold reads go to the quiet head's H_O_* (`into`). */
static int head_fits(const long *h, Py_ssize_t len);

static int own_header(uchar *s, uchar *e, Py_ssize_t key, long *into)
{
    long h[H_N], days;
    Seen seen = {NULL, NULL, NULL};
    if (!(source_key(s, e) == key && (seen.hend = header_end(s, e, key)) != NULL && miles_head(s, e, 1, key, &seen, h)
          && epoch_days(s + h[H_DATE], &days)))
        return 0;
    if (head_fits(h, e - s))            /* (else H_O_DATE stays -1: quiet_fold reads the line) */
        for (int k = 0; k < N_OWN_FIELDS; k++)
            into[OWN_FIELDS[k][1]] = h[OWN_FIELDS[k][0]];
    return 1;
}

/* Source keys named by small ids, given in classify's forward pass while a line's bytes are
 * still in cache (select_kept then walks back over ids, never over the buffer).  An open-
 * addressing table of (hash, length, copy of the key's bytes); past MAX_KEYS distinct keys in a
 * buffer a key gets no id (KEY_UNTRACKED) and its lines are all kept. */
#define KEY_UNTRACKED (-1)
#define KEY_SLOTS (2 * MAX_KEYS)   /* a power of two, at most half full */

typedef struct {
    struct { uint32_t hash; int id; Py_ssize_t len; size_t off; } slot[KEY_SLOTS];
    int n;                        /* ids given so far */
    unsigned char *arena;         /* the keys' bytes */
    size_t used, cap;
} KeyTable;

/* The id of the key [s, s+len), given one if new; KEY_UNTRACKED when the table is full (or
 * out of memory: keeping a line is always exact). */
static int key_new(KeyTable *t, unsigned i, uint32_t h, uchar *s, Py_ssize_t len);

static inline int key_id(KeyTable *t, uchar *s, Py_ssize_t len)
{
    uint32_t h = key_hash(s, len);
    for (unsigned i = h & (KEY_SLOTS - 1);; i = (i + 1) & (KEY_SLOTS - 1)) {
        if (t->slot[i].id < 0)   /* free: the key is new */
            return key_new(t, i, h, s, len);
        if (t->slot[i].hash == h && t->slot[i].len == len
            && same_bytes(t->arena + t->slot[i].off, s, len))
            return t->slot[i].id;
    }
}

/* key_id of a key not in the table: it takes the free slot i (out of line: once per key). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int key_new(KeyTable *t, unsigned i, uint32_t h, uchar *s, Py_ssize_t len)
{
    if (t->n == MAX_KEYS)
        return KEY_UNTRACKED;
    if (t->cap - t->used < (size_t)len) {
        size_t cap = 2 * t->cap + (size_t)len;
        unsigned char *more = PyMem_RawRealloc(t->arena, cap);
        if (more == NULL)
            return KEY_UNTRACKED;
        t->arena = more;
        t->cap = cap;
    }
    memcpy(t->arena + t->used, s, (size_t)len);
    t->slot[i].hash = h;
    t->slot[i].len = len;
    t->slot[i].off = t->used;
    t->slot[i].id = t->n++;
    t->used += (size_t)len;
    return t->slot[i].id;
}

/* Mark KEEP on the stamped noise lines the per-source deques (_remember_skipped: the newest
 * PER_KEY per key, read and emptied by a candidate of that key) can still show: walking back
 * from the end, the newest PER_KEY lines of each key before a non-plain candidate (it may read
 * every key) or the buffer's end.  A line older than that is pushed out of its deque before
 * anything reads it.  A plain candidate pops its own key's deque before it could read it
 * (_with_header, _feed_head: the pop comes first and nothing before it reads a deque) and opens
 * nothing, so the lines of its key before it, back to the previous non-plain candidate, are
 * dropped before anything reads them: its key's window is closed there (full), not restarted.
 * A quiet candidate (quiet_head: header-less noise for sure) reads its own key's deque (_catch_up)
 * and no other, newest first up to a line with a header: that key's window starts again there,
 * or, when its newest line has a header for sure (OWNED: classify's own_header), holds that line
 * alone (the quiet candidate pops the rest unread).
 * Kept besides (a superset is exact): lines whose key needs Python, and lines of keys without
 * an id (key_id): both have kid KEY_UNTRACKED. */
static void select_kept(Line *ln, Py_ssize_t n)
{
    unsigned gen[MAX_KEYS] = {0}, now = 1;   /* count[k] holds for the window `now` only */
    int count[MAX_KEYS];
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        Line *l = &ln[i];
        int k = l->kid;
        if (l->cls & CAND) {
            if ((l->cls & OWNED) && k >= 0) {
                gen[k] = now;            /* it reads its key's newest line alone, pops the rest */
                count[k] = PER_KEY - 1;
            } else if ((l->cls & QUIET) && k >= 0)
                gen[k] = 0;              /* it reads its own key's deque (_catch_up) and no other: */
            else if (!(l->cls & PLAIN))  /* a new window for that key alone */
                now++;                   /* it may read every key: a new window for all */
            else if (k >= 0) {
                gen[k] = now;            /* it pops its own key's deque unread: older lines of */
                count[k] = PER_KEY;      /* that key go before anything reads them */
            }
            continue;
        }
        if (!(l->cls & STAMPED))
            continue;
        if (k < 0) {                     /* its key needs Python, or has no id */
            l->cls |= KEEP;
            continue;
        }
        if (gen[k] != now) {
            gen[k] = now;
            count[k] = 0;
        }
        if (count[k] < PER_KEY) {
            count[k]++;
            l->cls |= KEEP;
        }
    }
}

/* ---- Scratch arrays reused from one block to the next ------------------------------------
 * A walk's Line array and heads live until its block is folded; fresh memory for each block
 * costs a page fault per 4 KiB written (about a tenth of the walk's time).  A freed array goes to
 * one of a few spare slots instead and a later walk takes it (a reader running ahead has a
 * few blocks' arrays out at once: one slot left them fresh for 14 of a 540 MB log's 65 blocks,
 * SPARES for 9).  Two threads may walk at once: a slot is only ever read and written by one
 * atomic exchange, so each array has one owner at a time.
 * Its size in bytes is kept in front of it; one too large (SPARE_MAX) is freed, not kept. */
#define SPARE_MAX ((size_t)16 << 20)
typedef union {
    size_t bytes;
    long double align_ld;   /* what follows keeps malloc's alignment */
    long long align_ll;
    void *align_p;
} ScratchHead;

#define SPARES 3   /* per kind: a block walked, one waiting, one folded (more only at the start) */
static void *spare_lines[SPARES], *spare_heads[SPARES];
#if defined(__GNUC__) || defined(__clang__)
#define SPARE_SWAP(slot, p) __atomic_exchange_n(slot, p, __ATOMIC_ACQ_REL)
static int spare_put(void **slot, void *p)
{
    void *none = NULL;
    return __atomic_compare_exchange_n(slot, &none, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
#else   /* no atomics known here: no reuse */
#define SPARE_SWAP(slot, p) (p)
static int spare_put(void **slot, void *p) { (void)slot; (void)p; return 0; }
#endif

/* An array of at least `bytes` (a spare of `slots` when one is large enough; one too small, a
 * short block's, is freed so that such arrays never hold the slots), or NULL. */
static void *scratch_take(void **slots, size_t bytes)
{
    for (int i = 0; i < SPARES; i++) {
        ScratchHead *sp = SPARE_SWAP(&slots[i], NULL);
        if (sp != NULL && sp->bytes >= bytes)
            return sp + 1;
        PyMem_RawFree(sp);
    }
    if (bytes > SIZE_MAX - sizeof(ScratchHead))
        return NULL;
    ScratchHead *sp = PyMem_RawMalloc(sizeof(ScratchHead) + bytes);
    if (sp == NULL)
        return NULL;
    sp->bytes = bytes;
    return sp + 1;
}

/* The bytes the array p (from scratch_take) holds. */
static size_t scratch_bytes(void *p)
{
    return ((ScratchHead *)p - 1)->bytes;
}

/* The array p made `bytes` long (contents kept), or NULL (p still valid). */
static void *scratch_grow(void *p, size_t bytes)
{
    if (bytes > SIZE_MAX - sizeof(ScratchHead))
        return NULL;
    ScratchHead *sp = PyMem_RawRealloc((ScratchHead *)p - 1, sizeof(ScratchHead) + bytes);
    if (sp == NULL)
        return NULL;
    sp->bytes = bytes;
    return sp + 1;
}

/* Give the array p (or NULL) back: it goes to an empty slot of `slots`, or is freed. */
static void scratch_give(void **slots, void *p)
{
    if (p == NULL)
        return;
    ScratchHead *sp = (ScratchHead *)p - 1;
    if (sp->bytes <= SPARE_MAX)
        for (int i = 0; i < SPARES; i++)
            if (spare_put(&slots[i], sp))
                return;
    PyMem_RawFree(sp);
}

/* The Miles header fields of the candidates marked HEAD, in order (miles_head runs in the
 * forward pass, while the line is still in cache). */
typedef struct {
    long (*h)[H_N];
    Py_ssize_t n, cap, guess;   /* guess: entries to start with (pages are touched as written) */
} Heads;

/* Room for one more entry in hd; 0 when out of memory. */
static int heads_room(Heads *hd)
{
    if (hd->n < hd->cap)
        return 1;
    long (*more)[H_N];
    if (hd->h == NULL)
        more = scratch_take(spare_heads, (size_t)(hd->guess > 256 ? hd->guess : 256) * sizeof(*more));
    else
        more = scratch_grow(hd->h, 2 * (size_t)hd->cap * sizeof(*more));
    if (more == NULL)
        return 0;
    hd->h = more;
    hd->cap = (Py_ssize_t)(scratch_bytes(more) / sizeof(*more));
    return 1;
}

#define LINE_GUESS 128   /* bytes per line, fewer than in any log seen: the Line array's first size */

/* Split and classify; returns the number of lines, or -1 when out of memory (*out and hd's
 * entries freed).  `untimed`: no noise line is STAMPED (none kept, none the newest stamped of its
 * run), for a read whose items' times nobody reads (LineParser.noise_times). */
static Py_ssize_t classify(uchar *buf, Py_ssize_t size, Line **out, Heads *hd, int untimed)
{
    Py_ssize_t cap = size / LINE_GUESS + 1024, n = 0;   /* log lines are longer: no regrowth */
    Line *ln = scratch_take(spare_lines, (size_t)cap * sizeof(Line));
    uchar *end = buf + size, *s = buf;
    hd->guess = size / (4 * LINE_GUESS);   /* a candidate in four lines, no regrowth */
    KeyTable keys;
    if (ln == NULL)
        return -1;
    cap = (Py_ssize_t)(scratch_bytes(ln) / sizeof(Line));
    for (int i = 0; i < KEY_SLOTS; i++)
        keys.slot[i].id = -1;
    keys.n = 0;
    keys.used = 0;
    keys.cap = 4096;
    keys.arena = PyMem_RawMalloc(keys.cap);   /* never NULL while in use: no NULL + 0 */
    if (keys.arena == NULL)
        goto oom;
    /* A quiet head's H_OWN: per key id the newest stamped line since its deque was last popped
     * (own_at), good while own_era[kid] == era.  The era moves on at a line that may pop or push
     * any key's deque: a candidate of no known key (neither plain nor quiet) or a stamped line
     * whose key needs Python (its deque is found in Python). */
    Py_ssize_t own_at[MAX_KEYS];
    unsigned own_era[MAX_KEYS], era = 1;
    memset(own_era, 0, sizeof(own_era));
    for (;;) {
        uchar *e;
        if (n == cap) {
            Line *more = scratch_grow(ln, 2 * (size_t)cap * sizeof(Line));
            if (more == NULL)
                goto oom;
            ln = more;
            cap *= 2;
        }
        Line *l = &ln[n];
        l->start = s - buf;
        l->kid = KEY_UNTRACKED;
        int why = is_cand(s, end, &e);
        if (why) {
            l->cls = why == 1 ? CAND | ANCHOR : CAND;
            Py_ssize_t key = source_key(s, e);
            int sure = why == 1 && key != KEY_PYTHON;   /* (plain_cand's and miles_head's test) */
            Seen seen = {sure ? header_end(s, e, key) : NULL, NULL, NULL};
            if (!heads_room(hd))
                goto oom;
            long *h = hd->h[hd->n];
            int head = miles_head(s, e, why, key, &seen, h);
            /* plain (plain_rest), or noise for sure: like a plain line that pops its own key's
             * deque and opens nothing (_header_fields), whatever plain_rest would say of it */
            if ((head && h[H_CLASS] == HEAD_NOISE) || (sure && plain_rest(s, e, key, &seen))) {
                l->cls |= PLAIN;
                l->kid = key_id(&keys, s, key);
            }
            if (head) {
                l->cls |= HEAD;
                if (l->cls & PLAIN)
                    h[H_KID] = l->kid;
                if (h[H_CLASS] == HEAD_NOISE)
                    h[H_ERR] = has(s + h[H_MSG], e, "Error", 5);
                hd->n++;
            } else if (seen.hend == NULL && quiet_head(s, e, why, key, hd->h[hd->n])) {
                l->cls |= HEAD | QUIET;
                l->kid = key_id(&keys, s, key);
                hd->h[hd->n][H_KID] = l->kid;
                /* _rejoin's newest noise line is the line before (unless nothing is in the run):
                 * every line but one feed() may find unreadable is pushed or clears it; with
                 * another source's pid there, _rejoin gives up at once (LineParser._feed_quiet) */
                if (key > 0 && n > 0 && (!(ln[n - 1].cls & CAND) || (ln[n - 1].cls & HEAD))
                    && pid_differs(buf + ln[n - 1].start, s - 1, s, e, key))
                    hd->h[hd->n][H_ID] = 1;
                if (l->kid >= 0 && own_era[l->kid] == era      /* what _catch_up finds newest, */
                    && own_header(buf + ln[own_at[l->kid]].start, buf + ln[own_at[l->kid] + 1].start - 1, key,
                                  hd->h[hd->n])) {
                    hd->h[hd->n][H_OWN] = own_at[l->kid];      /* with a header: all it reads */
                    l->cls |= OWNED;
                }
                hd->n++;
            }
            if (l->kid >= 0 && (l->cls & (PLAIN | QUIET)))
                own_era[l->kid] = 0;   /* it pops its own deque (_head_seen, _catch_up) */
            else
                era++;
        } else if (!untimed && stamped(s, e)) {
            l->cls = STAMPED;
            Py_ssize_t key = source_key(s, e);
            if (key != KEY_PYTHON)
                l->kid = key_id(&keys, s, key);
            if (l->kid >= 0) {
                own_at[l->kid] = n;
                own_era[l->kid] = era;
            } else {
                era++;
            }
        } else {
            l->cls = NOISE;
        }
        n++;
        if (e == end)
            break;
        s = e + 1;
    }
    PyMem_RawFree(keys.arena);
    select_kept(ln, n);
    *out = ln;
    return n;
oom:
    scratch_give(spare_lines, ln);
    PyMem_RawFree(keys.arena);
    scratch_give(spare_heads, hd->h);
    hd->h = NULL;
    return -1;
}

/* A pair of a common metric dict as read without the GIL (dict_pairs): its key's bytes and
 * whether they are ASCII, its value as an int, a double, or text that PyOS_string_to_double
 * reads under the GIL (quick_double could not); offsets from the dict's '{'. */
enum { PV_INT, PV_DOUBLE, PV_TEXT };
typedef struct {
    Py_ssize_t k, kn, v, vn;
    int ascii, kind;
    union {
        long long i;
        double d;
    } x;
} DPair;

/* Pairs in a growable array (PyMem_Raw*: grown in the reader thread without the GIL); `local`:
 * p is the caller's own first buffer, not to be freed. */
typedef struct {
    DPair *p;
    Py_ssize_t n, cap;
    int local;
} DPairs;

static int dict_pairs(uchar *p, uchar *e, DPairs *t);
static void dpairs_free(DPairs *t)
{
    if (!t->local)
        PyMem_RawFree(t->p);
    memset(t, 0, sizeof(*t));
}

#define DP_NONE (-1)     /* the dict is the Python reader's (ready_head: None) */
#define DP_UNREAD (-2)   /* not read ahead: ready_head reads it (dict_pairs), or dict_of when out of memory */

/* Whether the reader thread reads the metric dicts' pairs ahead (read_ahead, in scan_raw's walk)
 * or leaves them to the parsing thread (ready_head reads each as its head is made).  Why not
 * always ahead: where the reader thread (read + walk) is the slower of the two, the parser waited
 * for it (~0.17 s of a 540 MB export); the dicts were a sixth of the walk.  Where the parser is
 * the slower one, read_scan's `pairs` reads them ahead for one block (files.ScannedReader asks
 * for it while its consumer is busy).  The same pairs either way (set_pairs_ahead makes every
 * walk read them: the tests compare both). */
static int pairs_ahead = 0;

static PyObject *ready_head(uchar *s, const long *h, const DPair *pairs, Py_ssize_t at, Py_ssize_t np, int pack,
                            uint64_t kh);

/* The Python form of the head h of the line s: ready (ready_head) or a tuple of its H_N ints. */
static PyObject *head_object(uchar *s, const long *h, const DPair *pairs, Py_ssize_t at, Py_ssize_t np, int pack,
                             uint64_t kh)
{
    PyObject *t = ready_head(s, h, pairs, at, np, pack, kh);
    if (t != Py_None)
        return t;
    Py_DECREF(t);
    t = PyTuple_New(H_N);
    for (int k = 0; t != NULL && k < H_N; k++) {
        PyObject *v = PyLong_FromLong(h[k]);
        if (v == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    if (t != NULL)
        PyObject_GC_UnTrack(t);   /* ints only: no cycle, nothing for the GC to visit */
    return t;
}


/* classify() the buffer into arrays: the candidates, the kept lines, per candidate (and the end)
 * the newest stamped noise line of the run before it, per candidate its head's fields or NULL,
 * and every line's offset (n + 1 of them, into a new bytes object *starts).  The line count, or
 * -1 with an error set (*sc's arrays freed). */
typedef struct {
    Line *ln;
    Heads hd;
    Py_ssize_t nc, nk, *cand, *keep, *lasts;
    long **head;
    DPairs dp;               /* the metric heads' dicts read ahead, and per head (by its index */
    Py_ssize_t *dp_at, *dp_n;   /* in hd) its first pair and count, or DP_NONE / DP_UNREAD */
    uint64_t *dp_hash;          /* and a hash of its names' bytes in order (pairs_hash) */
    int untimed;                /* classify's: the noise lines' times not kept */
} Scanned;

static void scanned_free(Scanned *sc)
{
    scratch_give(spare_lines, sc->ln);
    scratch_give(spare_heads, sc->hd.h);
    PyMem_RawFree(sc->cand);
    PyMem_RawFree(sc->keep);
    PyMem_RawFree(sc->lasts);
    PyMem_RawFree(sc->head);
    dpairs_free(&sc->dp);
    PyMem_RawFree(sc->dp_at);
    PyMem_RawFree(sc->dp_n);
    PyMem_RawFree(sc->dp_hash);
    memset(sc, 0, sizeof(*sc));
}

/* A hash of the pairs' names, their bytes in order (0 never: it says "none"): packed_of_pairs finds
 * a record's shape by it, so the reader thread's pass over the names spares the parser its own. */
static uint64_t pairs_hash(uchar *d, const DPair *pv, Py_ssize_t n)
{
    /* Each name by its length and last 8 bytes (names share their heads, `rollout/...`), not
     * byte by byte: shape_by_bytes compares every name whole anyway, so a collision costs only a
     * lookup by str; a byte loop here was 2 % of a big log's parsing thread. */
    uint64_t x = 1469598103934665603ull ^ (uint64_t)n;
    for (Py_ssize_t j = 0; j < n; j++) {
        uchar *k = d + pv[j].k;
        Py_ssize_t kn = pv[j].kn;
        uint64_t tail = 0;
        memcpy(&tail, kn >= 8 ? k + kn - 8 : k, (size_t)(kn >= 8 ? 8 : kn));
        x = (x ^ (uint64_t)kn) * 1099511628211ull;
        x = (x ^ tail) * 0x9E3779B97F4A7C15ull;
        x ^= x >> 29;
    }
    return x | 1;
}

/* The dicts of the metric heads read into pairs (the reader thread, without the GIL): what
 * dict_of reads under the GIL, so that fold only makes the objects.  Out of memory: the heads
 * left DP_UNREAD (or no arrays at all), dict_of reads them then. */
static void read_ahead(uchar *buf, const Line *ln, Py_ssize_t n, Scanned *sc)
{
    Heads *hd = &sc->hd;
    if (hd->n == 0)
        return;
    sc->dp_at = PyMem_RawMalloc((size_t)hd->n * sizeof(Py_ssize_t));
    sc->dp_n = PyMem_RawMalloc((size_t)hd->n * sizeof(Py_ssize_t));
    sc->dp_hash = PyMem_RawMalloc((size_t)hd->n * sizeof(uint64_t));
    if (sc->dp_at == NULL || sc->dp_n == NULL || sc->dp_hash == NULL) {
        PyMem_RawFree(sc->dp_at);
        PyMem_RawFree(sc->dp_n);
        PyMem_RawFree(sc->dp_hash);
        sc->dp_at = sc->dp_n = NULL;
        sc->dp_hash = NULL;
        return;
    }
    for (Py_ssize_t k = 0; k < hd->n; k++) {   /* (each HEAD line has its head: all are set below) */
        sc->dp_at[k] = DP_UNREAD;
        sc->dp_n[k] = 0;
        sc->dp_hash[k] = 0;
    }
    Py_ssize_t hk = 0;
    for (Py_ssize_t i = 0; i < n && hk < hd->n; i++) {
        if (!(ln[i].cls & HEAD))
            continue;
        const long *h = hd->h[hk];
        Py_ssize_t at = sc->dp.n, got = 0;
        if (h[H_CLASS] == HEAD_METRIC) {
            uchar *s = buf + ln[i].start;
            int r = dict_pairs(s + h[H_DICT], s + h[H_END_B], &sc->dp);
            got = r > 0 ? sc->dp.n - at : 0;
            if (r <= 0) {
                sc->dp.n = at;
                at = r == 0 ? DP_NONE : DP_UNREAD;
            }
        } else {
            at = DP_UNREAD;
        }
        sc->dp_at[hk] = at;
        sc->dp_n[hk] = got;
        if (got > 0)
            sc->dp_hash[hk] = pairs_hash(buf + ln[i].start + h[H_DICT], sc->dp.p + at, got);
        hk++;
    }
}

/* The walk's lists as arrays (cand, keep, lasts, head) and every line's offset into *st (n + 1
 * of them; PyMem_RawFree it): 0, or -1 when out of memory (no error set: no GIL is held). */
static int index_arrays(Scanned *sc, Py_ssize_t n, Py_ssize_t len, int64_t **st_out)
{
    Py_ssize_t nc = 0, nk = 0, hk = 0, last = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        nc += (sc->ln[i].cls & CAND) != 0;
        nk += (sc->ln[i].cls & (CAND | KEEP)) == KEEP;
    }
    sc->cand = PyMem_RawMalloc((size_t)(nc + 1) * sizeof(Py_ssize_t));
    sc->keep = PyMem_RawMalloc((size_t)(nk + 1) * sizeof(Py_ssize_t));
    sc->lasts = PyMem_RawMalloc((size_t)(nc + 1) * sizeof(Py_ssize_t));
    sc->head = PyMem_RawMalloc((size_t)(nc + 1) * sizeof(long *));
    int64_t *st = n < PY_SSIZE_T_MAX / 8 - 1 ? PyMem_RawMalloc((size_t)(n + 1) * sizeof(int64_t)) : NULL;
    if (sc->cand == NULL || sc->keep == NULL || sc->lasts == NULL || sc->head == NULL || st == NULL) {
        PyMem_RawFree(st);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Line *l = &sc->ln[i];
        st[i] = (int64_t)l->start;
        if (l->cls & CAND) {   /* lasts[k]: the run before cands[k] */
            sc->lasts[sc->nc] = last;
            last = -1;
            sc->head[sc->nc] = l->cls & HEAD ? sc->hd.h[hk++] : NULL;
            sc->cand[sc->nc++] = i;
        } else {
            if (l->cls & STAMPED)
                last = i;
            if (l->cls & KEEP)
                sc->keep[sc->nk++] = i;
        }
    }
    sc->lasts[sc->nc] = last;   /* and the end's */
    st[n] = (int64_t)len + 1;   /* line i is buf[st[i]:st[i+1]-1] */
    *st_out = st;
    return 0;
}

typedef struct FoldOut FoldOut;
static int fold_walk_arrays(uchar *buf, Py_ssize_t len, Py_ssize_t n, const int64_t *st, const Scanned *sc, FoldOut *fo);
static void fold_out_free(FoldOut *o);

/* scan_arrays' walk of buf[:len], run without the GIL (the caller let go of it): the line count
 * (-1: out of memory), every line's offset in a new *st (NULL on failure), *oom set when the
 * arrays or the fold could not be made. */
static Py_ssize_t walk_nogil(uchar *buf, Py_ssize_t len, Scanned *sc, int64_t **st, FoldOut *fo, int pairs,
                             int *oom)
{
    *st = NULL;
    *oom = 0;
    Py_ssize_t n = classify(buf, len, &sc->ln, &sc->hd, sc->untimed);
    if (n >= 0) {
        if (pairs_ahead || pairs)
            read_ahead(buf, sc->ln, n, sc);
        *oom = index_arrays(sc, n, len, st) < 0;
        if (!*oom && fo != NULL)
            *oom = fold_walk_arrays(buf, len, n, *st, sc, fo) < 0;
    }
    return n;
}

/* scan_arrays' end, with the GIL again: *starts made from st (freed here); n, or -1 with an
 * error set (*sc's arrays and the fold freed). */
static Py_ssize_t walk_done(Py_ssize_t n, int oom, int64_t *st, Scanned *sc, PyObject **starts, FoldOut *fo)
{
    *starts = NULL;
    if (n < 0) {
        sc->ln = NULL;
        sc->hd.h = NULL;
        PyErr_NoMemory();
        return -1;
    }
    if (!oom)
        *starts = PyBytes_FromStringAndSize((const char *)st, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    PyMem_RawFree(st);
    if (oom || *starts == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        if (fo != NULL)
            fold_out_free(fo);
        scanned_free(sc);
        return -1;
    }
    return n;
}

/* The walk of the buffer (classify, the dicts read ahead, the lists as arrays and, given `fo`,
 * their fold: all without the GIL, in one stretch) into *sc, every line's offset into a new
 * bytes object *starts.  The line count, or -1 with an error set (*sc's arrays freed). */
static Py_ssize_t scan_arrays(Py_buffer *view, Scanned *sc, PyObject **starts, FoldOut *fo, int untimed)
{
    Py_ssize_t n;
    int64_t *st = NULL;
    int oom = 0;
    memset(sc, 0, sizeof(*sc));
    sc->untimed = untimed;
    Py_BEGIN_ALLOW_THREADS
    n = walk_nogil((uchar *)view->buf, view->len, sc, &st, fo, 0, &oom);
    Py_END_ALLOW_THREADS
    return walk_done(n, oom, st, sc, starts, fo);
}

/* The Python form of candidate k's head (head_object, with its dict read ahead), or None. */
static PyObject *head_at(uchar *buf, const Scanned *sc, Py_ssize_t k, int pack)
{
    const long *h = sc->head[k];
    if (h == NULL)
        return Py_NewRef(Py_None);
    Py_ssize_t hk = (const long (*)[H_N])h - (const long (*)[H_N])sc->hd.h;   /* its index in hd */
    int ahead = sc->dp_at != NULL && hk >= 0 && hk < sc->hd.n;
    return head_object(buf + sc->ln[sc->cand[k]].start, h, sc->dp.p, ahead ? sc->dp_at[hk] : DP_UNREAD,
                       ahead ? sc->dp_n[hk] : 0, pack, ahead ? sc->dp_hash[hk] : 0);
}

/* A list of the n indices in a (NULL with an error set). */
static PyObject *index_list(const Py_ssize_t *a, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list != NULL && i < n; i++) {
        PyObject *v = PyLong_FromSsize_t(a[i]);
        if (v == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, v);
    }
    return list;
}

static PyObject *scan(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    Scanned sc;
    PyObject *starts, *heads = NULL, *res = NULL;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t n = scan_arrays(&view, &sc, &starts, NULL, 0);
    if (n < 0)
        goto done;
    heads = PyList_New(sc.nc);   /* heads[k]: the header fields of cands[k], or None */
    for (Py_ssize_t k = 0; heads != NULL && k < sc.nc; k++) {
        PyObject *t = head_at((uchar *)view.buf, &sc, k, 0);
        if (t == NULL)
            Py_CLEAR(heads);
        else
            PyList_SET_ITEM(heads, k, t);
    }
    if (heads != NULL)
        res = Py_BuildValue("(nNNONN)", n, index_list(sc.cand, sc.nc), index_list(sc.keep, sc.nk), starts, heads,
                            index_list(sc.lasts, sc.nc + 1));
    Py_DECREF(starts);
    scanned_free(&sc);
done:
    PyBuffer_Release(&view);
    return res;
}

/* The int of `-?digits` [v, e), at most 18 characters (int() of it). */
static long long small_int(uchar *v, uchar *e)
{
    int neg = *v == '-';
    long long n = 0;
    for (v += neg; v < e; v++)
        n = n * 10 + (*v - '0');
    return neg ? -n : n;
}

#if defined(__SIZEOF_INT128__)
/* The double nearest to M / 10**j (round half to even), for 0 < M < 2**64 and 0 <= j <= 27:
 * M / 10**j = (M * 2**s / 5**j) * 2**-(s+j), the quotient taken exactly in 128-bit integers (5**j
 * < 2**64) with its remainder as the sticky bit, so the rounding is exact.  Every such value is
 * a normal double (1e-27 .. 2**64), so ldexp of the rounded mantissa is exact too. */
static double exact_quotient(uint64_t m, int j)
{
    uint64_t five = 1;
    for (int i = 0; i < j; i++)
        five *= 5;
    int s = 64 + __builtin_clzll(m);     /* the numerator's top bit at 127 */
    unsigned __int128 num = (unsigned __int128)m << s;
    unsigned __int128 q = num / five;
    int sticky = num % five != 0;
    uint64_t hi = (uint64_t)(q >> 64);   /* q >= 2**127 / 5**27 > 2**64: hi is not 0 */
    int bits = 128 - __builtin_clzll(hi);   /* bit length of q: 65 .. 128 */
    int shift = bits - 53;               /* >= 12 */
    uint64_t mant = (uint64_t)(q >> shift);
    unsigned __int128 rest = q & (((unsigned __int128)1 << shift) - 1);
    unsigned __int128 half = (unsigned __int128)1 << (shift - 1);
    if (rest > half || (rest == half && (sticky || (mant & 1))))
        mant++;                          /* 2**53 at most: still exact */
    return ldexp((double)mant, shift - s - j);
}
#endif

/* float() of a fast_value number [v, e) where it can be had exactly without strtod: all its
 * digits make an integer 0 <= M < 10**19 and it is M * 10**k with
 *   |k| <= 22 and M <= 2**53: 10**|k| is exact and one IEEE multiplication or division rounds
 *             correctly (strtod's own fast path), or
 *   -27 <= k <= 0: exact_quotient (128-bit integers).
 * 0 for any other number (PyOS_string_to_double then reads it), and where doubles are evaluated
 * in a wider precision (x87: double rounding). */
static int quick_double(uchar *v, uchar *e, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
                                 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int neg = v < e && *v == '-';
    uint64_t m = 0;
    int digits = 0;       /* digits in m from the first non-zero one */
    long k = 0;
    uchar *p = v + neg;
    for (; p < e && DIGIT(*p); p++) {
        if (m || *p != '0')
            digits++;
        if (digits > 19)
            return 0;
        m = m * 10 + (uint64_t)(*p - '0');
    }
    if (p < e && *p == '.')
        for (p++; p < e && DIGIT(*p); p++) {
            if (m || *p != '0')
                digits++;
            if (digits > 19)
                return 0;
            m = m * 10 + (uint64_t)(*p - '0');
            k--;
        }
    if (p < e && (*p == 'e' || *p == 'E')) {
        int xneg = 0;
        long x = 0;
        if (++p < e && (*p == '-' || *p == '+'))
            xneg = *p++ == '-';
        uchar *xd = p;
        for (; p < e && DIGIT(*p); p++) {
            if (p - xd >= 4)
                return 0;
            x = x * 10 + (*p - '0');
        }
        k += xneg ? -x : x;
    }
    if (p != e || k < -400)
        return 0;
    double d;
    if (m == 0)
        d = 0.0;
    else if (m <= ((uint64_t)1 << 53) && k >= 0 && k <= 22)
        d = (double)m * p10[k];
    else if (m <= ((uint64_t)1 << 53) && k < 0 && k >= -22)
        d = (double)m / p10[-k];
#if defined(__SIZEOF_INT128__)
    else if (k <= 0 && k >= -27)
        d = exact_quotient(m, (int)-k);
#endif
    else
        return 0;
    *out = neg ? -d : d;
    return 1;
#else
    (void)v;
    (void)e;
    (void)out;
    return 0;
#endif
}

/* A dict key [k, e) as str: ASCII keys from a small table of the ones seen before (a run logs the
 * same names every record: no decoding, and their hash is kept), others decoded.  NULL with no
 * error set when the text is not UTF-8.  The slot is chosen from the length and the last bytes
 * (names share their heads); a slot holding another key is simply replaced. */
#define DICT_KEY_SLOTS 1024
#define KEY_CACHED_MAX 96
static PyObject *key_cache[DICT_KEY_SLOTS];

static PyObject *dict_key(uchar *k, uchar *e, int ascii)
{
    Py_ssize_t n = e - k;
    if (!ascii || n > KEY_CACHED_MAX) {
        PyObject *key = PyUnicode_DecodeUTF8((const char *)k, n, "strict");
        if (key == NULL)
            PyErr_Clear();
        return key;
    }
    uint32_t hash = 2166136261u ^ (uint32_t)n;
    for (uchar *q = n > 12 ? e - 12 : k; q < e; q++)
        hash = (hash ^ *q) * 16777619u;
    PyObject **slot = &key_cache[(hash ^ (hash >> 16)) & (DICT_KEY_SLOTS - 1)];
    PyObject *key = *slot;
    if (key != NULL && PyUnicode_GET_LENGTH(key) == n && memcmp(PyUnicode_DATA(key), k, (size_t)n) == 0) {
        Py_INCREF(key);
        return key;
    }
    key = PyUnicode_DecodeASCII((const char *)k, n, NULL);
    if (key == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_INCREF(key);
    Py_XSETREF(*slot, key);
    return key;
}

/* One value of a fast dict at v (values._FAST_VALUE, as fast_value reads it) read without the
 * GIL into pv (kind and value; its text's span is the caller's), *end set past it: 1, or 0 when
 * read_dict must leave the dict to the Python reader (not such a number, nan/inf, an int past
 * 18 characters, text too long for value_object's buffer). */
static int value_parse(uchar *v, uchar *e, uchar **end, DPair *pv)
{
    uchar *p = fast_value(v, e);
    if (p == NULL || p == v)
        return 0;
    *end = p;
    Py_ssize_t vlen = p - v;
    if (p[-1] == 'n' || p[-1] == 'f')
        return 0;   /* nan, inf */
    int isint = 1;
    for (uchar *q = v + (*v == '-'); q < p; q++)
        if (!DIGIT(*q)) {
            isint = 0;
            break;
        }
    if (isint) {
        if (vlen > 18)
            return 0;
        pv->kind = PV_INT;
        pv->x.i = small_int(v, p);   /* at most 18 characters: fits */
        return 1;
    }
    if (quick_double(v, p, &pv->x.d)) {
        pv->kind = PV_DOUBLE;
        return 1;
    }
    if (vlen >= 64)
        return 0;
    pv->kind = PV_TEXT;
    return 1;
}

/* The int or float of a pair's value (its text at d + pv->v), a new reference; NULL with no error
 * set when read_dict must leave the dict to the Python reader (a float strtod makes infinite),
 * NULL with an error set when out of memory. */
static PyObject *value_object(uchar *d, const DPair *pv)
{
    if (pv->kind == PV_INT)
        return PyLong_FromLongLong(pv->x.i);
    if (pv->kind == PV_DOUBLE)
        return PyFloat_FromDouble(pv->x.d);
    char buf[64];
    if (pv->vn >= (Py_ssize_t)sizeof(buf))
        return NULL;
    memcpy(buf, d + pv->v, (size_t)pv->vn);
    buf[pv->vn] = 0;
    double x = PyOS_string_to_double(buf, NULL, NULL);
    if (x == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (!isfinite(x))
        return NULL;
    return PyFloat_FromDouble(x);
}

/* read_dict(text: str) -> dict | None: values.parse_dict for the common shape, `{'k': number,
 * ...}` as _FAST_DICT fullmatches it (fast_dict), read in the same one pass straight into a
 * dict of ints and floats (float()'s exact value: quick_double, else PyOS_string_to_double,
 * which float() itself uses).  None -- the caller takes the Python reader -- for anything else:
 * nan/inf, a value that is not finite as a float, an int past 18 characters, a key that is not
 * UTF-8 text, trailing text but ASCII blanks.  Reads are bounded by the text's own length. */
static PyObject *dict_of(uchar *p, uchar *e);

static PyObject *read_dict(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_ssize_t len;
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "read_dict() takes a str");
        return NULL;
    }
    const char *text = PyUnicode_AsUTF8AndSize(arg, &len);
    if (text == NULL) {   /* lone surrogates: not ours */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return dict_of((uchar *)text, (uchar *)text + len);
}

/* Room for one more pair in t (PyMem_Raw*: no GIL needed); 0 when out of memory. */
static int pairs_room(DPairs *t)
{
    if (t->n < t->cap)
        return 1;
    Py_ssize_t cap = t->cap ? 2 * t->cap : 256;
    DPair *more = t->local ? PyMem_RawMalloc((size_t)cap * sizeof(DPair))
                           : PyMem_RawRealloc(t->p, (size_t)cap * sizeof(DPair));
    if (more == NULL)
        return 0;
    if (t->local && t->n)
        memcpy(more, t->p, (size_t)t->n * sizeof(DPair));
    t->p = more;
    t->cap = cap;
    t->local = 0;
    return 1;
}

/* read_dict's reading of the UTF-8 text [p, e), without the GIL: its pairs appended to t, in
 * order: 1; 0 when the text is the Python reader's (the pairs appended so far are the caller's
 * to drop); -1 when out of memory.  Reads are bounded by [p, e). */
static int dict_pairs(uchar *p, uchar *e, DPairs *t)
{
    uchar *d = p;
    if (p >= e || *p != '{')
        return 0;
    p++;
    if (p < e && *p == '}')
        goto closed;
    for (;;) {   /* '[^'\\]*': value, then `}` or `, ` */
        if (p >= e || *p != '\'')
            return 0;
        uchar *k = ++p;   /* the key runs to the next quote; a backslash in it: the Python reader */
        p = memchr(k, '\'', (size_t)(e - k));
        if (p == NULL || memchr(k, '\\', (size_t)(p - k)) != NULL)
            return 0;
        if (e - p < 3 || p[0] != '\'' || p[1] != ':' || p[2] != ' ')
            return 0;
        if (!pairs_room(t))
            return -1;
        DPair *pv = &t->p[t->n];
        uchar *v = p + 3, *ve;
        if (!value_parse(v, e, &ve, pv))
            return 0;
        pv->k = k - d;
        pv->kn = p - k;
        pv->ascii = !any_high(k, (size_t)(p - k));
        pv->v = v - d;
        pv->vn = ve - v;
        p = ve;
        if (p >= e || (*p != '}' && (e - p < 2 || p[0] != ',' || p[1] != ' ')))
            return 0;
        t->n++;
        if (*p == '}')
            break;
        p += 2;   /* `, ` */
    }
closed:
    for (p++; p < e; p++)
        if (*p != ' ' && *p != '\t' && *p != '\v' && *p != '\f')
            return 0;
    return 1;
}

/* The dict of n pairs read from the dict text at d (dict_pairs): a new dict, None (a new
 * reference) for the Python reader (a key that is not UTF-8 text, a float strtod makes
 * infinite), or NULL with an error set (out of memory). */
static PyObject *dict_of_pairs(uchar *d, const DPair *pv, Py_ssize_t n)
{
    PyObject *out = _PyDict_NewPresized(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < n; j++, pv++) {
        PyObject *val = value_object(d, pv);
        if (val == NULL)
            goto fallback;
        PyObject *key = dict_key(d + pv->k, d + pv->k + pv->kn, pv->ascii);
        if (key == NULL) {
            Py_DECREF(val);
            goto fallback;
        }
        int bad = PyDict_SetItem(out, key, val) < 0;
        Py_DECREF(key);
        Py_DECREF(val);
        if (bad)
            goto error;
    }
    return out;
fallback:
    if (PyErr_Occurred())
        goto error;
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    Py_DECREF(out);
    return NULL;
}

/* ---- Packed: a record's values without a dict (whole-file reads) -----------------------------
 *
 * check/export/calibrate and the dashboard's history fill read a record's values only to write
 * them into the store's columns; no view reads the record itself.  For them (LineParser.packed)
 * a common rollout, perf or step record comes with its values as a Packed instead of a dict of
 * Python ints and floats: its names as a shared tuple (one per shape: the same names in the same
 * order) and its numbers as C values, the dict a record would have had made only where Python
 * reads it (Packed.dict(): the same keys, the same ints and floats).  store_run writes a Packed's
 * numbers straight into the columns (a doubled step line's are never made at all).  A record
 * that can't be packed (a key that is not short ASCII, a name twice, more than PACK_MAX values)
 * gets its dict as before. */
#define PACK_MAX 64
#define SHAPE_SLOTS 512

typedef struct {
    union {
        long long i;
        double d;
    } x;
    int is_int;
} PVal;

typedef struct {
    PyObject_VAR_HEAD
    PyObject *shape;     /* tuple of the names, in order (shared by records of that shape) */
    PVal v[1];
} PackedObject;

static PyTypeObject Packed_Type;
#define Packed_Check(o) Py_IS_TYPE(o, &Packed_Type)

static PyObject *shape_cache[SHAPE_SLOTS];

/* The shape tuple of the n names (new references in keys, left to the caller), from the cache
 * when its names are these very objects; NULL (no error) when a name comes twice, NULL with an
 * error set when out of memory. */
static PyObject *shape_of(PyObject *const *keys, Py_ssize_t n)
{
    uint64_t hash = (uint64_t)n * 0x9E3779B97F4A7C15ull;
    for (Py_ssize_t j = 0; j < n; j++)
        hash = (hash ^ (uint64_t)(uintptr_t)keys[j]) * 0x100000001B3ull;
    PyObject **slot = &shape_cache[(hash ^ (hash >> 31)) & (SHAPE_SLOTS - 1)];
    PyObject *t = *slot;
    if (t != NULL && PyTuple_GET_SIZE(t) == n) {
        Py_ssize_t j = 0;
        while (j < n && PyTuple_GET_ITEM(t, j) == keys[j])
            j++;
        if (j == n)    /* the tuple holds its names: these objects are those names */
            return Py_NewRef(t);
    }
    /* a new shape: its names told apart by their text (equal names may be other objects) */
    for (Py_ssize_t a = 0; a < n; a++)
        for (Py_ssize_t b = a + 1; b < n; b++)
            if (keys[a] == keys[b] || (PyUnicode_GET_LENGTH(keys[a]) == PyUnicode_GET_LENGTH(keys[b])
                                       && PyUnicode_KIND(keys[a]) == PyUnicode_KIND(keys[b])
                                       && memcmp(PyUnicode_DATA(keys[a]), PyUnicode_DATA(keys[b]),
                                                 (size_t)PyUnicode_GET_LENGTH(keys[a]) * PyUnicode_KIND(keys[a])) == 0))
                return NULL;
    t = PyTuple_New(n);
    if (t == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < n; j++)
        PyTuple_SET_ITEM(t, j, Py_NewRef(keys[j]));
    PyObject_GC_UnTrack(t);   /* strs only */
    Py_XSETREF(*slot, Py_NewRef(t));
    return t;
}

/* A Packed of the shape and values (shape: a new reference, stolen), or NULL. */
static PyObject *packed_new(PyObject *shape, const PVal *vals, Py_ssize_t n)
{
    PackedObject *p = PyObject_NewVar(PackedObject, &Packed_Type, n);
    if (p == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    p->shape = shape;
    memcpy(p->v, vals, (size_t)n * sizeof(PVal));
    return (PyObject *)p;
}

/* Whether a record of this kind may come packed: rollout, perf, step (what the store files). */
static int packed_kind(uchar *k, Py_ssize_t n)
{
    return (n == 7 && memcmp(k, "rollout", 7) == 0) || (n == 4 && (memcmp(k, "perf", 4) == 0 || memcmp(k, "step", 4) == 0));
}

/* The pairs read ahead as a Packed (dict_of_pairs' values, without the dict); None (a new
 * reference) where dict_of_pairs gives None (the Python reader's); NULL with no error set when
 * the record is not to be packed (dict_of_pairs then), NULL with an error set when out of memory. */
/* The shapes last found by their names' bytes (pairs_hash): a record of a shape seen before
 * takes its tuple after a comparison of its names' bytes, no str looked up per name. */
static PyObject *bytes_shapes[SHAPE_SLOTS];

static PyObject *shape_by_bytes(uchar *d, const DPair *pv, Py_ssize_t n, uint64_t kh)
{
    PyObject *t = bytes_shapes[(kh ^ (kh >> 29)) & (SHAPE_SLOTS - 1)];
    if (t == NULL || PyTuple_GET_SIZE(t) != n)
        return NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *k = PyTuple_GET_ITEM(t, j);
        if (!PyUnicode_IS_COMPACT_ASCII(k) || PyUnicode_GET_LENGTH(k) != pv[j].kn
            || memcmp(PyUnicode_DATA(k), d + pv[j].k, (size_t)pv[j].kn) != 0)
            return NULL;
    }
    return Py_NewRef(t);
}

static PyObject *packed_of_pairs(uchar *d, const DPair *pv, Py_ssize_t n, uint64_t kh)
{
    if (n <= 0 || n > PACK_MAX)
        return NULL;
    for (Py_ssize_t j = 0; j < n; j++)
        if (!pv[j].ascii || pv[j].kn > KEY_CACHED_MAX)
            return NULL;
    PVal vals[PACK_MAX];
    for (Py_ssize_t j = 0; j < n; j++) {
        const DPair *q = pv + j;
        vals[j].is_int = q->kind == PV_INT;
        if (q->kind == PV_INT) {
            vals[j].x.i = q->x.i;
        } else if (q->kind == PV_DOUBLE) {
            vals[j].x.d = q->x.d;
        } else {   /* value_object's text path: float()'s own reader */
            PyObject *f = value_object(d, q);
            if (f == NULL)
                return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
            vals[j].x.d = PyFloat_AS_DOUBLE(f);
            Py_DECREF(f);
        }
    }
    PyObject *shape = kh ? shape_by_bytes(d, pv, n, kh) : NULL;
    if (shape != NULL)
        return packed_new(shape, vals, n);
    PyObject *keys[PACK_MAX];
    Py_ssize_t made = 0;
    PyObject *res = NULL;
    for (; made < n; made++)
        if ((keys[made] = dict_key(d + pv[made].k, d + pv[made].k + pv[made].kn, 1)) == NULL)
            goto done;   /* (dict_key's own failure: no error set, the dict's path then) */
    shape = shape_of(keys, n);
    if (shape != NULL && kh)
        Py_XSETREF(bytes_shapes[(kh ^ (kh >> 29)) & (SHAPE_SLOTS - 1)], Py_NewRef(shape));
    if (shape != NULL)
        res = packed_new(shape, vals, n);
done:
    for (Py_ssize_t j = 0; j < made; j++)
        Py_DECREF(keys[j]);
    return res;
}

/* The dict the record would have had: its names, each value an int or a float. */
static PyObject *packed_dict(PyObject *self)
{
    PackedObject *p = (PackedObject *)self;
    Py_ssize_t n = Py_SIZE(p);
    PyObject *out = _PyDict_NewPresized(n);
    for (Py_ssize_t j = 0; out != NULL && j < n; j++) {
        PyObject *v = p->v[j].is_int ? PyLong_FromLongLong(p->v[j].x.i) : PyFloat_FromDouble(p->v[j].x.d);
        if (v == NULL || PyDict_SetItem(out, PyTuple_GET_ITEM(p->shape, j), v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(v);
    }
    return out;
}

static PyObject *packed_dict_method(PyObject *self, PyObject *Py_UNUSED(arg)) { return packed_dict(self); }

/* float(i) as PyLong_AsDouble gives it (past 2**53 through it, so the rounding is its own). */
static double packed_int_double(long long i)
{
    if (i <= (1LL << 53) && i >= -(1LL << 53))
        return (double)i;
    PyObject *v = PyLong_FromLongLong(i);
    if (v == NULL)
        return -1.0;
    double d = PyLong_AsDouble(v);
    Py_DECREF(v);
    return d;
}

static PyObject *packed_shape(PyObject *self, void *Py_UNUSED(c)) { return Py_NewRef(((PackedObject *)self)->shape); }

static Py_ssize_t packed_len(PyObject *self) { return Py_SIZE(self); }

static PyObject *packed_repr(PyObject *self)
{
    PyObject *d = packed_dict(self);
    if (d == NULL)
        return NULL;
    PyObject *r = PyUnicode_FromFormat("Packed(%R)", d);
    Py_DECREF(d);
    return r;
}

static void packed_dealloc(PyObject *self)
{
    Py_XDECREF(((PackedObject *)self)->shape);
    PyObject_Free(self);
}

static PyMethodDef packed_methods[] = {
    {"dict", packed_dict_method, METH_NOARGS, "dict() -> the record's values as the dict it would have had."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef packed_getset[] = {
    {"shape", packed_shape, NULL, "the names, in order (one tuple per shape)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PySequenceMethods packed_seq = {.sq_length = packed_len};
static PyTypeObject Packed_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grpo_tui.lines._scan.Packed",
    .tp_basicsize = offsetof(PackedObject, v),
    .tp_itemsize = sizeof(PVal),
    .tp_dealloc = packed_dealloc,
    .tp_repr = packed_repr,
    .tp_as_sequence = &packed_seq,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A metric record's values without a dict (see _scan.c: Packed).",
    .tp_methods = packed_methods,
    .tp_getset = packed_getset,
};

/* pack(dict) for the tests: a dict of exact ints (within long long) and finite floats, its keys
 * exact strs, as the Packed the scanner would make of it; None for anything else. */
static PyObject *pack_dict(PyObject *Py_UNUSED(module), PyObject *d)
{
    if (!PyDict_CheckExact(d) || PyDict_GET_SIZE(d) == 0 || PyDict_GET_SIZE(d) > PACK_MAX)
        Py_RETURN_NONE;
    PyObject *keys[PACK_MAX], *k, *v;
    PVal vals[PACK_MAX];
    Py_ssize_t pos = 0, n = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k))
            Py_RETURN_NONE;
        if (PyLong_CheckExact(v)) {
            int over = 0;
            vals[n].x.i = PyLong_AsLongLongAndOverflow(v, &over);
            if (over || (vals[n].x.i == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            vals[n].is_int = 1;
        } else if (PyFloat_CheckExact(v) && isfinite(PyFloat_AS_DOUBLE(v))) {
            vals[n].x.d = PyFloat_AS_DOUBLE(v);
            vals[n].is_int = 0;
        } else {
            Py_RETURN_NONE;
        }
        keys[n++] = k;
    }
    PyObject *shape = shape_of(keys, n);
    if (shape == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    return packed_new(shape, vals, n);
}

/* read_dict on the UTF-8 text [p, e): a new dict, None (new reference) for the Python reader,
 * or NULL with an error set (out of memory). */
static PyObject *dict_of(uchar *p, uchar *e)
{
    DPair first[64];
    DPairs t = {first, 0, 64, 1};
    int r = dict_pairs(p, e, &t);
    PyObject *got = r > 0 ? dict_of_pairs(p, t.p, t.n) : r == 0 ? Py_NewRef(Py_None) : PyErr_NoMemory();
    dpairs_free(&t);
    return got;
}

/* -- ready heads: the values Python would slice and read from a head, made here ---------------
 *
 * LineParser._feed_head decodes a candidate's whole line to slice a few small strings out of it
 * (its key, pid, time text, names) and, for a metric record, to hand its dict to read_dict; for
 * an `ft ` line it runs _FT_FIELD over the message.  For the two common kinds the scanner makes
 * those values itself from the bytes (ready_head), and fold makes the ones its runs leave
 * behind (fold_info), so Python only stores them.  Each is what the Python slice gives: the
 * header's text is ASCII up to the message (miles_head), the message valid UTF-8. */

/* Small ASCII strings repeat (keys, pids, names): a str for each from a small table of the ones
 * made before (a slot holding another text is simply replaced), so they are neither decoded nor
 * hashed again. */
#define STR_SLOTS 512
#define STR_CACHED_MAX 64
static PyObject *str_cache[STR_SLOTS];

/* The str of the ASCII bytes [p, p+n) (a new reference), or NULL with an error set. */
static PyObject *ascii_str(uchar *p, Py_ssize_t n)
{
    if (n > STR_CACHED_MAX)
        return PyUnicode_DecodeASCII((const char *)p, n, NULL);
    uint32_t hash = 2166136261u ^ (uint32_t)n;
    for (Py_ssize_t i = n > 12 ? n - 12 : 0; i < n; i++)   /* the length and the last bytes pick */
        hash = (hash ^ p[i]) * 16777619u;                  /* the slot (the compare is whole) */
    PyObject **slot = &str_cache[(hash ^ (hash >> 15)) & (STR_SLOTS - 1)];
    PyObject *str = *slot;
    if (str != NULL && PyUnicode_GET_LENGTH(str) == n && memcmp(PyUnicode_DATA(str), p, (size_t)n) == 0)
        return Py_NewRef(str);
    str = PyUnicode_DecodeASCII((const char *)p, n, NULL);
    if (str == NULL)
        return NULL;
    Py_XSETREF(*slot, Py_NewRef(str));
    return str;
}

/* ascii_str of the field [h[a], h[b]) of the line s, or None when h[a] is -1. */
static PyObject *field_str(uchar *s, const long *h, int a, int b)
{
    return h[a] < 0 ? Py_NewRef(Py_None) : ascii_str(s + h[a], h[b] - h[a]);
}

/* The head's pid as _peel gives it: `N`, or `N@X` for `pid=N, ip=X` (prefix_end checked that
 * shape: the first ',' starts ", ip="), or None. */
static PyObject *pid_str(uchar *s, const long *h)
{
    if (h[H_PID] < 0)
        return Py_NewRef(Py_None);
    uchar *p = s + h[H_PID], *e = s + h[H_PID_END], *c = p;
    while (c < e && *c != ',')   /* a few digits: inline, no library call */
        c++;
    if (c == e || e - c < 5)
        return ascii_str(p, e - p);
    char buf[KEY_CHARS + 8];
    Py_ssize_t n = c - p, m = e - (c + 5);
    if (n + 1 + m > (Py_ssize_t)sizeof(buf))
        return PyUnicode_FromFormat("%.*s@%.*s", (int)n, (const char *)p, (int)m, (const char *)c + 5);
    memcpy(buf, p, (size_t)n);
    buf[n] = '@';
    memcpy(buf + n + 1, c + 5, (size_t)m);
    return PyUnicode_DecodeASCII(buf, n + 1 + m, "strict");
}

/* The str of the n bytes at p, made directly where they are all ASCII (PyUnicode_DecodeASCII's
 * general path was ~2 % of a big export's parsing for one short time text per record). */
static PyObject *short_ascii(const char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if ((uchar)p[i] >= 0x80)
            return PyUnicode_DecodeASCII(p, n, NULL);
    PyObject *u = PyUnicode_New(n, 127);
    if (u != NULL)
        memcpy(PyUnicode_DATA(u), p, (size_t)n);
    return u;
}

/* The head's time text (`date time.ms` as _header_fields writes it) and ts (_fast_ts). */
static PyObject *head_time_text(uchar *s, const long *h)
{
    if (h[H_TIME_END] >= 0)
        return short_ascii((const char *)s + h[H_DATE], h[H_TIME_END] - h[H_DATE]);
    char t[23];   /* `,ms`: written `.ms` */
    memcpy(t, s + h[H_DATE], 19);
    t[19] = '.';
    memcpy(t + 20, s + h[H_MS], 3);
    return short_ascii(t, 23);
}

static double head_ts(const long *h)
{
    return (double)(h[H_DAYS] * 86400L + h[H_SOD]) + (double)h[H_MSV] / 1000.0;
}

/* A tuple of the n new references in items (stolen), or NULL when one is NULL (all released). */
static PyObject *tuple_of(PyObject **items, Py_ssize_t n)
{
    PyObject *t = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (items[i] == NULL)
            goto fail;
    t = PyTuple_New(n);
    if (t == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(t, i, items[i]);
    return t;
fail:
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    return NULL;
}

/* str(v).strip('"') of the ASCII bytes [v, e). */
static PyObject *unquoted(uchar *v, uchar *e)
{
    while (v < e && *v == '"')
        v++;
    while (e > v && e[-1] == '"')
        e--;
    return ascii_str(v, e - v);
}

#define FT_MAX_FIELDS 64   /* more fields than this: _ft_event reads the line */

/* ft_event's keys and event names, made once (interned): PyDict_SetItemString made and interned
 * a new str for each key of each event, two events per rollout (~2 % of a big export's parsing). */
enum { FT_S_ATTEMPT, FT_S_ROLLOUT, FT_S_OK, FT_S_ELAPSED, FT_S_FAIL, FT_S_RETRY, FT_S_WSTART, FT_S_WEND, FT_S_N };
static PyObject *ft_s[FT_S_N];

static int ft_names(void)
{
    static const char *const text[FT_S_N] = {"attempt", "rollout", "ok", "elapsed_s", "ft_fail", "train_retry",
                                             "weight_update_start", "weight_update_end"};
    for (int k = 0; k < FT_S_N; k++)
        if (ft_s[k] == NULL && (ft_s[k] = PyUnicode_InternFromString(text[k])) == NULL)
            return -1;
    return 0;
}

/* ft_event's decision on the ASCII message [s, e), nothing made: its kind, FT_NONE where it gives
 * None (no event, or more than FT_MAX_FIELDS fields: Python reads the line). */
static int ft_event_kind(uchar *s, uchar *e)
{
    FtWant want = {{NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}};
    FtField x;
    long long attempt = 0;
    int n = 0;
    for (uchar *p = s; ft_next(&p, s, e, &x); ) {
        if (n++ == FT_MAX_FIELDS)
            return FT_NONE;
        ft_want(&want, &x);
    }
    return ft_kind(&want, &attempt);
}

/* What LineParser._header_fields keeps as the source's last error for the message [m, e): the
 * message when it holds "Error", else None (a new reference; NULL with an error set). */
static PyObject *error_text(uchar *m, uchar *e)
{
    return has(m, e, "Error", 5) ? PyUnicode_DecodeASCII((const char *)m, e - m, NULL) : Py_NewRef(Py_None);
}

/* LineParser._ft_event of the ASCII message [s, e) as (kind, data); None (a new reference)
 * when it gives None or has more than FT_MAX_FIELDS fields (then Python reads it); NULL with
 * an error set. */
static PyObject *ft_event(uchar *s, uchar *e)
{
    FtField f[FT_MAX_FIELDS];
    FtWant want = {{NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}};
    int n = 0;
    FtField x;
    for (uchar *p = s; ft_next(&p, s, e, &x); ) {
        if (n == FT_MAX_FIELDS)
            Py_RETURN_NONE;
        f[n++] = x;
        ft_want(&want, &x);
    }
    long long attempt = 0;
    int kind = ft_kind(&want, &attempt);
    if (kind == FT_NONE)
        Py_RETURN_NONE;
    PyObject *data = ft_names() < 0 ? NULL : PyDict_New();
    if (data == NULL)
        return NULL;
    PyObject *name;
    if (kind == FT_FAIL) {   /* every field, its last value without its quotes, in first-seen order */
        name = ft_s[FT_S_FAIL];
        for (int i = 0; i < n; i++) {
            PyObject *k = ascii_str(f[i].w, f[i].we - f[i].w), *v = k ? unquoted(f[i].v, f[i].ve) : NULL;
            int bad = v == NULL || PyDict_SetItem(data, k, v) < 0;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (bad)
                goto error;
        }
    } else if (kind == FT_TRAIN_RETRY) {
        name = ft_s[FT_S_RETRY];
        PyObject *a = PyLong_FromLongLong(attempt);
        PyObject *r = want.rollout.v ? ascii_str(want.rollout.v, want.rollout.n) : Py_NewRef(Py_None);
        int bad = a == NULL || r == NULL || PyDict_SetItem(data, ft_s[FT_S_ATTEMPT], a) < 0
                  || PyDict_SetItem(data, ft_s[FT_S_ROLLOUT], r) < 0;
        Py_XDECREF(a);
        Py_XDECREF(r);
        if (bad)
            goto error;
    } else {   /* one per rollout: the few fields a marker needs */
        name = ft_s[kind == FT_WEIGHT_START ? FT_S_WSTART : FT_S_WEND];
        const Span *keep[] = {&want.rollout, &want.ok, &want.elapsed};
        PyObject *keys[] = {ft_s[FT_S_ROLLOUT], ft_s[FT_S_OK], ft_s[FT_S_ELAPSED]};
        for (int i = 0; i < 3; i++) {
            if (keep[i]->v == NULL)
                continue;
            PyObject *v = ascii_str(keep[i]->v, keep[i]->n);
            int bad = v == NULL || PyDict_SetItem(data, keys[i], v) < 0;
            Py_XDECREF(v);
            if (bad)
                goto error;
        }
    }
    PyObject *items[2] = {Py_NewRef(name), data};
    return tuple_of(items, 2);
error:
    Py_DECREF(data);
    return NULL;
}

/* The ready form of a head (see LineParser._feed_ready), a new reference; None (a new
 * reference) when Python reads it from its offsets; NULL with an error set.
 *   metric: (key, pid, time_text, ts, role, kind, n, proc, file, actor, repeated, values)
 *   ft:     (key, pid, time_text, ts, kind, data, text, error_or_None) */
/* The record classes ready heads are made as (records.MetricRecord and records.Event, given by
 * set_types()): each field a slot, written here as the dataclass __init__ would write it, at a
 * tenth of its cost.  Until set_types() succeeds no head comes ready (the offsets path reads
 * them). */
enum { R_KIND, R_N, R_METRICS, R_ROLE, R_TIME, R_TS, R_PROC, R_SOURCE, R_ACTOR, R_LINE_NO, R_NONFINITE,
       R_ABRIDGED, R_CUT, R_REPEATED, R_FIELDS };
enum { E_KIND, E_TIME, E_TS, E_LINE_NO, E_TEXT, E_DATA, E_LINES, E_FIELDS };
static const char *const RECORD_FIELDS[R_FIELDS] = {"kind", "n", "metrics", "role", "time", "ts", "proc", "source",
                                                    "actor", "line_no", "nonfinite", "abridged", "cut", "repeated"};
static const char *const EVENT_FIELDS[E_FIELDS] = {"kind", "time", "ts", "line_no", "text", "data", "lines"};
typedef struct {
    PyTypeObject *type;
    Py_ssize_t off[R_FIELDS];
} SlotType;
static SlotType record_type, event_type;

/* The slot offsets of cls, whose __slots__ must be exactly `names` (n of them), into *t. */
static int slot_type(PyObject *cls, const char *const *names, int n, SlotType *t)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "set_types(): not a class");
        return -1;
    }
    PyObject *slots = PyObject_GetAttrString(cls, "__slots__");
    if (slots == NULL) {   /* no slots: refused below, as any other class of other fields */
        PyErr_Clear();
        slots = Py_NewRef(Py_None);
    }
    int ok = PyTuple_Check(slots) && PyTuple_GET_SIZE(slots) == n;
    for (int i = 0; ok && i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(slots, i);
        ok = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, names[i]) == 0;
    }
    Py_DECREF(slots);
    PyTypeObject *type = (PyTypeObject *)cls;
    /* a plain class of its own slots: made by tp_alloc alone, nothing else to set up */
    if (!ok || type->tp_dictoffset != 0 || type->tp_weaklistoffset != 0 || type->tp_itemsize != 0
        || type->tp_base != &PyBaseObject_Type || !(type->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        PyErr_SetString(PyExc_TypeError, "set_types(): a class of other fields than _scan.c writes");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttrString(cls, names[i]);
        if (d == NULL)
            return -1;
        PyMemberDef *m = Py_IS_TYPE(d, &PyMemberDescr_Type) && PyDescr_TYPE(d) == type
                         ? ((PyMemberDescrObject *)d)->d_member : NULL;
        int good = m != NULL && m->type == T_OBJECT_EX && !(m->flags & READONLY)
                   && m->offset >= (Py_ssize_t)sizeof(PyObject)
                   && m->offset + (Py_ssize_t)sizeof(PyObject *) <= type->tp_basicsize;
        for (int k = 0; good && k < i; k++)
            good = t->off[k] != m->offset;   /* each field its own slot (no aliased descriptor) */
        if (good)
            t->off[i] = m->offset;
        Py_DECREF(d);
        if (!good) {
            PyErr_SetString(PyExc_TypeError, "set_types(): a field is not a slot of its own");
            return -1;
        }
    }
    Py_XSETREF(t->type, (PyTypeObject *)Py_NewRef(cls));
    return 0;
}

static PyObject *set_types(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *rec, *ev;
    if (!PyArg_ParseTuple(args, "OO", &rec, &ev))
        return NULL;
    Py_CLEAR(record_type.type);
    Py_CLEAR(event_type.type);
    if (slot_type(rec, RECORD_FIELDS, R_FIELDS, &record_type) < 0
        || slot_type(ev, EVENT_FIELDS, E_FIELDS, &event_type) < 0) {
        Py_CLEAR(record_type.type);
        Py_CLEAR(event_type.type);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* An instance of t with its n slots set to items (stolen; NULL if any is NULL, all released). */
static PyObject *slot_object(const SlotType *t, PyObject **items, int n)
{
    PyObject *o = NULL;
    for (int i = 0; i < n; i++)
        if (items[i] == NULL)
            goto fail;
    o = t->type->tp_alloc(t->type, 0);
    if (o == NULL)
        goto fail;
    for (int i = 0; i < n; i++)
        *(PyObject **)((char *)o + t->off[i]) = items[i];
    return o;
fail:
    for (int i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    return NULL;
}

/* A head the parser only stores: a metric record, (key, pid, MetricRecord), or an ft event,
 * (key, pid, error message or None, Event), their line_no left 0 for LineParser._feed_ready to
 * set; None when Python must read it. */
static PyObject *dict_of_pairs(uchar *d, const DPair *pv, Py_ssize_t n);

static PyObject *ready_head(uchar *s, const long *h, const DPair *pairs, Py_ssize_t at, Py_ssize_t np, int pack,
                            uint64_t kh)
{
    long cls = h[H_CLASS];
    if ((cls != HEAD_METRIC && cls != HEAD_FT) || record_type.type == NULL)
        Py_RETURN_NONE;
    uchar *m = s + h[H_MSG], *e = s + h[H_END_B];
    PyObject *got;
    if (cls == HEAD_METRIC) {
        DPair first[128];
        DPairs now = {first, 0, 128, 1};   /* the pairs read here (pairs_ahead off) */
        if (at == DP_UNREAD) {
            int r = dict_pairs(s + h[H_DICT], e, &now);
            if (r > 0) {
                pairs = now.p;
                at = 0;
                np = now.n;
                kh = pairs_hash(s + h[H_DICT], now.p, now.n);
            } else if (r == 0) {
                at = DP_NONE;
            }                                   /* (out of memory: dict_of below) */
        }
        got = NULL;
        if (pack && at >= 0 && packed_kind(s + h[H_KIND], h[H_KIND_END] - h[H_KIND]))
            got = packed_of_pairs(s + h[H_DICT], pairs + at, np, kh);   /* NULL: packed it is not */
        if (got == NULL && !PyErr_Occurred())
            got = at == DP_NONE ? Py_NewRef(Py_None)       /* the Python reader's */
                  : at >= 0 ? dict_of_pairs(s + h[H_DICT], pairs + at, np)
                  : dict_of(s + h[H_DICT], e);
        dpairs_free(&now);
        if (got == NULL)
            return NULL;
    } else {
        for (uchar *p = m; p < e; p++)
            if (*p >= 0x80)
                Py_RETURN_NONE;   /* _ft_event reads it (\w and \S in Unicode) */
        got = ft_event(m, e);
    }
    if (got == NULL || got == Py_None)
        return got;
    PyObject *time = head_time_text(s, h), *ts = PyFloat_FromDouble(head_ts(h));
    PyObject *key = ascii_str(s, h[H_KEY]), *pid = pid_str(s, h);
    if (cls == HEAD_METRIC) {
        PyObject *f[R_FIELDS] = {
            [R_KIND] = ascii_str(s + h[H_KIND], h[H_KIND_END] - h[H_KIND]),
            [R_N] = PyLong_FromLong(h[H_ID]),
            [R_METRICS] = got,
            [R_ROLE] = h[H_ROLE] >= 0 ? ascii_str(s + h[H_ROLE], h[H_KIND] - 1 - h[H_ROLE])
                                      : PyUnicode_FromStringAndSize(NULL, 0),
            [R_TIME] = time,
            [R_TS] = ts,
            [R_PROC] = field_str(s, h, H_PROC, H_PROC_END),
            [R_SOURCE] = field_str(s, h, H_FILE, H_FILE_END),
            [R_ACTOR] = field_str(s, h, H_ACTOR, H_ACTOR_END),
            [R_LINE_NO] = PyLong_FromLong(0),
            [R_NONFINITE] = PyDict_New(),
            [R_ABRIDGED] = Py_NewRef(Py_False),
            [R_CUT] = Py_NewRef(Py_False),
            [R_REPEATED] = PyLong_FromLong(h[H_REPEATED]),
        };
        PyObject *items[3] = {key, pid, slot_object(&record_type, f, R_FIELDS)};
        return tuple_of(items, 3);
    }
    uchar *ts0 = m, *te = e;   /* msg.strip(): the message holds no control byte but tabs */
    while (ts0 < te && SPACE(*ts0))
        ts0++;
    while (te > ts0 && SPACE(te[-1]))
        te--;
    PyObject *f[E_FIELDS] = {
        [E_KIND] = Py_NewRef(PyTuple_GET_ITEM(got, 0)),
        [E_TIME] = time,
        [E_TS] = ts,
        [E_LINE_NO] = PyLong_FromLong(0),
        [E_TEXT] = PyUnicode_DecodeASCII((const char *)ts0, te - ts0, NULL),
        [E_DATA] = Py_NewRef(PyTuple_GET_ITEM(got, 1)),
        [E_LINES] = PyList_New(0),
    };
    PyObject *items[4] = {key, pid, error_text(m, e), slot_object(&event_type, f, E_FIELDS)};
    Py_DECREF(got);
    return tuple_of(items, 4);
}

/* ---- ready_run (Fold.run): LineParser._feed_scanned's loop over what Python only stores -------
 *
 * Between two lines Python must read (a candidate without a ready head), a block is noise runs
 * and ready heads taking turns, and _feed_scanned's loop over them only keeps books: counts,
 * the newest time, each source's newest time and error, the skipped lines per source, the
 * lazily read stamped line and noise tail, the metric names, the items in order.  ready_run
 * walks that stretch as the loop would (the same steps, in the same order: its lists are the
 * loop's own) and hands back where it stopped and the books' last values; the dicts, the names
 * set and `out` it changes in place.  It stops before anything Python decides: a candidate
 * without a ready head, a record whose names would pass MAX_NAMES, a short run while a noise
 * tail is still unread (the loop reads that tail first).  Its caller has no record open and a
 * first time (the loop's own condition for taking a run whole); heads are read as set_types()
 * made them, anything else stops the walk.  Failing part-way (out of memory, lists that disagree:
 * it raises) leaves the dicts, the set and `out` changed and the rest of the books not: the
 * parser is then as broken as after any exception in the loop it replaces. */

#define SLOT(o, t, f) (*(PyObject **)((char *)(o) + (t)->off[f]))

/* Emptied deques of the skipped lines, made new again by the next source that keeps a line.
 * Why: a quiet head or a record pops its source's deque and the source's next noise line makes
 * a new one through new_deque (functools.partial(deque, maxlen=...)): ~58,000 times in a 540 MB
 * log, 7 % of Fold.run.  Only a deque nothing else holds, of the very type and maxlen new_deque
 * makes (learnt from the first one it made: dq_maker), is kept; one taken from here is empty, as
 * a new one is. */
#define DQ_POOL 32
static PyObject *dq_pool[DQ_POOL];
static int dq_n;
static PyObject *dq_maker;          /* the new_deque the pool's deques stand for (a strong ref) */
static PyTypeObject *dq_type;
static Py_ssize_t dq_maxlen;        /* its deques' maxlen (-1: None) */
static PyObject *dq_clear_s, *dq_maxlen_s;

static Py_ssize_t dq_maxlen_of(PyObject *dq)   /* -1 (None), -2 (not known: an error cleared) */
{
    PyObject *m = PyObject_GetAttr(dq, dq_maxlen_s);
    Py_ssize_t n = m == NULL ? -2 : m == Py_None ? -1 : PyLong_Check(m) ? PyLong_AsSsize_t(m) : -2;
    Py_XDECREF(m);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        n = -2;
    }
    return n;
}

/* A new deque as new_deque() makes it (or an emptied one of the same kind): a new reference. */
static PyObject *dq_new(PyObject *new_deque)
{
    if (new_deque == dq_maker && dq_n > 0)
        return dq_pool[--dq_n];
    PyObject *dq = PyObject_CallNoArgs(new_deque);
    if (dq == NULL || new_deque == dq_maker)
        return dq;
    if ((dq_clear_s == NULL && (dq_clear_s = PyUnicode_InternFromString("clear")) == NULL)
        || (dq_maxlen_s == NULL && (dq_maxlen_s = PyUnicode_InternFromString("maxlen")) == NULL)) {
        Py_DECREF(dq);
        return NULL;
    }
    while (dq_n > 0)                /* another maker: what the pool holds is not its kind */
        Py_DECREF(dq_pool[--dq_n]);
    Py_XSETREF(dq_maker, Py_NewRef(new_deque));
    dq_type = Py_TYPE(dq);
    dq_maxlen = dq_maxlen_of(dq);
    return dq;
}

/* del skipped[key] (`must`: a KeyError where it is not there, as PyDict_DelItem; else as
 * skipped.pop(key, None)), its deque kept in the pool when nothing else holds it: 0, or -1 with
 * an error set. */
static int skipped_drop(PyObject *skipped, PyObject *key, int must)
{
    PyObject *dq = PyDict_GetItemWithError(skipped, key);   /* borrowed */
    if (dq == NULL)
        return PyErr_Occurred() ? -1 : must ? PyDict_DelItem(skipped, key) : 0;
    Py_INCREF(dq);
    if (PyDict_DelItem(skipped, key) < 0) {
        Py_DECREF(dq);
        return -1;
    }
    if (Py_REFCNT(dq) == 1 && dq_maker != NULL && Py_IS_TYPE(dq, dq_type) && dq_n < DQ_POOL
        && dq_maxlen != -2 && dq_maxlen_of(dq) == dq_maxlen) {
        PyObject *r = PyObject_CallMethodNoArgs(dq, dq_clear_s);
        if (r != NULL) {
            Py_DECREF(r);
            dq_pool[dq_n++] = dq;   /* (the pool takes our reference) */
            return 0;
        }
        PyErr_Clear();
    }
    Py_DECREF(dq);
    return 0;
}

/* *newest = ts when it is None or ts > it (LineParser.last_ts): 0, or -1 with an error set. */
static int newer_time(PyObject **newest, PyObject *ts)
{
    int later = *newest == Py_None ? 1
                : PyFloat_CheckExact(ts) && PyFloat_CheckExact(*newest)   /* (as float's own >: NaN is never later) */
                ? PyFloat_AS_DOUBLE(ts) > PyFloat_AS_DOUBLE(*newest)
                : PyObject_RichCompareBool(ts, *newest, Py_GT);
    if (later > 0)
        Py_SETREF(*newest, Py_NewRef(ts));
    return later < 0 ? -1 : 0;
}

/* A kept line (key or None, raw) appended to its source's deque in `skipped` (made by new_deque,
 * its key by source_key when the scanner left it None). */
static int keep_line(PyObject *pair, PyObject *skipped, PyObject *source_key, PyObject *new_deque)
{
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_ValueError, "Fold.run(): not a kept line");
        return -1;
    }
    PyObject *key = PyTuple_GET_ITEM(pair, 0), *raw = PyTuple_GET_ITEM(pair, 1);
    key = key == Py_None ? PyObject_CallOneArg(source_key, raw) : Py_NewRef(key);
    if (key == NULL)
        return -1;
    PyObject *dq = PyDict_GetItemWithError(skipped, key);   /* borrowed */
    if (dq == NULL) {
        if (PyErr_Occurred() || (dq = dq_new(new_deque)) == NULL) {
            Py_DECREF(key);
            return -1;
        }
        int bad = PyDict_SetItem(skipped, key, dq) < 0;
        Py_DECREF(dq);           /* the dict holds it */
        if (bad) {
            Py_DECREF(key);
            return -1;
        }
    }
    Py_DECREF(key);
    static PyObject *append;   /* interned once: a method call by vectorcall, not by format */
    if (append == NULL && (append = PyUnicode_InternFromString("append")) == NULL)
        return -1;
    PyObject *r = PyObject_CallMethodOneArg(dq, append, raw);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* Whether the record's names may go into `names` (the MAX_NAMES cap as _feed_ready checks it),
 * added there if so: 1, 0 (Python caps the record), -1 with an error set. */
static int take_names(PyObject *names, PyObject *values, Py_ssize_t max_names)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    if (PySet_GET_SIZE(names) + PyDict_GET_SIZE(values) > max_names) {
        while (PyDict_Next(values, &pos, &k, &v)) {
            int has = PySet_Contains(names, k);
            if (has <= 0)
                return has;
        }
        return 1;
    }
    while (PyDict_Next(values, &pos, &k, &v))
        if (PySet_Add(names, k) < 0)
            return -1;
    return 1;
}

/* take_names for a Packed record's names (its shape).  A shape once wholly in `names` stays
 * so (the set only grows), so the last few such shapes are remembered with the set they are in
 * (both held, so neither address can be another object's while remembered): a record of one of
 * them changes nothing and costs no lookup per name. */
#define KNOWN_SHAPES 16
static PyObject *known_in, *known_shapes[KNOWN_SHAPES];
static int known_next;

static int take_shape(PyObject *names, PyObject *shape, Py_ssize_t max_names)
{
    if (known_in == names) {
        for (int q = 0; q < KNOWN_SHAPES; q++)
            if (known_shapes[q] == shape)
                return 1;
    } else {
        for (int q = 0; q < KNOWN_SHAPES; q++)
            Py_CLEAR(known_shapes[q]);
        Py_XSETREF(known_in, Py_NewRef(names));
        known_next = 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(shape);
    if (PySet_GET_SIZE(names) + n > max_names) {
        for (Py_ssize_t j = 0; j < n; j++) {
            int has = PySet_Contains(names, PyTuple_GET_ITEM(shape, j));
            if (has <= 0)
                return has;
        }
    } else {
        for (Py_ssize_t j = 0; j < n; j++)
            if (PySet_Add(names, PyTuple_GET_ITEM(shape, j)) < 0)
                return -1;
    }
    Py_XSETREF(known_shapes[known_next], Py_NewRef(shape));
    known_next = (known_next + 1) % KNOWN_SHAPES;
    return 1;
}

/* For the tests: whether scan() takes the line (no newline) as a plain candidate (see plain_cand). */
static PyObject *plain(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uchar *s = (uchar *)view.buf, *e = s + view.len, *le;
    int why = memchr(s, '\n', (size_t)view.len) ? 0 : is_cand(s, e, &le);
    Seen seen = {NULL, NULL, NULL};
    int res = why && plain_cand(s, e, why, source_key(s, e), &seen);
    PyBuffer_Release(&view);
    return PyBool_FromLong(res);
}

/* kernel([name]) -> str: the walk in use ("scalar", "ssse3", "avx2"), after switching to `name`
 * when given (ValueError when this machine or build has no such kernel).  For the tests and
 * benchmarks: every kernel gives the same scan(). */
static PyObject *kernel(PyObject *Py_UNUSED(module), PyObject *args)
{
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|s:kernel", &name))
        return NULL;
    if (name != NULL) {
        int k = 0;
        while (k < N_KERNELS && strcmp(KERNELS[k].name, name) != 0)
            k++;
        if (k == N_KERNELS || !kernel_ok[k])
            return PyErr_Format(PyExc_ValueError, "no scan kernel %s here", name);
        use_kernel(k);
    }
    return PyUnicode_FromString(KERNELS[kernel_now].name);
}

/* set_pairs_ahead(on: bool) -> bool: whether the reader thread reads metric dicts ahead (see
 * pairs_ahead); returns the previous setting.  For the tests, which compare both ways. */
static PyObject *set_pairs_ahead(PyObject *Py_UNUSED(module), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    int was = pairs_ahead;
    pairs_ahead = on;
    return PyBool_FromLong(was);
}

/* kernels() -> tuple[str, ...]: the kernels this machine runs, slowest first. */
static PyObject *kernels(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(arg))
{
    PyObject *out = PyTuple_New(0);
    for (int k = 0; out != NULL && k < N_KERNELS; k++) {
        if (!kernel_ok[k])
            continue;
        PyObject *name = PyUnicode_FromString(KERNELS[k].name);
        if (name == NULL || _PyTuple_Resize(&out, PyTuple_GET_SIZE(out) + 1) < 0) {
            Py_XDECREF(name);
            Py_XDECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, PyTuple_GET_SIZE(out) - 1, name);
    }
    return out;
}

/* -- fold: noise-for-sure heads taken into the noise runs around them ----------------------------
 *
 * A candidate whose head says HEAD_NOISE changes, when feed() reads it, only what a noise run's
 * bookkeeping changes plus a few per-source fields (LineParser._feed_head): the line and noise
 * counts, the noise tail (_noise_run), _last_stamped (emptied), the newest time, and for its
 * source (the line's key, raw[:H_KEY]) _last_time, _last_error (when "Error" is in it) and the
 * skipped lines (popped).  fold() takes such candidates out of the scan's lists, so the lines
 * between two remaining candidates make one run, and hands Python, per run, what those fields
 * end as: per key the newest of its heads (and the newest with "Error"), the newest time, the
 * newest head's key.  Kept lines (keep) of a key that a folded head of the run pops after them
 * are dropped here; Python pops before it appends the run's kept lines.  A head after a kept
 * line whose key needs Python (KEY_PYTHON: it might be the same key) is not folded, nor one
 * past FOLD_KEYS keys in a run.  scan_folded() is scan() then fold() in one call: the folded
 * heads never become Python objects. */
#define FOLD_KEYS 32

typedef struct {
    uchar *key;
    Py_ssize_t klen;
    long kid;                      /* its id (H_KID), or -1 */
    Py_ssize_t last, err;          /* line indices, -1: none */
    const long *head, *err_head;   /* their fields */
} FoldKey;

typedef struct {
    FoldKey keys[FOLD_KEYS];
    int nkeys;
    Py_ssize_t last, stamped;
    double ts;
} Run;

/* What fold_core reads: the buffer and its line offsets, scan()'s lists as arrays (head[k]: the
 * fields of cands[k]'s head, NULL for none or one that is not a head of offsets), and how to
 * get the Python object of the head of a candidate that stays. */
typedef struct {
    uchar *buf;
    Py_ssize_t len, n;
    const int64_t *st;
    Py_ssize_t nc, nk;
    const Py_ssize_t *cand, *keep, *lasts;
    long *const *head;
    PyObject *(*head_obj)(void *ctx, Py_ssize_t k);   /* a new reference, NULL with an error set */
    void *ctx;
} FoldIn;

/* Line i of the scanned buffer, [*s, *e), or 0 when the offsets are not within it. */
static int line_at(uchar *buf, Py_ssize_t len, const int64_t *st, Py_ssize_t n, Py_ssize_t i, uchar **s, uchar **e)
{
    if (i < 0 || i >= n || st[i] < 0 || st[i + 1] - 1 < st[i] || st[i + 1] - 1 > len)
        return 0;
    *s = buf + st[i];
    *e = buf + st[i + 1] - 1;
    return 1;
}

/* Whether the head's offsets lie within its line of len bytes (scan made them so; fold checks). */
static int head_fits(const long *h, Py_ssize_t len)
{
    /* the fields that are offsets into the line (not a count, a class, an id or another line's) */
    static const int at[] = {H_KEY, H_ACTOR, H_ACTOR_END, H_PID, H_PID_END, H_DATE, H_MS, H_PROC, H_PROC_END, H_FILE,
                             H_FILE_END, H_MSG, H_MSG_END, H_TIME_END, H_ROLE, H_KIND, H_KIND_END, H_DICT, H_END_B};
    long most = -1;
    for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++)
        most = h[at[k]] > most ? h[at[k]] : most;
    if (most > len)
        return 0;
    static const int spans[][2] = {{H_ACTOR, H_ACTOR_END}, {H_PID, H_PID_END}, {H_PROC, H_PROC_END},
                                   {H_FILE, H_FILE_END}, {H_DATE, H_TIME_END}, {H_MSG, H_END_B}};
    for (size_t k = 0; k < sizeof(spans) / sizeof(spans[0]); k++)
        if (h[spans[k][0]] >= 0 && h[spans[k][1]] >= 0 && h[spans[k][1]] < h[spans[k][0]])
            return 0;
    return h[H_DATE] >= 0 && h[H_DATE] + 19 <= len && h[H_MSG] >= 0 && h[H_END_B] >= 0 && h[H_KEY] >= 0
           && (h[H_MS] < 0 || h[H_MS] + 3 <= len) && (h[H_PID] < 0 || h[H_PID_END] >= 0);
}

/* Indices 0..n-1 ordered by at[] (n <= FOLD_KEYS, distinct values: insertion sort). */
static void order_by(const Py_ssize_t *at, int *ix, int n)
{
    for (int j = 0; j < n; j++) {
        int x = ix[j], q = j;
        for (; q > 0 && at[ix[q - 1]] > at[x]; q--)
            ix[q] = ix[q - 1];
        ix[q] = x;
    }
}

/* The run's fold tuple, what LineParser._take_folded sets from it, or None when nothing was
 * folded into it:
 *   (last, ts, key of last, ((idx, key, pid, (time_text, ts)), ...) by idx, ((idx, pid, msg), ...) by idx)
 * per key its newest head (idx) and the newest head with "Error" (its message); ts the newest
 * time of them all. */
static PyObject *fold_info(Run *r, const FoldIn *in)
{
    if (r->last < 0)
        Py_RETURN_NONE;
    int ix[FOLD_KEYS], ex[FOLD_KEYS], ne = 0;
    Py_ssize_t at[FOLD_KEYS], eat[FOLD_KEYS];
    for (int j = 0; j < r->nkeys; j++) {
        ix[j] = j;
        at[j] = r->keys[j].last;
        eat[j] = r->keys[j].err;
        if (r->keys[j].err >= 0)
            ex[ne++] = j;
    }
    order_by(at, ix, r->nkeys);
    order_by(eat, ex, ne);
    PyObject *entries = PyTuple_New(r->nkeys), *errs = PyTuple_New(ne), *cur = NULL;
    if (entries == NULL || errs == NULL)
        goto fail;
    for (int q = 0; q < r->nkeys + ne; q++) {
        int err = q >= r->nkeys;
        FoldKey *k = &r->keys[err ? ex[q - r->nkeys] : ix[q]];
        Py_ssize_t idx = err ? k->err : k->last;
        const long *h = err ? k->err_head : k->head;
        uchar *ls, *le;
        if (!line_at(in->buf, in->len, in->st, in->n, idx, &ls, &le)) {
            PyErr_SetString(PyExc_ValueError, "fold(): a head outside the buffer");
            goto fail;
        }
        PyObject *t;
        if (err) {
            PyObject *items[3] = {PyLong_FromSsize_t(idx), pid_str(ls, h),
                                  PyUnicode_DecodeUTF8((const char *)ls + h[H_MSG], h[H_END_B] - h[H_MSG], "strict")};
            t = tuple_of(items, 3);
            if (t == NULL)
                goto fail;
            PyTuple_SET_ITEM(errs, q - r->nkeys, t);
            continue;
        }
        PyObject *when[2] = {head_time_text(ls, h), PyFloat_FromDouble(head_ts(h))};
        PyObject *items[4] = {PyLong_FromSsize_t(idx), ascii_str(ls, h[H_KEY]), pid_str(ls, h),
                              tuple_of(when, 2)};
        if (idx == r->last && items[1] != NULL)
            cur = Py_NewRef(items[1]);
        t = tuple_of(items, 4);
        if (t == NULL)
            goto fail;
        PyObject_GC_UnTrack(t);   /* ints, strs and a tuple of a str and a float: no cycle */
        PyTuple_SET_ITEM(entries, q, t);
    }
    if (cur == NULL) {
        PyErr_SetString(PyExc_SystemError, "fold(): the run's newest head has no key");
        goto fail;
    }
    PyObject *items[5] = {PyLong_FromSsize_t(r->last), PyFloat_FromDouble(r->ts), cur, entries, errs};
    return tuple_of(items, 5);
fail:
    Py_XDECREF(entries);
    Py_XDECREF(errs);
    Py_XDECREF(cur);
    return NULL;
}

/* A kept line as (key, raw) for LineParser._feed_scanned: raw decoded as get(i) decodes it, key
 * its _source_key when that is ASCII text read here, else None (Python reads it). */
static PyObject *kept_line(const FoldIn *in, Py_ssize_t i, Py_ssize_t klen)
{
    uchar *s, *e;
    if (!line_at(in->buf, in->len, in->st, in->n, i, &s, &e)) {
        PyErr_SetString(PyExc_ValueError, "fold(): a kept line outside the buffer");
        return NULL;
    }
    PyObject *key;
    if (klen < 0 || klen > e - s || any_high(s, (size_t)klen))
        key = Py_NewRef(Py_None);
    else
        key = ascii_str(s, klen);
    PyObject *items[2] = {key, PyUnicode_DecodeUTF8((const char *)s, e - s, "replace")};
    PyObject *t = tuple_of(items, 2);
    if (t != NULL)
        PyObject_GC_UnTrack(t);   /* two strs (or None) */
    return t;
}

/* fold_core's result as arrays (no Python object): the candidates that stay (and, last, the
 * buffer's end n), for each the index among the walk's candidates its head is at, the kept lines
 * (then n) with their keys' lengths, and per run (one before each candidate that stays, one
 * before the end) its newest stamped line and the heads folded into it. */
struct FoldOut {
    Py_ssize_t nc, nk;            /* candidates that stay, kept lines */
    Py_ssize_t *cand, *orig;      /* nc + 1 (cand[nc] = n), nc */
    Py_ssize_t *keep, *klen;      /* nk + 1 (keep[nk] = n), nk */
    Py_ssize_t *lasts;            /* nc + 1: the run's newest stamped line, -1 for none */
    Py_ssize_t *run_at;           /* nc + 2: run r's keys are keys[run_at[r] .. run_at[r + 1]) */
    FoldKey *keys;
    Py_ssize_t *run_last;         /* nc + 1: the run's newest folded head, -1 for none */
    double *run_ts;               /* nc + 1: the newest time of its folded heads */
};

static void fold_out_free(FoldOut *o)
{
    PyMem_RawFree(o->cand);
    PyMem_RawFree(o->orig);
    PyMem_RawFree(o->keep);
    PyMem_RawFree(o->klen);
    PyMem_RawFree(o->lasts);
    PyMem_RawFree(o->run_at);
    PyMem_RawFree(o->keys);
    PyMem_RawFree(o->run_last);
    PyMem_RawFree(o->run_ts);
    memset(o, 0, sizeof(*o));
}

/* Run q of a fold as the Run fold_info reads. */
static void run_of(const FoldOut *o, Py_ssize_t q, Run *r)
{
    Py_ssize_t a = o->run_at[q], b = o->run_at[q + 1];
    r->nkeys = (int)(b - a);
    memcpy(r->keys, o->keys + a, (size_t)(b - a) * sizeof(FoldKey));
    r->last = o->run_last[q];
    r->ts = o->run_ts[q];
    r->stamped = -1;
}

/* fold on arrays into *o: 0, or -1 when out of memory (o freed; no error set: the reader thread
 * runs it without the GIL). */
static int fold_arrays(const FoldIn *in, FoldOut *o)
{
    memset(o, 0, sizeof(*o));
    size_t c1 = (size_t)in->nc + 2, k1 = (size_t)in->nk + 1;
    o->cand = PyMem_RawMalloc(c1 * sizeof(Py_ssize_t));
    o->orig = PyMem_RawMalloc(c1 * sizeof(Py_ssize_t));
    o->keep = PyMem_RawMalloc(k1 * sizeof(Py_ssize_t));
    o->klen = PyMem_RawMalloc(k1 * sizeof(Py_ssize_t));
    o->lasts = PyMem_RawMalloc(c1 * sizeof(Py_ssize_t));
    o->run_at = PyMem_RawMalloc(c1 * sizeof(Py_ssize_t));
    o->keys = PyMem_RawMalloc(c1 * sizeof(FoldKey));          /* a key per folded head at most */
    o->run_last = PyMem_RawMalloc(c1 * sizeof(Py_ssize_t));
    o->run_ts = PyMem_RawMalloc(c1 * sizeof(double));
    Py_ssize_t *runkeep = PyMem_RawMalloc(k1 * sizeof(Py_ssize_t)), *runklen = PyMem_RawMalloc(k1 * sizeof(Py_ssize_t));
    if (o->cand == NULL || o->orig == NULL || o->keep == NULL || o->klen == NULL || o->lasts == NULL
        || o->run_at == NULL || o->keys == NULL || o->run_last == NULL || o->run_ts == NULL || runkeep == NULL
        || runklen == NULL) {
        PyMem_RawFree(runkeep);
        PyMem_RawFree(runklen);
        fold_out_free(o);
        return -1;
    }
    Run r;
    r.nkeys = 0;
    r.last = r.stamped = -1;
    r.ts = 0.0;
    Py_ssize_t nrk = 0, ki = 0, nr = 0, nkeys = 0;
    int python_key = 0;
    for (Py_ssize_t k = 0; k <= in->nc; k++) {
        Py_ssize_t ci = k < in->nc ? in->cand[k] : in->n;   /* the end closes the last run */
        for (; ki < in->nk && in->keep[ki] < ci; ki++) {   /* the kept lines before this candidate join the run */
            Py_ssize_t x = in->keep[ki];
            uchar *s, *e;
            Py_ssize_t kl = line_at(in->buf, in->len, in->st, in->n, x, &s, &e) ? source_key(s, e) : KEY_PYTHON;
            python_key |= kl == KEY_PYTHON;
            runkeep[nrk] = x;
            runklen[nrk++] = kl;
        }
        if (in->lasts[k] > r.stamped)
            r.stamped = in->lasts[k];
        const long *h = k < in->nc ? in->head[k] : NULL;
        uchar *s, *e;
        if (h != NULL && !python_key && h[H_CLASS] == HEAD_NOISE && line_at(in->buf, in->len, in->st, in->n, ci, &s, &e)
            && head_fits(h, e - s)) {
            long klen = h[H_KEY], kid = h[H_KID];
            int j = 0;   /* ids name keys within the buffer: its bytes are compared only without one */
            while (j < r.nkeys && !(r.keys[j].klen == klen && (kid >= 0 && r.keys[j].kid >= 0 ? r.keys[j].kid == kid
                                                               : same_bytes(r.keys[j].key, s, klen))))
                j++;
            if (j == r.nkeys && j < FOLD_KEYS) {
                r.keys[j].key = s;
                r.keys[j].klen = klen;
                r.keys[j].kid = kid;
                r.keys[j].err = -1;
                r.keys[j].err_head = NULL;
                r.nkeys++;
            }
            if (j < r.nkeys) {   /* fold it */
                FoldKey *fk = &r.keys[j];
                fk->last = ci;
                fk->head = h;
                if (h[H_ERR] > 0 || (h[H_ERR] < 0 && has(s + h[H_MSG], e, "Error", 5))) {
                    fk->err = ci;
                    fk->err_head = h;
                }
                double ts = head_ts(h);
                if (r.last < 0 || ts > r.ts)
                    r.ts = ts;
                r.last = ci;
                continue;
            }
        }
        /* this candidate (or the end) closes the run */
        for (Py_ssize_t q = 0; q < nrk; q++) {
            int popped = 0;
            for (int j = 0; !popped && j < r.nkeys && runklen[q] != KEY_PYTHON; j++) {
                uchar *ks, *ke;
                popped = r.keys[j].last > runkeep[q] && r.keys[j].klen == runklen[q]
                         && line_at(in->buf, in->len, in->st, in->n, runkeep[q], &ks, &ke)
                         && same_bytes(r.keys[j].key, ks, runklen[q]);
            }
            if (!popped) {
                o->keep[o->nk] = runkeep[q];
                o->klen[o->nk++] = runklen[q];
            }
        }
        o->run_at[nr] = nkeys;
        memcpy(o->keys + nkeys, r.keys, (size_t)r.nkeys * sizeof(FoldKey));
        nkeys += r.nkeys;
        o->run_last[nr] = r.last;
        o->run_ts[nr] = r.ts;
        o->lasts[nr] = r.last > r.stamped ? -1 : r.stamped;
        o->cand[nr] = ci;
        o->orig[nr] = k;
        nr++;
        r.nkeys = 0;
        r.last = r.stamped = -1;
        nrk = 0;
        python_key = 0;
    }
    o->nc = nr - 1;              /* the last run is the end's: cand[nc] = n */
    o->run_at[nr] = nkeys;
    o->keep[o->nk] = in->n;
    PyMem_RawFree(runkeep);
    PyMem_RawFree(runklen);
    return 0;
}

/* fold_arrays of a walk (no GIL needed). */
static int fold_walk_arrays(uchar *buf, Py_ssize_t len, Py_ssize_t n, const int64_t *st, const Scanned *sc, FoldOut *fo)
{
    FoldIn in = {buf, len, n, st, sc->nc, sc->nk, sc->cand, sc->keep, sc->lasts, sc->head, NULL, NULL};
    return fold_arrays(&in, fo);
}

/* fold on arrays: (cands, keep, heads, lasts, folds, kept) as fold() gives them, or NULL. */
static PyObject *fold_core(const FoldIn *in)
{
    FoldOut o;
    if (fold_arrays(in, &o) < 0)
        return PyErr_NoMemory();
    PyObject *res = NULL, *c2 = PyList_New(o.nc), *k2 = PyList_New(o.nk), *h2 = PyList_New(o.nc),
             *l2 = PyList_New(o.nc + 1), *f2 = PyList_New(o.nc + 1), *kl2 = PyList_New(o.nk);
    if (c2 == NULL || k2 == NULL || h2 == NULL || l2 == NULL || f2 == NULL || kl2 == NULL)
        goto done;
    for (Py_ssize_t q = 0; q < o.nk; q++) {
        PyObject *x = PyLong_FromSsize_t(o.keep[q]), *t = kept_line(in, o.keep[q], o.klen[q]);
        if (x != NULL)
            PyList_SET_ITEM(k2, q, x);
        if (t != NULL)
            PyList_SET_ITEM(kl2, q, t);
        if (x == NULL || t == NULL)
            goto done;
    }
    for (Py_ssize_t q = 0; q <= o.nc; q++) {
        Run r;
        run_of(&o, q, &r);
        PyObject *f = fold_info(&r, in), *l = PyLong_FromSsize_t(o.lasts[q]);
        if (f != NULL)
            PyList_SET_ITEM(f2, q, f);
        if (l != NULL)
            PyList_SET_ITEM(l2, q, l);
        if (f == NULL || l == NULL)
            goto done;
        if (q == o.nc)
            break;
        PyObject *c = PyLong_FromSsize_t(o.cand[q]), *h = in->head_obj(in->ctx, o.orig[q]);
        if (c != NULL)
            PyList_SET_ITEM(c2, q, c);
        if (h != NULL)
            PyList_SET_ITEM(h2, q, h);
        if (c == NULL || h == NULL)
            goto done;
    }
    res = PyTuple_Pack(6, c2, k2, h2, l2, f2, kl2);
done:
    Py_XDECREF(c2);
    Py_XDECREF(k2);
    Py_XDECREF(h2);
    Py_XDECREF(l2);
    Py_XDECREF(f2);
    Py_XDECREF(kl2);
    fold_out_free(&o);
    return res;
}

static PyObject *list_item(void *ctx, Py_ssize_t k)
{
    return Py_NewRef(PyList_GET_ITEM((PyObject *)ctx, k));
}

/* The ints of a list, as an array (PyMem_Free it), or NULL with an error set. */
static Py_ssize_t *index_array(PyObject *list)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    Py_ssize_t *a = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    if (a == NULL)
        return (Py_ssize_t *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        a[i] = PyLong_AsSsize_t(PyList_GET_ITEM(list, i));
        if (a[i] == -1 && PyErr_Occurred()) {
            PyMem_Free(a);
            return NULL;
        }
    }
    return a;
}

static PyObject *fold(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer view, stv;
    PyObject *cands, *keep, *heads, *lasts;
    if (!PyArg_ParseTuple(args, "y*y*O!O!O!O!", &view, &stv, &PyList_Type, &cands, &PyList_Type, &keep,
                          &PyList_Type, &heads, &PyList_Type, &lasts))
        return NULL;
    PyObject *res = NULL;
    Py_ssize_t *cand = NULL, *kept = NULL, *last = NULL;
    long *fields = NULL, **head = NULL;
    FoldIn in;
    in.buf = (uchar *)view.buf;
    in.len = view.len;
    in.st = (const int64_t *)stv.buf;
    in.n = stv.len / (Py_ssize_t)sizeof(int64_t) - 1;
    in.nc = PyList_GET_SIZE(cands);
    in.nk = PyList_GET_SIZE(keep);
    if (in.n < 0 || PyList_GET_SIZE(heads) != in.nc || PyList_GET_SIZE(lasts) != in.nc + 1) {
        PyErr_SetString(PyExc_ValueError, "fold(): lists of other lengths than scan() gives");
        goto done;
    }
    cand = index_array(cands);
    kept = cand ? index_array(keep) : NULL;
    last = kept ? index_array(lasts) : NULL;
    fields = last ? PyMem_Malloc((size_t)(in.nc + 1) * H_N * sizeof(long)) : NULL;
    head = fields ? PyMem_Malloc((size_t)(in.nc + 1) * sizeof(long *)) : NULL;
    if (head == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < in.nc; k++) {   /* a head of offsets: a tuple of H_N ints */
        PyObject *h = PyList_GET_ITEM(heads, k);
        head[k] = NULL;
        if (!PyTuple_Check(h) || PyTuple_GET_SIZE(h) != H_N)
            continue;
        long *f = fields + k * H_N;
        for (int q = 0; q < H_N; q++) {
            f[q] = PyLong_AsLong(PyTuple_GET_ITEM(h, q));
            if (f[q] == -1 && PyErr_Occurred())
                goto done;
        }
        f[H_KID] = f[H_ERR] = f[H_O_DATE] = -1;   /* not the walk's: fold compares keys, looks for "Error" and
                                                       reads the own line's header itself */
        head[k] = f;
    }
    in.cand = cand;
    in.keep = kept;
    in.lasts = last;
    in.head = head;
    in.head_obj = list_item;
    in.ctx = heads;
    res = fold_core(&in);
done:
    PyMem_Free(cand);
    PyMem_Free(kept);
    PyMem_Free(last);
    PyMem_Free(fields);
    PyMem_Free(head);
    PyBuffer_Release(&view);
    PyBuffer_Release(&stv);
    return res;
}

typedef struct {
    uchar *buf;
    const Scanned *sc;
    int pack;
} HeadCtx;

static PyObject *scanned_head(void *ctx, Py_ssize_t k)
{
    HeadCtx *c = ctx;
    return head_at(c->buf, c->sc, k, c->pack);
}

/* scan_arrays()'s result for one block, kept between scan_raw() (a reader thread, the walk
 * without the GIL) and fold_raw() (the parsing thread, where the Python objects are made). */
#define RAW_NAME "grpo_tui._scan.raw"
typedef struct {
    Scanned sc;
    PyObject *starts;
    const void *buf;     /* the block it was made from: fold_raw() takes only that one */
    Py_ssize_t len, n;
    FoldOut fo;          /* its fold, made in the walk (taken by the first Fold of it) */
} Raw;

static void raw_free(Raw *r)
{
    fold_out_free(&r->fo);
    scanned_free(&r->sc);
    Py_XDECREF(r->starts);
    PyMem_Free(r);
}

static void raw_capsule_free(PyObject *cap)
{
    Raw *r = PyCapsule_GetPointer(cap, RAW_NAME);
    if (r != NULL)
        raw_free(r);
}

/* The walk (scan_arrays) of the buffer of obj, held in *view (the caller releases it), or NULL
 * with an error set and nothing held. */
static Raw *raw_of(PyObject *obj, Py_buffer *view, int untimed)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0)
        return NULL;
    Raw *r = PyMem_Malloc(sizeof(Raw));
    if (r == NULL) {
        PyBuffer_Release(view);
        return (Raw *)PyErr_NoMemory();
    }
    memset(&r->fo, 0, sizeof(r->fo));
    r->n = scan_arrays(view, &r->sc, &r->starts, &r->fo, untimed);
    r->buf = view->buf;
    r->len = view->len;
    if (r->n < 0) {
        PyMem_Free(r);
        PyBuffer_Release(view);
        return NULL;
    }
    return r;
}

/* fold_core() of a walk: (n_lines, starts, cands, keep, heads, lasts, folds, kept). */
static PyObject *fold_walk(const Raw *r, int pack)
{
    HeadCtx ctx = {(uchar *)r->buf, &r->sc, pack};
    FoldIn in = {(uchar *)r->buf, r->len, r->n, (const int64_t *)PyBytes_AS_STRING(r->starts), r->sc.nc,
                 r->sc.nk, r->sc.cand, r->sc.keep, r->sc.lasts, r->sc.head, scanned_head, &ctx};
    PyObject *got = fold_core(&in), *res = NULL;
    if (got != NULL)
        res = Py_BuildValue("(nOOOOOOO)", r->n, r->starts, PyTuple_GET_ITEM(got, 0), PyTuple_GET_ITEM(got, 1),
                            PyTuple_GET_ITEM(got, 2), PyTuple_GET_ITEM(got, 3), PyTuple_GET_ITEM(got, 4),
                            PyTuple_GET_ITEM(got, 5));
    Py_XDECREF(got);
    return res;
}

/* scan() then fold() in one call (the folded heads never become Python objects):
 * (n_lines, starts, cands, keep, heads, lasts, folds, kept). */
static PyObject *scan_folded(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *arg;
    int pack = 0;
    if (!PyArg_ParseTuple(args, "O|p", &arg, &pack))
        return NULL;
    Py_buffer view;
    Raw *r = raw_of(arg, &view, 0);
    if (r == NULL)
        return NULL;
    PyObject *res = fold_walk(r, pack);
    raw_free(r);
    PyBuffer_Release(&view);
    return res;
}

/* scan_folded() in two halves: the walk (most of the time, without the GIL) in a reader thread,
 * the Python objects in the thread that parses. */
/* A walk as the capsule scan_raw and read_scan give (r freed when it can't be made). */
static PyObject *raw_capsule(Raw *r)
{
    PyObject *cap = PyCapsule_New(r, RAW_NAME, raw_capsule_free);
    if (cap == NULL)
        raw_free(r);
    return cap;
}

static PyObject *walk_raw(PyObject *arg, int untimed)
{
    Py_buffer view;
    Raw *r = raw_of(arg, &view, untimed);
    if (r == NULL)
        return NULL;
    PyBuffer_Release(&view);
    return raw_capsule(r);
}

static PyObject *scan_raw(PyObject *Py_UNUSED(module), PyObject *arg)
{
    return walk_raw(arg, 0);
}

/* scan_raw() keeping no noise line's time (classify's `untimed`): a function of its own, so a
 * read started ahead (lines/prefetch.py) is claimed only by a parser that walks the same way. */
static PyObject *scan_raw_untimed(PyObject *Py_UNUSED(module), PyObject *arg)
{
    return walk_raw(arg, 1);
}

#ifdef HAVE_READ_SCAN
/* files._has_long_line on b[:end]: whether some line there is longer than max_line bytes, found
 * by looking back from each max_line + 1 bytes for the last '\n' (a few looks per block). */
static int long_line(uchar *b, Py_ssize_t end, Py_ssize_t max_line)
{
    Py_ssize_t p = 0;
    while (end - p > max_line) {
        Py_ssize_t q = (p + max_line + 1 < end ? p + max_line + 1 : end) - 1;
        while (q >= p && b[q] != '\n')
            q--;
        if (q < p)
            return 1;
        p = q + 1;
    }
    return 0;
}

/* read_scan(fd, buf, have, want, max_line, pairs=False, untimed=False) -> (n, cut, walk | None): what files.iter_block_views
 * does with each read, in one stretch without the GIL.  Reads `want` bytes of fd into buf[have:]
 * (fewer only at the end of the file, as BufferedReader.readinto; n = 0 there), finds cut, the last '\n' of
 * buf[:have + n] (-1: none), and when there is one and no line of buf[:cut] is longer than
 * max_line, walks buf[:cut] as scan_raw(buf[:cut]) would (`walk`: its capsule).  Why: with the
 * read and the walk apart, the reader thread took the GIL back after each, and each time
 * waited for the parsing thread to give it up (its reads took twice as long as alone).  `pairs`:
 * the metric dicts read in the walk too (see pairs_ahead). */
static PyObject *read_scan(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 5 || nargs > 8) {
        PyErr_SetString(PyExc_TypeError, "read_scan(): 5 to 8 arguments");
        return NULL;
    }
    int pairs = nargs >= 6 ? PyObject_IsTrue(args[5]) : 0;
    if (pairs < 0)
        return NULL;
    int untimed = nargs >= 7 ? PyObject_IsTrue(args[6]) : 0;
    if (untimed < 0)
        return NULL;
    Py_ssize_t walk_to = -1;   /* walk the lines up to the first newline at or past it; -1: all */
    if (nargs == 8 && (walk_to = PyLong_AsSsize_t(args[7])) == -1 && PyErr_Occurred())
        return NULL;
    long fd = PyLong_AsLong(args[0]);
    if (fd == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t num[3];     /* have, want, max_line: each checked before the next is read */
    for (int k = 0; k < 3; k++)
        if ((num[k] = PyLong_AsSsize_t(args[2 + k])) == -1 && PyErr_Occurred())
            return NULL;
    Py_ssize_t have = num[0], want = num[1], max_line = num[2];
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (fd < 0 || fd > INT_MAX || have < 0 || want < 0 || have > view.len || want > view.len - have
        || max_line < 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "read_scan(): fd, have, want or max_line out of range");
        return NULL;
    }
    Raw *r = PyMem_Malloc(sizeof(Raw));
    if (r == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    memset(r, 0, sizeof(*r));
    r->sc.untimed = untimed;
    uchar *b = (uchar *)view.buf;
    Py_ssize_t got = 0;
    int err = 0, walked = 0, oom = 0;
    Py_ssize_t cut = -1, n = -1, mid = -1;
    int64_t *st = NULL;
    Py_BEGIN_ALLOW_THREADS
    while (got < want) {     /* as BufferedReader.readinto: until `want` bytes or the end (a pipe's reads are short) */
        ssize_t k = read((int)fd, (unsigned char *)view.buf + have + got, (size_t)(want - got));
        if (k > 0) {
            got += k;
        } else if (k == 0) {
            break;
        } else if (errno == EINTR) {
            Py_BLOCK_THREADS
            int stop = PyErr_CheckSignals();     /* (Ctrl-C where this runs in the main thread) */
            Py_UNBLOCK_THREADS
            if (stop < 0) {
                err = -1;
                break;
            }
        } else {
            if (got == 0)
                err = errno;   /* (after some bytes: those are given; the next call meets the error) */
            break;
        }
    }
    if (got > 0 && !err) {
        Py_ssize_t stop = have + (Py_ssize_t)got;
        for (cut = stop - 1; cut >= 0 && b[cut] != '\n'; cut--)
            ;
        if (cut >= 0 && !long_line(b, cut, max_line)) {
            uchar *nl = walk_to > 0 && walk_to < cut ? memchr(b + walk_to, '\n', (size_t)(cut - walk_to)) : NULL;
            if (nl != NULL && nl - b + 1 < cut)   /* (a line after it: the part left is no empty block) */
                mid = nl - b;
            n = walk_nogil(b, mid >= 0 ? mid : cut, &r->sc, &st, &r->fo, pairs, &oom);
            walked = 1;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (err) {
        PyMem_Free(r);
        if (err < 0)
            return NULL;       /* a signal handler raised */
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    PyObject *cap = NULL;
    if (walked) {
        r->n = walk_done(n, oom, st, &r->sc, &r->starts, &r->fo);
        if (r->n < 0) {
            PyMem_Free(r);
            return NULL;
        }
        r->buf = b;
        r->len = mid >= 0 ? mid : cut;
        if ((cap = raw_capsule(r)) == NULL)
            return NULL;
    } else {
        PyMem_Free(r);
        cap = Py_NewRef(Py_None);
    }
    if (nargs == 8)
        return Py_BuildValue("(nnNn)", got, cut, cap, mid);
    return Py_BuildValue("(nnN)", got, cut, cap);
}
#endif

static PyObject *fold_raw(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *block, *cap;
    Py_buffer view;
    int pack = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &block, &cap, &pack))
        return NULL;
    Raw *r = PyCapsule_GetPointer(cap, RAW_NAME);
    if (r == NULL)
        return NULL;
    if (PyObject_GetBuffer(block, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *res = NULL;
    if (view.buf != r->buf || view.len != r->len)   /* the offsets are of another buffer */
        PyErr_SetString(PyExc_ValueError, "fold_raw(): not the block scan_raw() walked");
    else
        res = fold_walk(r, pack);
    PyBuffer_Release(&view);
    return res;
}

/* ---- Fold: a block's fold as arrays, read by LineParser._feed_scanned ---------------------------
 *
 * fold_raw() hands Python a block's fold as lists: the candidates that stay, the kept lines, the
 * heads, the runs' stamped lines and folds, as ints, tuples and strs, most of which only
 * ready_run reads, once, to keep the parser's books.  A Fold holds the same as C arrays and makes
 * a Python object only when it is read: run() (ready_run's walk) reads the arrays themselves and
 * makes only what it stores (a record, a time, a kept line's text); the accessors give the loop
 * in Python what the lists gave it, item by item, the same values (a head once: the same object
 * whenever it is read).  A Fold holds its block's buffer and its walk while it lives: the parser
 * drops it before the block's buffer is read again (a view still held fails loudly there). */
typedef struct {
    PyObject_HEAD
    PyObject *walk;         /* the capsule of the Raw it folds */
    Py_buffer view;         /* the block, held */
    FoldIn in;
    FoldOut out;
    HeadCtx ctx;
    PyObject **heads;       /* out.nc: the heads made so far (NULL: not yet) */
    PyObject **kid_strs;    /* per key id of the block: its key and pid strs, once made (NULL: none yet) */
} FoldObject;

static PyTypeObject Fold_Type;

static void fold_dealloc(PyObject *self)
{
    FoldObject *f = (FoldObject *)self;
    if (f->heads != NULL)
        for (Py_ssize_t q = 0; q < f->out.nc; q++)
            Py_XDECREF(f->heads[q]);
    PyMem_Free(f->heads);
    if (f->kid_strs != NULL)
        for (int q = 0; q < 2 * MAX_KEYS; q++)
            Py_XDECREF(f->kid_strs[q]);
    PyMem_Free(f->kid_strs);
    fold_out_free(&f->out);
    if (f->view.obj != NULL)
        PyBuffer_Release(&f->view);
    Py_XDECREF(f->walk);
    PyObject_Free(self);
}

/* The Fold of the walk in capsule `walk` of the block `block` (the very buffer it walked). */
static PyObject *fold_new(PyObject *block, PyObject *walk, int pack)
{
    Raw *r = PyCapsule_GetPointer(walk, RAW_NAME);
    if (r == NULL)
        return NULL;
    FoldObject *f = PyObject_New(FoldObject, &Fold_Type);
    if (f == NULL)
        return NULL;
    f->walk = Py_NewRef(walk);
    f->view.obj = NULL;
    memset(&f->out, 0, sizeof(f->out));
    f->heads = NULL;
    f->kid_strs = NULL;
    if (PyObject_GetBuffer(block, &f->view, PyBUF_SIMPLE) < 0) {
        f->view.obj = NULL;
        Py_DECREF(f);
        return NULL;
    }
    if (f->view.buf != r->buf || f->view.len != r->len) {
        PyErr_SetString(PyExc_ValueError, "fold: not the block scan_raw() walked");
        Py_DECREF(f);
        return NULL;
    }
    f->ctx = (HeadCtx){(uchar *)r->buf, &r->sc, pack};
    f->in = (FoldIn){(uchar *)r->buf, r->len, r->n, (const int64_t *)PyBytes_AS_STRING(r->starts), r->sc.nc,
                     r->sc.nk, r->sc.cand, r->sc.keep, r->sc.lasts, r->sc.head, scanned_head, &f->ctx};
    if (r->fo.cand != NULL) {        /* the walk's own fold: taken, not made again */
        f->out = r->fo;
        memset(&r->fo, 0, sizeof(r->fo));
    } else if (fold_arrays(&f->in, &f->out) < 0) {
        Py_DECREF(f);
        return PyErr_NoMemory();
    }
    f->heads = PyMem_Calloc((size_t)f->out.nc + 1, sizeof(PyObject *));
    if (f->heads == NULL) {
        Py_DECREF(f);
        return PyErr_NoMemory();
    }
    return (PyObject *)f;
}

/* fold_lazy(buf, walk, pack=False, untimed=False) -> Fold (see above).  `untimed` says how the
 * parser wants the walk made: one made the other way is refused (its kept lines would differ). */
static PyObject *fold_lazy(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *block, *walk;
    int pack = 0, untimed = 0;
    if (!PyArg_ParseTuple(args, "OO|pp", &block, &walk, &pack, &untimed))
        return NULL;
    if (PyCapsule_IsValid(walk, RAW_NAME)) {
        Raw *r = PyCapsule_GetPointer(walk, RAW_NAME);
        if (r != NULL && r->sc.untimed != untimed) {
            PyErr_SetString(PyExc_ValueError, "fold_lazy(): a walk made with the other noise_times");
            return NULL;
        }
    }
    return fold_new(block, walk, pack);
}

/* scan_fold(buf, pack=False, untimed=False) -> Fold: scan_raw() (or scan_raw_untimed()) then
 * fold_lazy(), in one call. */
static PyObject *scan_fold(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *block, *walk;
    int pack = 0, untimed = 0;
    if (!PyArg_ParseTuple(args, "O|pp", &block, &pack, &untimed) || (walk = walk_raw(block, untimed)) == NULL)
        return NULL;
    PyObject *f = fold_new(block, walk, pack);
    Py_DECREF(walk);
    return f;
}

/* An index argument within [0, top], or -1 with an IndexError set. */
static Py_ssize_t fold_index(PyObject *arg, Py_ssize_t top)
{
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred())
        return -1;
    if (k < 0 || k > top) {
        PyErr_SetString(PyExc_IndexError, "Fold: index out of range");
        return -1;
    }
    return k;
}

/* Candidate q's head (a borrowed reference, made once), or NULL with an error set. */
static PyObject *fold_head(FoldObject *f, Py_ssize_t q)
{
    if (q < 0 || q >= f->out.nc) {
        PyErr_SetString(PyExc_IndexError, "Fold: no such candidate");
        return NULL;
    }
    if (f->heads[q] == NULL)
        f->heads[q] = f->in.head_obj(f->in.ctx, f->out.orig[q]);
    return f->heads[q];
}

/* Item `arg` (within [0, top]) of one of the fold's index arrays, as an int. */
static PyObject *fold_int(PyObject *arg, Py_ssize_t top, const Py_ssize_t *a)
{
    Py_ssize_t q = fold_index(arg, top);
    return q < 0 ? NULL : PyLong_FromSsize_t(a[q]);
}

static PyObject *fold_m_cand(PyObject *self, PyObject *arg)
{
    return fold_int(arg, ((FoldObject *)self)->out.nc, ((FoldObject *)self)->out.cand);
}

static PyObject *fold_m_keep(PyObject *self, PyObject *arg)
{
    return fold_int(arg, ((FoldObject *)self)->out.nk, ((FoldObject *)self)->out.keep);
}

static PyObject *fold_m_last(PyObject *self, PyObject *arg)
{
    return fold_int(arg, ((FoldObject *)self)->out.nc, ((FoldObject *)self)->out.lasts);
}

static PyObject *fold_m_head(PyObject *self, PyObject *arg)
{
    FoldObject *f = (FoldObject *)self;
    Py_ssize_t q = fold_index(arg, f->out.nc);
    PyObject *h = q < 0 ? NULL : fold_head(f, q);
    return h == NULL ? NULL : Py_NewRef(h);
}

static PyObject *fold_m_fold(PyObject *self, PyObject *arg)
{
    FoldObject *f = (FoldObject *)self;
    Py_ssize_t q = fold_index(arg, f->out.nc);
    if (q < 0)
        return NULL;
    Run r;
    run_of(&f->out, q, &r);
    return fold_info(&r, &f->in);
}

static PyObject *fold_m_kept(PyObject *self, PyObject *arg)
{
    FoldObject *f = (FoldObject *)self;
    Py_ssize_t q = fold_index(arg, f->out.nk - 1);
    return q < 0 ? NULL : kept_line(&f->in, f->out.keep[q], f->out.klen[q]);
}

/* (cands, keep, heads, lasts, folds, kept): the lists fold() gives, item by item (tests). */
static PyObject *fold_m_lists(PyObject *self, PyObject *Py_UNUSED(arg))
{
    FoldObject *f = (FoldObject *)self;
    Py_ssize_t size[6] = {f->out.nc, f->out.nk, f->out.nc, f->out.nc + 1, f->out.nc + 1, f->out.nk};
    PyObject *(*get[6])(PyObject *, PyObject *) = {fold_m_cand, fold_m_keep, fold_m_head, fold_m_last, fold_m_fold,
                                                   fold_m_kept};
    PyObject *lists[6] = {NULL};
    for (int k = 0; k < 6; k++) {
        if ((lists[k] = PyList_New(size[k])) == NULL)
            goto fail;
        for (Py_ssize_t q = 0; q < size[k]; q++) {
            PyObject *ix = PyLong_FromSsize_t(q), *v = ix == NULL ? NULL : get[k](self, ix);
            Py_XDECREF(ix);
            if (v == NULL)
                goto fail;
            PyList_SET_ITEM(lists[k], q, v);
        }
    }
    return tuple_of(lists, 6);
fail:
    for (int k = 0; k < 6; k++)
        Py_XDECREF(lists[k]);
    return NULL;
}

/* A source's newest time (LineParser._last_time[pid] = (time_text, ts)) kept back while Fold.run
 * walks: only the last one set per source is ever read (by Python, after the walk), so the
 * time's text, float and tuple are made for that one alone.  A ready head gives its own objects
 * (time, ts); a folded head its line and fields (ls, h).  Set in the dict in pend_flush. */
#define PEND_MAX 16
typedef struct {
    PyObject *pid, *time, *ts;
    uchar *ls;
    const long *h;
    long kid;        /* the key id last set with it (its pid is that key's), or -1 */
    Py_hash_t hash;  /* pid's hash (a str's), or -1: compare it */
} PendTime;

static void pend_clear(PendTime *p, int *np)
{
    for (int j = 0; j < *np; j++) {
        Py_DECREF(p[j].pid);
        Py_XDECREF(p[j].time);
        Py_XDECREF(p[j].ts);
    }
    *np = 0;
}

static int pend_flush(PendTime *p, int *np, PyObject *last_time)
{
    int bad = 0;
    for (int j = 0; !bad && j < *np; j++) {
        PyObject *when;
        if (p[j].time != NULL) {
            when = PyTuple_Pack(2, p[j].time, p[j].ts);
        } else {
            PyObject *items[2] = {head_time_text(p[j].ls, p[j].h), PyFloat_FromDouble(head_ts(p[j].h))};
            when = tuple_of(items, 2);
        }
        bad = when == NULL || PyDict_SetItem(last_time, p[j].pid, when) < 0;
        Py_XDECREF(when);
    }
    pend_clear(p, np);
    return bad ? -1 : 0;
}

/* a == b for two pids (str or None), as PyObject_RichCompareBool(a, b, Py_EQ) answers, exact
 * strs by their characters (a ready head's pid is a new str: pend_set compared it with each
 * source kept back through the generic comparison, a tenth of Fold.run). */
static inline int same_pid(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (a == Py_None || b == Py_None)
        return 0;
    if (PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(a);
        return n == PyUnicode_GET_LENGTH(b) && PyUnicode_KIND(a) == PyUnicode_KIND(b)
               && memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * PyUnicode_KIND(a)) == 0;
    }
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* A pid's hash for pend_set's first test (a str's, cached in it), or -1 (None, another type). */
static inline Py_hash_t pid_hash(PyObject *pid)
{
    return PyUnicode_CheckExact(pid) ? PyObject_Hash(pid) : -1;
}

/* last_time[pid] = (time, ts), or (the time of head h of line ls), kept back (see PendTime).
 * kid: the block's id of the key whose pid this is, or -1.  Why: a run's folded heads set their
 * sources' times, half a million of them in a big log with anchored noise; an entry is found by
 * its key id, an int, before any compare of pid strs. */
static int pend_set(PendTime *p, int *np, PyObject *pid, PyObject *time, PyObject *ts, uchar *ls, const long *h,
                    PyObject *last_time, long kid)
{
    int j = 0;
    if (kid >= 0)
        while (j < *np && p[j].kid != kid)
            j++;
    Py_hash_t hv = -1;
    if (kid < 0 || j == *np) {
        if ((hv = pid_hash(pid)) == -1 && PyErr_Occurred())
            return -1;
        for (j = 0; j < *np; j++) {
            if (hv != -1 && p[j].hash != -1 && p[j].hash != hv)
                continue;                       /* (strs of other hashes differ) */
            int eq = same_pid(p[j].pid, pid);
            if (eq < 0)
                return -1;
            if (eq)
                break;
        }
    }
    if (j == *np) {
        if (*np == PEND_MAX && pend_flush(p, np, last_time) < 0)
            return -1;
        j = (*np)++;
        p[j].pid = Py_NewRef(pid);
        p[j].kid = -1;
        p[j].hash = hv;
    } else {
        Py_CLEAR(p[j].time);
        Py_CLEAR(p[j].ts);
    }
    if (kid >= 0)
        p[j].kid = kid;
    p[j].time = Py_XNewRef(time);
    p[j].ts = Py_XNewRef(ts);
    p[j].ls = ls;
    p[j].h = h;
    return 0;
}

/* The key (a = 0) or pid (a = 1) str of the head h on line ls, whose key has the id kid in the
 * block (-1: none), as ascii_str and pid_str make them: made once per key id (a new reference),
 * NULL with an error set. */
static PyObject *kid_str(FoldObject *f, long kid, uchar *ls, const long *h, int a)
{
    PyObject **slot = NULL;
    if (kid >= 0 && kid < MAX_KEYS) {
        if (f->kid_strs == NULL && (f->kid_strs = PyMem_Calloc(2 * MAX_KEYS, sizeof(PyObject *))) == NULL)
            return PyErr_NoMemory();
        slot = &f->kid_strs[2 * kid + a];
        if (*slot != NULL)
            return Py_NewRef(*slot);
    }
    PyObject *str = a ? pid_str(ls, h) : ascii_str(ls, h[H_KEY]);
    if (slot != NULL && str != NULL)
        *slot = Py_NewRef(str);
    return str;
}

/* _take_folded's steps for run q's folded heads at or after line i (fold_info's entries, then its
 * errors, each in line order); *newest and *cur_key set as there; the times kept back in pend. */
static int fold_take(FoldObject *f, Py_ssize_t q, Py_ssize_t i, PyObject **newest, PyObject **cur_key,
                     PendTime *pend, int *npend, PyObject *last_time, PyObject *skipped, PyObject *last_error)
{
    Run r;
    run_of(&f->out, q, &r);
    PyObject *ts = PyFloat_FromDouble(r.ts);
    int bad = ts == NULL || newer_time(newest, ts) < 0;
    Py_XDECREF(ts);
    if (bad)
        return -1;
    int ix[FOLD_KEYS], ex[FOLD_KEYS], ne = 0;
    Py_ssize_t at[FOLD_KEYS], eat[FOLD_KEYS];
    for (int j = 0; j < r.nkeys; j++) {
        ix[j] = j;
        at[j] = r.keys[j].last;
        eat[j] = r.keys[j].err;
        if (r.keys[j].err >= 0)
            ex[ne++] = j;
    }
    order_by(at, ix, r.nkeys);
    order_by(eat, ex, ne);
    for (int q2 = 0; q2 < r.nkeys + ne; q2++) {
        int err = q2 >= r.nkeys;
        FoldKey *k = &r.keys[err ? ex[q2 - r.nkeys] : ix[q2]];
        Py_ssize_t idx = err ? k->err : k->last;
        const long *h = err ? k->err_head : k->head;
        uchar *ls, *le;
        if (!line_at(f->in.buf, f->in.len, f->in.st, f->in.n, idx, &ls, &le)) {
            PyErr_SetString(PyExc_ValueError, "fold: a head outside the buffer");
            return -1;
        }
        if (!err && idx == r.last) {      /* the run's newest head: its key is the parser's */
            PyObject *key = kid_str(f, k->kid, ls, h, 0);
            if (key == NULL)
                return -1;
            Py_SETREF(*cur_key, key);
        }
        if (idx < i)
            continue;
        PyObject *pid = kid_str(f, k->kid, ls, h, 1);
        if (pid == NULL)
            return -1;
        if (err) {
            PyObject *msg = PyUnicode_DecodeUTF8((const char *)ls + h[H_MSG], h[H_END_B] - h[H_MSG], "strict");
            bad = msg == NULL || PyDict_SetItem(last_error, pid, msg) < 0;
            Py_XDECREF(msg);
        } else {
            PyObject *key = NULL;
            bad = pend_set(pend, npend, pid, NULL, NULL, ls, h, last_time, k->kid) < 0;
            if (!bad && PyDict_GET_SIZE(skipped)) {
                key = kid_str(f, k->kid, ls, h, 0);
                bad = key == NULL || skipped_drop(skipped, key, 0) < 0;
            }
            Py_XDECREF(key);
        }
        Py_DECREF(pid);
        if (bad)
            return -1;
    }
    return 0;
}

/* Kept line q appended to its source's deque (keep_line's steps, its text decoded here). */
static int fold_keep(FoldObject *f, Py_ssize_t q, PyObject *skipped, PyObject *source_key, PyObject *new_deque)
{
    PyObject *pair = kept_line(&f->in, f->out.keep[q], f->out.klen[q]);
    if (pair == NULL)
        return -1;
    int rc = keep_line(pair, skipped, source_key, new_deque);
    Py_DECREF(pair);
    return rc;
}

/* Candidate q's head, when ready_head would make it an `ft ` event (HEAD_FT, an ASCII message
 * _ft_event gives an event for), as the books need it, nothing else made: *key, *pid, *time,
 * *ts and *err (the message when it holds "Error", else None), new references.  1 then; 0 when
 * the head is another (ready_head's or Python's); -1 with an error set.  For Fold.run's `lean`
 * (LineParser.store_events_only): such an event is counted and booked, not made. */
static int lean_ft(FoldObject *f, Py_ssize_t q, PyObject **key, PyObject **pid, PyObject **time, PyObject **ts,
                   PyObject **err)
{
    Py_ssize_t k = f->out.orig[q];     /* (fold_head's: head_at reads the same head and line) */
    const long *h = k >= 0 && k < f->in.nc ? f->in.head[k] : NULL;
    uchar *ls, *le;
    if (h == NULL || h[H_CLASS] != HEAD_FT || record_type.type == NULL || event_type.type == NULL
        || !line_at(f->in.buf, f->in.len, f->in.st, f->in.n, f->in.cand[k], &ls, &le))
        return 0;
    uchar *m = ls + h[H_MSG], *e = ls + h[H_END_B];
    if (any_high(m, (size_t)(e - m)) || ft_event_kind(m, e) == FT_NONE)
        return 0;                   /* ready_head leaves it to _ft_event, or makes no event */
    *key = ascii_str(ls, h[H_KEY]);
    *pid = pid_str(ls, h);
    *time = head_time_text(ls, h);
    *ts = PyFloat_FromDouble(head_ts(h));
    *err = error_text(m, e);
    if (*key == NULL || *pid == NULL || *time == NULL || *ts == NULL || *err == NULL) {
        Py_CLEAR(*key);
        Py_CLEAR(*pid);
        Py_CLEAR(*time);
        Py_CLEAR(*ts);
        Py_CLEAR(*err);
        return -1;
    }
    return 1;
}

/* Whether a line ending in ':' then [p, e) may start ": {", ": ..." or ": \u2026" that the
 * next line ends ([p, e) is the start of what follows the ':' in one of them). */
static int join_may_start(uchar *p, uchar *e)
{
    size_t r = (size_t)(e - p);
    return (r < 2 && memcmp(p, " {", r) == 0) || (r < 4 && memcmp(p, " ...", r) == 0)
           || (r < 4 && memcmp(p, " \xe2\x80\xa6", r) == 0);
}

/* Whether a message starting with [m, e) (more text may follow it) may start a _METRIC_MSG
 * match: `(?:[A-Za-z]\w*-)?(rollout|perf|eval|multi_turn|step|passrate) `.  0 when the bytes
 * here already rule it out: not a letter first, or a first word that is neither one of the
 * kinds nor a role (followed by '-') before one.  Non-ASCII (\w is Unicode) or too short: 1. */
static int metric_start_may(uchar *m, uchar *e)
{
    if (m >= e)
        return 1;
    if (!ALPHA(*m))
        return *m >= 0x80;
    uchar *w = m;
    while (w < e && WORD(*w))
        w++;
    if (w == e || *w >= 0x80)
        return 1;
    uchar *k = *w == '-' ? w + 1 : m;     /* a role's '-': the kind follows; else this word is it */
    for (size_t j = 0; j < N_METRIC_KINDS; j++) {
        size_t n = strlen(METRIC_KINDS[j]), have = (size_t)(e - k);
        if (have <= n ? memcmp(k, METRIC_KINDS[j], have) == 0    /* the line ends inside the kind */
                      : memcmp(k, METRIC_KINDS[j], n) == 0 && k[n] == ' ')
            return 1;
    }
    return 0;
}

/* Whether the line [s, e) of source key length `key` has a Miles header miles_head reads (as
 * _header does, the same fields whatever text is joined after it: _MILES's msg is its last
 * group) and a message that, from what this line holds of it, can't start a metric line
 * (metric_start_may).  Then no join _rejoin starts from this line is a metric line. */
static int head_not_metric(uchar *s, uchar *e, Py_ssize_t key)
{
    long oh[H_N];
    Seen seen = {NULL, NULL, NULL};
    if (source_key(s, e) != key || (seen.hend = header_end(s, e, key)) == NULL || !miles_head(s, e, 1, key, &seen, oh)
        || !head_fits(oh, e - s))
        return 0;
    return !metric_start_may(s + oh[H_MSG], s + oh[H_MSG_END]);
}

/* Whether LineParser._rejoin certainly gives up on the quiet line i ([ls, le), head h), the noise
 * run's newest lines being this buffer's [lo, i) (all of it when lo_all).  It joins the run's
 * lines, newest first, while their pid is the line's (pid_differs stops it; a line without a
 * prefix goes on), at most REJOIN_PARTS, and tries a join only from a line whose text starts
 * like a date (_DATE_START: '['), and only when the joined text holds ": {", ": ..." or
 * ": \u2026" (what _METRIC_MSG needs).  No join is tried while none of those is in the lines
 * walked, as _peel leaves their text (the quiet line's own included: one after a header in the
 * run may end the message), nor starts at a ':' near a line's end and goes on into the next
 * (join_may_start).  Past one, a join from a line starting with '[' still fails when that line's
 * header leaves a message that can't be a metric line's (head_not_metric: `[Rank 0] Memory-Usage
 * ...: {...}`, logged before each checkpoint).  Unsure of a line's text (control bytes, ESC,
 * '\r', a dedup mark, a prefix not read here): 0. */
static int rejoin_fails(FoldObject *f, Py_ssize_t i, uchar *ls, uchar *le, const long *h, Py_ssize_t lo, int lo_all)
{
    uchar *m = ls + h[H_MSG];
    if (h[H_MSG] < 0 || m > le || has_lit(m, le, &L_DICT) || has_lit(m, le, &L_DICT_DOTS)
        || has_lit(m, le, &L_DICT_ELLIPSIS))
        return 0;
    int marked = 0;     /* a line walked so far holds a metric message's `: {`, `: ...` or `: \u2026` */
    for (Py_ssize_t k = i - 1; k >= i - REJOIN_PARTS; k--) {
        if (k < lo)
            return lo_all;      /* no line before: the run is over */
        uchar *s, *e;
        if (!line_at(f->in.buf, f->in.len, f->in.st, f->in.n, k, &s, &e))
            return 0;
        Py_ssize_t key = source_key(s, e);
        if (key == KEY_PYTHON)
            return 0;
        if (h[H_KEY] > 0 && pid_differs(s, e, ls, le, h[H_KEY]))
            return 1;           /* another source's line: the walk stops there */
        uchar *t = prefix_end(s, e, key);
        long rep;
        if (t == NULL || (e = dedup_end(t, e, &rep)) == NULL)   /* (_rejoin peels it: the text */
            return 0;                                             /* without Ray's mark) */
        for (uchar *q = t; q < e; q++) {
            if ((*q < 0x20 && *q != '\t') || *q == 0x7f)
                return 0;
            marked |= *q == ':' && e - q <= 4 && join_may_start(q + 1, e);
        }
        marked = marked || has_lit(t, e, &L_DICT) || has_lit(t, e, &L_DICT_DOTS) || has_lit(t, e, &L_DICT_ELLIPSIS);
        if (marked && t < e && *t == '[' && !head_not_metric(s, e, key))
            return 0;           /* a join from this line (_DATE_START) may hold a metric message */
    }
    return 1;                   /* the deque holds no more */
}

/* The own line's header fields a quiet head h brought (H_O_*, classify's own_header) into oh,
 * when it brought them and they lie within that line of len bytes: 1; else 0 (read the line). */
static int own_fields(const long *h, long *oh, Py_ssize_t len)
{
    if (h[H_O_DATE] < 0)
        return 0;
    for (int k = 0; k < H_N; k++)
        oh[k] = -1;
    for (int k = 0; k < N_OWN_FIELDS; k++)
        oh[OWN_FIELDS[k][0]] = h[OWN_FIELDS[k][1]];
    return oh[H_DATE] + 19 <= len && oh[H_MS] <= len - 3 && oh[H_TIME_END] <= len && oh[H_PID] <= len
           && oh[H_PID_END] <= len && (oh[H_PID] < 0 || oh[H_PID_END] >= oh[H_PID])
           && (oh[H_TIME_END] < 0 ? oh[H_MS] >= 0 : oh[H_TIME_END] >= oh[H_DATE]);  /* (head_time_text reads one) */
}

/* Candidate q at line i, when it is a quiet head (quiet_head) whose feed the walk can do
 * (LineParser._feed_quiet): _rejoin gives up (at once: the line before is another source's, or
 * no noise is in the run, noise_empty; or rejoin_fails over the run's lines [lo, i)) and
 * _catch_up's read of its source's deque is known here (the deque is absent or empty, or its
 * newest line is this buffer's line H_OWN and has a header miles_head reads as _header does).  Then 1, the deque popped, with *key (the line's
 * source key), and when that newest line gave a time, *pid, *time and *ts for last_time (else
 * NULL), new references; 0 when Python reads the line (nothing changed); -1 with an error set.
 * A checkpoint line (HEAD_CKPT: _headerless reads on into its event, ckpt_fold) gives 2 for 1,
 * and 0 while set_types() has not given the Event class (unless `lean`: none is made). */
static int quiet_fold(FoldObject *f, Py_ssize_t q, Py_ssize_t i, int noise_empty, Py_ssize_t lo, int lo_all,
                      int lean, PyObject *skipped, PyObject **key, PyObject **pid, PyObject **time, PyObject **ts)
{
    Py_ssize_t k = f->out.orig[q];
    const long *h = k >= 0 && k < f->in.nc ? f->in.head[k] : NULL;
    uchar *ls, *le;
    *key = *pid = *time = *ts = NULL;
    if (h == NULL || (h[H_CLASS] != HEAD_QUIET && h[H_CLASS] != HEAD_CKPT)
        || (h[H_CLASS] == HEAD_CKPT && !lean && event_type.type == NULL) || f->in.cand[k] != i
        || !line_at(f->in.buf, f->in.len, f->in.st, f->in.n, i, &ls, &le) || h[H_KEY] < 0 || h[H_KEY] > le - ls
        || (h[H_KEY] > 0 && prefix_end(ls, le, h[H_KEY]) == NULL)
        || (h[H_ID] != 1 && !noise_empty && !rejoin_fails(f, i, ls, le, h, lo, lo_all)))
        return 0;
    Py_ssize_t klen = h[H_KEY];
    if ((*key = kid_str(f, h[H_KID], ls, h, 0)) == NULL)
        return -1;
    PyObject *dq = PyDict_GetItemWithError(skipped, *key);   /* borrowed */
    if (dq == NULL) {
        if (!PyErr_Occurred())
            return h[H_CLASS] == HEAD_CKPT ? 2 : 1;
        goto error;
    }
    Py_ssize_t len = PyObject_Length(dq);
    if (len < 0)
        goto error;
    if (len > 0) {      /* _catch_up: its newest line, when it has a header (else Python reads on) */
        Py_ssize_t own = h[H_OWN];
        uchar *os, *oe;
        long oh[H_N], days;
        Seen seen = {NULL, NULL, NULL};
        if (own < 0 || own >= i || !line_at(f->in.buf, f->in.len, f->in.st, f->in.n, own, &os, &oe)
            || oe - os < klen || memcmp(os, ls, (size_t)klen) != 0 || source_key(os, oe) != klen
            || !(own_fields(h, oh, oe - os)
                 || ((seen.hend = header_end(os, oe, klen)) != NULL && miles_head(os, oe, 1, klen, &seen, oh)
                     && epoch_days(os + oh[H_DATE], &days) && head_fits(oh, oe - os)))) {
            Py_CLEAR(*key);
            return 0;
        }
        *pid = kid_str(f, h[H_KID], os, oh, 1);   /* (its key's bytes are this line's) */
        *time = head_time_text(os, oh);
        *ts = PyFloat_FromDouble(head_ts(oh));
        if (*pid == NULL || *time == NULL || *ts == NULL)
            goto error;
    }
    if (skipped_drop(skipped, *key, 1) < 0)
        goto error;
    return h[H_CLASS] == HEAD_CKPT ? 2 : 1;
error:
    Py_CLEAR(*key);
    Py_CLEAR(*pid);
    Py_CLEAR(*time);
    Py_CLEAR(*ts);
    return -1;
}

/* The rest of _headerless for checkpoint line i (candidate q, quiet_fold's 2): its event, at its
 * source's newest time (last_time[pid] once the kept-back times are in, as _catch_up left it;
 * (None, None) when it has none), appended to out; in a `lean` read none is made (_hand_out:
 * not a kind STORE_EVENT_KINDS keeps).  0, or -1 with an error set. */
static PyObject *ckpt_s[3];     /* "checkpoint_saved", "checkpoint_start", "iteration" */

static int ckpt_fold(FoldObject *f, Py_ssize_t q, Py_ssize_t i, Py_ssize_t base, int lean, PendTime *pend,
                     int *npend, PyObject *last_time, PyObject *out)
{
    if (lean)
        return 0;
    static const char *const text[3] = {"checkpoint_saved", "checkpoint_start", "iteration"};
    for (int k = 0; k < 3; k++)
        if (ckpt_s[k] == NULL && (ckpt_s[k] = PyUnicode_InternFromString(text[k])) == NULL)
            return -1;
    const long *h = f->in.head[f->out.orig[q]];
    uchar *ls, *le;
    if (!line_at(f->in.buf, f->in.len, f->in.st, f->in.n, i, &ls, &le)) {
        PyErr_SetString(PyExc_ValueError, "fold: a head outside the buffer");
        return -1;
    }
    if (pend_flush(pend, npend, last_time) < 0)
        return -1;
    PyObject *pid = kid_str(f, h[H_KID], ls, h, 1);
    if (pid == NULL)
        return -1;
    PyObject *when = PyDict_GetItemWithError(last_time, pid);   /* borrowed */
    Py_DECREF(pid);
    if (when == NULL && PyErr_Occurred())
        return -1;
    if (when != NULL && (!PyTuple_CheckExact(when) || PyTuple_GET_SIZE(when) != 2)) {
        PyErr_SetString(PyExc_TypeError, "fold: a source's time is not a (time, ts) pair");
        return -1;
    }
    long long it = bounded_digits(ls + h[H_KIND], ls + h[H_KIND_END]);
    PyObject *data = PyDict_New(), *v = it < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(it);
    if (data == NULL || v == NULL || PyDict_SetItem(data, ckpt_s[2], v) < 0) {
        Py_XDECREF(data);
        Py_XDECREF(v);
        return -1;
    }
    Py_DECREF(v);
    uchar *t0 = ls + h[H_MSG], *te = ls + h[H_END_B];    /* msg.strip() (ASCII: quiet_head) */
    while (t0 < te && SPACE(*t0))
        t0++;
    while (te > t0 && SPACE(te[-1]))
        te--;
    PyObject *fl[E_FIELDS] = {
        [E_KIND] = Py_NewRef(ckpt_s[h[H_ROLE] ? 0 : 1]),
        [E_TIME] = Py_NewRef(when != NULL ? PyTuple_GET_ITEM(when, 0) : Py_None),
        [E_TS] = Py_NewRef(when != NULL ? PyTuple_GET_ITEM(when, 1) : Py_None),
        [E_LINE_NO] = PyLong_FromSsize_t(base + i + 1),
        [E_TEXT] = PyUnicode_DecodeASCII((const char *)t0, te - t0, NULL),
        [E_DATA] = data,
        [E_LINES] = PyList_New(0),
    };
    PyObject *ev = slot_object(&event_type, fl, E_FIELDS);
    if (ev == NULL)
        return -1;
    int rc = PyList_Append(out, ev);
    Py_DECREF(ev);
    return rc;
}

#define FOLD_RUN_ARGS 18

/* Fold.run(i, ci, ki, base, names, max_names, last_time, skipped, last_error, source_key, new_deque,
 *          tail_unread, last_ts, out, lean, noise_empty, tail_from, tail_whole)
 *   -> (i, ci, ki, lines, noise, metric_lines, records, event_lines, unreadable, last_ts, cur_key,
 *       line_cut_reset, stamped_cleared, stamped_lazy, noise_state, tail_a, tail_b, tail_clear)
 * stamped_lazy: the line _stamped_lazy now reads (-1: as before, or cleared); noise_state: 0 as
 * before, 1 a head cleared it, 2 the lines [tail_a, tail_b) are the lazy tail (after emptying
 * the deque when tail_clear): the runs and quiet lines that came after the last head, one
 * stretch.  lean: an `ft ` event head is counted and booked but not made (lean_ft;
 * LineParser.store_events_only).  noise_empty: the parser's noise run is empty (_has_noise).
 * tail_from, tail_whole: where an unread tail is this buffer's lines [tail_from, i), the newest of
 * the noise run (tail_whole: all of it), as LineParser._tail_here finds it; -1: it is not (the
 * walk then stops at a short run, and leaves a quiet head to Python, while the tail is unread).
 * Why: after a short run's stop Python's loop leaves the tail unread again, and in a burst of
 * quiet heads between short runs (tqdm lines between engine lines) every head went to Python. */
/* Lines [a, b) pushed on the noise run (_lazy_run, _noise_push) as Fold.run hands it back: the
 * lazy tail [*ta, *tb), the deque emptied first when *clear.  After a run or a quiet line (state
 * 2) the tail ends at a, and grows; else it starts at a, the deque emptied when a head came first
 * in this walk (cleared: it emptied the deque). */
static void noise_tail(int *state, Py_ssize_t *ta, Py_ssize_t *tb, int *clear, Py_ssize_t a, Py_ssize_t b,
                       int cleared)
{
    if (*state == 2) {
        *tb = b;
    } else {
        *state = 2;
        *ta = a;
        *tb = b;
        *clear = cleared;
    }
    if (*tb - *ta >= REJOIN_PARTS) {   /* the tail alone fills the deque */
        *ta = *tb - REJOIN_PARTS;
        *clear = 1;
    }
}

static PyObject *fold_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    FoldObject *f = (FoldObject *)self;
    if (nargs != FOLD_RUN_ARGS) {
        PyErr_SetString(PyExc_TypeError, "Fold.run() takes 18 arguments");
        return NULL;
    }
    PyObject *names = args[4], *last_time = args[6], *skipped = args[7], *last_error = args[8],
             *source_key = args[9], *new_deque = args[10], *out = args[13];
    if (!PyList_CheckExact(out) || !PySet_CheckExact(names) || !PyDict_CheckExact(last_time)
        || !PyDict_CheckExact(skipped) || !PyDict_CheckExact(last_error)) {
        PyErr_SetString(PyExc_TypeError, "Fold.run(): a set, dicts and a list expected");
        return NULL;
    }
    Py_ssize_t n = f->in.n, i = PyLong_AsSsize_t(args[0]), ci = PyLong_AsSsize_t(args[1]),
               ki = PyLong_AsSsize_t(args[2]), base = PyLong_AsSsize_t(args[3]), max_names = PyLong_AsSsize_t(args[5]);
    int tail_unread = PyObject_IsTrue(args[11]), lean = PyObject_IsTrue(args[14]),
        noise_empty = PyObject_IsTrue(args[15]), tail_whole = PyObject_IsTrue(args[17]);
    Py_ssize_t tail_from = PyLong_AsSsize_t(args[16]);
    if (PyErr_Occurred() || tail_unread < 0 || lean < 0 || noise_empty < 0 || tail_whole < 0)
        return NULL;
    if (i < 0 || ci < 0 || ci > f->out.nc || ki < 0 || ki > f->out.nk || f->out.cand[ci] < i) {
        PyErr_SetString(PyExc_ValueError, "Fold.run(): a position the fold does not have");
        return NULL;
    }
    Py_ssize_t lines = 0, noise = 0, metric = 0, records = 0, events = 0, unreadable = 0;
    Py_ssize_t st_lazy = -1, tail_a = 0, tail_b = 0;
    int cut_reset = 0, st_clear = 0, head_seen = 0, noise_state = 0, tail_clear = 0;
    if (tail_unread && tail_from >= 0 && tail_from < i) {
        /* the unread tail is this buffer's lines [tail_from, i) (and nothing older: tail_whole),
         * as a run this walk took would leave it: the walk goes on from there (noise_tail) */
        noise_state = 2;
        tail_a = tail_from;
        tail_b = i;
        tail_clear = tail_whole;
        if (tail_b - tail_a >= REJOIN_PARTS) {   /* (the deque holds the newest alone) */
            tail_a = tail_b - REJOIN_PARTS;
            tail_clear = 1;
        }
    }
    PyObject *newest = Py_NewRef(args[12]), *cur_key = Py_NewRef(Py_None);
    const Py_ssize_t *cand = f->out.cand, *keep = f->out.keep;
    PendTime pend[PEND_MAX];
    int npend = 0;
    while (i < n) {
        Py_ssize_t j = cand[ci];                /* (cand[nc] = n: ci stays within the fold) */
        if (j > i) {                            /* lines i..j-1: a noise run */
            if (j - i < REJOIN_PARTS && tail_unread && noise_state == 0)
                break;                          /* the loop reads the unread tail first */
            lines += j - i;
            noise += j - i;
            if (f->out.run_last[ci] >= i) {     /* _take_folded */
                cut_reset = st_clear = 1;
                st_lazy = -1;
                if (fold_take(f, ci, i, &newest, &cur_key, pend, &npend, last_time, skipped, last_error) < 0)
                    goto error;
            }
            while (keep[ki] < i)
                ki++;
            while (keep[ki] < j) {
                if (fold_keep(f, ki, skipped, source_key, new_deque) < 0)
                    goto error;
                ki++;
            }
            if (f->out.lasts[ci] >= i)          /* the run's newest stamped line */
                st_lazy = f->out.lasts[ci];
            noise_tail(&noise_state, &tail_a, &tail_b, &tail_clear, i, j, head_seen);
            tail_unread = 1;
            i = j;
            if (i >= n)
                break;
        }
        if (noise_state != 0 || !tail_unread) {  /* _feed_quiet (an unread tail: Python's loop) */
            PyObject *key, *pid, *time, *ts;
            int got = quiet_fold(f, ci, i, noise_state == 1 || (noise_state == 0 && noise_empty),
                                 noise_state == 2 ? tail_a : i, noise_state == 2 && tail_clear, lean, skipped,
                                 &key, &pid, &time, &ts);
            if (got < 0)
                goto error;
            if (got) {      /* _head_line, _catch_up (quiet_fold popped the deque), a noise line */
                lines++;
                cut_reset = 1;
                Py_SETREF(cur_key, key);
                int bad = pid != NULL && pend_set(pend, &npend, pid, time, ts, NULL, NULL, last_time, -1) < 0;
                Py_XDECREF(pid);
                Py_XDECREF(time);
                Py_XDECREF(ts);
                if (bad || (got == 2 && ckpt_fold(f, ci, i, base, lean, pend, &npend, last_time, out) < 0))
                    goto error;
                if (got == 2) {     /* an event: counted, the noise run cleared (as after a head) */
                    events++;
                    head_seen = 1;
                    noise_state = 1;
                    tail_unread = 0;
                } else {
                    noise++;
                    noise_tail(&noise_state, &tail_a, &tail_b, &tail_clear, i, i + 1, head_seen || noise_empty);
                    tail_unread = 1;
                }
                i++;
                while (cand[ci] < i)
                    ci++;
                continue;
            }
        }
        if (lean) {
            PyObject *key, *pid, *time, *ts, *err;
            int got = lean_ft(f, ci, &key, &pid, &time, &ts, &err);
            if (got < 0)
                goto error;
            if (got) {      /* the event's books, as below; no Event made, none handed out */
                lines++;
                cut_reset = st_clear = head_seen = 1;
                st_lazy = -1;
                Py_SETREF(cur_key, key);
                int bad = newer_time(&newest, ts) < 0 || pend_set(pend, &npend, pid, time, ts, NULL, NULL, last_time, -1) < 0
                          || (PyDict_GET_SIZE(skipped) && skipped_drop(skipped, cur_key, 0) < 0)
                          || (err != Py_None && PyDict_SetItem(last_error, pid, err) < 0);
                Py_DECREF(pid);
                Py_DECREF(time);
                Py_DECREF(ts);
                Py_DECREF(err);
                if (bad)
                    goto error;
                noise_state = 1;
                tail_unread = 0;
                events++;
                i++;
                while (cand[ci] < i)
                    ci++;
                continue;
            }
        }
        PyObject *h = fold_head(f, ci);
        if (h == NULL)
            goto error;
        Py_ssize_t hl = PyTuple_CheckExact(h) ? PyTuple_GET_SIZE(h) : 0;
        if (hl != 3 && hl != 4)
            break;                              /* Python reads this line */
        const SlotType *t = hl == 3 ? &record_type : &event_type;
        PyObject *item = PyTuple_GET_ITEM(h, hl - 1), *pid = PyTuple_GET_ITEM(h, 1);
        if (t->type == NULL || !Py_IS_TYPE(item, t->type))
            break;
        PyObject *values = hl == 3 ? SLOT(item, t, R_METRICS) : NULL;
        PyObject *time = SLOT(item, t, hl == 3 ? R_TIME : E_TIME), *ts = SLOT(item, t, hl == 3 ? R_TS : E_TS);
        if ((hl == 3 && values == NULL) || time == NULL || ts == NULL)
            break;                              /* not as fold made it: Python's */
        if (values != NULL) {
            int fits = PyDict_CheckExact(values) ? take_names(names, values, max_names)
                       : Packed_Check(values) ? take_shape(names, ((PackedObject *)values)->shape, max_names) : 0;
            if (fits < 0)
                goto error;
            if (!fits)
                break;                          /* _capped: Python's */
        }
        /* _feed_ready: the line number, _head_seen, the noise cleared, the item */
        PyObject *line_no = PyLong_FromSsize_t(base + i + 1);
        if (line_no == NULL)
            goto error;
        Py_XSETREF(SLOT(item, t, hl == 3 ? R_LINE_NO : E_LINE_NO), line_no);
        lines++;
        cut_reset = st_clear = head_seen = 1;
        st_lazy = -1;
        Py_SETREF(cur_key, Py_NewRef(PyTuple_GET_ITEM(h, 0)));
        if (newer_time(&newest, ts) < 0 || pend_set(pend, &npend, pid, time, ts, NULL, NULL, last_time, -1) < 0
            || (PyDict_GET_SIZE(skipped) && skipped_drop(skipped, PyTuple_GET_ITEM(h, 0), 0) < 0))
            goto error;
        noise_state = 1;
        tail_unread = 0;
        if (values != NULL) {
            if (Packed_Check(values) || PyDict_GET_SIZE(values)) {
                metric++;
                records++;
                if (PyList_Append(out, item) < 0)
                    goto error;
            } else {
                unreadable++;
            }
        } else {
            PyObject *err = PyTuple_GET_ITEM(h, 2);
            if (err != Py_None && PyDict_SetItem(last_error, pid, err) < 0)
                goto error;
            events++;
            if (PyList_Append(out, item) < 0)
                goto error;
        }
        i++;
        while (cand[ci] < i)
            ci++;
    }
    if (pend_flush(pend, &npend, last_time) < 0)
        goto error;
    return Py_BuildValue("(nnnnnnnnnNNiininni)", i, ci, ki, lines, noise, metric, records, events, unreadable,
                         newest, cur_key, cut_reset, st_clear, st_lazy, noise_state, tail_a, tail_b, tail_clear);
error:
    pend_clear(pend, &npend);
    Py_DECREF(newest);
    Py_DECREF(cur_key);
    return NULL;
}

static PyObject *fold_get_n(PyObject *self, void *Py_UNUSED(c)) { return PyLong_FromSsize_t(((FoldObject *)self)->in.n); }

static PyObject *fold_get_starts(PyObject *self, void *Py_UNUSED(c))
{
    Raw *r = PyCapsule_GetPointer(((FoldObject *)self)->walk, RAW_NAME);
    return r == NULL ? NULL : Py_NewRef(r->starts);
}

static PyMethodDef fold_methods[] = {
    {"cand", fold_m_cand, METH_O, "cand(k) -> the line of candidate k (k = count: the block's line count)."},
    {"keep", fold_m_keep, METH_O, "keep(k) -> the line of kept line k (k = count: the block's line count)."},
    {"head", fold_m_head, METH_O, "head(k) -> candidate k's head (ready, offsets or None; one object)."},
    {"last", fold_m_last, METH_O, "last(k) -> the newest stamped line of the run before candidate k, or -1."},
    {"fold", fold_m_fold, METH_O, "fold(k) -> the fold tuple of the run before candidate k, or None."},
    {"kept", fold_m_kept, METH_O, "kept(k) -> (key or None, text) of kept line k."},
    {"lists", fold_m_lists, METH_NOARGS, "lists() -> (cands, keep, heads, lasts, folds, kept), as fold() gives them."},
    {"run", (PyCFunction)(void (*)(void))fold_run, METH_FASTCALL, "run(..., lean) -> ready_run over this fold."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef fold_getset[] = {
    {"n", fold_get_n, NULL, "the block's line count", NULL},
    {"starts", fold_get_starts, NULL, "the lines' offsets (n + 1 int64)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyTypeObject Fold_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grpo_tui.lines._scan.Fold",
    .tp_basicsize = sizeof(FoldObject),
    .tp_dealloc = fold_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A block's fold as arrays (see _scan.c: Fold).",
    .tp_methods = fold_methods,
    .tp_getset = fold_getset,
};

/* ---- store rows (store/metric_store.py's short paths) ------------------------------------ */

/* The float64 cells of a writable 1-d 'd' memoryview, or NULL when it is anything else. */
static double *cells_of(PyObject *view, Py_ssize_t row)
{
    if (!PyMemoryView_Check(view) || (((PyMemoryViewObject *)view)->flags & _Py_MEMORYVIEW_RELEASED))
        return NULL;   /* a released view: its buffer may be gone (the pure writer raises there) */
    Py_buffer *b = PyMemoryView_GET_BUFFER(view);
    if (b->readonly || b->itemsize != 8 || b->ndim != 1 || b->format == NULL || strcmp(b->format, "d") != 0
        || b->shape == NULL || row < 0 || row >= b->shape[0] || (b->strides != NULL && b->strides[0] != 8)
        || ((uintptr_t)b->buf & (sizeof(double) - 1)) != 0)
        return NULL;
    return (double *)b->buf;
}

/* The n values of the dict `values` as doubles into out when each is of the type types[j] and
 * that is float or int (an int as float() converts it): 1, else 0 (nothing for the caller to
 * write; -1 only when out of memory). */
static int row_values(PyObject *values, PyObject *types, Py_ssize_t n, double *out)
{
    Py_ssize_t pos = 0, j = 0;
    PyObject *k, *v;
    while (PyDict_Next(values, &pos, &k, &v)) {
        if (j >= n || (PyObject *)Py_TYPE(v) != PyTuple_GET_ITEM(types, j))
            return 0;
        if (PyFloat_CheckExact(v)) {
            out[j] = PyFloat_AS_DOUBLE(v);
        } else if (PyLong_CheckExact(v)) {
            out[j] = PyLong_AsDouble(v);
            if (out[j] == -1.0 && PyErr_Occurred()) {   /* past float64: the Python path says how */
                PyErr_Clear();
                return 0;
            }
        } else {
            return 0;
        }
        j++;
    }
    return j == n;
}

#define ROW_STACK 64

/* Shared by put_row and add_row: the arguments checked, the values read; returns the value
 * count (> 0), 0 for "take the Python path", -1 with an error set. */
static Py_ssize_t row_args(PyObject *const *args, Py_ssize_t nargs, int nviews, Py_ssize_t *row, double **vals,
                           double *stack)
{
    if (nargs != nviews + 3) {
        PyErr_SetString(PyExc_TypeError, "put_row/add_row: wrong number of arguments");
        return -1;
    }
    PyObject *values = args[nviews + 1], *types = args[nviews + 2];
    *row = PyLong_AsSsize_t(args[nviews]);
    if (*row == -1 && PyErr_Occurred())
        return -1;
    if (!PyDict_CheckExact(values) || !PyTuple_CheckExact(types))
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(types);
    for (int v = 0; v < nviews; v++)
        if (!PyTuple_CheckExact(args[v]) || PyTuple_GET_SIZE(args[v]) != n)
            return 0;
    if (n == 0 || PyDict_GET_SIZE(values) != n)
        return 0;
    *vals = n <= ROW_STACK ? stack : PyMem_Malloc((size_t)n * sizeof(double));
    if (*vals == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (!row_values(values, types, n, *vals)) {
        if (*vals != stack)
            PyMem_Free(*vals);
        return 0;
    }
    return n;
}

/* put_row(views, row, values, types) -> bool: Segment.add_record's short path. */
static PyObject *put_row(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    double stack[ROW_STACK], *vals = NULL;
    Py_ssize_t row, n = row_args(args, nargs, 1, &row, &vals, stack);
    if (n <= 0)
        return n < 0 ? NULL : Py_NewRef(Py_False);
    /* every view checked before any is written; its cells then take the value read in place */
    int ok = 1;
    for (Py_ssize_t j = 0; ok && j < n; j++)
        ok = cells_of(PyTuple_GET_ITEM(args[0], j), row) != NULL;
    for (Py_ssize_t j = 0; ok && j < n; j++)
        ((double *)PyMemoryView_GET_BUFFER(PyTuple_GET_ITEM(args[0], j))->buf)[row] = vals[j];
    if (vals != stack)
        PyMem_Free(vals);
    return Py_NewRef(ok ? Py_True : Py_False);
}

/* add_row(sums, counts, row, values, types) -> bool: Segment._add_step's short path (each
 * value into its rollout's sum and count; a NaN count is the rollout's first step). */
static PyObject *add_row(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    double stack[ROW_STACK], *vals = NULL;
    Py_ssize_t row, n = row_args(args, nargs, 2, &row, &vals, stack);
    if (n <= 0)
        return n < 0 ? NULL : Py_NewRef(Py_False);
    int ok = 1;
    for (Py_ssize_t j = 0; ok && j < n; j++)
        ok = cells_of(PyTuple_GET_ITEM(args[0], j), row) != NULL && cells_of(PyTuple_GET_ITEM(args[1], j), row) != NULL;
    for (Py_ssize_t j = 0; ok && j < n; j++) {
        double *sum = PyMemoryView_GET_BUFFER(PyTuple_GET_ITEM(args[0], j))->buf;
        double *cnt = PyMemoryView_GET_BUFFER(PyTuple_GET_ITEM(args[1], j))->buf;
        if (isnan(cnt[row])) {
            sum[row] = vals[j];
            cnt[row] = 1.0;
        } else {
            sum[row] += vals[j];
            cnt[row] += 1.0;
        }
    }
    if (vals != stack)
        PyMem_Free(vals);
    return Py_NewRef(ok ? Py_True : Py_False);
}

/* put_row for a Packed: its values into the views' cells at row when each is of the type types
 * says (an int as float() converts it): 1 written, 0 nothing written (the Python path). */
static int put_packed(PyObject *views, Py_ssize_t row, PyObject *packed, PyObject *types)
{
    PackedObject *p = (PackedObject *)packed;
    Py_ssize_t n = Py_SIZE(p);
    if (!PyTuple_CheckExact(views) || !PyTuple_CheckExact(types) || PyTuple_GET_SIZE(views) != n
        || PyTuple_GET_SIZE(types) != n)
        return 0;
    double vals[PACK_MAX];
    for (Py_ssize_t j = 0; j < n; j++) {
        PyTypeObject *want = p->v[j].is_int ? &PyLong_Type : &PyFloat_Type;
        if ((PyObject *)want != PyTuple_GET_ITEM(types, j) || cells_of(PyTuple_GET_ITEM(views, j), row) == NULL)
            return 0;
        vals[j] = p->v[j].is_int ? packed_int_double(p->v[j].x.i) : p->v[j].x.d;
        if (vals[j] == -1.0 && PyErr_Occurred())
            return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++)
        ((double *)PyMemoryView_GET_BUFFER(PyTuple_GET_ITEM(views, j))->buf)[row] = vals[j];
    return 1;
}

/* The record's values as a dict, set on the record when they were a Packed (Python's methods
 * then read the record as the parser's other paths make it): a borrowed reference, or NULL. */
static PyObject *unpacked(PyObject *rec)
{
    PyObject **slot = &SLOT(rec, &record_type, R_METRICS);
    if (Packed_Check(*slot)) {
        PyObject *d = packed_dict(*slot);
        if (d == NULL)
            return NULL;
        Py_SETREF(*slot, d);
    }
    return *slot;
}

/* ---- store_run: MetricStore.add's loop over the records it only files ------------------------
 *
 * MetricStore.add hands each item to Segment.add_record (after its restart check); for the
 * common record that is a few dict updates per record, and Python's own cost of the calls was
 * most of it.  store_run files a stretch of records as that loop would, in the same order and
 * with the same steps, calling back into the segment's own methods where it makes or changes
 * structure (a new row: _row; a record of a new shape: _add_values and _learn_shape; a new
 * step: _add_step), and the events that are only listed.  It stops, before touching anything
 * for that item, at anything else: a launch or arg event, a record that is not set_types()' class or carries odd field types, a nan/inf token,
 * a verl/trl record, a record the restart check would call a restart, a rollout-manager test
 * not yet memoised.  MetricStore.add then takes that one item the Python way and calls again. */

static PyObject *S_RECORDS, *S_FIRST_RTS, *S_LAST_RTS, *S_LAST_LINE, *S_LAST_TRAIN, *S_ROW_OF, *S_KINDS,
    *S_FIRST_TS, *S_LAST_TS, *S_VIEW, *S_SHAPES, *S_INT_VERSION, *S_OBJECTS, *S_IDS, *S_STEPS, *S_STREAM_MAX,
    *S_DUP_STEPS, *S_ROW, *S_STAMP, *S_ADD_VALUES, *S_LEARN_SHAPE, *S_ADD_STEP, *S_ROLLOUT, *S_PERF, *S_STEP,
    *S_PERF_RM, *S_VERL, *S_TRL, *S_RM_ACTOR, *S_RM_PROC, *S_ROLLOUT_ATTR, *S_LAUNCH, *S_ARG, *S_AFTER, *S_MAX_ID,
    *S_EVENTS, *S_ONE, *S_CAP, *S_IDCOL, *S_ORDERED, *S_FLAG_MEMO, *S_FLAGS, *S_SEEN, *S_STEPS_K, *S_STEP_ROLLOUT,
    *S_K_INFERRED, *S_STEP_ORDER, *S_ROLLOUT_STEPS, *S_STEPS_OF, *S_MAX_STEPS, *S_STEP_SHAPES, *S_ADD_STEP_VALUES,
    *S_LEARN_STEP_SHAPE, *S_STEPS_PER_ROLLOUT, *S_FLAG_KEYS[4];

static int store_names(void)
{
    if (S_ONE != NULL)
        return 0;
    struct { PyObject **slot; const char *text; } names[] = {
        {&S_RECORDS, "records"}, {&S_FIRST_RTS, "first_record_ts"}, {&S_LAST_RTS, "last_record_ts"},
        {&S_LAST_LINE, "last_record_line"}, {&S_LAST_TRAIN, "_last_train_rollout"}, {&S_ROW_OF, "row_of"},
        {&S_KINDS, "kinds"}, {&S_FIRST_TS, "first_ts"}, {&S_LAST_TS, "last_ts"}, {&S_VIEW, "view"},
        {&S_SHAPES, "_shapes"}, {&S_INT_VERSION, "_int_version"}, {&S_OBJECTS, "objects"}, {&S_IDS, "ids"},
        {&S_STEPS, "steps"}, {&S_STREAM_MAX, "_stream_max"}, {&S_DUP_STEPS, "duplicate_steps"},
        {&S_ROW, "_row"}, {&S_STAMP, "_stamp"}, {&S_ADD_VALUES, "_add_values"}, {&S_LEARN_SHAPE, "_learn_shape"},
        {&S_ADD_STEP, "_add_step"}, {&S_ROLLOUT, "rollout"}, {&S_PERF, "perf"}, {&S_STEP, "step"},
        {&S_PERF_RM, "perf_rm"}, {&S_VERL, "verl"}, {&S_TRL, "trl"}, {&S_RM_ACTOR, "RolloutManager"},
        {&S_RM_PROC, "rollout_manager"}, {&S_ROLLOUT_ATTR, "rollout"}, {&S_LAUNCH, "launch"}, {&S_ARG, "arg"},
        {&S_AFTER, "after_rollout"}, {&S_MAX_ID, "_max_id"}, {&S_EVENTS, "events"},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (*names[k].slot == NULL && (*names[k].slot = PyUnicode_InternFromString(names[k].text)) == NULL)
            return -1;
    struct { PyObject **slot; const char *text; } more[] = {
        {&S_CAP, "_cap"}, {&S_IDCOL, "_idcol"}, {&S_ORDERED, "ordered"}, {&S_FLAG_MEMO, "_flag_memo"},
        {&S_FLAGS, "flags"}, {&S_SEEN, "_seen"}, {&S_STEPS_K, "_steps"}, {&S_STEP_ROLLOUT, "_step_rollout"},
        {&S_K_INFERRED, "_k_inferred"}, {&S_STEP_ORDER, "step_order"}, {&S_ROLLOUT_STEPS, "rollout_steps"},
        {&S_STEPS_OF, "steps_of_rollout"}, {&S_MAX_STEPS, "_max_steps"}, {&S_STEP_SHAPES, "_step_shapes"},
        {&S_ADD_STEP_VALUES, "_add_step_values"}, {&S_LEARN_STEP_SHAPE, "_learn_step_shape"},
        {&S_STEPS_PER_ROLLOUT, "steps_per_rollout"},
        /* FlagsMemo._fresh's flags, in its order */
        {&S_FLAG_KEYS[0], "num-steps-per-rollout"}, {&S_FLAG_KEYS[1], "rollout-batch-size"},
        {&S_FLAG_KEYS[2], "n-samples-per-prompt"}, {&S_FLAG_KEYS[3], "global-batch-size"},
    };
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++)
        if (*more[k].slot == NULL && (*more[k].slot = PyUnicode_InternFromString(more[k].text)) == NULL)
            return -1;
    return (S_ONE = PyLong_FromLong(1)) == NULL ? -1 : 0;
}

/* a == b as Python's ==: 1, 0, or -1 with an error set */
static int same(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b))
        return PyUnicode_Compare(a, b) == 0 ? 1 : (PyErr_Occurred() ? -1 : 0);
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* d[name] (borrowed), or NULL with a KeyError set when it is missing. */
static PyObject *entry(PyObject *d, PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(d, name);
    if (v == NULL && !PyErr_Occurred())
        PyErr_SetObject(PyExc_KeyError, name);
    return v;
}

/* tuple(metrics): the names in order (a Packed's shape). */
static PyObject *names_of(PyObject *metrics)
{
    if (Packed_Check(metrics))
        return Py_NewRef(((PackedObject *)metrics)->shape);
    PyObject *t = PyTuple_New(PyDict_GET_SIZE(metrics)), *k, *v;
    Py_ssize_t pos = 0, j = 0;
    if (t == NULL)
        return NULL;
    while (PyDict_Next(metrics, &pos, &k, &v))
        PyTuple_SET_ITEM(t, j++, Py_NewRef(k));
    return t;
}

/* seg.method(*args) with up to 2 arguments: a new reference or NULL. */
static PyObject *call_seg(PyObject *seg, PyObject *name, PyObject *a, PyObject *b)
{
    PyObject *args[3] = {seg, a, b};
    return PyObject_VectorcallMethod(name, args, b != NULL ? 3 : a != NULL ? 2 : 1, NULL);
}

/* Segment._stamp(row, ts) for a float ts: the first time once, the last time always. */
static int stamp_row(PyObject *d, PyObject *seg, PyObject *row, Py_ssize_t r, PyObject *ts)
{
    PyObject *first = entry(d, S_FIRST_TS), *last = entry(d, S_LAST_TS);
    if (first == NULL || last == NULL)
        return -1;
    PyObject *fv = PyObject_GetAttr(first, S_VIEW), *lv = fv == NULL ? NULL : PyObject_GetAttr(last, S_VIEW);
    double *f = lv == NULL ? NULL : cells_of(fv, r), *l = f == NULL ? NULL : cells_of(lv, r);
    Py_XDECREF(fv);
    Py_XDECREF(lv);
    if (l == NULL) {        /* not the views _Column keeps: the Python writer decides */
        if (PyErr_Occurred())
            return -1;
        PyObject *got = call_seg(seg, S_STAMP, row, ts);
        Py_XDECREF(got);
        return got == NULL ? -1 : 0;
    }
    double v = PyFloat_AS_DOUBLE(ts);
    if (isnan(f[r]))
        f[r] = v;
    l[r] = v;
    return 0;
}

/* d[name] += 1 for an int entry. */
static int bump(PyObject *d, PyObject *name)
{
    PyObject *v = entry(d, name);
    if (v == NULL)
        return -1;
    PyObject *w = PyNumber_Add(v, S_ONE);
    if (w == NULL)
        return -1;
    int rc = PyDict_SetItem(d, name, w);
    Py_DECREF(w);
    return rc;
}

/* Whether MetricStore.add's restart check (Segment.is_restart) may be skipped or passes for this
 * record: 1 and *stream set (a new reference, or NULL: no stream) when it passes, 0 when Python
 * must look (a restart, an unknown key tuple), -1 on error.  *shape: tuple(metrics) if made. */
static int restart_ok(PyObject *d, PyObject *rec, int is_rollout, PyObject *n, PyObject *rm_keys,
                      PyObject **stream, PyObject **shape)
{
    *stream = NULL;
    PyObject *ids = entry(d, S_IDS), *steps = ids == NULL ? NULL : entry(d, S_STEPS);
    if (steps == NULL)
        return -1;
    int any = PyObject_IsTrue(ids);
    if (any == 0)
        any = PyObject_IsTrue(steps);
    if (any <= 0)
        return any < 0 ? -1 : 1;        /* nothing stored yet: MetricStore.add asks no one */
    PyObject *proc = SLOT(rec, &record_type, R_PROC);
    if (is_rollout) {
        *stream = PyTuple_Pack(3, S_ROLLOUT, proc, SLOT(rec, &record_type, R_ROLE));
    } else {
        int rm = same(SLOT(rec, &record_type, R_ACTOR), S_RM_ACTOR);
        if (rm == 0)
            rm = same(proc, S_RM_PROC);
        if (rm == 0) {
            if (*shape == NULL && (*shape = names_of(SLOT(rec, &record_type, R_METRICS))) == NULL)
                return -1;
            PyObject *known = PyDict_GetItemWithError(rm_keys, *shape);
            if (known == NULL)
                return PyErr_Occurred() ? -1 : 0;      /* _rm_perf works it out (and memoises it) */
            rm = PyObject_IsTrue(known);
        }
        if (rm <= 0)
            return rm < 0 ? -1 : 1;
        *stream = PyTuple_Pack(2, S_PERF_RM, proc);
    }
    if (*stream == NULL)
        return -1;
    PyObject *sm = entry(d, S_STREAM_MAX), *prev = sm == NULL ? NULL : PyDict_GetItemWithError(sm, *stream);
    if (sm == NULL || (prev == NULL && PyErr_Occurred()))
        goto fail;
    if (prev == NULL)
        return 1;
    int later = PyObject_RichCompareBool(n, prev, Py_GT);
    if (later > 0)
        return 1;
fail:
    Py_CLEAR(*stream);
    return PyErr_Occurred() ? -1 : 0;
}

/* Segment._note_kind(row, kind): 0, or -1 with an error set. */
static int note_kind(PyObject *d, PyObject *row, PyObject *kind)
{
    PyObject *kinds = entry(d, S_KINDS);
    if (kinds == NULL)
        return -1;
    PyObject *set = PyDict_GetItemWithError(kinds, row);
    if (set != NULL)
        return PySet_Add(set, kind);
    if (PyErr_Occurred() || (set = PySet_New(NULL)) == NULL)
        return -1;
    int bad = PySet_Add(set, kind) < 0 || PyDict_SetItem(kinds, row, set) < 0;
    Py_DECREF(set);
    return bad ? -1 : 0;
}

/* Segment._row(n) for a rollout id with no row yet (the caller looked): its new row, a new
 * reference.  In C while the columns have room and the id is a plain int a float64 holds
 * exactly; else the segment's own _row (it grows the columns). */
static PyObject *new_row(PyObject *d, PyObject *seg, PyObject *n)
{
    PyObject *ids = entry(d, S_IDS), *row_of = ids ? entry(d, S_ROW_OF) : NULL;
    PyObject *cap = row_of ? entry(d, S_CAP) : NULL, *idcol = cap ? entry(d, S_IDCOL) : NULL;
    PyObject *max_id = idcol ? entry(d, S_MAX_ID) : NULL;
    if (max_id == NULL)
        return NULL;
    if (!PyList_CheckExact(ids) || !PyDict_CheckExact(row_of) || !PyLong_CheckExact(cap) || !PyLong_CheckExact(n))
        return call_seg(seg, S_ROW, n, NULL);
    Py_ssize_t row = PyList_GET_SIZE(ids), room = PyLong_AsSsize_t(cap);
    int over = 0;
    long long v = PyLong_AsLongLongAndOverflow(n, &over);
    if ((room == -1 || v == -1) && PyErr_Occurred())
        return NULL;
    if (row >= room || over || v > (1LL << 53) || v < -(1LL << 53))
        return call_seg(seg, S_ROW, n, NULL);
    PyObject *view = PyObject_GetAttr(idcol, S_VIEW);
    double *cells = view == NULL ? NULL : cells_of(view, row);
    Py_XDECREF(view);
    if (cells == NULL)
        return PyErr_Occurred() ? NULL : call_seg(seg, S_ROW, n, NULL);
    if (row > 0) {
        int back = PyObject_RichCompareBool(n, PyList_GET_ITEM(ids, row - 1), Py_LT);
        if (back < 0 || (back && PyDict_SetItem(d, S_ORDERED, Py_False) < 0))
            return NULL;
    }
    PyObject *r = PyLong_FromSsize_t(row);
    if (r == NULL || PyList_Append(ids, n) < 0 || PyDict_SetItem(row_of, n, r) < 0) {
        Py_XDECREF(r);
        return NULL;
    }
    int later = max_id == Py_None ? 1 : PyObject_RichCompareBool(n, max_id, Py_GT);
    if (later < 0 || (later && PyDict_SetItem(d, S_MAX_ID, n) < 0)) {
        Py_DECREF(r);
        return NULL;
    }
    cells[row] = (double)v;
    return r;
}

/* Whether the segment's FlagsMemo is fresh: the four flags it read (FlagsMemo._fresh) are these
 * very objects in the flags now, so its K and groups hold.  1, 0, or -1 with an error set;
 * *memo the memo (borrowed), *values (when given) the flags' four values (borrowed). */
static int memo_fresh(PyObject *d, PyObject **memo, PyObject **values)
{
    PyObject *flags = (*memo = entry(d, S_FLAG_MEMO)) ? entry(d, S_FLAGS) : NULL;
    if (flags == NULL)
        return -1;
    PyObject *seen = PyObject_GetAttr(*memo, S_SEEN);
    if (seen == NULL)
        return -1;
    int fresh = PyTuple_CheckExact(seen) && PyTuple_GET_SIZE(seen) == 4 && PyDict_CheckExact(flags);
    for (int q = 0; fresh > 0 && q < 4; q++) {
        PyObject *v = PyDict_GetItemWithError(flags, S_FLAG_KEYS[q]);
        if (v == NULL && PyErr_Occurred())
            fresh = -1;
        else if ((fresh = (v == NULL ? Py_None : v) == PyTuple_GET_ITEM(seen, q)) && values != NULL)
            values[q] = v == NULL ? Py_None : v;
    }
    Py_DECREF(seen);
    return fresh;
}

/* Segment._step_rollout(n): n // K when the flags' K is known and FlagsMemo's memo of it is
 * fresh (the flags it read are these very objects); else the segment's own method. */
static PyObject *step_rollout(PyObject *d, PyObject *seg, PyObject *n)
{
    PyObject *memo;
    int fresh = memo_fresh(d, &memo, NULL);
    if (fresh < 0)
        return NULL;
    PyObject *k = fresh ? PyObject_GetAttr(memo, S_STEPS_K) : NULL;
    if (fresh && k == NULL)
        return NULL;
    if (k != NULL && PyLong_CheckExact(k) && _PyLong_Sign(k) > 0) {
        PyObject *r = PyNumber_FloorDivide(n, k);
        Py_DECREF(k);
        return r;
    }
    Py_XDECREF(k);
    return call_seg(seg, S_STEP_ROLLOUT, n, NULL);
}

/* StepRow, the store's class of a step (set_step_type()): made as its __init__ would. */
enum { ST_ROLE, ST_N, ST_ROLLOUT, ST_METRICS, ST_TIME, ST_TS, ST_NONFINITE, ST_FIELDS };
static const char *const STEP_FIELDS[ST_FIELDS] = {"role", "n", "rollout", "metrics", "time", "ts", "nonfinite"};
static SlotType step_type;

/* Segment._add_step for a step whose (role, n) `key` is new (the caller looked), its values a
 * dict (or a Packed, made into one: the step row keeps it): the rollout it went to (a new
 * reference), or NULL with an error set.  The same steps in the same order; a step of a new
 * shape or of other value types goes to _add_step_values and _learn_step_shape as there. */
static PyObject *file_step(PyObject *d, PyObject *seg, PyObject *rec, PyObject *n, PyObject *key)
{
    PyObject *metrics = unpacked(rec);
    if (metrics == NULL)
        return NULL;
    if (step_type.type == NULL)
        return call_seg(seg, S_ADD_STEP, rec, NULL);
    PyObject *steps = entry(d, S_STEPS), *order = steps ? entry(d, S_STEP_ORDER) : NULL;
    PyObject *of = order ? entry(d, S_ROLLOUT_STEPS) : NULL, *counts = of ? entry(d, S_STEPS_OF) : NULL;
    PyObject *shapes = counts ? entry(d, S_STEP_SHAPES) : NULL, *row_of = shapes ? entry(d, S_ROW_OF) : NULL;
    if (row_of == NULL)
        return NULL;
    if (!PyDict_CheckExact(steps) || !PyList_CheckExact(order) || !PyDict_CheckExact(of) || !PyDict_CheckExact(counts)
        || !PyDict_CheckExact(shapes) || !PyDict_CheckExact(row_of))
        return call_seg(seg, S_ADD_STEP, rec, NULL);
    PyObject *rollout = step_rollout(d, seg, n);
    if (rollout == NULL)
        return NULL;
    PyObject *ts = SLOT(rec, &record_type, R_TS), *row = NULL, *shape = NULL;
    PyObject *f[ST_FIELDS] = {
        [ST_ROLE] = Py_NewRef(SLOT(rec, &record_type, R_ROLE)), [ST_N] = Py_NewRef(n),
        [ST_ROLLOUT] = Py_NewRef(rollout), [ST_METRICS] = Py_NewRef(metrics),
        [ST_TIME] = Py_NewRef(SLOT(rec, &record_type, R_TIME)), [ST_TS] = Py_NewRef(ts),
        [ST_NONFINITE] = Py_NewRef(SLOT(rec, &record_type, R_NONFINITE)),
    };
    PyObject *step = slot_object(&step_type, f, ST_FIELDS);
    if (step == NULL || PyDict_SetItem(steps, key, step) < 0 || PyList_Append(order, key) < 0)
        goto fail;
    Py_CLEAR(step);
    PyObject *keys = PyDict_GetItemWithError(of, rollout);   /* borrowed */
    if (keys == NULL) {
        PyObject *fresh = PyErr_Occurred() ? NULL : PyList_New(1);
        if (fresh == NULL)
            goto fail;
        PyList_SET_ITEM(fresh, 0, Py_NewRef(key));
        int bad = PyDict_SetItem(of, rollout, fresh) < 0;
        Py_DECREF(fresh);
        if (bad)
            goto fail;
    } else if (PyList_Append(keys, key) < 0) {
        goto fail;
    }
    PyObject *had = PyDict_GetItemWithError(counts, rollout), *now;
    if (had == NULL && PyErr_Occurred())
        goto fail;
    now = had == NULL ? Py_NewRef(S_ONE) : PyNumber_Add(had, S_ONE);
    if (now == NULL)
        goto fail;
    PyObject *most = entry(d, S_MAX_STEPS);
    int more = most == NULL ? -1 : PyObject_RichCompareBool(now, most, Py_GT);
    int bad = more < 0 || PyDict_SetItem(counts, rollout, now) < 0 || (more && PyDict_SetItem(d, S_MAX_STEPS, now) < 0);
    Py_DECREF(now);
    if (bad)
        goto fail;
    row = PyDict_GetItemWithError(row_of, rollout);
    if (row != NULL)
        Py_INCREF(row);
    else if (PyErr_Occurred() || (row = new_row(d, seg, rollout)) == NULL)
        goto fail;
    Py_ssize_t r = PyLong_AsSsize_t(row);
    if ((r == -1 && PyErr_Occurred()) || note_kind(d, row, S_STEP) < 0)
        goto fail;
    if (ts != Py_None && stamp_row(d, seg, row, r, ts) < 0)
        goto fail;
    if ((shape = names_of(metrics)) == NULL)
        goto fail;
    PyObject *known = PyDict_GetItemWithError(shapes, shape);
    int added = 0;
    if (known == NULL && PyErr_Occurred())
        goto fail;
    if (known != NULL && PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 3) {
        PyObject *args[5] = {PyTuple_GET_ITEM(known, 1), PyTuple_GET_ITEM(known, 2), row, metrics,
                             PyTuple_GET_ITEM(known, 0)};
        PyObject *got = add_row(NULL, args, 5);
        if (got == NULL)
            goto fail;
        added = got == Py_True;
        Py_DECREF(got);
    }
    if (!added) {
        PyObject *got = call_seg(seg, S_ADD_STEP_VALUES, row, metrics);
        if (got == NULL)
            goto fail;
        Py_DECREF(got);
        if ((got = call_seg(seg, S_LEARN_STEP_SHAPE, shape, metrics)) == NULL)
            goto fail;
        Py_DECREF(got);
    }
    Py_DECREF(shape);
    Py_DECREF(row);
    return rollout;
fail:
    Py_XDECREF(step);
    Py_XDECREF(shape);
    Py_XDECREF(row);
    Py_DECREF(rollout);
    return NULL;
}

/* *t = cls's slots named `names`, or nothing (and the error) when it has other fields. */
static PyObject *set_slot_type(SlotType *t, PyObject *cls, const char *const *names, int n)
{
    Py_CLEAR(t->type);
    if (slot_type(cls, names, n, t) < 0) {
        Py_CLEAR(t->type);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *set_step_type(PyObject *Py_UNUSED(module), PyObject *cls)
{
    return set_slot_type(&step_type, cls, STEP_FIELDS, ST_FIELDS);
}

/* Segment.add_record's steps after the record's header fields (a record of any kind but step):
 * the row, its kinds, its times, its values.  Returns 0, or -1 with an error set. */
static int file_values(PyObject *d, PyObject *seg, PyObject *rec, PyObject *n, PyObject *kind, PyObject *ts,
                       PyObject **shape)
{
    PyObject *row_of = entry(d, S_ROW_OF);
    if (row_of == NULL)
        return -1;
    PyObject *row = PyDict_GetItemWithError(row_of, n);
    if (row != NULL)
        Py_INCREF(row);
    else if (PyErr_Occurred() || (row = new_row(d, seg, n)) == NULL)
        return -1;
    int rc = -1;
    Py_ssize_t r = PyLong_AsSsize_t(row);
    if ((r == -1 && PyErr_Occurred()) || note_kind(d, row, kind) < 0)
        goto done;
    if (ts != Py_None && stamp_row(d, seg, row, r, ts) < 0)
        goto done;
    PyObject *metrics = SLOT(rec, &record_type, R_METRICS);
    if (*shape == NULL && (*shape = names_of(metrics)) == NULL)
        goto done;
    int packed = Packed_Check(metrics);
    PyObject *shapes = entry(d, S_SHAPES), *version = entry(d, S_INT_VERSION), *objects = entry(d, S_OBJECTS);
    if (shapes == NULL || version == NULL || objects == NULL)
        goto done;
    PyObject *known = PyDict_GetItemWithError(shapes, *shape);
    int put = 0;
    if (known == NULL) {
        if (PyErr_Occurred())
            goto done;
    } else if (PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 3) {
        int fresh = PyObject_RichCompareBool(PyTuple_GET_ITEM(known, 0), version, Py_EQ);
        int none = fresh > 0 ? PyObject_Not(objects) : fresh;
        if (none < 0)
            goto done;
        if (none && packed) {
            put = put_packed(PyTuple_GET_ITEM(known, 2), r, metrics, PyTuple_GET_ITEM(known, 1));
            if (put < 0)
                goto done;
        } else if (none) {
            PyObject *args[4] = {PyTuple_GET_ITEM(known, 2), row, metrics, PyTuple_GET_ITEM(known, 1)};
            PyObject *got = put_row(NULL, args, 4);
            if (got == NULL)
                goto done;
            put = got == Py_True;
            Py_DECREF(got);
        }
    }
    if (!put && packed && (metrics = unpacked(rec)) == NULL)
        goto done;
    if (!put) {
        PyObject *got = call_seg(seg, S_ADD_VALUES, row, metrics);
        if (got == NULL)
            goto done;
        Py_DECREF(got);
        if ((got = call_seg(seg, S_LEARN_SHAPE, *shape, metrics)) == NULL)
            goto done;
        Py_DECREF(got);
    }
    rc = 0;
done:
    Py_DECREF(row);
    return rc;
}

/* MetricStore._add_event for an event that is neither a launch nor an arg dump (those change
 * segments and flags: Python's): 1 when filed, 0 when Python must, -1 on error. */
static int file_event(PyObject *d, PyObject *ev, PyObject *store_events, PyObject *up_events)
{
    PyObject *kind = SLOT(ev, &event_type, E_KIND), *data = SLOT(ev, &event_type, E_DATA);
    if (kind == NULL || !PyUnicode_CheckExact(kind) || data == NULL || !PyDict_CheckExact(data)
        || PyUnicode_Compare(kind, S_LAUNCH) == 0 || PyUnicode_Compare(kind, S_ARG) == 0)
        return 0;
    PyObject *max_id = entry(d, S_MAX_ID), *events = max_id == NULL ? NULL : entry(d, S_EVENTS);
    if (events == NULL || !PyList_CheckExact(events))
        return events == NULL ? -1 : 0;
    if (PyDict_SetDefault(data, S_AFTER, max_id) == NULL || PyList_Append(store_events, ev) < 0
        || PyList_Append(events, ev) < 0 || PyList_Append(up_events, ev) < 0)
        return -1;
    return 1;
}

/* One record of store_run's stretch: 1 filed, 0 left to Python (nothing touched), -1 on error. */
static int file_record(PyObject *d, PyObject *rec, PyObject *rollouts, PyObject *records, PyObject *rm_keys,
                       PyObject *seg)
{
    PyObject *kind = SLOT(rec, &record_type, R_KIND), *n = SLOT(rec, &record_type, R_N);
    PyObject *ts = SLOT(rec, &record_type, R_TS), *nonfinite = SLOT(rec, &record_type, R_NONFINITE);
    PyObject *metrics = SLOT(rec, &record_type, R_METRICS), *source = SLOT(rec, &record_type, R_SOURCE);
    if (kind == NULL || !PyUnicode_CheckExact(kind) || n == NULL || !PyLong_CheckExact(n) || ts == NULL
        || (ts != Py_None && !PyFloat_CheckExact(ts)) || nonfinite == NULL || !PyDict_CheckExact(nonfinite)
        || PyDict_GET_SIZE(nonfinite) != 0 || metrics == NULL || !(PyDict_CheckExact(metrics) || Packed_Check(metrics))
        || source == NULL
        || SLOT(rec, &record_type, R_LINE_NO) == NULL || SLOT(rec, &record_type, R_PROC) == NULL
        || SLOT(rec, &record_type, R_ROLE) == NULL || SLOT(rec, &record_type, R_ACTOR) == NULL)
        return 0;
    int odd = source != Py_None && (!PyUnicode_CheckExact(source) || PyUnicode_Compare(source, S_VERL) == 0
                                     || PyUnicode_Compare(source, S_TRL) == 0);
    if (odd)
        return 0;      /* (PyUnicode_Compare of two exact strs cannot fail) */
    int is_step = PyUnicode_Compare(kind, S_STEP) == 0, is_rollout = PyUnicode_Compare(kind, S_ROLLOUT) == 0;
    int is_perf = !is_step && !is_rollout && PyUnicode_Compare(kind, S_PERF) == 0;
    PyObject *stream = NULL, *shape = NULL;
    if (is_rollout || is_perf) {
        int ok = restart_ok(d, rec, is_rollout, n, rm_keys, &stream, &shape);
        if (ok <= 0) {
            Py_XDECREF(shape);
            return ok;
        }
    }
    /* from here the item is filed: MetricStore.add's steps, then add_record's */
    int bad = 0;
    if (stream != NULL) {
        PyObject *sm = entry(d, S_STREAM_MAX);
        bad = sm == NULL || PyDict_SetItem(sm, stream, n) < 0;
        Py_DECREF(stream);
    }
    bad = bad || bump(d, S_RECORDS) < 0;
    if (!bad && ts != Py_None) {
        PyObject *first = entry(d, S_FIRST_RTS);
        bad = first == NULL || (first == Py_None && PyDict_SetItem(d, S_FIRST_RTS, ts) < 0)
              || PyDict_SetItem(d, S_LAST_RTS, ts) < 0;
    }
    bad = bad || PyDict_SetItem(d, S_LAST_LINE, SLOT(rec, &record_type, R_LINE_NO)) < 0;
    PyObject *touched = NULL;
    if (bad) {
    } else if (is_step) {
        PyObject *steps = entry(d, S_STEPS), *key = steps == NULL ? NULL
                          : PyTuple_Pack(2, SLOT(rec, &record_type, R_ROLE), n);
        PyObject *known = key == NULL ? NULL : PyDict_GetItemWithError(steps, key);
        if (known != NULL) {            /* a doubled step line: counted, nothing else */
            bad = bump(d, S_DUP_STEPS) < 0 || (touched = PyObject_GetAttr(known, S_ROLLOUT_ATTR)) == NULL;
        } else {
            bad = key == NULL || PyErr_Occurred() != NULL || (touched = file_step(d, seg, rec, n, key)) == NULL;
        }
        Py_XDECREF(key);
    } else {
        bad = (is_rollout && PyDict_SetItem(d, S_LAST_TRAIN, n) < 0)
              || file_values(d, seg, rec, n, kind, ts, &shape) < 0;
        touched = bad ? NULL : Py_NewRef(n);
    }
    Py_XDECREF(shape);
    bad = bad || PySet_Add(rollouts, touched) < 0 || PyList_Append(records, rec) < 0;
    Py_XDECREF(touched);
    return bad ? -1 : 1;
}

/* store_run(seg_dict, items, i, rollouts, records, rm_keys, seg, store_events, up_events) -> int:
 * see above. */
static Py_ssize_t store_loop(PyObject *d, PyObject *items, Py_ssize_t i, Py_ssize_t end, PyObject *rollouts,
                             PyObject *records, PyObject *rm_keys, PyObject *seg, PyObject *store_events,
                             PyObject *up_events);

static PyObject *store_run(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "store_run(): 9 arguments");
        return NULL;
    }
    PyObject *d = args[0], *items = args[1], *rollouts = args[3], *records = args[4], *rm_keys = args[5];
    PyObject *seg = args[6], *store_events = args[7], *up_events = args[8];
    Py_ssize_t i = PyLong_AsSsize_t(args[2]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (!PyDict_CheckExact(d) || !PyList_CheckExact(items) || !PyAnySet_CheckExact(rollouts)
        || !PyList_CheckExact(records) || !PyDict_CheckExact(rm_keys) || !PyList_CheckExact(store_events)
        || !PyList_CheckExact(up_events)) {
        PyErr_SetString(PyExc_TypeError, "store_run(): dict, list, int, set, list, dict, segment, list, list");
        return NULL;
    }
    if (store_names() < 0)
        return NULL;
    i = store_loop(d, items, i, PyList_GET_SIZE(items), rollouts, records, rm_keys, seg, store_events, up_events);
    return i < 0 ? NULL : PyLong_FromSsize_t(i);
}

/* store_run's loop over items[i:end]: where it stopped, or -1 with an error set. */
static Py_ssize_t store_loop(PyObject *d, PyObject *items, Py_ssize_t i, Py_ssize_t end, PyObject *rollouts,
                             PyObject *records, PyObject *rm_keys, PyObject *seg, PyObject *store_events,
                             PyObject *up_events)
{
    if (end > PyList_GET_SIZE(items))
        end = PyList_GET_SIZE(items);
    for (; record_type.type != NULL && i >= 0 && i < end; i++) {
        PyObject *rec = PyList_GET_ITEM(items, i);
        if (Py_TYPE(rec) == record_type.type) {
            /* held while the segment's own methods run (they could drop the list's reference) */
            Py_INCREF(rec);
            int got = file_record(d, rec, rollouts, records, rm_keys, seg);
            Py_DECREF(rec);
            if (got < 0)
                return -1;
            if (got == 0)
                break;
            continue;
        }
        if (Py_TYPE(rec) == event_type.type) {
            int got = file_event(d, rec, store_events, up_events);
            if (got < 0)
                return -1;
            if (got == 0)
                break;
            continue;
        }
        break;
    }
    return i;
}

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


/* ---- export (export.py _write_rows) ---------------------------------------------------- */

typedef struct {
    char *p;                /* PyMem_Raw*: grown without the GIL too (csv_rows' number rows) */
    Py_ssize_t n, cap;
    int nogil;              /* no GIL held: out of memory sets no error (the caller does) */
} Text;

/* Room for `more` bytes in t; 0 when out of memory (error set, unless t->nogil). */
static int text_room(Text *t, Py_ssize_t more)
{
    if (t->n + more <= t->cap)
        return 1;
    Py_ssize_t cap = t->cap ? t->cap : 1 << 16;
    while (cap < t->n + more)
        cap *= 2;
    char *q = PyMem_RawRealloc(t->p, (size_t)cap);
    if (q == NULL) {
        if (!t->nogil)
            PyErr_NoMemory();
        return 0;
    }
    t->p = q;
    t->cap = cap;
    return 1;
}

static int text_put(Text *t, const char *s, Py_ssize_t n)
{
    if (!text_room(t, n))
        return 0;
    memcpy(t->p + t->n, s, (size_t)n);
    t->n += n;
    return 1;
}

/* A cell's CSV text as csv.writer writes it for these types: a float as repr() (ryu_repr, or
 * the function float.__repr__ calls), an int as str(), None as nothing.  0: another type (the
 * caller takes the Python path), -1: an error. */
/* repr(x) of a double into t: 1, or -1 with an error set. */
static int double_text(Text *t, double x)
{
#ifdef __SIZEOF_INT128__
    if (ryu_ready && isfinite(x) && x != 0.0) {   /* repr()'s digits, without its dtoa */
        char buf[32];
        return text_put(t, buf, ryu_repr(x, buf)) ? 1 : -1;
    }
#endif
    char *r = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (r == NULL)
        return -1;
    int ok = text_put(t, r, (Py_ssize_t)strlen(r));
    PyMem_Free(r);
    return ok ? 1 : -1;
}

static int cell_text(Text *t, PyObject *v)
{
    if (v == Py_None)
        return 1;
    if (PyFloat_CheckExact(v))
        return double_text(t, PyFloat_AS_DOUBLE(v));
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (!overflow) {
            char buf[24];
            int k = snprintf(buf, sizeof(buf), "%lld", x);
            return text_put(t, buf, k) ? 1 : -1;
        }
        PyObject *s = PyObject_Str(v);
        if (s == NULL)
            return -1;
        Py_ssize_t k;
        const char *u = PyUnicode_AsUTF8AndSize(s, &k);
        int ok = u != NULL && text_put(t, u, k);
        Py_DECREF(s);
        return ok ? 1 : -1;
    }
    return 0;
}

/* csv_rows(columns, n) -> str | None: n CSV rows from columns (each a list of n cells, or None
 * for a column left blank), every cell a float, an int or None; None when another cell is met. */
/* A column of csv_rows given as numbers: (float64 buffer, kind), kind "f" a float per cell
 * (repr; NaN: no value, the cell empty) or "i" an int per cell (str(int(x)); NaN: empty). */
typedef struct {
    Py_buffer view;
    const double *x;
    int is_int;
} NumCol;

/* csv_rows' rows when every column is a number column or blank, without the GIL (two threads
 * write two stretches of rows at once: export.py): the same text as double_text and the int
 * cells give (repr() of 0.0, -0.0, inf as repr() writes them).  0, 1 out of memory, 2 an int
 * cell a long long does not hold (Python's then). */
static int number_rows(Text *t, const NumCol *num, Py_ssize_t m, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        for (Py_ssize_t j = 0; j < m; j++) {
            if (j > 0 && !text_put(t, ",", 1))
                return 1;
            if (num[j].x == NULL)
                continue;
            double x = num[j].x[i];
            if (isnan(x))
                continue;
            char buf[32];
            int k;
            if (num[j].is_int) {
                if (x >= 9.2e18 || x <= -9.2e18 || x != floor(x))
                    return 2;
                k = snprintf(buf, sizeof(buf), "%lld", (long long)x);
            } else if (isinf(x)) {
                k = x > 0 ? 3 : 4;
                memcpy(buf, x > 0 ? "inf" : "-inf", (size_t)k);
            } else if (x == 0.0) {
                k = signbit(x) ? 4 : 3;
                memcpy(buf, signbit(x) ? "-0.0" : "0.0", (size_t)k);
            } else {
#ifdef __SIZEOF_INT128__
                k = ryu_repr(x, buf);
#else
                return 2;   /* (not reached: number_rows needs ryu_ready) */
#endif
            }
            if (!text_put(t, buf, k))
                return 1;
        }
        if (!text_put(t, "\n", 1))
            return 1;
    }
    return 0;
}

static PyObject *csv_rows(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *cols;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &cols, &n))
        return NULL;
    Py_ssize_t m = PyList_GET_SIZE(cols);
    NumCol *num = PyMem_Calloc((size_t)m + 1, sizeof(NumCol));
    if (num == NULL)
        return PyErr_NoMemory();
    Text t = {NULL, 0, 0, 0};
    PyObject *res = NULL;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *c = PyList_GET_ITEM(cols, j);
        if (PyTuple_CheckExact(c) && PyTuple_GET_SIZE(c) == 2) {
            PyObject *kind = PyTuple_GET_ITEM(c, 1);
            if (!PyUnicode_Check(kind) || PyObject_GetBuffer(PyTuple_GET_ITEM(c, 0), &num[j].view,
                                                             PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "csv_rows(): a number column is (float64 buffer, kind)");
                goto done;
            }
            num[j].x = num[j].view.buf;
            num[j].is_int = PyUnicode_CompareWithASCIIString(kind, "i") == 0;
            if (num[j].view.itemsize != 8 || num[j].view.format == NULL || strcmp(num[j].view.format, "d") != 0
                || num[j].view.len != n * 8
                || (!num[j].is_int && PyUnicode_CompareWithASCIIString(kind, "f") != 0)) {
                PyErr_SetString(PyExc_ValueError, "csv_rows(): a number column of another length, type or kind");
                goto done;
            }
            continue;
        }
        if (c != Py_None && (!PyList_Check(c) || PyList_GET_SIZE(c) != n)) {
            PyErr_SetString(PyExc_ValueError, "csv_rows(): a column of another length than n");
            goto done;
        }
    }
#ifdef __SIZEOF_INT128__
    int numbers = ryu_ready;   /* every column numbers or blank: written without the GIL */
    for (Py_ssize_t j = 0; numbers && j < m; j++)
        numbers = num[j].x != NULL || PyList_GET_ITEM(cols, j) == Py_None;
    if (numbers) {
        int bad;
        t.nogil = 1;
        Py_BEGIN_ALLOW_THREADS
        bad = number_rows(&t, num, m, n);
        Py_END_ALLOW_THREADS
        t.nogil = 0;
        if (bad == 1)
            PyErr_NoMemory();
        else
            res = bad ? Py_NewRef(Py_None) : PyUnicode_DecodeASCII(t.p ? t.p : "", t.n, NULL);
        goto done;
    }
#endif
    for (Py_ssize_t i = 0; i < n; i++) {
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *c = PyList_GET_ITEM(cols, j);
            if (j > 0 && !text_put(&t, ",", 1))
                goto done;
            if (num[j].x != NULL) {
                double x = num[j].x[i];
                if (isnan(x))
                    continue;
                if (!num[j].is_int) {
                    if (double_text(&t, x) < 0)
                        goto done;
                    continue;
                }
                if (x >= 9.2e18 || x <= -9.2e18 || x != floor(x)) {
                    res = Py_NewRef(Py_None);   /* (not an int a long long holds: Python's) */
                    goto done;
                }
                char buf[24];
                int k = snprintf(buf, sizeof(buf), "%lld", (long long)x);
                if (!text_put(&t, buf, k))
                    goto done;
                continue;
            }
            if (c == Py_None)
                continue;
            if (i >= PyList_GET_SIZE(c)) {   /* a list shortened meanwhile (a cell's repr ran code) */
                PyErr_SetString(PyExc_ValueError, "csv_rows(): a column changed length");
                goto done;
            }
            int got = cell_text(&t, PyList_GET_ITEM(c, i));
            if (got < 0)
                goto done;
            if (got == 0) {
                res = Py_NewRef(Py_None);
                goto done;
            }
        }
        if (!text_put(&t, "\n", 1))
            goto done;
    }
    res = PyUnicode_DecodeASCII(t.p ? t.p : "", t.n, NULL);
done:
    for (Py_ssize_t j = 0; j < m; j++)
        if (num[j].x != NULL)
            PyBuffer_Release(&num[j].view);
    PyMem_Free(num);
    PyMem_RawFree(t.p);
    return res;
}

/* ---- a train metric's sums and counts, for export's table without numpy (store/rollout_table.py) --
 *
 * The two reads rollout_table makes of a train metric's columns, over their first n rows: each
 * row's mean (Segment.values_at_rows: sum / count where the count is above 0, else NaN: the same
 * IEEE division) and whether a counted row's sum is NaN (a step logged NaN: its values are then
 * read as logged).  Both columns are float64 buffers (the store's array('d') cells) holding at
 * least n values; anything else is a TypeError or ValueError. */
static int two_columns(PyObject *const *args, Py_ssize_t nargs, const char *fn, Py_buffer *s, Py_buffer *c,
                       Py_ssize_t *n)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "%s(): sums, counts, n", fn);
        return -1;
    }
    *n = PyLong_AsSsize_t(args[2]);
    if (*n == -1 && PyErr_Occurred())
        return -1;
    if (PyObject_GetBuffer(args[0], s, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (PyObject_GetBuffer(args[1], c, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(s);
        return -1;
    }
    const Py_buffer *b[2] = {s, c};
    for (int k = 0; k < 2; k++) {
        if (b[k]->itemsize != 8 || b[k]->format == NULL || strcmp(b[k]->format, "d") != 0 || *n < 0
            || b[k]->len / 8 < *n) {
            PyErr_Format(PyExc_ValueError, "%s(): float64 columns of at least n values", fn);
            PyBuffer_Release(s);
            PyBuffer_Release(c);
            return -1;
        }
    }
    return 0;
}

static PyObject *col_means(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer s, c;
    Py_ssize_t n;
    if (two_columns(args, nargs, "col_means", &s, &c, &n) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (out != NULL) {
        const double *sv = s.buf, *cv = c.buf;
        double *o = (double *)PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++)
            o[i] = cv[i] > 0 ? sv[i] / cv[i] : NAN;
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&c);
    return out;
}

static PyObject *counted_nan(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer s, c;
    Py_ssize_t n;
    if (two_columns(args, nargs, "counted_nan", &s, &c, &n) < 0)
        return NULL;
    const double *sv = s.buf, *cv = c.buf;
    int any = 0;
    for (Py_ssize_t i = 0; i < n && !any; i++)
        any = !isnan(cv[i]) && isnan(sv[i]);
    PyBuffer_Release(&s);
    PyBuffer_Release(&c);
    return PyBool_FromLong(any);
}

static PyMethodDef methods[] = {
    {"col_means", (PyCFunction)(void (*)(void))col_means, METH_FASTCALL,
     "col_means(sums, counts, n) -> bytes: n float64s, sums[i] / counts[i] where counts[i] > 0, else NaN."},
    {"counted_nan", (PyCFunction)(void (*)(void))counted_nan, METH_FASTCALL,
     "counted_nan(sums, counts, n) -> bool: some row below n has a count (not NaN) and a NaN sum."},
    {"float_tables", float_tables, METH_VARARGS,
     "float_tables(inv, pos) -> bool: set the tables csv_rows writes floats' repr() with (export.py\n"
     "makes them); False where this build cannot use them (repr()'s own function is used then)."},
    {"float_repr", float_repr, METH_O, "float_repr(x) -> str: repr(x) as csv_rows writes it (tests)."},
    {"set_pairs_ahead", set_pairs_ahead, METH_O, "set_pairs_ahead(on) -> bool: metric dicts read by the reader thread (the previous setting)."},
    {"kernel", kernel, METH_VARARGS,
     "kernel([name]) -> str: the line walk scan() uses (switched to `name` when given; every\n"
     "kernel gives the same results).  GRPO_TUI_SCAN_KERNEL picks one at import."},
    {"kernels", kernels, METH_NOARGS, "kernels() -> tuple: the line walks this machine runs."},
    {"read_dict", read_dict, METH_O,
     "read_dict(text) -> dict | None: a `{'k': number, ...}` dict read like values.parse_dict, or\n"
     "None when the text is anything else (the Python reader then reads it)."},
    {"plain", plain, METH_O, "plain(line) -> bool: a candidate that reads only its own key (tests)."},
    {"fold", fold, METH_VARARGS,
     "fold(buf, starts, cands, keep, heads, lasts) -> (cands, keep, heads, lasts, folds, kept): scan()'s\n"
     "lists without the candidates whose head says HEAD_NOISE, taken into the runs around them (folds:\n"
     "per run, what LineParser._take_folded sets from them, or None; kept: per kept line (key, raw))."},
    {"csv_rows", csv_rows, METH_VARARGS,
     "csv_rows(columns, n) -> str | None: n CSV rows (each ending in a newline) of floats (repr), ints\n"
     "and None (nothing) from columns of n cells (None: a blank column); None if another cell is met."},
    {"put_row", (PyCFunction)(void (*)(void))put_row, METH_FASTCALL,
     "put_row(views, row, values, types) -> bool: values (a dict of floats and ints of exactly those types)\n"
     "into cell `row` of each float64 memoryview, in order; False (nothing written) otherwise."},
    {"add_row", (PyCFunction)(void (*)(void))add_row, METH_FASTCALL,
     "add_row(sums, counts, row, values, types) -> bool: put_row's check, each value added to its sum\n"
     "and count at `row` (a NaN count: the first value there)."},
    {"store_run", (PyCFunction)(void (*)(void))store_run, METH_FASTCALL,
     "store_run(seg_dict, items, i, rollouts, records, rm_keys, segment, store_events, up_events) -> int:\n"
     "MetricStore.add's loop over items[i:] for the records and events it only files (see _scan.c), up to\n"
     "the first it leaves to Python."},
    {"set_types", set_types, METH_VARARGS,
     "set_types(MetricRecord, Event): the classes ready heads are made as (until then none comes ready)."},
#ifdef HAVE_READ_SCAN
    {"read_scan", (PyCFunction)(void (*)(void))read_scan, METH_FASTCALL,
     "read_scan(fd, buf, have, want, max_line, pairs=False, untimed=False[, walk_to]) -> (n, cut, walk | None[, mid]):\n"
     "a read into buf[have:] and scan_raw(buf[:cut]) (cut: the last newline; untimed: scan_raw_untimed) without the\n"
     "GIL in between (files.iter_block_views).  With walk_to: only buf[:mid] is walked, mid the first newline at\n"
     "or past walk_to with a line after it before cut (-1: none, all walked); buf[mid+1:cut] is the caller's."},
#endif
    {"scan_raw", scan_raw, METH_O,
     "scan_raw(buf) -> capsule: scan_folded()'s walk of buf (a reader thread runs it; the GIL is let go)."},
    {"scan_raw_untimed", scan_raw_untimed, METH_O,
     "scan_raw_untimed(buf) -> capsule: scan_raw(buf) keeping no noise line's time (LineParser.noise_times)."},
    {"fold_raw", fold_raw, METH_VARARGS,
     "fold_raw(buf, capsule, pack=False) -> scan_folded(buf, pack): the Python objects of that walk, for that same buf."},
    {"scan_folded", scan_folded, METH_VARARGS,
     "scan_folded(buf, pack=False) -> (n_lines, starts, cands, keep, heads, lasts, folds, kept): scan(buf)\n"
     "then fold() of its lists, in one call (pack: rollout, perf and step records' values as Packed)."},
    {"fold_lazy", fold_lazy, METH_VARARGS,
     "fold_lazy(buf, walk, pack=False, untimed=False) -> Fold: fold_raw(buf, walk, pack) as arrays, read item by\n"
     "item (a walk made with the other `untimed` is refused)."},
    {"scan_fold", scan_fold, METH_VARARGS,
     "scan_fold(buf, pack=False, untimed=False) -> Fold: scan_raw() (untimed: scan_raw_untimed()) then fold_lazy()."},
    {"set_step_type", set_step_type, METH_O,
     "set_step_type(StepRow): the class store_run makes a segment's step rows as."},
    {"pack", pack_dict, METH_O, "pack(dict) -> Packed | None: a dict of plain ints and floats as Packed (tests)."},
    {"scan", scan, METH_O,
     "scan(buf) -> (n_lines, cands, keep, starts, heads, lasts): the lines of buf (split on b'\\n') that the\n"
     "parser must feed() one by one, the skipped stamped lines its per-source bookkeeping can still\n"
     "show, every line's start offset (n_lines + 1 int64s; line i is buf[starts[i]:starts[i+1]-1]),\n"
     "for each candidate its Miles header fields (a tuple of offsets) or None, and for each\n"
     "candidate and the end the newest stamped noise line of the run before it (or -1)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "Optional C accelerator for grpo_tui.lines.parse (see _scan.c).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void)
{
    gate_init();
    nib_init();
    ctrl_nib_init();
    plain_byte_init();
    name_byte_init();
    commonness_init();
    lits_init();
    if (!fingerprints_cover_anchors() || !fingerprints_cover_events() || !ctrl_nib_ok() || !trigger_backs_init()) {   /* a SIMD walk would skip candidates: refuse */
        PyErr_SetString(PyExc_SystemError, "_scan: an anchor has no SIMD fingerprint, or a control byte no filter bit");
        return NULL;
    }
    kernels_init();
    const char *want = getenv("GRPO_TUI_SCAN_KERNEL");
    for (int k = 0; want != NULL && k < N_KERNELS; k++)
        if (kernel_ok[k] && strcmp(KERNELS[k].name, want) == 0)
            use_kernel(k);
    PyObject *m = PyModule_Create(&module);
    /* the parser's constants this file copies (parse.py refuses a scanner that disagrees) */
    if (m != NULL && (PyModule_AddIntConstant(m, "REJOIN_PARTS", REJOIN_PARTS) < 0
                      || PyModule_AddIntConstant(m, "PER_KEY", PER_KEY) < 0
                      || PyType_Ready(&Packed_Type) < 0 || PyType_Ready(&Fold_Type) < 0
                      || PyModule_AddObjectRef(m, "Fold", (PyObject *)&Fold_Type) < 0
                      || PyModule_AddObjectRef(m, "Packed", (PyObject *)&Packed_Type) < 0))
        Py_CLEAR(m);
    return m;
}
