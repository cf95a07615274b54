"""One live run: lines in -> parser -> store -> health, with what changed out.

`tail`, replay and the dashboard all drive this, so live verdicts are the same as `check`'s.
Wall-clock rules (stalled, no-steps) need to know when data last arrived; this class keeps
those clocks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .judge.engine import AlertChange, HealthEngine
from .lines.parse import LineParser
from .judge.ranges import RangeSet
from .lines.records import Event, MetricRecord
from .store.metric_store import MetricStore, StoreUpdate

GROWING_WINDOW = 60.0   # s: the file counts as "still growing" if a line came this recently


@dataclass(slots=True)
class LiveUpdate:
    records: list[MetricRecord] = field(default_factory=list)   # new records (doubled steps dropped)
    events: list[Event] = field(default_factory=list)
    changes: list[AlertChange] = field(default_factory=list)
    store: StoreUpdate | None = None


class LiveRun:
    def __init__(self, ranges: RangeSet | None = None, clock=time.time) -> None:
        self.parser = LineParser()
        self.store = MetricStore()
        self.engine = HealthEngine(self.store, ranges)
        self.clock = clock
        self.start_wall: float | None = None
        self.last_line_wall: float | None = None
        self.last_data_wall: float | None = None
        self.lines_seen = 0
        self._seen_steps: set[tuple[int, str, int]] = set()

    def feed(self, lines: list[str]) -> LiveUpdate:
        """Parse a batch and update store and rules once for the whole batch."""
        now = self.clock()
        if lines:
            if self.start_wall is None:
                self.start_wall = now
            self.last_line_wall = now
            self.lines_seen += len(lines)
        return self._apply(self.parser.feed_lines(lines), now)

    def flush(self) -> LiveUpdate:
        """Close a record still waiting for continuation lines (file event, end of input)."""
        return self._apply(self.parser.flush(), self.clock())

    def _apply(self, items, now: float) -> LiveUpdate:
        up = LiveUpdate()
        if not items:
            return up
        st = self.store.add(items)
        up.store = st
        seg = self.store.current.index
        for rec in st.records:
            if rec.kind == "step":
                key = (seg, rec.role, rec.n)
                if key in self._seen_steps:
                    continue
                self._seen_steps.add(key)
            up.records.append(rec)
        up.events = st.events
        if st.records:
            self.last_data_wall = now
        up.changes = self.engine.update(st)
        return up

    def end_of_history(self) -> list[AlertChange]:
        """After reading what the file already held: place the wall clocks in the log's past."""
        now = self.clock()
        p = self.parser
        seg = self.store.current
        if p.first_ts is not None and p.last_ts is not None:
            self.start_wall = now - max(0.0, p.last_ts - p.first_ts)
        if seg.last_record_ts is not None and p.last_ts is not None:
            self.last_data_wall = now - max(0.0, p.last_ts - seg.last_record_ts)
        return []

    def tick(self) -> list[AlertChange]:
        now = self.clock()
        growing = self.last_line_wall is not None and now - self.last_line_wall < GROWING_WINDOW
        return self.engine.tick(now, growing=growing, last_data_wall=self.last_data_wall,
                                start_wall=self.start_wall)
