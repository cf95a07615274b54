"""Replay a finished log as if live, paced by its own timestamps (SPEED x; 0 = as fast as possible).

Answers "when would we have known?": alerts fire in the order and at the log time they would
have fired live.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator

from ..lines.files import iter_lines
from ..lines.patterns import _fast_ts

_TS = re.compile(r"\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:[.,](\d{3}))?")
MAX_BATCH = 2000


def line_time(line: str) -> float | None:
    """The log time a line carries, if any (cheap: looks only near the start)."""
    m = _TS.search(line, 0, 200)
    if not m:
        return None
    return _fast_ts(m.group(1), m.group(2), m.group(3))


async def replay_lines(path: str, speed: float, clock=time.monotonic) -> AsyncIterator[list[str]]:
    """Batches of lines; sleeps so that log time runs at `speed` x wall time."""
    t0_log: float | None = None
    t0_wall = clock()
    batch: list[str] = []
    for line in iter_lines(path):
        ts = line_time(line) if speed > 0 else None
        if ts is not None:
            if t0_log is None:
                t0_log = ts
            due = t0_wall + (ts - t0_log) / speed
            wait = due - clock()
            if wait > 0.005:
                if batch:
                    yield batch
                    batch = []
                await asyncio.sleep(min(wait, 3600))
        batch.append(line)
        if len(batch) >= MAX_BATCH:
            yield batch
            batch = []
            await asyncio.sleep(0)
    if batch:
        yield batch
