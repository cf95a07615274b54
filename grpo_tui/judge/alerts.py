"""Alerts and their state machine (raise, escalate, clear after CLEAR_AFTER misses).

One module owns an alert's life: HealthEngine asks it, rollout by rollout or event by event, and
the bulk replay (judge/bulk.py) asks it the same way; nothing else changes an alert's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .rules import RULES, Condition

CLEAR_AFTER = 3  # judged rollouts without the condition before an alert clears

SEVERITY_ORDER = {"ok": 0, "unknown": 0, "warning": 1, "critical": 2}


@dataclass(slots=True)
class Alert:
    rule: str
    severity: str
    rollout: int | None  # where it started
    message: str
    check: str
    meaning: str
    evidence: dict[str, Any]
    signal: str | None = None
    first_seen: int | None = None  # rollout at which it was raised
    time: str | None = None  # log time when raised
    active: bool = True
    cleared_at: int | None = None
    acknowledged: bool = False
    seq: int = 0  # raise order (newest first in views)

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.rule, self.signal if self.rule == "out-of-range" else None)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "rollout": self.rollout,
            "signal": self.signal,
            "message": self.message,
            "meaning": self.meaning,
            "first_check": self.check,
            "raised_at": self.first_seen,
            "log_time": self.time,
            "cleared_at": self.cleared_at,
            "evidence": self.evidence,
        }


@dataclass(slots=True)
class AlertGroup:
    """One rule's sign on one signal at one severity, however often it opened and cleared: what
    every surface lists, so that a warning flapping 600 times is one entry with its count."""

    alerts: list[Alert]  # oldest first

    @property
    def latest(self) -> Alert:
        return self.alerts[-1]

    @property
    def count(self) -> int:
        return len(self.alerts)

    @property
    def severity(self) -> str:
        return self.latest.severity

    @property
    def active(self) -> bool:
        return self.latest.active

    @property
    def spans(self) -> list[tuple[int | None, int | None]]:
        """(from rollout, cleared at rollout or None while open) of each time it was raised."""
        return [(a.rollout, a.cleared_at) for a in self.alerts]

    def words(self) -> str:
        """`612× between rollouts 48 and 16012, open now` (empty for an alert raised once)."""
        if self.count == 1:
            return ""
        starts = [a.rollout for a in self.alerts if a.rollout is not None]
        ends = [a.cleared_at if a.cleared_at is not None else a.rollout for a in self.alerts]
        last = max((e for e in ends if e is not None), default=None)
        where = f" between rollouts {min(starts)} and {last}" if starts and last is not None else ""
        state = "open now" if self.active else f"last cleared at rollout {self.latest.cleared_at}"
        return f"{self.count}×{where}, {state}"

    def to_json(self) -> dict[str, Any]:
        """The latest alert's object with the count and every span."""
        return {**self.latest.to_json(), "count": self.count, "spans": [list(s) for s in self.spans]}


def group_alerts(alerts: list[Alert]) -> list[AlertGroup]:
    """The alerts by (rule, signal, severity), each group where its latest alert stands in
    `alerts`' order (the report's: open first, criticals first, newest first)."""
    groups: dict[tuple, AlertGroup] = {}
    for a in sorted(alerts, key=lambda a: a.seq):
        key = (a.rule, a.signal, a.severity)
        g = groups.get(key)
        if g is None:
            groups[key] = AlertGroup([a])
        else:
            g.alerts.append(a)
    place = {a.seq: i for i, a in enumerate(alerts)}
    return sorted(groups.values(), key=lambda g: place[g.latest.seq])


@dataclass(slots=True)
class AlertChange:
    """One change of an alert, with its severity and message as they were then: `alert` is the
    live object, which a later change in the same batch (an escalation) has already changed."""

    kind: str  # "raised" | "escalated" (now critical) | "cleared"
    alert: Alert
    severity: str = ""
    message: str = ""

    def __post_init__(self) -> None:
        self.severity = self.severity or self.alert.severity
        self.message = self.message or self.alert.message


class AlertBook:
    """The alert state machine, the one place an alert's state changes: a condition raises its
    alert, or keeps it open (escalating a warning to critical); an open alert whose condition is
    missing for CLEAR_AFTER judged rollouts in a row clears (no flapping).  `open` is a read-only
    view by key (rule, signal for out-of-range)."""

    def __init__(self) -> None:
        self.alerts: list[Alert] = []  # every alert of the current segment, oldest first
        self._open: dict[tuple, Alert] = {}
        self._misses: dict[tuple, int] = {}  # open alert -> judged rollouts in a row without it
        self.open: Mapping[tuple, Alert] = MappingProxyType(self._open)
        self._seq = 0

    def reset(self) -> None:
        """A new segment: no alert of the old one stays (raise order goes on)."""
        self.alerts = []
        self._open.clear()
        self._misses.clear()

    def judged(self, conds: list[Condition], r: int, time: str | None) -> list[AlertChange]:
        """A rollout judged with these conditions: raise, keep open or escalate; every other open
        alert (but stalled and no-steps, which time rules clear) misses once."""
        out: list[AlertChange] = []
        seen = set()
        for c in conds:
            if c.key in seen:
                continue
            seen.add(c.key)
            self._hold(c, r, time, out)
        for key in list(self._open):
            if key in seen or key[0] in ("stalled", "no-steps"):
                continue
            misses = self._misses[key] = self._misses[key] + 1
            if misses >= CLEAR_AFTER:
                out.append(self._clear(key, r))
        return out

    def at_once(self, conds: list[Condition], r: int | None, time: str | None) -> list[AlertChange]:
        """Event conditions, which do not wait for a rollout: raise or keep open, nothing misses."""
        out: list[AlertChange] = []
        for c in conds:
            self._hold(c, r, time, out)
        return out

    def raise_new(self, conds: list[Condition], r: int | None, time: str | None) -> list[AlertChange]:
        """Time rules: raise what is not open yet (an open one stays as it is)."""
        return [AlertChange("raised", self._raise(c, r, time)) for c in conds if c.key not in self._open]

    def clear(self, key: tuple, r: int | None, withdraw: bool = False) -> AlertChange | None:
        """A time rule's alert no longer holds (withdraw: it was never a sign, forget it)."""
        if key not in self._open:
            return None
        change = self._clear(key, r)
        if withdraw:
            self.alerts.remove(change.alert)
        return change

    def hold_all(self) -> None:
        """Every open alert's condition held at a judged rollout (and nothing else was raised)."""
        for key in self._misses:
            self._misses[key] = 0

    def _hold(self, c: Condition, r: int | None, time: str | None, out: list[AlertChange]) -> None:
        a = self._open.get(c.key)
        if a is None:
            out.append(AlertChange("raised", self._raise(c, r, time)))
        elif self._refresh(a, c):
            out.append(AlertChange("escalated", a))

    def _raise(self, c: Condition, r: int | None, time: str | None) -> Alert:
        info = RULES[c.rule]
        self._seq += 1
        a = Alert(
            c.rule,
            c.severity,
            c.start if c.start is not None else r,
            c.message,
            info.check,
            info.meaning,
            c.evidence,
            signal=c.signal,
            first_seen=r,
            seq=self._seq,
            time=time,
        )
        self.alerts.append(a)
        self._open[c.key] = a
        self._misses[c.key] = 0
        return a

    def _refresh(self, a: Alert, c: Condition) -> bool:
        """The sign still holds. The message keeps the values of the rollout where the alert
        fired; it changes only when the alert escalates, or a crash learns its cause."""
        self._misses[c.key] = 0
        escalates = SEVERITY_ORDER[c.severity] > SEVERITY_ORDER[a.severity]
        if escalates or (a.rule == "crashed" and c.message != a.message):
            a.message = c.message
            a.evidence = c.evidence
        if escalates:
            a.severity = c.severity
        return escalates

    def _clear(self, key: tuple, r: int | None) -> AlertChange:
        a = self._open.pop(key)
        del self._misses[key]
        a.active = False
        a.cleared_at = r
        return AlertChange("cleared", a)
