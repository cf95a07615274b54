"""A cheap, exact pre-check for rule_gap when judging rollout by rollout (live, or where bulk
judging declines).

rule_gap is the costliest rule on a healthy stretch (two signals, explosion, drift and jump
tests), and it fires on few rollouts.  Its gate reads the same window straight from the store's
columns and answers one question: *can* the rule return a condition here?  It checks necessary
conditions only (the last values above the smallest edge any path uses), lowered by a hair
(EPS), so "no" skips a rule that would have returned nothing and "maybe" runs it unchanged
(tests/equivalence/test_fast_judge.py compares gated and ungated judging).  The other rules
run without one: their gates bought under 5 % of rollout-by-rollout judging each.  Whole
histories use the vectorised gates of judge/bulk_vec.py instead.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from ..store.metric_store import Segment
from .signals import BY_ID, first_rows, metric_for

EPS = 1e-9
LOG_1_5 = math.log(1.5)
LOG_3 = math.log(3.0)


class Window:
    """The rows a rule reads at rollout `upto` of an ordered segment: the newest WINDOW rows
    up to it (rows_upto) and the first BASELINE rows, as plain column slices."""

    __slots__ = ("seg", "upto", "end", "lo", "_vals", "_base")

    def __init__(self, seg: Segment, upto: int, window: int) -> None:
        self.seg = seg
        self.upto = upto
        self.end = bisect.bisect_right(seg.ids, upto)
        self.lo = max(0, self.end - window)
        self._vals: dict = {}
        self._base: dict = {}

    @property
    def at_upto(self) -> bool:
        return self.end > 0 and self.seg.ids[self.end - 1] == self.upto

    def raw(self, name: str | None, lo: int, end: int) -> np.ndarray:
        return raw_values(self.seg, name, lo, end)

    def values(self, sig_id: str) -> np.ndarray:
        """A plain signal's values on the window (NaN where missing), last row = upto's."""
        got = self._vals.get(sig_id)
        if got is None:
            got = self._vals[sig_id] = self.raw(metric_for(self.seg, BY_ID[sig_id]), self.lo, self.end)
        return got

    def finite(self, sig_id: str) -> np.ndarray:
        v = self.values(sig_id)
        return v[np.isfinite(v)]

    def log_finite(self, sig_id: str) -> np.ndarray:
        """_log_series's log values: positive finite points, logged."""
        v = self.finite(sig_id)
        v = v[v > 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            lv = np.log(v)
        return lv[np.isfinite(lv)]

    def base_log_min(self, sig_id: str) -> float | None:
        """A lower bound of own_base(log=True).centre (None when there is no baseline)."""
        if sig_id not in self._base:
            n = min(10, self.end)
            v = self.raw(metric_for(self.seg, BY_ID[sig_id]), 0, n)
            v = v[np.isfinite(v)]
            v = v[v > 0]
            with np.errstate(divide="ignore", invalid="ignore"):
                lv = np.log(v)
            lv = lv[np.isfinite(lv)]
            self._base[sig_id] = float(np.min(lv)) if len(lv) >= 3 else None
        return self._base[sig_id]

    def last_finite(self, sig_id: str) -> bool:
        """The newest row (upto's) holds a finite value: a rule's `ids[-1] == upto`."""
        v = self.values(sig_id)
        return len(v) > 0 and bool(np.isfinite(v[-1])) and self.at_upto


def raw_values(seg: Segment, name: str | None, lo: int, end: int) -> np.ndarray:
    """values_at_rows(name, rows lo..end-1), the same arithmetic on a slice."""
    if name is None:
        return np.full(max(0, end - lo), math.nan)
    if name in seg.train_sum:
        s = seg.train_sum[name].data[lo:end]
        c = seg.train_cnt[name].data[lo:end]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(c > 0, s / np.where(c > 0, c, 1), math.nan)
    col = seg.columns.get(name)
    if col is None:
        return np.full(max(0, end - lo), math.nan)
    return col.data[lo:end]


def _count_above(v: np.ndarray, edge) -> int:
    with np.errstate(invalid="ignore"):
        return int(np.sum(v[-4:] > edge))


def _log_hi(ctx, sig_id: str, ids: np.ndarray) -> np.ndarray | None:
    b = ctx.ranges.bounds_many(sig_id, ids)
    if b is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.where(b[1] > 0, b[1], np.nan))


def _log_ids(win: Window, sig_id: str) -> np.ndarray:
    """Rollout ids of the positive finite points (for band look-ups)."""
    v = win.values(sig_id)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(v) & (v > 0)
    return win.seg._idcol.data[win.lo : win.end][ok].astype(np.int64)


def _drift_or_boom(ctx, win: Window, sig_id: str, rho: float) -> bool:
    """Whether _gap_like can fire: an explosion, a drift above the smallest edge drift_up's
    level test uses, or a jump above the window's low + x1.5."""
    if not win.last_finite(sig_id):
        return False
    lv = win.log_finite(sig_id)
    if not len(lv):
        return False
    v = win.values(sig_id)
    if not (v[-1] > 0):
        return False  # the newest positive point is not upto's: nothing fires
    last = float(lv[-1])
    base = win.base_log_min(sig_id)
    ids = _log_ids(win, sig_id)
    hi = _log_hi(ctx, sig_id, ids) if len(ids) == len(lv) else None
    if len(ids) != len(lv):
        return True  # (a log of a positive finite value that is not finite)
    # explosion: x10 beyond the largest top, which is at least each top's lower bound
    tops = []
    if hi is not None and math.isfinite(float(hi[-1])):
        tops.append(float(hi[-1]))
    if base is not None:
        tops.append(base + LOG_3)
    if tops and last > max(tops) + math.log(10.0) - EPS:
        return True
    if len(lv) < 4:
        return False
    if len(lv) >= 8:
        edge = np.full(len(lv), math.inf)
        if base is not None:
            edge = np.minimum(edge, base + rho)
        if hi is not None:
            edge = np.minimum(edge, np.where(np.isfinite(hi), hi, math.inf))
        if _count_above(lv, edge[-4:] - EPS) >= 3:
            return True
    if len(lv) >= 5:
        if (
            float(np.max(np.diff(lv))) >= LOG_1_5 - EPS
            and _count_above(lv, float(np.min(lv[:-3])) + LOG_1_5 - EPS) >= 3
        ):
            return True
    return False


def gate_gap(ctx, win: Window) -> bool:
    if "gap-rising" in ctx.open_rules or "gap-jump" in ctx.open_rules:
        return True
    from .rules.base import RHO

    return any(_drift_or_boom(ctx, win, s, RHO[s]) for s in ("gap", "kl"))


GATES = {"rule_gap": gate_gap}

__all__ = ["Window", "GATES", "first_rows"]
