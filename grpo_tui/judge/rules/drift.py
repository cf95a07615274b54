"""Drift rules: the train/engine log-prob gap (or KL) and the gradient norm rising or jumping
against the run's own early level, and held while they stay up."""

from __future__ import annotations

import math

import numpy as np

from .. import stats
from ..signals import (
    BY_ID,
)
from .base import (
    RHO,
    Condition,
    RuleContext,
    RuleInfo,
    _explosion,
    _finite,
    _hi_edge,
    _jump_shaped,
    _lazy,
    _log,
    _log_series,
    _noise,
    _onset,
    _r,
    drift_up,
    own_base,
)

INFO = (
    RuleInfo(
        "gap-rising", "critical", "trainer and engine hold different weights", "weight-update logs", ("gap", "kl")
    ),
    RuleInfo(
        "gap-jump",
        "critical",
        "weights out of sync since that step",
        "weight-update logs, engine restarts",
        ("gap", "kl"),
    ),
    RuleInfo(
        "grad-norm-rising",
        "critical",
        "learning rate too high for this batch",
        "lower the LR and repeat",
        ("grad_norm",),
    ),
)


def _gap_like(ctx: RuleContext, sig_id: str) -> tuple[Condition | None, Condition | None]:
    ids, lv, vals = _log_series(*ctx.series(sig_id))
    if len(lv) < 1 or ids[-1] != ctx.upto:
        return None, None
    sig = BY_ID[sig_id]
    base = own_base(ctx, sig_id, log=True)
    boom = _explosion(ctx, sig_id, ids, lv, base)
    if boom is not None and "gap-rising" not in ctx.open_rules:
        # x10 beyond everything: critical at once, as a jump unless it got there step by step
        rule = "gap-rising" if len(lv) >= 8 and not _jump_shaped(lv[-8:]) else "gap-jump"
        c = Condition(
            rule,
            "critical",
            ctx.upto,
            f"{sig.label} exploded to {sig.fmt.format(vals[-1])} at rollout {ctx.upto} "
            f"(x{max(v for v in boom['times'].values() if v):.3g} beyond its usual level)",
            {
                "signal": sig_id,
                "value": _r(vals[-1]),
                "times_beyond": boom["times"],
                "baseline": _r(math.exp(base.centre)) if base else None,
            },
            signal=sig_id,
        )
        return (c, None) if rule == "gap-rising" else (None, c)
    if len(lv) < 4:
        return None, None
    hi = _hi_edge(ctx, sig_id, ids, log=True)
    noise = _lazy(lambda: _noise(ids, lv, sig_id))
    rho = RHO[sig_id]
    rising = jump = None
    ev = drift_up(
        ids,
        lv,
        base.centre if base else None,
        noise,
        rho,
        band_hi=hi,
    )
    if ev and not _jump_shaped(lv[-ev["window"] :], ev["rise"]):
        w = ev["window"]
        s = noise()
        start = _onset(ids[-w:], lv[-w:], s)
        b = math.exp(base.centre) if base else math.exp(ev["first"])
        now = math.exp(float(stats.median(lv[-3:])))
        rising = Condition(
            "gap-rising",
            "critical",
            start,
            f"{sig.label} rising for {w} rollouts (x{math.exp(ev['rise']):.2f}; "
            f"{sig.fmt.format(b)} at the start of the run -> {sig.fmt.format(now)} now)",
            {
                "signal": sig_id,
                "window_rollouts": [int(ids[-w]), int(ids[-1])],
                "values": [_r(v) for v in vals[-w:]],
                "mk_p": _r(ev["p"]),
                "rise_log": _r(ev["rise"]),
                "baseline": _r(b),
                "noise_log": _r(s),
            },
            signal=sig_id,
        )
    if len(lv) >= 5 and rising is None and "gap-rising" not in ctx.open_rules:
        # Jump (a rise already called gap-rising stays that): 3 of the last 4 above the level before (x1.5 and 3 sigma) - and above the band
        # when one applies - reached in one step.
        before = float(stats.percentile(lv[:-3], 20))
        d = np.diff(lv)
        k = int(np.argmax(d))
        if d[k] >= math.log(1.5) and stats.persistent_above(lv, before + math.log(1.5), 3, 4):
            edge = np.full(len(lv), before + max(math.log(1.5), 3 * noise()))
            if hi is not None:
                edge = np.maximum(edge, np.where(np.isfinite(hi), hi, -np.inf))
        else:
            edge = None
        if (
            edge is not None
            and stats.persistent_above(lv, edge, 3, 4)
            and d[k] >= 0.5 * (float(stats.median(lv[-3:])) - before)
        ):
            at = int(ids[k + 1])
            jump = Condition(
                "gap-jump",
                "critical",
                at,
                f"{sig.label} jumped at rollout {at} and stays high "
                f"({sig.fmt.format(math.exp(before))} -> {sig.fmt.format(vals[-1])})",
                {
                    "signal": sig_id,
                    "before": _r(math.exp(before)),
                    "last4": [_r(v) for v in vals[-4:]],
                    "range_hi": _r(math.exp(hi[-1])) if hi is not None else None,
                },
                signal=sig_id,
            )
    return rising, jump


def rule_gap(ctx: RuleContext) -> list[Condition]:
    out: dict[str, Condition] = {}
    for sig_id in ("gap", "kl"):
        rising, jump = _gap_like(ctx, sig_id)
        for c in (rising, jump):
            if c and c.rule not in out:
                out[c.rule] = c
    if "gap-rising" in out and "gap-jump" in out and "times_beyond" not in out["gap-jump"].evidence:
        del out["gap-jump"]  # the gap rose step by step; KL's steeper rise is the same trend
    return list(out.values())


def rule_grad_norm(ctx: RuleContext) -> list[Condition]:
    ids, lv, vals = _log_series(*ctx.series("grad_norm"))
    if len(vals) < 1 or ids[-1] != ctx.upto:
        return []
    base = own_base(ctx, "grad_norm", log=True)
    boom = _explosion(ctx, "grad_norm", ids, lv, base)
    if boom is not None:
        times = ", ".join(f"x{v:.3g} the {k}" for k, v in boom["times"].items() if v)
        return [
            Condition(
                "grad-norm-rising",
                "critical",
                ctx.upto,
                f"gradient norm exploded to {vals[-1]:.3g} at rollout {ctx.upto} ({times})",
                {
                    "signal": "grad_norm",
                    "value": _r(vals[-1]),
                    "times_beyond": boom["times"],
                    "baseline": _r(math.exp(base.centre)) if base else None,
                },
                signal="grad_norm",
            )
        ]
    if len(vals) < 8:
        return []
    hi = _hi_edge(ctx, "grad_norm", ids, log=True)
    noise = _lazy(lambda: _noise(ids, lv, "grad_norm"))
    ev = drift_up(
        ids,
        lv,
        base.centre if base else None,
        noise,
        RHO["grad_norm"],
        band_hi=hi,
    )
    if not ev:
        return []
    s = noise()
    w = ev["window"]
    b = math.exp(base.centre) if base else math.exp(ev["first"])
    now = math.exp(float(stats.median(lv[-3:])))
    return [
        Condition(
            "grad-norm-rising",
            "critical",
            _onset(ids[-w:], lv[-w:], s),
            f"gradient norm growing step after step (x{math.exp(ev['rise']):.1f} over {w} rollouts; "
            f"{b:.3g} at the start of the run -> {now:.3g} now)",
            {
                "signal": "grad_norm",
                "values": [_r(v) for v in vals[-w:]],
                "mk_p": _r(ev["p"]),
                "factor": _r(math.exp(ev["rise"])),
                "baseline": _r(b),
                "noise_log": _r(s),
            },
            signal="grad_norm",
        )
    ]


def still_outside(ctx: RuleContext, rule: str, sig_id: str) -> Condition | None:
    """An open trend/jump alert holds while 3 of the last 4 values stay above the band, or above
    the run's own baseline by the rule's size (the sign is not gone until the level is back)."""
    ids, vals = _finite(*ctx.series(sig_id))
    if len(vals) < 4 or ids[-1] != ctx.upto:
        return None
    sig = BY_ID[sig_id]
    hi = _hi_edge(ctx, sig_id, ids, log=False)
    if hi is not None and stats.persistent_above(vals, hi, 3, 4):
        return Condition(
            rule,
            "critical",
            None,
            f"{sig.label} still above its healthy range ({sig.fmt.format(vals[-1])} > {sig.fmt.format(hi[-1])})",
            {"signal": sig_id, "last4": [_r(v) for v in vals[-4:]], "range_hi": _r(hi[-1])},
            signal=sig_id,
        )
    base = own_base(ctx, sig_id, log=True)
    if base is None or sig_id not in RHO:
        return None
    edge = base.centre + RHO[sig_id]
    lv = _log(vals)
    if not stats.persistent_above(lv, edge, 3, 4):
        return None
    return Condition(
        rule,
        "critical",
        None,
        f"{sig.label} still x{math.exp(float(stats.median(lv[-4:])) - base.centre):.1f} its level early in the run "
        f"({sig.fmt.format(vals[-1])} vs {sig.fmt.format(math.exp(base.centre))})",
        {"signal": sig_id, "last4": [_r(v) for v in vals[-4:]], "baseline": _r(math.exp(base.centre))},
        signal=sig_id,
    )


LATCHED = {"gap-rising": ("gap", "kl"), "gap-jump": ("gap", "kl"), "grad-norm-rising": ("grad_norm",)}
