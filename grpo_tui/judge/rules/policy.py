"""Policy rules, where the run logs entropy or KL to the reference: entropy collapse,
near-random output (entropy-high), and KL to the reference running away (kl-ref)."""

from __future__ import annotations

import math

import numpy as np

from ...store.metric_store import Segment
from .. import stats
from ..signals import (
    BY_ID,
    Signal,
    first_rows,
    metric_for,
    signal_at_rows,
    signal_values,
)
from .base import (
    WINDOW,
    Condition,
    RuleContext,
    RuleInfo,
    _finite,
    _r,
    at_run_start,
    early_level_at,
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
    """The rule at one rollout: EntropyCollapseTest over its window."""
    seg = ctx.seg
    if metric_for(seg, ENTROPY) is None:
        return []
    rows = seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    return EntropyCollapseTest(seg, rows, np.array([len(rows) - 1]), entropy_start(seg, ctx.upto)).conditions(0)


def entropy_start(seg: Segment, upto: int) -> float | None:
    """The median of entropy's first 3 values (of the segment's first 3 rollouts), None without
    three or where it is not observed (a constant 0.0)."""
    _, start = _finite(*signal_at_rows(seg, ENTROPY, first_rows(seg, 3, upto)))
    if len(start) < 3:
        return None
    e0 = float(stats.median(start))
    return e0 if e0 > 1e-9 else None


class EntropyCollapseTest:
    """rule_entropy_collapse over columns, for many rollouts at once (`rows`: the run's rows in
    rollout order, `at`: the positions judged, `e0`: entropy_start there).  Entropy below 15 %
    of its own start in 3 of the last 4 rollouts (an early fall of 50-70 % is normal: Cui et al.
    2505.22617).  Critical when reward is not rising over the last 8 rollouts either (exploration
    gone, nothing learned from it); a warning while it still rises.  `fires`, `critical` per
    judged rollout; `conditions(j)` the rule's words."""

    def __init__(self, seg: Segment, rows: np.ndarray, at: np.ndarray, e0: float | None) -> None:
        self.at, self.e0 = at, e0
        self.fires = np.zeros(len(at), bool)
        self.rising = np.zeros(len(at), bool)
        if e0 is None or not len(at):
            return
        self.ids = seg.ids_at(rows)
        v = self.v = signal_values(seg, ENTROPY, rows)
        self.idx, n = stats.last_finite(v, at, 4, WINDOW)
        self.edge = ENTROPY_SHARE * e0
        with np.errstate(invalid="ignore"):
            below = ((v[np.maximum(self.idx, 0)] - self.edge) < 0).sum(axis=1) >= 3
        self.fires = (n >= 4) & np.isfinite(v[at]) & below
        f = np.flatnonzero(self.fires)
        if len(f):
            r = signal_values(seg, BY_ID["reward"], rows)
            ridx, rn = stats.last_finite(r, at[f], 8, WINDOW)
            full = np.flatnonzero(rn >= 8)
            self.rising[f[full]] = stats.rows_mk_p_below(r[ridx[full]], 0.05)
        self.critical = self.fires & ~self.rising

    def conditions(self, j: int) -> list[Condition]:
        if not self.fires[j]:
            return []
        assert self.e0 is not None
        e0, rising = self.e0, bool(self.rising[j])
        vals = self.v[self.idx[j]]
        return [
            Condition(
                "entropy-collapse",
                "warning" if rising else "critical",
                int(self.ids[self.idx[j, 0]]),
                f"entropy collapsed to {vals[-1]:.3g} ({vals[-1] / e0:.0%} of its start, {e0:.3g})"
                + ("; reward still rising" if rising else "; reward flat or falling: exploration is gone"),
                {
                    "entropy_last4": [_r(v) for v in vals],
                    "entropy_start": _r(e0),
                    "edge": _r(self.edge),
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
    """The rule at one rollout: KlRefTest over its window."""
    seg = ctx.seg
    if metric_for(seg, KL_REF) is None:
        return []
    rows = seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    at = np.array([len(rows) - 1])
    return KlRefTest(seg, rows, at, np.array([early_level_at(seg, KL_REF, ctx.upto)])).conditions(0)


class KlRefTest:
    """rule_kl_ref over columns, for many rollouts at once (`rows`: the run's rows in rollout
    order, `at`: the positions judged, `base`: its early_level at each).  KL to the reference
    explodes (above 10, or x100 in one step to at least 0.05: critical at once) or runs away (3
    of the last 4 at 10x its own early level and above 0.1: a warning; above 1.0 too: critical).
    Non-finite values are rule_non_finite's.  `fires`, `how` per judged rollout (1 above 10,
    2 a jump, 3 a warning, 4 critical); `conditions(j)` the rule's words."""

    def __init__(self, seg: Segment, rows: np.ndarray, at: np.ndarray, base: np.ndarray) -> None:
        self.at, self.base = at, base
        self.how = np.zeros(len(at), np.int8)
        self.fires = self.how > 0
        if not len(at):
            return
        self.ids = seg.ids_at(rows)
        v = self.v = signal_values(seg, KL_REF, rows)
        self.idx, n = stats.last_finite(v, at, 4, WINDOW)
        ok = np.isfinite(v[at])
        last = v[at]
        prev = v[np.maximum(self.idx[:, -2], 0)]
        last4 = v[np.maximum(self.idx, 0)]
        with np.errstate(invalid="ignore"):
            edge = np.maximum(KL_REF_RISE * base, KL_REF_WARN)
            runs = (n >= 4) & np.isfinite(base) & (((last4 - edge[:, None]) > 0).sum(axis=1) >= 3)
            high = runs & (((last4 - np.maximum(edge, KL_REF_CRIT)[:, None]) > 0).sum(axis=1) >= 3)
            jump = (n >= 2) & (prev > 0) & (last >= KL_REF_JUMP * prev) & (last >= KL_REF_FLOOR)
            absurd = last > KL_REF_ABSURD
        self.edge = edge
        how = np.where(high, 4, np.where(runs, 3, 0))
        how = np.where(jump, 2, how)
        self.how = np.where(ok, np.where(absurd, 1, how), 0).astype(np.int8)
        self.fires = self.how > 0

    def conditions(self, j: int) -> list[Condition]:
        how = int(self.how[j])
        if not how:
            return []
        idx = self.idx[j]
        vals = self.v[idx[idx >= 0]]
        upto = int(self.ids[self.at[j]])
        last = float(vals[-1])
        base = float(self.base[j])
        ev = {"kl_last4": [_r(v) for v in vals], "early_level": _r(base) if math.isfinite(base) else None}
        if how == 1:
            msg = f"KL to the reference {last:.3g} at rollout {upto} (above {KL_REF_ABSURD:g})"
            return [Condition("kl-ref", "critical", upto, msg, ev)]
        if how == 2:
            prev = float(vals[-2])
            msg = f"KL to the reference jumped x{last / prev:.0f} in one step ({prev:.3g} -> {last:.3g})"
            return [Condition("kl-ref", "critical", upto, msg, ev)]
        med = float(np.median(vals))
        msg = (
            f"KL to the reference x{med / base:.0f} its early level "
            f"({base:.3g} -> {med:.3g}) in 3 of the last 4 rollouts"
        )
        return [Condition("kl-ref", "critical" if how == 4 else "warning", upto, msg, ev)]


ENTROPY_CEILING = 4.0  # nats a token: twice what a run that was declining reached (docs/health-signs.md §7)


def rule_entropy_high(ctx: RuleContext) -> list[Condition]:
    """The rule at one rollout: EntropyHighTest over its window."""
    seg = ctx.seg
    if metric_for(seg, ENTROPY) is None:
        return []
    rows = seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    return EntropyHighTest(seg, rows, np.array([len(rows) - 1]), np.array([at_run_start(ctx)])).conditions(0)


class EntropyHighTest:
    """rule_entropy_high over columns, for many rollouts at once (`rows`: the run's rows in
    rollout order, `at`: the positions judged, `start`: each is among the segment's first 3
    rows).  Entropy at or above ENTROPY_CEILING on the last 2 rollouts: near-random output (a
    healthy LLM policy stays far below; gibberish and uniform sampling sit far above).  At the
    run's first rollout one such value is a warning.  `fires`, `critical` per judged rollout."""

    def __init__(self, seg: Segment, rows: np.ndarray, at: np.ndarray, start: np.ndarray) -> None:
        self.at = at
        self.fires = np.zeros(len(at), bool)
        self.critical = self.fires
        if not len(at):
            return
        v = self.v = signal_values(seg, ENTROPY, rows)
        with np.errstate(invalid="ignore"):
            high = v >= ENTROPY_CEILING
        ok = high[at]  # (NaN is never high)
        if not ok.any():
            return  # (the common case, asked first)
        self.ids = seg.ids_at(rows)
        self.idx, n = stats.last_finite(v, at, 4, WINDOW)
        self.critical = ok & (n >= 2) & high[np.maximum(self.idx[:, -2], 0)]
        self.fires = self.critical | (ok & (n == 1) & start)

    def conditions(self, j: int) -> list[Condition]:
        if not self.fires[j]:
            return []
        idx = self.idx[j]
        vals = self.v[idx[idx >= 0]]
        if not self.critical[j]:
            msg = (
                f"entropy {vals[-1]:.2f} nats a token at the first rollout (ceiling {ENTROPY_CEILING:g}): near-random "
                "output; critical if the next rollout shows it again"
            )
            at = int(self.ids[self.at[j]])
            return [Condition("entropy-high", "warning", at, msg, {"entropy_last4": [_r(vals[-1])]})]
        msg = f"entropy {vals[-1]:.2f} nats a token on the last 2 rollouts (ceiling {ENTROPY_CEILING:g}): near-random output"
        return [
            Condition("entropy-high", "critical", int(self.ids[idx[-2]]), msg, {"entropy_last4": [_r(v) for v in vals]})
        ]
