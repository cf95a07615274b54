/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  Store rows: MetricStore's short paths (put_row, add_row, store_run). */
#ifndef GRPO_SCAN_STORE_H
#define GRPO_SCAN_STORE_H

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

#endif /* GRPO_SCAN_STORE_H */
