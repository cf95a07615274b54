"""`grpo-tui tail PATH [--new-only]`: a flushed JSON-lines stream of records, alerts and file events.

The integration point for scripts and notifications, and how the follower is tested end to end.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from ..export import _jsonable
from ..follow.follower import FileEvent, Follower, Lines, follow_stdin
from ..live import LiveRun, LiveUpdate
from ..lines.files import InputError
from ..judge.ranges import RangesError, load_ranges
from ..follow.replay import replay_lines

PRINTED_FILE_EVENTS = ("created", "truncated", "replaced", "deleted", "eof")
TICK = 1.0


class _Out:
    def __init__(self, stream) -> None:
        self.stream = stream
        self.quiet = False

    def emit(self, obj: dict) -> None:
        if self.quiet:
            return
        self.stream.write(json.dumps(obj, allow_nan=False) + "\n")
        self.stream.flush()

    def update(self, up: LiveUpdate) -> None:
        for rec in up.records:
            self.emit({"type": "record", "kind": rec.kind if not rec.role else f"{rec.role}-{rec.kind}",
                       "n": rec.n, "time": rec.time, "metrics": _metrics(rec)})
        self.changes(up.changes)

    def changes(self, changes) -> None:
        for ch in changes:
            a = ch.alert
            if ch.kind == "raised":
                obj = {"type": "alert", "rule": a.rule, "severity": a.severity, "rollout": a.rollout,
                       "message": a.message}
                if a.signal:
                    obj["signal"] = a.signal
                self.emit(obj)
            else:
                obj = {"type": "cleared", "rule": a.rule}
                if a.signal:
                    obj["signal"] = a.signal
                self.emit(obj)


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
    if args.path != "-" and os.path.isdir(args.path):
        raise InputError(f"{args.path}: is a directory (give a log file)")
    out = _Out(sys.stdout)
    try:
        return asyncio.run(_tail(args, ranges, out))
    except KeyboardInterrupt:
        return 0


async def _tail(args, ranges, out: _Out) -> int:
    live = LiveRun(ranges)
    replay = getattr(args, "replay", None)
    if replay is not None:
        return await _replay(args.path, replay, live, out)
    history_end = None
    if args.path != "-" and os.path.exists(args.path):
        history_end = os.path.getsize(args.path)
    elif args.path != "-":
        print(f"grpo-tui tail: waiting for {args.path} to appear", file=sys.stderr, flush=True)
    if args.new_only and history_end:
        out.quiet = True
    source = follow_stdin() if args.path == "-" else Follower(args.path, from_start=True)
    ticker = asyncio.create_task(_ticks(live, out))
    try:
        async for item in source:
            if isinstance(item, Lines):
                lines = item.lines
                if out.quiet and history_end is not None and item.offset > history_end:
                    lines = _split_history(live, out, item, history_end)
                else:
                    out.update(live.feed(lines))
                if out.quiet and (history_end is None or item.offset >= history_end):
                    live.end_of_history()
                    out.quiet = False
                    history_end = None
            elif isinstance(item, FileEvent):
                out.update(live.flush())
                if item.event in PRINTED_FILE_EVENTS:
                    out.emit({"type": "file", "event": item.event})
                elif item.event in ("waiting", "error"):
                    print(f"grpo-tui tail: {item.event}: {item.path} {item.detail}".rstrip(),
                          file=sys.stderr, flush=True)
                if item.event == "eof":
                    break
    finally:
        ticker.cancel()
        if isinstance(source, Follower):
            source.stop()
    out.update(live.flush())
    return 0


def _split_history(live: LiveRun, out: _Out, item: Lines, history_end: int) -> list[str]:
    """A batch that straddles the end of the history: feed the old part quietly."""
    sizes = [len(line.encode("utf-8", "replace")) + 1 for line in item.lines]
    start = item.offset - sum(sizes)
    pos = start
    cut = 0
    for i, size in enumerate(sizes):
        if pos + size > history_end:
            break
        pos += size
        cut = i + 1
    out.update(live.feed(item.lines[:cut]))
    live.end_of_history()
    out.quiet = False
    rest = item.lines[cut:]
    out.update(live.feed(rest))
    return rest


async def _ticks(live: LiveRun, out: _Out) -> None:
    while True:
        await asyncio.sleep(TICK)
        out.changes(live.tick())


async def _replay(path: str, speed: float, live: LiveRun, out: _Out) -> int:
    from ..lines.files import check_readable
    check_readable(path)
    async for batch in replay_lines(path, speed):
        out.update(live.feed(batch))
    out.update(live.flush())
    out.changes(live.engine.finalize())
    first = min(live.engine.alerts, key=lambda a: a.seq, default=None)
    crit = min((a for a in live.engine.alerts if a.severity == "critical"), key=lambda a: a.seq, default=None)
    out.emit({"type": "summary", "status": live.engine.report().status,
              "first_alert": _when(first), "first_critical": _when(crit)})
    return 0


def _when(a) -> dict | None:
    if a is None:
        return None
    return {"rule": a.rule, "rollout": a.rollout, "seen_at_rollout": a.first_seen, "log_time": a.time}
