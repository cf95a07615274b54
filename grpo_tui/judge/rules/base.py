"""What every rule shares: its window on the run (RuleContext), the condition it returns, the
run's own baseline and noise, and the drift and explosion tests the trend rules are built on."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...store.metric_store import Segment
from .. import stats
from ..ranges import RangeSet
from ..setup import FIRST as FIT_FIRST, FIT_FLAGS, FIT_SIGNALS, defaults_fit
from ..signals import (
    BY_ID,
    Signal,
    first_rows,
    metric_for,
    signal_at_rows,
    signal_series,
    zero_std_parts,
)

WINDOW = 40  # rollouts a rule may look back
TREND_WINDOWS = (8, 16, 32)  # a trend must show on one of these (the longer, the slower the drift)
BASELINE_ROWS = 10  # the run's own baseline: its first rollouts
EXPLOSION = math.log(10.0)  # x10 beyond both the band and the own baseline: critical at once
K_LEVEL = 2.5  # level edge: baseline + max(rho, K_LEVEL x the noise of a 4-point mean)
K_RISE = 4.0  # rise over W rollouts must beat K_RISE x its own noise, sigma sqrt(12 / W)
ALPHA_SHORT, ALPHA_LONG = 0.01, 0.01  # one-sided Mann-Kendall level on 8 / on 16-32 rollouts
K_FALL = 2.5  # length-hacking: reward's fall over W must beat K_FALL x its noise
HACK_MIN = 16  # ... judged once 16 rollouts show the run's own reward noise
ALPHA_FALL = 0.05  # ... and reward's one-sided Mann-Kendall p must be below this
# noise floors in judging units (log units for log signals)
FLOOR = {"gap": 0.02, "kl": 0.03, "grad_norm": 0.08, "rollout_time": 0.03, "length": 0.02, "reward": 0.01}
# smallest drift that matters (log ratio): the gap can rise 10 % and plateau in a healthy run,
# rollout time x1.3 with heat, grad norm drifts x1.4 over a long run
RHO = {"gap": math.log(1.25), "kl": math.log(1.5), "grad_norm": math.log(2.5), "rollout_time": math.log(1.5)}
ABSURD = {"grad_norm": 1e4}  # never healthy, whatever the setup (pre-clip norm)


@dataclass(frozen=True, slots=True)
class RuleInfo:
    id: str
    severity: str  # default severity
    meaning: str
    check: str
    signals: tuple[str, ...]


@dataclass(slots=True)
class Condition:
    """A rule's sign seen at one evaluation."""

    rule: str
    severity: str
    start: int | None  # rollout where it started
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    signal: str | None = None  # out-of-range: which signal; else the main signal

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.rule, self.signal if self.rule == "out-of-range" else None)


def _r(x: float, nd: int = 4) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    r = float(f"{x:.{nd}g}")
    return r if math.isfinite(r) else float(x)  # (1.79751e308 rounds up past the largest float)


def ranges_for(seg: Segment, ranges: RangeSet, upto: int | None = None) -> RangeSet:
    """The ranges that judge this run: without the manual's defaults when they don't fit it
    (judge/setup.py `defaults_fit`); ranges from a file stay.  The engine's per-signal status
    should read its bands from here too, so a run of another setup is not shown in warning.

    `defaults_fit` reads only the launch flags and the first rollouts, so its answer is kept
    per segment under a key made of exactly those inputs (recomputed whenever one changes)."""
    rs = ranges.for_framework(seg.framework)
    if not rs.use_defaults:
        return rs
    fit, _, narrowed = _fit_memo(seg, rs, upto)
    return rs if fit or narrowed is None else narrowed


def defaults_fit_memo(seg: Segment, ranges: RangeSet, upto: int | None = None) -> tuple[bool, str]:
    """`defaults_fit` (fit, why) for a framework-adjusted RangeSet, from the segment's memo."""
    fit, why, _ = _fit_memo(seg, ranges, upto)
    return fit, why


def _fit_memo(seg: Segment, rs: RangeSet, upto: int | None) -> tuple[bool, str, RangeSet | None]:
    rows = first_rows(seg, FIT_FIRST, upto)
    # Only a record changes the store: with the same count of records, flags and first rows the
    # values read the same, and the full key (a read of every fit signal) need not be made.
    quick = (seg.records, seg.framework, repr(tuple(seg.flags.get(k) for k in FIT_FLAGS)), rows.tobytes())
    memo = seg.judge_memo.get("fit")  # (one per segment: a thread owns its store)
    if memo is not None and memo[1] is rs and memo[5] == quick:
        return memo[2], memo[3], memo[4]
    key = _fit_key(seg, rs, rows)
    if memo is not None and memo[0] == key and memo[1] is rs:
        seg.judge_memo["fit"] = (*memo[:5], quick)
        return memo[2], memo[3], memo[4]
    fit, why = defaults_fit(seg, rs, upto)
    narrowed = None if fit else RangeSet(rs.envelopes, rs.constant, rs.sigmas, rs.path, rs.meta, use_defaults=False)
    seg.judge_memo["fit"] = (key, rs, fit, why, narrowed, quick)
    return fit, why, narrowed


def _fit_key(seg: Segment, rs: RangeSet, rows: np.ndarray) -> tuple:
    """Everything `defaults_fit` reads: framework, the launch flags it names, which signals
    use a default range, and the raw values of its signals on the first rollouts (`rows`)."""
    parts: list = [seg.framework, repr(tuple(seg.flags.get(k) for k in FIT_FLAGS)), rows.tobytes()]
    for sig_id in FIT_SIGNALS:
        if rs.source(sig_id) != "default":
            parts.append(None)
            continue
        name = metric_for(seg, BY_ID[sig_id])
        parts.append(name)
        if name is not None and len(rows):
            parts.append(seg.values_at_rows(name, rows).tobytes())
    return tuple(parts)


class RuleContext:
    """The window every rule reads, built once per evaluation."""

    def __init__(
        self,
        seg: Segment,
        ranges: RangeSet,
        upto: int,
        open_rules: frozenset[str] = frozenset(),
    ) -> None:
        self.seg = seg
        self.ranges = ranges_for(seg, ranges, upto)
        self.upto = upto
        self.open_rules = open_rules  # alerts already raised: they hold while their sign stays
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._base_rows: np.ndarray | None = None

    def series(self, sig_id: str, part: str = "total", last: int = WINDOW) -> tuple[np.ndarray, np.ndarray]:
        """(ids, values) of the last `last` rollouts up to the judged one (a rule that weighs the
        run's long-run course looks further back than the window)."""
        key = f"{sig_id}:{part}" if last == WINDOW else f"{sig_id}:{part}:{last}"
        got = self._cache.get(key)
        if got is None:
            if sig_id == "zero_std" and last == WINDOW:  # every part at once: one read of the counts
                rows = self.seg.rows_upto(WINDOW, self.upto)
                for p, series in zero_std_parts(self.seg, rows).items():
                    self._cache[f"zero_std:{p}"] = series
                return self._cache[key]
            got = self._cache[key] = signal_series(self.seg, BY_ID[sig_id], last=last, part=part, upto=self.upto)
        return got

    def baseline(self, sig_id: str, part: str = "total") -> tuple[np.ndarray, np.ndarray]:
        """(ids, values) of the segment's first BASELINE_ROWS rollouts (up to the judged one)."""
        key = f"base:{sig_id}:{part}"
        got = self._cache.get(key)
        if got is None:
            if self._base_rows is None:
                self._base_rows = first_rows(self.seg, BASELINE_ROWS, self.upto)
            got = self._cache[key] = signal_at_rows(self.seg, BY_ID[sig_id], self._base_rows, part)
        return got

    @property
    def k(self) -> int:
        return self.seg.steps_per_rollout


# -- helpers --------------------------------------------------------------------------------
def _finite(ids: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(vals)
    return ids[ok], vals[ok]


def _log(vals: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.where(vals > 0, vals, np.nan))


def _log_series(ids: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, log values, values) of the positive finite points."""
    ids, vals = _finite(ids, vals)
    lv = _log(vals)
    ok = np.isfinite(lv)
    return ids[ok], lv[ok], vals[ok]


@dataclass(frozen=True, slots=True)
class Base:
    """The run's own early level of a signal, in judging units."""

    centre: float
    sigma: float
    n: int


_BASE_MEMO: dict[tuple, Base | None] = {}
_BASE_MEMO_MAX = 4096


def own_base(ctx: RuleContext, sig_id: str, log: bool) -> Base | None:
    """Median and robust spread of the first rollouts (warm-up skipped when enough remain).
    Remembered by the values it is computed from (the same at every rollout once the first
    ones are in: a held alert's rule asks at each rollout)."""
    ids, vals = ctx.baseline(sig_id)
    key = (sig_id, log, FLOOR.get(sig_id, 0.0), ids.dtype.str, vals.dtype.str, ids.tobytes(), vals.tobytes())
    if key in _BASE_MEMO:
        return _BASE_MEMO[key]
    if len(_BASE_MEMO) >= _BASE_MEMO_MAX:
        _BASE_MEMO.clear()
    got = _BASE_MEMO[key] = _compute_base(ids, vals, sig_id, log)
    return got


def _compute_base(ids: np.ndarray, vals: np.ndarray, sig_id: str, log: bool) -> Base | None:
    if log:
        _, v, _ = _log_series(ids, vals)
    else:
        _, v = _finite(ids, vals)
    if len(v) < 3:
        return None
    if len(v) >= 8:
        v = v[2:]
    return Base(float(stats.median(v)), max(stats.robust_sigma(v), FLOOR.get(sig_id, 0.0)), len(v))


def _noise(ids: np.ndarray, v: np.ndarray, sig_id: str, floor: float | None = None) -> float:
    """The run's own noise over the whole lookback (stats.noise): the signal's floor unless given."""
    return stats.noise(ids, v, FLOOR.get(sig_id, 0.0) if floor is None else floor)


def _fitted_ends(ids: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    """Theil-Sen line at the window's first and last rollout: numbers that go the trend's way."""
    slope = stats.theil_sen_slope(ids, v)
    icpt = float(stats.median(v - slope * ids))
    return icpt + slope * float(ids[0]), icpt + slope * float(ids[-1])


def rows_drift_up(
    S: np.ndarray,
    V: np.ndarray,
    base: float | np.ndarray | None,
    sigma_of: Callable[[np.ndarray], np.ndarray],
    rho: float,
    H: np.ndarray | None,
    mk_of: Callable[[int, np.ndarray], tuple | None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """drift_up per row of windows V (finite values at steps S, one window size), `base` the own
    baseline (one, or one a row), H the band's top aligned with V (or None: no band): (the first of the 8/16/32 windows that shows the drift, 0
    for none; its Mann-Kendall p and Theil-Sen rise; the noise used), per row.

    Fires when (1) the mean of the last 4 values sits above the own baseline by
    max(rho, K_LEVEL x 0.6 sigma) and 3 of them by rho - or 3 of 4 sit above the band's top (and
    the median of the last 3 above the baseline by rho) - and (2) on one window of 8/16/32
    rollouts the one-sided Mann-Kendall test is significant (alpha 0.01) and the Theil-Sen rise
    beats both rho and K_RISE x the noise (sigma sqrt(12 / W)).  `sigma_of(rows)`: the noise of
    those rows, computed only for the rows that pass the cheap first test; `mk_of(w, rows)`: the
    Mann-Kendall (S, has ties) of those rows' last w values where already counted (or None)."""
    rows, n = V.shape
    win, p, rise, sig = np.zeros(rows, np.int64), np.full(rows, np.nan), np.full(rows, np.nan), np.full(rows, np.nan)
    if n < min(TREND_WINDOWS) or not rows:
        return win, p, rise, sig
    mean4 = V[:, -4:].mean(axis=1)
    with np.errstate(invalid="ignore"):
        # the level, without the noise first: the own edge is at least base + rho
        by_base = np.zeros(rows, bool)
        if base is not None:
            bb = np.broadcast_to(np.asarray(base, float), (rows,))  # (one baseline, or one a row)
            by_base = (mean4 > bb + rho) & (((V[:, -4:] - (bb + rho)[:, None]) > 0).sum(axis=1) >= 3)
        by_band = np.zeros(rows, bool)
        if H is not None:
            by_band = ((V[:, -4:] - H[:, -4:]) > 0).sum(axis=1) >= 3  # (a NaN top never counts)
            if base is not None:
                by_band &= stats.rows_median(V[:, -3:]) > bb + rho
    idx = np.flatnonzero(by_base | by_band)
    # the trend, without the noise first: a significant window whose rise beats rho (need >= rho)
    sure: dict[int, tuple] = {}
    maybe = np.zeros(len(idx), bool)
    for w in TREND_WINDOWS:
        if w > n or not len(idx):
            continue
        known = mk_of(w, idx) if mk_of is not None else None
        ok = stats.rows_mk_p_below(V[idx, -w:], ALPHA_SHORT if w <= 10 else ALPHA_LONG, known)
        r = np.full(len(idx), np.nan)
        r[ok] = stats.rows_ts_rise(S[idx[ok], -w:], V[idx[ok], -w:])
        with np.errstate(invalid="ignore"):
            big = ok & (r > rho)
        sure[w] = (big, r)
        maybe |= big
    idx = idx[maybe]
    if not len(idx):
        return win, p, rise, sig
    sig[idx] = s = sigma_of(idx)
    at = np.flatnonzero(maybe)  # (positions of idx in the arrays of `sure`)
    # the mean of the last 4 (noise ~0.6 sigma with a slow drift's autocorrelation) above the own
    # edge, and 3 of those 4 above the baseline by the size that matters - or the band's way
    level = by_band[idx].copy()
    if base is not None:
        level |= by_base[idx] & (mean4[idx] > bb[idx] + stats.row_max(rho, K_LEVEL * s * 0.6))
    left = level.copy()
    for w in TREND_WINDOWS:
        if w not in sure:
            continue
        big, r = sure[w]
        hit = left & big[at] & (r[at] > stats.row_max(rho, K_RISE * s * math.sqrt(12.0 / w)))
        rows_hit = idx[hit]
        win[rows_hit], rise[rows_hit] = w, r[at][hit]
        if len(rows_hit):
            p[rows_hit] = stats.rows_mk_p_up(V[rows_hit, -w:])
        left &= ~hit
    return win, p, rise, sig


class RowNoise:
    """A signal's noise (stats.rows_noise over its window, floored) per row of these windows,
    each row computed once, when first asked (the trend and jump tests ask it only for the rows
    past their cheap steps): rows_drift_up's `sigma_of`."""

    def __init__(self, S: np.ndarray, V: np.ndarray, floor: float) -> None:
        self.S, self.V, self.floor = S, V, floor
        self.got = np.full(len(V), np.nan)

    def of(self, rows: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """The noise of these rows' i-th, for a test that reads only them."""
        return lambda i: self(rows[i])

    def __call__(self, i: np.ndarray) -> np.ndarray:
        todo = i[np.isnan(self.got[i])]
        if len(todo):
            self.got[todo] = stats.rows_noise(self.S[todo], self.V[todo], self.floor)
        return self.got[i]


class WholeWindows:
    """Mann-Kendall (S, has ties) of every window of a column whose rows are all finite
    (stats.windowed_mk_s: rows x w integer work, where counting each window's pairs costs w^2/2):
    for a test over a whole history, where most windows are whole.  `of(ends)` is rows_drift_up's
    mk_of for windows that end at these rows and hold their last rows, all finite."""

    MIN_ROWS = 64  # (fewer: counting the pairs costs less than the prefix sums)

    def __init__(self, lv: np.ndarray) -> None:
        self.mk = stats.windowed_mk_s(np.where(np.isfinite(lv), lv, 0.0), TREND_WINDOWS)

    def of(self, ends: np.ndarray) -> Callable[[int, np.ndarray], tuple]:
        return lambda w, i: (self.mk[w][0][ends[i]], self.mk[w][1][ends[i]])


def _jump_shaped(v: np.ndarray, rise: float | None = None) -> bool:
    """Most of the change happened in one step (a jump), not spread over many (a trend)."""
    if len(v) < 4:
        return False
    d = np.diff(v)
    total = rise if rise is not None else float(stats.median(v[-3:]) - stats.percentile(v, 20))
    if total <= 0:
        return False
    return float(np.max(d)) >= 0.5 * total


def _onset(ids: np.ndarray, v: np.ndarray, s0: float) -> int:
    """Where a rise began: just after the last point still at the window's early level."""
    half = max(2, len(v) // 2)
    level = float(stats.median(v[:half])) + 2 * s0
    below = np.flatnonzero(v <= level)
    if len(below) == 0:
        return int(ids[0])
    i = int(below[-1]) + 1
    return int(ids[min(i, len(ids) - 1)])


def explodes(sig_id: str, last: np.ndarray, hi_last: np.ndarray, base: Base | None) -> np.ndarray:
    """Per log value: x10 (EXPLOSION) beyond the largest of its band's top (where finite) and the
    own baseline's upper edge (median x3 or 3 sigma up: isolated healthy spikes reach x10-20),
    or past the signal's never-healthy bound."""
    band = np.isfinite(hi_last)
    top = np.where(band, hi_last, -np.inf)
    has_top = band
    if base is not None:
        top = np.maximum(top, _base_top(base))
        has_top = np.ones(len(last), bool)
    out = has_top & (last > top + EXPLOSION)
    absurd = ABSURD.get(sig_id)
    if absurd is not None:
        out = out | (last > math.log(absurd))
    return out


def _base_top(base: Base) -> float:
    """The own baseline's upper edge: median x3 or 3 sigma up (isolated healthy spikes reach x10-20)."""
    return base.centre + max(3 * base.sigma, math.log(3.0))


def explosion_words(sig_id: str, last: float, hi_last: float, base: Base | None) -> dict:
    """An explosion's value and how far beyond each top it went."""
    tops = []
    if math.isfinite(hi_last):
        tops.append(("range top", hi_last))
    if base is not None:
        tops.append(("own baseline", _base_top(base)))
    absurd = ABSURD.get(sig_id)
    if absurd is not None and last > math.log(absurd):
        tops.append(("never-healthy bound", math.log(absurd)))
    return {"value": math.exp(last), "times": {name: _r(math.exp(last - t)) for name, t in tops}}


def early_level(ids: np.ndarray, vals: np.ndarray) -> float | None:
    """A run's own early level of a series that starts at ~0 (KL to the reference, reward std): the median of its
    rollouts 2-11 (KL's first two sit at ~0: the policy starts as the reference), when it has five
    of them and it is above 0."""
    early = vals[(ids >= 2) & (ids < 12)]
    if len(early) < 5:
        return None
    base = float(stats.median(early))
    return base if base > 0 else None


def early_level_at(seg: Segment, sig: Signal, upto: int) -> float:
    """early_level of the segment's first 12 rollouts up to `upto`, NaN where there is none."""
    base = early_level(*_finite(*signal_at_rows(seg, sig, first_rows(seg, 12, upto))))
    return math.nan if base is None else base


def early_levels(seg: Segment, sig: Signal, at: np.ndarray) -> np.ndarray:
    """early_level_at each row position of `at` of an ordered segment (the same from the 12th
    rollout on)."""
    ids = seg.id_array()
    heads = np.minimum(at + 1, 12)
    out = np.full(len(at), math.nan)
    for h in sorted(set(heads.tolist())):
        out[heads == h] = early_level_at(seg, sig, int(ids[h - 1]))
    return out


def at_run_start(ctx: RuleContext) -> bool:
    """The judged rollout is among the segment's first 3 rows: where an absolute sign on one
    rollout is judged before the trend tests can speak (no-signal, entropy-high)."""
    return ctx.seg.row_of.get(ctx.upto, 3) < 3
