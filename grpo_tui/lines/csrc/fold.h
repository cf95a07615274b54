/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  The fold: the candidates that are noise for sure folded into the noise runs, heads read to
 * values (ready_run), and the Fold object LineParser._feed_scanned reads. */
#ifndef GRPO_SCAN_FOLD_H
#define GRPO_SCAN_FOLD_H

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
 * first time (the loop's own condition for taking a run whole); heads are read as ready_head
 * made them (field tuples), anything else stops the walk.  The records and events it hands out
 * are field tuples too (their line number set): the caller makes the objects.  Failing part-way (out of memory, lists that disagree:
 * it raises) leaves the dicts, the set and `out` changed and the rest of the books not: the
 * parser is then as broken as after any exception in the loop it replaces. */

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

/* read_scan(fd, buf, have, want, max_line, pairs=False, untimed=False) -> (n, cut, walk | None): what files._views
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
    if (h == NULL || h[H_CLASS] != HEAD_FT
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
 * A checkpoint line (HEAD_CKPT: _headerless reads on into its event, ckpt_fold) gives 2 for 1. */
static int quiet_fold(FoldObject *f, Py_ssize_t q, Py_ssize_t i, int noise_empty, Py_ssize_t lo, int lo_all,
                      int lean, PyObject *skipped, PyObject **key, PyObject **pid, PyObject **time, PyObject **ts)
{
    Py_ssize_t k = f->out.orig[q];
    const long *h = k >= 0 && k < f->in.nc ? f->in.head[k] : NULL;
    uchar *ls, *le;
    *key = *pid = *time = *ts = NULL;
    if (h == NULL || (h[H_CLASS] != HEAD_QUIET && h[H_CLASS] != HEAD_CKPT)
        || f->in.cand[k] != i
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
        [E_LINES] = PyTuple_New(0),   /* (the shared empty tuple: Event.lines' default) */
    };
    PyObject *ev = tuple_of(fl, E_FIELDS);
    if (ev == NULL)
        return -1;
    int rc = PyList_Append(out, ev);
    Py_DECREF(ev);
    return rc;
}

#define FOLD_RUN_ARGS 18

/* A ready head's fields appended to out as a tuple of its own with field `at` (the line number)
 * set to line_no: the head's own tuple may be read again.  0, or -1 with an error set. */
static int append_fields(PyObject *out, PyObject *fields, Py_ssize_t nf, Py_ssize_t at, Py_ssize_t line_no)
{
    PyObject *item = PyTuple_New(nf), *no = PyLong_FromSsize_t(line_no);
    if (item == NULL || no == NULL) {
        Py_XDECREF(item);
        Py_XDECREF(no);
        return -1;
    }
    for (Py_ssize_t x = 0; x < nf; x++)
        PyTuple_SET_ITEM(item, x, x == at ? no : Py_NewRef(PyTuple_GET_ITEM(fields, x)));
    int rc = PyList_Append(out, item);
    Py_DECREF(item);
    return rc;
}

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
        Py_ssize_t nf = hl == 3 ? R_FIELDS : E_FIELDS;
        PyObject *fields = PyTuple_GET_ITEM(h, hl - 1), *pid = PyTuple_GET_ITEM(h, 1);
        if (!PyTuple_CheckExact(fields) || PyTuple_GET_SIZE(fields) != nf)
            break;                              /* not as ready_head made it: Python's */
        PyObject *values = hl == 3 ? PyTuple_GET_ITEM(fields, R_METRICS) : NULL;
        PyObject *time = PyTuple_GET_ITEM(fields, hl == 3 ? R_TIME : E_TIME);
        PyObject *ts = PyTuple_GET_ITEM(fields, hl == 3 ? R_TS : E_TS);
        if (values != NULL) {
            int fits = PyDict_CheckExact(values) ? take_names(names, values, max_names)
                       : Packed_Check(values) ? take_shape(names, ((PackedObject *)values)->shape, max_names) : 0;
            if (fits < 0)
                goto error;
            if (!fits)
                break;                          /* _capped: Python's */
        }
        /* _feed_ready: the line number, _head_seen, the noise cleared, the item */
        Py_ssize_t at = hl == 3 ? R_LINE_NO : E_LINE_NO, line_no = base + i + 1;
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
                if (append_fields(out, fields, nf, at, line_no) < 0)
                    goto error;
            } else {
                unreadable++;
            }
        } else {
            PyObject *err = PyTuple_GET_ITEM(h, 2);
            if (err != Py_None && PyDict_SetItem(last_error, pid, err) < 0)
                goto error;
            events++;
            if (append_fields(out, fields, nf, at, line_no) < 0)
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

#endif /* GRPO_SCAN_FOLD_H */
