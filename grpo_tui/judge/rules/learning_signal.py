"""Learning-signal rules: groups that all score alike (no-signal), rewards that scatter far more
than at the start (reward-variance), and a gradient that is exactly 0 while groups disagree
(no-update)."""

from __future__ import annotations

import math

import numpy as np

from .. import stats
from ..signals import (
    BY_ID,
    ZERO_STD_FRACTION,
    Signal,
    first_rows,
    groups_of,
    metric_for,
    signal_at_rows,
)
from .base import (
    WINDOW,
    Condition,
    RuleContext,
    RuleInfo,
    _finite,
    _r,
    at_run_start,
    early_level,
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
    """Most groups score the same: no advantage, no gradient.

    - reward exactly 0 (or 1) for the last 2 rollouts: every answer scored the same, so every
      group is zero-std - whether or not the group count is known;
    - >= 80 % of groups all-same in 3 of the last 4 rollouts (Miles warns from 50 %, axolotl
      calls 1.0 a red flag), or >= 65 % with a flat reward;
    - the all-same share jumped >= 0.3 above the run's own early level and stays >= 65 %;
    - at the run's first rollouts, before those tests can speak: reward exactly 0 (or 1), or every
      group all-same, is a warning at the first rollout and critical at the second.
    """
    ri, rv = _finite(*ctx.series("reward"))
    if len(rv) == 1 and ri[-1] == ctx.upto and at_run_start(ctx) and rv[-1] in (0.0, 1.0):
        word = "all wrong" if rv[-1] == 0.0 else "all right"
        return [
            Condition(
                "no-signal",
                "warning",
                int(ri[-1]),
                f"reward exactly {rv[-1]:.3f} at the first rollout: every answer {word}, every group zero-std "
                "(no learning signal); critical if the next rollout shows it again",
                {"signal": "zero_std", "reward_last": [_r(rv[-1])], "rollouts": 1, "groups": groups_of(ctx.seg)},
                signal="zero_std",
            )
        ]
    if len(rv) >= 2 and ri[-1] == ctx.upto:
        for target, word, why in (
            (0.0, "all wrong", "reward parser, timeouts, truncation?"),
            (1.0, "all right", "data far too easy, or a reward that always pays?"),
        ):
            if np.all(rv[-2:] == target):
                run = stats.trailing_run(rv == target)
                return [
                    Condition(
                        "no-signal",
                        "critical",
                        int(ri[-run]),
                        f"reward exactly {target:.3f} for {run} rollouts: every answer {word}, every group "
                        f"zero-std (no learning signal); {why}",
                        {
                            "signal": "zero_std",
                            "reward_last": [_r(v) for v in rv[-4:]],
                            "rollouts": run,
                            "groups": groups_of(ctx.seg),
                        },
                        signal="zero_std",
                    )
                ]
    seg = ctx.seg
    g = groups_of(seg)
    if g is None:
        return []
    ids, frac = _finite(*ctx.series("zero_std"))
    if len(frac) == 0 or ids[-1] != ctx.upto:
        return []
    how = None
    severity = "critical"
    if len(frac) < 4:
        # the run's first rollouts: every group all-same is an absolute sign (1: a warning, 2: critical)
        if not at_run_start(ctx) or frac[-1] < 1.0 - 1e-9:
            return []
        run = stats.trailing_run(frac >= 1.0 - 1e-9)
        how = "every group at the first rollout" if run == 1 else f"every group on {run} rollouts at the start"
        severity = "critical" if run >= 2 else "warning"
    elif stats.persistent_above(frac, 0.8 - 1e-9, 3, 4):
        how = ">= 80 % of groups"
    elif len(frac) >= 8 and stats.persistent_above(frac, 0.65 - 1e-9, 3, 4):
        _, wv_ = _finite(*ctx.series("zero_std", "wrong"))
        mostly_right = len(wv_) and float(wv_[-1]) < 0.5 * float(frac[-1])
        flat = len(rv) >= 8 and float(np.ptp(rv[-8:])) < (0.02 if mostly_right else 0.05)
        if flat:  # (saturating - mostly all-right - is still learning unless reward is stuck)
            how = ">= 65 % of groups with a flat reward"
        else:
            # all-wrong groups (not all-right: that is saturation) jumped above the run's own level
            wi, wv = _finite(*ctx.series("zero_std", "wrong"))
            _, bw = _finite(*ctx.baseline("zero_std", "wrong"))
            if len(wv) >= 4 and len(bw) >= 3 and g > 1:
                bw_c = float(stats.median(bw[2:] if len(bw) >= 8 else bw))
                if stats.persistent_above(wv, max(0.5, bw_c + 0.3), 3, 4) and stats.mk_p_up(rv[-8:]) > 0.10:
                    how = f">= 65 % of groups, all-wrong up from {bw_c:.0%} early in the run"
    if how is None:
        return []
    _, wrong = _finite(*ctx.series("zero_std", "wrong"))
    _, right = _finite(*ctx.series("zero_std", "right"))
    share = "of groups" if g == 1 else f"of {g} groups"
    n = f"{frac[-1]:.0%}" if g == 1 else f"{frac[-1] * g:.0f}"
    msg = f"{n} {share} score the same (no learning signal)"
    if len(frac) < 4:
        msg = how.replace("every group", "every group scores the same") + " (no learning signal)"
        if severity == "warning":
            msg += "; critical if the next rollout shows it again"
    if metric_for(ctx.seg, BY_ID["zero_std"]) == ZERO_STD_FRACTION:
        # (a logged share, as TRL's frac_reward_zero_std: it does not say which way they scored)
        msg += "; the log gives only the share, not whether those groups were all right or all wrong"
    elif len(wrong) and len(right):
        w_, r_ = float(wrong[-1]), float(right[-1])
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
            severity = "warning"
    return [
        Condition(
            "no-signal",
            severity,
            int(ids[-min(4, len(ids))]),
            msg,
            {"signal": "zero_std", "fraction_last4": [_r(v) for v in frac[-4:]], "groups": g, "test": how},
            signal="zero_std",
        )
    ]


# Signs that groups still disagree on reward (so the gradient should not be exactly 0).
REWARD_STD = Signal(
    "reward_std", "reward std", ("reward_std",), "", "", "", None, None
)  # (TRL; Miles and verl log none)
REWARD_STD_RISE = 10.0  # x the run's own early reward std, in 3 of the last 4 rollouts


def rule_reward_variance(ctx: RuleContext) -> list[Condition]:
    """The reward std x10 its own early level (the median of rollouts 2-11) in 3 of the last 4
    rollouts.  Its collapse to 0 is no-signal's."""
    seg = ctx.seg
    if metric_for(seg, REWARD_STD) is None:
        return []
    ids, vals = _finite(*signal_at_rows(seg, REWARD_STD, seg.rows_upto(WINDOW, ctx.upto)))
    if len(vals) < 4 or ids[-1] != ctx.upto:
        return []
    base = early_level(*_finite(*signal_at_rows(seg, REWARD_STD, first_rows(seg, 12, ctx.upto))))
    if base is None or not stats.persistent_above(vals, REWARD_STD_RISE * base, 3, 4):
        return []
    now = float(np.median(vals[-4:]))
    msg = f"reward std x{now / base:.0f} its early level ({base:.3g} -> {now:.3g}) in 3 of the last 4 rollouts"
    return [
        Condition(
            "reward-variance",
            "critical",
            int(ids[-4]),
            msg,
            {"reward_std_last4": [_r(v) for v in vals[-4:]], "early_level": _r(base)},
        )
    ]


def _groups_disagree(ctx: RuleContext) -> bool | None:
    """Whether the rollout's groups have reward variance: not every group zero-std, or a reward
    std above 0, or a best score above the worst; None when the log says neither way."""
    seg, r = ctx.seg, ctx.upto
    if groups_of(seg) is not None:
        ids, vals = ctx.series("zero_std")
        if len(vals) and ids[-1] == r and math.isfinite(float(vals[-1])):
            return float(vals[-1]) < 1.0
    if metric_for(seg, REWARD_STD) is not None:
        ids, vals = signal_at_rows(seg, REWARD_STD, seg.rows_upto(1, r))
        if len(vals) and ids[-1] == r and math.isfinite(float(vals[-1])):
            return float(vals[-1]) > 0.0
    return None


def rule_no_update(ctx: RuleContext) -> list[Condition]:
    """The gradient norm exactly 0 on the last 2 rollouts while the groups still disagree on
    reward (critical), or with nothing to say they do not (a warning).  All groups scoring the
    same gives no gradient by design: that is no-signal's."""
    ids, vals = _finite(*ctx.series("grad_norm"))
    if len(vals) < 2 or ids[-1] != ctx.upto or vals[-1] != 0.0 or vals[-2] != 0.0:
        return []
    disagree = _groups_disagree(ctx)
    if disagree is False:
        return []
    run = stats.trailing_run(vals == 0.0)  # the zeros at the end
    why = "while the groups still disagree on reward" if disagree else "(the log does not say whether groups disagree)"
    msg = f"gradient norm exactly 0 for {run} rollouts in a row {why}"
    return [
        Condition(
            "no-update",
            "critical" if disagree else "warning",
            int(ids[-run]),
            msg,
            {"zero_rollouts": run, "groups_disagree": disagree},
            signal="grad_norm",
        )
    ]
