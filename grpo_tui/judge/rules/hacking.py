"""Length-hacking: answers grow while reward falls (or stalls below its band)."""

from __future__ import annotations

import math
from collections.abc import Callable

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
    _noise,
    _onset,
    _r,
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


def rule_length_hacking(ctx: RuleContext) -> list[Condition]:
    """Reward falls while length rises: both trends significant and large enough on one window.

    Length must rise (Mann-Kendall p < 0.05, Theil-Sen rise >= 15 % of its level and beyond its
    noise) while reward falls (p < 0.10, a fall >= 0.03 and beyond its noise, the window's last
    four below its first four).  A joint trend - not a best-earlier comparison, which noise
    alone beats - so answers that grow while reward rises slowly and noisily are healthy.
    With a band for reward (defaults that fit, or a ranges file), length rising while reward
    sits below its band also counts.  The tests are HackingTest's, asked at this rollout.
    """
    rows = ctx.seg.rows_upto(WINDOW, ctx.upto)
    is_open = "length-hacking" in ctx.open_rules
    lb = rb = None
    if is_open:  # held while length stays up and reward down, whatever the trend does
        lb, rb = own_base(ctx, "length", log=False), own_base(ctx, "reward", log=False)
    test = HackingTest(ctx.seg, rows, ctx.ranges, lb, rb)
    if is_open:
        held = test.latch(len(rows) - 1)
        if held is not None:
            return [held]
    got = test.sign(len(rows) - 1)
    if got is None:
        return []  # (an open alert: it does not hold either, above)
    ids, L, R, w, ev = got
    if not is_open and _growth_dip(ctx, int(ids[-w])):
        return []
    wi, wl, wr = ids[-w:], L[-w:], R[-w:]
    r0, r1 = np.clip(_fitted_ends(wi, wr), wr.min(), wr.max())  # (a line may overshoot a reward of 0)
    l0, l1 = np.clip(_fitted_ends(wi, wl), wl.min(), wl.max())
    s_len = max(stats.resid_sigma(wi, wl), FLOOR["length"] * abs(float(stats.median(wl))))
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


_NONE = np.empty(0)
_NONE.flags.writeable = False


class _Windows:
    """The sign's inputs for a batch of positions whose joint windows have the same size m:
    matrices (one row per position) of rollout ids, length, reward and (when every rollout of
    each window logs it) cut share; each window statistic computed once per row, on first use,
    for the rows that reach it (`get`)."""

    def __init__(self, test: HackingTest, J: np.ndarray, cut: bool) -> None:
        self.s, self.L, self.R = test.ids[J], test.L[J], test.R[J]
        self.T = test.T[J] if cut else None
        self.lo = test.reward_lo()[J]
        self.m = J.shape[1]
        self.memo: dict = {}

    def get(self, key: tuple, idx: np.ndarray, compute) -> np.ndarray:
        """compute(rows) at rows idx of the batch, each row computed once."""
        if not len(idx):
            return _NONE
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = (np.full(len(self.s), np.nan), np.zeros(len(self.s), bool))
        vals, have = got
        todo = idx[~have[idx]]
        if len(todo):
            vals[todo] = compute(todo)
            have[todo] = True
        return vals[idx]

    def col(self, name: str) -> np.ndarray:
        return getattr(self, name)

    def p_up(self, name: str, idx, a: int, b: int, down: bool = False) -> np.ndarray:
        """stats.mk_p_up (mk_p_down) of window columns a..b-1."""
        v = self.col(name)
        return self.get(("p", name, a, b, down), idx, lambda r: stats.rows_mk_p_up(-v[r, a:b] if down else v[r, a:b]))

    def p_below(self, name: str, idx, a: int, b: int, alpha: float, down: bool = False) -> np.ndarray:
        """p_up(...) < alpha, each p computed only where it can be below (stats.rows_mk_p_below)."""
        v = self.col(name)
        got = self.get(
            ("p<", name, a, b, down, alpha),
            idx,
            lambda r: stats.rows_mk_p_below(-v[r, a:b] if down else v[r, a:b], alpha),
        )
        return got == 1

    def rise(self, name: str, idx, a: int, b: int) -> np.ndarray:
        """stats.theil_sen_rise of window columns a..b-1."""
        v = self.col(name)
        return self.get(("rise", name, a, b), idx, lambda r: stats.rows_ts_rise(self.s[r, a:b], v[r, a:b]))

    def med(self, name: str, idx, a: int, b: int) -> np.ndarray:
        v = self.col(name)
        return self.get(("med", name, a, b), idx, lambda r: stats.rows_median(v[r, a:b]))

    def resid(self, idx, a: int, b: int) -> np.ndarray:
        """stats.resid_sigma of length on window columns a..b-1."""
        return self.get(("resid", a, b), idx, lambda r: stats.rows_resid_sigma(self.s[r, a:b], self.L[r, a:b]))

    def noise(self, name: str, idx) -> np.ndarray:
        """stats.noise over the whole window (the rule's lookback): length's floor 2 % of its
        median, the cut share's 0.005, reward's its own."""

        def compute(r: np.ndarray) -> np.ndarray:
            v = self.col(name)[r]
            if name == "L":
                floor = FLOOR["length"] * np.abs(self.med("L", r, 0, self.m))
            else:
                floor = np.full(len(r), 0.005 if name == "T" else FLOOR["reward"])
            return stats.rows_noise(self.s[r], v, floor)

        return self.get(("noise", name), idx, compute)


def _cut_test(x: _Windows, idx: np.ndarray, n: int, w: int) -> tuple[np.ndarray, dict]:
    """The sign's first test on window columns n-w..n-1: length and cut share rising hard while
    reward falls (answers running into the cap, which zeroes their reward).  Each step runs on
    the rows the ones before left: the trends' significance, their sizes, then their noise."""
    a = n - w
    ok = x.p_below("L", idx, a, n, 0.05)
    ok[ok] = x.p_below("R", idx[ok], a, n, 0.10, down=True)
    ok[ok] = x.p_below("T", idx[ok], a, n, 0.01)
    r = idx[ok]
    if len(r):
        l_med = 0.15 * np.abs(x.med("L", r, a, n))
        ok[ok] = (
            (x.rise("L", r, a, n) >= l_med)
            & (x.rise("T", r, a, n) >= 0.10)
            & (-x.rise("R", r, a, n) >= 0.03)
            & (x.med("R", r, n - 4, n) < x.med("R", r, a, a + 4))
        )  # (x >= max(a, b) needs x >= a: the sizes before the noise)
        r = idx[ok]
    if not len(r):
        return ok, {}
    scale = math.sqrt(12.0 / w)
    l_rise, t_rise, r_fall = x.rise("L", r, a, n), x.rise("T", r, a, n), -x.rise("R", r, a, n)
    s_rew = x.noise("R", r)
    pas = (
        (l_rise >= stats.row_max(0.15 * np.abs(x.med("L", r, a, n)), K_RISE * x.noise("L", r) * scale))
        & (t_rise >= stats.row_max(0.10, K_RISE * x.noise("T", r) * scale))
        & (r_fall >= stats.row_max(0.03, 1.5 * s_rew * scale))
    )
    ok[ok] = pas
    ev = {
        "test": "length and cut share rising, reward falling",
        "length_rise": l_rise[pas],
        "cut_share_rise": t_rise[pas],
        "reward_fall": r_fall[pas],
        "reward_noise": s_rew[pas],
    }
    return ok, ev


def _joint_test(x: _Windows, idx: np.ndarray, n: int, w: int) -> tuple[np.ndarray, dict]:
    """The joint trend on window columns n-w..n-1, in the same steps as _cut_test."""
    a = n - w
    ok = x.p_below("R", idx, a, n, ALPHA_FALL, down=True)
    ok[ok] = x.p_below("L", idx[ok], a, n, 0.05)
    r = idx[ok]
    if len(r):
        ok[ok] = (
            ~(-x.rise("R", r, a, n) < 0.03)
            & ~(x.rise("L", r, a, n) < 0.15 * np.abs(x.med("L", r, a, n)))
            & ~(x.med("R", r, n - 4, n) >= x.med("R", r, a, a + 4))
        )
        r = idx[ok]
    if not len(r):
        return ok, {}
    l_rise, r_fall, l_med = x.rise("L", r, a, n), -x.rise("R", r, a, n), 0.15 * np.abs(x.med("L", r, a, n))
    s_len = stats.row_max(x.resid(r, a, n), x.noise("L", r))
    s_rew = x.noise("R", r)
    scale = math.sqrt(12.0 / w)
    pas = ~(l_rise < stats.row_max(l_med, K_RISE * s_len * scale)) & ~(
        r_fall < stats.row_max(0.03, K_FALL * s_rew * scale)
    )
    ok[ok] = pas
    ev = {
        "test": "joint trend",
        "length_mk_p": x.p_up("L", r[pas], a, n),
        "reward_mk_p_down": x.p_up("R", r[pas], a, n, down=True),
        "length_rise": l_rise[pas],
        "reward_fall": r_fall[pas],
        "reward_noise": s_rew[pas],
    }
    return ok, ev


def _band_test(x: _Windows, idx: np.ndarray, n: int, w: int = 8) -> tuple[np.ndarray, dict]:
    """Length rising while reward sits below its band (3 of its last 4) and under its window's start."""
    lo = x.lo[idx, n - 4 : n]
    with np.errstate(invalid="ignore"):
        below = (-(x.R[idx, n - 4 : n] - lo) > 0).sum(axis=1) >= 3
    ok = np.isfinite(lo).all(axis=1) & below
    ok[ok] = x.p_below("L", idx[ok], n - w, n, 0.05)
    r = idx[ok]
    if not len(r):
        return ok, {}
    need = stats.row_max(0.20 * np.abs(x.med("L", r, n - w, n)), K_RISE * x.resid(r, n - w, n) * math.sqrt(12.0 / w))
    pas = ~(x.rise("L", r, n - w, n) < need) & ~(x.med("R", r, n - 4, n) >= x.med("R", r, n - w, n - w + 4))
    ok[ok] = pas
    return ok, {"test": "length rising, reward below its range", "reward_range_lo": x.lo[r[pas], n - 1]}


def _tests(n: int, cut: bool) -> list[tuple[int, Callable]]:
    """The sign's tests on a window of n, in the rule's order: (window, test)."""
    out: list[tuple[int, Callable]] = [(w, _cut_test) for w in (8, 12) if cut and w <= n]
    out += [(w, _joint_test) for w in (8, 12, 16, 24, 32) if w <= n]
    return [*out, (8, _band_test)]


def _first_hit(x: _Windows, idx: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, list]:
    """Per row of idx, on its window's first n columns: the first test that shows the sign
    (its number, -1 for none), its window, and each test's evidence for the rows it hit."""
    which, wins, evs = np.full(len(idx), -1), np.zeros(len(idx), np.int64), []
    for t, (w, test) in enumerate(_tests(n, x.T is not None)):
        live = np.flatnonzero(which < 0)
        if not len(live):
            break
        ok, ev = test(x, idx[live], n, w)
        which[live[ok]], wins[live[ok]] = t, w
        evs.append((live[ok], ev))
    return which, wins, evs


class HackingTest:
    """Length-hacking over columns (`rows`: the run's rows in rollout order, a window or the
    whole run so far), asked at many positions at once: the sign (`signs`) and, for an open
    alert, its latch (`holds`: needs `lb`, `rb`, the run's own baselines of length and
    reward).  The window at a position is the rule's: the rollouts of the last WINDOW that log
    both length and reward, at least HACK_MIN, with length logged at the position itself.

    The sign (rule_length_hacking's) shows on the window and on the window one rollout shorter:
    - length and cut share rising hard while reward falls (8 or 12 rollouts, when every rollout
      of the window logs the cut share);
    - the joint trend on 8, 12, 16, 24 or 32 rollouts (_joint_test);
    - length rising while reward sits below its band (_band_test).
    The noise of length, reward and cut share is the whole window's.

    The latch: an open alert holds while
    - high: the median of the last 4 lengths >= 1.15 x its baseline, or the cut share above
      0.5 in 3 of its last 4;
    - down: the mean of the last 4 rewards below the best (its baseline, or the best five-step
      mean of the window) by max(0.03, 2 x reward's spread around its Theil-Sen line)."""

    def __init__(self, seg: Segment, rows: np.ndarray, ranges, lb: Base | None = None, rb: Base | None = None) -> None:
        self.lb, self.rb, self.ranges = lb, rb, ranges
        self.ids = seg.ids_at(rows).astype(float)
        self.L = signal_values(seg, BY_ID["length"], rows)
        self.R = signal_values(seg, BY_ID["reward"], rows)
        self.T = signal_values(seg, BY_ID["truncated"], rows)
        self.both = np.where(np.isfinite(self.L) & np.isfinite(self.R), 0.0, np.nan)
        self._lo: np.ndarray | None = None

    def reward_lo(self) -> np.ndarray:
        """The lower edge of reward's band at each row (NaN: none)."""
        if self._lo is None:
            b = self.ranges.bounds_many("reward", self.ids)
            self._lo = np.full(len(self.ids), np.nan) if b is None else np.asarray(b[0], float)
        return self._lo

    def _windows(self, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(joint window indices, their count, the rule judges there) per position of `at`."""
        jidx, m = stats.last_finite(self.both, at, WINDOW, WINDOW)
        if not len(at):
            return jidx, m, np.zeros(0, bool)
        _, n_len = stats.last_finite(self.L, at, HACK_MIN, WINDOW)
        _, n_rew = stats.last_finite(self.R, at, HACK_MIN, WINDOW)
        ok = np.isfinite(self.L[at]) & (n_len == HACK_MIN) & (n_rew == HACK_MIN) & (m >= HACK_MIN)
        return jidx, m, ok

    def signs(self, at: np.ndarray) -> np.ndarray:
        """Per position of `at`: the sign shows there and one rollout back (rule_length_hacking
        returns a condition there unless a reward dip in reasoning growth explains it, _growth_dip)."""
        out = np.zeros(len(at), bool)
        jidx, m, ok = self._windows(at)
        if not ok.any():
            return out
        with np.errstate(invalid="ignore"):
            cut = np.isfinite(self.T[np.maximum(jidx, 0)]) | (jidx < 0)
        cut = cut.all(axis=1)
        for size in np.unique(m[ok]).tolist():
            for c in (False, True):
                sel = np.flatnonzero(ok & (m == size) & (cut == c))
                for a in range(0, len(sel), CHUNK):  # (bounded memory: up to 780 pairs a rollout)
                    part = sel[a : a + CHUNK]
                    x = _Windows(self, jidx[part, WINDOW - size :], c)
                    with np.errstate(all="ignore"):
                        now, _, _ = _first_hit(x, np.arange(len(part)), size)
                        hit = np.flatnonzero(now >= 0)
                        back, _, _ = _first_hit(x, hit, size - 1)
                    out[part[hit[back >= 0]]] = True
        return out

    def sign(self, pos: int):
        """At position `pos`: (ids, length, reward of its window, the sign's window, its evidence)
        when the sign shows there and one rollout back, else None."""
        at = np.array([pos])
        jidx, m, ok = self._windows(at)
        if not ok[0]:
            return None
        J = jidx[0, WINDOW - int(m[0]) :]
        cut = bool(np.isfinite(self.T[J]).all())
        x = _Windows(self, J[None, :], cut)
        with np.errstate(all="ignore"):
            now, wins, evs = _first_hit(x, np.arange(1), x.m)
            if now[0] < 0 or _first_hit(x, np.arange(1), x.m - 1)[0][0] < 0:
                return None
        _, ev = evs[int(now[0])]
        ev = {k: (v if isinstance(v, str) else _r(float(v[0]))) for k, v in ev.items()}
        return x.s[0], x.L[0], x.R[0], int(wins[0]), ev

    def holds(self, at: np.ndarray) -> np.ndarray:
        """Per position of `at`: the latch holds there."""
        return self._test(at)[0]

    def _test(self, at: np.ndarray) -> tuple:
        n = len(at)
        out = np.zeros(n, bool)
        med4, mean4, best = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        lb, rb, L, R, T = self.lb, self.rb, self.L, self.R, self.T
        jidx, m, ok = self._windows(at)
        tidx, n_cut = stats.last_finite(T, at, 4, WINDOW)
        if not n or lb is None or rb is None:
            return out, jidx, m, tidx, med4, mean4, best
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

    def latch(self, pos: int) -> Condition | None:
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


CHUNK = 256  # rollouts per batch (a 780-pair matrix each)


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
