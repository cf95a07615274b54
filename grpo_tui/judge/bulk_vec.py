"""Length-hacking's vectorised gate (judge/bulk.py): for every recorded rollout at once, whether
its sign may show there (MAYBE), surely cannot (NO) or must be asked (UNKNOWN), on sliding windows
of the columns - a necessary condition (tests/equivalence/test_bulk_gates.py), so HackingTest's
costlier sign is computed only where it may show.  The other rules answer over the whole history
themselves (judge/bulk_answers.py)."""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view as _sw

from ..store.metric_store import Segment
from . import stats
from .rules.base import (
    HACK_MIN,
    WINDOW,
)
from .setup import FIRST as FIT_FIRST
from .signals import BY_ID, metric_for

EPS = 1e-9  # a hair's margin: a gate's edge lowered by it never says no where the rule fires
BASE_ROWS = 10
START = max(BASE_ROWS, FIT_FIRST, 4) - 1  # first row with the final baseline, fit and a last-4
UNKNOWN, NO, MAYBE = -1, 0, 1


def _vals(seg: Segment, name: str | None, end: int) -> np.ndarray:
    """values_at_rows(name, rows 0..end-1), the same arithmetic on a slice (NaN without a metric)."""
    if name is None:
        return np.full(end, math.nan)
    if name in seg.train_sum:
        s = seg.train_sum[name].data[:end]
        c = seg.train_cnt[name].data[:end]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(c > 0, s / np.where(c > 0, c, 1), math.nan)
    col = seg.columns.get(name)
    if col is None:
        return np.full(end, math.nan)
    return col.data[:end]


def _dense(ok: np.ndarray, rows: np.ndarray, w: int) -> np.ndarray:
    """Whether ok holds on all w rows ending at each op's row."""
    c = np.concatenate([[0], np.cumsum(~ok)])
    lo = np.maximum(rows + 1 - w, 0)
    return (c[rows + 1] - c[lo]) == 0


def _last4(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows' last four values, shape (ops, 4): a[row-3 .. row]."""
    return np.stack([a[rows - 3], a[rows - 2], a[rows - 1], a[rows]], axis=1)


def _log(v: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.where(v > 0, v, np.nan))


def _windows(x: np.ndarray, rows: np.ndarray, w: int) -> np.ndarray:
    """x[row-w+1 .. row] for each op row, shape (ops, w)."""
    if len(rows) and int(rows.min()) >= w - 1:
        return _sw(x, w)[rows - (w - 1)]  # (rows of a strided view: no index matrix)
    return x[(rows[:, None] - (w - 1)) + np.arange(w)[None, :]]


def _mk_memo(memo: dict, name: str | tuple | None, x: np.ndarray, windows: tuple) -> dict:
    """_mk_rows of a metric's column (non-finite values as 0), once per name, length and windows
    (the gates read the same ones)."""
    key = (name, len(x), windows)
    got = memo.get(key) if name is not None else None
    if got is None:
        got = stats.windowed_mk_s(np.where(np.isfinite(x), x, 0.0), windows)
        if name is not None:
            memo[key] = got
    return got


TS_CHUNK = 2048  # ops a batch: bounded memory (a run that holds length-hacking asks at
# nearly every op; 12,800 ops of 32 took 180 MB in one batch, 8 MB a chunk)


def _ts_rise(s: np.ndarray, x: np.ndarray, rows: np.ndarray, w: int) -> np.ndarray:
    """Theil-Sen rise (median pairwise slope x the id span) of each op's last w points."""
    if len(rows) > TS_CHUNK:
        return np.concatenate([_ts_rise(s, x, rows[a : a + TS_CHUNK], w) for a in range(0, len(rows), TS_CHUNK)])
    ws, wx = _windows(s, rows, w), _windows(x, rows, w)
    slope = stats.rows_median(stats.pair_slopes(ws, wx))
    return slope * (ws[:, -1] - ws[:, 0])


def _med4(a: np.ndarray) -> np.ndarray:
    return stats.rows_median(a)


def _hacking_vec(seg, rs, ids, rows, memo: dict | None = None) -> np.ndarray:
    """Every firing path of rule_length_hacking needs, on one window w: length's Mann-Kendall
    p_up < 0.05 and reward's p_down < 0.10 (S beyond the no-ties threshold; a window with
    ties is a maybe) and the window's last-4 reward median below its first-4 - or reward below
    its band in 3 of the last 4 with length's p_up < 0.05 on 8."""
    end = len(ids)
    ln, rn = metric_for(seg, BY_ID["length"]), metric_for(seg, BY_ID["reward"])
    if ln is None or rn is None:
        return np.full(len(rows), NO, np.int8)
    L, R = _vals(seg, ln, end), _vals(seg, rn, end)
    dense = _dense(np.isfinite(L) & np.isfinite(R), rows, WINDOW)
    res = np.full(len(rows), UNKNOWN, np.int8)
    if not dense.any() or WINDOW < HACK_MIN:
        return res
    sel = rows[dense]
    L0, R0 = np.where(np.isfinite(L), L, 0.0), np.where(np.isfinite(R), R, 0.0)
    maybe = np.zeros(len(sel), bool)
    last4 = _med4(_windows(R0, sel, 4))
    band = np.zeros(len(sel), bool)  # reward below its band in 3 of the last 4
    b = rs.bounds_many("reward", ids)
    if b is not None:
        lo = b[0]
        lo_fin = _last4(np.isfinite(lo), sel).all(axis=1)
        with np.errstate(invalid="ignore"):
            band = lo_fin & ((_last4(R0, sel) < _last4(lo, sel) + EPS).sum(axis=1) >= 3)
    idf = ids.astype(float)
    memo = {} if memo is None else memo
    mk_l, mk_r = _mk_memo(memo, ln, L, (8, 12, 16, 24, 32)), _mk_memo(memo, rn, R, (8, 12, 16, 24, 32))
    for w in (8, 12, 16, 24, 32):
        sl, tl = mk_l[w][0][sel], mk_l[w][1][sel]
        sr, tr = mk_r[w][0][sel], mk_r[w][1][sel]
        up = tl | (sl >= stats.s_needed(w, 0.05) - 1)
        down = tr | (-sr >= stats.s_needed(w, 0.10) - 1)
        whole = sel >= w - 1  # (a row before has no window of w)
        first4 = np.full(len(sel), np.nan)
        first4[whole] = _med4(_windows(R0, sel[whole] - (w - 4), 4))
        cand = whole & up & (last4 < first4 + EPS)
        up8 = cand & band if w == 8 else None  # the band path (length up on 8, reward below)
        cand &= down & ~maybe  # (a row already maybe needs no other window)
        # sizes: length's Theil-Sen rise >= 15 % of its median, reward's fall >= 0.03
        k = np.flatnonzero(cand | up8) if up8 is not None else np.flatnonzero(cand)
        if len(k):
            rl = _ts_rise(idf, L0, sel[k], w)
            wl = _windows(L0, sel[k], w)
            big = rl >= 0.15 * np.abs(stats.rows_median(wl)) - EPS * np.maximum(1.0, np.abs(rl))
            if up8 is not None:
                up8[k] &= big
            kk = k[cand[k] & big]  # reward's fall: only where length's rise is big
            cand[k] = False
            if len(kk):
                cand[kk] = -_ts_rise(idf, R0, sel[kk], w) >= 0.03 - EPS
        maybe |= cand
        if up8 is not None:
            maybe |= up8
    res[dense] = np.where(maybe, MAYBE, NO)
    return res
