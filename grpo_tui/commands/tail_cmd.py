"""`grpo-tui tail PATH [--new-only] [--replay SPEED]`: a flushed JSON-lines stream of records,
alerts, the run's state and file events.

The integration point for scripts and notifications, and how the follower is tested end to end.
It drives the same Pipeline as `check` and the dashboard.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

from ..export import _jsonable
from ..follow.follower import FileEvent, Follower, Lines, follow_stdin
from ..follow.metric_files import POLL_S, MetricFilesFollower
from ..follow.replay import replay_lines
from ..judge.engine import group_alerts
from ..judge.ranges import RangesError, load_ranges
from ..lines.files import InputError, check_readable
from ..notify import Hook, alert_payload, new_criticals
from ..notify.targets import DEFAULT_ON

if TYPE_CHECKING:
    from ..notify.deliver import Notifier
from ..pipeline import Pipeline, Update, open_input

PRINTED_FILE_EVENTS = ("created", "truncated", "replaced", "deleted", "eof")
FLAP_AFTER = 3  # a warning raised this often on one rule and signal is folded into `flapping` objects
TICK = 1.0


class _Out:
    def __init__(self, stream, hook: Hook | None = None, path: str | None = None) -> None:
        self.stream = stream
        self.quiet = False
        self.state: str | None = None
        self.hook = hook  # --on-critical CMD: new criticals only, not the history's
        self.path = path
        self.notifier: Notifier | None = None  # --notify URL
        self.notify_on: frozenset[str] = DEFAULT_ON
        # what the file held when tail opened it is history, not news: no hook, no notification
        self.news = True
        self.ticked = False  # a tick judged the file after its history (an old stall is history)
        self.lock = threading.Lock()  # the notifier's thread prints its outcomes too
        # (rule, signal, severity) -> the rollouts where each of its raises began
        self.raised: dict[tuple, list[int | None]] = {}

    def emit(self, obj: dict) -> None:
        if self.quiet:
            return
        line = json.dumps(obj, allow_nan=False, default=str) + "\n"
        with self.lock:
            self.stream.write(line)
            self.stream.flush()

    def notified(self, outcome) -> None:
        """A delivery's outcome (from the notifier's thread): one `notify` object, even during
        --new-only's quiet history (it is about what we sent, not about the log)."""
        line = json.dumps(outcome.to_json(), allow_nan=False, default=str) + "\n"
        with self.lock:
            self.stream.write(line)
            self.stream.flush()

    def past_history(self) -> None:
        self.quiet = False
        self.news = True

    def update(self, up: Update) -> None:
        for rec in up.records:
            self.emit(
                {
                    "type": "record",
                    "kind": rec.kind if not rec.role else f"{rec.role}-{rec.kind}",
                    "n": rec.n,
                    "time": rec.time,
                    "metrics": _metrics(rec),
                }
            )
        self.changes(up.changes)

    def changes(self, changes, news: bool | None = None) -> None:
        news = self.news if news is None else news
        if self.hook is not None and news and not self.quiet:
            for alert in new_criticals(changes):
                self.hook(alert_payload(alert, self.path))
        told = []  # the changes printed one by one (a flapping warning's are folded)
        for ch in changes:
            a = ch.alert
            if ch.severity == "warning" and self._fold(ch):
                continue
            told.append(ch)
            if ch.kind in ("raised", "escalated"):
                obj = {
                    "type": "alert",
                    "rule": a.rule,
                    "severity": ch.severity,  # (as it was then: a later change may have escalated it)
                    "rollout": a.rollout,
                    "message": ch.message,
                    "meaning": a.meaning,
                    "first_check": a.check,
                    "raised_at": a.first_seen,
                    "log_time": a.time,
                }
                if ch.kind == "escalated":
                    obj["escalated"] = True
            else:
                obj = {"type": "cleared", "rule": a.rule, "rollout": a.rollout, "cleared_at": a.cleared_at}
            if a.signal:
                obj["signal"] = a.signal
            self.emit(obj)
        if self.notifier is not None and news and told:
            from ..notify.notes import notes_for

            self.notifier.submit(notes_for(told, self.notify_on, self.path, self.state))

    def _fold(self, ch) -> bool:
        """A warning raised for the FLAP_AFTER-th time or more on the same rule and signal (it keeps
        opening and clearing): its raises and clears are not printed one by one; a `flapping`
        object with the count says so at the FLAP_AFTER-th raise and at each power of two after.
        Criticals are always printed."""
        a = ch.alert
        key = (a.rule, a.signal, ch.severity)
        starts = self.raised.setdefault(key, [])
        if ch.kind == "raised":
            starts.append(a.rollout)
        if len(starts) < FLAP_AFTER:
            return False
        n = len(starts)
        if ch.kind == "raised" and (n == FLAP_AFTER or n & (n - 1) == 0):
            known = [r for r in starts if r is not None]
            obj = {
                "type": "flapping",
                "rule": a.rule,
                "severity": ch.severity,
                "count": n,
                "first_rollout": min(known) if known else None,
                "rollout": a.rollout,
                "open": True,
            }
            if a.signal:
                obj["signal"] = a.signal
            self.emit(obj)
        return True

    def run_state(self, pipe: Pipeline) -> None:
        """Print the run's state when it changes (live -> quiet -> finished)."""
        st = pipe.state()
        if st.name != self.state and st.name != "waiting":
            before, self.state = self.state, st.name
            self.emit({"type": "state", **st.to_json()})
            if self.notifier is not None and self.news and before is not None:
                from ..notify.notes import state_note

                note = state_note(st, self.notify_on, self.path)
                if note is not None:
                    self.notifier.submit([note])


def _metrics(rec) -> dict:
    row = dict(rec.metrics)
    if rec.nonfinite:
        row["\x00raw"] = rec.nonfinite
    return _jsonable(row)


def run(args) -> int:
    try:
        ranges = load_ranges(args.ranges)
    except RangesError as exc:
        raise InputError(str(exc)) from None
    side = open_input(args.path) if args.path != "-" and getattr(args, "replay", None) is None else None
    if side is None and args.path != "-" and os.path.isdir(args.path):
        raise InputError(f"{args.path}: is a directory (give a log file, a TensorBoard folder or a W&B run)")
    out = _Out(sys.stdout, Hook(getattr(args, "on_critical", None)), args.path)
    targets = getattr(args, "notify_targets", None)
    if targets:
        from ..notify.deliver import Notifier

        out.notifier = Notifier(targets, out.notified)
        out.notify_on = getattr(args, "notify_on", None) or DEFAULT_ON
    wait: float | None = None  # at the end of the input: deliver what is queued (bounded by its retries)
    try:
        return asyncio.run(_tail_sidecar(side, args, ranges, out) if side is not None else _tail(args, ranges, out))
    except KeyboardInterrupt:
        wait = 0.0  # Ctrl-C: what is still queued is reported as not sent, not waited for
        return 0
    finally:
        if out.notifier is not None:
            out.notifier.close(wait)


async def _tail(args, ranges, out: _Out) -> int:
    replay = getattr(args, "replay", None)
    if replay is not None:
        return await _replay(args.path, replay, ranges, args.ranges, out)
    pipe = Pipeline(ranges, ranges_label=args.ranges)
    history_end = None
    if args.path != "-" and os.path.exists(args.path):
        history_end = os.path.getsize(args.path)
    elif args.path != "-":
        print(f"grpo-tui tail: waiting for {args.path} to appear", file=sys.stderr, flush=True)
    if args.new_only and history_end:
        out.quiet = True
    out.news = not history_end
    source = follow_stdin() if args.path == "-" else Follower(args.path, from_start=True)
    ticker = asyncio.create_task(_ticks(pipe, out))
    try:
        async for item in source:
            if isinstance(item, Lines):
                if history_end is not None and item.offset > history_end:
                    _split_history(pipe, out, item, history_end)
                    history_end = None
                else:
                    out.update(pipe.feed(item.lines, item.written_at))
                    if history_end is not None and item.offset >= history_end:
                        out.past_history()
                        history_end = None
                out.run_state(pipe)
            elif isinstance(item, FileEvent):
                if history_end is not None and item.event in ("truncated", "replaced", "created"):
                    out.past_history()  # a new file: what it holds was written after we opened the old one
                    history_end = None
                out.update(pipe.file_event(item.event))
                if item.event in PRINTED_FILE_EVENTS:
                    out.emit({"type": "file", "event": item.event})
                elif item.event in ("waiting", "error"):
                    print(
                        f"grpo-tui tail: {item.event}: {item.path} {item.detail}".rstrip(), file=sys.stderr, flush=True
                    )
                if item.event == "eof":
                    break
    finally:
        ticker.cancel()
        if isinstance(source, Follower):
            source.stop()
    out.update(pipe.finish())
    out.run_state(pipe)
    return 0


def _split_history(pipe: Pipeline, out: _Out, item: Lines, history_end: int) -> None:
    """A batch that straddles the end of the history: the old part as history (quiet with
    --new-only, never news), the rest as news."""
    sizes = [len(line.encode("utf-8", "replace")) + 1 for line in item.lines]
    pos = item.offset - sum(sizes)
    cut = 0
    for i, size in enumerate(sizes):
        if pos + size > history_end:
            break
        pos += size
        cut = i + 1
    out.update(pipe.feed(item.lines[:cut], item.written_at))
    out.past_history()
    out.update(pipe.feed(item.lines[cut:], item.written_at))


async def _tail_sidecar(side, args, ranges, out: _Out) -> int:
    """A TensorBoard folder or W&B run, followed (follow/metric_files.py). What it holds at the
    start is history (printed unless --new-only, never news)."""
    pipe = Pipeline(ranges, ranges_label=args.ranges)
    pipe.input = side.kind
    out.quiet = bool(args.new_only)
    out.news = False
    follower = MetricFilesFollower(side)
    ticker = asyncio.create_task(_ticks(pipe, out))
    try:
        while True:
            for rec in await asyncio.to_thread(follower.poll):
                out.update(pipe.feed_items(rec.items, rec.written_at))
            if not out.news:
                out.past_history()
            out.run_state(pipe)
            await asyncio.sleep(POLL_S)
    finally:
        ticker.cancel()


async def _ticks(pipe: Pipeline, out: _Out) -> None:
    while True:
        await asyncio.sleep(TICK)
        out.changes(pipe.tick(), news=out.news and out.ticked)
        out.ticked = out.news
        out.run_state(pipe)


async def _replay(path: str, speed: float, ranges, ranges_label, out: _Out) -> int:
    """Replay by the log's own clock: alerts fire at the log time they would have fired live.

    At SPEED > 0 time rules are judged on the log's clock as it plays; at the end the run is
    judged at the file's real age, exactly as `check` judges it."""
    check_readable(path)
    pipe = Pipeline(ranges, ranges_label=ranges_label)
    pipe.clock = lambda: pipe.parser.sync_time() or 0.0
    async for batch in replay_lines(path, speed):
        out.update(pipe.feed(batch))
        if speed > 0:
            out.changes(pipe.tick())
    try:
        pipe.anchor(os.stat(path).st_mtime)
    except OSError:
        pass
    pipe.clock = time.time
    out.update(pipe.finish())
    out.run_state(pipe)
    alerts = pipe.engine.alerts
    first = min(alerts, key=lambda a: a.seq, default=None)
    crit = min((a for a in alerts if a.severity == "critical"), key=lambda a: a.seq, default=None)
    out.emit(
        {
            "type": "summary",
            "status": pipe.report().status,
            "state": pipe.state().name,
            "first_alert": _when(first),
            "first_critical": _when(crit),
            "alerts": [
                {**(_when(g.alerts[0]) or {}), "count": g.count, "last_rollout": g.latest.rollout}
                for g in sorted(group_alerts(alerts), key=lambda g: g.alerts[0].seq)
            ],
        }
    )
    return 0


def _when(a) -> dict | None:
    if a is None:
        return None
    return {
        "rule": a.rule,
        "severity": a.severity,
        "rollout": a.rollout,
        "seen_at_rollout": a.first_seen,
        "log_time": a.time,
        "cleared_at": a.cleared_at,
    }
