"""Policy rules, where the run logs entropy or KL to the reference: entropy collapse,
near-random output (entropy-high), and KL to the reference running away (kl-ref)."""

from __future__ import annotations

import numpy as np

from .. import stats
from ..signals import (
    Signal,
    first_rows,
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
        "entropy-collapse",
        "critical",
        "exploration is gone: the policy answers the same way every time",
        "rollout temperature, clip_ratio_high (Clip-Higher), LR",
        (),
    ),
    RuleInfo(
        "kl-ref",
        "critical",
        "the policy runs away from the reference model",
        "LR, KL coefficient (beta), reward hacking in the samples",
        (),
    ),
    RuleInfo(
        "entropy-high",
        "critical",
        "near-random output: the policy no longer prefers any token",
        "sample outputs, LR, mismatch (gap), grad norm",
        (),
    ),
)


# Policy entropy, when the log has it (Miles logs 0.0 unless --observe-training-entropy).
# (prime-rl and ms-swift log `entropy/mean`: lines/formats.py)
ENTROPY = Signal(
    "entropy",
    "entropy",
    ("train/entropy_loss", "actor/entropy", "entropy", "entropy/mean", "entropy_loss"),
    "",
    "",
    "",
    None,
    None,
)
ENTROPY_SHARE = 0.15  # docs/health-signs.md §3.1: below 15 % of its own first-3 median


def rule_entropy_collapse(ctx: RuleContext) -> list[Condition]:
    """Entropy below 15 % of its own start in 3 of the last 4 rollouts (an early fall of 50-70 %
    is normal: Cui et al. 2505.22617).  Critical when reward is not rising over the last 8
    rollouts either (exploration gone, nothing learned from it); a warning while it still rises."""
    seg = ctx.seg
    if metric_for(seg, ENTROPY) is None:
        return []
    ids, vals = _finite(*signal_at_rows(seg, ENTROPY, seg.rows_upto(WINDOW, ctx.upto)))
    if len(vals) < 4 or ids[-1] != ctx.upto:
        return []
    _, start = _finite(*signal_at_rows(seg, ENTROPY, first_rows(seg, 3, ctx.upto)))
    if len(start) < 3:
        return []
    e0 = float(stats.median(start))
    if not e0 > 1e-9:
        return []  # not observed: a constant 0.0
    edge = ENTROPY_SHARE * e0
    if not stats.persistent_below(vals, edge, 3, 4):
        return []
    _, rv = _finite(*ctx.series("reward"))
    rising = len(rv) >= 8 and stats.mk_p_up(rv[-8:]) < 0.05
    sev = "warning" if rising else "critical"
    return [
        Condition(
            "entropy-collapse",
            sev,
            int(ids[-4]),
            f"entropy collapsed to {vals[-1]:.3g} ({vals[-1] / e0:.0%} of its start, {e0:.3g})"
            + ("; reward still rising" if rising else "; reward flat or falling: exploration is gone"),
            {
                "entropy_last4": [_r(v) for v in vals[-4:]],
                "entropy_start": _r(e0),
                "edge": _r(edge),
                "reward_rising": rising,
            },
        )
    ]


# KL to the reference policy, where the run logs it (Miles with --use-kl-loss, verl, TRL with beta > 0).
KL_REF = Signal("kl_ref", "KL to reference", ("train/kl_loss", "actor/kl_loss", "kl"), "", "", "", None, None)
KL_REF_ABSURD = 10.0  # nats a token: far beyond any run still learning, whatever its start
KL_REF_JUMP = 100.0  # a one-step jump this large ...
KL_REF_FLOOR = 0.05  # ... to at least this (KL starts at ~0: small values jump by ratios)
KL_REF_RISE = 10.0  # a sustained rise over the run's own early level (3 of the last 4) ...
KL_REF_WARN, KL_REF_CRIT = 0.1, 1.0  # ... to at least these levels: a warning, a critical


def rule_kl_ref(ctx: RuleContext) -> list[Condition]:
    """KL to the reference explodes (above 10, or x100 in one step to at least 0.05: critical at
    once) or runs away (3 of the last 4 at 10x its own early level and above 0.1: a warning;
    above 1.0 too: critical).  Non-finite values are rule_non_finite's."""
    seg = ctx.seg
    if metric_for(seg, KL_REF) is None:
        return []
    ids, vals = _finite(*signal_at_rows(seg, KL_REF, seg.rows_upto(WINDOW, ctx.upto)))
    if len(vals) == 0 or ids[-1] != ctx.upto:
        return []
    last = float(vals[-1])
    prev = float(vals[-2]) if len(vals) >= 2 else None
    base = early_level(*_finite(*signal_at_rows(seg, KL_REF, first_rows(seg, 12, ctx.upto))))
    ev = {"kl_last4": [_r(v) for v in vals[-4:]], "early_level": _r(base) if base else None}
    if last > KL_REF_ABSURD:
        msg = f"KL to the reference {last:.3g} at rollout {ctx.upto} (above {KL_REF_ABSURD:g})"
        return [Condition("kl-ref", "critical", ctx.upto, msg, ev)]
    if prev is not None and prev > 0 and last >= KL_REF_JUMP * prev and last >= KL_REF_FLOOR:
        msg = f"KL to the reference jumped x{last / prev:.0f} in one step ({prev:.3g} -> {last:.3g})"
        return [Condition("kl-ref", "critical", ctx.upto, msg, ev)]
    if base is None or len(vals) < 4:
        return []
    edge = max(KL_REF_RISE * base, KL_REF_WARN)
    if not stats.persistent_above(vals, edge, 3, 4):
        return []
    sev = "critical" if stats.persistent_above(vals, max(edge, KL_REF_CRIT), 3, 4) else "warning"
    msg = (
        f"KL to the reference x{float(np.median(vals[-4:])) / base:.0f} its early level "
        f"({base:.3g} -> {float(np.median(vals[-4:])):.3g}) in 3 of the last 4 rollouts"
    )
    return [Condition("kl-ref", sev, ctx.upto, msg, ev)]


ENTROPY_CEILING = 4.0  # nats a token: twice what a run that was declining reached (docs/health-signs.md §7)


def rule_entropy_high(ctx: RuleContext) -> list[Condition]:
    """Entropy at or above ENTROPY_CEILING on the last 2 rollouts: near-random output (a healthy
    LLM policy stays far below; gibberish and uniform sampling sit far above).  At the run's first
    rollout one such value is a warning."""
    seg = ctx.seg
    if metric_for(seg, ENTROPY) is None:
        return []
    ids, vals = _finite(*signal_at_rows(seg, ENTROPY, seg.rows_upto(WINDOW, ctx.upto)))
    if len(vals) == 1 and ids[-1] == ctx.upto and vals[-1] >= ENTROPY_CEILING and at_run_start(ctx):
        msg = (
            f"entropy {vals[-1]:.2f} nats a token at the first rollout (ceiling {ENTROPY_CEILING:g}): near-random "
            "output; critical if the next rollout shows it again"
        )
        return [Condition("entropy-high", "warning", int(ids[-1]), msg, {"entropy_last4": [_r(vals[-1])]})]
    if len(vals) < 2 or ids[-1] != ctx.upto or not (vals[-1] >= ENTROPY_CEILING and vals[-2] >= ENTROPY_CEILING):
        return []
    msg = (
        f"entropy {vals[-1]:.2f} nats a token on the last 2 rollouts (ceiling {ENTROPY_CEILING:g}): near-random output"
    )
    return [Condition("entropy-high", "critical", int(ids[-2]), msg, {"entropy_last4": [_r(v) for v in vals[-4:]]})]
