"""One function for `check`, `export` and the dashboard's history fill: log -> judged store."""

from __future__ import annotations

from dataclasses import dataclass

from .health import HealthEngine
from .loader import InputError, check_readable, iter_lines
from .parse import LineParser
from .ranges import RangeSet
from .store import MetricStore


@dataclass
class Judged:
    store: MetricStore
    parser: LineParser
    engine: HealthEngine


def judge_file(path: str, ranges: RangeSet | None = None, batch_lines: int = 512) -> Judged:
    """Parse and judge a finished log rollout by rollout, exactly as the live path does."""
    check_readable(path)
    parser = LineParser()
    store = MetricStore()
    engine = HealthEngine(store, ranges)
    pending: list = []
    n = 0
    for line in iter_lines(path):
        got = parser.feed(line)
        if got:
            pending.extend(got)
        n += 1
        if pending and n >= batch_lines:
            engine.update(store.add(pending))
            pending = []
            n = 0
    pending.extend(parser.flush())
    engine.update(store.add(pending))
    engine.see_log_time(parser.first_ts, parser.last_ts)
    engine.finalize()
    return Judged(store, parser, engine)


__all__ = ["judge_file", "Judged", "InputError"]
