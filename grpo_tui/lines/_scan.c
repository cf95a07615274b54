/* grpo_tui.lines._scan: optional accelerator for LineParser.feed_lines (issue #11).
 *
 * scan(buf) splits a buffer on b"\n" exactly like bytes.split(b"\n") and classifies every line
 * in one pass, so Python never looks at a noise line one by one:
 *
 *   returns (n_lines, cands, keep)
 *   cands: indices of the lines Python must feed() -- every line `is_candidate` accepts, plus
 *          every line the inline noise path of feed_lines would not take (NUL, U+FFFD or
 *          invalid UTF-8, a trailing '\r', longer than MAX_LINE).  It may only ever say MORE
 *          than is_candidate (feeding a noise line through feed() is exact; skipping a
 *          candidate is not), so the UTF-8 and length tests over-approximate when unsure.
 *   keep:  indices of the noise lines with a '[' in their first 64 characters that the
 *          skipped-line bookkeeping (_remember_skipped, a deque of 16 per source key) can
 *          still hold at the end of their noise run: the last 16 per key in each run, a
 *          superset when the key needs Python (pasted lines) or there are too many keys.
 *          The last stamped line of a run is always kept (it is the last of its key).
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
#include <string.h>

#define MAX_LINE (1 << 20)   /* parse.MAX_LINE (characters there; bytes here: over-approximate) */
#define STAMP_CHARS 64       /* feed_lines: '[' in raw[:64] */
#define KEY_CHARS 200        /* _source_key: raw.find(")", 0, 200) */
#define PER_KEY 16           /* parse._SKIPPED_PER_SOURCE */
#define MAX_KEYS 64          /* distinct keys tracked per run; past that every line is kept */

enum { NOISE = 0, STAMPED = 1, CAND = 2, KEEP = 4 };
#define KEY_PYTHON ((Py_ssize_t)-1)   /* the key needs Python (_paste_key): always kept */

typedef struct {
    Py_ssize_t start;   /* offset of the line in the buffer */
    Py_ssize_t key;     /* source key = buf[start:start+key], or KEY_PYTHON */
    unsigned char cls;  /* NOISE | STAMPED | CAND, plus KEEP */
} Line;

typedef const unsigned char uchar;

/* Whether the literal s (n bytes) starts at p, reading nothing at or past e. */
static int lit(uchar *p, uchar *e, const char *s, size_t n)
{
    return (size_t)(e - p) >= n && memcmp(p, s, n) == 0;
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

/* parse.is_candidate on the line [s, e), plus the inline path's own conditions. */
static int is_cand(uchar *s, uchar *e)
{
    uchar *p = s;
    Py_ssize_t n = e - s;
    if (n > MAX_LINE || (n > 0 && e[-1] == '\r'))
        return 1;
    /* line[:2] in ("{'", ' {', '{"'); "{'" anywhere is tested below */
    if (n >= 2 && ((s[0] == ' ' && s[1] == '{') || (s[0] == '{' && s[1] == '"')))
        return 1;
    while (p < e) {
        unsigned c = *p;
        if (c >= 0x80) {   /* non-ASCII: must decode cleanly and not be U+FFFD */
            int len = utf8_len(p, e);
            if (len == 0 || (len == 3 && c == 0xEF && p[1] == 0xBF && p[2] == 0xBD))
                return 1;
            p += len;
            continue;
        }
        switch (c) {   /* dispatch on the first byte of each anchor */
        case 0: return 1;
        case ':': if (LIT(": {") || LIT(": \xe2\x80\xa6")) return 1; break;
        case 'E': if (LIT("Error") || LIT("EXEC:")) return 1; break;
        case 'r': if (LIT("retrying")) return 1; break;
        case 'f': if (LIT("ft ") || LIT("f memory")) return 1; break;
        case 'T': if (LIT("Traceback")) return 1; break;
        case 'M': if (LIT("Max retries")) return 1; break;
        case 'O': if (LIT("OfMemory")) return 1; break;
        case 'm': if (LIT("memory pressure")) return 1; break;
        case 'H': if (LIT("Health check failed")) return 1; break;
        case 'R': if (LIT("Recovered ")) return 1; break;
        case 'W': if (LIT("Watchdog caught") || LIT("W&B")) return 1; break;
        case 'J': if (LIT("Job '")) return 1; break;
        case 'F': if (LIT("Fatal async")) return 1; break;
        case 'c': if (LIT("checkpoint")) return 1; break;
        case 'w': if (LIT("wandb")) return 1; break;
        case 't': if (LIT("tensorboard") || LIT("train.py") || LIT("train_async.py")) return 1; break;
        case '+': if (LIT("+ ray job submit")) return 1; break;
        case ' ': if (LIT(" skipped: ") || LIT(" ...")) return 1; break;
        case ')': if (LIT(") {")) return 1; break;
        case 's': if (LIT("step:")) return 1; break;
        case '{': if (LIT("{'")) return 1; break;
        default: break;
        }
        p++;
    }
    return 0;
}

/* '[' among the first STAMP_CHARS characters (the line is valid UTF-8: not a candidate). */
static int stamped(uchar *s, uchar *e)
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

/* parse._source_key's length in bytes, or KEY_PYTHON when it needs the paste regex. */
static Py_ssize_t source_key(uchar *s, uchar *e)
{
    if (s == e)
        return 0;
    if (*s == '(' || *s == 0x1b) {
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
    if (*s == '>' || *s == ' ' || *s == '\t' || (*s >= '0' && *s <= '9') || *s >= 0x80)
        return KEY_PYTHON;   /* str.isdigit() holds for non-ASCII digits too */
    return 0;
}

/* Mark KEEP on the stamped lines of one noise run [lo, hi) that the per-key deques keep. */
static void select_kept(uchar *buf, Line *ln, Py_ssize_t lo, Py_ssize_t hi)
{
    struct { Py_ssize_t start, len; int count; } keys[MAX_KEYS];
    int nkeys = 0;
    for (Py_ssize_t i = hi - 1; i >= lo; i--) {
        Line *l = &ln[i];
        if (!(l->cls & STAMPED))
            continue;
        if (l->key == KEY_PYTHON) {
            l->cls |= KEEP;
            continue;
        }
        int j = 0;
        while (j < nkeys && !(keys[j].len == l->key
                              && memcmp(buf + keys[j].start, buf + l->start, (size_t)l->key) == 0))
            j++;
        if (j == nkeys) {
            if (nkeys < MAX_KEYS) {
                keys[nkeys].start = l->start;
                keys[nkeys].len = l->key;
                keys[nkeys].count = 0;
                nkeys++;
            } else {
                l->cls |= KEEP;   /* untracked key: keep (a superset is exact) */
                continue;
            }
        }
        if (keys[j].count < PER_KEY) {
            keys[j].count++;
            l->cls |= KEEP;
        }
    }
}

/* Split and classify; returns the number of lines, or -1 when out of memory (*out freed). */
static Py_ssize_t classify(uchar *buf, Py_ssize_t size, Line **out)
{
    Py_ssize_t cap = 1024, n = 0, run = 0;
    Line *ln = PyMem_RawMalloc(cap * sizeof(Line));
    uchar *end = buf + size, *s = buf;
    if (ln == NULL)
        return -1;
    for (;;) {
        uchar *nl = memchr(s, '\n', (size_t)(end - s));
        uchar *e = nl ? nl : end;
        if (n == cap) {
            Line *more = PyMem_RawRealloc(ln, 2 * cap * sizeof(Line));
            if (more == NULL) {
                PyMem_RawFree(ln);
                return -1;
            }
            ln = more;
            cap *= 2;
        }
        Line *l = &ln[n];
        l->start = s - buf;
        l->key = 0;
        if (is_cand(s, e)) {
            l->cls = CAND;
            select_kept(buf, ln, run, n);
            run = n + 1;
        } else if (stamped(s, e)) {
            l->cls = STAMPED;
            l->key = source_key(s, e);
        } else {
            l->cls = NOISE;
        }
        n++;
        if (nl == NULL)
            break;
        s = nl + 1;
    }
    select_kept(buf, ln, run, n);
    *out = ln;
    return n;
}

static PyObject *scan(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    Line *ln = NULL;
    Py_ssize_t n;
    PyObject *cands = NULL, *keep = NULL, *res = NULL;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    n = classify((uchar *)view.buf, view.len, &ln);
    Py_END_ALLOW_THREADS
    if (n < 0) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    cands = PyList_New(0);
    keep = PyList_New(0);
    if (cands == NULL || keep == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *to = ln[i].cls & CAND ? cands : ln[i].cls & KEEP ? keep : NULL;
        if (to != NULL) {
            PyObject *v = PyLong_FromSsize_t(i);
            int bad = v == NULL || PyList_Append(to, v) < 0;
            Py_XDECREF(v);
            if (bad)
                goto done;
        }
    }
    res = Py_BuildValue("(nOO)", n, cands, keep);
done:
    Py_XDECREF(cands);
    Py_XDECREF(keep);
    PyMem_RawFree(ln);
    PyBuffer_Release(&view);
    return res;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_O,
     "scan(buf) -> (n_lines, cands, keep): the lines of buf (split on b'\\n') that feed_lines must\n"
     "feed() one by one, and the skipped stamped lines its per-source bookkeeping keeps."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "Optional C accelerator for grpo_tui.lines.parse (see _scan.c).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void)
{
    return PyModule_Create(&module);
}
