"""Broken-run rules (ids are a contract, docs/contracts.md §5): each looks at a short window of the
current segment and says whether its sign is there now, with evidence.

Judging that transfers across setups (issue #10):

- A drift is judged against the run's own early baseline (the median of its first rollouts,
  on a log scale for heavy-tailed signals) as well as against a range when one applies.  The
  noise scale comes from the run itself: the robust spread of the window around its
  Theil-Sen line, floored per signal.
- A trend needs statistical evidence (one-sided Mann-Kendall) AND a size that matters over
  its window (Theil-Sen rise above both a minimum ratio and the rise's own noise, which
  shrinks as the window grows to 32 rollouts) AND a level that stayed up (3 of the last 4
  values beyond the baseline edge).  Slow drifts are caught on the long windows, fast ones
  on the short, noisy setups later than quiet ones.
- A value orders of magnitude beyond its band and its own baseline is an explosion: critical
  at once.
- When the manual's default ranges don't fit the run (judge/setup.py), their range warnings
  and range gates are dropped; ranges from a file still apply.

Each rule only reads the newest WINDOW rollouts plus the segment's first BASELINE_ROWS, so a
live update costs the same at 100 and at 100,000 rollouts.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.metric_store import Segment
from . import gates, stats
from .ranges import RangeSet
from .setup import FIRST as FIT_FIRST, FIT_FLAGS, FIT_SIGNALS, defaults_fit
from .signals import (
    BY_ID,
    EARLY_ROLLOUTS,
    MEAN_WINDOW,
    ZERO_STD_FRACTION,
    Signal,
    beyond_is_healthy,
    first_rows,
    groups_of,
    metric_for,
    reward_holds,
    signal_at_rows,
    signal_series,
    zero_std_parts,
)

WINDOW = 40  # rollouts a rule may look back
TREND_WINDOWS = (8, 16, 32)  # a trend must show on one of these (the longer, the slower the drift)
BASELINE_ROWS = 10  # the run's own baseline: its first rollouts
EXPLOSION = math.log(10.0)  # x10 beyond both the band and the own baseline: critical at once
K_LEVEL = 2.5  # level edge: baseline + max(rho, K_LEVEL x the noise of a 4-point mean)
K_RISE = 4.0  # rise over W rollouts must beat K_RISE x its own noise, sigma sqrt(12 / W)
ALPHA_SHORT, ALPHA_LONG = 0.01, 0.01  # one-sided Mann-Kendall level on 8 / on 16-32 rollouts
K_FALL = 2.5  # length-hacking: reward's fall over W must beat K_FALL x its noise
HACK_MIN = 16  # ... judged once 16 rollouts show the run's own reward noise
ALPHA_FALL = 0.05  # ... and reward's one-sided Mann-Kendall p must be below this
# noise floors in judging units (log units for log signals)
FLOOR = {"gap": 0.02, "kl": 0.03, "grad_norm": 0.08, "rollout_time": 0.03, "length": 0.02, "reward": 0.01}
# smallest drift that matters (log ratio): the gap can rise 10 % and plateau in a healthy run,
# rollout time x1.3 with heat, grad norm drifts x1.4 over a long run
RHO = {"gap": math.log(1.25), "kl": math.log(1.5), "grad_norm": math.log(2.5), "rollout_time": math.log(1.5)}
ABSURD = {"grad_norm": 1e4}  # never healthy, whatever the setup (pre-clip norm)
# skip rules that provably cannot fire at a rollout (judge/gates.py; same conditions, faster)
USE_GATES = os.environ.get("GRPO_TUI_NO_GATES", "") in ("", "0")


@dataclass(frozen=True, slots=True)
class RuleInfo:
    id: str
    severity: str  # default severity
    meaning: str
    check: str
    signals: tuple[str, ...]


RULES: dict[str, RuleInfo] = {
    r.id: r
    for r in (
        RuleInfo("no-steps", "critical", "engine or trainer did not start", "launcher/engine start-up lines", ()),
        RuleInfo("engine-down", "critical", "rollout engine died", "engine log, OOM, router health", ()),
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
        RuleInfo(
            "length-hacking",
            "critical",
            "model talks longer instead of better",
            "reward function, cut share",
            ("length", "reward"),
        ),
        RuleInfo(
            "off-policy",
            "critical",
            "samples did not come from the current weights",
            "update interval, async settings",
            ("clipfrac",),
        ),
        RuleInfo("rollout-slowdown", "critical", "engine or GPU is slower", "heat log, engine log", ("rollout_time",)),
        RuleInfo(
            "no-signal",
            "critical",
            "most groups give no learning signal",
            "data difficulty, reward parser",
            ("zero_std", "reward"),
        ),
        RuleInfo("non-finite", "critical", "the step is broken", "precision, batch, loss", ()),
        RuleInfo("crashed", "critical", "a process failed", "the first failing traceback, not the last", ()),
        RuleInfo("stalled", "critical", "hang, dead engine, NCCL timeout", "py-spy dump, engine health", ()),
        RuleInfo("out-of-range", "warning", "compare with your own seeds", "the signal's detail", ()),
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
}

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


@dataclass(slots=True)
class Condition:
    """A rule's sign seen at one evaluation."""

    rule: str
    severity: str
    start: int | None  # rollout where it started
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    signal: str | None = None  # out-of-range: which signal; else the main signal

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.rule, self.signal if self.rule == "out-of-range" else None)


def _r(x: float, nd: int = 4) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    r = float(f"{x:.{nd}g}")
    return r if math.isfinite(r) else float(x)  # (1.79751e308 rounds up past the largest float)


def ranges_for(seg: Segment, ranges: RangeSet, upto: int | None = None) -> RangeSet:
    """The ranges that judge this run: without the manual's defaults when they don't fit it
    (judge/setup.py `defaults_fit`); ranges from a file stay.  The engine's per-signal status
    should read its bands from here too, so a run of another setup is not shown in warning.

    `defaults_fit` reads only the launch flags and the first rollouts, so its answer is kept
    per segment under a key made of exactly those inputs (recomputed whenever one changes)."""
    rs = ranges.for_framework(seg.framework)
    if not rs.use_defaults:
        return rs
    fit, _, narrowed = _fit_memo(seg, rs, upto)
    return rs if fit or narrowed is None else narrowed


def defaults_fit_memo(seg: Segment, ranges: RangeSet, upto: int | None = None) -> tuple[bool, str]:
    """`defaults_fit` (fit, why) for a framework-adjusted RangeSet, from the segment's memo."""
    fit, why, _ = _fit_memo(seg, ranges, upto)
    return fit, why


def _fit_memo(seg: Segment, rs: RangeSet, upto: int | None) -> tuple[bool, str, RangeSet | None]:
    key = _fit_key(seg, rs, upto)
    memo = seg.judge_memo.get("fit")  # (one per segment: a thread owns its store)
    if memo is not None and memo[0] == key and memo[1] is rs:
        return memo[2], memo[3], memo[4]
    fit, why = defaults_fit(seg, rs, upto)
    narrowed = None if fit else RangeSet(rs.envelopes, rs.constant, rs.sigmas, rs.path, rs.meta, use_defaults=False)
    seg.judge_memo["fit"] = (key, rs, fit, why, narrowed)
    return fit, why, narrowed


def _fit_key(seg: Segment, rs: RangeSet, upto: int | None) -> tuple:
    """Everything `defaults_fit` reads: framework, the launch flags it names, which signals
    use a default range, and the raw values of its signals on the first rollouts."""
    rows = first_rows(seg, FIT_FIRST, upto)
    parts: list = [seg.framework, repr(tuple(seg.flags.get(k) for k in FIT_FLAGS)), rows.tobytes()]
    for sig_id in FIT_SIGNALS:
        if rs.source(sig_id) != "default":
            parts.append(None)
            continue
        name = metric_for(seg, BY_ID[sig_id])
        parts.append(name)
        if name is not None and len(rows):
            parts.append(seg.values_at_rows(name, rows).tobytes())
    return tuple(parts)


class RuleContext:
    """The window every rule reads, built once per evaluation."""

    def __init__(
        self,
        seg: Segment,
        ranges: RangeSet,
        upto: int,
        open_rules: frozenset[str] = frozenset(),
        resolved: RangeSet | None = None,
    ) -> None:
        self.seg = seg
        self.ranges = resolved if resolved is not None else ranges_for(seg, ranges, upto)
        self.upto = upto
        self.open_rules = open_rules  # alerts already raised: they hold while their sign stays
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._base_rows: np.ndarray | None = None
        self.only_signals: frozenset[str] | None = None  # out-of-range: the gate's short list
        # length-hacking: the windows whose Mann-Kendall tests may pass, at this rollout and one
        # back (judge/held.py); the others would be skipped by the rule's own loop anyway
        self.hacking_windows: tuple[frozenset, frozenset] | None = None
        # ... and its sign surely confirmed here (judge/held.py): the look one rollout back is known
        self.hacking_confirmed = False
        # gap, kl, grad_norm: per signal, the windows of drift_up whose Mann-Kendall test may pass
        # here (judge/bulk.py; an alert held open runs its rule at every rollout)
        self.drift_windows: dict[str, frozenset] | None = None
        # out-of-range: the signals whose (warning) alert is open and surely holds here
        # (judge/bulk.py, Answers.oor_held): a stand-in condition keeps it open
        self.oor_held: frozenset[str] | None = None

    def series(self, sig_id: str, part: str = "total") -> tuple[np.ndarray, np.ndarray]:
        key = f"{sig_id}:{part}"
        got = self._cache.get(key)
        if got is None:
            if sig_id == "zero_std":  # every part at once: one read of the counts
                rows = self.seg.rows_upto(WINDOW, self.upto)
                for p, series in zero_std_parts(self.seg, rows).items():
                    self._cache[f"zero_std:{p}"] = series
                return self._cache[key]
            got = self._cache[key] = signal_series(self.seg, BY_ID[sig_id], last=WINDOW, part=part, upto=self.upto)
        return got

    def baseline(self, sig_id: str, part: str = "total") -> tuple[np.ndarray, np.ndarray]:
        """(ids, values) of the segment's first BASELINE_ROWS rollouts (up to the judged one)."""
        key = f"base:{sig_id}:{part}"
        got = self._cache.get(key)
        if got is None:
            if self._base_rows is None:
                self._base_rows = first_rows(self.seg, BASELINE_ROWS, self.upto)
            got = self._cache[key] = signal_at_rows(self.seg, BY_ID[sig_id], self._base_rows, part)
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


def _log_series(ids: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, log values, values) of the positive finite points."""
    ids, vals = _finite(ids, vals)
    lv = _log(vals)
    ok = np.isfinite(lv)
    return ids[ok], lv[ok], vals[ok]


def _hi_edge(ctx: RuleContext, sig_id: str, ids: np.ndarray, log: bool) -> np.ndarray | None:
    """The band's top at each id (log units with `log`), None without a band.  Past the first
    rollouts a constant or default band is one value: that array is made once per range set,
    length and unit, and handed out read-only (an alert held open asks at every rollout)."""
    rs = ctx.ranges
    late = len(ids) and sig_id not in rs.envelopes and float(ids.min()) >= EARLY_ROLLOUTS
    if late:
        memo = vars(rs).setdefault("_hi_edge_memo", {})
        key = (sig_id, len(ids), log)
        if key in memo:
            return memo[key]
    b = rs.bounds_many(sig_id, ids)
    hi = None if b is None else (_log(b[1]) if log else b[1])
    if late:
        if hi is not None:
            hi.flags.writeable = False
        memo[key] = hi
    return hi


@dataclass(frozen=True, slots=True)
class Base:
    """The run's own early level of a signal, in judging units."""

    centre: float
    sigma: float
    n: int


_BASE_MEMO: dict[tuple, Base | None] = {}
_BASE_MEMO_MAX = 4096


def _own_base(ctx: RuleContext, sig_id: str, log: bool) -> Base | None:
    """Median and robust spread of the first rollouts (warm-up skipped when enough remain).
    Remembered by the values it is computed from (the same at every rollout once the first
    ones are in: a held alert's rule asks at each rollout)."""
    ids, vals = ctx.baseline(sig_id)
    key = (sig_id, log, FLOOR.get(sig_id, 0.0), ids.dtype.str, vals.dtype.str, ids.tobytes(), vals.tobytes())
    if key in _BASE_MEMO:
        return _BASE_MEMO[key]
    if len(_BASE_MEMO) >= _BASE_MEMO_MAX:
        _BASE_MEMO.clear()
    got = _BASE_MEMO[key] = _compute_base(ids, vals, sig_id, log)
    return got


def _compute_base(ids: np.ndarray, vals: np.ndarray, sig_id: str, log: bool) -> Base | None:
    if log:
        _, v, _ = _log_series(ids, vals)
    else:
        _, v = _finite(ids, vals)
    if len(v) < 3:
        return None
    if len(v) >= 8:
        v = v[2:]
    return Base(float(stats.median(v)), max(stats.robust_sigma(v), FLOOR.get(sig_id, 0.0)), len(v))


def _resid_sigma(ids: np.ndarray, v: np.ndarray) -> float:
    """Robust noise of a window around its Theil-Sen line (a trend is not noise)."""
    if len(v) < 4:
        return float("nan")
    slope = stats.theil_sen_slope(ids, v)
    if not math.isfinite(slope):
        return float("nan")
    r = v - slope * ids
    return stats.robust_sigma(r - stats.median(r))


def _diff_sigma(v: np.ndarray) -> float:
    """Robust noise from step-to-step changes: blind to trends and level shifts."""
    if len(v) < 5:
        return float("nan")
    return stats.robust_sigma(np.diff(v)) / math.sqrt(2.0)


def _noise(ids: np.ndarray, v: np.ndarray, sig_id: str, floor: float | None = None) -> float:
    """The run's own noise over the whole lookback: the larger of the spread around the
    Theil-Sen line and the step-to-step spread (a short window's MAD runs low)."""
    cands = [x for x in (_resid_sigma(ids, v), _diff_sigma(v)) if math.isfinite(x)]
    f = FLOOR.get(sig_id, 0.0) if floor is None else floor
    return max([f, *cands])


def _lazy(f):
    """f() computed once, on first call: the noise is only needed when a cheap gate passed."""
    box: list = []

    def get():
        if not box:
            box.append(f())
        return box[0]

    return get


def _fitted_ends(ids: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    """Theil-Sen line at the window's first and last rollout: numbers that go the trend's way."""
    slope = stats.theil_sen_slope(ids, v)
    icpt = float(stats.median(v - slope * ids))
    return icpt + slope * float(ids[0]), icpt + slope * float(ids[-1])


def drift_up(
    ids: np.ndarray,
    v: np.ndarray,
    base: float | None,
    sigma,
    rho: float,
    band_hi: np.ndarray | None = None,
    windows=None,
) -> dict | None:
    """ "Grows step after step" against the run's own baseline (and a band when there is one).

    Fires when (1) the mean of the last 4 values sits above the own baseline by
    max(rho, K_LEVEL x 0.6 sigma) and 3 of them by rho - or 3 of 4 sit above the band's top -
    and (2) on one window of 8/16/32 rollouts the one-sided Mann-Kendall test is significant
    (alpha 0.01) and the Theil-Sen rise beats both rho and K_RISE x its own noise
    (sigma sqrt(12 / W)).  `windows`: those of TREND_WINDOWS whose test may pass (judge/bulk.py
    knows the others fail it: they are skipped, the answer is the same); None: all.
    """
    n = len(v)
    if n < min(TREND_WINDOWS) or (windows is not None and not any(w <= n for w in windows)):
        return None  # (no window left whose test may pass: nothing can be found)
    edge = None
    level_ok = False
    if not (base is not None and float(np.mean(v[-4:])) > base + rho) and band_hi is None:
        return None  # cheap gate first: nothing above the size that matters
    if callable(sigma):
        sigma = sigma()  # the run's noise, computed only when a drift is possible
    if base is not None:
        # the mean of the last 4 (noise ~0.6 sigma with a slow drift's autocorrelation) above the
        # own edge, and 3 of those 4 above the baseline by the size that matters
        edge = base + max(rho, K_LEVEL * sigma * 0.6)
        level_ok = float(np.mean(v[-4:])) > edge and stats.persistent_above(v, base + rho, 3, 4)
    if not level_ok and band_hi is not None:
        level_ok = stats.persistent_above(v, band_hi, 3, 4) and (
            base is None or float(stats.median(v[-3:])) > base + rho
        )
    if not level_ok:
        return None
    for w in TREND_WINDOWS:
        if w > n or (windows is not None and w not in windows):
            continue  # (a window left out of `windows` fails the Mann-Kendall test below)
        ws, wv = ids[-w:].astype(float), v[-w:]
        p = stats.mk_p_up(wv)
        if p >= (ALPHA_SHORT if w <= 10 else ALPHA_LONG):
            continue
        rise = stats.theil_sen_rise(ws, wv)
        need = max(rho, K_RISE * sigma * math.sqrt(12.0 / w))
        if rise > need:
            return {
                "window": int(w),
                "p": p,
                "rise": rise,
                "need": need,
                "edge": edge,
                "base": base,
                "sigma": sigma,
                "first": float(wv[0]),
                "last": float(wv[-1]),
            }
    return None


def _jump_shaped(v: np.ndarray, rise: float | None = None) -> bool:
    """Most of the change happened in one step (a jump), not spread over many (a trend)."""
    if len(v) < 4:
        return False
    d = np.diff(v)
    total = rise if rise is not None else float(stats.median(v[-3:]) - stats.percentile(v, 20))
    if total <= 0:
        return False
    return float(np.max(d)) >= 0.5 * total


def _onset(ids: np.ndarray, v: np.ndarray, s0: float) -> int:
    """Where a rise began: just after the last point still at the window's early level."""
    half = max(2, len(v) // 2)
    level = float(stats.median(v[:half])) + 2 * s0
    below = np.flatnonzero(v <= level)
    if len(below) == 0:
        return int(ids[0])
    i = int(below[-1]) + 1
    return int(ids[min(i, len(ids) - 1)])


def _explosion(ctx: RuleContext, sig_id: str, ids: np.ndarray, lv: np.ndarray, base: Base | None) -> dict | None:
    """Last value x10 beyond both its band's top and the own baseline's upper edge."""
    if not len(lv) or ids[-1] != ctx.upto:
        return None
    tops = []
    hi = _hi_edge(ctx, sig_id, ids[-1:], log=True)
    if hi is not None and math.isfinite(float(hi[-1])):
        tops.append(("range top", float(hi[-1])))
    if base is not None:
        # the baseline's own top: median x3 or 3 sigma up (isolated healthy spikes reach x10-20)
        tops.append(("own baseline", base.centre + max(3 * base.sigma, math.log(3.0))))
    absurd = ABSURD.get(sig_id)
    last = float(lv[-1])
    beyond_all = bool(tops) and last > max(t for _, t in tops) + EXPLOSION
    if absurd is not None and last > math.log(absurd):
        tops.append(("never-healthy bound", math.log(absurd)))
    elif not beyond_all:
        return None
    return {"value": math.exp(last), "times": {name: _r(math.exp(last - t)) for name, t in tops}}


# -- rules -----------------------------------------------------------------------------------
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
        if ctx.oor_held is not None and sig_id in ctx.oor_held:
            out.append(Condition("out-of-range", "warning", None, "out-of-range holds", {}, signal=sig_id))
            continue  # its open warning holds (judge/bulk.py): only presence matters
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


def _reward_holds(ctx: RuleContext) -> bool:
    ids, vals = ctx.series("reward")
    return reward_holds(ids, vals, ctx.upto, ctx.ranges.bounds("reward", ctx.upto))


def _gap_like(ctx: RuleContext, sig_id: str) -> tuple[Condition | None, Condition | None]:
    ids, lv, vals = _log_series(*ctx.series(sig_id))
    if len(lv) < 1 or ids[-1] != ctx.upto:
        return None, None
    sig = BY_ID[sig_id]
    base = _own_base(ctx, sig_id, log=True)
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
        windows=ctx.drift_windows.get(sig_id) if ctx.drift_windows else None,
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
    base = _own_base(ctx, "grad_norm", log=True)
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
        windows=ctx.drift_windows.get("grad_norm") if ctx.drift_windows else None,
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


def _joint(ctx: RuleContext):
    """(ids, length, reward, cut share or None) on the rollouts that log both length and reward."""
    li, lv = _finite(*ctx.series("length"))
    ri, rv = _finite(*ctx.series("reward"))
    if len(lv) < HACK_MIN or len(rv) < HACK_MIN or li[-1] != ctx.upto:
        return None
    common = stats.intersect_sorted(li, ri)
    if len(common) < HACK_MIN:
        return None
    ti, tv = _finite(*ctx.series("truncated"))
    T = None
    if len(tv) and stats.all_in_sorted(common, ti):
        T = tv[np.searchsorted(ti, common)]
    return common, lv[np.searchsorted(li, common)], rv[np.searchsorted(ri, common)], T


def rule_length_hacking(ctx: RuleContext) -> list[Condition]:
    """Reward falls while length rises: both trends significant and large enough on one window.

    Length must rise (Mann-Kendall p < 0.05, Theil-Sen rise >= 15 % of its level and beyond its
    noise) while reward falls (p < 0.10, a fall >= 0.03 and beyond its noise, the window's last
    four below its first four).  A joint trend - not a best-earlier comparison, which noise
    alone beats - so answers that grow while reward rises slowly and noisily are healthy.
    With a band for reward (defaults that fit, or a ranges file), length rising while reward
    sits below its band also counts.
    """
    got = _joint(ctx)
    if got is None:
        return []
    ids, L, R, T = got
    # confirmed: the sign must show at this rollout and at the one before (noise makes one-offs)
    noise = _hacking_noise(ids, L, R, T)
    now, back = ctx.hacking_windows or (None, None)
    hit = _hacking_trend(ids, L, R, T, noise, now) or _hacking_below_band(ctx, ids, L, R)
    if (
        hit is not None
        and not ctx.hacking_confirmed
        and not (
            _hacking_trend(ids[:-1], L[:-1], R[:-1], None if T is None else T[:-1], noise, back)
            or _hacking_below_band(ctx, ids[:-1], L[:-1], R[:-1])
        )
    ):
        hit = None
    if hit is None:
        if "length-hacking" in ctx.open_rules:
            held = _hacking_holds(ctx, ids, L, R)
            return [held] if held else []
        return []
    w, ev = hit
    wi, wl, wr = ids[-w:].astype(float), L[-w:], R[-w:]
    r0, r1 = np.clip(_fitted_ends(wi, wr), wr.min(), wr.max())  # (a line may overshoot a reward of 0)
    l0, l1 = np.clip(_fitted_ends(wi, wl), wl.min(), wl.max())
    s_len = max(_resid_sigma(wi, wl), FLOOR["length"] * abs(float(stats.median(wl))))
    return [
        Condition(
            "length-hacking",
            "critical",
            _onset(ids[-w:], wl, s_len),
            f"reward falls ({r0:.3f} -> {r1:.3f}) while length rises ({l0:.0f} -> {l1:.0f}) over {w} rollouts",
            {
                "rollouts": [int(ids[-w]), int(ids[-1])],
                "length": [_r(v) for v in wl],
                "reward": [_r(v) for v in wr],
                **ev,
            },
            signal="length",
        )
    ]


def _hacking_noise(ids: np.ndarray, L: np.ndarray, R: np.ndarray, T: np.ndarray | None) -> dict:
    """The run's own noise of length, reward and cut share over the lookback, computed on demand."""
    fi = ids.astype(float)
    out = {
        "length": _lazy(lambda: _noise(fi, L, "length", FLOOR["length"] * abs(float(stats.median(L))))),
        "reward": _lazy(lambda: _noise(fi, R, "reward")),
    }
    if T is not None:
        out["truncated"] = _lazy(lambda: _noise(fi, T, "truncated", 0.005))
    return out


def _hacking_trend(
    ids: np.ndarray,
    L: np.ndarray,
    R: np.ndarray,
    T: np.ndarray | None = None,
    noise: dict | None = None,
    windows: frozenset | None = None,
):
    """(window, evidence) when length rises while reward falls on one window, else None.

    With the cut share (T) rising hard as well - answers running into the cap, which zeroes
    their reward - a smaller, still significant fall of reward is enough on 8-12 rollouts.
    `windows`: the ("cut" | "joint", w) whose Mann-Kendall tests may pass (None: all).
    """
    noise = noise or _hacking_noise(ids, L, R, T)
    if T is not None and len(T) == len(L):
        for w in (8, 12):
            if w > len(L):
                break
            if windows is not None and ("cut", w) not in windows:
                continue
            wi, wl, wr, wt = ids[-w:].astype(float), L[-w:], R[-w:], T[-w:]
            if stats.mk_p_up(wl) >= 0.05 or stats.mk_p_down(wr) >= 0.10 or stats.mk_p_up(wt) >= 0.01:
                continue
            scale = math.sqrt(12.0 / w)
            l_rise, t_rise = stats.theil_sen_rise(wi, wl), stats.theil_sen_rise(wi, wt)
            r_fall = -stats.theil_sen_rise(wi, wr)
            s_rew = noise["reward"]()
            if (
                l_rise >= max(0.15 * abs(float(stats.median(wl))), K_RISE * noise["length"]() * scale)
                and t_rise >= max(0.10, K_RISE * noise["truncated"]() * scale)
                and r_fall >= max(0.03, 1.5 * s_rew * scale)
                and float(stats.median(wr[-4:])) < float(stats.median(wr[:4]))
            ):
                return w, {
                    "test": "length and cut share rising, reward falling",
                    "length_rise": _r(l_rise),
                    "cut_share_rise": _r(t_rise),
                    "reward_fall": _r(r_fall),
                    "reward_noise": _r(s_rew),
                }
    for w in (8, 12, 16, 24, 32):
        if w > len(L):
            break
        if windows is not None and ("joint", w) not in windows:
            continue
        wi, wl, wr = ids[-w:].astype(float), L[-w:], R[-w:]
        p_rew = stats.mk_p_down(wr)
        if p_rew >= ALPHA_FALL:
            continue
        p_len = stats.mk_p_up(wl)
        if p_len >= 0.05:
            continue
        l_rise = stats.theil_sen_rise(wi, wl)
        r_fall = -stats.theil_sen_rise(wi, wr)
        if r_fall < 0.03 or l_rise < 0.15 * abs(float(stats.median(wl))):
            continue
        s_len = max(_resid_sigma(wi, wl), noise["length"]())
        s_rew = noise["reward"]()
        scale = math.sqrt(12.0 / w)
        if l_rise < max(0.15 * abs(float(stats.median(wl))), K_RISE * s_len * scale):
            continue
        if r_fall < max(0.03, K_FALL * s_rew * scale):
            continue
        if float(stats.median(wr[-4:])) >= float(stats.median(wr[:4])):
            continue
        return w, {
            "test": "joint trend",
            "length_mk_p": _r(p_len),
            "reward_mk_p_down": _r(p_rew),
            "length_rise": _r(l_rise),
            "reward_fall": _r(r_fall),
            "reward_noise": _r(s_rew),
        }
    return None


def _hacking_below_band(ctx: RuleContext, ids: np.ndarray, L: np.ndarray, R: np.ndarray):
    b = ctx.ranges.bounds_many("reward", ids[-4:])
    if b is None or not np.all(np.isfinite(b[0])):
        return None
    if not stats.persistent_below(R[-4:], b[0], 3, 4):
        return None
    w = 8
    wi, wl = ids[-w:].astype(float), L[-w:]
    if stats.mk_p_up(wl) >= 0.05:
        return None
    if stats.theil_sen_rise(wi, wl) < max(
        0.20 * abs(float(stats.median(wl))), K_RISE * _resid_sigma(wi, wl) * math.sqrt(12.0 / w)
    ):
        return None
    if float(stats.median(R[-4:])) >= float(stats.median(R[-w:][:4])):
        return None
    return w, {"test": "length rising, reward below its range", "reward_range_lo": _r(float(b[0][-1]))}


def _hacking_holds(ctx: RuleContext, ids: np.ndarray, L: np.ndarray, R: np.ndarray) -> Condition | None:
    """An open length-hacking alert holds while length stays up (or at the cap) and reward down."""
    lb, rb = _own_base(ctx, "length", log=False), _own_base(ctx, "reward", log=False)
    if lb is None or rb is None:
        return None
    ti, tv = _finite(*ctx.series("truncated"))
    at_cap = len(tv) >= 4 and stats.persistent_above(tv, 0.5, 3, 4)
    high = at_cap or float(stats.median(L[-4:])) >= 1.15 * lb.centre
    best = max(rb.centre, float(np.nanmax(stats.trailing_mean(R, MEAN_WINDOW))))
    s_rew = max(_resid_sigma(ids.astype(float), R), FLOOR["reward"])
    down = float(np.mean(R[-4:])) < best - max(0.03, 2 * s_rew)
    if not (high and down):
        return None
    return Condition(
        "length-hacking",
        "critical",
        None,
        f"length still high ({float(stats.median(L[-4:])):.0f}"
        + (f", cut share {float(tv[-1]):.2f}" if len(tv) else "")
        + f") and reward still down ({float(np.mean(R[-4:])):.3f} < {best:.3f})",
        {
            "length_last4": [_r(v) for v in L[-4:]],
            "reward_last4": [_r(v) for v in R[-4:]],
            "reward_best": _r(best),
            "cut_share_last4": [_r(v) for v in tv[-4:]],
        },
        signal="length",
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
    firsts = _first_step(ctx.seg, ids[-2:]) if ctx.seg.framework == "miles" else []
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


def _first_step(seg: Segment, rollouts: np.ndarray) -> list[tuple[int, float, float]]:
    """(rollout, clip fraction, ppo_kl) of the first optimizer step of each rollout."""
    out = []
    for r in rollouts.tolist():
        steps = [st for st in seg.steps_of(int(r)) if st.role == ""]
        if not steps:
            continue
        first = min(steps, key=lambda st: st.n)
        v = first.metrics.get("train/pg_clipfrac")
        kl = first.metrics.get("train/ppo_kl", 0.0)
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


def rule_no_signal(ctx: RuleContext) -> list[Condition]:
    """Most groups score the same: no advantage, no gradient.

    - reward exactly 0 (or 1) for the last 2 rollouts: every answer scored the same, so every
      group is zero-std - whether or not the group count is known;
    - >= 80 % of groups all-same in 3 of the last 4 rollouts (Miles warns from 50 %, axolotl
      calls 1.0 a red flag), or >= 65 % with a flat reward;
    - the all-same share jumped >= 0.3 above the run's own early level and stays >= 65 %.
    """
    ri, rv = _finite(*ctx.series("reward"))
    if len(rv) >= 2 and ri[-1] == ctx.upto:
        for target, word, why in (
            (0.0, "all wrong", "reward parser, timeouts, truncation?"),
            (1.0, "all right", "data far too easy, or a reward that always pays?"),
        ):
            if np.all(rv[-2:] == target):
                run = int(np.argmax(rv[::-1] != target)) if np.any(rv != target) else len(rv)
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
    if len(frac) < 4 or ids[-1] != ctx.upto:
        return []
    how = None
    if stats.persistent_above(frac, 0.8 - 1e-9, 3, 4):
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
    severity = "critical"
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
            int(ids[-4]),
            msg,
            {"signal": "zero_std", "fraction_last4": [_r(v) for v in frac[-4:]], "groups": g, "test": how},
            signal="zero_std",
        )
    ]


# Policy entropy, when the log has it (Miles logs 0.0 unless --observe-training-entropy).
ENTROPY = Signal("entropy", "entropy", ("train/entropy_loss", "actor/entropy", "entropy"), "", "", "", None, None)
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


def kl_ref_base(ids: np.ndarray, vals: np.ndarray) -> float | None:
    """A run's own early level of a series (KL to the reference, reward std): the median of its
    rollouts 2-11 (KL's first two sit at ~0: the policy starts as the reference), when it has five
    of them and it is above 0."""
    early = vals[(ids >= 2) & (ids < 12)]
    if len(early) < 5:
        return None
    base = float(stats.median(early))
    return base if base > 0 else None


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
    base = kl_ref_base(*_finite(*signal_at_rows(seg, KL_REF, first_rows(seg, 12, ctx.upto))))
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


# Signs that groups still disagree on reward (so the gradient should not be exactly 0).
REWARD_STD = Signal("reward_std", "reward std", ("reward_std", "rollout/raw_reward_std"), "", "", "", None, None)
ENTROPY_CEILING = 4.0  # nats a token: twice what a run that was declining reached (docs/health-signs.md §7)
REWARD_STD_RISE = 10.0  # x the run's own early reward std, in 3 of the last 4 rollouts


def rule_entropy_high(ctx: RuleContext) -> list[Condition]:
    """Entropy at or above ENTROPY_CEILING on the last 2 rollouts: near-random output (a healthy
    LLM policy stays far below; gibberish and uniform sampling sit far above)."""
    seg = ctx.seg
    if metric_for(seg, ENTROPY) is None:
        return []
    ids, vals = _finite(*signal_at_rows(seg, ENTROPY, seg.rows_upto(WINDOW, ctx.upto)))
    if len(vals) < 2 or ids[-1] != ctx.upto or not (vals[-1] >= ENTROPY_CEILING and vals[-2] >= ENTROPY_CEILING):
        return []
    msg = (
        f"entropy {vals[-1]:.2f} nats a token on the last 2 rollouts (ceiling {ENTROPY_CEILING:g}): near-random output"
    )
    return [Condition("entropy-high", "critical", int(ids[-2]), msg, {"entropy_last4": [_r(v) for v in vals[-4:]]})]


def rule_reward_variance(ctx: RuleContext) -> list[Condition]:
    """The reward std x10 its own early level (the median of rollouts 2-11) in 3 of the last 4
    rollouts.  Its collapse to 0 is no-signal's."""
    seg = ctx.seg
    if metric_for(seg, REWARD_STD) is None:
        return []
    ids, vals = _finite(*signal_at_rows(seg, REWARD_STD, seg.rows_upto(WINDOW, ctx.upto)))
    if len(vals) < 4 or ids[-1] != ctx.upto:
        return []
    base = kl_ref_base(*_finite(*signal_at_rows(seg, REWARD_STD, first_rows(seg, 12, ctx.upto))))
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
    moved = np.flatnonzero(vals != 0.0)
    run = len(vals) - 1 - int(moved[-1]) if len(moved) else len(vals)  # the zeros at the end
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


METRIC_RULES = (
    rule_non_finite,
    rule_gap,
    rule_grad_norm,
    rule_length_hacking,
    rule_off_policy,
    rule_rollout_slowdown,
    rule_no_signal,
    rule_entropy_collapse,
    rule_kl_ref,
    rule_entropy_high,
    rule_reward_variance,
    rule_no_update,
    rule_out_of_range,
)


def _still_outside(ctx: RuleContext, rule: str, sig_id: str) -> Condition | None:
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
    base = _own_base(ctx, sig_id, log=True)
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


_LATCHED = {"gap-rising": ("gap", "kl"), "gap-jump": ("gap", "kl"), "grad-norm-rising": ("grad_norm",)}


# the alerts whose rule holds on other tests while they are open (their gates must not skip)
_HOLDS = {
    "rule_gap": ("gap-rising", "gap-jump"),
    "rule_grad_norm": ("grad-norm-rising",),
    "rule_length_hacking": ("length-hacking",),
}
_HELD = frozenset(a for v in _HOLDS.values() for a in v)


def _may_fire(rule, ctx: RuleContext, win, pre: dict | None = None) -> bool:
    """A gate's answer (precomputed for the whole history by judge/bulk.py, else the scalar
    gate); any doubt (a gate that fails on an odd window) runs the rule."""
    try:
        if rule is rule_out_of_range:
            got = pre.get("oor") if pre else None
            ctx.only_signals = got if got is not None else gates.oor_signals(ctx, win())
            return bool(ctx.only_signals)
        name = rule.__name__
        got = pre.get(name) if pre else None
        if got is not None:
            return got or any(a in ctx.open_rules for a in _HOLDS.get(name, ()))
        gate = gates.GATES.get(name)
        return gate is None or bool(gate(ctx, win()))
    except Exception:
        ctx.only_signals = None
        return True


def held_standin(rule: str = "length-hacking", severity: str = "critical") -> Condition:
    """A condition of an open alert where only its presence matters: it keeps the alert open,
    and its message and evidence are never read (engine._refresh keeps those of the rollout
    that raised it unless the alert escalates: a critical alert cannot, and a warning's stand-in
    is used only where the rule surely returns a warning).  length-hacking's (judge/held.py), or
    one kept open for its rule (HELD_RULES)."""
    return Condition(rule, severity, None, f"{rule} holds", {}, signal=_STANDIN_SIGNAL[rule])


_STANDIN_SIGNAL = {
    "length-hacking": "length",
    "gap-rising": "gap",
    "gap-jump": "gap",
    "grad-norm-rising": "grad_norm",
    "no-signal": "zero_std",
    "off-policy": "clipfrac",
}


HACKING_HELD = "length-hacking held"
HELD_RULES = "held rules"
OOR_HELD = "out-of-range held"
HACKING_WINDOWS = "length-hacking windows"
DRIFT_WINDOWS = "drift windows"
HACKING_CONFIRMED = "length-hacking confirmed"
RESOLVED = "ranges"


def evaluate_metrics(
    seg: Segment, ranges: RangeSet, upto: int, open_rules: frozenset[str] = frozenset(), pre: dict | None = None
) -> list[Condition]:
    """Every metric rule's condition at rollout `upto`.  `pre`: the gates' answers for this
    rollout computed in bulk (judge/bulk.py); "quiet" = no rule can fire; HACKING_HELD: whether
    rule_length_hacking returns a condition while its (always critical) alert is open, where
    only that matters (judge/held.py) - a stand-in condition then keeps the alert open;
    OOR_HELD: RuleContext.oor_held;
    HELD_RULES: {rule name: the open alerts it holds, (alert, severity) each}, for rule_gap,
    rule_grad_norm, rule_no_signal and rule_off_policy where the bulk knows that every alert
    they could return is open and critical (or a warning it surely returns as a warning) and
    that each of those holds (judge/bulk.py, Answers.held_rules) - the rule is not run, a
    stand-in condition keeps each alert open;
    HACKING_WINDOWS, HACKING_CONFIRMED, DRIFT_WINDOWS: RuleContext.hacking_windows,
    .hacking_confirmed, .drift_windows; RESOLVED: ranges_for's answer here."""
    gated = USE_GATES and seg.ordered
    if (
        gated
        and pre
        and pre.get("quiet")
        and not (open_rules & _HELD)
        and not seg.nonfinite.get(seg.row_of.get(upto, -1))
    ):
        return []
    ctx = RuleContext(seg, ranges, upto, open_rules, pre.get(RESOLVED) if pre else None)
    if pre:
        ctx.hacking_windows = pre.get(HACKING_WINDOWS)
        ctx.hacking_confirmed = bool(pre.get(HACKING_CONFIRMED))
        ctx.drift_windows = pre.get(DRIFT_WINDOWS)
        ctx.oor_held = pre.get(OOR_HELD) if gated else None
    out: list[Condition] = []
    box: list = []

    def win():
        if not box:
            box.append(gates.Window(seg, upto, WINDOW))
        return box[0]

    held = pre.get(HACKING_HELD) if gated and pre and "length-hacking" in open_rules else None
    held_rules = pre.get(HELD_RULES) if gated and pre else None
    for rule in METRIC_RULES:
        if held is not None and rule is rule_length_hacking:
            if held:  # the open alert holds (judge/held.py); what it says is the raise's
                out.append(held_standin())
            continue
        if held_rules and rule.__name__ in held_rules:
            out.extend(held_standin(a, sev) for a, sev in held_rules[rule.__name__])  # they hold (judge/bulk.py)
            continue
        if gated and not _may_fire(rule, ctx, win, pre):
            continue  # it cannot fire here (an exact necessary condition, judge/gates.py)
        try:
            out.extend(rule(ctx))
        except (ValueError, FloatingPointError, IndexError, ZeroDivisionError):
            continue  # a degenerate window is not a verdict
    fired = {c.rule for c in out}
    if ("no-signal" in fired or "no-signal" in open_rules) and "length-hacking" not in open_rules:
        # reward collapsed with the groups: that explains a falling reward, not longer answers
        out = [c for c in out if c.rule != "length-hacking"]
    for rule_id, sig_ids in _LATCHED.items():
        if rule_id in open_rules and rule_id not in fired:
            for sig_id in sig_ids:
                c = _still_outside(ctx, rule_id, sig_id)
                if c is not None:
                    out.append(c)
                    break
    return out
