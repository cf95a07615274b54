"""Whole-history judging in bulk (issue #11): a finished file, the dashboard's history fill.

While the history is read, the engine records what each store update completed (events with
the rollout they fell on, and each rollout as it became complete: `HealthEngine.defer`).
`replay` then judges the recording:

1. It checks that the store did not change under a recorded rollout: no row its rules read (its
   40-rollout window, the first 10 rollouts) was written after it was recorded, and the
   segment's shape (metric names, framework, flags, K, groups, row order) is the final one.
   So every recorded rollout reads now exactly what it read then; otherwise BulkMismatch and
   the caller judges the input rollout by rollout.
2. It asks the rules written over columns for every recorded rollout at once (their own
   answers, judge/bulk_answers.py), and computes the vectorised gates of the others
   (judge/bulk_vec.py: necessary conditions on sliding windows).
3. It runs the alert state machine over the recording in order: events as they came, each
   rollout's conditions (the rules over columns as computed; the others only where a gate
   says they may fire, or an alert they hold is open), raise / escalate / clear exactly as
   the incremental engine does.  It steps over the rollouts where nothing can change: no
   alert open and no rule may fire, or the open alerts hold by their rules' answers and
   nothing else may fire (judge/steady.py).

The alerts are those of rollout-by-rollout judging (tests/equivalence/test_fast_judge.py
compares them, ids, rollouts, severities, messages and evidence, on every scenario, seed,
setup and sample log).  The bulk answers start at row START, once the baseline (first 10
rollouts) and the ranges' fit (first 5) are settled; the first START rollouts are judged as
rollout by rollout.
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, contains, eq, itemgetter

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view as _sw

from ..store.metric_store import Segment
from . import rules
from .bulk_answers import Answers
from .bulk_vec import BASE_ROWS
from .mismatch import BulkMismatch
from .rules import evaluate_metrics
from .rules.base import (
    WINDOW,
)
from .steady import Steady


def replay(eng, tape: list, seg: Segment, touch: dict[int, int], stamp_now: int) -> list:
    from .engine import _EV, JUDGED_EVENTS, _shape

    judged = [op for op in tape if op[0] != _EV]
    rows = np.empty(0, np.int64)  # (no rollout recorded: only events, the loop never asks the arrays)
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
    skip_quiet = seg.ordered  # (evaluate_metrics' own quiet test)
    nonfinite = seg.nonfinite
    # (Python lists: the loop reads one entry per rollout)
    quiet = ans.quiet.tolist()
    op_rows = ans.rows.tolist()
    k_of, calm_next, steady = _calm_skips(tape, ans if judged else None, nonfinite, skip_quiet, _EV, JUDGED_EVENTS)
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
        if skip_quiet and quiet[k] and not eng.book.open and not eng.troubled and not nonfinite.get(op_rows[k]):
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
        ):
            # only the open length-hacking alert's rule may return a condition: does it hold?
            conds = [rules.kept_open()] if ans.hacking_present(np.array([k]))[0] else []
        elif (
            skip_quiet
            and not held_open
            and ans.quiet_but_hacking[k]
            and not nonfinite.get(op_rows[k])
            and not ans.hacking_signs(np.array([k]))[0]
        ):
            conds = []  # only rule_length_hacking may fire, and its sign does not show
        else:
            pre = ans.at(k)
            if pre and skip_quiet and "length-hacking" in open_rules and _critical(eng, "length-hacking"):
                pre[rules.HACKING_HELD] = bool(ans.hacking_present(np.array([k]))[0])
            elif pre and skip_quiet and pre.get("rule_length_hacking") and not ans.hacking_signs(np.array([k]))[0]:
                pre["rule_length_hacking"] = False  # its sign does not show: it returns nothing
            conds = evaluate_metrics(seg, eng.ranges, r, open_rules, pre=pre)
        conds.extend(eng.event_conditions(seg, r))
        if conds or eng.book.open:
            changes.extend(eng.judged(conds, r))
    if tape:  # (the time the loop would have left, had it stepped through every op)
        eng.set_log_time(tape[-1][3] if tape[-1][0] == _EV else tape[-1][2])
    return changes


def _calm_skips(
    tape: list, ans, nonfinite: dict, skip_quiet: bool, ev: int, judged_events
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
        if USE_STEADY:
            steady = Steady(ans, judged, k_list, ev_pos[need[ev_pos]], odd)
    else:
        need[jpos] = True
    at = np.where(need, np.arange(n), n)
    calm_next = np.minimum.accumulate(at[::-1])[::-1]
    return k_list, calm_next.tolist(), steady


USE_STEADY = True  # (tests turn it off to exercise the op-by-op path)


_LH = frozenset({"length-hacking"})


def _critical(eng, rule: str) -> bool:
    """The open alert of `rule` is critical: a condition can only keep it open, never change it."""
    a = eng.book.open.get((rule, None))
    return a is not None and a.severity == "critical"


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


__all__ = ["BulkMismatch", "replay"]
