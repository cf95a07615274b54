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
    signal_at_rows,
)
from .base import (
    BASELINE_ROWS,
    RHO,
    WINDOW,
    Condition,
    RuleContext,
    RuleInfo,
    _finite,
    _lazy,
    _log,
    _noise,
    _onset,
    _r,
    drift_up,
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
    ids, cf = _finite(*ctx.series("clipfrac"))
    if len(cf) < 2 or ids[-1] != ctx.upto:
        return []
    if ctx.k == 1 and ctx.seg.framework == "miles":
        # (verl/TRL don't say how many updates a rollout gets: only the > 0.3 rule applies there)
        kl = _rollout_metric(ctx, "train/ppo_kl", ids[-2:])
        bad = (cf[-2:] > 1e-6) | (np.abs(kl) > 1e-6)
        if np.all(bad):
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
        return []
    # With K updates per rollout the FIRST step still runs on fresh weights: its ratio is 1, so
    # its clip fraction and ppo_kl must be ~0 whatever K is (Miles' CI asserts both).
    firsts = first_step(ctx.seg, ids[-2:]) if ctx.seg.framework == "miles" else []
    if len(firsts) == 2 and all(cf_ > 1e-6 or abs(kl_) > 1e-6 for _, cf_, kl_ in firsts):
        return [
            Condition(
                "off-policy",
                "critical",
                firsts[0][0],
                f"clip fraction {firsts[-1][1]:.3g} / ppo_kl {firsts[-1][2]:.3g} > 0 on the first update "
                f"of rollouts {firsts[0][0]} and {firsts[1][0]} (must be 0 on fresh weights)",
                {
                    "signal": "clipfrac",
                    "first_step_clipfrac": [_r(v) for _, v, _ in firsts],
                    "first_step_ppo_kl": [_r(v) for _, _, v in firsts],
                    "steps_per_rollout": ctx.k,
                },
                signal="clipfrac",
            )
        ]
    if len(cf) >= 4 and stats.persistent_above(cf, 0.3, 3, 4):
        return [
            Condition(
                "off-policy",
                "critical",
                int(ids[-4]),
                f"clip fraction {cf[-1]:.3g} above 0.3 for 3 of 4 rollouts: policy moves too fast per update",
                {"signal": "clipfrac", "last4": [_r(v) for v in cf[-4:]], "steps_per_rollout": ctx.k},
                signal="clipfrac",
            )
        ]
    return []


def _rollout_metric(ctx: RuleContext, name: str, rollouts: np.ndarray) -> np.ndarray:
    """A metric's per-rollout values at these rollouts (0 where it is not logged)."""
    seg = ctx.seg
    rows = np.array([seg.row_of[int(r)] for r in rollouts if int(r) in seg.row_of], dtype=np.int64)
    if len(rows) != len(rollouts):
        return np.zeros(len(rollouts))
    v = seg.values_at_rows(name, rows)
    return np.where(np.isfinite(v), v, 0.0)


def first_step(seg: Segment, rollouts: np.ndarray) -> list[tuple[int, float, float]]:
    """(rollout, clip fraction, ppo_kl) of the first optimizer step of each rollout."""
    out = []
    steps = seg.steps
    roles, ns = steps.roles, steps.ns
    for r in rollouts.tolist():
        mine = [i for i in steps.of_rollout.get(int(r), ()) if roles[i] == ""]
        if not mine:
            continue
        first = min(mine, key=ns.__getitem__)
        v = steps.get_value(first, "train/pg_clipfrac")
        kl = steps.get_value(first, "train/ppo_kl", 0.0)
        if not (isinstance(kl, (int, float)) and not isinstance(kl, bool) and math.isfinite(kl)):
            kl = 0.0
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append((int(r), float(v), float(kl)))
    return out


def rule_rollout_slowdown(ctx: RuleContext) -> list[Condition]:
    """Rollout time per token of the longest answer drifts up against the run's own baseline
    (and its level at the window's start) by x1.5 or more - more than heat or a busy node
    (x1.3) - while the time itself grew and length did not rise with it."""
    ti, tv = _finite(*ctx.series("rollout_time"))
    if len(tv) < 8 or ti[-1] != ctx.upto:
        return []
    seg = ctx.seg
    norm_name = (
        "rollout/response_len/max" if "rollout/response_len/max" in seg.columns else metric_for(seg, BY_ID["length"])
    )
    if norm_name is None:
        return []
    rows = seg.rows_upto(WINDOW, ctx.upto)
    nv = seg.values_at_rows(norm_name, rows)
    ni = seg.ids_at(rows)
    common = stats.intersect_sorted(ti, ni[np.isfinite(nv) & (nv > 0)])
    if len(common) < 8:
        return []
    T = tv[np.searchsorted(ti, common)]
    N = nv[np.searchsorted(ni, common)]
    lt, per_tok = _log(T), _log(T / N)
    ok = np.isfinite(per_tok) & np.isfinite(lt)
    if ok.sum() < 8:
        return []
    ids, lt, per_tok, T = common[ok], lt[ok], per_tok[ok], T[ok]
    # the own baseline: the first rollouts, or the window's start when time fell since then
    brows = first_rows(seg, BASELINE_ROWS, ctx.upto)
    bT = (
        seg.values_at_rows("perf/rollout_time", brows)
        if metric_for(seg, BY_ID["rollout_time"]) == "perf/rollout_time"
        else signal_at_rows(seg, BY_ID["rollout_time"], brows)[1]
    )
    bN = seg.values_at_rows(norm_name, brows)
    with np.errstate(divide="ignore", invalid="ignore"):
        b_tok, b_t = np.log(bT / bN), np.log(bT)
    b_tok, b_t = b_tok[np.isfinite(b_tok)], b_t[np.isfinite(b_t)]
    head = min(8, max(4, len(per_tok) // 4))
    start_tok = float(stats.median(per_tok[:head]))
    start_t = float(stats.median(lt[:head]))
    base_tok = min(float(stats.median(b_tok)), start_tok) if len(b_tok) >= 3 else start_tok
    base_t = min(float(stats.median(b_t)), start_t) if len(b_t) >= 3 else start_t
    noise = _lazy(lambda: _noise(ids, per_tok, "rollout_time"))
    rho = RHO["rollout_time"]
    ev = drift_up(ids, per_tok, base_tok, noise, rho)
    if not ev:
        return []
    s = noise()
    if not stats.persistent_above(lt, base_t + 0.8 * rho, 3, 4):
        return []  # per-token time rose because the longest answer got shorter: not slower
    w = ev["window"]
    li, lv = _finite(*ctx.series("length"))
    lw = lv[-w:]
    if len(lw) >= 4 and stats.theil_sen_rise(li[-len(lw) :], lw) > 0.15 * abs(float(stats.median(lw))):
        return []  # time grew with the answers
    now = float(stats.median(T[-3:]))
    then = math.exp(base_t)
    return [
        Condition(
            "rollout-slowdown",
            "critical",
            _onset(ids[-w:], per_tok[-w:], s),
            f"rollout time per token up x{math.exp(float(stats.median(per_tok[-3:])) - base_tok):.1f} "
            f"against the run's own baseline, over {w} rollouts, at flat length ({then:.0f}s -> {now:.0f}s)",
            {
                "signal": "rollout_time",
                "rollout_time": [_r(v) for v in T[-w:]],
                "normaliser": norm_name,
                "factor": _r(math.exp(ev["rise"])),
                "mk_p": _r(ev["p"]),
                "baseline_s": _r(then),
                "noise_log": _r(s),
            },
            signal="rollout_time",
        )
    ]
