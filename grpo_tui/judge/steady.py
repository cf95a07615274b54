"""Stretches of a replay where the open alerts surely stay as they are (judge/bulk.py).

A broken run holds its alerts open to the end: gap-jump and its out-of-range warnings from the
onset on, say.  Rollout by rollout, each of those rollouts runs the rules only to learn that
every open alert holds, at the severity it has, and that nothing else fires: the state machine
then only sets each open alert's miss count to 0.  `Steady` finds such rollouts for a set of
open alerts with the arrays judge/bulk.py already has, a chunk of ops at a time, so `replay`
can step over a stretch of them at once.

An op is steady for the open alerts O (each key with its severity) when:
- its row is full (settled baseline) and holds no non-finite value;
- every alert of O holds there by its rule's own answer over the columns: gap-jump, gap-rising
  and grad-norm-rising (critical) by their latch (rules.drift.LatchTest), no-signal and
  off-policy where their rule fires (a warning only where it fires as a warning), out-of-range
  of a signal where RangeTest fires for it; length-hacking (critical) where its latch holds or
  its sign shows (rules.hacking.HackingTest);
- no other rule may return anything: the rules over columns say so exactly, the others' gates
  say NO (necessary conditions; length-hacking: or its sign does not show), and for
  a gap-jump without gap-rising no explosion or drift window may raise gap-rising.
Then the rules return exactly a condition per open alert, none escalates, and the state
machine only resets the misses.  Anything else - an event alert, a warning that could
escalate, a gate that could not decide - is left to the op-by-op path.
"""

from __future__ import annotations

import numpy as np

from . import rules

# the alerts a steady stretch can keep open, and the rule that holds each
_RULE_OF = {
    "gap-jump": "rule_gap",
    "gap-rising": "rule_gap",
    "grad-norm-rising": "rule_grad_norm",
    "no-signal": "rule_no_signal",
    "off-policy": "rule_off_policy",
    "length-hacking": "rule_length_hacking",
    "out-of-range": "rule_out_of_range",
}
_GATED_ELSEWHERE = frozenset({"rule_non_finite", "rule_out_of_range"})  # (nonfinite rows; RangeTest)
NO, MAYBE = 0, 1  # (judge/bulk.py's gate answers)
# Answers.held_arrays' arrays, in its order (bulk._held_arrays)
_HELD_ARRAYS = ("still_gap", "still_grad")
FIRST_CHUNK, MAX_CHUNK = 32, 2048
MAX_SETS = 64  # open-alert sets remembered (a run seldom has more than a handful)


class Steady:
    """`next_busy(t, open_alerts)`: the first tape position from t on that replay must judge
    op by op while these alerts are open (an event it acts on, or an op that is not steady)."""

    def __init__(
        self, ans, tape_judged: np.ndarray, k_of: list, busy_events: np.ndarray, nonfinite_ops: np.ndarray
    ) -> None:
        self.ans = ans
        self.jpos = np.flatnonzero(tape_judged)  # tape position of each op
        self.k_of = k_of  # per position: ops before it
        self.n_ops = len(self.jpos)
        self.n = len(tape_judged)
        self.events = busy_events  # positions of the events replay acts on
        self.clean = ans.full & ~nonfinite_ops
        self.col = {nm: j for j, nm in enumerate(ans.names)}
        ungated = {r.__name__ for r in rules.METRIC_RULES} - set(ans.names) - _GATED_ELSEWHERE
        self.usable = bool(ans.names) and not ungated and ans.full.any()
        self._masks: dict[frozenset, tuple[np.ndarray, np.ndarray]] = {}

    def next_busy(self, t: int, open_alerts: dict) -> int:
        """The first position >= t that is an event replay acts on or an op that is not steady
        for these open alerts (t itself where nothing can be stepped over; n at the end)."""
        if not self.usable or t >= self.n:
            return t
        opened = frozenset((key, a.severity) for key, a in open_alerts.items())
        e = int(np.searchsorted(self.events, t))
        stop = int(self.events[e]) if e < len(self.events) else self.n
        k = self.k_of[t]
        k_stop = self.k_of[stop] if stop < self.n else self.n_ops
        got = self._masks.get(opened)
        if got is None:
            if len(self._masks) >= MAX_SETS:
                return t
            got = self._masks[opened] = (np.zeros(self.n_ops, bool), np.zeros(self.n_ops, bool))
        steady, known = got
        chunk = FIRST_CHUNK
        while k < k_stop:
            hi = min(k_stop, k + chunk)
            bad = np.flatnonzero(~(known[k:hi] & steady[k:hi]))
            if not len(bad):
                k = hi
                chunk = min(MAX_CHUNK, chunk * 2)
                continue
            j = k + int(bad[0])
            if not known[j]:  # (the mask is made only up to there: past a busy op nothing is asked)
                todo = np.flatnonzero(~known[j:hi])
                hi2 = j + int(todo[-1]) + 1
                steady[j:hi2], undecided = self._mask(opened, j, hi2)
                known[j:hi2] = ~undecided
                if known[j] and steady[j]:
                    k = j
                    continue
            return int(self.jpos[j])
        return stop

    def steps_over_ops(self, t: int, to: int) -> bool:
        """Whether positions t..to-1 hold an op (not only events)."""
        return (self.k_of[to] if to < self.n else self.n_ops) > self.k_of[t]

    def _mask(self, opened: frozenset, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Per op lo..hi-1: steady while the alerts `opened` ((key, severity) each) are open;
        and undecided (not steady for now, not remembered: past the first op that is not
        steady an open length-hacking's presence is not asked - the alert may clear there)."""
        none = np.zeros(hi - lo, bool)
        undecided = none.copy()
        m = self._mask_decided(opened, lo, hi, none)
        if m is none or "length-hacking" not in {key[0] for key, _ in opened}:
            return m, undecided
        bad = np.flatnonzero(~m)
        end = int(bad[0]) if len(bad) else len(m)
        undecided[end:] = m[end:]
        m[end:] = False
        if end:
            m[:end] = self.ans.hacking_present(lo + np.arange(end))
        return m, undecided

    def _mask_decided(self, opened: frozenset, lo: int, hi: int, none: np.ndarray) -> np.ndarray:
        """_mask, but for length-hacking's own presence (open: the caller asks it)."""
        ans = self.ans
        m = self.clean[lo:hi].copy()
        sev = {}
        oor_open = set()
        for (rule, sig_id), severity in opened:
            if rule not in _RULE_OF:
                return none  # an event alert, stalled, non-finite...: op by op
            if rule == "out-of-range":
                if ans.oor is None or sig_id not in ans.oor.fires or severity != "warning":
                    return none  # (a signal the rule no longer judges: its alert misses)
                oor_open.add(sig_id)
            else:
                sev[rule] = severity
        covered = set()
        gap_open = [a for a in ("gap-rising", "gap-jump") if a in sev]
        if gap_open or "grad-norm-rising" in sev:
            sure = dict(zip(_HELD_ARRAYS, ans.held_arrays()))
        if gap_open:
            if any(sev[a] != "critical" for a in gap_open):
                return none
            m &= sure["still_gap"][lo:hi]
            if "gap-rising" not in sev:
                m &= ~ans.gap_rising[lo:hi]  # (rule_gap's own answer: no new gap-rising)
            covered.add("rule_gap")
        if "no-signal" in sev:  # (the rule's own answer: it holds where it fires, unless it escalates)
            m &= ans.mat[lo:hi, self.col["rule_no_signal"]] == MAYBE
            if sev["no-signal"] != "critical":
                if ans.no_signal is None:
                    return none  # (it fires nowhere over the history: the open warning misses)
                m &= ~ans.no_signal.critical[lo:hi]
            covered.add("rule_no_signal")
        if "grad-norm-rising" in sev:
            if sev["grad-norm-rising"] != "critical":
                return none  # (a warning could escalate: op by op)
            m &= sure["still_grad"][lo:hi]
            covered.add("rule_grad_norm")
        if "off-policy" in sev:  # (its column is the rule's own answer: MAYBE where it fires)
            if sev["off-policy"] != "critical":
                return none
            m &= ans.mat[lo:hi, self.col["rule_off_policy"]] == MAYBE
            covered.add("rule_off_policy")
        for s, fires in ans.oor.fires.items():  # (the rule's own answer: exactly the open warnings)
            m &= fires[lo:hi] == (s in oor_open)
        for nm, j in self.col.items():
            if nm in covered or nm == "rule_length_hacking":
                continue
            m &= ans.mat[lo:hi, j] == NO
        lh = ans.mat[lo:hi, self.col["rule_length_hacking"]] if "rule_length_hacking" in self.col else None
        if "length-hacking" in sev:
            if sev["length-hacking"] != "critical":
                return none
        elif lh is not None:
            ok = lh == NO
            maybe = np.flatnonzero(m & (lh == MAYBE))  # its sign does not show: nothing
            if len(maybe):
                ok[maybe] = ~self.ans.hacking_signs(lo + maybe)
            m &= ok
        else:
            return none
        return m


__all__ = ["Steady"]
