"""One function for `check`, `export` and the dashboard's history fill: log -> judged store."""

from __future__ import annotations

from dataclasses import dataclass

from .judge.engine import HealthEngine
from .lines.files import InputError, check_readable, iter_line_blocks
from .lines.parse import LineParser
from .judge.ranges import RangeSet
from .store.metric_store import MetricStore


@dataclass
class Judged:
    store: MetricStore
    parser: LineParser
    engine: HealthEngine


def judge_file(path: str, ranges: RangeSet | None = None) -> Judged:
    """Parse and judge a finished log rollout by rollout, exactly as the live path does."""
    check_readable(path)
    parser = LineParser()
    store = MetricStore()
    engine = HealthEngine(store, ranges)
    for block in iter_line_blocks(path):
        items = parser.feed_lines(block)
        if items:
            engine.update(store.add(items))
    engine.update(store.add(parser.flush()))
    engine.see_log_time(parser.first_ts, parser.last_ts)
    engine.finalize()
    return Judged(store, parser, engine)


__all__ = ["judge_file", "Judged", "InputError"]
