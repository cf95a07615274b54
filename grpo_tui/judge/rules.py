"""Broken-run rules (ids are a contract, design.md §5): each looks at a short window of the
current segment and says whether its sign is there now, with evidence.

Trends are never judged on one step: Mann-Kendall + Theil-Sen size gate (+ range gate),
confirmed over consecutive evaluations (grpo-health.md §3.2).  Each rule only reads the
newest rollouts, so a live update costs the same at 100 and at 100,000 rollouts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import stats
from .ranges import RangeSet
from .signals import BY_ID, signal_series, metric_for, groups_of
from ..store.metric_store import Segment

WINDOW = 24                     # rollouts a rule may look back
MEAN_WINDOW = 5


@dataclass(frozen=True, slots=True)
class RuleInfo:
    id: str
    severity: str               # default severity
    meaning: str
    check: str
    signals: tuple[str, ...]


RULES: dict[str, RuleInfo] = {r.id: r for r in (
    RuleInfo("no-steps", "critical", "engine or trainer did not start",
             "launcher/engine start-up lines", ()),
    RuleInfo("engine-down", "critical", "rollout engine died",
             "engine log, OOM, router health", ()),
    RuleInfo("gap-rising", "critical", "trainer and engine hold different weights",
             "weight-update logs", ("gap", "kl")),
    RuleInfo("gap-jump", "critical", "weights out of sync since that step",
             "weight-update logs, engine restarts", ("gap", "kl")),
    RuleInfo("grad-norm-rising", "critical", "learning rate too high for this batch",
             "lower the LR and repeat", ("grad_norm",)),
    RuleInfo("length-hacking", "critical", "model talks longer instead of better",
             "reward function, cut share", ("length", "reward")),
    RuleInfo("off-policy", "critical", "samples did not come from the current weights",
             "update interval, async settings", ("clipfrac",)),
    RuleInfo("rollout-slowdown", "critical", "engine or GPU is slower",
             "heat log, engine log", ("rollout_time",)),
    RuleInfo("no-signal", "critical", "most groups give no learning signal",
             "data difficulty, reward parser", ("zero_std", "reward")),
    RuleInfo("non-finite", "critical", "the step is broken", "precision, batch, loss", ()),
    RuleInfo("crashed", "critical", "a process failed", "the first failing traceback, not the last", ()),
    RuleInfo("stalled", "critical", "hang, dead engine, NCCL timeout", "py-spy dump, engine health", ()),
    RuleInfo("out-of-range", "warning", "compare with your own seeds", "the signal's detail", ()),
)}

WATCHED_NONFINITE = ("rollout/raw_reward", "rollout/rewards", "train/loss", "train/pg_loss",
                     "train/grad_norm", "train/train_rollout_logprob_abs_diff",
                     "train/train_rollout_kl", "train/pg_clipfrac", "rollout/response_lengths",
                     "rollout/response_len/mean", "perf/rollout_time", "train/kl_loss",
                     "train/ppo_kl", "train/entropy_loss")


@dataclass(slots=True)
class Condition:
    """A rule's sign seen at one evaluation."""

    rule: str
    severity: str
    start: int | None               # rollout where it started
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    signal: str | None = None       # out-of-range: which signal; else the main signal

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.rule, self.signal if self.rule == "out-of-range" else None)


def _r(x: float, nd: int = 4) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.{nd}g}")


class RuleContext:
    """The window every rule reads, built once per evaluation."""

    def __init__(self, seg: Segment, ranges: RangeSet, upto: int,
                 open_rules: frozenset[str] = frozenset()) -> None:
        self.seg = seg
        self.ranges = ranges.for_framework(seg.framework)
        self.upto = upto
        self.open_rules = open_rules     # alerts already raised: they hold while outside the band
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def series(self, sig_id: str, part: str = "total") -> tuple[np.ndarray, np.ndarray]:
        key = f"{sig_id}:{part}"
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = signal_series(self.seg, BY_ID[sig_id], last=WINDOW, part=part,
                                                   upto=self.upto)
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


def _hi_edge(ctx: RuleContext, sig_id: str, ids: np.ndarray, log: bool) -> np.ndarray | None:
    b = ctx.ranges.bounds_many(sig_id, ids)
    if b is None:
        return None
    hi = b[1]
    return _log(hi) if log else hi


def _jump_shaped(v: np.ndarray, rise: float | None = None) -> bool:
    """Most of the change happened in one step (a jump), not spread over many (a trend)."""
    if len(v) < 4:
        return False
    d = np.diff(v)
    total = rise if rise is not None else float(np.median(v[-3:]) - np.percentile(v, 20))
    if total <= 0:
        return False
    return float(np.max(d)) >= 0.5 * total


def _onset(ids: np.ndarray, v: np.ndarray, s0: float) -> int:
    """Where a rise began: just after the last point still at the window's early level."""
    half = max(2, len(v) // 2)
    level = float(np.median(v[:half])) + 2 * s0
    below = np.flatnonzero(v <= level)
    if len(below) == 0:
        return int(ids[0])
    i = int(below[-1]) + 1
    return int(ids[min(i, len(ids) - 1)])


# -- rules -----------------------------------------------------------------------------------
def rule_non_finite(ctx: RuleContext) -> list[Condition]:
    seg = ctx.seg
    out = []
    row = seg.row_of.get(ctx.upto)
    if row is None:
        return out
    bad = seg.nonfinite.get(row, {})
    watched = {k: v for k, v in bad.items() if _watched(k)}
    if watched:
        names = ", ".join(f"{k}={v}" for k, v in list(watched.items())[:4])
        out.append(Condition("non-finite", "critical", ctx.upto,
                             f"non-finite value at rollout {ctx.upto}: {names}",
                             {"rollout": ctx.upto, "values": dict(watched)}))
    return out


def _watched(name: str) -> bool:
    """Loss, gradient, reward and every signal's metric: a nan there means a broken step."""
    return (name in WATCHED_NONFINITE or name.startswith(("train/", "rollout/raw"))
            or name in _SIGNAL_METRICS or any(w in name for w in ("loss", "grad_norm", "reward", "score")))


_SIGNAL_METRICS = frozenset(a for s in BY_ID.values() for a in s.aliases)


def rule_out_of_range(ctx: RuleContext) -> list[Condition]:
    out = []
    for sig_id in BY_ID:
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
            out.append(Condition(
                "out-of-range", "warning", ctx.upto,
                f"{sig.label} five-step mean {sig.fmt.format(mean5)} is {side} its healthy range "
                f"{sig.fmt.format(lo)}-{sig.fmt.format(hi)}",
                {"signal": sig_id, "mean5": _r(mean5), "range": [lo, hi],
                 "window": [_r(v) for v in vals[-MEAN_WINDOW:]]}, signal=sig_id))
    return out


def _gap_like(ctx: RuleContext, sig_id: str) -> tuple[Condition | None, Condition | None]:
    ids, vals = _finite(*ctx.series(sig_id))
    if len(vals) < 4 or ids[-1] != ctx.upto:
        return None, None
    lv = _log(vals)
    ok = np.isfinite(lv)
    ids, lv, vals = ids[ok], lv[ok], vals[ok]
    if len(lv) < 4:
        return None, None
    sig = BY_ID[sig_id]
    hi = _hi_edge(ctx, sig_id, ids, log=True)
    s0 = ctx.ranges.sigma0(sig_id)
    rising = jump = None
    ev = stats.grows(ids, lv, delta=max(3 * s0, math.log(1.25)), hi=hi)
    if ev and not _jump_shaped(lv[-ev["window"]:], ev["rise"]):
        w = ev["window"]
        start = _onset(ids[-w:], lv[-w:], s0)
        rising = Condition("gap-rising", "critical", start,
                           f"{sig.label} rising for {ev['window']} rollouts "
                           f"({sig.fmt.format(math.exp(ev['first']))} -> {sig.fmt.format(vals[-1])})",
                           {"signal": sig_id, "window_rollouts": [int(ids[0]), int(ids[-1])],
                            "values": [_r(v) for v in vals[-ev["window"]:]], "mk_p": _r(ev["p"]),
                            "rise_log": _r(ev["rise"])}, signal=sig_id)
    if hi is not None and len(lv) >= 5:
        # Jump: 3 of the last 4 above the band AND >= 1.5x the level before, reached in one step.
        base = float(np.percentile(lv[:-3], 20))
        edge = np.maximum(hi, base + math.log(1.5))
        d = np.diff(lv)
        k = int(np.argmax(d))
        if (stats.persistent_above(lv, edge, 3, 4) and d[k] >= math.log(1.5)
                and d[k] >= 0.5 * (float(np.median(lv[-3:])) - base)):
            at = int(ids[k + 1])
            jump = Condition("gap-jump", "critical", at,
                             f"{sig.label} jumped at rollout {at} and stays high "
                             f"({sig.fmt.format(math.exp(base))} -> {sig.fmt.format(vals[-1])})",
                             {"signal": sig_id, "before": _r(math.exp(base)),
                              "last4": [_r(v) for v in vals[-4:]], "range_hi": _r(math.exp(hi[-1]))},
                             signal=sig_id)
    return rising, jump


def rule_gap(ctx: RuleContext) -> list[Condition]:
    out: dict[str, Condition] = {}
    for sig_id in ("gap", "kl"):
        rising, jump = _gap_like(ctx, sig_id)
        for c in (rising, jump):
            if c and c.rule not in out:
                out[c.rule] = c
    return list(out.values())


def rule_grad_norm(ctx: RuleContext) -> list[Condition]:
    ids, vals = _finite(*ctx.series("grad_norm"))
    if len(vals) < 8 or ids[-1] != ctx.upto:
        return []
    lv = _log(vals)
    ok = np.isfinite(lv)
    ids, lv, vals = ids[ok], lv[ok], vals[ok]
    hi = _hi_edge(ctx, "grad_norm", ids, log=True)
    s0 = ctx.ranges.sigma0("grad_norm")
    ev = stats.grows(ids, lv, delta=max(3 * s0, math.log(2)), hi=hi)
    if not ev:
        return []
    w = ev["window"]
    return [Condition("grad-norm-rising", "critical", _onset(ids[-w:], lv[-w:], ctx.ranges.sigma0("grad_norm")),
                      f"gradient norm growing step after step (x{math.exp(ev['rise']):.1f} over {w} rollouts, "
                      f"{vals[-w]:.3g} -> {vals[-1]:.3g})",
                      {"signal": "grad_norm", "values": [_r(v) for v in vals[-w:]], "mk_p": _r(ev["p"]),
                       "factor": _r(math.exp(ev["rise"]))}, signal="grad_norm")]


def rule_length_hacking(ctx: RuleContext) -> list[Condition]:
    """Reward falls while length rises: a trend test on 8 rollouts, or a rise against the run's
    own recent past (five-step means), which answers sooner when reward is noisy."""
    li, lv = _finite(*ctx.series("length"))
    ri, rv = _finite(*ctx.series("reward"))
    if len(lv) < 8 or len(rv) < 8 or li[-1] != ctx.upto:
        return []
    common = np.intersect1d(li, ri)
    if len(common) < 8:
        return []
    L = lv[np.searchsorted(li, common)]
    R = rv[np.searchsorted(ri, common)]
    hit = _hacking_trend(ctx, common[-8:], L[-8:], R[-8:]) or _hacking_vs_own_past(common, L, R)
    if hit is None:
        return []
    start, evidence = hit
    w = evidence["window"]
    return [Condition("length-hacking", "critical", start,
                      f"reward falls ({R[-w]:.3f} -> {R[-1]:.3f}) while length rises ({L[-w]:.0f} -> {L[-1]:.0f})",
                      {"rollouts": [int(common[-w]), int(common[-1])], "length": [_r(v) for v in L[-w:]],
                       "reward": [_r(v) for v in R[-w:]], **{k: v for k, v in evidence.items() if k != "window"}},
                      signal="length")]


def _hacking_trend(ctx: RuleContext, ids: np.ndarray, L: np.ndarray, R: np.ndarray):
    ev = stats.grows(ids, L, delta=0.20 * abs(float(np.median(L))), windows=(8,))
    if not ev:
        return None
    tau = stats.kendall_tau(L, R)
    p_down = stats.mk_p_down(R)
    b = ctx.ranges.bounds("reward", ctx.upto)
    below = b is not None and float(np.mean(R[-MEAN_WINDOW:])) < b[0]
    if not (p_down < 0.10 or tau < -0.5 or below):
        return None
    return int(ids[0]), {"window": 8, "test": "trend", "kendall_tau": _r(tau), "reward_mk_p_down": _r(p_down)}


def _hacking_vs_own_past(ids: np.ndarray, L: np.ndarray, R: np.ndarray):
    """Five-step mean of length >= 15 % above its lowest of the previous rollouts and still
    rising, while the five-step mean of reward sits >= 0.04 under its recent best."""
    if len(L) < 12:
        return None
    L5 = stats.trailing_mean(L, MEAN_WINDOW)
    R5 = stats.trailing_mean(R, MEAN_WINDOW)
    past = slice(max(0, len(L) - 16), len(L) - 4)
    low = float(np.nanmin(L5[past]))
    best = float(np.nanmax(R5[past]))
    rising = L5[-1] > L5[-4] > L5[-7]
    if not (low > 0 and L5[-1] >= 1.15 * low and rising and R5[-1] <= best - 0.04):
        return None
    start = int(ids[past][int(np.nanargmin(L5[past]))])
    return start, {"window": min(len(L), 12), "test": "own past", "length_mean5_low": _r(low),
                   "length_mean5": _r(float(L5[-1])), "reward_mean5_best": _r(best),
                   "reward_mean5": _r(float(R5[-1]))}


def rule_off_policy(ctx: RuleContext) -> list[Condition]:
    ids, cf = _finite(*ctx.series("clipfrac"))
    if len(cf) < 2 or ids[-1] != ctx.upto:
        return []
    if ctx.k == 1 and ctx.seg.framework == "miles":
        # (verl/TRL don't say how many updates a rollout gets: only the > 0.3 rule applies there)
        if np.all(cf[-2:] > 1e-6):
            return [Condition("off-policy", "critical", int(ids[-2]),
                              f"clip fraction {cf[-1]:.3g} > 0 with one update per rollout "
                              f"(2 rollouts in a row)",
                              {"signal": "clipfrac", "last2": [_r(v) for v in cf[-2:]], "steps_per_rollout": 1},
                              signal="clipfrac")]
        return []
    # With K updates per rollout the FIRST step still runs on fresh weights: its ratio is 1,
    # so its clip fraction must be 0 whatever K is.
    firsts = _first_step_clipfrac(ctx.seg, ids[-2:]) if ctx.seg.framework == "miles" else []
    if len(firsts) == 2 and all(v > 1e-6 for _, v in firsts):
        return [Condition("off-policy", "critical", firsts[0][0],
                          f"clip fraction {firsts[-1][1]:.3g} > 0 on the first update of rollouts "
                          f"{firsts[0][0]} and {firsts[1][0]} (must be 0 on fresh weights)",
                          {"signal": "clipfrac", "first_step_clipfrac": [_r(v) for _, v in firsts],
                           "steps_per_rollout": ctx.k}, signal="clipfrac")]
    if len(cf) >= 4 and stats.persistent_above(cf, 0.3, 3, 4):
        return [Condition("off-policy", "critical", int(ids[-4]),
                          f"clip fraction {cf[-1]:.3g} above 0.3 for 3 of 4 rollouts: policy moves too fast per update",
                          {"signal": "clipfrac", "last4": [_r(v) for v in cf[-4:]], "steps_per_rollout": ctx.k},
                          signal="clipfrac")]
    return []


def _first_step_clipfrac(seg: Segment, rollouts: np.ndarray) -> list[tuple[int, float]]:
    out = []
    for r in rollouts.tolist():
        steps = [st for st in seg.steps_of(int(r)) if st.role == ""]
        if not steps:
            continue
        first = min(steps, key=lambda st: st.n)
        v = first.metrics.get("train/pg_clipfrac")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append((int(r), float(v)))
    return out


def rule_rollout_slowdown(ctx: RuleContext) -> list[Condition]:
    ti, tv = _finite(*ctx.series("rollout_time"))
    if len(tv) < 8 or ti[-1] != ctx.upto:
        return []
    seg = ctx.seg
    norm_name = "rollout/response_len/max" if "rollout/response_len/max" in seg.columns else metric_for(seg, BY_ID["length"])
    if norm_name is None:
        return []
    rows = seg.rows_upto(WINDOW, ctx.upto)
    nv = seg.values_at_rows(norm_name, rows)
    ni = seg.ids_at(rows)
    common = np.intersect1d(ti, ni[np.isfinite(nv) & (nv > 0)])[-16:]
    if len(common) < 8:
        return []
    T = tv[np.searchsorted(ti, common)]
    N = nv[np.searchsorted(ni, common)]
    per_tok = _log(T / N)
    ok = np.isfinite(per_tok)
    if ok.sum() < 8:
        return []
    s0 = ctx.ranges.sigma0("rollout_time")
    ev = stats.grows(common[ok], per_tok[ok], delta=max(3 * s0, math.log(1.3)))
    if not ev:
        return []
    # Length must be flat: its own rise over the window under 15 %.
    li, lv = _finite(*ctx.series("length"))
    lw = lv[-ev["window"]:]
    if len(lw) >= 4 and abs(stats.theil_sen_rise(li[-len(lw):], lw)) > 0.15 * abs(float(np.median(lw))):
        return []
    w = ev["window"]
    return [Condition("rollout-slowdown", "critical", _onset(common[ok][-w:], per_tok[ok][-w:], s0),
                      f"rollout time per token up x{math.exp(ev['rise']):.1f} over {w} rollouts at flat length "
                      f"({T[-w]:.0f}s -> {T[-1]:.0f}s)",
                      {"signal": "rollout_time", "rollout_time": [_r(v) for v in T[-w:]],
                       "normaliser": norm_name, "factor": _r(math.exp(ev["rise"]))}, signal="rollout_time")]


def rule_no_signal(ctx: RuleContext) -> list[Condition]:
    seg = ctx.seg
    if groups_of(seg) is None:
        return []
    ids, frac = _finite(*ctx.series("zero_std"))
    if len(frac) < 4 or ids[-1] != ctx.upto:
        return []
    hit = stats.persistent_above(frac, 0.8 - 1e-9, 3, 4)
    if not hit and len(frac) >= 8 and stats.persistent_above(frac, 0.65 - 1e-9, 3, 4):
        ri, rv = _finite(*ctx.series("reward"))
        if len(rv) >= 8 and float(np.ptp(rv[-8:])) < 0.05:
            hit = True
    if not hit:
        return []
    g = groups_of(seg)
    wi, wrong = _finite(*ctx.series("zero_std", "wrong"))
    msg = f"{frac[-1] * g:.0f} of {g} groups score the same (no learning signal)"
    if len(wrong) and wrong[-1] * g >= 0.8 * g:
        msg += "; almost all all-wrong: systemic failure (timeouts, truncation, reward parser)?"
    return [Condition("no-signal", "critical", int(ids[-4]), msg,
                      {"signal": "zero_std", "fraction_last4": [_r(v) for v in frac[-4:]], "groups": g},
                      signal="zero_std")]


METRIC_RULES = (rule_non_finite, rule_gap, rule_grad_norm, rule_length_hacking, rule_off_policy,
                rule_rollout_slowdown, rule_no_signal, rule_out_of_range)


def _still_outside(ctx: RuleContext, rule: str, sig_id: str, log: bool) -> Condition | None:
    """An open trend/jump alert holds while 3 of the last 4 values stay above the band."""
    ids, vals = _finite(*ctx.series(sig_id))
    if len(vals) < 4 or ids[-1] != ctx.upto:
        return None
    hi = _hi_edge(ctx, sig_id, ids, log=False)
    if hi is None or not stats.persistent_above(vals, hi, 3, 4):
        return None
    sig = BY_ID[sig_id]
    return Condition(rule, "critical", None,
                     f"{sig.label} still above its healthy range ({sig.fmt.format(vals[-1])} > {sig.fmt.format(hi[-1])})",
                     {"signal": sig_id, "last4": [_r(v) for v in vals[-4:]], "range_hi": _r(hi[-1])}, signal=sig_id)


_LATCHED = {"gap-rising": ("gap", "kl"), "gap-jump": ("gap", "kl"), "grad-norm-rising": ("grad_norm",)}


def evaluate_metrics(seg: Segment, ranges: RangeSet, upto: int,
                     open_rules: frozenset[str] = frozenset()) -> list[Condition]:
    ctx = RuleContext(seg, ranges, upto, open_rules)
    out: list[Condition] = []
    for rule in METRIC_RULES:
        try:
            out.extend(rule(ctx))
        except (ValueError, FloatingPointError, IndexError, ZeroDivisionError):
            continue  # a degenerate window is not a verdict
    fired = {c.rule for c in out}
    for rule, sig_ids in _LATCHED.items():
        if rule in open_rules and rule not in fired:
            for sig_id in sig_ids:
                c = _still_outside(ctx, rule, sig_id, BY_ID[sig_id].log)
                if c is not None:
                    out.append(c)
                    break
    return out
