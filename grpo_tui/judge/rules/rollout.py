"""Rollout rules: samples that did not come from the current weights (off-policy), and an
engine that got slower (rollout time against its own start, per token)."""

from __future__ import annotations

import math

import numpy as np

from ...store.metric_store import Segment
from .. import stats
from ..signals import (
    BY_ID,
    first_rows,
    metric_for,
    signal_values,
)
from .base import (
    BASELINE_ROWS,
    FLOOR,
    RHO,
    WINDOW,
    Condition,
    RowNoise,
    RuleContext,
    RuleInfo,
    _log,
    _onset,
    _r,
    rows_drift_up,
)

INFO = (
    RuleInfo(
        "off-policy",
        "critical",
        "samples did not come from the current weights",
        "update interval, async settings",
        ("clipfrac",),
    ),
    RuleInfo("rollout-slowdown", "critical", "engine or GPU is slower", "heat log, engine log", ("rollout_time",)),
)


def rule_off_policy(ctx: RuleContext) -> list[Condition]:
    """The rule at one rollout: OffPolicyTest over its window."""
    rows = ctx.seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(ctx.seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    return OffPolicyTest(ctx.seg, rows, np.array([len(rows) - 1])).conditions(0)


class OffPolicyTest:
    """rule_off_policy over columns, for many rollouts at once (`rows`: the run's rows in
    rollout order, a window or the whole run so far; `at`: the positions judged).  Its clip
    fractions are the finite ones of the rule's window, the newest at the judged rollout:
    - one update per rollout (Miles): the last 2 clip above 0, or move (ppo_kl);
    - else the first of K updates of the last 2 rollouts clips or moves (Miles: on fresh
      weights both must be 0), or the clip fraction is above 0.3 in 3 of the last 4."""

    def __init__(self, seg: Segment, rows: np.ndarray, at: np.ndarray) -> None:
        self.seg, self.at, self.k = seg, at, seg.steps_per_rollout
        self.ids = seg.ids_at(rows)
        self.fires = np.zeros(len(at), bool)
        self.how = np.zeros(len(at), np.int8)  # 1 one update, 2 first of K, 3 above 0.3
        name = metric_for(seg, BY_ID["clipfrac"])
        if name is None or not len(at):
            return
        cf = self.cf = seg.values_at_rows(name, rows)
        self.idx, n = stats.last_finite(cf, at, 4, WINDOW)
        idx = self.idx
        ok = (n >= 2) & np.isfinite(cf[at])
        last2 = idx[:, 2:]
        miles = seg.framework == "miles"
        if self.k == 1 and miles:
            kl = self.kl = _zero_where_missing(seg.values_at_rows("train/ppo_kl", rows))
            with np.errstate(invalid="ignore"):
                bad = (cf > 1e-6) | (np.abs(kl) > 1e-6)
            self._set(ok & bad[last2].all(axis=1), 1)
            return
        if miles:
            need = np.unique(last2[ok])  # (the first updates of the rollouts read: a Python loop each)
            first_cf, first_kl = np.full(len(rows), math.nan), np.zeros(len(rows))
            first_cf[need], first_kl[need] = first_steps(seg, rows[need])
            self.first = first_cf, first_kl
            with np.errstate(invalid="ignore"):
                bad = np.isfinite(first_cf) & ((first_cf > 1e-6) | (np.abs(first_kl) > 1e-6))
            self._set(ok & bad[last2].all(axis=1), 2)
        with np.errstate(invalid="ignore"):
            high = (cf[np.maximum(idx, 0)] - 0.3) > 0
        self._set(ok & (n >= 4) & (high.sum(axis=1) >= 3), 3)

    def _set(self, hit: np.ndarray, how: int) -> None:
        new = hit & ~self.fires
        self.how[new] = how
        self.fires |= new

    def conditions(self, j: int) -> list[Condition]:
        """The rule's condition at the j-th judged rollout (none, or one)."""
        how = int(self.how[j])
        if not how:
            return []
        idx = self.idx[j]
        ids, cf = self.ids[idx], self.cf[idx]
        if how == 1:
            kl = self.kl[idx[2:]]
            return [
                Condition(
                    "off-policy",
                    "critical",
                    int(ids[-2]),
                    f"clip fraction {cf[-1]:.3g} (ppo_kl {kl[-1]:.3g}) > 0 with one update per rollout "
                    f"(2 rollouts in a row)",
                    {
                        "signal": "clipfrac",
                        "last2": [_r(v) for v in cf[-2:]],
                        "ppo_kl_last2": [_r(v) for v in kl],
                        "steps_per_rollout": 1,
                    },
                    signal="clipfrac",
                )
            ]
        if how == 2:
            first_cf, first_kl = self.first[0][idx[2:]], self.first[1][idx[2:]]
            r0, r1 = int(ids[-2]), int(ids[-1])
            return [
                Condition(
                    "off-policy",
                    "critical",
                    r0,
                    f"clip fraction {first_cf[-1]:.3g} / ppo_kl {first_kl[-1]:.3g} > 0 on the first update "
                    f"of rollouts {r0} and {r1} (must be 0 on fresh weights)",
                    {
                        "signal": "clipfrac",
                        "first_step_clipfrac": [_r(v) for v in first_cf],
                        "first_step_ppo_kl": [_r(v) for v in first_kl],
                        "steps_per_rollout": self.k,
                    },
                    signal="clipfrac",
                )
            ]
        return [
            Condition(
                "off-policy",
                "critical",
                int(ids[0]),
                f"clip fraction {cf[-1]:.3g} above 0.3 for 3 of 4 rollouts: policy moves too fast per update",
                {"signal": "clipfrac", "last4": [_r(v) for v in cf], "steps_per_rollout": self.k},
                signal="clipfrac",
            )
        ]


def _zero_where_missing(v: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(v), v, 0.0)


def first_steps(seg: Segment, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the rollout's first actor update: its clip fraction (NaN where it has none or
    it is not a finite number) and its ppo_kl (0 where not a finite number)."""
    cf, kl = np.full(len(rows), math.nan), np.zeros(len(rows))
    steps = seg.steps
    roles, ns = steps.roles, steps.ns
    for j, r in enumerate(seg.ids_at(rows).tolist()):
        mine = [i for i in steps.of_rollout.get(int(r), ()) if roles[i] == ""]
        if not mine:
            continue
        first = min(mine, key=ns.__getitem__)
        v = steps.get_value(first, "train/pg_clipfrac")
        k = steps.get_value(first, "train/ppo_kl", 0.0)
        if not (isinstance(k, (int, float)) and not isinstance(k, bool) and math.isfinite(k)):
            k = 0.0
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            cf[j], kl[j] = float(v), float(k)
    return cf, kl


def rule_rollout_slowdown(ctx: RuleContext) -> list[Condition]:
    """The rule at one rollout: SlowdownTest over its window."""
    seg = ctx.seg
    rows = seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    return SlowdownTest(seg, rows, np.array([len(rows) - 1]), slowdown_base(seg, ctx.upto)).conditions(0)


def _norm_name(seg: Segment) -> str | None:
    """What rollout time is taken per token of: the longest answer, else the answer length."""
    return "rollout/response_len/max" if "rollout/response_len/max" in seg.columns else metric_for(seg, BY_ID["length"])


def slowdown_base(seg: Segment, upto: int) -> tuple[float | None, float | None]:
    """The medians of log time per token and of log time over the segment's first
    BASELINE_ROWS rollouts (up to `upto`), each None with fewer than 3 values."""
    norm = _norm_name(seg)
    if norm is None:
        return None, None
    brows = first_rows(seg, BASELINE_ROWS, upto)
    # (aligned by row: reading only the finite times of a log other than Miles' paired them
    # with the wrong lengths, or raised where one was missing)
    bT = signal_values(seg, BY_ID["rollout_time"], brows)
    bN = seg.values_at_rows(norm, brows)
    with np.errstate(divide="ignore", invalid="ignore"):
        b_tok, b_t = np.log(bT / bN), np.log(bT)
    b_tok, b_t = b_tok[np.isfinite(b_tok)], b_t[np.isfinite(b_t)]
    return (
        float(stats.median(b_tok)) if len(b_tok) >= 3 else None,
        float(stats.median(b_t)) if len(b_t) >= 3 else None,
    )


CHUNK = 4096  # judged rollouts per batch of SlowdownTest (a 40-row window each)


class SlowdownTest:
    """rule_rollout_slowdown over columns, for many rollouts at once (`rows`: the run's rows in
    rollout order, `at`: the positions judged, `base`: slowdown_base there).  Rollout time per
    token of the longest answer drifts up (rows_drift_up) against the run's own baseline (and its
    level at the window's start) by x1.5 or more - more than heat or a busy node (x1.3) - while
    the time itself grew and length did not rise with it.  The window: the rollouts of the last
    WINDOW with a time and a length (at least 8, and 8 times); `fires` per judged rollout."""

    def __init__(self, seg: Segment, rows: np.ndarray, at: np.ndarray, base: tuple) -> None:
        self.seg, self.rows, self.at = seg, rows, at
        self.fires = np.zeros(len(at), bool)
        self.norm = norm = _norm_name(seg)
        if norm is None or not len(at):
            return
        self.ids = seg.ids_at(rows)
        T = self.T = signal_values(seg, BY_ID["rollout_time"], rows)
        N = seg.values_at_rows(norm, rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            lt, per_tok = _log(T), _log(T / N)
        both = np.isfinite(T) & np.isfinite(N) & (N > 0) & np.isfinite(lt) & np.isfinite(per_tok)
        self.lt, self.pt = np.where(both, lt, np.nan), np.where(both, per_tok, np.nan)
        m = len(at)
        self.win, self.rise, self.p, self.sigma = (
            np.zeros(m, np.int64),
            np.full(m, np.nan),
            np.full(m, np.nan),
            np.full(m, np.nan),
        )
        self.base_tok, self.base_t = np.full(m, np.nan), np.full(m, np.nan)
        self.windows: dict[int, np.ndarray] = {}
        for a in range(0, m, CHUNK):  # (bounded memory: a 40-row window per position)
            self._judge(np.arange(a, min(m, a + CHUNK)), base)

    def _judge(self, js: np.ndarray, base: tuple) -> None:
        T, at = self.T, self.at[js]
        idx, n = stats.last_finite(self.pt, at, WINDOW, WINDOW)
        ok = np.isfinite(T[at]) & (n >= 8)  # (8 per-token times are 8 times)
        b_tok, b_t = base
        rho = RHO["rollout_time"]
        for size in sorted(set(n[ok].tolist())):
            sel = np.flatnonzero(ok & (n == size))
            J = idx[sel, WINDOW - size :]
            V = self.pt[J]
            head = min(8, max(4, size // 4))
            start_tok, start_t = stats.rows_median(V[:, :head]), stats.rows_median(self.lt[J[:, :head]])
            bt = start_tok if b_tok is None else np.minimum(b_tok, start_tok)
            bl = start_t if b_t is None else np.minimum(b_t, start_t)
            S = self.ids[J].astype(float)
            w, p, r, sg = rows_drift_up(S, V, bt, RowNoise(S, V, FLOOR["rollout_time"]), rho, None)
            for k in np.flatnonzero(w).tolist():
                j = int(js[sel[k]])
                if not stats.persistent_above(self.lt[J[k]], float(bl[k]) + 0.8 * rho, 3, 4):
                    continue  # per-token time rose because the longest answer got shorter: not slower
                if self._grew_with_length(j, int(w[k])):
                    continue  # time grew with the answers
                self.fires[j] = True
                self.win[j], self.rise[j], self.p[j], self.sigma[j] = w[k], r[k], p[k], sg[k]
                self.base_tok[j], self.base_t[j] = bt[k], bl[k]
                self.windows[j] = J[k].copy()

    def _grew_with_length(self, j: int, w: int) -> bool:
        """The answer length rose with the time: its Theil-Sen rise over its last w values in the
        window above 15 % of their median."""
        L = signal_values(self.seg, BY_ID["length"], self.rows)
        lidx, ln = stats.last_finite(L, self.at[j : j + 1], w, WINDOW)
        li = lidx[0, w - int(ln[0]) :]
        lw = L[li]
        return len(lw) >= 4 and stats.theil_sen_rise(self.ids[li], lw) > 0.15 * abs(float(stats.median(lw)))

    def conditions(self, j: int) -> list[Condition]:
        if not self.fires[j]:
            return []
        J, w = self.windows[j], int(self.win[j])
        ids, pt, T = self.ids[J], self.pt[J], self.T[J]
        s, base_tok = float(self.sigma[j]), float(self.base_tok[j])
        now = float(stats.median(T[-3:]))
        then = math.exp(float(self.base_t[j]))
        return [
            Condition(
                "rollout-slowdown",
                "critical",
                _onset(ids[-w:], pt[-w:], s),
                f"rollout time per token up x{math.exp(float(stats.median(pt[-3:])) - base_tok):.1f} "
                f"against the run's own baseline, over {w} rollouts, at flat length ({then:.0f}s -> {now:.0f}s)",
                {
                    "signal": "rollout_time",
                    "rollout_time": [_r(v) for v in T[-w:]],
                    "normaliser": self.norm,
                    "factor": _r(math.exp(float(self.rise[j]))),
                    "mk_p": _r(float(self.p[j])),
                    "baseline_s": _r(then),
                    "noise_log": _r(s),
                },
                signal="rollout_time",
            )
        ]
