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
#define PER_KEY 16           /* native._SKIPPED_PER_SOURCE */
#define REJOIN_PARTS 8       /* native._REJOIN_PARTS */
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

/* The parts, in the order each needs the ones before it. */
#include "csrc/walk.h"
#include "csrc/classify.h"
#include "csrc/scan.h"
#include "csrc/packed.h"
#include "csrc/fold.h"
#include "csrc/store.h"
#include "csrc/ryu.h"
#include "csrc/export.h"

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
     "csv_rows(columns, n[, keys]) -> str | None: n CSV rows (each ending in a newline) of floats (repr),\n"
     "ints and None (nothing) from columns of n cells (None: a blank column); None if another cell is met.\n"
     "keys (a JSON key and ': ' per column): the rows as JSON objects joined by ', ', number columns only."},
    {"put_row", (PyCFunction)(void (*)(void))put_row, METH_FASTCALL,
     "put_row(views, row, values, types) -> bool: values (a dict or Packed of floats and ints of exactly those types)\n"
     "into cell `row` of each float64 memoryview, in order; False (nothing written) otherwise."},
    {"add_row", (PyCFunction)(void (*)(void))add_row, METH_FASTCALL,
     "add_row(sums, counts, row, values, types) -> bool: put_row's check, each value added to its sum\n"
     "and count at `row` (a NaN count: the first value there)."},
#ifdef HAVE_READ_SCAN
    {"read_scan", (PyCFunction)(void (*)(void))read_scan, METH_FASTCALL,
     "read_scan(fd, buf, have, want, max_line, pairs=False, untimed=False[, walk_to]) -> (n, cut, walk | None[, mid]):\n"
     "a read into buf[have:] and scan_raw(buf[:cut]) (cut: the last newline; untimed: scan_raw_untimed) without the\n"
     "GIL in between (files._views).  With walk_to: only buf[:mid] is walked, mid the first newline at\n"
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

/* PyModule_AddObjectRef of a new reference (NULL: -1, the error set), which it releases. */
static int add_new(PyObject *m, const char *name, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyModule_AddObjectRef(m, name, value);
    Py_DECREF(value);
    return rc;
}

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
    /* the parser's constants this file copies (native.py refuses a scanner that disagrees) */
    if (m != NULL && (PyModule_AddIntConstant(m, "REJOIN_PARTS", REJOIN_PARTS) < 0
                      || PyModule_AddIntConstant(m, "PER_KEY", PER_KEY) < 0
                      || PyType_Ready(&Packed_Type) < 0 || PyType_Ready(&Fold_Type) < 0
                      || PyModule_AddObjectRef(m, "Fold", (PyObject *)&Fold_Type) < 0
                      || PyModule_AddObjectRef(m, "Packed", (PyObject *)&Packed_Type) < 0
                      || add_new(m, "RECORD_FIELDS", field_names(RECORD_FIELDS, R_FIELDS)) < 0
                      || add_new(m, "EVENT_FIELDS", field_names(EVENT_FIELDS, E_FIELDS)) < 0))
        Py_CLEAR(m);
    return m;
}
