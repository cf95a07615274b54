"""The nine signals (ids are a contract, docs/contracts.md §4): what each reads and what healthy is.

Default ranges come from three seeds of Qwen3-0.6B on GSM8K (32 prompts x 8 answers,
1,024-token cap): one set for rollouts 0-9 and one for the whole 48-rollout run.  They are
wrong for other setups; `grpo-tui calibrate` builds a user's own.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from ..store.metric_store import Segment

EARLY_ROLLOUTS = 10  # rollouts 0-9 use the first range set
MEAN_WINDOW = 5  # a signal is judged against its band as the mean of its last five values


@dataclass(frozen=True, slots=True)
class Signal:
    id: str
    label: str
    aliases: tuple[str, ...]
    unit: str
    tells: str
    trend: str  # healthy trend, in words
    early: tuple[float, float] | None
    whole: tuple[float, float] | None
    log: bool = False  # judged on a log scale (heavy-tailed, positive)
    flat: bool = False  # expected flat (constant band) vs trending
    sigma0: float = 0.0  # default noise scale (log units when log=True)
    fmt: str = "{:.3g}"
    domain: tuple[float | None, float | None] = (None, None)  # values a healthy band may take
    # the side of its band a run may leave without a warning: "above" (reward better than the
    # seeds'), "below while reward holds" (shorter answers, fewer cut: what a healthy run does)
    healthy_beyond: str | None = None


SIGNALS: tuple[Signal, ...] = (
    Signal(
        "reward",
        "reward",
        ("rollout/raw_reward", "critic/score/mean", "reward", "reward/mean"),
        "",
        "mean raw reward of the rollout: the headline, but the slowest and noisiest signal",
        "rises, swings up to 0.21 a step",
        (0.53, 0.74),
        (0.53, 0.87),
        sigma0=0.05,
        fmt="{:.3f}",
        healthy_beyond="above",
    ),
    Signal(
        "length",
        "answer length",
        (
            "rollout/response_lengths",
            "rollout/response_len/mean",
            "response_length/mean",
            "completions/mean_length",
            "completion_length",
            "seq_len/mean",
            "response_length",
        ),
        "tok",
        "mean answer length in tokens: rising with falling reward is length hacking",
        "falls",
        (626, 787),
        (396, 787),
        sigma0=30.0,
        fmt="{:.0f}",
        domain=(0.0, None),
        healthy_beyond="below while reward holds",
    ),
    Signal(
        "truncated",
        "cut share",
        (
            "rollout/truncated",
            "rollout/truncated_ratio",
            "response_length/clip_ratio",
            "completions/clipped_ratio",
            "is_truncated/mean",
        ),
        "",
        "share of answers cut at the length cap: loops run to the cap",
        "falls with length",
        (0.19, 0.43),
        (0.02, 0.43),
        sigma0=0.04,
        fmt="{:.3f}",
        domain=(0.0, 1.0),
        healthy_beyond="below while reward holds",
    ),
    Signal(
        "gap",
        "log-prob gap",
        (
            "train/train_rollout_logprob_abs_diff",
            "sampling/sampling_logp_difference/mean",
            "rollout_corr/log_ppl_abs_diff",
        ),
        "",
        "mean |trainer - engine| log-prob: grows when trainer and engine hold different weights",
        "flat",
        (0.0141, 0.0164),
        (0.0136, 0.0164),
        log=True,
        flat=True,
        sigma0=0.05,
        fmt="{:.4f}",
        domain=(0.0, None),
    ),
    Signal(
        "kl",
        "KL to engine",
        ("train/train_rollout_kl", "rollout_corr/k3_kl", "mismatch_kl/mean", "vllm_kl"),
        "",
        "KL(engine || trainer) at sampled tokens: the same mismatch, another estimator",
        "flat",
        (0.00063, 0.00075),
        (0.00063, 0.00076),
        log=True,
        flat=True,
        sigma0=0.05,
        fmt="{:.2e}",
        domain=(0.0, None),
    ),
    Signal(
        "grad_norm",
        "gradient norm",
        ("train/grad_norm", "actor/grad_norm", "grad_norm", "optim/grad_norm", "actor_grad_norm"),
        "",
        "pre-clip gradient norm: growing step after step means the learning rate is too high",
        "one range, rare spikes",
        (0.35, 4.95),
        (0.35, 4.95),
        log=True,
        sigma0=0.35,
        fmt="{:.3g}",
        domain=(0.0, None),
    ),
    Signal(
        "clipfrac",
        "clip fraction",
        ("train/pg_clipfrac", "actor/pg_clipfrac", "clip_ratio/region_mean", "ppo_clip_ratio"),
        "",
        "share of tokens clipped by PPO: 0 with one update per rollout, else samples are stale",
        "0 with one update per rollout",
        (0.0, 0.0),
        (0.0, 0.0),
        flat=True,
        fmt="{:.3g}",
        domain=(0.0, 1.0),
    ),
    Signal(
        "rollout_time",
        "rollout time",
        ("perf/rollout_time", "timing_s/gen", "timing/generation"),
        "s",
        "wall seconds to generate the rollout: growing at flat length means a slower engine/GPU",
        "falls with length",
        None,
        None,
        log=True,
        sigma0=0.1,
        fmt="{:.1f}",
        domain=(0.0, None),
    ),
    Signal(
        "zero_std",
        "zero-std groups",
        ("rollout/zero_std/count_*",),
        "",
        "groups whose answers all got one reward (no learning signal); all-wrong and all-right apart",
        "most groups mixed",
        (0.0, 0.5),
        (0.0, 0.5),
        fmt="{:.2f}",
        domain=(0.0, 1.0),
    ),
)

BY_ID = {s.id: s for s in SIGNALS}
ZERO_STD_PREFIX = "rollout/zero_std/count_"
ZERO_STD_FRACTION = "frac_reward_zero_std"  # TRL logs the fraction itself
ALL_WRONG_KEYS = ("rollout/zero_std/count_0", "rollout/zero_std/count_0.0")
ALL_RIGHT_KEYS = ("rollout/zero_std/count_1", "rollout/zero_std/count_1.0")
# Newer Miles logs the shares themselves (miles#1034): too hard vs too easy.
ALL_ZERO_RATIO = "rollout/zero_std/all_zero_ratio"
ALL_ONE_RATIO = "rollout/zero_std/all_one_ratio"
ZERO_STD_RATIOS = "rollout/zero_std/all_*_ratio"


def default_range(sig: Signal, rollout: int) -> tuple[float, float] | None:
    """The manual's range for this rollout index: the 0-9 set first, then the whole-run set."""
    return sig.early if rollout < EARLY_ROLLOUTS else sig.whole


def metric_for(seg: Segment, sig: Signal) -> str | None:
    """Which logged name carries the signal in this segment (aliases differ by version)."""
    if sig.id == "zero_std":
        if _has_counts(seg):
            return ZERO_STD_PREFIX + "*"
        if ZERO_STD_FRACTION in seg.columns:
            return ZERO_STD_FRACTION
        return ZERO_STD_RATIOS if _has_ratios(seg) else None
    for name in sig.aliases:
        if name in seg.columns or name in seg.train_sum:
            return name
    return None


def _has_counts(seg: Segment) -> bool:
    return any(n.startswith(ZERO_STD_PREFIX) for n in seg.names)


def _has_ratios(seg: Segment) -> bool:
    return ALL_ZERO_RATIO in seg.columns or ALL_ONE_RATIO in seg.columns


def _zero_std_ratios(seg: Segment, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(all-same share, all-wrong share, all-right share) per row from the ratio keys."""
    wrong = seg.values_at_rows(ALL_ZERO_RATIO, rows)
    right = seg.values_at_rows(ALL_ONE_RATIO, rows)
    seen = ~np.isnan(wrong) | ~np.isnan(right)
    w, r = np.where(np.isnan(wrong), 0.0, wrong), np.where(np.isnan(right), 0.0, right)
    nan = np.full(len(rows), math.nan)
    return np.where(seen, w + r, nan), np.where(seen, w, nan), np.where(seen, r, nan)


def _zero_std_counts(seg: Segment, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(all-same groups, all-wrong, all-right) per row; a missing count key means 0."""
    names = [n for n in seg.names if n.startswith(ZERO_STD_PREFIX)]
    total = np.zeros(len(rows))
    wrong = np.zeros(len(rows))
    right = np.zeros(len(rows))
    seen = np.zeros(len(rows), dtype=bool)
    for name in names:
        v = seg.values_at_rows(name, rows)
        ok = ~np.isnan(v)
        seen |= ok
        v0 = np.where(ok, v, 0.0)
        total += v0
        if name in ALL_WRONG_KEYS:
            wrong += v0
        elif name in ALL_RIGHT_KEYS:
            right += v0
    # Rows with a rollout-manager record but no count key had no all-same group at all.
    has_perf = ~np.isnan(seg.values_at_rows("perf/rollout_time", rows)) | ~np.isnan(
        seg.values_at_rows("rollout/response_len/mean", rows)
    )
    valid = seen | (has_perf & bool(names))
    nan = np.full(len(rows), math.nan)
    return (np.where(valid, total, nan), np.where(valid, wrong, nan), np.where(valid, right, nan))


def groups_of(seg: Segment) -> int | None:
    """Prompt groups per rollout: the launch flag, else derived from a percentage key."""
    if (ZERO_STD_FRACTION in seg.columns or _has_ratios(seg)) and not _has_counts(seg):
        return 1  # TRL, newer Miles: the logged value is already a share of groups
    g = seg.groups
    if g:
        return g
    for count_keys, pct in (
        (ALL_WRONG_KEYS, "rollout/zero_std/all_zero_percentage"),
        (ALL_RIGHT_KEYS, "rollout/zero_std/all_one_percentage"),
    ):
        p = seg.columns.get(pct)
        if p is None:
            continue
        for key in count_keys:
            c = seg.columns.get(key)
            if c is None:
                continue
            n = len(seg.ids)
            lo = max(0, n - 64)  # the newest rows suffice (and keep live updates O(1))
            pv, cv = p.data[lo:n], c.data[lo:n]
            ok = (pv > 0) & np.isfinite(cv) & np.isfinite(pv)  # (inf is no count)
            if ok.any():
                i = int(np.flatnonzero(ok)[-1])
                return int(round(cv[i] / pv[i]))
    return _groups_from_exact_reward(seg)


def _groups_from_exact_reward(seg: Segment) -> int | None:
    """A rollout whose mean reward is exactly 0 (or 1) had every group all wrong (all right):
    its count_0 (count_1) is the number of groups."""
    n = len(seg.ids)
    lo = max(0, n - 64)
    for name in BY_ID["reward"].aliases:
        col = seg.columns.get(name)
        if col is None:
            continue
        rv = col.data[lo:n]
        for keys, target in ((ALL_WRONG_KEYS, 0.0), (ALL_RIGHT_KEYS, 1.0)):
            for key in keys:
                c = seg.columns.get(key)
                if c is None:
                    continue
                cv = c.data[lo:n]
                ok = (rv == target) & (cv > 0) & np.isfinite(cv)  # (a count of inf is no group count)
                if ok.any():
                    return int(round(cv[int(np.flatnonzero(ok)[-1])]))
    return None


def beyond_is_healthy(sig: Signal, above, reward_holds):
    """Whether a five-step mean beyond its band (`above` it, else below) is the direction a
    healthy run goes (no warning): reward above; answer length or cut share below while reward
    holds.  Element by element on arrays."""
    want = sig.healthy_beyond
    if want == "above":
        return np.asarray(above, bool)
    if want == "below while reward holds":
        return np.logical_and(np.logical_not(above), reward_holds)
    return np.zeros(np.shape(above), bool)


def outside_band(sig: Signal, mean, lo, hi, reward_holds):
    """A five-step mean outside its band (past an edge by more than the band's tolerance), unless
    beyond it the way a healthy run goes (beyond_is_healthy; `reward_holds` a value, or a function
    asked only then).  Element by element on arrays: rule_out_of_range's sign and the badge's."""
    tol = band_tol(lo, hi)
    out = (mean > hi + tol) | (mean < lo - tol)
    if sig.healthy_beyond and np.any(out):
        holds = reward_holds() if callable(reward_holds) else reward_holds
        out = out & ~beyond_is_healthy(sig, mean > hi, holds)
    return out


def band_tol(lo, hi):
    """How far a five-step mean may pass a band's edge before it is outside: 1e-6 for a band
    of one value (a count logged as exactly that), else 0."""
    return np.where(np.asarray(lo) == np.asarray(hi), 1e-6, 0.0)


def not_below(mean, lo, hi):
    """A five-step mean not below its band (with the band's tolerance): where reward holds.
    Element by element on arrays."""
    return mean >= lo - band_tol(lo, hi)


def reward_holds(ids: np.ndarray, vals: np.ndarray, upto: int, band: tuple[float, float] | None) -> bool:
    """Whether reward holds at rollout `upto`: its five-step mean (finite values, the last one at
    `upto`) is not below its band.  Without a band or a value there it does not (the warning stays)."""
    fin = np.isfinite(vals)
    ids, vals = ids[fin], vals[fin]
    if band is None or len(vals) == 0 or ids[-1] != upto:
        return False
    return bool(not_below(float(np.mean(vals[-MEAN_WINDOW:])), *band))


def signal_series(
    seg: Segment, sig: Signal, last: int | None = None, part: str = "total", upto: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(rollout ids, values) of one signal, ending at rollout `upto` (default: the newest).

    zero_std is a fraction of groups when the group count is known, else a plain count.
    """
    return signal_at_rows(seg, sig, seg.rows_upto(last, upto), part)


def first_rows(seg: Segment, n: int, upto: int | None = None) -> np.ndarray:
    """Rows of the segment's first `n` rollouts (by id) up to rollout `upto`: its own baseline."""
    if not seg.ids:
        return np.empty(0, np.int64)
    if seg.ordered:
        end = len(seg.ids) if upto is None else bisect.bisect_right(seg.ids, upto)
        return np.arange(0, min(n, end))
    return seg.rows_upto(None, upto)[:n]


def signal_at_rows(seg: Segment, sig: Signal, rows: np.ndarray, part: str = "total") -> tuple[np.ndarray, np.ndarray]:
    """(rollout ids, values) of one signal at the given rows (sorted by id)."""
    name = _value_name(seg, sig)
    if name is not None:
        if not len(rows):
            return np.empty(0, np.int64), np.empty(0)
        vals = seg.values_at_rows(name, rows)
        ids = seg.ids_at(rows)
        keep = ~np.isnan(vals) | seg._nonfinite_mask(name, rows)
        return ids[keep], vals[keep]
    if sig.id != "zero_std":
        return np.empty(0, np.int64), np.empty(0)
    return _zero_std_count_parts(seg, rows)[part]


def signal_values(seg: Segment, sig: Signal, rows: np.ndarray) -> np.ndarray:
    """The signal's value at each of these rows, NaN where it has none (signal_at_rows' points
    and no others are finite)."""
    name = _value_name(seg, sig)
    if name is not None:
        return seg.values_at_rows(name, rows)
    if sig.id != "zero_std" or not len(rows):
        return np.full(len(rows), math.nan)
    return _zero_std_count_values(seg, rows)[0]


def zero_std_values(seg: Segment, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """signal_values of zero_std's three parts (all-same, all-wrong, all-right) at these rows; a
    logged share (TRL) is the one series of every part."""
    if metric_for(seg, BY_ID["zero_std"]) == ZERO_STD_FRACTION:
        v = seg.values_at_rows(ZERO_STD_FRACTION, rows)
        return v, v, v
    if not len(rows):
        empty = np.empty(0)
        return empty, empty, empty
    total, wrong, right = _zero_std_count_values(seg, rows)
    return total, wrong, right


def _value_name(seg: Segment, sig: Signal) -> str | None:
    """The one metric that carries the signal's values (zero_std: only a logged share; counts
    and ratios are added up by _zero_std_count_values)."""
    name = metric_for(seg, sig)
    if sig.id == "zero_std" and name != ZERO_STD_FRACTION:
        return None
    return name


def zero_std_parts(seg: Segment, rows: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """signal_at_rows(seg, zero_std, rows, part) for each part (total, wrong, right) at once:
    the counts are read once for all three (rule_no_signal reads every part where it runs)."""
    sig = BY_ID["zero_std"]
    if metric_for(seg, sig) == ZERO_STD_FRACTION:
        got = signal_at_rows(seg, sig, rows)  # (a logged share: one series for every part)
        return {"total": got, "wrong": got, "right": got}
    return _zero_std_count_parts(seg, rows)


def _zero_std_count_parts(seg: Segment, rows: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    if not len(rows):
        empty = np.empty(0, np.int64), np.empty(0)
        return {"total": empty, "wrong": empty, "right": empty}
    ids = seg.ids_at(rows)
    out = {}
    for part, vals in zip(("total", "wrong", "right"), _zero_std_count_values(seg, rows)):
        keep = ~np.isnan(vals)
        out[part] = ids[keep], vals[keep]
    return out


def _zero_std_count_values(seg: Segment, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """(all-same, all-wrong, all-right) per row from the count or ratio keys: shares of the
    groups where their number is known, else counts (NaN: no point)."""
    if not _has_counts(seg) and _has_ratios(seg):
        return _zero_std_ratios(seg, rows)
    total, wrong, right = _zero_std_counts(seg, rows)
    g = groups_of(seg)
    if g:
        return total / g, wrong / g, right / g
    return total, wrong, right


def framework(seg: Segment) -> str:
    """ "miles" (Miles/slime), else one of lines.formats.OTHER_FRAMEWORKS: Miles defaults only hold for Miles/slime runs."""
    return seg.framework
