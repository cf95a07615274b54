"""Value rules: a non-finite loss, reward or signal; a five-step mean outside its healthy range."""

from __future__ import annotations

import numpy as np

from ...store.metric_store import Segment
from .. import stats
from ..ranges import RangeSet
from ..signals import (
    BY_ID,
    MEAN_WINDOW,
    groups_of,
    not_below,
    outside_band,
    signal_values,
)
from .base import (
    WINDOW,
    Condition,
    RuleContext,
    RuleInfo,
    _r,
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
    """The rule at one rollout: RangeTest over its window."""
    rows = ctx.seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(ctx.seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    return RangeTest(ctx.seg, ctx.ranges, rows, np.array([len(rows) - 1])).conditions(0)


CHUNK = 1 << 14  # positions per pass of the five-step means over a history
FEW = 64  # rollouts judged at once up to which every signal is read in one pass


class RangeTest:
    """rule_out_of_range over columns: each signal's five-step mean (its last five finite values
    in the rule's window, the newest at the judged rollout) against its healthy range, for many
    rollouts at once.  `rows` are the run's rows in rollout order (a window, or the whole run so
    far), `at` the positions in `rows` of the rollouts judged; the same arithmetic serves one
    rollout (live judging) and the whole history (judge/bulk.py), so both give one answer.

    A mean beyond the band the way a healthy run goes (reward above; answers or cut share
    shorter while reward holds) is no warning.  clipfrac is not judged at several updates per
    rollout (clipping is expected), zero_std not without a group count (a plain count has no
    range)."""

    def __init__(self, seg: Segment, rs: RangeSet, rows: np.ndarray, at: np.ndarray) -> None:
        self.seg, self.rs, self.at = seg, rs, at
        self.ids = seg.ids_at(rows)
        self.judged = self.ids[at]
        self.fires: dict[str, np.ndarray] = {}  # per signal the rule may judge: its sign at each of `at`
        self._parts: dict[str, tuple] = {}
        judged = []  # (signal, values, present at the judged rollouts, band there)
        for sig_id in BY_ID:
            if (sig_id == "clipfrac" and seg.steps_per_rollout > 1) or (
                sig_id == "zero_std" and groups_of(seg) is None
            ):
                continue
            b = rs.bounds_many(sig_id, self.judged)
            if b is None:
                continue
            v = signal_values(seg, BY_ID[sig_id], rows)
            present = np.isfinite(v[at])
            if present.any():  # (else the rule has nothing to weigh)
                judged.append((sig_id, v, present, b))
        if not judged:
            return
        if len(at) <= FEW:
            # a few rollouts (live judging): every signal's five-step means in one pass, the
            # columns one after another with a window's width of NaN between them so that no
            # window reaches into the next (the same values, the same sums)
            stride = len(rows) + WINDOW
            flat = np.full(stride * len(judged), np.nan)
            for i, (_, v, _, _) in enumerate(judged):
                flat[i * stride : i * stride + len(rows)] = v
            pos = (np.arange(len(judged))[:, None] * stride + at[None, :]).ravel()
            by_signal = stats.last_finite_mean(flat, pos, MEAN_WINDOW, WINDOW)[0].reshape(len(judged), len(at))
        else:  # (a whole history: signal by signal, a bounded number of positions at a time)
            by_signal = np.empty((len(judged), len(at)))
            for i, (_, v, _, _) in enumerate(judged):
                for a in range(0, len(at), CHUNK):
                    by_signal[i, a : a + CHUNK] = stats.last_finite_mean(v, at[a : a + CHUNK], MEAN_WINDOW, WINDOW)[0]
        reward_holds = np.zeros(len(at), bool)
        with np.errstate(invalid="ignore"):
            for i, (sig_id, _v, present, (lo, hi)) in enumerate(judged):
                if sig_id == "reward":  # (signals.reward_holds: its five-step mean not below its band)
                    reward_holds = present & not_below(by_signal[i], lo, hi)
        for i, (sig_id, v, present, (lo, hi)) in enumerate(judged):
            mean = by_signal[i]
            sig = BY_ID[sig_id]
            with np.errstate(invalid="ignore"):
                out = present & outside_band(sig, mean, lo, hi, reward_holds)
            self.fires[sig_id] = out
            if out.any():  # (what its conditions' words read: kept only where there are some)
                self._parts[sig_id] = (v, mean)

    def any_fires(self) -> np.ndarray:
        """Per judged rollout: some signal's sign is there."""
        out = np.zeros(len(self.at), bool)
        for f in self.fires.values():
            out |= f
        return out

    def conditions(self, j: int) -> list[Condition]:
        """The rule's conditions at the j-th judged rollout, in signal order."""
        out = []
        upto = int(self.judged[j])
        for sig_id, f in self.fires.items():
            if not f[j]:
                continue
            v, mean = self._parts[sig_id]
            m = float(mean[j])
            band = self.rs.bounds(sig_id, upto)  # (the values bounds_many gave, as the file has them)
            assert band is not None  # (a signal fires only against a band)
            lo, hi = band
            side = "above" if m > hi else "below"
            sig = BY_ID[sig_id]
            p = int(self.at[j])
            w = v[max(0, p - WINDOW + 1) : p + 1]  # (the rule's window: its last five finite values)
            window = [_r(float(x)) for x in w[np.isfinite(w)][-MEAN_WINDOW:]]
            out.append(
                Condition(
                    "out-of-range",
                    "warning",
                    upto,
                    f"{sig.label} five-step mean {sig.fmt.format(m)} is {side} its healthy range "
                    f"{sig.fmt.format(lo)}-{sig.fmt.format(hi)}",
                    {"signal": sig_id, "mean5": _r(m), "range": [lo, hi], "window": window},
                    signal=sig_id,
                )
            )
        return out
