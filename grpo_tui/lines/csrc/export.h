/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  Export: CSV rows and a train metric's means from its sums and counts. */
#ifndef GRPO_SCAN_EXPORT_H
#define GRPO_SCAN_EXPORT_H

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

/* csv_rows(columns, n[, keys]) -> str | None: n CSV rows from columns (each a list of n cells, or
 * None for a column left blank), every cell a float, an int or None; None when another cell is
 * met.  With keys: the rows as JSON objects (number_rows), number columns only, else None. */
/* A column of csv_rows given as numbers: (float64 buffer, kind), kind "f" a float per cell
 * (repr; NaN: no value, the cell empty) or "i" an int per cell (str(int(x)); NaN: empty). */
typedef struct {
    Py_buffer view;
    const double *x;
    int is_int;
} NumCol;

/* csv_rows' rows when every column is a number column or blank, without the GIL (two threads
 * write two stretches of rows at once: export.py): the same text as double_text and the int
 * cells give (repr() of 0.0, -0.0, inf as repr() writes them).  With `keys` (m ASCII texts, each
 * a JSON key and ": "), each row is a JSON object of its cells that are not blank instead,
 * the rows joined by ", " (export.write_rollout_json; JSON has no inf: such a cell gives 2).
 * 0, 1 out of memory, 2 a cell this text can't hold (Python's then: an int cell a long long
 * does not hold, an inf in JSON). */
static int number_rows(Text *t, const NumCol *num, Py_ssize_t m, Py_ssize_t n, const char *const *keys,
                       const Py_ssize_t *key_len)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int cells = 0;
        if (keys != NULL && !text_put(t, i > 0 ? ", {" : "{", i > 0 ? 3 : 1))
            return 1;
        for (Py_ssize_t j = 0; j < m; j++) {
            if (keys == NULL && j > 0 && !text_put(t, ",", 1))
                return 1;
            if (num[j].x == NULL)
                continue;
            double x = num[j].x[i];
            if (isnan(x))
                continue;
            if (keys != NULL && (!text_put(t, ", ", cells++ ? 2 : 0) || !text_put(t, keys[j], key_len[j])))
                return 1;
            char buf[32];
            int k;
            if (num[j].is_int) {
                if (x >= 9.2e18 || x <= -9.2e18 || x != floor(x))
                    return 2;
                k = snprintf(buf, sizeof(buf), "%lld", (long long)x);
            } else if (isinf(x)) {
                if (keys != NULL)
                    return 2;
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
        if (!text_put(t, keys != NULL ? "}" : "\n", 1))
            return 1;
    }
    return 0;
}

static PyObject *csv_rows(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *cols, *key_list = NULL;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!n|O!", &PyList_Type, &cols, &n, &PyList_Type, &key_list))
        return NULL;
    Py_ssize_t m = PyList_GET_SIZE(cols);
    if (key_list != NULL && PyList_GET_SIZE(key_list) != m) {
        PyErr_SetString(PyExc_ValueError, "csv_rows(): a key for each column");
        return NULL;
    }
    NumCol *num = PyMem_Calloc((size_t)m + 1, sizeof(NumCol));
    const char **keys = key_list != NULL ? PyMem_Calloc((size_t)m + 1, sizeof(char *)) : NULL;
    Py_ssize_t *key_len = key_list != NULL ? PyMem_Calloc((size_t)m + 1, sizeof(Py_ssize_t)) : NULL;
    Text t = {NULL, 0, 0, 0};
    PyObject *res = NULL;
    if (num == NULL || (key_list != NULL && (keys == NULL || key_len == NULL))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; key_list != NULL && j < m; j++) {   /* (the list holds them: no copy) */
        PyObject *k = PyList_GET_ITEM(key_list, j);
        if (!PyUnicode_Check(k) || !PyUnicode_IS_ASCII(k)) {
            PyErr_SetString(PyExc_TypeError, "csv_rows(): keys are ASCII str");
            goto done;
        }
        keys[j] = (const char *)PyUnicode_DATA(k);
        key_len[j] = PyUnicode_GET_LENGTH(k);
    }
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
        bad = number_rows(&t, num, m, n, keys, key_len);
        Py_END_ALLOW_THREADS
        t.nogil = 0;
        if (bad == 1)
            PyErr_NoMemory();
        else
            res = bad ? Py_NewRef(Py_None) : PyUnicode_DecodeASCII(t.p ? t.p : "", t.n, NULL);
        goto done;
    }
#endif
    if (keys != NULL) {   /* JSON rows: number columns only (Python's for the rest) */
        res = Py_NewRef(Py_None);
        goto done;
    }
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
    for (Py_ssize_t j = 0; num != NULL && j < m; j++)
        if (num[j].x != NULL)
            PyBuffer_Release(&num[j].view);
    PyMem_Free(num);
    PyMem_Free(keys);
    PyMem_Free(key_len);
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

#endif /* GRPO_SCAN_EXPORT_H */
