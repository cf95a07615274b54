/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  Classifying a line: source keys, Ray prefixes and dedup marks, Miles and SGLang headers,
 * metric-record and dict shapes, event and checkpoint lines, `ft` lines, and which noise lines
 * the per-source bookkeeping keeps. */
#ifndef GRPO_SCAN_CLASSIFY_H
#define GRPO_SCAN_CLASSIFY_H

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

/* Whether the line [s, e) certainly starts with a header the parser reads (ParserBase._peel, then
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

/* patterns._METRIC_MSG/_METRIC_ANY's kinds. */
static const char *const METRIC_KINDS[] = {"rollout", "perf", "eval", "multi_turn", "step", "passrate"};
#define N_METRIC_KINDS (sizeof(METRIC_KINDS) / sizeof(METRIC_KINDS[0]))

/* Whether `<kind> <digits>` (patterns._METRIC_MSG/_METRIC_ANY's kind and id, the id's '-' taken)
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

/* Whether the '{' at p (p > s) follows `<kind> <digits>: ` (patterns._METRIC_MSG/_METRIC_ANY): a
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
 *   H_DAYS, H_SOD, H_MSV  ts = H_DAYS * 86400 + H_SOD + H_MSV / 1000.0 (patterns._fast_ts), valid
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

/* Whether one of patterns._event_anchor's strings (or "train_async.py") starts at p (not past e).
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

/* One of patterns._event_anchor's strings (or "train_async.py") in [s, e), byte by byte. */
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

/* patterns._METRIC_MSG on the message [s, e): 0 no match, 1 a match of the common shape (then
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
    case 'W': return LIT("Watchdog caught collective operation timeout")
                     || (LIT("W&B") && (has(s, e, "mode enabled", 12) || LIT("W&B logs will be stored in")));
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
    "killed due to memory pressure", "Watchdog caught collective operation timeout", "W&B mode enabled", "W&B logs will be stored in", "Job '",
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

/* The head of a line whose header patterns._MILES certainly does not match (miles_head checked it up
 * to an ASCII byte where the match fails), as patterns._SGLANG reads it: `[date time(.ms)` then
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
 * split), and patterns._MILES matching it.  Then h holds the fields (see the enum) and Python
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

/* Whether LineParser._other_format may read the text [t, e) as a record (formats.py): _VERL's
 * `step:` followed by a digit or '-' (or non-ASCII: \d is Unicode), a `{'` with one of
 * parse_trl's quoted keys in the text, a `{"` with one of parse_json's (formats.JSON_KEYS), a
 * prime-rl anchor (formats.PRIME_ANCHORS), a table's start (table_start), or verl's end line;
 * 0 when none can. */
static int other_format_may(uchar *t, uchar *e)
{
    if (has(t, e, "Final validation metrics:", 25))   /* verl's end of training (formats.VERL_END) */
        return 1;
    for (uchar *q = t; e - q >= 5 && (q = memchr(q, 's', (size_t)(e - q - 4))) != NULL; q++)
        if (memcmp(q, "step:", 5) == 0 && q + 5 < e && (DIGIT(q[5]) || q[5] == '-' || q[5] >= 0x80))
            return 1;
    if (has(t, e, "| Loss", 6) || has(t, e, "| Reward", 8) || has(t, e, "| reward: ", 10) || table_start(t, e))
        return 1;
    if (has(t, e, "{\"", 2)) {
        static const char *const json[] = {"\"step_key\"", "\"data\"", "\"loss\"", "\"grad_norm\"",
                                           "\"learning_rate\"", "\"reward\"", "\"epoch\"",
                                           "\"completions/mean_length\"", "\"eval_loss\"", "\"train_runtime\"",
                                           "\"global_step/max_steps\""};
        for (size_t k = 0; k < sizeof(json) / sizeof(json[0]); k++)
            if (has(t, e, json[k], strlen(json[k])))
                return 1;
    }
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

/* Whether patterns._METRIC_ANY may find a record in the text [t, e): `kind N: ` then '{', "..."
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

#endif /* GRPO_SCAN_CLASSIFY_H */
