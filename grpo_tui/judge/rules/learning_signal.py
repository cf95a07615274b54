"""Learning-signal rules: groups that all score alike (no-signal), rewards that scatter far more
than at the start (reward-variance), and a gradient that is exactly 0 while groups disagree
(no-update)."""

from __future__ import annotations

import numpy as np

from ...store.metric_store import Segment
from .. import stats
from ..signals import (
    BY_ID,
    ZERO_STD_FRACTION,
    Signal,
    first_rows,
    groups_of,
    metric_for,
    signal_values,
    zero_std_values,
)
from .base import (
    BASELINE_ROWS,
    WINDOW,
    Condition,
    RuleContext,
    RuleInfo,
    _r,
    early_level_at,
)

INFO = (
    RuleInfo(
        "no-signal",
        "critical",
        "most groups give no learning signal",
        "data difficulty, reward parser",
        ("zero_std", "reward"),
    ),
    RuleInfo(
        "reward-variance",
        "critical",
        "rewards scatter far more than the run's own start: a reward bug or an unstable policy",
        "reward function on sample outputs, reward scale",
        (),
    ),
    RuleInfo(
        "no-update",
        "critical",
        "the weights do not change although groups still disagree",
        "optimizer step, gradient sync across nodes, loss scaling",
        ("grad_norm",),
    ),
)


def rule_no_signal(ctx: RuleContext) -> list[Condition]:
    """The rule at one rollout: NoSignalTest over its window."""
    rows = ctx.seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(ctx.seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    return NoSignalTest(ctx.seg, rows, np.array([len(rows) - 1])).conditions(0)


# how no-signal's sign showed (NoSignalTest.how)
_FIRST, _EXACT, _START, _80, _65 = 1, 2, 3, 4, 5
_ALL = 1.0 - 1e-9  # every group all-same


class NoSignalTest:
    """rule_no_signal over columns, for many rollouts at once (`rows`: the run's rows in rollout
    order, a window or the whole run so far; `at`: the positions judged).  Most groups score
    the same: no advantage, no gradient.

    - reward exactly 0 (or 1) for the last 2 rollouts: every answer scored the same, so every
      group is zero-std - whether or not the group count is known;
    - >= 80 % of groups all-same in 3 of the last 4 rollouts (Miles warns from 50 %, axolotl
      calls 1.0 a red flag), or >= 65 % with a flat reward;
    - the all-same share jumped >= 0.3 above the run's own early level and stays >= 65 %;
    - at the run's first rollouts, before those tests can speak: reward exactly 0 (or 1), or every
      group all-same, is a warning at the first rollout and critical at the second.
    Mostly all-right groups are saturation: a warning.  The values are the finite ones of the
    rule's window, the newest at the judged rollout.  `fires` and `critical` are per judged
    rollout; the >= 65 % tests, which weigh reward's course, run rollout by rollout where the
    share is in that band."""

    def __init__(self, seg: Segment, rows: np.ndarray, at: np.ndarray) -> None:
        self.seg, self.rows, self.at = seg, rows, at
        self.ids = seg.ids_at(rows)
        n = len(at)
        self.how = np.zeros(n, np.int8)
        self.critical = np.zeros(n, bool)
        self.mid: dict[int, str] = {}  # the >= 65 % test's words, by judged position
        self.g = g = groups_of(seg)
        if not n:
            self.fires = self.how > 0
            return
        start = rows[at] < 3  # (at_run_start: among the segment's first 3 rows)
        R = self.R = signal_values(seg, BY_ID["reward"], rows)
        ridx, rn = stats.last_finite(R, at, 2, WINDOW)
        r_now = R[at]
        here = np.isfinite(r_now)
        first = here & (rn == 1) & start & ((r_now == 0.0) | (r_now == 1.0))
        self._set(first, _FIRST, False)
        last2 = R[np.maximum(ridx, 0)]
        exact = here & (rn == 2) & (((last2 == 0.0).all(axis=1)) | ((last2 == 1.0).all(axis=1)))
        self._set(exact, _EXACT, True)
        if g is None:
            self.fires = self.how > 0
            return
        total, wrong, right = self.parts = zero_std_values(seg, rows)
        f_now = total[at]
        ok = np.isfinite(f_now) & (self.how == 0)
        if not ok.any():
            self.fires = self.how > 0
            return
        fidx, _n4 = stats.last_finite(total, at, 4, WINDOW)
        seen = np.concatenate([[0], np.cumsum(np.isfinite(total))])
        fn = seen[at + 1] - seen[np.maximum(at + 1 - WINDOW, 0)]  # finite shares in the window
        # the run's first rollouts: every group all-same (1: a warning, 2 or more: critical)
        few = ok & (fn < 4) & start & (f_now >= _ALL)
        with np.errstate(invalid="ignore"):
            run = (total[np.maximum(fidx, 0)] >= _ALL) & (fidx >= 0)
        run = np.cumprod(run[:, ::-1], axis=1).sum(axis=1)
        self._set(few, _START, run >= 2)
        last4 = total[np.maximum(fidx, 0)]
        with np.errstate(invalid="ignore"):
            high = ((last4 - (0.8 - 1e-9)) > 0).sum(axis=1) >= 3
            mid = ((last4 - (0.65 - 1e-9)) > 0).sum(axis=1) >= 3
        many = ok & (fn >= 4)
        self._set(many & high, _80, True)
        for j in np.flatnonzero(many & ~high & (fn >= 8) & mid).tolist():
            words = self._mid_share(j)
            if words is not None:
                self.mid[j] = words
                self.how[j], self.critical[j] = _65, True
        # mostly all-right groups: saturation, a warning (unless mostly all-wrong)
        if (self.how >= _START).any() and metric_for(seg, BY_ID["zero_std"]) != ZERO_STD_FRACTION:
            w_, r_ = _last_in_window(wrong, at), _last_in_window(right, at)
            with np.errstate(invalid="ignore"):
                edge = 0.8 * f_now
                saturated = np.isfinite(w_) & np.isfinite(r_) & ~(w_ >= edge) & (r_ >= edge)
            self.critical &= ~(saturated & (self.how >= _START))
        self.fires = self.how > 0

    def _set(self, hit: np.ndarray, how: int, critical) -> None:
        new = hit & (self.how == 0)
        self.how[new] = how
        self.critical[new] = np.broadcast_to(critical, new.shape)[new]

    def _window(self, j: int, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids, finite values) of the rule's window at the j-th judged rollout."""
        p = int(self.at[j])
        lo = max(0, p - WINDOW + 1)
        v = vals[lo : p + 1]
        ok = np.isfinite(v)
        return self.ids[lo : p + 1][ok], v[ok]

    def _mid_share(self, j: int) -> str | None:
        """>= 65 % of groups all-same in 3 of the last 4: a sign with a flat reward, or where the
        all-wrong groups jumped above the run's own early level while reward does not rise."""
        total, wrong, _right = self.parts
        _, frac = self._window(j, total)
        _, rv = self._window(j, self.R)
        _, wv = self._window(j, wrong)
        mostly_right = len(wv) and float(wv[-1]) < 0.5 * float(frac[-1])
        if len(rv) >= 8 and float(np.ptp(rv[-8:])) < (0.02 if mostly_right else 0.05):
            return ">= 65 % of groups with a flat reward"  # (saturating is still learning unless reward is stuck)
        base_rows = first_rows(self.seg, BASELINE_ROWS, int(self.ids[self.at[j]]))
        bw = zero_std_values(self.seg, base_rows)[1]
        bw = bw[np.isfinite(bw)]
        g = self.g or 0
        if len(wv) >= 4 and len(bw) >= 3 and g > 1:
            bw_c = float(stats.median(bw[2:] if len(bw) >= 8 else bw))
            if stats.persistent_above(wv, max(0.5, bw_c + 0.3), 3, 4) and stats.mk_p_up(rv[-8:]) > 0.10:
                return f">= 65 % of groups, all-wrong up from {bw_c:.0%} early in the run"
        return None

    def conditions(self, j: int) -> list[Condition]:
        """The rule's condition at the j-th judged rollout (none, or one)."""
        how = int(self.how[j])
        if not how:
            return []
        severity = "critical" if self.critical[j] else "warning"
        if how in (_FIRST, _EXACT):
            ri, rv = self._window(j, self.R)
            return [_exact_reward(ri, rv, how == _FIRST, severity, self.g)]
        total, wrong, right = self.parts
        ids, frac = self._window(j, total)
        g = self.g or 1
        if how == _START:
            run = int(stats.trailing_run(frac >= _ALL))
            words = "every group at the first rollout" if run == 1 else f"every group on {run} rollouts at the start"
            msg = words.replace("every group", "every group scores the same") + " (no learning signal)"
            if run == 1:
                msg += "; critical if the next rollout shows it again"
        else:
            words = ">= 80 % of groups" if how == _80 else self.mid[j]
            share = "of groups" if g == 1 else f"of {g} groups"
            n = f"{frac[-1]:.0%}" if g == 1 else f"{frac[-1] * g:.0f}"
            msg = f"{n} {share} score the same (no learning signal)"
        _, wv = self._window(j, wrong)
        _, rv_ = self._window(j, right)
        if metric_for(self.seg, BY_ID["zero_std"]) == ZERO_STD_FRACTION:
            # (a logged share, as TRL's frac_reward_zero_std: it does not say which way they scored)
            msg += "; the log gives only the share, not whether those groups were all right or all wrong"
        elif len(wv) and len(rv_):
            w_, r_ = float(wv[-1]), float(rv_[-1])
            msg += (
                f": {w_ * g:.0f} all wrong, {r_ * g:.0f} all right"
                if g > 1
                else f": {w_:.0%} all wrong, {r_:.0%} all right"
            )
            if w_ >= 0.8 * float(frac[-1]):
                msg += "; mostly all-wrong: too hard, or a systemic failure (timeouts, truncation, reward parser)?"
            elif r_ >= 0.8 * float(frac[-1]):
                # saturation is success, not breakage: the run has little left to learn from this data
                msg += "; mostly all-right: the data is too easy (saturated)"
        return [
            Condition(
                "no-signal",
                severity,
                int(ids[-min(4, len(ids))]),
                msg,
                {"signal": "zero_std", "fraction_last4": [_r(v) for v in frac[-4:]], "groups": self.g, "test": words},
                signal="zero_std",
            )
        ]


def _last_in_window(vals: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The newest finite value of the rule's window at each judged position (NaN: none)."""
    idx, n = stats.last_finite(vals, at, 1, WINDOW)
    return np.where(n > 0, vals[np.maximum(idx[:, 0], 0)], np.nan)


def _exact_reward(ri: np.ndarray, rv: np.ndarray, first: bool, severity: str, g: int | None) -> Condition:
    """no-signal's condition for a reward of exactly 0 or 1 (at the first rollout, or the last 2)."""
    if first:
        word = "all wrong" if rv[-1] == 0.0 else "all right"
        return Condition(
            "no-signal",
            severity,
            int(ri[-1]),
            f"reward exactly {rv[-1]:.3f} at the first rollout: every answer {word}, every group zero-std "
            "(no learning signal); critical if the next rollout shows it again",
            {"signal": "zero_std", "reward_last": [_r(rv[-1])], "rollouts": 1, "groups": g},
            signal="zero_std",
        )
    target = float(rv[-1])
    word, why = (
        ("all wrong", "reward parser, timeouts, truncation?")
        if target == 0.0
        else ("all right", "data far too easy, or a reward that always pays?")
    )
    run = stats.trailing_run(rv == target)
    return Condition(
        "no-signal",
        severity,
        int(ri[-run]),
        f"reward exactly {target:.3f} for {run} rollouts: every answer {word}, every group "
        f"zero-std (no learning signal); {why}",
        {"signal": "zero_std", "reward_last": [_r(v) for v in rv[-4:]], "rollouts": run, "groups": g},
        signal="zero_std",
    )


# Signs that groups still disagree on reward (so the gradient should not be exactly 0).
REWARD_STD = Signal(
    "reward_std", "reward std", ("reward_std",), "", "", "", None, None
)  # (TRL; Miles and verl log none)
REWARD_STD_RISE = 10.0  # x the run's own early reward std, in 3 of the last 4 rollouts


def rule_reward_variance(ctx: RuleContext) -> list[Condition]:
    """The rule at one rollout: RewardVarianceTest over its window."""
    seg = ctx.seg
    if metric_for(seg, REWARD_STD) is None:
        return []
    rows = seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    base = np.array([early_level_at(seg, REWARD_STD, ctx.upto)])
    return RewardVarianceTest(seg, rows, np.array([len(rows) - 1]), base).conditions(0)


class RewardVarianceTest:
    """rule_reward_variance over columns, for many rollouts at once (`rows`: the run's rows in
    rollout order, `at`: the positions judged, `base`: the std's early_level at each).  The
    reward std x10 its own early level (the median of rollouts 2-11) in 3 of the last 4
    rollouts.  Its collapse to 0 is no-signal's.  `fires` per judged rollout."""

    def __init__(self, seg: Segment, rows: np.ndarray, at: np.ndarray, base: np.ndarray) -> None:
        self.base = base
        self.fires = np.zeros(len(at), bool)
        if not len(at):
            return
        self.ids = seg.ids_at(rows)
        v = self.v = signal_values(seg, REWARD_STD, rows)
        self.idx, n = stats.last_finite(v, at, 4, WINDOW)
        with np.errstate(invalid="ignore"):
            above = ((v[np.maximum(self.idx, 0)] - (REWARD_STD_RISE * base)[:, None]) > 0).sum(axis=1) >= 3
        self.fires = (n >= 4) & np.isfinite(v[at]) & np.isfinite(base) & above

    def conditions(self, j: int) -> list[Condition]:
        if not self.fires[j]:
            return []
        vals, base = self.v[self.idx[j]], float(self.base[j])
        now = float(np.median(vals))
        msg = f"reward std x{now / base:.0f} its early level ({base:.3g} -> {now:.3g}) in 3 of the last 4 rollouts"
        return [
            Condition(
                "reward-variance",
                "critical",
                int(self.ids[self.idx[j, 0]]),
                msg,
                {"reward_std_last4": [_r(v) for v in vals], "early_level": _r(base)},
            )
        ]


def rule_no_update(ctx: RuleContext) -> list[Condition]:
    """The rule at one rollout: NoUpdateTest over its window."""
    seg = ctx.seg
    rows = seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    return NoUpdateTest(seg, rows, np.array([len(rows) - 1])).conditions(0)


class NoUpdateTest:
    """rule_no_update over columns, for many rollouts at once (`rows`: the run's rows in rollout
    order, `at`: the positions judged).  The gradient norm exactly 0 on the last 2 rollouts while
    the groups still disagree on reward (critical), or with nothing to say they do not (a
    warning).  All groups scoring the same gives no gradient by design: that is no-signal's.
    The groups disagree where not every group is zero-std, else where the reward std is above
    0, at the judged rollout (`disagree`: 1, 0, or -1 where the log says neither way)."""

    def __init__(self, seg: Segment, rows: np.ndarray, at: np.ndarray) -> None:
        self.fires = np.zeros(len(at), bool)
        if not len(at):
            return
        g = self.g = signal_values(seg, BY_ID["grad_norm"], rows)
        if not (g[at] == 0.0).any():
            return  # (no zero at any judged rollout: the common case, asked first)
        self.ids = seg.ids_at(rows)
        self.idx, n = stats.last_finite(g, at, WINDOW, WINDOW)
        zero = (n >= 2) & (g[at] == 0.0) & (g[np.maximum(self.idx[:, -2], 0)] == 0.0)
        d = self.disagree = np.full(len(at), -1, np.int8)
        if groups_of(seg) is not None:
            zs = zero_std_values(seg, rows)[0][at]
            known = np.isfinite(zs)
            d[known] = zs[known] < 1.0
        if metric_for(seg, REWARD_STD) is not None:
            rs = signal_values(seg, REWARD_STD, rows)[at]
            known = (d < 0) & np.isfinite(rs)
            d[known] = rs[known] > 0.0
        self.fires = zero & (d != 0)

    def conditions(self, j: int) -> list[Condition]:
        if not self.fires[j]:
            return []
        idx = self.idx[j]
        idx = idx[idx >= 0]
        run = stats.trailing_run(self.g[idx] == 0.0)  # the zeros at the end
        disagree = None if self.disagree[j] < 0 else bool(self.disagree[j])
        why = (
            "while the groups still disagree on reward"
            if disagree
            else "(the log does not say whether groups disagree)"
        )
        return [
            Condition(
                "no-update",
                "critical" if disagree else "warning",
                int(self.ids[idx[-run]]),
                f"gradient norm exactly 0 for {run} rollouts in a row {why}",
                {"zero_rollouts": run, "groups_disagree": disagree},
                signal="grad_norm",
            )
        ]
