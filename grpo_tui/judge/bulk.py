"""Whole-history judging in bulk (issue #11): a finished file, the dashboard's history fill.

While the history is read, the engine records what each store update completed (events with
the rollout they fell on, and each rollout as it became complete: `HealthEngine.defer`).
`replay` then judges the recording:

1. It checks that the store did not change under a recorded rollout: no row its rules read (its
   40-rollout window, the first 10 rollouts) was written after it was recorded, and the
   segment's shape (metric names, framework, flags, K, groups, row order) is the final one.
   So every recorded rollout reads now exactly what it read then; otherwise BulkMismatch and
   the caller judges the input rollout by rollout.
2. It computes the gates of judge/gates.py for every recorded rollout at once with numpy
   (sliding windows: last-4 levels against their edges, windowed Mann-Kendall S over 8-32,
   five-step means against the bands) - same necessary conditions, vectorised.
3. It runs the alert state machine over the recording in order: events as they came, each
   rollout's conditions (the rules only where a gate says they may fire, or an alert they
   hold is open), raise / escalate / clear exactly as the incremental engine does.  It steps
   over the rollouts where nothing can change: no alert open and no rule may fire, or the open
   alerts surely hold and nothing else may fire (judge/steady.py).

The alerts are those of rollout-by-rollout judging (tests/test_fast_judge.py compares them,
ids, rollouts, severities, messages and evidence, on every scenario, seed, setup and sample
log).  The bulk gates start at row START, once the baseline (first 10 rollouts) and the
ranges' fit (first 5) are settled: shorter windows there read as the rules do, from the
segment's first row (tests/test_bulk_gates.py: every NO is a rollout where the rule returns
nothing).  The first START rollouts take the scalar gates.
"""

from __future__ import annotations

import math
from itertools import repeat
from operator import attrgetter, contains, eq, itemgetter

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view as _sw

from ..store.metric_store import Segment
from . import gates, rules, stats
from .held import HackingHeld, ge as _ge, lt as _lt
from .mismatch import BulkMismatch
from .rules import evaluate_metrics
from .rules.base import (
    ABSURD,
    ALPHA_LONG,
    ALPHA_SHORT,
    HACK_MIN,
    RHO,
    TREND_WINDOWS,
    WINDOW,
    RuleContext,
    own_base,
    ranges_for,
)
from .rules.policy import ENTROPY
from .rules.rollout import first_step
from .setup import FIRST as FIT_FIRST
from .signals import BY_ID, EARLY_ROLLOUTS, MEAN_WINDOW, groups_of, metric_for, signal_at_rows, zero_std_parts
from .steady import Steady

EPS = gates.EPS
BASE_ROWS = 10
START = max(BASE_ROWS, FIT_FIRST, 4) - 1  # first row with the final baseline, fit and a last-4
UNKNOWN, NO, MAYBE = -1, 0, 1


def replay(eng, tape: list, seg: Segment, touch: dict[int, int], stamp_now: int) -> list:
    from .engine import _EV, JUDGED_EVENTS, _shape

    judged = [op for op in tape if op[0] != _EV]
    ans = held = None
    if judged:
        if not seg.ordered:
            raise BulkMismatch("rollouts out of order")
        final = _shape(seg)
        if any(op[4] != final for op in judged):
            raise BulkMismatch("the run's shape changed after a rollout was judged")
        # (map over C getters, not generator expressions: ~12,000 ops per big log)
        rows = np.fromiter(map(seg.row_of.__getitem__, map(itemgetter(1), judged)), np.int64, len(judged))
        stamps = np.fromiter(map(itemgetter(3), judged), np.int64, len(judged))
        _verify(seg, touch, rows, stamps)
        ans = Answers(seg, eng.ranges, rows)
        held = HackingHeld(seg, eng.ranges, rows, ans.may("rule_length_hacking"), ans.mk)
    skip_quiet = rules.USE_GATES and seg.ordered  # (evaluate_metrics' own quiet test)
    nonfinite = seg.nonfinite
    # (Python lists: the loop reads one entry per rollout)
    quiet = ans.quiet.tolist() if ans is not None and skip_quiet else None
    op_rows = ans.rows.tolist() if ans is not None else None
    k_of, calm_next, steady = _calm_skips(tape, ans, nonfinite, skip_quiet, _EV, JUDGED_EVENTS, held)
    changes = []
    none: frozenset = frozenset()
    n = len(tape)
    t = 0
    while t < n:
        if not eng.troubled:
            if not eng.book.open:
                t = calm_next[t]  # nothing open: jump over the ops that cannot change anything
            elif steady is not None:
                # the open alerts surely hold and nothing else fires: each op would only reset
                # their misses (judge/steady.py)
                to = steady.next_busy(t, eng.book.open)
                if to > t and steady.steps_over_ops(t, to):
                    eng.book.hold_all()
                t = to
            if t >= n:
                break
        op = tape[t]
        k = k_of[t]
        t += 1
        if op[0] == _EV:
            eng.set_log_time(op[3])
            if op[1].kind in JUDGED_EVENTS:
                changes.extend(eng.on_event(op[1], op[2], replayed=True))
            continue
        r = op[1]
        eng.set_log_time(op[2])
        if quiet is not None and quiet[k] and not eng.book.open and not eng.troubled and not nonfinite.get(op_rows[k]):
            continue  # no rule can fire, no alert is open, no event condition: nothing to do
        open_rules = frozenset(key[0] for key in eng.book.open) if eng.book.open else none
        held_open = open_rules & rules.HELD
        if skip_quiet and quiet[k] and not held_open and not nonfinite.get(op_rows[k]):
            conds = []  # no rule can fire here (the gates say)
        elif (
            skip_quiet
            and held_open == _LH
            and ans.quiet_but_hacking[k]
            and not nonfinite.get(op_rows[k])
            and _critical(eng, "length-hacking")
            and held.present(k) >= 0
        ):
            # only the open length-hacking alert's rule may return a condition: does it hold?
            conds = [rules.held_standin()] if held.present(k) else []
        elif (
            skip_quiet
            and not held_open
            and ans.quiet_but_hacking[k]
            and not nonfinite.get(op_rows[k])
            and held.confirmed(k) == 0
        ):
            conds = []  # only rule_length_hacking may fire, and its sign is surely not confirmed
        else:
            pre = ans.at(k)
            if pre:
                pre[rules.RESOLVED] = ans.resolved
            if skip_quiet and "length-hacking" in open_rules and _critical(eng, "length-hacking"):
                got = held.present(k)
                if got >= 0:
                    pre[rules.HACKING_HELD] = bool(got)
            elif pre and skip_quiet and pre.get("rule_length_hacking"):
                sign = held.confirmed(k)
                if sign == 0:
                    pre["rule_length_hacking"] = False  # its sign is not confirmed: it returns nothing
                elif sign == 1:
                    pre[rules.HACKING_CONFIRMED] = True  # surely confirmed: no need to look back
            if pre and skip_quiet and pre.get("rule_length_hacking") is not False and rules.HACKING_HELD not in pre:
                pre[rules.HACKING_WINDOWS] = held.windows(k)
            if pre and skip_quiet:
                pre[rules.DRIFT_WINDOWS] = ans.drift_windows(k)
                if open_rules & _STANDS_IN:
                    pre[rules.HELD_RULES] = ans.held_rules(
                        k, open_rules, frozenset(a for a in open_rules & _STANDS_IN if _critical(eng, a))
                    )
                if "out-of-range" in open_rules and _oor_warnings(eng):
                    pre[rules.OOR_HELD] = ans.oor_held(k, eng.book.open)
            conds = evaluate_metrics(seg, eng.ranges, r, open_rules, pre=pre)
        conds.extend(eng.event_conditions(seg, r))
        if conds or eng.book.open:
            changes.extend(eng.judged(conds, r))
    if tape:  # (the time the loop would have left, had it stepped through every op)
        eng.set_log_time(tape[-1][3] if tape[-1][0] == _EV else tape[-1][2])
    return changes


def _calm_skips(
    tape: list, ans, nonfinite: dict, skip_quiet: bool, ev: int, judged_events, held=None
) -> tuple[list, list, Steady | None]:
    """Per tape position: the recorded rollout's index (judged ops), and the first position from
    there on that matters while no alert is open and no event condition holds - an event the
    engine acts on, or a rollout where a rule may fire (not quiet) or a value is non-finite.
    The ops in between only set the engine's log time, which the next op sets again.  And the
    Steady that finds the ops that matter while alerts are open (None: op by op)."""
    n = len(tape)
    is_ev = np.fromiter(map(eq, map(itemgetter(0), tape), repeat(ev)), bool, n)
    judged = ~is_ev
    k_of = np.cumsum(judged) - judged
    need = np.zeros(n, bool)
    ev_pos = np.flatnonzero(is_ev)
    if len(ev_pos):
        kinds = map(attrgetter("kind"), map(itemgetter(1), map(tape.__getitem__, ev_pos.tolist())))
        need[ev_pos] = np.fromiter(map(contains, repeat(judged_events), kinds), bool, len(ev_pos))
    jpos = np.flatnonzero(judged)
    k_list = k_of.tolist()
    steady = None
    if ans is not None and skip_quiet:
        odd = np.zeros(len(ans.rows), bool)
        if nonfinite:
            odd = np.isin(ans.rows, np.fromiter(nonfinite, np.int64, len(nonfinite)))
        need[jpos] = ~ans.quiet | odd
        if held is not None and USE_STEADY:
            steady = Steady(ans, held, judged, k_list, ev_pos[need[ev_pos]], odd)
    else:
        need[jpos] = True
    at = np.where(need, np.arange(n), n)
    calm_next = np.minimum.accumulate(at[::-1])[::-1]
    return k_list, calm_next.tolist(), steady


USE_STEADY = True  # (tests turn it off to exercise the op-by-op stand-ins)


_LH = frozenset({"length-hacking"})
_STANDS_IN = frozenset(rules.drift.LATCHED) | {"no-signal", "off-policy"}  # the alerts held_rules may keep open


def _critical(eng, rule: str) -> bool:
    """The open alert of `rule` is critical: a condition can only keep it open, never change it."""
    a = eng.book.open.get((rule, None))
    return a is not None and a.severity == "critical"


def _oor_warnings(eng) -> bool:
    """Every open out-of-range alert is a warning (it always is: its condition can only keep it
    open, never escalate it)."""
    return all(a.severity == "warning" for key, a in eng.book.open.items() if key[0] == "out-of-range")


def _verify(seg: Segment, touch: dict[int, int], rows: np.ndarray, stamps: np.ndarray) -> None:
    """No row a recorded rollout reads was written after it was recorded."""
    n = int(rows.max()) + 1
    t = np.zeros(n, np.int64)
    got = _rows_of_ids(seg, touch)
    if got is None:
        for rid, st in touch.items():
            row = seg.row_of.get(rid)
            if row is not None and row < n:
                t[row] = st
    else:
        at, stamp = got
        keep = at < n
        t[at[keep]] = stamp[keep]
    win = _run_max(t, WINDOW)
    base = np.maximum.accumulate(t[:BASE_ROWS])
    need = np.maximum(win[rows], base[np.minimum(rows, len(base) - 1)])
    if np.any(need > stamps):
        raise BulkMismatch("a judged rollout's window was written after it was judged")


_EXACT = 2**53
_INT_ONLY = frozenset({int})


def _rows_of_ids(seg: Segment, touch: dict[int, int]) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, stamps) of the touched rollouts that are rows of this ordered segment, found by
    binary search in its id column (floats: exact below 2**53); None when an id is not a plain
    int of that size (the caller loops)."""
    if not touch or not seg.ordered:
        return None
    if not set(map(type, touch)) <= _INT_ONLY or not (min(touch) > -_EXACT and max(touch) < _EXACT):
        return None  # (every key an int: the bounds of all of them are those of the least and greatest)
    keys = np.fromiter(touch.keys(), np.int64, len(touch))
    stamps = np.fromiter(touch.values(), np.int64, len(touch))
    ids = seg.id_array()
    if not len(ids):
        return np.empty(0, np.int64), stamps[:0]
    pos = np.minimum(np.searchsorted(ids, keys), len(ids) - 1)
    found = ids[pos] == keys
    return pos[found], stamps[found]


def _run_max(a: np.ndarray, w: int) -> np.ndarray:
    """max(a[i-w+1 .. i]) for every i (shorter at the start)."""
    pad = np.concatenate([np.full(w - 1, a.min() if len(a) else 0), a])
    return _sw(pad, w).max(axis=1)


# -- vectorised gates --------------------------------------------------------------------------
class Answers:
    """The gates' answers for every recorded rollout, as arrays (one entry per judged op):
    per rule MAYBE / NO / UNKNOWN (scalar gate), the signals out-of-range must look at, and
    `quiet` (no rule can fire).  `at(k)` is the per-rollout dict evaluate_metrics reads."""

    def __init__(self, seg: Segment, ranges, rows: np.ndarray) -> None:
        self.rows = rows
        n_ops = len(rows)
        self.full = full = rows >= START  # a settled baseline (the window may be short)
        self.names: list[str] = []
        self.mat = np.zeros((n_ops, 0), np.int8)
        self.omat = np.zeros((n_ops, 0), np.int8)
        self.sig_ids = list(BY_ID)
        self.quiet = np.zeros(n_ops, bool)
        self.quiet_but_hacking = self.quiet
        self.resolved = None  # ranges_for on the full windows
        self.mk: dict = {}  # _mk_memo's (shared with judge/held.py)
        self.seg = seg
        self._drift: _DriftMay | None = None  # drift_windows' arrays, made on first use
        self._held: tuple | None = None  # held_rules' arrays, made on first use
        self._oor: dict[str, np.ndarray] = {}  # oor_held's, per signal, made on first use
        if not n_ops or not full.any():
            return
        res, oor, self.resolved = _gate_arrays(seg, ranges, rows, self.mk)
        self.names = list(res)
        unknown = np.int8(UNKNOWN)
        self.mat = np.where(full[:, None], np.stack([res[nm] for nm in self.names], axis=1), unknown)
        self.omat = np.where(full[:, None], np.stack([oor[s] for s in self.sig_ids], axis=1), unknown)
        self.quiet = full & (self.mat == NO).all(axis=1) & (self.omat == NO).all(axis=1)
        others = [j for j, nm in enumerate(self.names) if nm != "rule_length_hacking"]
        self.quiet_but_hacking = full & (self.mat[:, others] == NO).all(axis=1) & (self.omat == NO).all(axis=1)

    def drift_windows(self, k: int) -> _DriftAt:
        """RuleContext.drift_windows at op k: per signal drift_up reads (gap, kl, grad_norm), the
        windows of TREND_WINDOWS whose test may pass (_DriftMay says which surely fail; drift_up's
        loop would skip those).  An alert held open runs its rule at every rollout; this saves
        it the windows' tests.  Read lazily: only where a rule calls drift_up."""
        return _DriftAt(self._drift_may(), k)

    def _drift_may(self) -> _DriftMay:
        if self._drift is None:
            self._drift = _DriftMay(self.seg, self.rows, self.mk)
        return self._drift

    def held_rules(self, k: int, open_rules: frozenset, critical: frozenset) -> dict[str, tuple[str, ...]] | None:
        """rules.HELD_RULES at op k: the rules (rule_gap, rule_grad_norm, rule_no_signal,
        rule_off_policy) that
        need not run because each alert they could return is open and critical (`critical`: of
        `open_rules`, those) and holds anyway, with those alerts.

        While such an alert is open its rule runs at every rollout, yet to the state machine only
        presence matters (a critical alert keeps the message of its raise).
        - gap-rising, gap-jump, grad-norm-rising are present whenever rules.drift.still_outside finds
          them: 3 of the last 4 values above the band or the own baseline's edge (surely, with a
          margin; else the rule runs).  rule_grad_norm returns only grad-norm-rising; rule_gap
          only gap-rising while that is open, and otherwise also gap-jump (open) or a new
          gap-rising, which needs an explosion (_drift_vec's test of it) or a drift_up window
          whose test may pass (drift_windows): neither may happen where it is left out.
        - rule_no_signal returns only no-signal, surely where reward is exactly 0 (or 1) on the
          last 2 rollouts or >= 80 % of groups score the same in 3 of the last 4; an open
          no-signal warning (mostly all-right groups: saturation) holds where the rule surely
          returns that warning again (_no_signal_warning_sure), as a warning cannot change.
        - rule_off_policy returns only off-policy, surely where the clip fraction is above 0 on
          the last 2 rollouts with one update each (Miles), or above 0.3 in 3 of the last 4, or
          the first of K updates of the last 2 rollouts clips or moves (Miles)."""
        if not self.full[k] or not (critical or "no-signal" in open_rules):
            return None
        still_gap, calm_gap, still_grad, no_signal, no_signal_warn, off_policy = self.held_arrays()
        out: dict[str, tuple[tuple[str, str], ...]] = {}
        gap_open = tuple(a for a in ("gap-rising", "gap-jump") if a in open_rules)
        if (
            gap_open
            and all(a in critical for a in gap_open)
            and still_gap[k]
            and ("gap-rising" in critical or (calm_gap[k] and self._no_drift(k, ("gap", "kl"))))
        ):
            out["rule_gap"] = tuple((a, "critical") for a in gap_open)
        if "grad-norm-rising" in critical and still_grad[k]:
            out["rule_grad_norm"] = (("grad-norm-rising", "critical"),)
        if "no-signal" in critical and no_signal[k]:
            out["rule_no_signal"] = (("no-signal", "critical"),)
        elif "no-signal" in open_rules and no_signal_warn[k]:  # surely its warning: the open alert stays as it is
            out["rule_no_signal"] = (("no-signal", "warning"),)
        if "off-policy" in critical and off_policy[k]:
            out["rule_off_policy"] = (("off-policy", "critical"),)
        return out or None

    def held_arrays(self) -> tuple[np.ndarray, ...]:
        """_held_arrays' answers for every op, made on first use (held_rules, judge/steady.py)."""
        if self._held is None:
            self._held = _held_arrays(self.seg, self.resolved, self.rows, self.mk)
        return self._held

    def _no_drift(self, k: int, sig_ids: tuple[str, ...]) -> bool:
        """drift_up surely finds no drift at op k for these signals: no window's test may pass."""
        drift = self._drift_may()
        return not any(drift.windows(sig_id, k) for sig_id in sig_ids)

    def oor_held(self, k: int, open_keys) -> frozenset[str] | None:
        """rules.OOR_HELD at op k: the signals whose out-of-range alert is open and whose
        five-step mean is surely outside its range here (_oor_sure): the rule's condition for
        them only keeps a warning open, which a stand-in does (RuleContext.oor_held)."""
        if not self.full[k]:
            return None
        held = []
        for rule, sig_id in open_keys:
            if rule != "out-of-range" or sig_id not in BY_ID:
                continue
            if self.oor_sure(sig_id)[k]:
                held.append(sig_id)
        return frozenset(held) if held else None

    def oor_sure(self, sig_id: str) -> np.ndarray:
        """Per op: this signal's out-of-range condition surely holds (_oor_sure, full ops only),
        made on first use."""
        sure = self._oor.get(sig_id)
        if sure is None:
            end = int(self.rows.max()) + 1
            sure = self._oor[sig_id] = (
                _oor_sure(self.seg, self.resolved, self.seg.id_array()[:end], self.rows, sig_id, self.mk) & self.full
            )
        return sure

    def may(self, rule: str) -> np.ndarray:
        """Per op: the rule may fire there (its gate says maybe, or a scalar gate decides)."""
        if rule not in self.names:
            return np.ones(len(self.rows), bool)
        return self.mat[:, self.names.index(rule)] != NO

    def at(self, k: int) -> dict:
        """{rule: True/False/None (None = scalar gate), "oor": set, "quiet": bool}."""
        if not self.full[k]:
            return {}
        row = self.mat[k].tolist()
        d: dict = {nm: (None if v == UNKNOWN else bool(v)) for nm, v in zip(self.names, row)}
        orow = self.omat[k].tolist()
        # a signal the vectorised gate could not decide (a non-finite value in its last five) is
        # left to the rule: a superset of the scalar gate's answer, so the same conditions
        d["oor"] = frozenset(s for s, v in zip(self.sig_ids, orow) if v != NO)
        d["quiet"] = bool(self.quiet[k])
        return d


def _gate_arrays(seg: Segment, ranges, rows: np.ndarray, memo: dict) -> tuple[dict, dict, object]:
    full = rows >= START
    end = int(rows.max()) + 1
    ids = seg.id_array()[:end]
    rs = ranges_for(seg, ranges, int(ids[rows[full][0]]))
    ctxk = seg.steps_per_rollout
    res: dict[str, np.ndarray] = {}
    res["rule_gap"] = _or(
        _drift_vec(seg, rs, ids, rows, "gap", True, None, memo), _drift_vec(seg, rs, ids, rows, "kl", True, None, memo)
    )
    res["rule_grad_norm"] = _drift_vec(seg, rs, ids, rows, "grad_norm", False, ABSURD.get("grad_norm"), memo)
    res["rule_length_hacking"] = _hacking_vec(seg, rs, ids, rows, memo)
    res["rule_rollout_slowdown"] = _slowdown_vec(seg, rows, memo)
    res["rule_off_policy"] = _off_policy_vec(seg, rows, ctxk)
    res["rule_no_signal"] = _no_signal_vec(seg, ids, rows, memo)
    res["rule_entropy_collapse"] = _entropy_vec(seg, rows)
    res["rule_kl_ref"] = _kl_ref_vec(seg, rows)
    res["rule_entropy_high"] = _entropy_high_vec(seg, rows)
    res["rule_reward_variance"] = _reward_variance_vec(seg, rows)
    res["rule_no_update"] = _no_update_vec(seg, rows)
    oor = {sig_id: _oor_vec(seg, rs, ids, rows, sig_id, memo) for sig_id in BY_ID}
    return res, oor, rs


def _bounds(rs, sig_id: str, ids: np.ndarray):
    """rs.bounds_many(sig_id, ids) without a Python loop over the rollouts for the defaults."""
    if sig_id in rs.envelopes or sig_id in rs.constant or not rs.use_defaults:
        return rs.bounds_many(sig_id, ids)
    sig = BY_ID[sig_id]
    early, whole = sig.early, sig.whole
    if early is None and whole is None:
        return None
    if early is None or whole is None:
        return rs.bounds_many(sig_id, ids)
    is_early = ids < EARLY_ROLLOUTS
    return (np.where(is_early, float(early[0]), float(whole[0])), np.where(is_early, float(early[1]), float(whole[1])))


def _or(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MAYBE if either may fire, else UNKNOWN if either is unknown, else NO."""
    out = np.where((a == UNKNOWN) | (b == UNKNOWN), UNKNOWN, NO).astype(np.int8)
    return np.where((a == MAYBE) | (b == MAYBE), MAYBE, out).astype(np.int8)


def _vals(seg: Segment, name: str | None, end: int) -> np.ndarray:
    if name is None:
        return np.full(end, math.nan)
    return gates.Window.raw(_Raw(seg), name, 0, end)


class _Raw:
    """Just enough of a gates.Window for its `raw` (values_at_rows on a slice)."""

    __slots__ = ("seg",)

    def __init__(self, seg: Segment) -> None:
        self.seg = seg


def _dense(ok: np.ndarray, rows: np.ndarray, w: int) -> np.ndarray:
    """Whether ok holds on all w rows ending at each op's row."""
    c = np.concatenate([[0], np.cumsum(~ok)])
    lo = np.maximum(rows + 1 - w, 0)
    return (c[rows + 1] - c[lo]) == 0


def _last4(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows' last four values, shape (ops, 4): a[row-3 .. row]."""
    return np.stack([a[rows - 3], a[rows - 2], a[rows - 1], a[rows]], axis=1)


def _log(v: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.where(v > 0, v, np.nan))


def _base_min(v_first: np.ndarray) -> float | None:
    lv = _log(v_first)
    lv = lv[np.isfinite(lv)]
    return float(np.min(lv)) if len(lv) >= 3 else None


def _drift_vec(seg, rs, ids, rows, sig_id: str, jump: bool, absurd: float | None, memo: dict) -> np.ndarray:
    end = len(ids)
    name = metric_for(seg, BY_ID[sig_id])
    if name is None:
        return np.full(len(rows), NO, np.int8)
    v = _vals(seg, name, end)
    lv = _log(v)
    ok = np.isfinite(lv)
    dense = _dense(ok, rows, WINDOW)
    res = np.full(len(rows), UNKNOWN, np.int8)
    if not dense.any():
        return res
    base = _base_min(v[:BASE_ROWS])
    b = _bounds(rs, sig_id, ids)
    hi = None if b is None else _log(b[1])
    maybe = _boom_may(lv, rows, base, hi, absurd)
    edge = np.full(end, np.inf)
    if base is not None:
        edge = np.minimum(edge, base + RHO[sig_id])
    if hi is not None:
        edge = np.minimum(edge, np.where(np.isfinite(hi), hi, np.inf))
    with np.errstate(invalid="ignore"):
        above = lv > edge - EPS
    maybe |= (_last4(above, rows).sum(axis=1) >= 3) & _rising(_log_mk(memo, name, lv), rows)
    if jump:
        d = np.diff(lv)  # d[j] = lv[j+1] - lv[j]
        dmax = _sw(np.concatenate([np.full(WINDOW - 2, -np.inf), d]), WINDOW - 1).max(axis=1)
        # the window's diffs end at d[row-1]; its first 37 values end at row-3
        mins = _sw(np.concatenate([np.full(WINDOW - 4, np.inf), lv]), WINDOW - 3).min(axis=1)
        dm = dmax[rows - 1]
        mn = mins[rows - 3]
        with np.errstate(invalid="ignore"):
            hit = (_last4(lv, rows) > (mn + math.log(1.5) - EPS)[:, None]).sum(axis=1) >= 3
        maybe |= (dm >= math.log(1.5) - EPS) & hit
    return np.where(dense, np.where(maybe, MAYBE, NO), UNKNOWN).astype(np.int8)


def _boom_may(
    lv: np.ndarray, rows: np.ndarray, base: float | None, hi: np.ndarray | None, absurd: float | None
) -> np.ndarray:
    """rules._explosion may fire at each op: its last log value x10 beyond every top (the band's,
    the own baseline's, at least `base` (_base_min) + log 3), or beyond the absurd bound."""
    last = lv[rows]
    maybe = np.zeros(len(rows), bool)
    if absurd is not None:
        maybe |= last > math.log(absurd) - EPS
    tops = np.full(len(rows), -np.inf)
    has_top = np.zeros(len(rows), bool)
    if hi is not None:
        h = hi[rows]
        fin = np.isfinite(h)
        tops = np.where(fin, np.maximum(tops, h), tops)
        has_top |= fin
    if base is not None:
        tops = np.maximum(tops, base + math.log(3.0))
        has_top |= True
    maybe |= has_top & (last > tops + math.log(10.0) - EPS)
    return maybe


def _surely_above(a: np.ndarray, edge) -> np.ndarray:
    """a > edge for sure: held.ge's sure part (by a relative hair; never where either is NaN)."""
    return _ge(a, edge).sure


def _held_arrays(seg: Segment, rs, rows: np.ndarray, memo: dict) -> tuple[np.ndarray, ...]:
    """Per op (Answers.held_rules): _still_outside surely finds gap or KL above; rule_gap
    surely returns no new gap-rising by an explosion (for gap and KL); _still_outside surely
    finds grad_norm above; rule_no_signal and rule_off_policy surely return their sign."""
    end = int(rows.max()) + 1
    ids = seg.id_array()[:end]
    full = rows >= START
    # the own baseline is the segment's first rollouts at every full op: the rule's, exactly
    ctx = RuleContext(seg, rs, int(ids[rows[full][0]]), resolved=rs)
    still = {sig_id: _still_sure(seg, rs, ids, rows, sig_id, ctx) for sig_id in ("gap", "kl", "grad_norm")}
    calm = full.copy()  # (and no drift window may pass: Answers.held_rules asks _DriftMay)
    for sig_id in ("gap", "kl"):
        name = metric_for(seg, BY_ID[sig_id])
        if name is None:
            continue  # the rule's series is empty: it returns nothing for this signal
        v = _vals(seg, name, end)
        b = _bounds(rs, sig_id, ids)
        calm &= ~_boom_may(_log(v), rows, _base_min(v[:BASE_ROWS]), None if b is None else _log(b[1]), None)
    return (
        full & (still["gap"] | still["kl"]),
        calm,
        full & still["grad_norm"],
        full & _no_signal_sure(seg, ids, rows, memo),
        full & _no_signal_warning_sure(seg, ids, rows, memo),
        full & _off_policy_sure(seg, rows, end),
    )


def _off_policy_sure(seg: Segment, rows: np.ndarray, end: int) -> np.ndarray:
    """rule_off_policy surely returns a condition: one update per rollout (Miles) and a clip
    fraction above 0 on the last 2 rows; else 3 of the last 4 rows above 0.3, or (Miles) the
    first update of the last 2 rollouts with a clip fraction or ppo_kl above 0 (finite on every
    row read, by a margin)."""
    name = metric_for(seg, BY_ID["clipfrac"])
    if name is None:
        return np.zeros(len(rows), bool)
    cf = _vals(seg, name, end)
    if seg.steps_per_rollout == 1 and seg.framework == "miles":
        ok = (rows >= 1) & _dense(np.isfinite(cf), rows, 2)
        hit = _surely_above(cf, np.float64(1e-6))
        return ok & hit[rows] & hit[rows - 1]
    out = np.zeros(len(rows), bool)
    dense = (rows >= 3) & _dense(np.isfinite(cf), rows, 4)
    out[dense] = _surely_above(_last4(cf, rows[dense]), np.float64(0.3)).sum(axis=1) >= 3
    if seg.framework == "miles":  # K updates: the first update of both last two off fresh weights
        first_cf, first_kl = _first_steps(seg, end)
        hit = _surely_above(first_cf, np.float64(1e-6)) | _surely_above(np.abs(first_kl), np.float64(1e-6))
        hit &= np.isfinite(first_cf)
        out |= (rows >= 1) & _dense(np.isfinite(cf), rows, 2) & hit[rows] & hit[rows - 1]
    return out


def _no_signal_sure(seg: Segment, ids: np.ndarray, rows: np.ndarray, memo: dict) -> np.ndarray:
    """rule_no_signal surely returns a condition: reward exactly 0 (or exactly 1) on the last 2
    rows, both finite; or, with a group count, the zero-std share of the last 4 rows (all
    finite) above 80 % by a margin in 3 of them."""
    out = np.zeros(len(rows), bool)
    rn = metric_for(seg, BY_ID["reward"])
    if rn is not None:
        R = _vals(seg, rn, len(ids))
        a, b = R[rows - 1], R[rows]
        out |= (rows >= 1) & (((a == 0.0) & (b == 0.0)) | ((a == 1.0) & (b == 1.0)))
    if groups_of(seg) is not None:
        frac = _zero_std_rows(seg, len(ids), memo)
        dense = (rows >= 3) & _dense(np.isfinite(frac), rows, 4)
        sel = rows[dense]
        out[dense] |= _surely_above(_last4(frac, sel), np.float64(0.8 - 1e-9)).sum(axis=1) >= 3
    return out


def _no_signal_warning_sure(seg: Segment, ids: np.ndarray, rows: np.ndarray, memo: dict) -> np.ndarray:
    """rule_no_signal surely returns its warning: reward on the last 2 rows finite and not
    exactly 0 (nor 1) on both, >= 80 % of groups all-same on 3 of the last 4 (all finite), and
    at the judged rollout the all-right groups >= 80 % of those, the all-wrong ones below (each
    by a margin): the saturated case's severity."""
    out = np.zeros(len(rows), bool)
    rn = metric_for(seg, BY_ID["reward"])
    if rn is None or groups_of(seg) is None:
        return out
    end = len(ids)
    R = _vals(seg, rn, end)
    a, b = R[rows - 1], R[rows]
    out = (rows >= 3) & np.isfinite(a) & np.isfinite(b) & ~((a == 0.0) & (b == 0.0)) & ~((a == 1.0) & (b == 1.0))
    frac = _zero_std_rows(seg, end, memo)
    out &= _dense(np.isfinite(frac), rows, 4)
    if not out.any():
        return out
    sel = rows[out]
    out[out] = _surely_above(_last4(frac, sel), np.float64(0.8 - 1e-9)).sum(axis=1) >= 3
    if not out.any():
        return out
    wrong, right = _zero_std_rows(seg, end, memo, "wrong"), _zero_std_rows(seg, end, memo, "right")
    edge = 0.8 * frac[rows]
    return out & _lt(wrong[rows], edge).sure & _ge(right[rows], edge).sure


def _still_sure(seg: Segment, rs, ids: np.ndarray, rows: np.ndarray, sig_id: str, ctx) -> np.ndarray:
    """rules.drift.still_outside surely returns a condition for `sig_id` at each op: its last four
    values (rows all finite and positive: the rule's own last four) with 3 above the band's top,
    or 3 above the own baseline's edge in log units, each by a margin."""
    out = np.zeros(len(rows), bool)
    name = metric_for(seg, BY_ID[sig_id])
    if name is None:
        return out
    v = _vals(seg, name, len(ids))
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(v) & (v > 0)
    dense = (rows >= 3) & _dense(ok, rows, 4)
    if not dense.any():
        return out
    sel = rows[dense]
    v4 = _last4(v, sel)
    sure = np.zeros(len(sel), bool)
    b = _bounds(rs, sig_id, ids)
    if b is not None:
        h4 = _last4(np.asarray(b[1], float), sel)
        sure |= _surely_above(v4, h4).sum(axis=1) >= 3
    base = own_base(ctx, sig_id, log=True)
    if base is not None and sig_id in RHO:
        sure |= _surely_above(_log(v4), np.float64(base.centre + RHO[sig_id])).sum(axis=1) >= 3
    out[dense] = sure
    return out


DRIFT_SIGNALS = ("gap", "kl", "grad_norm")  # the signals whose rules call drift_up on log values


class _DriftMay:
    """Per signal drift_up reads on log values (DRIFT_SIGNALS) and window w of TREND_WINDOWS,
    per op: the window's test may pass (Answers.drift_windows).  Made in chunks of ops when
    first read: a healthy run's rules seldom call drift_up, so most chunks are never made."""

    CHUNK = 1024

    def __init__(self, seg: Segment, rows: np.ndarray, memo: dict) -> None:
        self.rows = rows
        end = int(rows.max()) + 1
        self.idf = seg.id_array()[:end].astype(float)
        self.sig: dict[str, tuple] = {}  # a signal without a metric is left out (its rule reads nothing)
        for sig_id in DRIFT_SIGNALS:
            name = metric_for(seg, BY_ID[sig_id])
            if name is not None:
                lv = _log(_vals(seg, name, end))
                self.sig[sig_id] = (
                    lv,
                    np.isfinite(lv),
                    _log_mk(memo, name, lv),
                    {w: np.ones(len(rows), bool) for w in TREND_WINDOWS},
                    np.zeros((len(rows) + self.CHUNK - 1) // self.CHUNK, bool),
                )

    def windows(self, sig_id: str, k: int) -> frozenset | None:
        """The windows of TREND_WINDOWS whose test may pass at op k (None: no such signal)."""
        got = self.sig.get(sig_id)
        if got is None:
            return None
        may, done = got[3], got[4]
        if not done[k // self.CHUNK]:
            self._make(sig_id, k // self.CHUNK)
        return frozenset(w for w in TREND_WINDOWS if may[w][k])

    def none_may(self, sig_ids: tuple[str, ...], lo: int, hi: int) -> np.ndarray:
        """Per op lo..hi-1: no window of these signals may pass (not any(windows(s, k)), as
        Answers._no_drift reads it; a signal without a metric has none)."""
        out = np.ones(hi - lo, bool)
        for sig_id in sig_ids:
            got = self.sig.get(sig_id)
            if got is None:
                continue
            may, done = got[3], got[4]
            for chunk in range(lo // self.CHUNK, (hi - 1) // self.CHUNK + 1):
                if not done[chunk]:
                    self._make(sig_id, chunk)
            for w in TREND_WINDOWS:
                out &= ~may[w][lo:hi]
        return out

    def _make(self, sig_id: str, chunk: int) -> None:
        """A window surely fails where the rule's last w values are surely the column's last w
        rows (all finite and positive: the rule's own series drops the others) and its p is
        surely >= alpha (no ties and an S below the smallest significant one less one, as the
        gate's _rising; or with ties the p itself, as stats.mk_p_up computes it: held.mk_p_from_s)
        or its Theil-Sen rise is below rho (drift_up's `need` is at least that): a hair's margin."""
        lv, ok, mk, may, done = self.sig[sig_id]
        lo, hi = chunk * self.CHUNK, min(len(self.rows), (chunk + 1) * self.CHUNK)
        rows = self.rows[lo:hi]
        for w in TREND_WINDOWS:
            may[w][lo:hi] = ~_window_fails(self.idf, lv, ok, mk, rows, w, RHO[sig_id])
        done[chunk] = True


def _window_fails(
    idf: np.ndarray, lv: np.ndarray, ok: np.ndarray, mk: dict, rows: np.ndarray, w: int, rho: float
) -> np.ndarray:
    """Per op: drift_up's test of window w surely fails on the series lv (ok: where its rule's
    series has a point) - see _DriftMay._make."""
    s, ties = mk[w]
    alpha = ALPHA_SHORT if w <= 10 else ALPHA_LONG
    sure = (rows >= w - 1) & _dense(ok, rows, w)
    fails = sure & ~ties[rows] & (s[rows] < stats.s_needed(w, alpha) - 1)
    tied_ops = sure & ties[rows]
    tied = rows[tied_ops]
    if len(tied):
        p = stats.rows_mk_p_from_s(s[tied], np.ones(len(tied), bool), lambda idx: _windows(lv, tied[idx], w), w)
        fails[tied_ops] = p >= alpha * (1.0 + 1e-9)
    left = np.flatnonzero(sure & ~fails)
    if len(left):
        rise = _ts_rise(idf, lv, rows[left], w)
        with np.errstate(invalid="ignore"):
            fails[left] = ~(rise > rho - 1e-9 * np.maximum(1.0, np.abs(rise)))
    return fails


class _DriftAt:
    """RuleContext.drift_windows at one op: per signal, read (and made) only when a rule asks."""

    __slots__ = ("drift", "k")

    def __init__(self, drift: _DriftMay, k: int) -> None:
        self.drift = drift
        self.k = k

    def get(self, sig_id: str) -> frozenset | None:
        return self.drift.windows(sig_id, self.k)


def _windows(x: np.ndarray, rows: np.ndarray, w: int) -> np.ndarray:
    """x[row-w+1 .. row] for each op row, shape (ops, w)."""
    if len(rows) and int(rows.min()) >= w - 1:
        return _sw(x, w)[rows - (w - 1)]  # (rows of a strided view: no index matrix)
    return x[(rows[:, None] - (w - 1)) + np.arange(w)[None, :]]


def _mk_memo(memo: dict, name: str | tuple | None, x: np.ndarray, windows: tuple) -> dict:
    """_mk_rows of a metric's column (non-finite values as 0), once per name, length and windows
    (the gates and judge/held.py read the same ones)."""
    key = (name, len(x), windows)
    got = memo.get(key) if name is not None else None
    if got is None:
        got = stats.windowed_mk_s(np.where(np.isfinite(x), x, 0.0), windows)
        if name is not None:
            memo[key] = got
    return got


def _log_mk(memo: dict, name: str, lv: np.ndarray) -> dict:
    """_mk_rows over TREND_WINDOWS of a metric's log values, once per bulk judging (the gate's
    _rising and Answers.drift_windows read the same)."""
    return _mk_memo(memo, ("log", name), lv, TREND_WINDOWS)


def _rising(mk: dict, rows: np.ndarray) -> np.ndarray:
    """drift_up's trend test, a necessary part: on some window w of TREND_WINDOWS, Mann-Kendall's
    one-sided p_up below its alpha (S at its no-ties threshold, less one; a window with ties:
    maybe), from the windows' S and ties (_log_mk).  Only rows with a whole finite window are
    read (the others are UNKNOWN)."""
    out = np.zeros(len(rows), bool)
    for w in TREND_WINDOWS:
        s, ties = mk[w]
        alpha = ALPHA_SHORT if w <= 10 else ALPHA_LONG
        out |= (rows >= w - 1) & (ties[rows] | (s[rows] >= stats.s_needed(w, alpha) - 1))
    return out


TS_CHUNK = 2048  # ops a batch: bounded memory (a run that holds length-hacking asks at
# nearly every op; 12,800 ops of 32 took 180 MB in one batch, 8 MB a chunk)


def _ts_rise(s: np.ndarray, x: np.ndarray, rows: np.ndarray, w: int) -> np.ndarray:
    """Theil-Sen rise (median pairwise slope x the id span) of each op's last w points."""
    if len(rows) > TS_CHUNK:
        return np.concatenate([_ts_rise(s, x, rows[a : a + TS_CHUNK], w) for a in range(0, len(rows), TS_CHUNK)])
    ws, wx = _windows(s, rows, w), _windows(x, rows, w)
    slope = stats.rows_median(stats.pair_slopes(ws, wx))
    return slope * (ws[:, -1] - ws[:, 0])


def _med4(a: np.ndarray) -> np.ndarray:
    return stats.rows_median(a)


def _hacking_vec(seg, rs, ids, rows, memo: dict | None = None) -> np.ndarray:
    """Every firing path of rule_length_hacking needs, on one window w: length's Mann-Kendall
    p_up < 0.05 and reward's p_down < 0.10 (S beyond the no-ties threshold; a window with
    ties is a maybe) and the window's last-4 reward median below its first-4 - or reward below
    its band in 3 of the last 4 with length's p_up < 0.05 on 8."""
    end = len(ids)
    ln, rn = metric_for(seg, BY_ID["length"]), metric_for(seg, BY_ID["reward"])
    if ln is None or rn is None:
        return np.full(len(rows), NO, np.int8)
    L, R = _vals(seg, ln, end), _vals(seg, rn, end)
    dense = _dense(np.isfinite(L) & np.isfinite(R), rows, WINDOW)
    res = np.full(len(rows), UNKNOWN, np.int8)
    if not dense.any() or WINDOW < HACK_MIN:
        return res
    sel = rows[dense]
    L0, R0 = np.where(np.isfinite(L), L, 0.0), np.where(np.isfinite(R), R, 0.0)
    maybe = np.zeros(len(sel), bool)
    last4 = _med4(_windows(R0, sel, 4))
    band = np.zeros(len(sel), bool)  # reward below its band in 3 of the last 4
    b = _bounds(rs, "reward", ids)
    if b is not None:
        lo = b[0]
        lo_fin = _last4(np.isfinite(lo), sel).all(axis=1)
        with np.errstate(invalid="ignore"):
            band = lo_fin & ((_last4(R0, sel) < _last4(lo, sel) + EPS).sum(axis=1) >= 3)
    idf = ids.astype(float)
    memo = {} if memo is None else memo
    mk_l, mk_r = _mk_memo(memo, ln, L, (8, 12, 16, 24, 32)), _mk_memo(memo, rn, R, (8, 12, 16, 24, 32))
    for w in (8, 12, 16, 24, 32):
        sl, tl = mk_l[w][0][sel], mk_l[w][1][sel]
        sr, tr = mk_r[w][0][sel], mk_r[w][1][sel]
        up = tl | (sl >= stats.s_needed(w, 0.05) - 1)
        down = tr | (-sr >= stats.s_needed(w, 0.10) - 1)
        whole = sel >= w - 1  # (a row before has no window of w)
        first4 = np.full(len(sel), np.nan)
        first4[whole] = _med4(_windows(R0, sel[whole] - (w - 4), 4))
        cand = whole & up & (last4 < first4 + EPS)
        up8 = cand & band if w == 8 else None  # the band path (length up on 8, reward below)
        cand &= down & ~maybe  # (a row already maybe needs no other window)
        # sizes: length's Theil-Sen rise >= 15 % of its median, reward's fall >= 0.03
        k = np.flatnonzero(cand | up8) if up8 is not None else np.flatnonzero(cand)
        if len(k):
            rl = _ts_rise(idf, L0, sel[k], w)
            wl = _windows(L0, sel[k], w)
            big = rl >= 0.15 * np.abs(stats.rows_median(wl)) - EPS * np.maximum(1.0, np.abs(rl))
            if up8 is not None:
                up8[k] &= big
            kk = k[cand[k] & big]  # reward's fall: only where length's rise is big
            cand[k] = False
            if len(kk):
                cand[kk] = -_ts_rise(idf, R0, sel[kk], w) >= 0.03 - EPS
        maybe |= cand
        if up8 is not None:
            maybe |= up8
    res[dense] = np.where(maybe, MAYBE, NO)
    return res


def _slowdown_vec(seg, rows, memo: dict) -> np.ndarray:
    end = int(rows.max()) + 1
    tname = metric_for(seg, BY_ID["rollout_time"])
    if tname is None:
        return np.full(len(rows), NO, np.int8)
    if tname != "perf/rollout_time":
        return np.full(len(rows), MAYBE, np.int8)
    norm = "rollout/response_len/max" if "rollout/response_len/max" in seg.columns else metric_for(seg, BY_ID["length"])
    if norm is None:
        return np.full(len(rows), NO, np.int8)
    T, N = _vals(seg, tname, end), _vals(seg, norm, end)
    with np.errstate(divide="ignore", invalid="ignore"):
        lt, per_tok = _log(T), np.log(T / N)
    ok = np.isfinite(T) & np.isfinite(N) & (N > 0) & np.isfinite(lt) & np.isfinite(per_tok)
    dense = _dense(ok, rows, WINDOW)
    res = np.full(len(rows), UNKNOWN, np.int8)
    if not dense.any():
        return res
    sel = rows[dense]
    pt = np.where(ok, per_tok, 0.0)
    low = _window_head_min(pt, sel)
    bT, bN = _vals(seg, "perf/rollout_time", min(BASE_ROWS, end)), _vals(seg, norm, min(BASE_ROWS, end))
    with np.errstate(divide="ignore", invalid="ignore"):
        b_tok = np.log(bT / bN)
    b_tok = b_tok[np.isfinite(b_tok)]
    if len(b_tok) >= 3:
        low = np.minimum(low, float(np.min(b_tok)))
    mean4 = _last4(pt, sel).mean(axis=1)
    maybe = mean4 > low + RHO["rollout_time"] - EPS
    if maybe.any():
        # and drift_up on per-token time needs a window whose test may pass (the rule's last 40
        # points are these rows': all ok); a held slowdown that no longer grows has none
        lv = np.where(ok, per_tok, math.nan)
        mk = _mk_memo(memo, ("per token", tname, norm), lv, TREND_WINDOWS)
        idf = seg.id_array()[:end].astype(float)
        at = sel[maybe]
        fails = np.ones(len(at), bool)
        for w in TREND_WINDOWS:
            fails &= _window_fails(idf, lv, ok, mk, at, w, RHO["rollout_time"])
        maybe[np.flatnonzero(maybe)[fails]] = False
    res[dense] = np.where(maybe, MAYBE, NO)
    return res


def _window_head_min(pt: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """The smallest of the first `head` values of each row's window (rows max(0, r-39)..r, all
    finite), head = min(8, max(4, length // 4)) as rule_rollout_slowdown takes its start level."""
    lo = np.maximum(sel - (WINDOW - 1), 0)
    head = np.minimum(8, np.maximum(4, (sel - lo + 1) // 4))
    firsts = _sw(np.concatenate([pt, np.full(7, np.inf)]), 8)[lo]  # pt[lo .. lo+7]
    return np.where(np.arange(8)[None, :] < head[:, None], firsts, np.inf).min(axis=1)


def _off_policy_vec(seg, rows, k: int) -> np.ndarray:
    end = int(rows.max()) + 1
    name = metric_for(seg, BY_ID["clipfrac"])
    if name is None:
        return np.full(len(rows), NO, np.int8)
    cf = _vals(seg, name, end)
    if k != 1 or seg.framework != "miles":
        return _off_policy_k_vec(seg, rows, cf, end)
    dense = _dense(np.isfinite(cf), rows, 2)
    kl = _vals(seg, "train/ppo_kl", end)
    kl = np.where(np.isfinite(kl), kl, 0.0)
    with np.errstate(invalid="ignore"):
        bad = (cf > 1e-6 - EPS) | (np.abs(kl) > 1e-6 - EPS)
    maybe = bad[rows] | bad[rows - 1]
    return np.where(dense, np.where(maybe, MAYBE, NO), UNKNOWN).astype(np.int8)


def _off_policy_k_vec(seg, rows, cf: np.ndarray, end: int) -> np.ndarray:
    """rule_off_policy with K updates per rollout (or verl/TRL): it may fire only where the
    first update of both last two rollouts has a clip fraction or ppo_kl above 1e-6 (Miles), or
    3 of the last 4 clip fractions are above 0.3.  Read where the last four rows are all finite
    (the rule's last values are then theirs); elsewhere the rule decides."""
    fin = np.isfinite(cf)
    dense = _dense(fin, rows, 4)
    with np.errstate(invalid="ignore"):
        high = np.concatenate([np.zeros(3, np.int8), (cf > 0.3 - EPS).astype(np.int8)])  # 3 rows before row 0
    hits = high[rows] + high[rows + 1] + high[rows + 2] + high[rows + 3]  # rows r-3 .. r
    maybe = (rows >= 3) & (hits >= 3)
    if seg.framework == "miles":
        first_cf, first_kl = _first_steps(seg, end)
        with np.errstate(invalid="ignore"):
            bad = np.isfinite(first_cf) & ((first_cf > 1e-6 - EPS) | (np.abs(first_kl) > 1e-6 - EPS))
        maybe |= (rows >= 1) & bad[rows] & bad[np.maximum(rows - 1, 0)]
    out = np.where(dense, np.where(maybe, MAYBE, NO), UNKNOWN)
    return np.where(fin[rows], out, NO).astype(np.int8)  # the rule needs the judged one's value


def _first_steps(seg, end: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, what first_step reads of the rollout's first actor update: its clip
    fraction (NaN where it has none or it is not a finite number: first_step leaves the rollout
    out) and its ppo_kl (0 where not a finite number)."""
    cf, kl = np.full(end, math.nan), np.zeros(end)
    row_of = seg.row_of
    for r, v, k in first_step(seg, np.asarray(seg.ids[:end])):
        cf[row_of[r]], kl[row_of[r]] = v, k
    return cf, kl


def _entropy_vec(seg, rows) -> np.ndarray:
    """3 of the last 4 below 15 % of the largest of the first three (its median is smaller)."""
    from .rules.policy import ENTROPY_SHARE

    name = metric_for(seg, ENTROPY)
    if name is None:
        return np.full(len(rows), NO, np.int8)
    end = int(rows.max()) + 1
    start = _vals(seg, name, min(3, end))
    start = start[np.isfinite(start)]
    if len(start) < 3 or not float(np.max(start)) > 1e-9 - EPS:
        return np.full(len(rows), NO, np.int8)  # not observed (Miles logs 0.0): never fires
    v = _vals(seg, name, end)
    fin = np.isfinite(v)
    dense = _dense(fin, rows, 4)
    with np.errstate(invalid="ignore"):
        hit = (_last4(v, rows) < ENTROPY_SHARE * float(np.max(start)) + EPS).sum(axis=1) >= 3
    out = np.where(dense, np.where(hit, MAYBE, NO), UNKNOWN)
    return np.where(fin[rows], out, NO).astype(np.int8)


def _kl_ref_vec(seg, rows) -> np.ndarray:
    """rule_kl_ref may fire only where one of its last four values reaches KL_REF_FLOOR (every
    branch needs one: above 10, a jump to at least 0.05, or three at or above 0.1)."""
    from .rules.policy import KL_REF, KL_REF_FLOOR

    return _any_of_last4(seg, KL_REF, rows, lambda w: w >= KL_REF_FLOOR - EPS)


def _any_of_last4(seg, sig, rows, test) -> np.ndarray:
    """MAYBE where `test` holds for one of the op's last four values, NO where for none or where
    the op has no value (such a rule needs one); UNKNOWN where one of the four is not finite
    (the rule then reads further back)."""
    name = metric_for(seg, sig)
    if name is None:
        return np.full(len(rows), NO, np.int8)
    v = _vals(seg, name, int(rows.max()) + 1)
    fin = np.isfinite(v)
    with np.errstate(invalid="ignore"):
        hit = test(np.where(fin, v, np.nan)[np.maximum(rows[:, None] - np.arange(4)[None, :], 0)]).any(axis=1)
    out = np.where(_dense(fin, rows, 4), np.where(hit, MAYBE, NO), UNKNOWN)
    return np.where(fin[rows], out, NO).astype(np.int8)


def _entropy_high_vec(seg, rows) -> np.ndarray:
    """rule_entropy_high may fire only where entropy is at the ceiling at the op's rollout."""
    from .rules.policy import ENTROPY_CEILING

    name = metric_for(seg, ENTROPY)
    if name is None:
        return np.full(len(rows), NO, np.int8)
    v = _vals(seg, name, int(rows.max()) + 1)
    with np.errstate(invalid="ignore"):
        return np.where(v[rows] >= ENTROPY_CEILING - EPS, MAYBE, NO).astype(np.int8)


def _reward_variance_vec(seg, rows) -> np.ndarray:
    """rule_reward_variance may fire only where one of the last four reward stds is above 0
    (x10 of a positive level)."""
    from .rules.learning_signal import REWARD_STD

    return _any_of_last4(seg, REWARD_STD, rows, lambda w: w > 0)


def _no_update_vec(seg, rows) -> np.ndarray:
    """rule_no_update may fire only where the gradient norm is exactly 0 at the op's rollout."""
    name = metric_for(seg, BY_ID["grad_norm"])
    if name is None:
        return np.full(len(rows), NO, np.int8)
    v = _vals(seg, name, int(rows.max()) + 1)
    return np.where(v[rows] == 0.0, MAYBE, NO).astype(np.int8)


def _zero_std_rows(seg, end: int, memo: dict | None = None, part: str = "total") -> np.ndarray | None:
    """The zero-std share per row (NaN where the rule's series has no point); `part`: of all
    groups (total), or of the all-wrong or all-right ones (signals.zero_std_parts)."""
    key = ("zero_std rows", end, part)
    if memo is not None and key in memo:
        return memo[key]
    rows = np.arange(end)
    got_ids, vals = signal_at_rows(seg, BY_ID["zero_std"], rows) if part == "total" else zero_std_parts(seg, rows)[part]
    out = np.full(end, math.nan)
    if len(got_ids):
        out[_rows_of(seg, got_ids, end)] = vals
    if memo is not None:
        memo[key] = out
    return out


def _rows_of(seg, got_ids, end: int):
    """The rows of these rollout ids: by binary search in the ordered id column (checked)."""
    ids = seg.id_array()[:end]
    want = np.asarray(got_ids)
    if want.dtype.kind in "iu" and ids.dtype.kind in "iu" and len(ids):
        pos = np.minimum(np.searchsorted(ids, want), len(ids) - 1)
        if np.array_equal(ids[pos], want):
            return pos
    return [seg.row_of[int(r)] for r in got_ids]


def _no_signal_vec(seg, ids, rows, memo: dict | None = None) -> np.ndarray:
    end = len(ids)
    rn = metric_for(seg, BY_ID["reward"])
    res = np.zeros(len(rows), np.int8)
    unknown = np.zeros(len(rows), bool)
    if rn is not None:
        R = _vals(seg, rn, end)
        dense = _dense(np.isfinite(R), rows, 2)
        a, b = R[rows - 1], R[rows]
        hit = ((a == 0.0) & (b == 0.0)) | ((a == 1.0) & (b == 1.0))
        res |= (dense & hit).astype(np.int8)
        unknown |= ~dense & np.isfinite(b)
    if groups_of(seg) is not None:
        frac = _zero_std_rows(seg, end, memo)
        dense = _dense(np.isfinite(frac), rows, 4)
        with np.errstate(invalid="ignore"):
            hit = _last4(frac, rows) > 0.65 - 1e-9 - EPS
        res |= (dense & (hit.sum(axis=1) >= 3)).astype(np.int8)
        unknown |= ~dense & np.isfinite(frac[rows])
    return np.where(res > 0, MAYBE, np.where(unknown, UNKNOWN, NO)).astype(np.int8)


def _oor_vec(seg, rs, ids, rows, sig_id: str, memo: dict | None = None) -> np.ndarray:
    """Whether out-of-range must look at this signal: its five-step mean near or outside
    its range (UNKNOWN where the last five rows are not all finite)."""
    got = _mean5_band(seg, rs, ids, rows, sig_id, memo)
    if got is None:
        return np.full(len(rows), NO, np.int8)
    m, lo, hi, tol, slack, dense, last_missing = got
    with np.errstate(invalid="ignore"):
        inside = (lo - tol + slack < m) & (m < hi + tol - slack)
    no_band = ~(np.isfinite(lo) & np.isfinite(hi))
    out = np.where(dense, np.where(inside, NO, MAYBE), UNKNOWN)
    out = np.where(no_band, UNKNOWN, out)
    return np.where(last_missing, NO, out).astype(np.int8)


def _oor_sure(seg, rs, ids, rows, sig_id: str, memo: dict | None = None) -> np.ndarray:
    """Whether rule_out_of_range surely returns this signal's condition at each op: its
    five-step mean (the last five rows, all finite) outside its finite range by a margin."""
    got = _mean5_band(seg, rs, ids, rows, sig_id, memo)
    if got is None or (sig_id == "clipfrac" and seg.steps_per_rollout > 1):
        return np.zeros(len(rows), bool)  # (the rule skips clipfrac at K > 1)
    m, lo, hi, tol, slack, dense, last_missing = got
    healthy = BY_ID[sig_id].healthy_beyond  # (signals.beyond_is_healthy: a side the rule may let pass)
    with np.errstate(invalid="ignore"):
        above = m > hi + tol + slack
        below = m < lo - tol - slack
    if healthy == "above":
        above = np.zeros(len(m), bool)
    elif healthy == "below while reward holds":
        below &= _reward_fails(seg, rs, ids, rows, memo)
    return dense & ~last_missing & np.isfinite(lo) & np.isfinite(hi) & (above | below)


def _reward_fails(seg, rs, ids, rows, memo: dict | None) -> np.ndarray:
    """Per op: signals.reward_holds is surely False there: no reward band or value at the op, or
    its five-step mean surely below its band."""
    got = _mean5_band(seg, rs, ids, rows, "reward", memo)
    if got is None:
        return np.ones(len(rows), bool)
    m, lo, _hi, tol, slack, dense, last_missing = got
    with np.errstate(invalid="ignore"):
        low = dense & (m < lo - tol - slack)
    return last_missing | ~np.isfinite(lo) | low


def _mean5_band(seg, rs, ids, rows, sig_id: str, memo: dict | None):
    """(five-step mean, lo, hi, tol, slack, dense, last missing) per op, as rule_out_of_range
    reads them (None: the rule reads no band or no metric for this signal)."""
    end = len(ids)
    if sig_id == "zero_std":
        if groups_of(seg) is None:
            return None
        v = _zero_std_rows(seg, end, memo)
    else:
        name = metric_for(seg, BY_ID[sig_id])
        if name is None:
            return None
        v = _vals(seg, name, end)
    b = _bounds(rs, sig_id, ids)
    if b is None:
        return None
    fin = np.isfinite(v)
    dense = _dense(fin, rows, MEAN_WINDOW)
    last_missing = ~fin[rows]  # no point at this rollout: the rule skips it
    v0 = np.where(fin, v, 0.0)
    m = _sw(np.concatenate([np.zeros(MEAN_WINDOW - 1), v0]), MEAN_WINDOW).mean(axis=1)[rows]
    lo, hi = b[0][rows], b[1][rows]
    tol = np.where(lo == hi, 1e-6, 0.0)
    slack = EPS * np.maximum(1.0, np.maximum(np.abs(lo), np.abs(hi)))
    return m, lo, hi, tol, slack, dense, last_missing


__all__ = ["BulkMismatch", "replay"]
