/* Part of grpo_tui/lines/_scan.c, which includes it: one translation unit, so everything
 * stays static.  Row kernels: a record's values (a dict or a Packed) into float64 cells. */
#ifndef GRPO_SCAN_STORE_H
#define GRPO_SCAN_STORE_H

/* ---- row kernels (store/columns.py has their Python twins) -------------------------------- */

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

/* The n values of `values` (a dict, or a Packed) as doubles into out when each is of the type
 * types[j] and that is float or int (an int as float() converts it): 1, else 0 (nothing for the
 * caller to write; -1 only when out of memory). */
static int row_values(PyObject *values, PyObject *types, Py_ssize_t n, double *out)
{
    if (Packed_Check(values)) {
        PackedObject *p = (PackedObject *)values;
        if (Py_SIZE(p) != n)
            return 0;
        for (Py_ssize_t j = 0; j < n; j++) {
            PyTypeObject *want = p->v[j].is_int ? &PyLong_Type : &PyFloat_Type;
            if ((PyObject *)want != PyTuple_GET_ITEM(types, j))
                return 0;
            out[j] = p->v[j].is_int ? packed_int_double(p->v[j].x.i) : p->v[j].x.d;
            if (out[j] == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
        }
        return 1;
    }
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
    if (!(PyDict_CheckExact(values) || Packed_Check(values)) || !PyTuple_CheckExact(types))
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(types);
    for (int v = 0; v < nviews; v++)
        if (!PyTuple_CheckExact(args[v]) || PyTuple_GET_SIZE(args[v]) != n)
            return 0;
    if (n == 0 || (PyDict_CheckExact(values) ? PyDict_GET_SIZE(values) : Py_SIZE(values)) != n)
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

#endif /* GRPO_SCAN_STORE_H */
