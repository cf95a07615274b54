/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  The block scan: scratch arrays, scan() over a buffer, and read_dict (a dict's values). */
#ifndef GRPO_SCAN_SCAN_H
#define GRPO_SCAN_SCAN_H

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

#endif /* GRPO_SCAN_SCAN_H */
