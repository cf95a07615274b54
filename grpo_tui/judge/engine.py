"""HealthEngine: store updates -> per-signal status and alerts with evidence (pure core).

`check`, `tail` and the dashboard all drive one of these, so a verdict never differs between
them.  Evaluation is incremental: each completed rollout is judged once on a short window;
an alert is raised when its rule first holds and clears only after the condition has been
gone for CLEAR_AFTER rollouts (no flapping).  Event rules (crash, engine down) read events;
time rules (no-steps, stalled, engine-down while live) read a clock: log time for a finished
log, wall time when live.
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..lines.records import Event
from ..output import fmt_age
from ..store.metric_store import MetricStore, Segment, StoreUpdate
from . import stats
from .alerts import CLEAR_AFTER, SEVERITY_ORDER, Alert, AlertBook, AlertChange, AlertGroup, group_alerts
from .ranges import RangeSet, defaults
from .rules import ENTROPY, KL_REF, REWARD_STD, RULES, WINDOW, Condition, evaluate_metrics, ranges_for
from .signals import (
    BY_ID,
    SIGNALS,
    groups_of,
    metric_for,
    outside_band,
    reward_holds,
    signal_series,
)
from .wording import crash_headline, event_label

NO_STEPS_AFTER = 600.0  # s after the log starts with no metric line
ENGINE_DOWN_AFTER = 120.0  # s of uninterrupted engine retries
RETRY_BURST_GAP = 60.0  # retries closer than this belong to one burst
STALL_MIN = 600.0  # stalled: at least 10 min ...
STALL_FACTOR = 5.0  # ... or k x this run's median rollout interval
CRASH_EVENTS = ("traceback", "ft_fail", "oom", "nccl_timeout", "job_failed", "fatal")
# the event kinds _on_event acts on (a replay skips the others: they change nothing)
JUDGED_EVENTS = frozenset(
    CRASH_EVENTS + ("train_retry", "engine_retry", "max_retries", "health_check_failed", "engines_recovered")
)


@dataclass(slots=True)
class SignalStatus:
    id: str
    label: str
    metric: str | None
    last: float | None
    mean5: float | None
    range: tuple[float, float] | None
    status: str  # ok | warning | critical | unknown
    unit: str = ""
    tells: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "last": _num(self.last),
            "mean5": _num(self.mean5),
            "range": list(self.range) if self.range else None,
            "status": self.status,
        }


@dataclass(slots=True)
class Report:
    status: str
    rollouts: int
    last_rollout: int | None
    steps_per_rollout: int
    signals: dict[str, SignalStatus]
    alerts: list[Alert]
    segments: int = 1
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def groups(self) -> list[AlertGroup]:
        return group_alerts(self.alerts)

    def to_json(self, path: str, every: bool = False) -> dict[str, Any]:
        """`alerts`: one object per group (with its count and spans); `every`: each alert raised."""
        return {
            "path": path,
            "status": self.status,
            "rollouts": self.rollouts,
            "last_rollout": self.last_rollout,
            "steps_per_rollout": self.steps_per_rollout,
            "signals": {k: v.to_json() for k, v in self.signals.items()},
            "alerts": [a.to_json() for a in self.alerts] if every else [g.to_json() for g in self.groups],
        }


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


class HealthEngine:
    """Judges the store's current segment as it grows."""

    def __init__(self, store: MetricStore, ranges: RangeSet | None = None) -> None:
        self.store = store
        self.ranges = ranges or defaults()
        self.book = AlertBook()  # the current segment's alerts and their state
        self._evaluated: int | None = None  # last rollout judged
        self._segment_index = store.current.index
        self._event_pos = 0
        self._first_ts: float | None = None
        self._last_ts: float | None = None
        self._retry_burst: tuple[float, float, int] | None = None  # (start, last, count)
        self._crash: Event | None = None
        self._crash_cause: Event | None = None
        self._crash_rollout: int | None = None
        self._engine_trouble: Condition | None = None
        self._tape: list | None = None  # deferred: recorded steps (None: judge at once)
        self._tape_seg: Segment | None = None
        self._touch: dict[int, int] = {}  # deferred: rollout id -> last update that wrote it
        self.tape_upto: int | None = None  # deferred: the newest rollout recorded and not judged yet
        self._stamp = 0

    # -- feeding ------------------------------------------------------------------------
    def update(self, up: StoreUpdate) -> list[AlertChange]:
        """Judge what one store update completed; returns alerts raised and cleared.

        Deferred (`defer()`): the same steps are recorded, not judged, and `settle()` judges
        them all at once (judge/bulk.py); the changes come out of `settle()`."""
        changes: list[AlertChange] = []
        seg = self.store.current  # (judging reads the store, never writes it)
        new_run = up.new_segment or seg.index != self._segment_index
        if self._tape is not None:
            self._stamp += 1
            stamp = self._stamp
            if new_run:
                if self._tape_seg is not None:
                    # the old run's rows this add wrote (not the new run's: a restart reuses ids)
                    for r in up.rollouts if up.old_run is None else up.old_run:
                        self._touch[r] = stamp
                changes.extend(self._replay())
                self._touch = {}
            touch = self._touch
            for r in up.rollouts:
                touch[r] = stamp
            self._tape_seg = seg
        if new_run:
            self._reset_for_segment()
        for ev in up.events:
            if self._tape is not None:
                if ev.ts is not None:
                    self._see_time(ev.ts)
                if ev.kind in JUDGED_EVENTS:  # (another event's op would only set the log time,
                    # which the next op sets again: the tape would only hold it in memory)
                    self._tape.append((_EV, ev, seg.last_rollout, self._last_ts))
                continue
            changes.extend(self.on_event(ev))
        first, last = self._first_ts, self._last_ts  # _see_time of every record, inline
        for rec in up.records:
            ts = rec.ts
            if ts is not None:
                if first is None or ts < first:
                    first = ts
                if last is None or ts > last:
                    last = ts
        self._first_ts, self._last_ts = first, last
        latest = seg.last_rollout
        if seg.ids and latest is not None:
            # A rollout is complete once a later one has begun, or its trainer perf is in.
            for r in self._complete_rollouts(seg, latest):
                changes.extend(self._judge(seg, r))
        return changes

    def judge_rest(self) -> list[AlertChange]:
        """The final pass (end of a finished or silent log): judge every rollout not yet judged."""
        seg = self.store.current
        changes: list[AlertChange] = []
        last = seg.last_rollout
        if seg.ids and last is not None:
            if self._evaluated is None or last > self._evaluated:
                if self._tape is not None:
                    # a pass before the input ended (the run said it finished, more came): it may
                    # judge a rollout still being written, so judge it now, as it stands
                    changes.extend(self._replay())
                    tape, self._tape = self._tape, None
                    try:
                        return changes + self.judge_rest()
                    finally:
                        self._tape = tape
                ids = seg.ids if seg.ordered else sorted(seg.ids)
                start = 0 if self._evaluated is None else bisect.bisect_right(ids, self._evaluated)
                for r in ids[start:]:  # (not a sort of the whole history per pass)
                    changes.extend(self._judge(seg, r))
        return changes

    # -- deferred (bulk) judging: a finished file, the dashboard's history fill --------------
    def defer(self) -> None:
        """Record what each update completes instead of judging it; `settle()` judges the lot
        with the rules' statistics computed for all rollouts at once (judge/bulk.py)."""
        if self._tape is None:
            self._tape = []
            self._touch = {}
            self._tape_seg = None

    @property
    def deferred(self) -> bool:
        return self._tape is not None

    def judge_recorded(self) -> list[AlertChange]:
        """Judge what is recorded so far and go on recording: the store is about to write a
        row a recorded rollout read (a late line), and judging it rollout by rollout would
        have read that row as it is now."""
        return self._replay() if self._tape else []

    def settle(self) -> list[AlertChange]:
        """Judge everything recorded, then judge incrementally again. Raises BulkMismatch when
        the store changed under a recorded rollout (rows rewritten after it was judged): the
        caller judges the input again rollout by rollout."""
        if self._tape is None:
            return []
        try:
            return self._replay()
        finally:
            self._tape = None
            self._touch = {}
            self._tape_seg = None
            self.tape_upto = None

    def _replay(self) -> list[AlertChange]:
        from .bulk import replay

        tape, seg, touch = self._tape, self._tape_seg, self._touch
        self._tape = []
        self.tape_upto = None
        if not tape or seg is None:
            return []
        live = (self._first_ts, self._last_ts)
        try:
            return replay(self, tape, seg, touch, self._stamp)
        finally:
            self._first_ts, self._last_ts = live

    def judge_time(
        self,
        *,
        data_age: float | None,
        run_age: float | None,
        finished: bool,
        log_quiet: float = 0.0,
        last_line_time: float | None = None,
        ended: bool = False,
        finish_unknown: bool = False,
    ) -> list[AlertChange]:
        """Time rules from the data's age (the pipeline reads it from the log and the file).

        stalled: no new metric record for max(10 min, 5 x the usual interval), and the run
        has not finished; no-steps: no metric record 10 min after the log started. Both clear
        when data comes again.  `ended` (silent past the pipeline's horizon, no finish line):
        the run is over, so it is judged as at its last line: stalled only where the log itself
        went on without metrics past the limit (`log_quiet`), and a stall the clock alone had
        raised is withdrawn.  `finish_unknown` (TensorBoard: no finish line can come): a warning."""
        out = self._replay() if self._tape is not None else []
        seg = self.store.current
        conds: list[Condition] = []
        if seg.records == 0 and run_age is not None and run_age > NO_STEPS_AFTER:
            text = (
                "no metric line in the whole log, which ended without a finish line"
                if ended
                else f"no metric line {run_age / 60:.0f} min after the log started"
            )
            conds.append(Condition("no-steps", "critical", None, text, {"minutes": round(run_age / 60, 1)}))
        if seg.records and data_age is not None and not finished:
            usual = self.median_interval()
            limit = max(STALL_MIN, STALL_FACTOR * (usual or 0.0))
            quiet = log_quiet if ended else data_age
            if quiet > limit:
                usual_text = "" if usual is None else f" (usual interval {usual / 60:.1f} min)"
                if ended:
                    text = (
                        f"no new rollout in the last {fmt_age(quiet)} of the log{usual_text}; "
                        f"the log went on without metrics until it ended"
                    )
                else:
                    how = "the log goes on without metrics" if log_quiet > limit / 2 else "the log is silent"
                    how = "its files are silent and cannot say if the run finished" if finish_unknown else how
                    text = f"no new rollout for {fmt_age(quiet)}{usual_text}; {how}"
                conds.append(
                    Condition(
                        "stalled",
                        "warning" if finish_unknown else "critical",
                        seg.last_rollout,
                        text,
                        {
                            "quiet_s": round(quiet),
                            "limit_s": round(limit),
                            "last_metric_time": _fmt_ts(seg.last_record_ts),
                            "last_line_time": _fmt_ts(last_line_time),
                            "log_goes_on_s": round(log_quiet),
                        },
                    )
                )
        out.extend(self.book.raise_new(conds, seg.last_rollout, _fmt_ts(self._last_ts)))
        keys = {c.key for c in conds}
        for key in [("stalled", None), ("no-steps", None)]:
            if key not in keys:
                # withdrawn when the run ended: its log shows no stall
                change = self.book.clear(key, seg.last_rollout, withdraw=ended and key[0] == "stalled")
                if change is not None:
                    out.append(change)
        return out

    def _reset_for_segment(self) -> None:
        self.book.reset()
        self._evaluated = None
        self._segment_index = self.store.current.index
        self._retry_burst = None
        self._crash = None
        self._crash_cause = None
        self._engine_trouble = None

    def _see_time(self, ts: float) -> None:
        if self._first_ts is None or ts < self._first_ts:
            self._first_ts = ts
        if self._last_ts is None or ts > self._last_ts:
            self._last_ts = ts

    def _complete_rollouts(self, seg: Segment, latest: int) -> list[int]:
        start = self._evaluated
        if seg.ordered:  # ids rise with the rows: skip the judged ones by bisection
            ids = seg.ids
            lo = max(0, len(ids) - 64)
            todo = ids[lo:] if start is None else ids[bisect.bisect_right(ids, start, lo) :]
        else:
            todo = [r for r in sorted(seg.ids)[-64:] if start is None or r > start]
        done = []
        for r in todo:
            if r < latest:  # a later one has begun
                done.append(r)
                continue
            row = seg.row_of[r]
            complete = (
                seg.has_kinds(row, "perf", "step", "rollout")
                and seg.steps_in(r) >= seg.steps_per_rollout
                and _has_train_perf(seg, row)
            ) or (
                seg.framework != "miles" and seg.has_kinds(row, "rollout")
            )  # (verl, TRL: one line holds the whole step)
            if complete:
                done.append(r)
            else:
                break
        return sorted(done)

    def _judge(self, seg: Segment, r: int) -> list[AlertChange]:
        self._evaluated = r if self._evaluated is None else max(self._evaluated, r)
        if self._tape is not None:
            self._tape.append((_JUDGE, r, self._last_ts, self._stamp, _shape(seg)))
            self.tape_upto = r if self.tape_upto is None else max(self.tape_upto, r)
            return []
        conds = evaluate_metrics(seg, self.ranges, r, frozenset(k[0] for k in self.book.open))
        conds.extend(self.event_conditions(seg, r))
        return self.judged(conds, r)

    def event_conditions(self, seg: Segment, r: int) -> list[Condition]:
        out = []
        if self._crash is not None:
            if self._crash_rollout is not None and r >= self._crash_rollout + CLEAR_AFTER:
                self._crash = None
                self._crash_cause = None
            else:
                out.append(self._crash_condition())
        if self._engine_trouble is not None:
            start = self._engine_trouble.start
            if start is not None and r >= start + CLEAR_AFTER and self._retry_burst is None:
                self._engine_trouble = None
            else:
                out.append(self._engine_trouble)
        return out

    def _crash_condition(self) -> Condition:
        ev = self._crash
        assert ev is not None  # (asked only while a crash is held)
        cause = self._crash_cause
        exc = ev.data.get("exception") or ev.text
        if cause is not None:
            exc = f"{exc} -> {cause.data.get('exception') or cause.text}"
        where = ev.time or "line " + str(ev.line_no)
        return Condition(
            "crashed",
            "critical",
            self._crash_rollout,
            f"{self.crash_headline} ({event_label(ev)} at {where})",
            {
                "line": ev.line_no,
                "time": ev.time,
                "event": ev.kind,
                "text": exc[:400],
                "lines": (ev.lines or (cause.lines if cause is not None else []))[:12],
            },
        )

    @property
    def crash_headline(self) -> str | None:
        """What failed, in words (wording.crash_headline)."""
        return None if self._crash is None else crash_headline(self._crash, self._crash_cause)

    def on_event(self, ev: Event, r: int | None = None, replayed: bool = False) -> list[AlertChange]:
        if not replayed:
            if ev.ts is not None:
                self._see_time(ev.ts)
            r = self.store.current.last_rollout
        changes: list[AlertChange] = []
        if ev.kind in CRASH_EVENTS or ev.kind == "train_retry":
            # Keep the first failure: the last traceback shows the retry, not the cause.
            if self._crash is None:
                self._crash, self._crash_rollout, self._crash_cause = ev, r, None
            elif self._crash_cause is None and ev.kind in ("traceback", "oom") and ev is not self._crash:
                self._crash_cause = ev  # the traceback that follows an ok=false line names the cause
            changes += self._apply_now([self._crash_condition()], r)
        elif ev.kind == "engine_retry":
            ts = ev.ts if ev.ts is not None else self._last_ts
            if ts is not None:
                b = self._retry_burst
                if b is None or ts - b[1] > RETRY_BURST_GAP:
                    self._retry_burst = (ts, ts, 1)
                else:
                    self._retry_burst = (b[0], ts, b[2] + 1)
                b = self._retry_burst
                if b[1] - b[0] > ENGINE_DOWN_AFTER:
                    self._engine_trouble = Condition(
                        "engine-down",
                        "critical",
                        r,
                        f"engine requests failing for {(b[1] - b[0]) / 60:.1f} min ({b[2]} retries, "
                        f"{ev.data.get('status', '?')})",
                        {
                            "since": _fmt_ts(b[0]),
                            "last": _fmt_ts(b[1]),
                            "retries": b[2],
                            "status": ev.data.get("status"),
                            "url": ev.data.get("url"),
                        },
                    )
                    changes += self._apply_now([self._engine_trouble], r)
        elif ev.kind == "max_retries":
            evidence: dict[str, Any] = {"line": ev.line_no, "time": ev.time}
            b = self._retry_burst
            if b is not None:
                evidence.update(
                    since=_fmt_ts(b[0]), last=_fmt_ts(b[1]), retries=b[2], minutes=round((b[1] - b[0]) / 60, 1)
                )
            self._engine_trouble = Condition(
                "engine-down", "critical", r, "engine request retries exhausted: " + ev.text[:120], evidence
            )
            changes += self._apply_now([self._engine_trouble], r)
        elif ev.kind in ("health_check_failed", "engines_recovered"):
            if self._engine_trouble is None or self._engine_trouble.severity != "critical":
                self._engine_trouble = Condition(
                    "engine-down",
                    "warning",
                    r,
                    f"{ev.kind.replace('_', ' ')}: {ev.text[:120]}",
                    {"line": ev.line_no, "time": ev.time},
                )
                changes += self._apply_now([self._engine_trouble], r)
        return changes

    def _apply_now(self, conds: list[Condition], r: int | None) -> list[AlertChange]:
        """Raise event alerts at once (they don't wait for a rollout to complete)."""
        return self.book.at_once(conds, r, _fmt_ts(self._last_ts))

    def judged(self, conds: list[Condition], r: int) -> list[AlertChange]:
        """Rollout r judged with these conditions (the alert state machine: judge/alerts.py)."""
        return self.book.judged(conds, r, _fmt_ts(self._last_ts))

    @property
    def alerts(self) -> list[Alert]:
        """Every alert of the current segment, oldest first."""
        return self.book.alerts

    @property
    def troubled(self) -> bool:
        """A crash or engine trouble was seen: every judged rollout adds its condition."""
        return self._crash is not None or self._engine_trouble is not None

    def set_log_time(self, ts: float | None) -> None:
        """The log's time now (a replayed op's): the time a raised alert carries."""
        self._last_ts = ts

    def median_interval(self) -> float | None:
        """Median seconds between rollouts of this run (by their log time)."""
        seg = self.store.current
        n = len(seg.ids)
        if n < 3:
            return None
        ts = seg.first_ts.data[max(0, n - 21) : n]
        ts = ts[~np.isnan(ts)]
        if len(ts) < 3:
            return None
        d = np.diff(np.sort(ts))
        d = d[d > 0]
        return float(stats.median(d)) if len(d) else None

    # -- reading -------------------------------------------------------------------------
    def range_applies(self, sig_id: str) -> bool:
        """Whether a healthy range judges this signal in this run (the chart draws only such
        a band): no clip-fraction range with K > 1 updates per rollout, no zero-std fraction
        range without a group count."""
        seg = self.store.current
        if sig_id == "clipfrac" and seg.steps_per_rollout > 1:
            return False
        if sig_id == "zero_std" and groups_of(seg) is None:
            return False
        return True

    def rollouts_judged(self) -> int:
        """How many rollouts of the current run the rules have judged."""
        seg = self.store.current
        if self._evaluated is None or not seg.ids:
            return 0
        if seg.ordered:
            return bisect.bisect_right(seg.ids, self._evaluated)
        return sum(1 for r in seg.ids if r <= self._evaluated)

    def judge_at(
        self, sig_id: str, r: int, mean5: float | None, value: float | None, open_only: bool = False
    ) -> tuple[tuple[float, float] | None, str]:
        """(range, status) of a signal at rollout r: its five-step mean against the band for
        that rollout, a non-finite value, and the alerts naming it that were open at r.

        ok only where a range judged it; without one (rollout time, verl/TRL signals) it is
        unknown (shown `? n/a`) unless an alert names it."""
        seg = self.store.current
        resolved = ranges_for(seg, self.ranges)
        rng = resolved.bounds(sig_id, r) if self.range_applies(sig_id) else None  # no defaults where they don't fit
        status = "unknown"
        if rng is not None and mean5 is not None:

            def holds() -> bool:
                ids, vals = signal_series(seg, BY_ID["reward"], last=WINDOW, upto=r)  # (the rule's window)
                return reward_holds(ids, vals, r, resolved.bounds("reward", r))

            status = "warning" if outside_band(BY_ID[sig_id], mean5, *rng, holds) else "ok"
        if value is not None and not math.isfinite(value):
            status = "critical"
        alerts = self.book.open.values() if open_only else self.alerts
        for a in alerts:
            if a.signal != sig_id and sig_id not in RULES[a.rule].signals:
                continue
            if not open_only and not (
                a.rollout is not None and a.rollout <= r and (a.cleared_at is None or r < a.cleared_at)
            ):
                continue
            if SEVERITY_ORDER[a.severity] > SEVERITY_ORDER[status]:
                status = a.severity
        return rng, status

    def band(self, sig_id: str, rollouts):
        """The healthy band at these rollouts, or None where no range is used."""
        if not self.range_applies(sig_id):
            return None
        return ranges_for(self.store.current, self.ranges).bounds_many(sig_id, rollouts)

    def signal_status(self, sig_id: str) -> SignalStatus:
        seg = self.store.current
        sig = BY_ID[sig_id]
        ids, vals = signal_series(seg, sig, last=64)
        metric = metric_for(seg, sig)
        if len(vals) == 0:
            return SignalStatus(sig_id, sig.label, metric, None, None, None, "unknown", sig.unit, sig.tells)
        r = int(ids[-1])
        last = float(vals[-1])
        fin = vals[np.isfinite(vals)]
        mean5 = (
            float(np.mean(vals[-5:]))
            if np.all(np.isfinite(vals[-5:]))
            else (float(np.mean(fin[-5:])) if len(fin) else None)
        )
        rng, status = self.judge_at(sig_id, r, mean5, last, open_only=True)
        extra = {}
        if sig_id == "zero_std":
            g = groups_of(seg)
            _, wrong = signal_series(seg, sig, last=1, part="wrong")
            _, right = signal_series(seg, sig, last=1, part="right")
            extra = {
                "groups": g,
                "all_wrong": float(wrong[-1]) if len(wrong) else None,
                "all_right": float(right[-1]) if len(right) else None,
                "fraction": g is not None,
            }
        return SignalStatus(sig_id, sig.label, metric, last, mean5, rng, status, sig.unit, sig.tells, extra)

    def report(self) -> Report:
        seg = self.store.current
        sigs = {s.id: self.signal_status(s.id) for s in SIGNALS}
        alerts = sorted(self.alerts, key=lambda a: -a.seq)
        if alerts:
            status = max((a.severity for a in alerts), key=lambda s: SEVERITY_ORDER[s])
        elif seg.records == 0:
            status = "unknown"
        else:
            status = "ok"
        ids = seg.ids
        return Report(
            status, len(ids), seg.last_rollout, seg.steps_per_rollout, sigs, alerts, segments=len(self.store.segments)
        )

    @property
    def open_alerts(self) -> list[Alert]:
        return sorted(self.book.open.values(), key=lambda a: -a.seq)


_EV, _JUDGE = 0, 1


def _shape(seg: Segment) -> tuple:
    """What the rules read of a segment besides its rows' values: which metric carries each
    signal (and how zero-std groups are counted), framework, flags, K, groups, row order
    (compared with the final store before a recorded rollout is judged on it).  A metric
    name that first appears later changes none of these unless it becomes a signal's metric:
    earlier rows hold no value for it."""
    names = (len(seg.names), len(seg.columns), len(seg.train_sum))
    memo = seg.judge_memo.get("shape")
    if memo is not None and memo[0] == names:
        metrics = memo[1]
    else:
        metrics = tuple(metric_for(seg, s) for s in (*SIGNALS, ENTROPY, KL_REF, REWARD_STD)) + (
            "rollout/response_len/max" in seg.columns,
        )
        seg.judge_memo["shape"] = (names, metrics)
    shape = (metrics, seg.framework, len(seg.flags), seg.steps_per_rollout, groups_of(seg), seg.ordered)
    last = seg.judge_memo.get("shape_last")
    if last == shape:
        return last  # one object for a run's many equal shapes (the tape keeps one per rollout)
    seg.judge_memo["shape_last"] = shape
    return shape


def _has_train_perf(seg: Segment, row: int) -> bool:
    col = seg.columns.get("perf/train_time") or seg.columns.get("perf/actor_train_time")
    return col is not None and not math.isnan(col.data[row])


def _fmt_ts(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts))
