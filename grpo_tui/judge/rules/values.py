"""Value rules: a non-finite loss, reward or signal; a five-step mean outside its healthy range."""

from __future__ import annotations

import numpy as np

from ..signals import (
    BY_ID,
    MEAN_WINDOW,
    beyond_is_healthy,
    groups_of,
)
from .base import (
    Condition,
    RuleContext,
    RuleInfo,
    _finite,
    _r,
    _reward_holds,
)

INFO = (
    RuleInfo("non-finite", "critical", "the step is broken", "precision, batch, loss", ()),
    RuleInfo("out-of-range", "warning", "compare with your own seeds", "the signal's detail", ()),
)


WATCHED_NONFINITE = (
    "kl",  # (TRL's KL to the reference: a nan there is a broken step too)
    "rollout/raw_reward",
    "rollout/rewards",
    "train/loss",
    "train/pg_loss",
    "train/grad_norm",
    "train/train_rollout_logprob_abs_diff",
    "train/train_rollout_kl",
    "train/pg_clipfrac",
    "rollout/response_lengths",
    "rollout/response_len/mean",
    "perf/rollout_time",
    "train/kl_loss",
    "train/ppo_kl",
    "train/entropy_loss",
)


def rule_non_finite(ctx: RuleContext) -> list[Condition]:
    seg = ctx.seg
    out: list[Condition] = []
    row = seg.row_of.get(ctx.upto)
    if row is None:
        return out
    bad = seg.nonfinite.get(row, {})
    watched = {k: v for k, v in bad.items() if _watched(k)}
    if watched:
        names = ", ".join(f"{k}={v}" for k, v in list(watched.items())[:4])
        out.append(
            Condition(
                "non-finite",
                "critical",
                ctx.upto,
                f"non-finite value at rollout {ctx.upto}: {names}",
                {"rollout": ctx.upto, "values": dict(watched)},
            )
        )
    return out


def _watched(name: str) -> bool:
    """Loss, gradient, reward and every signal's metric: a nan there means a broken step."""
    return (
        name in WATCHED_NONFINITE
        or name.startswith(("train/", "rollout/raw"))
        or name in _SIGNAL_METRICS
        or any(w in name for w in ("loss", "grad_norm", "reward", "score"))
    )


_SIGNAL_METRICS = frozenset(a for s in BY_ID.values() for a in s.aliases)


def rule_out_of_range(ctx: RuleContext) -> list[Condition]:
    out = []
    for sig_id in BY_ID:
        if ctx.only_signals is not None and sig_id not in ctx.only_signals:
            continue  # its five-step mean sits inside its range (judge/gates.py)
        if sig_id == "clipfrac" and ctx.k > 1:
            continue  # several updates per rollout: clipping is expected
        if sig_id == "zero_std" and groups_of(ctx.seg) is None:
            continue  # a plain count has no range
        ids, vals = _finite(*ctx.series(sig_id))
        if len(vals) == 0 or ids[-1] != ctx.upto:
            continue
        b = ctx.ranges.bounds(sig_id, ctx.upto)
        if b is None:
            continue
        lo, hi = b
        mean5 = float(np.mean(vals[-MEAN_WINDOW:]))
        tol = 1e-6 if lo == hi else 0.0
        if mean5 > hi + tol or mean5 < lo - tol:
            side = "above" if mean5 > hi else "below"
            sig = BY_ID[sig_id]
            if sig.healthy_beyond and beyond_is_healthy(sig, side, _reward_holds(ctx)):
                continue  # the way a healthy run goes (reward up; shorter answers while reward holds)
            out.append(
                Condition(
                    "out-of-range",
                    "warning",
                    ctx.upto,
                    f"{sig.label} five-step mean {sig.fmt.format(mean5)} is {side} its healthy range "
                    f"{sig.fmt.format(lo)}-{sig.fmt.format(hi)}",
                    {
                        "signal": sig_id,
                        "mean5": _r(mean5),
                        "range": [lo, hi],
                        "window": [_r(v) for v in vals[-MEAN_WINDOW:]],
                    },
                    signal=sig_id,
                )
            )
    return out
