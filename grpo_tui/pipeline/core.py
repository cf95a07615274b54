"""The Pipeline: log lines -> parser -> store -> health engine, with the run's clocks.

Every reader feeds it: `check`, `export` and `calibrate` (through `judge_path`), `tail`,
replay, and the dashboard (live follow and history fill). Nothing else wires a parser to a
store or an engine, so a verdict cannot differ between them.

Its answer does not depend on how lines are batched: records are stored and judged one
rollout at a time whatever the batch size, and the clocks are read only when time is judged.

Time comes from the log and the file, never from when we opened it: each batch says when its
lines were written (the file's mtime after the read; the arrival time for a pipe), and the
log's own timestamps place the newest metric record and the first line relative to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..judge.mismatch import BulkMismatch
from ..lines.files import (
    InputError,
)
from ..lines.parse import LineParser
from ..lines.records import Event, MetricRecord
from ..output import fmt_age
from ..store.metric_store import MetricStore, StoreUpdate

if TYPE_CHECKING:
    from ..judge.engine import AlertChange, HealthEngine, Report
    from ..judge.ranges import RangeSet

TREND_JUDGED = 8  # rollouts the rules must have judged before a range-less run can be OK
LIVE_WINDOW = 120.0  # s: a line this recent means the run is live
# s: a log silent this long without a finish line is a run that ended, judged as at its last line
# (a hang inside this horizon is `stalled`; past it the run is over, whatever ended it)
ENDED_AFTER = 24 * 3600.0


def set_ended_after(seconds: float) -> None:
    """The horizon of every Pipeline made after this in the process (`--ended-after`)."""
    global ENDED_AFTER
    ENDED_AFTER = float(seconds)


def ended_after() -> float:
    """The horizon set now (set_ended_after)."""
    return ENDED_AFTER


FINAL_PASS_AFTER = 60.0  # s of silence before a growing log's last rollout is judged as `check` does
FINISH_EVENTS = ("job_succeeded", "job_failed", "job_stopped", "train_done")
FATAL_EVENTS = ("traceback", "oom", "nccl_timeout", "fatal", "ft_fail", "job_failed")
_RUN_ENDS = frozenset(FINISH_EVENTS + FATAL_EVENTS)  # _store's test of every event, one lookup
_KIND = attrgetter("kind")


@dataclass(slots=True)
class Update:
    """What one feed changed: new records (a doubled step line once), events, alert changes."""

    records: list[MetricRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    changes: list[AlertChange] = field(default_factory=list)
    store: StoreUpdate | None = None

    def extend(self, other: Update) -> None:
        self.records.extend(other.records)
        self.events.extend(other.events)
        self.changes.extend(other.changes)
        if other.store is not None:
            self.store = other.store


@dataclass(frozen=True, slots=True)
class RunState:
    """live | quiet | finished | ended | waiting, with the ages it was read from (seconds).

    ended: silent past the horizon (Pipeline.ended_after) with no finish line; `note` says so."""

    name: str
    line_age: float | None = None  # since the newest line was written
    data_age: float | None = None  # since the newest metric record
    finished_by: str | None = None  # the line that ended the run
    note: str | None = None  # ended: "ends at rollout N without a finish line, ..."

    @property
    def label(self) -> str:
        if self.name == "quiet" and self.line_age is not None:
            return f"quiet {fmt_age(self.line_age)}"
        if self.name == "ended" and self.line_age is not None:
            return f"ended {fmt_age(self.line_age)} ago"
        return self.name

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.name,
            "line_age_s": _round(self.line_age),
            "data_age_s": _round(self.data_age),
            "finished_by": self.finished_by,
            "note": self.note,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


class Pipeline:
    """Owns one LineParser, MetricStore and HealthEngine, and the run's clocks."""

    def __init__(
        self,
        ranges: RangeSet | None = None,
        *,
        clock: Callable[[], float] = time.time,
        ranges_label: str | None = None,
        judging: bool = True,
        ended_after: float | None = None,
    ) -> None:
        self.parser = LineParser()
        self.store = MetricStore()
        self._ranges = ranges
        self._engine = _judge().HealthEngine(self.store, ranges) if judging else None
        self.ranges_label = ranges_label or ("defaults" if ranges is None else "file")
        self.clock = clock
        self.changes = 0  # alert raises/clears so far (views cache on it)
        self.lines_seen = 0
        self.fed = False  # any line at all arrived
        self.finished_by: str | None = None  # Job '...' succeeded / a fatal error
        self._fatal: str | None = None  # a crash after the newest metric record
        self._line_wall: float | None = None  # when the newest line was written
        self._line_ts: float | None = None  # ... and its log time (the parser's newest)
        self._final_done = False
        self.judging = judging  # False: store only (export reads no verdict)
        self.ended_after = ENDED_AFTER if ended_after is None else ended_after
        # another input than a console log (sidecar.source.InputKind: TensorBoard, W&B), fed
        # with feed_items; its records' own times are the log's clock
        self.input: Any = None
        self.input_files = 0  # ... how many files it read
        self.input_problems: dict[str, int] = {}  # ... and what it skipped in them
        self._items_first_ts: float | None = None
        self._items_last_ts: float | None = None

    @property
    def engine(self) -> HealthEngine:
        """The health engine; one that does not judge (export) makes it only if asked."""
        if self._engine is None:
            self._engine = _judge().HealthEngine(self.store, self._ranges)
        return self._engine

    # ------------------------------------------------------------------ feeding
    def feed(
        self, lines: list[str] | bytes | memoryview, written_at: float | None = None, scanned: tuple | None = None
    ) -> Update:
        """Parse a batch of complete lines written at `written_at` (default: now): a list of
        lines, or a block from files.read_blocks (bytes or a view of its buffer: the lines
        joined by b"\\n"; a view is read before this returns, see LineParser.feed_block), with
        the C scanner's result for it when a reader scanned it ahead (`scanned`)."""
        if isinstance(lines, (bytes, bytearray, memoryview)):
            before = self.parser.counts.lines
            up = self._add(self.parser.feed_block(lines, scanned))
            count = self.parser.counts.lines - before
        else:
            up = self._add(self.parser.feed_lines(lines))
            count = len(lines)
        if count:
            self.fed = True
            self.lines_seen += count
            self._note_written(self.clock() if written_at is None else written_at)
        return up

    def feed_items(self, items: list, written_at: float | None = None) -> Update:
        """Records and events made by a reader of another input (sidecar/: a TensorBoard folder,
        a W&B run), in the order the run logged them, written by `written_at` (default: now)."""
        up = self._add(items)
        for it in items:
            ts = it.ts
            if ts is None:
                continue
            if self._items_first_ts is None or ts < self._items_first_ts:
                self._items_first_ts = ts
            if self._items_last_ts is None or ts > self._items_last_ts:
                self._items_last_ts = ts
        if items:
            self.fed = True
        wall = self.clock() if written_at is None else written_at
        if items or written_at is not None:
            if self._line_wall is None or wall >= self._line_wall:
                self._line_wall = wall
                self._line_ts = self._items_last_ts
        return up

    def flush(self) -> Update:
        """Close a record still waiting for continuation lines (file event, end of input)."""
        return self._add(self.parser.flush())

    def file_event(self, event: str) -> Update:
        """The followed file was truncated, replaced or deleted: what follows is a new log.

        Handled in order with the lines, so nothing fed after the event is lost; the store
        starts a new segment at the next record (the old one stays for reference).
        """
        up = self.flush()
        if event in ("truncated", "replaced", "created") and self.store.current.has_data:
            self.store.start_segment()
            if self.judging:
                up.changes.extend(self.engine.update(StoreUpdate(new_segment=True)))
            # a new log: its own clock (the old content's newest log time made the new run look
            # quiet for hours) and its own line numbers (the log view opens them in this file)
            self.parser = LineParser()
            self._line_ts = None
            self.finished_by = None
            self._fatal = None
            self._final_done = False
        return up

    def anchor(self, written_at: float) -> None:
        """Say when the newest line was written (a replay that reached the end of its file)."""
        self._line_wall = written_at
        self._line_ts = self.parser.sync_time()

    def defer(self) -> Pipeline:
        """Judge the history in bulk: record while feeding, judge at `settle()` (or `finish`).
        The alerts are those of judging rollout by rollout (judge/bulk.py); `settle` raises
        BulkMismatch when they could differ - feed the input again without deferring."""
        if self.judging:
            self.engine.defer()
        return self

    def settle(self) -> list[AlertChange]:
        """Judge what a deferred feed recorded; from now on judge rollout by rollout."""
        changes = self.engine.settle()
        self.changes += len(changes)
        return changes

    def finish(self, now: float | None = None) -> Update:
        """End of input (a finished file): the final pass, then the time rules at `now`."""
        up = self.flush()
        if self.judging:
            up.changes.extend(self.engine.settle())
        up.changes.extend(self._final_pass())
        up.changes.extend(self._time_rules(self.clock() if now is None else now))
        self.changes += len(up.changes)
        return up

    def tick(self, now: float | None = None) -> list[AlertChange]:
        """Live: judge time. A log silent for FINAL_PASS_AFTER gets `check`'s final pass."""
        now = self.clock() if now is None else now
        changes: list[AlertChange] = self.settle() if self.engine.deferred else []
        age = self._line_age(now)
        if not self._final_done and age is not None and age >= FINAL_PASS_AFTER:
            changes.extend(self.flush().changes)
            changes.extend(self._final_pass())
        changes.extend(self._time_rules(now))
        self.changes += len(changes)
        return changes

    def _add(self, items: list) -> Update:
        """Store and judge one rollout at a time, so the engine sees the same sequence of
        updates whatever the read batch size."""
        up = Update()
        if not items:
            return up
        if self.parser.packed and not self.judging and not _ends_run(items):
            # A whole-file read, nothing judged (export): the whole batch is one round.  Why: the
            # store files items in order whatever the rounds, and a round's books (the steps seen,
            # the run not finished once records come) end the same when no event in it ends the run.
            bounds = [len(items)]
        else:
            bounds = _rollout_cuts(items) + [len(items)]
        start = 0
        for end in bounds:
            self._store(items[start:end], up)
            start = end
        self.changes += len(up.changes)
        return up

    def _store(self, items: list, up: Update) -> None:
        late: list[AlertChange] = []
        seg = self.store.current
        if self.judging and self.engine.tape_upto is not None:
            # a late line (for a rollout already recorded) is judged after what was recorded
            eng = self.engine
            seg.guard, seg.on_guard = eng.tape_upto, lambda: late.extend(eng.judge_recorded())
        try:
            st = self.store.add(items)
        finally:
            seg.guard = seg.on_guard = None
        up.changes.extend(late)
        if not self.parser.packed:  # a whole-file read: its records go to the store only
            up.records.extend(st.records)
        if st.records:
            self._final_done = False
            self._fatal = None
            # metrics after a `Job '...' succeeded` line: another job appended to the file, so
            # the run is not finished (else every later rollout would get the final pass at
            # once and be judged before its train steps arrived)
            self.finished_by = None
        for ev in st.events:
            if ev.kind not in _RUN_ENDS:
                continue
            if ev.kind in FINISH_EVENTS:
                self.finished_by = ev.text.strip()[:200]
            elif ev.kind in FATAL_EVENTS and self._fatal is None:
                self._fatal = (ev.data.get("exception") or ev.text).strip()[:200]
        # the round's events and store update on `up`, the engine's verdict
        up.store = st
        up.events.extend(st.events)
        if not self.judging:
            return
        up.changes.extend(self.engine.update(st))
        if self.finished_by is not None and not self._final_done:
            up.changes.extend(self._final_pass())

    def _final_pass(self) -> list[AlertChange]:
        self._final_done = True
        return self.engine.judge_rest() if self.judging else []

    def _note_written(self, wall: float) -> None:
        if self._line_wall is None or wall >= self._line_wall:
            self._line_wall = wall
            self._line_ts = self.parser.sync_time()

    # ------------------------------------------------------------------ clocks
    def _line_age(self, now: float) -> float | None:
        return None if self._line_wall is None else max(0.0, now - self._line_wall)

    def _log_lag(self, ts: float | None) -> float:
        """How long before the newest line (by the log's own clock) time `ts` was."""
        if ts is None or self._line_ts is None:
            return 0.0
        return max(0.0, self._line_ts - ts)

    def data_age(self, now: float | None = None) -> float | None:
        """Seconds since the newest metric record of the current run was written."""
        now = self.clock() if now is None else now
        seg = self.store.current
        age = self._line_age(now)
        if age is None or not seg.records:
            return None
        return age + self._log_lag(seg.last_record_ts)

    def run_age(self, now: float | None = None) -> float | None:
        """Seconds since the log's first line (by the log's clock, anchored on the file)."""
        now = self.clock() if now is None else now
        age = self._line_age(now)
        if age is None:
            return None
        first = self.parser.first_ts if self._items_first_ts is None else self._items_first_ts
        return age + self._log_lag(first)

    def written_at(self) -> tuple[float | None, float | None]:
        """(newest line, newest metric record of the current run): when they were written,
        wall-clock seconds; the ages without a clock (the runs overview sorts on them)."""
        if self._line_wall is None:
            return None, None
        seg = self.store.current
        data = self._line_wall - self._log_lag(seg.last_record_ts) if seg.records else None
        return self._line_wall, data

    def state(self, now: float | None = None) -> RunState:
        now = self.clock() if now is None else now
        age = self._line_age(now)
        if age is None:
            return RunState("waiting")
        data = self.data_age(now)
        if self.finished_by is not None:
            return RunState("finished", age, data, self.finished_by)
        if self._fatal is not None and age >= FINAL_PASS_AFTER:
            return RunState("finished", age, data, "crashed: " + (self.engine.crash_headline or self._fatal))
        if age <= LIVE_WINDOW:
            return RunState("live", age, data)
        if age > self.ended_after:
            seg = self.store.current
            last = seg.last_rollout if seg.ids else None
            where = "with no metric line and no" if last is None else f"at rollout {last} without a"
            return RunState("ended", age, data, note=f"ends {where} finish line, last line {fmt_age(age)} ago")
        return RunState("quiet", age, data)

    def _time_rules(self, now: float) -> list[AlertChange]:
        if not self.judging:
            return []
        st = self.state(now)
        return self.engine.judge_time(
            data_age=st.data_age,
            run_age=self.run_age(now),
            finished=st.name == "finished",
            ended=st.name == "ended",
            log_quiet=self._log_lag(self.store.current.last_record_ts),
            last_line_time=self._line_ts,
            finish_unknown=self.input is not None and not self.input.says_finished,
        )

    # ------------------------------------------------------------------ reading
    def report(self, now: float | None = None) -> RunReport:
        """The verdict: per-signal status, alerts, status, and the run's state.

        Reads only the newest rows (O(1) in the history length while following)."""
        if self.engine.deferred:
            self.settle()
        eng = self.engine
        judge = _judge()
        SEVERITY_ORDER = judge.SEVERITY_ORDER
        seg = self.store.current
        sigs = {s.id: eng.signal_status(s.id) for s in judge.SIGNALS}
        alerts = sorted(eng.alerts, key=lambda a: (not a.active, -SEVERITY_ORDER[a.severity], -a.seq))
        judged = [s.status for s in sigs.values() if s.status in SEVERITY_ORDER and s.status != "unknown"]
        worst = [a.severity for a in alerts] + judged
        if not worst and eng.rollouts_judged() >= TREND_JUDGED:
            worst = ["ok"]  # no range fits, but the trend and event rules had a window to judge
        status = max(worst, key=lambda s: SEVERITY_ORDER[s]) if worst else "unknown"
        last = None
        if seg.ids:
            last = int(seg.ids[-1]) if seg.ordered else int(max(seg.ids))
        rep = judge.Report(
            status, len(seg.ids), last, seg.steps_per_rollout, sigs, alerts, segments=len(self.store.segments)
        )
        label, note = self.ranges_in_use()
        return RunReport(rep, self.state(now), label, note, self.input)

    def ranges_in_use(self) -> tuple[str, str | None]:
        """("defaults", None), or ("none", why) when the manual's defaults don't fit this run
        (another framework or setup: judge/setup.py), so every surface can say that only the
        trend and event rules judge it instead of showing `n/a` badges unexplained."""
        seg = self.store.current
        if self.ranges_label != "defaults" or not seg.has_data:
            return self.ranges_label, None
        rs = self.engine.ranges.for_framework(seg.framework)
        if not rs.use_defaults:
            return "none", f"a {seg.framework} run: the manual's ranges are Miles/slime's"
        from ..judge.rules import defaults_fit_memo

        fit, why = defaults_fit_memo(seg, rs)
        return ("defaults", None) if fit else ("none", why)


@dataclass
class RunReport:
    """A Report plus the run's state and which ranges judged it (what every surface shows)."""

    report: Report
    run_state: RunState
    ranges: str
    ranges_note: str | None = None  # why no range judges the run (ranges == "none")
    input: Any = None  # sidecar.source.InputKind when the run was read from another input than its console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.report, name)

    def to_json(self, path: str, every: bool = False) -> dict[str, Any]:
        obj = self.report.to_json(path, every)
        obj["state"] = self.run_state.name
        obj["ranges"] = self.ranges
        obj["ranges_note"] = self.ranges_note
        obj["time"] = self.run_state.to_json()
        if self.input is not None:
            obj["input"] = {"kind": self.input.name, "lag": self.input.lag, "not_judged": list(self.input.unjudged)}
        return obj

    def input_note(self) -> str | None:
        """One line on the input when it is not a console log: its kind, its lag, and the rules it
        cannot judge (they read the console)."""
        if self.input is None:
            return None
        return f"input: {self.input.label}, {self.input.lag}; not judged from it (they read the console): " + ", ".join(
            self.input.unjudged
        )


def _judge():
    """The health engine's module, imported when a pipeline first judges.  Why: with it come the
    rules, the signals and numpy, which a read that is not judged (export) does without."""
    from ..judge import engine

    return engine


def _ends_run(items: list) -> bool:
    """Whether an event among the items ends the run (finished or fatal: _store's books).  A
    record's kind (rollout, step, ...) is never one of those: every item's kind is looked at, in
    C (map and isdisjoint, not a Python loop over a big log's tens of thousands of items)."""
    try:
        return not _RUN_ENDS.isdisjoint(map(_KIND, items))
    except AttributeError:  # (an item of another class: the rounds as they come)
        return True


def _rollout_cuts(items: list) -> list[int]:
    """Where _add cuts items into rounds: at each rollout record whose id is not the last one's
    (the first one aside)."""
    cuts: list[int] = []
    start = 0
    last_n = None
    seen = False
    for i, it in enumerate(items):
        if getattr(it, "kind", None) == "rollout" and it.n != last_n:
            if seen and i > start:
                cuts.append(i)
                start = i
            seen = True
            last_n = it.n
    return cuts


__all__ = [
    "Pipeline",
    "Update",
    "RunState",
    "RunReport",
    "InputError",
    "BulkMismatch",
    "set_ended_after",
    "ended_after",
]
