"""Statistics for short, noisy, gappy metric series (5-50 points).

Method and defaults: docs/health-signs.md §4-§5. Every function skips
non-finite points, and functions that care about time take explicit step
arrays, because rollouts can be missing from a log. Windows are small
(W <= 16), so the O(W^2) pairwise statistics are cheap.

Callers own the policy: log transforms, the ``confirm`` count of consecutive
hits, CUSUM resets and envelope look-ups happen outside this module.
"""

from __future__ import annotations

import math
from functools import cache, lru_cache

import numpy as np

MAD_TO_SIGMA = 1.4826
EXACT_MAX_N = 10
MIN_TREND_POINTS = 8

__all__ = [
    "trailing_mean",
    "last_finite",
    "last_finite_mean",
    "mk_s",
    "mk_p_up",
    "mk_p_down",
    "mk_p_two_sided",
    "theil_sen_slope",
    "theil_sen_rise",
    "kendall_tau",
    "robust_sigma",
    "grows",
    "falls",
    "persistent_above",
    "persistent_below",
    "cusum_up",
    "is_flat",
]


# ---------------------------------------------------------------- helpers


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float).ravel()


def _finite(x) -> np.ndarray:
    """Values with NaN/inf dropped: a gap is not a data point."""
    a = _arr(x)
    return a[np.isfinite(a)]


def _finite_pairs(steps, x) -> tuple[np.ndarray, np.ndarray]:
    """(steps, x) where both are finite, ordered by step."""
    s, v = _arr(steps), _arr(x)
    if s.shape != v.shape:
        raise ValueError("steps and values must have the same length")
    keep = np.isfinite(s) & np.isfinite(v)
    if not keep.all():
        s, v = s[keep], v[keep]
    if s.size > 1 and (s[1:] > s[:-1]).all():
        return s, v  # already in step order (the usual case): no sort, no copy
    order = np.argsort(s, kind="stable")
    return s[order], v[order]


@lru_cache(maxsize=128)
def _upper_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs i < j (cached: windows come in a handful of sizes; read-only)."""
    i, j = np.triu_indices(n, k=1)
    i.flags.writeable = False
    j.flags.writeable = False
    return i, j


def median(v: np.ndarray):
    """np.median of a 1-D float array, without its generic machinery (the hot path of the
    window statistics): the same middle values, the same mean of two, NaN when a value is."""
    n = v.size
    if n == 0 or v.dtype.kind != "f" or v.ndim != 1:
        return np.median(v)
    h = n // 2
    if n % 2:
        part = np.partition(v, (h, n - 1))
        out = part[h]
    else:
        part = np.partition(v, (h - 1, h, n - 1))
        out = (part[h - 1] + part[h]) / 2
    return np.float64(np.nan) if np.isnan(part[-1]) else out  # (NaN sorts last)


def percentile(v: np.ndarray, p: float):
    """np.percentile(v, p) of a 1-D float array: rows_percentile of one row."""
    if v.size == 0 or v.dtype.kind != "f" or v.ndim != 1:
        return np.percentile(v, p)
    return rows_percentile(v[None, :], p)[0]


def rows_percentile(m: np.ndarray, p: float) -> np.ndarray:
    """np.percentile(row, p) of each row of a float array (its default method, 'linear'),
    without its generic machinery: numpy's own steps - the index (n - 1) * p / 100, the same
    partition (so even a zero's sign is the same), the interpolation of its _lerp - and NaN for
    a row holding one (tests/unit/judge/test_stats.py compares them bit for bit)."""
    n = m.shape[1]
    virtual = (n - 1) * (p / 100)
    if virtual >= n - 1:  # numpy: both neighbours the last value, weight virtual + 1
        below = above = -1
    else:
        below = math.floor(virtual)
        above = below + 1
    part = np.partition(m, sorted({0, -1, below, above}), axis=1)
    a, b = part[:, below], part[:, above]
    t = virtual - below
    diff = b - a
    out = b - diff * (1 - t) if t >= 0.5 else a + diff * t
    return np.where(np.isnan(part[:, -1]), np.nan, out)  # (NaN sorts last)


def _increasing(x: np.ndarray) -> bool:
    return x.ndim == 1 and (x.size < 2 or bool((x[1:] > x[:-1]).all()))


def intersect_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.intersect1d(a, b); for two strictly increasing arrays of one dtype (the ids of a run)
    by binary search, without np.unique (whose first call imports numpy.ma: ~0.05 s)."""
    if a.dtype != b.dtype or not (_increasing(a) and _increasing(b)):
        return np.intersect1d(a, b)
    if not a.size or not b.size:
        return a[:0].copy()
    pos = np.minimum(np.searchsorted(b, a), b.size - 1)
    return a[b[pos] == a]


def unique_inverse(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(a, return_inverse=True) of a 1-D integer array, without np.unique."""
    order = np.argsort(a, kind="stable")
    srt = a[order]
    new = np.concatenate(([True], srt[1:] != srt[:-1])) if srt.size else np.zeros(0, bool)
    inv = np.empty(a.size, np.intp)
    inv[order] = np.cumsum(new) - 1
    return srt[new], inv


def _norm_sf(z: float) -> float:
    """Upper tail of N(0, 1), via erfc so small tails keep precision."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


# ---------------------------------------------------------------- smoothing


def trailing_mean(values, window: int = 5) -> np.ndarray:
    """Causal mean of the last ``window`` finite values at each index.

    Never centred, so a live value never changes when later points arrive.
    Gaps carry the previous mean forward; NaN before the first finite value.
    """
    if window < 1:
        raise ValueError("window must be >= 1")
    x = _arr(values)
    return last_finite_mean(x, np.arange(x.size), window)[0]


def last_finite(x: np.ndarray, at: np.ndarray, window: int, back: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each position p of `at`: the indices into x of its last `window` finite values at or
    before p (and after p - back), oldest first, shape (len(at), window), -1 where there are
    fewer; and how many there are (the valid indices are always the last ones of a row)."""
    ok = np.isfinite(x)
    fpos = np.flatnonzero(ok).astype(np.int32)  # (int32: half the memory over a whole history)
    at = np.asarray(at, np.int64)
    if not fpos.size or not at.size:
        return np.full((at.size, window), -1, np.int32), np.zeros(at.size, np.int64)
    seen = np.cumsum(ok, dtype=np.int32)[at]  # finite values up to and including p
    j = seen[:, None] - window + np.arange(window, dtype=np.int32)
    idx = np.where(j >= 0, fpos[np.maximum(j, 0)], np.int32(-1))
    if back is not None:
        idx = np.where(idx > (at[:, None] - back), idx, np.int32(-1))
    return idx, (idx >= 0).sum(axis=1)


def last_finite_mean(
    x: np.ndarray, at: np.ndarray, window: int = 5, back: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, indices, count) of the last `window` finite values at each position of `at`
    (last_finite; the mean is NaN where there is none).  The same arithmetic as np.mean of those
    values taken one position at a time (a row of k contiguous values summed in order), so a
    rollout judged alone and judged with the whole history get the same mean to the bit."""
    idx, n = last_finite(x, at, window, back)
    means = np.full(len(n), np.nan)
    for k in np.unique(n).tolist() if len(n) > 16 else sorted(set(n.tolist())):
        if k:
            sel = n == k
            means[sel] = x[idx[sel, window - k :]].mean(axis=1)
    return means, idx, n


# ---------------------------------------------------------------- Mann-Kendall


def mk_s(x) -> int:
    """Mann-Kendall S = #concordant - #discordant pairs (in index order)."""
    v = _finite(x)
    i, j = _upper_pairs(v.size)
    return int(np.sign(v[j] - v[i]).sum())


@cache
def _mahonian_cdf(n: int) -> tuple[float, ...]:
    """P(inversions <= k) for a random permutation of n: exact null of S."""
    counts = [1]
    for m in range(2, n + 1):  # insert element m into each of m positions
        new = [0] * (len(counts) + m - 1)
        for k, c in enumerate(counts):
            for add in range(m):
                new[k + add] += c
        counts = new
    total = math.factorial(n)
    cdf, acc = [], 0
    for c in counts:
        acc += c
        cdf.append(acc / total)
    return tuple(cdf)


def _tie_counts(v: np.ndarray) -> np.ndarray:
    """np.unique(v, return_counts=True)[1] of finite values (sorted order), without its
    generic machinery."""
    srt = np.sort(v)
    if not srt.size:
        return np.zeros(0, np.intp)
    edge = np.flatnonzero(np.concatenate(([True], srt[1:] != srt[:-1], [True])))
    return np.diff(edge)


def _p_up_finite(v: np.ndarray) -> float:
    n = v.size
    if n < 2:
        return 1.0
    s = mk_s(v)
    ties = _tie_counts(v)
    if n <= EXACT_MAX_N and ties.size == n:
        pairs = n * (n - 1) // 2
        max_inv = (pairs - s) // 2  # S >= s  <=>  inversions <= (pairs - s) / 2
        return float(min(1.0, _mahonian_cdf(n)[max_inv]))
    t = ties[ties > 1].astype(np.int64)
    return _p_normal(n, s, int((t * (t - 1) * (2 * t + 5)).sum()))


def mk_p_up(x) -> float:
    """One-sided p for an upward trend: exact for n <= 10 w/o ties, else normal."""
    return _p_up_finite(_finite(x))


def mk_p_down(x) -> float:
    """One-sided p for a downward trend (mirror of mk_p_up)."""
    return _p_up_finite(-_finite(x))


def mk_p_two_sided(x) -> float:
    """Two-sided p; the null of S is symmetric, so twice the smaller tail."""
    v = _finite(x)
    return float(min(1.0, 2.0 * min(_p_up_finite(v), _p_up_finite(-v))))


# ---------------------------------------------------------------- Theil-Sen, tau, MAD


def theil_sen_slope(steps, x) -> float:
    """Median pairwise slope over real step numbers: tolerates ~29% outliers and gaps."""
    return _ts_slope(*_finite_pairs(steps, x))


def _ts_slope(s: np.ndarray, v: np.ndarray) -> float:
    i, j = _upper_pairs(s.size)
    ds = s[j] - s[i]
    ok = ds != 0  # duplicate steps carry no slope information
    if ok.all() and ok.size:
        return float(median((v[j] - v[i]) / ds))
    if not ok.any():
        return float("nan")
    return float(median((v[j] - v[i])[ok] / ds[ok]))


def theil_sen_rise(steps, x) -> float:
    """Slope times the step span: the size of the trend over the window."""
    s, v = _finite_pairs(steps, x)
    slope = _ts_slope(s, v)
    if not math.isfinite(slope):
        return float("nan")
    return slope * float(s[-1] - s[0])


def kendall_tau(a, b) -> float:
    """Kendall tau-b over pairs where both are finite (tie-aware); NaN if undefined."""
    x, y = _arr(a), _arr(b)
    if x.shape != y.shape:
        raise ValueError("a and b must have the same length")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    i, j = _upper_pairs(x.size)
    sx, sy = np.sign(x[j] - x[i]), np.sign(y[j] - y[i])
    denom = math.sqrt(float(np.sum(sx != 0)) * float(np.sum(sy != 0)))
    if denom == 0:
        return float("nan")
    return float(np.sum(sx * sy) / denom)


def robust_sigma(residuals) -> float:
    """1.4826 * MAD: a sigma estimate that one spike cannot inflate."""
    r = _finite(residuals)
    if r.size == 0:
        return float("nan")
    return float(MAD_TO_SIGMA * median(np.abs(r - median(r))))


# ---------------------------------------------------------------- rules


def _last3_median(v: np.ndarray) -> float:
    return float(median(v[-3:]))


def _edge_at_last(edge, x) -> float | None:
    """Scalar edge, or the edge aligned with the last finite point of x."""
    if edge is None:
        return None
    e = np.asarray(edge, dtype=float)
    if e.ndim == 0:
        return float(e)
    v = _arr(x)
    idx = np.flatnonzero(np.isfinite(v))
    return float(e.ravel()[idx[-1]]) if idx.size else float("nan")


def _trend(steps, x, *, direction: int, delta: float, edge, windows, alpha) -> dict | None:
    """Shared body of grows/falls; direction +1 (up) or -1 (down)."""
    s, v = _finite_pairs(steps, x)
    n = v.size
    if n < MIN_TREND_POINTS:
        return None
    edge_now = _edge_at_last(edge, x)
    med3 = _last3_median(v)
    if edge_now is not None and not direction * (med3 - edge_now) > 0:
        return None  # NaN edge also fails: no envelope, no envelope claim
    for w in windows:
        if w < MIN_TREND_POINTS or w > n:
            continue
        ws, wv = s[-w:], v[-w:]
        p = mk_p_up(wv) if direction > 0 else mk_p_down(wv)
        rise = theil_sen_rise(ws, wv)
        if p < alpha and direction * rise > delta:
            return {
                "window": int(w),
                "p": p,
                "rise": rise,
                "delta": float(delta),
                "first_step": float(ws[0]),
                "last_step": float(ws[-1]),
                "first": float(wv[0]),
                "last": float(wv[-1]),
                "median_last3": med3,
                "edge": None if edge_now is None else float(edge_now),
            }
    return None


def grows(steps, x, *, delta: float, hi=None, windows=(8, 16), alpha: float = 0.05) -> dict | None:
    """One "grows step after step" evaluation at the last point (docs/health-signs.md §5).

    MK alone false-alarms in most healthy runs, hence the mandatory rise > delta
    gate, plus median(last 3) > hi when an envelope exists. ``hi`` is a scalar
    or an array aligned with ``x``. Returns evidence when it fires, else None.
    """
    return _trend(steps, x, direction=1, delta=delta, edge=hi, windows=windows, alpha=alpha)


def falls(steps, x, *, delta: float, lo=None, windows=(8, 16), alpha: float = 0.05) -> dict | None:
    """Mirror of grows: MK down, rise < -delta, median(last 3) < lo."""
    return _trend(steps, x, direction=-1, delta=delta, edge=lo, windows=windows, alpha=alpha)


def _beyond_count(x, edge, m: int, n: int, direction: int) -> bool:
    v = _arr(x)
    e = np.broadcast_to(np.asarray(edge, dtype=float), v.shape)
    ok = np.isfinite(v)
    v, e = v[ok][-n:], e[ok][-n:]
    with np.errstate(invalid="ignore"):
        hits = direction * (v - e) > 0  # NaN edge never counts as beyond
    return int(hits.sum()) >= m


def persistent_above(x, edge, m: int = 3, n: int = 4) -> bool:
    """>= m of the last n finite points above edge: "jumped and stayed"."""
    return _beyond_count(x, edge, m, n, 1)


def persistent_below(x, edge, m: int = 3, n: int = 4) -> bool:
    """>= m of the last n finite points below edge."""
    return _beyond_count(x, edge, m, n, -1)


def cusum_up(z, k: float = 1.0, h: float = 5.0) -> int | None:
    """Index where the one-sided tabular CUSUM of z first exceeds h, else None.

    Meant for expected-flat, near-iid metrics only (autocorrelation inflates
    its false alarms). NaN points leave the sum unchanged.
    """
    acc = 0.0
    for i, zi in enumerate(_arr(z)):
        if not math.isfinite(zi):
            continue
        acc = max(0.0, acc + zi - k)
        if acc > h:
            return i
    return None


def is_flat(steps, x, delta_flat: float, window: int = 16) -> bool | None:
    """Equivalence claim for expected-flat metrics; None with < 8 points.

    Not rejecting a trend is not evidence of flatness, so the small-rise
    margin (delta_flat) is what makes the claim; MK p > 0.10 adds "no trend".
    """
    s, v = _finite_pairs(steps, x)
    if v.size < MIN_TREND_POINTS:
        return None
    w = min(v.size, window)
    ws, wv = s[-w:], v[-w:]
    return bool(abs(theil_sen_rise(ws, wv)) <= delta_flat and mk_p_two_sided(wv) > 0.10)


# -- the window statistics of judge/py, one row per window --------------------------------
def rows_median(m: np.ndarray) -> np.ndarray:
    """np.median of each row (the same two middle values, the same mean), NaN for a NaN row."""
    n = m.shape[1]
    h = n // 2
    if n % 2:
        out = np.partition(m, h, axis=1)[:, h]
    else:
        # The lower middle value is the largest of the h below the upper one: one kth instead of
        # two (a partition with two costs ~2.5x one on rows of 496).  Only where both middle
        # values are zeros can the two ways differ (which of -0.0 and 0.0 each picks, so the
        # mean's sign): those rows are partitioned for both middle values, as before.
        part = np.partition(m, h, axis=1)
        out = (part[:, :h].max(axis=1) + part[:, h]) / 2
        zero = np.flatnonzero(out == 0)
        if len(zero):
            both = np.partition(m[zero], (h - 1, h), axis=1)
            out[zero] = (both[:, h - 1] + both[:, h]) / 2
    return np.where(np.isnan(m).any(axis=1), np.nan, out)


def rows_ts_slope(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """theil_sen_slope of each row (distinct, increasing steps)."""
    return rows_median(pair_slopes(s, v))


LAG_MIN_CELLS = 1 << 18  # fewer pairs in a batch, or windows shorter than LAG_MIN_N: two gathers
LAG_MIN_N = 32  # cost less than a slice per lag (measured: 1057 rows of 24 or 200 of 40)


def pair_slopes(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(v[:, j] - v[:, i]) / (s[:, j] - s[:, i]) for every pair i < j of each row: the same
    numbers as with _upper_pairs' index arrays, grouped by lag j - i on a big batch (a median
    does not see the order).  Why: on a thousand rows of 32 or 40, two gathers through index
    arrays cost 1.3-2x what one slice per lag does (bulk._ts_rise, the held length-hacking
    tests); on smaller batches the gathers are cheaper."""
    rows, n = v.shape
    i, j = _upper_pairs(n)
    if n < LAG_MIN_N or rows * len(i) < LAG_MIN_CELLS:
        return (v[:, j] - v[:, i]) / pair_gaps(s, i, j)
    steady = consecutive(s)
    out = np.empty((rows, len(i)))
    at = 0
    for lag in range(1, n):
        part = out[:, at : at + n - lag]
        np.subtract(v[:, lag:], v[:, :-lag], out=part)
        if steady:  # consecutive steps: every gap of this lag is the lag
            np.divide(part, float(lag), out=part)
        else:
            np.divide(part, s[:, lag:] - s[:, :-lag], out=part)
        at += n - lag
    return out


def pair_gaps(s: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """s[:, j] - s[:, i]; one shared row when every row's steps are consecutive integers (the
    usual run: the same numbers, without a matrix of them)."""
    if consecutive(s):
        return (j - i).astype(float)[None, :]  # increasing integers n-1 apart: consecutive
    return s[:, j] - s[:, i]


def trailing_run(mask: np.ndarray) -> int:
    """How many values at the end of `mask` are True in a row (the whole length when all are)."""
    off = np.flatnonzero(~np.asarray(mask, bool))
    return len(mask) - 1 - int(off[-1]) if len(off) else len(mask)


def consecutive(s: np.ndarray) -> bool:
    """Every row's steps are consecutive integers (a gap of k steps is k)."""
    n = s.shape[1]
    return bool(
        len(s)
        and n > 1
        and bool(((s[:, -1] - s[:, 0]) == n - 1).all())
        and _whole(s)
        and bool((s[:, 1:] > s[:, :-1]).all())
    )


def _whole(a: np.ndarray) -> bool:
    return bool((np.abs(a) < 2.0**52).all() and (a == np.floor(a)).all())


def rows_ts_rise(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    return rows_ts_slope(s, v) * (s[:, -1] - s[:, 0])


def rows_robust_sigma(r: np.ndarray) -> np.ndarray:
    return MAD_TO_SIGMA * rows_median(np.abs(r - rows_median(r)[:, None]))


def rows_mk_p_from_s(s: np.ndarray, ties: np.ndarray, windows, n: int) -> np.ndarray:
    """mk_p_up of windows of n finite values, from their Mann-Kendall S and tie flags
    (`windows(rows)`: the values of those rows' windows, read only where there are ties): the
    exact null without ties for n <= 10, else the normal approximation with the tie
    correction - the same operations, so the same numbers."""
    p = _p_table(n)[s + n * (n - 1) // 2]
    tied = np.flatnonzero(ties)
    if len(tied):
        srt = np.sort(windows(tied), axis=1)
        tsum = _tie_sums(srt[:, 1:] == srt[:, :-1])
        span = 2 * (n * (n - 1) // 2) + 1  # one integer key per (S, tie sum)
        keys, inv = unique_inverse(tsum * span + (s[tied] + n * (n - 1) // 2))
        vals = np.array([_p_normal(n, int(key % span) - n * (n - 1) // 2, int(key // span)) for key in keys.tolist()])
        p[tied] = vals[np.ravel(inv)]
    return p


def rows_mk_p_up(v: np.ndarray) -> np.ndarray:
    """mk_p_up of each row (finite values)."""
    return _rows_p_up(v, _rows_mk_s(v))


def rows_mk_p_below(v: np.ndarray, alpha: float, known: tuple | None = None) -> np.ndarray:
    """rows_mk_p_up(v) < alpha for alpha <= 0.5, each p computed only where S > 0: with S <= 0
    p is at least 0.5 (the null of S is symmetric), and most windows of a healthy run are there.
    `known`: the rows' (S, has ties) when already counted (windowed_mk_s: the same integers)."""
    s = _rows_mk_s(v) if known is None else known[0]
    out = np.zeros(len(v), bool)
    up = np.flatnonzero(s > 0)
    if len(up):
        if known is None:
            out[up] = _rows_p_up(v[up], s[up]) < alpha
        else:
            out[up] = rows_mk_p_from_s(s[up], known[1][up], lambda r: v[up[r]], v.shape[1]) < alpha
    return out


def _rows_mk_s(v: np.ndarray) -> np.ndarray:
    i, j = _upper_pairs(v.shape[1])
    d = v[:, j] - v[:, i]
    return (d > 0).sum(axis=1) - (d < 0).sum(axis=1)


def _rows_p_up(v: np.ndarray, s: np.ndarray) -> np.ndarray:
    srt = np.sort(v, axis=1)
    ties = (srt[:, 1:] == srt[:, :-1]).any(axis=1)
    return rows_mk_p_from_s(s, ties, lambda rows: v[rows], v.shape[1])


@lru_cache(maxsize=64)
def _p_table(n: int) -> np.ndarray:
    """p of S = -pairs .. pairs without ties (read-only)."""
    pairs = n * (n - 1) // 2
    if n <= EXACT_MAX_N:
        cdf = _mahonian_cdf(n)
        out = np.array([float(min(1.0, cdf[(pairs - s) // 2])) for s in range(-pairs, pairs + 1)])
    else:
        out = np.array([_p_normal(n, s, 0) for s in range(-pairs, pairs + 1)])
    out.flags.writeable = False
    return out


@lru_cache(maxsize=4096)
def _p_normal(n: int, s: int, tsum: int) -> float:
    """Mann-Kendall's one-sided p_up by the normal approximation: S = s of n values whose tie
    groups of t sum t(t-1)(2t+5) to `tsum` (Var(S) with the tie correction, continuity-corrected)."""
    var = (n * (n - 1) * (2 * n + 5) - float(tsum)) / 18.0
    if var <= 0:
        return 1.0
    z = (s - (1 if s > 0 else -1 if s < 0 else 0)) / math.sqrt(var)
    return float(min(1.0, max(0.0, _norm_sf(z))))


def _tie_sums(eq: np.ndarray) -> np.ndarray:
    """sum of t(t-1)(2t+5) over each row's tie groups (eq: sorted neighbours equal), as ints."""
    rows, m = eq.shape
    start = np.concatenate([np.ones((rows, 1), bool), ~eq], axis=1)  # a group starts here
    group = np.cumsum(start, axis=1) - 1 + (np.arange(rows) * (m + 1))[:, None]
    t = np.bincount(group.ravel(), minlength=rows * (m + 1)).reshape(rows, m + 1).astype(np.int64)
    return (t * (t - 1) * (2 * t + 5)).sum(axis=1)


def rows_resid_sigma(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The robust spread of each row around its Theil-Sen line (a trend is not noise)."""
    r = v - rows_ts_slope(s, v)[:, None] * s
    return rows_robust_sigma(r - rows_median(r)[:, None])


def rows_noise(s: np.ndarray, v: np.ndarray, floor: np.ndarray | float) -> np.ndarray:
    """A window's own noise, per row (finite values, distinct increasing steps): the largest of
    the floor, the robust spread around the Theil-Sen line (from 4 values) and the step-to-step
    spread (from 5, blind to trends and level shifts; a short window's MAD runs low)."""
    n = v.shape[1]
    a = rows_resid_sigma(s, v) if n >= 4 else np.full(len(v), np.nan)
    b = rows_robust_sigma(np.diff(v, axis=1)) / math.sqrt(2.0) if n >= 5 else np.full(len(v), np.nan)
    out = row_max(floor, np.where(np.isfinite(a), a, -np.inf))
    return row_max(out, np.where(np.isfinite(b), b, -np.inf))


def noise(steps: np.ndarray, v: np.ndarray, floor: float) -> float:
    """rows_noise of one window (the rules' scalar form: the same operations on one row)."""
    return float(rows_noise(np.asarray(steps, float)[None, :], np.asarray(v, float)[None, :], floor)[0])


def resid_sigma(steps: np.ndarray, v: np.ndarray) -> float:
    """rows_resid_sigma of one window of at least 4 values (NaN for fewer)."""
    if len(v) < 4:
        return float("nan")
    return float(rows_resid_sigma(np.asarray(steps, float)[None, :], np.asarray(v, float)[None, :])[0])


def row_max(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """Python's max(a, b) element-wise: b only where it is greater (a NaN b never wins)."""
    return np.where(b > a, b, a)


def rows_trailing_best(r: np.ndarray, window: int) -> np.ndarray:
    """max of trailing_mean(row, window) of each row (rows of finite values)."""
    head = min(window - 1, r.shape[1])
    best = (np.cumsum(r[:, :head], axis=1) / np.arange(1, head + 1)).max(axis=1)
    if r.shape[1] >= window:
        best = np.maximum(best, np.lib.stride_tricks.sliding_window_view(r, window, axis=1).mean(axis=-1).max(axis=1))
    return best


# -- the rule's tests ------------------------------------------------------------------------


def windowed_mk_s(x: np.ndarray, windows) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """{w: (Mann-Kendall S, window has ties)} of x[r-w+1 .. r] for every row r >= w-1 (rows
    before are 0 / False): per lag k the signs of x[t] - x[t-k], summed over each window by
    prefix sums - O(rows x w) integer work, no pair matrix."""
    n = len(x)
    top = max(windows)
    # cs[k, t] = sum over u < t of sign(x[u] - x[u-k]) (0 for u < k); the same for ties in ct
    cs = np.zeros((top, n + 1), np.int32)
    ct = np.zeros((top, n + 1), np.int32)
    for k in range(1, min(top, n)):
        a, b = x[k:], x[:-k]
        np.cumsum((a > b).astype(np.int32) - (a < b), out=cs[k, k + 1 :])
        np.cumsum(a == b, out=ct[k, k + 1 :], dtype=np.int32)
    lag_s, lag_t = {}, {}  # lag_s[w][t] = cs[1..w-1, t] summed
    acc_s, acc_t = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
    for k in range(1, top):
        acc_s += cs[k]
        acc_t += ct[k]
        if k + 1 in windows:
            lag_s[k + 1], lag_t[k + 1] = acc_s.copy(), acc_t.copy()
    out = {}
    for w in windows:
        s = np.zeros(n, np.int64)
        t = np.zeros(n, bool)
        if n >= w:
            m = n - w + 1  # windows r = w-1 .. n-1
            head_s = np.zeros(m, np.int64)
            head_t = np.zeros(m, np.int64)
            for k in range(1, w):  # lag k's pairs before the window start
                head_s += cs[k, k : k + m]
                head_t += ct[k, k : k + m]
            s[w - 1 :] = lag_s[w][w:] - head_s
            t[w - 1 :] = (lag_t[w][w:] - head_t) > 0
        out[w] = (s, t)
    return out


@lru_cache(maxsize=64)
def s_needed(w: int, alpha: float) -> int:
    """Smallest S whose one-sided Mann-Kendall p of w values without ties (_p_up_finite) is < alpha."""
    pairs = w * (w - 1) // 2
    for s in range(pairs + 1):
        p = _mahonian_cdf(w)[(pairs - s) // 2] if w <= EXACT_MAX_N else _p_normal(w, s, 0)
        if p < alpha:
            return s
    return pairs + 1
