"""HealthEngine: store updates -> per-signal status and alerts with evidence (pure core).

`check`, `tail` and the dashboard all drive one of these, so a verdict never differs between
them.  Evaluation is incremental: each completed rollout is judged once on a short window;
an alert is raised when its rule first holds and clears only after the condition has been
gone for CLEAR_AFTER rollouts (no flapping).  Event rules (crash, engine down) read events;
time rules (no-steps, stalled, engine-down while live) read a clock: log time for a finished
log, wall time when live.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ranges import RangeSet, defaults
from ..lines.records import Event
from .rules import RULES, Condition, evaluate_metrics, ranges_for
from .signals import BY_ID, SIGNALS, groups_of, metric_for, signal_series
from ..store.metric_store import MetricStore, Segment, StoreUpdate

CLEAR_AFTER = 3                 # rollouts without the condition before an alert clears
NO_STEPS_AFTER = 600.0          # s after the log starts with no metric line
ENGINE_DOWN_AFTER = 120.0       # s of uninterrupted engine retries
RETRY_BURST_GAP = 60.0          # retries closer than this belong to one burst
STALL_MIN = 600.0               # stalled: at least 10 min ...
STALL_FACTOR = 5.0              # ... or k x this run's median rollout interval
CRASH_EVENTS = ("traceback", "ft_fail", "oom", "nccl_timeout", "job_failed", "fatal")
SEVERITY_ORDER = {"ok": 0, "unknown": 0, "warning": 1, "critical": 2}


@dataclass(slots=True)
class Alert:
    rule: str
    severity: str
    rollout: int | None             # where it started
    message: str
    check: str
    meaning: str
    evidence: dict[str, Any]
    signal: str | None = None
    first_seen: int | None = None   # rollout at which it was raised
    time: str | None = None         # log time when raised
    active: bool = True
    cleared_at: int | None = None
    acknowledged: bool = False
    seq: int = 0                    # raise order (newest first in views)
    _misses: int = 0

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.rule, self.signal if self.rule == "out-of-range" else None)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "rollout": self.rollout,
                "message": self.message, "check": self.check, "evidence": self.evidence}


@dataclass(slots=True)
class AlertChange:
    kind: str                       # "raised" | "cleared"
    alert: Alert


@dataclass(slots=True)
class SignalStatus:
    id: str
    label: str
    metric: str | None
    last: float | None
    mean5: float | None
    range: tuple[float, float] | None
    status: str                     # ok | warning | critical | unknown
    unit: str = ""
    tells: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "last": _num(self.last), "mean5": _num(self.mean5),
                "range": list(self.range) if self.range else None, "status": self.status}


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

    def to_json(self, path: str) -> dict[str, Any]:
        return {"path": path, "status": self.status, "rollouts": self.rollouts,
                "last_rollout": self.last_rollout, "steps_per_rollout": self.steps_per_rollout,
                "signals": {k: v.to_json() for k, v in self.signals.items()},
                "alerts": [a.to_json() for a in self.alerts]}


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


class HealthEngine:
    """Judges the store's current segment as it grows."""

    def __init__(self, store: MetricStore, ranges: RangeSet | None = None) -> None:
        self.store = store
        self.ranges = ranges or defaults()
        self.alerts: list[Alert] = []            # every alert of the current segment
        self._open: dict[tuple, Alert] = {}
        self._seq = 0
        self._evaluated: int | None = None       # last rollout judged
        self._segment_index = store.current.index
        self._event_pos = 0
        self._first_ts: float | None = None
        self._last_ts: float | None = None
        self._retry_burst: tuple[float, float, int] | None = None   # (start, last, count)
        self._crash: Event | None = None
        self._crash_cause: Event | None = None
        self._crash_rollout: int | None = None
        self._engine_trouble: Condition | None = None
        self.live = False

    # -- feeding ------------------------------------------------------------------------
    def update(self, up: StoreUpdate) -> list[AlertChange]:
        """Judge what one store update completed; returns alerts raised and cleared."""
        changes: list[AlertChange] = []
        if up.new_segment or self.store.current.index != self._segment_index:
            self._reset_for_segment()
        for ev in up.events:
            changes.extend(self._on_event(ev))
        for rec in up.records:
            if rec.ts is not None:
                self._see_time(rec.ts)
        seg = self.store.current
        if seg.ids:
            latest = seg.last_rollout
            # A rollout is complete once a later one has begun, or its trainer perf is in.
            for r in self._complete_rollouts(seg, latest):
                changes.extend(self._judge(seg, r))
        return changes

    def finalize(self) -> list[AlertChange]:
        """End of a finished log: judge the last rollout and the log-time rules."""
        seg = self.store.current
        changes: list[AlertChange] = []
        if seg.ids:
            last = seg.last_rollout
            if self._evaluated is None or last > self._evaluated:
                for r in [i for i in sorted(seg.ids) if self._evaluated is None or i > self._evaluated]:
                    changes.extend(self._judge(seg, r))
        changes.extend(self._time_rules(self._last_ts, live=False))
        changes.extend(self._stalled_in_log())
        return changes

    def _stalled_in_log(self) -> list[AlertChange]:
        """A finished log that kept going (engine chatter, retries) long after its last metric line."""
        seg = self.store.current
        if not seg.records or self._last_ts is None or seg.last_record_ts is None:
            return []
        quiet = self._last_ts - seg.last_record_ts
        limit = max(STALL_MIN, STALL_FACTOR * (self.median_interval() or 0.0))
        if quiet <= limit or ("stalled", None) in self._open:
            return []
        c = Condition("stalled", "critical", seg.last_rollout,
                      f"the log goes on for {quiet / 60:.0f} min after the last metric line "
                      f"(usual rollout interval {(self.median_interval() or 0) / 60:.1f} min): the run hung",
                      {"quiet_s": round(quiet), "limit_s": round(limit), "last_metric_time": _fmt_ts(seg.last_record_ts),
                       "last_line_time": _fmt_ts(self._last_ts)})
        return [AlertChange("raised", self._raise(c, seg.last_rollout))]

    def tick(self, now: float, growing: bool = False, last_data_wall: float | None = None,
             start_wall: float | None = None) -> list[AlertChange]:
        """Live: wall-clock rules (stalled, no-steps, engine-down while retries go on)."""
        self.live = True
        changes = self._time_rules(now, live=True, growing=growing, last_data_wall=last_data_wall,
                                   start_wall=start_wall)
        return changes

    # -- internals -----------------------------------------------------------------------
    def see_log_time(self, first: float | None, last: float | None) -> None:
        """Log time from every header line (noise included): no-steps needs the log's span."""
        if first is not None:
            self._see_time(first)
        if last is not None:
            self._see_time(last)

    def _reset_for_segment(self) -> None:
        self.alerts = []
        self._open = {}
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
        done = []
        start = self._evaluated
        ids = seg.ids[-64:] if seg.ordered else sorted(seg.ids)[-64:]
        for r in ids:
            if start is not None and r <= start:
                continue
            row = seg.row_of[r]
            kinds = seg.kinds.get(row, set())
            complete = r < latest or ("perf" in kinds and "step" in kinds and "rollout" in kinds
                                      and seg.steps_of_rollout.get(r, 0) >= seg.steps_per_rollout
                                      and _has_train_perf(seg, row))
            if complete:
                done.append(r)
            else:
                break
        return sorted(done)

    def _judge(self, seg: Segment, r: int) -> list[AlertChange]:
        self._evaluated = r if self._evaluated is None else max(self._evaluated, r)
        conds = evaluate_metrics(seg, self.ranges, r, frozenset(k[0] for k in self._open))
        conds.extend(self._event_conditions(seg, r))
        return self._apply(conds, r, seg)

    def _event_conditions(self, seg: Segment, r: int) -> list[Condition]:
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
        cause = self._crash_cause
        exc = ev.data.get("exception") or ev.text
        if cause is not None:
            exc = f"{exc} -> {cause.data.get('exception') or cause.text}"
        return Condition("crashed", "critical", self._crash_rollout,
                         f"{_event_label(ev)} at {ev.time or 'line ' + str(ev.line_no)}: {exc[:160]}",
                         {"line": ev.line_no, "time": ev.time, "event": ev.kind, "text": exc[:400],
                          "lines": (ev.lines or (cause.lines if cause is not None else []))[:12]})

    def _on_event(self, ev: Event) -> list[AlertChange]:
        if ev.ts is not None:
            self._see_time(ev.ts)
        seg = self.store.current
        r = seg.last_rollout
        changes: list[AlertChange] = []
        if ev.kind in CRASH_EVENTS or ev.kind == "train_retry":
            # Keep the first failure: the last traceback shows the retry, not the cause.
            if self._crash is None:
                self._crash, self._crash_rollout, self._crash_cause = ev, r, None
            elif self._crash_cause is None and ev.kind in ("traceback", "oom") and ev is not self._crash:
                self._crash_cause = ev   # the traceback that follows an ok=false line names the cause
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
                        "engine-down", "critical", r,
                        f"engine requests failing for {(b[1] - b[0]) / 60:.1f} min ({b[2]} retries, "
                        f"{ev.data.get('status', '?')})",
                        {"since": _fmt_ts(b[0]), "last": _fmt_ts(b[1]), "retries": b[2],
                         "status": ev.data.get("status"), "url": ev.data.get("url")})
                    changes += self._apply_now([self._engine_trouble], r)
        elif ev.kind == "max_retries":
            evidence = {"line": ev.line_no, "time": ev.time}
            b = self._retry_burst
            if b is not None:
                evidence.update(since=_fmt_ts(b[0]), last=_fmt_ts(b[1]), retries=b[2],
                                minutes=round((b[1] - b[0]) / 60, 1))
            self._engine_trouble = Condition("engine-down", "critical", r,
                                             "engine request retries exhausted: " + ev.text[:120], evidence)
            changes += self._apply_now([self._engine_trouble], r)
        elif ev.kind in ("health_check_failed", "engines_recovered"):
            if self._engine_trouble is None or self._engine_trouble.severity != "critical":
                self._engine_trouble = Condition("engine-down", "warning", r,
                                                 f"{ev.kind.replace('_', ' ')}: {ev.text[:120]}",
                                                 {"line": ev.line_no, "time": ev.time})
                changes += self._apply_now([self._engine_trouble], r)
        return changes

    def _apply_now(self, conds: list[Condition], r: int | None) -> list[AlertChange]:
        """Raise event alerts at once (they don't wait for a rollout to complete)."""
        out = []
        for c in conds:
            a = self._open.get(c.key)
            if a is None:
                out.append(AlertChange("raised", self._raise(c, r)))
            else:
                self._refresh(a, c)
        return out

    def _apply(self, conds: list[Condition], r: int, seg: Segment) -> list[AlertChange]:
        out: list[AlertChange] = []
        seen = set()
        for c in conds:
            if c.key in seen:
                continue
            seen.add(c.key)
            a = self._open.get(c.key)
            if a is None:
                out.append(AlertChange("raised", self._raise(c, r)))
            else:
                self._refresh(a, c)
        for key, a in list(self._open.items()):
            if key in seen or key[0] in ("stalled", "no-steps"):
                continue
            a._misses += 1
            if a._misses >= CLEAR_AFTER:
                a.active = False
                a.cleared_at = r
                del self._open[key]
                out.append(AlertChange("cleared", a))
        return out

    def _raise(self, c: Condition, r: int | None) -> Alert:
        info = RULES[c.rule]
        self._seq += 1
        a = Alert(c.rule, c.severity, c.start if c.start is not None else r, c.message, info.check,
                  info.meaning, c.evidence, signal=c.signal, first_seen=r, seq=self._seq,
                  time=_fmt_ts(self._last_ts))
        self.alerts.append(a)
        self._open[c.key] = a
        return a

    @staticmethod
    def _refresh(a: Alert, c: Condition) -> None:
        a._misses = 0
        if c.start is not None:   # a "still outside" hold keeps the original story
            a.message = c.message
            a.evidence = c.evidence
        if SEVERITY_ORDER[c.severity] > SEVERITY_ORDER[a.severity]:
            a.severity = c.severity

    def _time_rules(self, now: float | None, live: bool, growing: bool = False,
                    last_data_wall: float | None = None, start_wall: float | None = None) -> list[AlertChange]:
        if now is None:
            return []
        seg = self.store.current
        conds: list[Condition] = []
        start = start_wall if live and start_wall is not None else self._first_ts
        if seg.records == 0 and start is not None and now - start > NO_STEPS_AFTER:
            conds.append(Condition("no-steps", "critical", None,
                                   f"no metric line {(now - start) / 60:.0f} min after the log started",
                                   {"since": _fmt_ts(start) if not live else None,
                                    "minutes": round((now - start) / 60, 1)}))
        if live and last_data_wall is not None and seg.records:
            limit = max(STALL_MIN, STALL_FACTOR * (self.median_interval() or 0.0))
            quiet = now - last_data_wall
            if quiet > limit:
                conds.append(Condition("stalled", "critical", seg.last_rollout,
                                       f"no new rollout for {quiet / 60:.0f} min (usual interval "
                                       f"{(self.median_interval() or 0) / 60:.1f} min); the file is "
                                       + ("still growing without metrics" if growing else "silent"),
                                       {"quiet_s": round(quiet), "limit_s": round(limit),
                                        "file_growing": growing}))
        out = []
        keys = {c.key for c in conds}
        for c in conds:
            a = self._open.get(c.key)
            if a is None:
                out.append(AlertChange("raised", self._raise(c, seg.last_rollout)))
            else:
                self._refresh(a, c)
        for key in [("stalled", None), ("no-steps", None)]:
            if key not in keys and key in self._open and live:
                a = self._open.pop(key)
                a.active = False
                a.cleared_at = seg.last_rollout
                out.append(AlertChange("cleared", a))
        return out

    def median_interval(self) -> float | None:
        """Median seconds between rollouts of this run (by their log time)."""
        seg = self.store.current
        n = len(seg.ids)
        if n < 3:
            return None
        ts = seg.first_ts.data[max(0, n - 21):n]
        ts = ts[~np.isnan(ts)]
        if len(ts) < 3:
            return None
        d = np.diff(np.sort(ts))
        d = d[d > 0]
        return float(np.median(d)) if len(d) else None

    # -- reading -------------------------------------------------------------------------
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
        mean5 = float(np.mean(vals[-5:])) if np.all(np.isfinite(vals[-5:])) else (
            float(np.mean(fin[-5:])) if len(fin) else None)
        rng = ranges_for(seg, self.ranges).bounds(sig_id, r)   # without the defaults when they don't fit
        if sig_id == "clipfrac" and seg.steps_per_rollout > 1:
            rng = None
        if sig_id == "zero_std" and groups_of(seg) is None:
            rng = None
        status = "ok"   # no range (rollout time): judged by its trend rule only
        if rng is not None and mean5 is not None and not (rng[0] - 1e-6 * (rng[0] == rng[1]) <= mean5 <= rng[1] + 1e-6 * (rng[0] == rng[1])):
            status = "warning"
        if not math.isfinite(last):
            status = "critical"
        for a in self._open.values():
            if a.signal == sig_id or sig_id in RULES[a.rule].signals:
                if SEVERITY_ORDER[a.severity] > SEVERITY_ORDER[status]:
                    status = a.severity
        extra = {}
        if sig_id == "zero_std":
            g = groups_of(seg)
            _, wrong = signal_series(seg, sig, last=1, part="wrong")
            _, right = signal_series(seg, sig, last=1, part="right")
            extra = {"groups": g, "all_wrong": float(wrong[-1]) if len(wrong) else None,
                     "all_right": float(right[-1]) if len(right) else None, "fraction": g is not None}
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
        return Report(status, len(ids), seg.last_rollout, seg.steps_per_rollout, sigs, alerts,
                      segments=len(self.store.segments))

    @property
    def open_alerts(self) -> list[Alert]:
        return sorted(self._open.values(), key=lambda a: -a.seq)


def _has_train_perf(seg: Segment, row: int) -> bool:
    col = seg.columns.get("perf/train_time") or seg.columns.get("perf/actor_train_time")
    return col is not None and not math.isnan(col.data[row])


def _event_label(ev: Event) -> str:
    return {"traceback": "traceback", "ft_fail": "process failed (ok=false / phase=fail)",
            "oom": "out of memory", "nccl_timeout": "NCCL watchdog timeout", "job_failed": "Ray job failed",
            "fatal": "fatal error", "train_retry": "training retried after a failure"}.get(ev.kind, ev.kind)


def _fmt_ts(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts))
