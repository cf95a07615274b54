"""Whether an open length-hacking alert still holds, for many rollouts at once (judge/bulk.py):
the one stand-in left (issue #39).

While an alert is open only one thing about its rule matters to the state machine: does it
return a condition at this rollout (the alert holds) or not (a miss; three in a row clear
it)?  Its message and evidence are those of the rollout that raised it, and length-hacking
is always critical, so a held condition can never escalate.  rule_length_hacking returns a
condition when its latch holds (length stays up and reward down: rules.hacking.HoldTest,
whose own answer over the history `presence` is given) or its sign is confirmed (the joint
trend - or reward below its band - at this rollout and on the window one rollout shorter).
While no alert is open, a confirmed sign may still be a reward dip in reasoning growth
(rules.hacking._growth_dip), so `confirmed` answers only "surely not" (0) or "ask the rule" (-1).

`presence` computes the trend tests with numpy on a batch of rollouts: every window statistic
the rule uses (Theil-Sen slopes, robust sigmas, Mann-Kendall p with ties, medians) with the
same arithmetic on a matrix of windows.  Each comparison is three-valued: a value within a
relative 1e-9 of its threshold is "unsure", and so is any window the batch does not model (a
gap in length, reward or cut share, a non-finite intermediate).  An unsure rollout is judged by
the rule itself (tests/equivalence/test_fast_judge.py compares the alerts on long runs with
many open/close cycles).  The way out: the trend over columns, as the latch is.
"""

from __future__ import annotations

import math

import numpy as np

from . import stats
from .rules.base import ALPHA_FALL, FLOOR, HACK_MIN, K_FALL, K_RISE, WINDOW, RuleContext, own_base, ranges_for
from .signals import BY_ID, metric_for

TOL = 1e-9
CHUNK = 1024  # rows per vectorised batch
TAIL = 3  # rows after a gate's maybe in the first batch (CLEAR_AFTER misses)


class Tri:
    """A three-valued truth per row: `sure` (certainly true) within `maybe` (possibly true)."""

    __slots__ = ("sure", "maybe")

    def __init__(self, sure: np.ndarray, maybe: np.ndarray) -> None:
        self.sure = sure
        self.maybe = maybe | sure

    @classmethod
    def exact(cls, b: np.ndarray) -> Tri:
        return cls(b.copy(), b.copy())

    @classmethod
    def const(cls, n: int, value: bool) -> Tri:
        return cls(np.full(n, value), np.full(n, value))

    def __and__(self, o: Tri) -> Tri:
        return Tri(self.sure & o.sure, self.maybe & o.maybe)

    def __or__(self, o: Tri) -> Tri:
        return Tri(self.sure | o.sure, self.maybe | o.maybe)

    @property
    def unsure(self) -> np.ndarray:
        return self.maybe & ~self.sure


def _slack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return TOL * np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))


def ge(a: np.ndarray | float, b: np.ndarray | float) -> Tri:
    """a >= b, unsure within a hair of the edge (or where either is NaN)."""
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    nan = np.isnan(a) | np.isnan(b)
    t = _slack(a, b)
    with np.errstate(invalid="ignore"):
        return Tri(~nan & (a >= b + t), nan | (a >= b - t))


def lt(a: np.ndarray | float, b: np.ndarray | float) -> Tri:
    """a < b, unsure within a hair of the edge (or where either is NaN)."""
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    nan = np.isnan(a) | np.isnan(b)
    t = _slack(a, b)
    with np.errstate(invalid="ignore"):
        return Tri(~nan & (a < b - t), nan | (a < b + t))


# -- the rules' spreads (rules.base._resid_sigma, rules.base._noise), one row per window -----------------
resid_sigma = stats.rows_resid_sigma  # rules.base._resid_sigma, one row per window


def diff_sigma(v: np.ndarray) -> np.ndarray:
    return stats.rows_robust_sigma(np.diff(v, axis=1)) / math.sqrt(2.0)


def noise(s: np.ndarray, v: np.ndarray, floor: np.ndarray | float) -> np.ndarray:
    """rules.base._noise: the largest of the floor, the Theil-Sen spread and the step spread."""
    a, b = resid_sigma(s, v), diff_sigma(v)
    out = np.maximum(floor, np.where(np.isfinite(a), a, -np.inf))
    return np.maximum(out, np.where(np.isfinite(b), b, -np.inf))


class Inputs:
    """What the tests read for a batch of rollouts: rows of the run whose 40-row windows are
    all finite (length, reward, and the cut share when `cut`), the run's columns, and each
    window's noise - computed on first use for the rows that need it, once per batch (`take`
    shares the batch's store)."""

    _NOISE = ("rs_rew", "n_rew", "n_len", "n_cut")

    def __init__(self, cols: dict, rows: np.ndarray, cut: bool) -> None:
        self.cols, self.rows, self.cut = cols, rows, cut
        self.pos = np.arange(len(rows))  # positions in the batch
        self.store = {name: np.full(len(rows), np.nan) for name in self._NOISE}
        self.have = {name: np.zeros(len(rows), bool) for name in self._NOISE}
        self.memo: dict = {}  # key: (values, computed) per position

    def win(self, name: str, a: int, b: int) -> np.ndarray:
        """Column `name` at positions a..b-1 of each row's 40-row window (WINDOW-1 = the row)."""
        return self.cols[name][self.rows[:, None] + (a - (WINDOW - 1)) + np.arange(b - a)[None, :]]

    def mk_p(self, name: str, a: int, b: int, down: bool = False) -> np.ndarray:
        """stats.mk_p_up (mk_p_down) of the column on window positions a..b-1."""
        s, ties = self.cols["mk"][name][b - a]
        end = self.rows - (WINDOW - b)
        got = s[end]
        return stats.rows_mk_p_from_s(
            -got if down else got, ties[end], lambda idx: self.take(idx).win(name, a, b), b - a
        )

    def value(self, key: tuple, compute) -> np.ndarray:
        """compute(rows) for these rows, each row computed once per batch (shared by `take`)."""
        got = self.memo.get(key)
        if got is None:
            size = len(self.store["rs_rew"])
            got = self.memo[key] = (np.full(size, np.nan), np.zeros(size, bool))
        vals, have = got
        todo = ~have[self.pos]
        if todo.any():
            sub = self.take(np.flatnonzero(todo))
            vals[sub.pos] = compute(sub)
            have[sub.pos] = True
        return vals[self.pos]

    def _noise(self, name: str) -> np.ndarray:
        have = self.have[name]
        todo = ~have[self.pos]
        if todo.any():
            sub = self.take(np.flatnonzero(todo))
            self.store[name][sub.pos] = sub._compute(name)
            have[sub.pos] = True
        return self.store[name][self.pos]

    def _compute(self, name: str) -> np.ndarray:
        s = self.win("s", 0, WINDOW)
        if name == "rs_rew":
            return resid_sigma(s, self.win("R", 0, WINDOW))
        if name == "n_rew":
            return np.maximum(
                np.maximum(FLOOR["reward"], _finite_or_low(self.rs_rew)),
                _finite_or_low(diff_sigma(self.win("R", 0, WINDOW))),
            )
        if name == "n_len":
            L = self.win("L", 0, WINDOW)
            return noise(s, L, FLOOR["length"] * np.abs(stats.rows_median(L)))
        return noise(s, self.win("T", 0, WINDOW), 0.005)

    rs_rew = property(lambda self: self._noise("rs_rew"))
    n_rew = property(lambda self: self._noise("n_rew"))
    n_len = property(lambda self: self._noise("n_len"))
    n_cut = property(lambda self: self._noise("n_cut"))

    def take(self, idx: np.ndarray) -> Inputs:
        """The same tests on a subset of the rows (sharing the batch's noise)."""
        x = Inputs.__new__(Inputs)
        x.cols, x.cut, x.rows, x.pos = self.cols, self.cut, self.rows[idx], self.pos[idx]
        x.store, x.have, x.memo = self.store, self.have, self.memo
        return x


def _finite_or_low(a: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(a), a, -np.inf)


def _all(x: Inputs, tests) -> Tri:
    """The conjunction of `tests` (each x -> Tri), each run only on the rows still possible."""
    rows = len(x.rows)
    sure, maybe = np.ones(rows, bool), np.ones(rows, bool)
    live = np.arange(rows)
    for test in tests:
        if not len(live):
            break
        got = test(x.take(live))
        sure[live] &= got.sure
        maybe[live] &= got.maybe
        live = live[got.maybe]
    return Tri(sure & maybe, maybe)


def _any(x: Inputs, tests) -> Tri:
    """The disjunction of `tests`, each run only on the rows not yet sure."""
    rows = len(x.rows)
    sure, maybe = np.zeros(rows, bool), np.zeros(rows, bool)
    for test in tests:
        live = np.flatnonzero(~sure)
        if not len(live):
            break
        got = test(x.take(live))
        sure[live] |= got.sure
        maybe[live] |= got.maybe
    return Tri(sure, maybe)


def _trend_tests(n: int, cut: bool) -> list:
    """rules.hacking._hacking_trend's windows on each window's first n rows, as tests (noise of all 40)."""
    tests = []
    if cut:
        for w in (8, 12):
            tests.append(lambda x, w=w: _all(x, (lambda y: _cut_mk(y, n - w, n), lambda y: _cut_sizes(y, n - w, n))))
    for w in (8, 12, 16, 24, 32):
        if w <= n:
            tests.append(
                lambda x, w=w: _all(x, (lambda y: _joint_mk(y, n - w, n), lambda y: _joint_sizes(y, n - w, n)))
            )
    return tests


def _cut_mk(x: Inputs, a: int, n: int) -> Tri:
    ok = (x.mk_p("L", a, n) < 0.05) & (x.mk_p("R", a, n, down=True) < 0.10) & (x.mk_p("T", a, n) < 0.01)
    return Tri.exact(ok)


def _cut_sizes(x: Inputs, a: int, n: int) -> Tri:
    ws, wl, wr, wt = x.win("s", a, n), x.win("L", a, n), x.win("R", a, n), x.win("T", a, n)
    scale = math.sqrt(12.0 / (n - a))
    ok = Tri.exact(stats.rows_median(wr[:, -4:]) < stats.rows_median(wr[:, :4]))
    ok = ok & ge(stats.rows_ts_rise(ws, wl), np.maximum(0.15 * np.abs(stats.rows_median(wl)), K_RISE * x.n_len * scale))
    ok = ok & ge(-stats.rows_ts_rise(ws, wr), np.maximum(0.03, 1.5 * x.n_rew * scale))
    return ok & ge(stats.rows_ts_rise(ws, wt), np.maximum(0.10, K_RISE * x.n_cut * scale))


def _joint_mk(x: Inputs, a: int, n: int) -> Tri:
    ok = (x.mk_p("R", a, n, down=True) < ALPHA_FALL) & (x.mk_p("L", a, n) < 0.05)
    return Tri.exact(ok & (stats.rows_median(x.win("R", n - 4, n)) < stats.rows_median(x.win("R", a, a + 4))))


def _joint_sizes(x: Inputs, a: int, n: int) -> Tri:
    """The sizes of _hacking_trend's joint window, cheapest first: each test (and the noise it
    needs) runs only on the rows the ones before left possible."""
    scale = math.sqrt(12.0 / (n - a))

    def r_fall(y: Inputs) -> np.ndarray:
        return y.value(("r_fall", a, n), lambda z: -stats.rows_ts_rise(z.win("s", a, n), z.win("R", a, n)))

    def l_rise(y: Inputs) -> np.ndarray:
        return y.value(("l_rise", a, n), lambda z: stats.rows_ts_rise(z.win("s", a, n), z.win("L", a, n)))

    def med(y: Inputs) -> np.ndarray:
        return y.value(("l_med", a, n), lambda z: 0.15 * np.abs(stats.rows_median(z.win("L", a, n))))

    def s_len(y: Inputs) -> np.ndarray:
        return np.maximum(resid_sigma(y.win("s", a, n), y.win("L", a, n)), y.n_len)

    return _all(
        x,
        (
            lambda y: ge(r_fall(y), 0.03),
            lambda y: ge(l_rise(y), med(y)),
            lambda y: ge(r_fall(y), np.maximum(0.03, K_FALL * y.n_rew * scale)),
            lambda y: ge(l_rise(y), np.maximum(med(y), K_RISE * s_len(y) * scale)),
        ),
    )


def _band_tests(n: int) -> list:
    """rules.hacking._hacking_below_band on each window's first n rows, as tests."""
    return [lambda x: _band_level(x, n), lambda x: _band_trend(x, n)]


def _band_level(x: Inputs, n: int) -> Tri:
    if x.cols["lo"] is None:
        return Tri.const(len(x.rows), False)
    lo, R = x.win("lo", n - 4, n), x.win("R", n - 4, n)
    below = lt(R, np.where(np.isfinite(lo), lo, -np.inf))
    out = Tri.exact(np.isfinite(lo).all(axis=1) & (stats.rows_median(R) < stats.rows_median(x.win("R", n - 8, n - 4))))
    return out & Tri(below.sure.sum(axis=1) >= 3, below.maybe.sum(axis=1) >= 3)


def _band_trend(x: Inputs, n: int) -> Tri:
    ws, wl = x.win("s", n - 8, n), x.win("L", n - 8, n)
    out = Tri.exact(x.mk_p("L", n - 8, n) < 0.05)
    need = np.maximum(0.20 * np.abs(stats.rows_median(wl)), K_RISE * resid_sigma(ws, wl) * math.sqrt(12.0 / 8))
    return out & ge(stats.rows_ts_rise(ws, wl), need)


def _hit(n: int, cut: bool):
    """The rule's sign (_hacking_trend or _hacking_below_band) on the first n rows."""
    return lambda x: _any(x, _trend_tests(n, cut) + [lambda y: _all(y, _band_tests(n))])


def presence(x: Inputs) -> tuple[np.ndarray, np.ndarray]:
    """Per row, 1 / 0 / -1 (unsure: ask the rule): whether the rule's sign is confirmed (at this
    rollout and one rollout back), for its open alert (HackingHeld adds its latch, exact) and
    while it is not open."""
    confirmed = _all(x, (_hit(WINDOW, x.cut), _hit(WINDOW - 1, x.cut)))
    conf = _code(confirmed)
    got = conf.copy()
    conf[conf == 1] = -1  # (a confirmed sign may be a dip in reasoning growth: the rule decides)
    return got, conf


def _code(t: Tri) -> np.ndarray:
    return np.where(t.sure, 1, np.where(t.maybe, -1, 0)).astype(np.int8)


class HackingHeld:
    """Answers `present(k)` / `confirmed(k)` for recorded op k (judge/bulk.py's rows).  The
    first question computes, in one batch, every op where the gate lets the rule fire and the
    TAIL after each (an alert it raised needs that many misses to clear); a longer open stretch
    asks for the next ones, a doubling batch at a time (at most 512 rows: bounded memory)."""

    def __init__(
        self, seg, ranges, rows: np.ndarray, may_raise: np.ndarray, mk: dict | None = None, holds=None
    ) -> None:
        self.seg, self.ranges, self.rows = seg, ranges, rows
        self.holds = holds  # ops -> the rule's latch holds there (rules.hacking.HoldTest over the history)
        self.mk = {} if mk is None else mk  # Mann-Kendall S of the gates (bulk._mk_memo)
        self.may_raise = may_raise  # ops where the rule may fire (gate)
        self.ans = np.full(len(rows), -2, np.int8)  # -2: not computed yet
        self.conf = np.full(len(rows), -1, np.int8)
        self._batch = 32
        self._last = -2
        self._batch_end = -1  # where the last batch of _ensure ended
        self._cols: dict | None = None
        self._first = True

    def present(self, k: int) -> int:
        """Whether rule_length_hacking returns a condition at op k while its alert is open."""
        self._ensure(k)
        return int(self._with_latch(np.array([k]), self.ans[k : k + 1])[0])

    def confirmed(self, k: int) -> int:
        """Whether it returns one while its alert is not open (its sign confirmed)."""
        self._ensure(k)
        return int(self.conf[k])

    def known_present(self, ks: np.ndarray) -> np.ndarray:
        """present(k) for these ops in order (judge/steady.py), -2 where not computed yet.  Only
        where every op before holds (1) and the op is not computed does it compute, one batch
        from there, as op by op would ask there (a batch that goes on from where the last one
        ended doubles, as when asked op after op); past an op that does not hold, the alert
        may clear: nothing is computed for it (the caller asks again from there)."""
        if not len(ks):
            return self.ans[ks]
        if self._first:
            self._ensure(int(ks[0]))  # the first batch, as at the first question
        got = self._with_latch(ks, self.ans[ks])
        off = np.flatnonzero(got != 1)
        if len(off) and got[off[0]] == -2:
            k = int(ks[off[0]])
            if k == self._batch_end:
                self._last = k - 1  # (goes on from the last batch: it doubles)
            self._ensure(k)
            got = self._with_latch(ks, self.ans[ks])
        return got

    def _with_latch(self, ks: np.ndarray, got: np.ndarray) -> np.ndarray:
        """The trend's answers `got` at ops ks, 1 where the rule's latch holds (asked only where
        the trend is computed and not surely confirmed: HoldTest's own answer, op by op once)."""
        ask = (got == 0) | (got == -1)
        ask &= self.rows[ks] >= WINDOW - 1
        if self.holds is None or not ask.any():
            return got
        got = got.copy()
        got[ask] = np.where(self.holds(ks[ask]), 1, got[ask])
        return got

    def confirmed_at(self, ks: np.ndarray) -> np.ndarray:
        """confirmed(k) for these ops (judge/steady.py), computed as one batch."""
        self._ensure_all(ks)
        return self.conf[ks]

    def _ensure_all(self, ks: np.ndarray) -> None:
        if not len(ks):
            return
        if self._first:
            self._ensure(int(ks[0]))  # the first batch, as op by op asks for it
        self._compute(ks)  # (only those not computed yet)

    def _ensure(self, k: int) -> None:
        if self.ans[k] == -2:
            if self._first:
                self._first = False
                after = np.flatnonzero(self.may_raise)[:, None] + np.arange(0, TAIL + 1)[None, :]
                want = np.zeros(len(self.rows) + TAIL + 1, bool)  # (np.union1d: np.unique)
                want[after.ravel()] = True
                want[k : k + TAIL + 1] = True
                ks = np.flatnonzero(want)
                self._compute(ks[ks < len(self.rows)])
            if self.ans[k] == -2:
                self._batch = min(512, self._batch * 2) if k == self._last + 1 else 32
                self._batch_end = min(len(self.rows), k + self._batch)
                self._compute(np.arange(k, self._batch_end))
        self._last = k

    def _compute(self, ks: np.ndarray) -> None:
        ks = ks[self.ans[ks] == -2]
        self.ans[ks] = -1
        if self._cols is None:
            self._cols = _columns(self.seg, self.ranges, self.rows, self.mk) or {}
        cols = self._cols
        if not cols or not len(ks):
            return
        rows = self.rows[ks]
        try:
            with np.errstate(all="ignore"):
                for cut in (False, True):
                    sel = np.flatnonzero((rows >= WINDOW - 1) & cols["ok"][rows] & (cols["cut"][rows] == cut))
                    for a in range(0, len(sel), CHUNK):  # (bounded memory: 780 pairs a row)
                        part = sel[a : a + CHUNK]
                        x = Inputs(cols, rows[part], cut)
                        self.ans[ks[part]], self.conf[ks[part]] = presence(x)
        except (ValueError, FloatingPointError, IndexError, ZeroDivisionError):
            self.ans[ks] = self.conf[ks] = -1  # (the rule decides)


def _columns(seg, ranges, rows: np.ndarray, memo: dict | None = None) -> dict | None:
    """The whole run's columns the tests read, once: None when the batch cannot model the run.
    `ok`: the row's 40-row window has every length and reward and the cut share at every row
    or at none (`cut` says which)."""
    from .bulk_vec import _bounds, _mk_memo, _vals

    ln, rn = metric_for(seg, BY_ID["length"]), metric_for(seg, BY_ID["reward"])
    if ln is None or rn is None or WINDOW < HACK_MIN or not seg.ordered:
        return None
    full = rows[rows >= WINDOW - 1]
    if not len(full):
        return None
    end = int(rows.max()) + 1
    ids = seg.id_array()[:end]
    first = int(ids[full[0]])
    L, R = _vals(seg, ln, end), _vals(seg, rn, end)
    tn = metric_for(seg, BY_ID["truncated"])
    T = np.full(end, math.nan) if tn is None else _vals(seg, tn, end)
    fin_t = _window_count(np.isfinite(T))
    ok = (_window_count(np.isfinite(L) & np.isfinite(R)) == WINDOW) & ((fin_t == 0) | (fin_t == WINDOW))
    rs = ranges_for(seg, ranges, first)
    b = _bounds(rs, "reward", ids)
    ctx = RuleContext(seg, ranges, first)
    lb, rb = own_base(ctx, "length", log=False), own_base(ctx, "reward", log=False)
    cols = {
        "s": ids.astype(float),
        "L": L,
        "R": R,
        "T": T,
        "ok": ok,
        "cut": fin_t == WINDOW,
        "lo": None if b is None else np.asarray(b[0], float),
        "base_len": None if lb is None else lb.centre,
        "base_rew": None if rb is None else rb.centre,
    }
    names = {"L": ln, "R": rn, "T": tn}
    cols["mk"] = {
        key: _mk_memo(memo if memo is not None else {}, names[key], cols[key], (8, 12, 16, 24, 32))
        for key in ("L", "R", "T")
    }
    return cols


def _window_count(flag: np.ndarray) -> np.ndarray:
    """How many rows of each row's 40-row window (fewer at the start) have the flag."""
    c = np.concatenate([[0], np.cumsum(flag)])
    r = np.arange(len(flag))
    return c[r + 1] - c[np.maximum(r + 1 - WINDOW, 0)]


__all__ = ["HackingHeld", "presence", "Tri"]
