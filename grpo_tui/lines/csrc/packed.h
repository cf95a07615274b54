/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  Packed records: a record's values without a dict, and the tuples Python files. */
#ifndef GRPO_SCAN_PACKED_H
#define GRPO_SCAN_PACKED_H

/* ---- Packed: a record's values without a dict (whole-file reads) -----------------------------
 *
 * check/export/calibrate and the dashboard's history fill read a record's values only to write
 * them into the store's columns; no view reads the record itself.  For them (LineParser.packed)
 * a common rollout, perf or step record comes with its values as a Packed instead of a dict of
 * Python ints and floats: its names as a shared tuple (one per shape: the same names in the same
 * order) and its numbers as C values, the dict a record would have had made only where Python
 * reads it (Packed.dict(): the same keys, the same ints and floats).  The row kernels (put_row,
 * add_row) write a Packed's numbers straight into the store's columns.  A record
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
/* A ready head's record or event is a tuple of its fields in the order of records.MetricRecord's
 * and records.Event's (RECORD_FIELDS and EVENT_FIELDS, module constants native.py checks against
 * the dataclasses): Python makes the object (LineParser._feed_ready, Fold.run's items), so this
 * file never writes into a Python object of the project. */
enum { R_KIND, R_N, R_METRICS, R_ROLE, R_TIME, R_TS, R_PROC, R_SOURCE, R_ACTOR, R_LINE_NO, R_NONFINITE,
       R_ABRIDGED, R_CUT, R_REPEATED, R_FIELDS };
enum { E_KIND, E_TIME, E_TS, E_LINE_NO, E_TEXT, E_DATA, E_LINES, E_FIELDS };
static const char *const RECORD_FIELDS[R_FIELDS] = {"kind", "n", "metrics", "role", "time", "ts", "proc", "source",
                                                    "actor", "line_no", "nonfinite", "abridged", "cut", "repeated"};
static const char *const EVENT_FIELDS[E_FIELDS] = {"kind", "time", "ts", "line_no", "text", "data", "lines"};

/* The field names as a tuple of str (the module's RECORD_FIELDS / EVENT_FIELDS). */
static PyObject *field_names(const char *const *names, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* A head the parser only stores: a metric record, (key, pid, record fields), or an ft event,
 * (key, pid, error message or None, event fields), their line_no left 0 for the parser to set;
 * None when Python must read it. */
static PyObject *dict_of_pairs(uchar *d, const DPair *pv, Py_ssize_t n);

static PyObject *ready_head(uchar *s, const long *h, const DPair *pairs, Py_ssize_t at, Py_ssize_t np, int pack,
                            uint64_t kh)
{
    long cls = h[H_CLASS];
    if (cls != HEAD_METRIC && cls != HEAD_FT)
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
        PyObject *items[3] = {key, pid, tuple_of(f, R_FIELDS)};
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
        [E_LINES] = PyTuple_New(0),
    };
    PyObject *items[4] = {key, pid, error_text(m, e), tuple_of(f, E_FIELDS)};
    Py_DECREF(got);
    return tuple_of(items, 4);
}

#endif /* GRPO_SCAN_PACKED_H */
