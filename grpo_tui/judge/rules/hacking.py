"""Length-hacking: answers grow while reward falls (or stalls below its band)."""

from __future__ import annotations

import math

import numpy as np

from ...store.metric_store import Segment
from .. import stats
from ..signals import (
    BY_ID,
    MEAN_WINDOW,
    signal_values,
)
from .base import (
    ALPHA_FALL,
    BASELINE_ROWS,
    FLOOR,
    HACK_MIN,
    K_FALL,
    K_RISE,
    WINDOW,
    Base,
    Condition,
    RuleContext,
    RuleInfo,
    _finite,
    _fitted_ends,
    _lazy,
    _noise,
    _onset,
    _r,
    _resid_sigma,
    own_base,
)

INFO = (
    RuleInfo(
        "length-hacking",
        "critical",
        "model talks longer instead of better",
        "reward function, cut share",
        ("length", "reward"),
    ),
)


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
    if "length-hacking" in ctx.open_rules:
        # held while length stays up and reward down, whatever the trend does (its only sign then)
        held = _hacking_holds(ctx)
        if held is not None:
            return [held]
    ids, L, R, T = got
    # confirmed: the sign must show at this rollout and at the one before (noise makes one-offs)
    noise = _hacking_noise(ids, L, R, T)
    hit = _hacking_trend(ids, L, R, T, noise) or _hacking_below_band(ctx, ids, L, R)
    if hit is not None and not (
        _hacking_trend(ids[:-1], L[:-1], R[:-1], None if T is None else T[:-1], noise)
        or _hacking_below_band(ctx, ids[:-1], L[:-1], R[:-1])
    ):
        hit = None
    if hit is not None and "length-hacking" not in ctx.open_rules and _growth_dip(ctx, int(ids[-hit[0]])):
        hit = None
    if hit is None:
        return []  # (an open alert: it does not hold either, above)
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
):
    """(window, evidence) when length rises while reward falls on one window, else None.

    With the cut share (T) rising hard as well - answers running into the cap, which zeroes
    their reward - a smaller, still significant fall of reward is enough on 8-12 rollouts.
    """
    noise = noise or _hacking_noise(ids, L, R, T)
    if T is not None and len(T) == len(L):
        for w in (8, 12):
            if w > len(L):
                break
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


def _hacking_holds(ctx: RuleContext) -> Condition | None:
    """The latch at one rollout: HoldTest over its window."""
    rows = ctx.seg.rows_upto(WINDOW, ctx.upto)
    lb, rb = own_base(ctx, "length", log=False), own_base(ctx, "reward", log=False)
    return HoldTest(ctx.seg, rows, lb, rb).condition(len(rows) - 1)


class HoldTest:
    """An open length-hacking alert holds while length stays up (or at the cap) and reward
    down: the rule's latch over columns (`rows`: the run's rows in rollout order, a window or
    the whole run so far; `lb`, `rb`: the run's own baselines of length and reward), asked at
    many positions at once (`holds`).  Its window is the rule's: the rollouts of the last WINDOW
    that log both length and reward, the newest at the judged rollout, at least HACK_MIN.

    - high: the median of the last 4 lengths >= 1.15 x its baseline, or the cut share above
      0.5 in 3 of its last 4;
    - down: the mean of the last 4 rewards below the best (its baseline, or the best five-step
      mean of the window) by max(0.03, 2 x reward's spread around its Theil-Sen line)."""

    def __init__(self, seg: Segment, rows: np.ndarray, lb: Base | None, rb: Base | None) -> None:
        self.lb, self.rb = lb, rb
        self.ids = seg.ids_at(rows).astype(float)
        self.L = signal_values(seg, BY_ID["length"], rows)
        self.R = signal_values(seg, BY_ID["reward"], rows)
        self.T = signal_values(seg, BY_ID["truncated"], rows)
        self.both = np.where(np.isfinite(self.L) & np.isfinite(self.R), 0.0, np.nan)

    def holds(self, at: np.ndarray) -> np.ndarray:
        """Per position of `at`: the latch holds there."""
        return self._test(at)[0]

    def _test(self, at: np.ndarray) -> tuple:
        n = len(at)
        out = np.zeros(n, bool)
        med4, mean4, best = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        lb, rb, L, R, T = self.lb, self.rb, self.L, self.R, self.T
        jidx, m = stats.last_finite(self.both, at, WINDOW, WINDOW)
        tidx, n_cut = stats.last_finite(T, at, 4, WINDOW)
        if not n or lb is None or rb is None:
            return out, jidx, m, tidx, med4, mean4, best
        _, n_len = stats.last_finite(L, at, HACK_MIN, WINDOW)
        _, n_rew = stats.last_finite(R, at, HACK_MIN, WINDOW)
        ok = np.isfinite(L[at]) & (n_len == HACK_MIN) & (n_rew == HACK_MIN) & (m >= HACK_MIN)
        with np.errstate(invalid="ignore"):
            at_cap = (n_cut >= 4) & (((T[np.maximum(tidx, 0)] - 0.5) > 0).sum(axis=1) >= 3)
        for size in np.unique(m[ok]).tolist():
            sel = np.flatnonzero(ok & (m == size))
            for a in range(0, len(sel), CHUNK):  # (bounded memory: up to 780 pairs a rollout)
                part = sel[a : a + CHUNK]
                J = jidx[part, WINDOW - size :]
                Lw, Rw = L[J], R[J]
                med4[part] = stats.rows_median(Lw[:, -4:])
                mean4[part] = Rw[:, -4:].mean(axis=1)
                best[part] = np.maximum(rb.centre, stats.rows_trailing_best(Rw, MEAN_WINDOW))
                s_rew = np.maximum(stats.rows_resid_sigma(self.ids[J], Rw), FLOOR["reward"])
                high = at_cap[part] | (med4[part] >= 1.15 * lb.centre)
                out[part] = high & (mean4[part] < best[part] - np.fmax(0.03, 2 * s_rew))
        return out, jidx, m, tidx, med4, mean4, best

    def condition(self, pos: int) -> Condition | None:
        """The latch's condition at position `pos` of the rows (None: it does not hold)."""
        got, jidx, m, tidx, med4, mean4, best = self._test(np.array([pos]))
        if not got[0]:
            return None
        J = jidx[0, WINDOW - int(m[0]) :]
        L4, R4 = self.L[J][-4:], self.R[J][-4:]
        tv = self.T[tidx[0][tidx[0] >= 0]]
        return Condition(
            "length-hacking",
            "critical",
            None,
            f"length still high ({float(med4[0]):.0f}"
            + (f", cut share {float(tv[-1]):.2f}" if len(tv) else "")
            + f") and reward still down ({float(mean4[0]):.3f} < {float(best[0]):.3f})",
            {
                "length_last4": [_r(v) for v in L4],
                "reward_last4": [_r(v) for v in R4],
                "reward_best": _r(float(best[0])),
                "cut_share_last4": [_r(v) for v in tv],
            },
            signal="length",
        )


CHUNK = 256  # rollouts per batch of HoldTest (a 780-pair matrix each)


GROWTH_LOOKBACK = 120  # rollouts a reward dip is weighed against: the run's long-run course
GROWTH_MIN = 8  # rollouts before the sign's window that must show length rising, reward not falling
FIRST_DIP = 24  # rollouts a run's first reward dip may last (long-reasoning runs dip ~0.1 for ~24)


def _growth_dip(ctx: RuleContext, start: int) -> bool:
    """A reward dip inside reasoning growth, not length-hacking (yet).

    Over the look back's rollouts before the sign's window (ids < `start`), length rose
    (Mann-Kendall p < 0.05 on log length) and reward did not fall (p_down >= 0.10), and length
    still follows that trend: the median of its last four log values is within K_RISE noise
    sigmas of the trend line carried forward.  Such a dip becomes length-hacking only once it
    has both outlasted the run's earlier dips (_outlasts) and given back the look back's gains
    (the five-step mean of reward at or below the median of its first BASELINE_ROWS).
    Hacking that grows length faster than the run did leaves the line and is called as before.
    """
    li, lv = _finite(*ctx.series("length", last=GROWTH_LOOKBACK))
    ri, rv = _finite(*ctx.series("reward", last=GROWTH_LOOKBACK))
    ids = stats.intersect_sorted(li, ri)
    L, R = lv[np.searchsorted(li, ids)], rv[np.searchsorted(ri, ids)]
    b = ids < start
    if int(b.sum()) < GROWTH_MIN:
        return False
    if not np.all(L > 0):
        return False
    logL = np.log(L)  # (growth is judged in ratios: the noise of a length grows with it)
    fb, Lb, Rb = ids[b].astype(float), logL[b], R[b]
    if stats.mk_p_up(Lb) >= 0.05 or stats.mk_p_down(Rb) < 0.10:
        return False
    slope = stats.theil_sen_slope(fb, Lb)
    centre = float(stats.median(Lb - slope * fb))
    s_len = _noise(fb, Lb, "length", FLOOR["length"])
    above = float(stats.median(logL[-4:] - (centre + slope * ids[-4:].astype(float))))
    if not above <= K_RISE * s_len:
        return False
    # turned: the dip has given back the run's gains over the look back
    turned = float(np.mean(R[-MEAN_WINDOW:])) <= float(stats.median(R[:BASELINE_ROWS]))
    return not (turned and _outlasts(R, _noise(fb, Rb, "reward")))


def _outlasts(R: np.ndarray, s_rew: float) -> bool:
    """The dip now (five-step mean of reward below its best so far by more than its noise) has
    lasted longer than any earlier dip in the look back, and than FIRST_DIP rollouts."""
    m = stats.trailing_mean(R, MEAN_WINDOW)
    low = m < np.maximum.accumulate(np.where(np.isfinite(m), m, -np.inf)) - max(0.02, s_rew)
    if not low[-1]:
        return False
    edges = np.flatnonzero(np.diff(np.concatenate([[0], low.astype(np.int8), [0]])))
    spans = edges[1::2] - edges[0::2]
    return int(spans[-1]) > max(FIRST_DIP, int(spans[:-1].max(initial=0)))
