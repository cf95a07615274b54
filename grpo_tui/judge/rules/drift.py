"""Drift rules: the train/engine log-prob gap (or KL) and the gradient norm rising or jumping
against the run's own early level, and held while they stay up."""

from __future__ import annotations

import math

import numpy as np

from ...store.metric_store import Segment
from .. import stats
from ..ranges import RangeSet
from ..signals import (
    BY_ID,
    signal_values,
)
from .base import (
    FLOOR,
    RHO,
    WINDOW,
    Base,
    Condition,
    RowNoise,
    RuleContext,
    RuleInfo,
    WholeWindows,
    _jump_shaped,
    _log,
    _onset,
    _r,
    explodes,
    explosion_words,
    own_base,
    rows_drift_up,
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


def rule_gap(ctx: RuleContext) -> list[Condition]:
    """The log-prob gap or KL to the engine explodes, rises step after step or jumps and stays
    (GapTest at this rollout).  While gap-rising is open, held by its latch first; its only
    other sign then is the trend."""
    rising_open = "gap-rising" in ctx.open_rules
    if rising_open:
        for sig_id in LATCHED["gap-rising"]:
            c = still_outside(ctx, "gap-rising", sig_id)
            if c is not None:
                return [c]
    rows = ctx.seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(ctx.seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    bases = {s: own_base(ctx, s, log=True) for s in GAP_SIGNALS}
    return GapTest(ctx.seg, ctx.ranges, rows, np.array([len(rows) - 1]), bases).conditions(0, rising_open)


GAP_SIGNALS = ("gap", "kl")
LOG_1_5 = math.log(1.5)  # a jump: x1.5 above the level before
EPS = 1e-9  # (a cheap bound lowered by a hair: it never drops a row the exact test keeps)


class GapTest:
    """rule_gap's sign over columns, for many rollouts at once (`rows`: the run's rows in rollout
    order, `at`: the positions judged; `bases`: the run's own baseline of each signal there):
    _GapSign of the gap and of KL.  `fires` and `rising` per judged rollout (with gap-rising not
    open: any condition, a gap-rising one); `conditions(j, rising_open)` the rule's words."""

    def __init__(self, seg: Segment, rs: RangeSet, rows: np.ndarray, at: np.ndarray, bases: dict) -> None:
        self.sig = [_GapSign(seg, rs, rows, at, s, bases.get(s)) for s in GAP_SIGNALS]
        self.fires = np.zeros(len(at), bool)
        self.rising = np.zeros(len(at), bool)
        for g in self.sig:
            self.fires |= g.boom | (g.win > 0) | g.jump
            self.rising |= (g.boom & g.boom_rising) | (~g.boom & (g.win > 0))

    def conditions(self, j: int, rising_open: bool = False) -> list[Condition]:
        out: dict[str, Condition] = {}
        for g in self.sig:
            for c in g.pair(j, rising_open):
                if c and c.rule not in out:
                    out[c.rule] = c
        if "gap-rising" in out and "gap-jump" in out and "times_beyond" not in out["gap-jump"].evidence:
            del out["gap-jump"]  # the gap rose step by step; KL's steeper rise is the same trend
        return list(out.values())


class _GapSign:
    """One signal's part of rule_gap at each judged position.  The window: its positive finite
    values among the last WINDOW rollouts, the newest at the judged one (log units).
    - boom: x10 beyond its band's top and the own baseline's edge (explodes): critical at once,
      gap-rising unless the last 8 values got there in one step (`boom_rising`);
    - win: the first of the 8/16/32 windows on which it grows step after step (rows_drift_up),
      unless most of that rise came in one step (_jump_shaped: then it is a jump);
    - jump: the largest step-to-step rise is x1.5 or more, and 3 of the last 4 values sit above
      the level before (the window's 20th percentile but its last 3) by x1.5 and 3 sigma, and
      above the band where one applies, that one step making half the rise or more."""

    def __init__(
        self, seg: Segment, rs: RangeSet, rows: np.ndarray, at: np.ndarray, sig_id: str, base: Base | None
    ) -> None:
        self.sig_id, self.base, self.at = sig_id, base, at
        self.ids = seg.ids_at(rows)
        self.v = signal_values(seg, BY_ID[sig_id], rows)
        lv = _log(self.v)
        self.lv = np.where(np.isfinite(lv), lv, np.nan)  # (_log_series: positive finite values)
        b = rs.bounds_many(sig_id, self.ids)
        self.hi = None if b is None else _log(b[1])
        m = len(at)
        self.boom, self.boom_rising, self.jump = np.zeros((3, m), bool)
        self.win, self.jump_k = np.zeros((2, m), np.int64)
        self.p, self.rise, self.sigma, self.before = np.full((4, m), np.nan)
        self.windows: dict[int, np.ndarray] = {}  # judged position -> its window's rows, where a sign shows
        self._mk: WholeWindows | None = None
        for a in range(0, m, CHUNK):  # (bounded memory: a 40-row window per position)
            self._judge(np.arange(a, min(m, a + CHUNK)))

    def _judge(self, js: np.ndarray) -> None:
        lv, sig_id, hi = self.lv, self.sig_id, self.hi
        at = self.at[js]
        idx, n = stats.last_finite(lv, at, WINDOW, WINDOW)
        ok = np.isfinite(lv[at])
        hi_last = np.full(len(at), np.nan) if hi is None else hi[at]
        self.boom[js] = ok & explodes(sig_id, lv[at], hi_last, self.base)
        centre = None if self.base is None else self.base.centre
        rho = RHO[sig_id]
        for size in np.unique(n[ok]).tolist() if len(n) > 16 else sorted(set(n[ok].tolist())):
            sel = np.flatnonzero(ok & (n == size))
            J = idx[sel, WINDOW - size :]
            V = lv[J]
            # the rows where a sign may show - 3 of the last 4 values above the own level by rho
            # or above the band (drift); a step of x1.5 and 3 of the last 4 above the window's
            # lowest by x1.5 (jump) - so the tests below read only those (each row's answer is
            # its own: exact)
            # (V is finite, a NaN top only compares false: no floating-point warning to silence)
            drift = np.zeros(len(sel), bool)
            jump = drift
            if size >= 8:
                if centre is not None:
                    drift = ((V[:, -4:] - (centre + rho)) > 0).sum(axis=1) >= 3
                if hi is not None:
                    drift = drift | (((V[:, -4:] - hi[J[:, -4:]]) > 0).sum(axis=1) >= 3)
            if size >= 5:
                low = V[:, :-3].min(axis=1) + (LOG_1_5 - EPS)
                jump = (np.diff(V, axis=1).max(axis=1) >= LOG_1_5) & (((V[:, -4:] - low[:, None]) > 0).sum(axis=1) >= 3)
            boom = self.boom[js[sel]]
            keep = np.flatnonzero(boom | drift | jump)
            if not len(keep):
                continue
            J, V, part, boom, drift, jump = J[keep], V[keep], js[sel[keep]], boom[keep], drift[keep], jump[keep]
            S = self.ids[J].astype(float)
            H = None if hi is None else hi[J]
            noise = RowNoise(S, V, FLOOR[sig_id])
            if size >= 8:
                for k in np.flatnonzero(boom).tolist():
                    self.boom_rising[part[k]] = not _jump_shaped(V[k, -8:])
                d = np.flatnonzero(drift)
                if len(d):
                    Hd = None if H is None else H[d]
                    w, p, r, sg = rows_drift_up(S[d], V[d], centre, noise.of(d), rho, Hd, self._whole(size, J[d]))
                    for k in np.flatnonzero(w).tolist():
                        if _jump_shaped(V[d[k], -int(w[k]) :], float(r[k])):
                            w[k] = 0  # most of the rise in one step: a jump, not a trend
                    pd = part[d]
                    self.win[pd], self.p[pd], self.rise[pd], self.sigma[pd] = w, p, r, sg
            jj = np.flatnonzero(jump)
            if len(jj):
                self._jumps(part[jj], V[jj], None if H is None else H[jj], noise.of(jj))
            for k in np.flatnonzero(self.boom[part] | (self.win[part] > 0) | self.jump[part]).tolist():
                self.windows[int(part[k])] = J[k].copy()

    def _whole(self, size: int, J: np.ndarray):
        """rows_drift_up's mk_of for windows of WINDOW finite values (their rows contiguous)."""
        if size != WINDOW or len(J) < WholeWindows.MIN_ROWS:
            return None
        if self._mk is None:
            self._mk = WholeWindows(self.lv)
        return self._mk.of(J[:, -1])

    def _jumps(self, part: np.ndarray, V: np.ndarray, H: np.ndarray | None, noise) -> None:
        before = stats.rows_percentile(V[:, :-3], 20)
        d = np.diff(V, axis=1)
        k = np.argmax(d, axis=1)
        dk = d[np.arange(len(V)), k]
        with np.errstate(invalid="ignore"):
            c = np.flatnonzero((dk >= LOG_1_5) & (((V[:, -4:] - (before + LOG_1_5)[:, None]) > 0).sum(axis=1) >= 3))
        if not len(c):
            return
        edge = np.repeat((before[c] + stats.row_max(LOG_1_5, 3 * noise(c)))[:, None], 4, axis=1)
        if H is not None:
            edge = np.maximum(edge, np.where(np.isfinite(H[c, -4:]), H[c, -4:], -np.inf))
        with np.errstate(invalid="ignore"):
            hit = (((V[c, -4:] - edge) > 0).sum(axis=1) >= 3) & (
                dk[c] >= 0.5 * (stats.rows_median(V[c, -3:]) - before[c])
            )
        c = c[hit]
        self.jump[part[c]] = True
        self.jump_k[part[c]], self.before[part[c]] = k[c], before[c]

    def pair(self, j: int, rising_open: bool) -> tuple[Condition | None, Condition | None]:
        """(gap-rising, gap-jump) conditions of this signal at the j-th judged rollout."""
        if j not in self.windows:
            return None, None
        J = self.windows[j]
        ids, lv, vals = self.ids[J], self.lv[J], self.v[J]
        sig, sig_id, base = BY_ID[self.sig_id], self.sig_id, self.base
        upto = int(ids[-1])
        if self.boom[j] and not rising_open:
            # x10 beyond everything: critical at once, as a jump unless it got there step by step
            hi_last = math.nan if self.hi is None else float(self.hi[self.at[j]])
            boom = explosion_words(sig_id, float(lv[-1]), hi_last, base)
            rule = "gap-rising" if self.boom_rising[j] else "gap-jump"
            c = Condition(
                rule,
                "critical",
                upto,
                f"{sig.label} exploded to {sig.fmt.format(vals[-1])} at rollout {upto} "
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
        w = int(self.win[j])
        if w:
            s = float(self.sigma[j])
            b = math.exp(base.centre) if base else math.exp(float(lv[-w]))
            now = math.exp(float(stats.median(lv[-3:])))
            rising = Condition(
                "gap-rising",
                "critical",
                _onset(ids[-w:], lv[-w:], s),
                f"{sig.label} rising for {w} rollouts (x{math.exp(float(self.rise[j])):.2f}; "
                f"{sig.fmt.format(b)} at the start of the run -> {sig.fmt.format(now)} now)",
                {
                    "signal": sig_id,
                    "window_rollouts": [int(ids[-w]), int(ids[-1])],
                    "values": [_r(v) for v in vals[-w:]],
                    "mk_p": _r(float(self.p[j])),
                    "rise_log": _r(float(self.rise[j])),
                    "baseline": _r(b),
                    "noise_log": _r(s),
                },
                signal=sig_id,
            )
            return rising, None
        if rising_open or not self.jump[j]:
            return None, None
        at = int(ids[int(self.jump_k[j]) + 1])
        before = float(self.before[j])
        hi = None if self.hi is None else self.hi[J]
        return None, Condition(
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


def rule_grad_norm(ctx: RuleContext) -> list[Condition]:
    """The gradient norm explodes, or grows step after step against the run's own early level:
    GrowthTest at this rollout.  While its alert is open, held by its latch first."""
    if "grad-norm-rising" in ctx.open_rules:  # (its only sign: held while the level stays up)
        c = still_outside(ctx, "grad-norm-rising", "grad_norm")
        if c is not None:
            return [c]
    rows = ctx.seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(ctx.seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return []
    base = own_base(ctx, "grad_norm", log=True)
    return GrowthTest(ctx.seg, ctx.ranges, rows, np.array([len(rows) - 1]), base).conditions(0)


class GrowthTest:
    """rule_grad_norm's sign over columns, for many rollouts at once (`rows`: the run's rows in
    rollout order, `at`: the positions judged; `base`: the run's own baseline there).  The window
    at a position: the gradient norm's positive finite values among the last WINDOW rollouts, the
    newest at the judged one.  It explodes (explodes: x10 beyond its band's top and its baseline's
    edge, or past 1e4), or, on at least 8 values, grows step after step (rows_drift_up).
    `fires` per judged rollout; `conditions(j)` the rule's words there."""

    def __init__(self, seg: Segment, rs: RangeSet, rows: np.ndarray, at: np.ndarray, base: Base | None) -> None:
        self.at, self.base = at, base
        self.ids = seg.ids_at(rows)
        self.v = signal_values(seg, BY_ID["grad_norm"], rows)
        lv = _log(self.v)
        self.lv = lv = np.where(np.isfinite(lv), lv, np.nan)  # (_log_series: positive finite values)
        b = rs.bounds_many("grad_norm", self.ids)
        self.hi = None if b is None else _log(b[1])
        self.hi_last = np.full(len(at), np.nan) if self.hi is None else self.hi[at]
        self.boom = np.zeros(len(at), bool)
        self.win = np.zeros(len(at), np.int64)
        self.p, self.rise, self.sigma = np.full(len(at), np.nan), np.full(len(at), np.nan), np.full(len(at), np.nan)
        self.windows: dict[int, np.ndarray] = {}  # judged position -> its window's rows, where it fires
        for a in range(0, len(at), CHUNK):  # (bounded memory: a 40-row window per position)
            self._judge(np.arange(a, min(len(at), a + CHUNK)))
        self.fires = self.boom | (self.win > 0)

    def _judge(self, js: np.ndarray) -> None:
        lv, base = self.lv, self.base
        at = self.at[js]
        idx, n = stats.last_finite(lv, at, WINDOW, WINDOW)
        ok = np.isfinite(lv[at])
        self.boom[js] = boom = ok & explodes("grad_norm", lv[at], self.hi_last[js], base)
        grow = ok & ~boom & (n >= 8)
        centre = None if base is None else base.centre
        for size in np.unique(n[grow]).tolist():
            sel = np.flatnonzero(grow & (n == size))
            J = idx[sel, WINDOW - size :]
            S, V = self.ids[J].astype(float), lv[J]
            H = None if self.hi is None else self.hi[J]
            w, p, r, sg = rows_drift_up(S, V, centre, RowNoise(S, V, FLOOR["grad_norm"]), RHO["grad_norm"], H)
            part = js[sel]
            self.win[part], self.p[part], self.rise[part], self.sigma[part] = w, p, r, sg
            for k in np.flatnonzero(w).tolist():
                self.windows[int(part[k])] = J[k].copy()

    def conditions(self, j: int) -> list[Condition]:
        """The rule's condition at the j-th judged rollout (none where it does not fire)."""
        upto = int(self.ids[self.at[j]])
        last = float(self.v[self.at[j]])
        base = self.base
        if self.boom[j]:
            boom = explosion_words("grad_norm", float(self.lv[self.at[j]]), float(self.hi_last[j]), base)
            times = ", ".join(f"x{v:.3g} the {k}" for k, v in boom["times"].items() if v)
            return [
                Condition(
                    "grad-norm-rising",
                    "critical",
                    upto,
                    f"gradient norm exploded to {last:.3g} at rollout {upto} ({times})",
                    {
                        "signal": "grad_norm",
                        "value": _r(last),
                        "times_beyond": boom["times"],
                        "baseline": _r(math.exp(base.centre)) if base else None,
                    },
                    signal="grad_norm",
                )
            ]
        w = int(self.win[j])
        if not w:
            return []
        J = self.windows[j]
        ids, lv, vals = self.ids[J], self.lv[J], self.v[J]
        s = float(self.sigma[j])
        b = math.exp(base.centre) if base else math.exp(float(lv[-w]))
        now = math.exp(float(stats.median(lv[-3:])))
        return [
            Condition(
                "grad-norm-rising",
                "critical",
                _onset(ids[-w:], lv[-w:], s),
                f"gradient norm growing step after step (x{math.exp(float(self.rise[j])):.1f} over {w} rollouts; "
                f"{b:.3g} at the start of the run -> {now:.3g} now)",
                {
                    "signal": "grad_norm",
                    "values": [_r(v) for v in vals[-w:]],
                    "mk_p": _r(float(self.p[j])),
                    "factor": _r(math.exp(float(self.rise[j]))),
                    "baseline": _r(b),
                    "noise_log": _r(s),
                },
                signal="grad_norm",
            )
        ]


CHUNK = 4096  # judged rollouts per batch of GrowthTest (a 40-row window each)


def still_outside(ctx: RuleContext, rule: str, sig_id: str) -> Condition | None:
    """The latch at one rollout: LatchTest over its window."""
    rows = ctx.seg.rows_upto(WINDOW, ctx.upto)
    if not len(rows) or int(ctx.seg.ids_at(rows[-1:])[0]) != ctx.upto:
        return None
    base = own_base(ctx, sig_id, log=True)
    return LatchTest(ctx.seg, ctx.ranges, rows, np.array([len(rows) - 1]), sig_id, base).condition(0, rule)


class LatchTest:
    """An open trend/jump alert holds while 3 of the last 4 values of its signal stay above the
    band, or above the run's own baseline by the rule's size (the sign is not gone until the
    level is back): rules.drift's latch over columns, for many rollouts at once (`rows`: the
    run's rows in rollout order, `at`: the positions judged; `base`: the run's own baseline
    there, the same for every rollout past the first ones).  `holds` per judged rollout."""

    def __init__(
        self, seg: Segment, rs: RangeSet, rows: np.ndarray, at: np.ndarray, sig_id: str, base: Base | None
    ) -> None:
        self.sig_id, self.base = sig_id, base
        self.ids = ids = seg.ids_at(rows)
        v = self.v = signal_values(seg, BY_ID[sig_id], rows)
        idx, n = self.idx, _n = stats.last_finite(v, at, 4, WINDOW)
        ok = (n >= 4) & np.isfinite(v[at])
        b = rs.bounds_many(sig_id, ids)
        self.hi = None if b is None else b[1]
        self.by_band = np.zeros(len(at), bool)
        if self.hi is not None:
            with np.errstate(invalid="ignore"):
                self.by_band = ok & (((v[idx] - self.hi[idx]) > 0).sum(axis=1) >= 3)  # (a NaN edge never counts)
        self.holds = self.by_band.copy()
        if base is not None and sig_id in RHO:
            lv = _log(v)
            lidx, _ln = stats.last_finite(lv, at, 4, WINDOW)
            with np.errstate(invalid="ignore"):
                hits = ((lv[np.maximum(lidx, 0)] - (base.centre + RHO[sig_id])) > 0) & (lidx >= 0)
            self.holds |= ok & (hits.sum(axis=1) >= 3)

    def condition(self, j: int, rule: str) -> Condition | None:
        """The latch's condition for the open alert `rule` at the j-th judged rollout."""
        if not self.holds[j]:
            return None
        sig = BY_ID[self.sig_id]
        vals = self.v[self.idx[j]]
        if self.by_band[j]:
            assert self.hi is not None
            hi = float(self.hi[self.idx[j, -1]])
            return Condition(
                rule,
                "critical",
                None,
                f"{sig.label} still above its healthy range ({sig.fmt.format(vals[-1])} > {sig.fmt.format(hi)})",
                {"signal": self.sig_id, "last4": [_r(v) for v in vals], "range_hi": _r(hi)},
                signal=self.sig_id,
            )
        assert self.base is not None
        centre = self.base.centre
        return Condition(
            rule,
            "critical",
            None,
            f"{sig.label} still x{math.exp(float(stats.median(_log(vals))) - centre):.1f} its level early in the run "
            f"({sig.fmt.format(vals[-1])} vs {sig.fmt.format(math.exp(centre))})",
            {"signal": self.sig_id, "last4": [_r(v) for v in vals], "baseline": _r(math.exp(centre))},
            signal=self.sig_id,
        )


LATCHED = {"gap-rising": ("gap", "kl"), "gap-jump": ("gap", "kl"), "grad-norm-rising": ("grad_norm",)}
