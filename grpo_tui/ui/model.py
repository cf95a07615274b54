"""The dashboard's data side with no Textual in it: one parser -> store -> engine chain.

Kept apart from the widgets so it can be tested and reused by the history-fill thread
(which builds a second Feed and hands it over whole).
"""

from __future__ import annotations

import bisect
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..judge.engine import SEVERITY_ORDER, AlertChange, HealthEngine, Report
from ..lines.files import iter_line_blocks, iter_lines
from ..lines.parse import LineParser
from ..judge.ranges import RangeSet
from ..judge.signals import SIGNALS
from ..store.metric_store import MetricStore

BIG_FILE = 50 << 20      # above this, first paint parses only the tail
TAIL_BYTES = 2 << 20     # ~0.1 s to parse: the first paint's data (the rest fills in behind)

_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: object) -> str:
    """Log text made safe to show: control chars (escapes, CR, BEL) become visible '?'.

    Markup safety is separate: callers put this into rich Text objects, never markup strings.
    """
    return _CTRL.sub("?", str(text))


@dataclass
class Feed:
    """Owns one LineParser, MetricStore and HealthEngine (the app's single data chain)."""

    ranges: RangeSet | None = None
    parser: LineParser = field(default_factory=LineParser)
    store: MetricStore = field(default_factory=MetricStore)
    engine: HealthEngine = field(init=False)
    changes: int = 0                     # alert raises/clears seen so far

    def __post_init__(self) -> None:
        self.engine = HealthEngine(self.store, self.ranges)

    def feed_lines(self, lines) -> list[AlertChange]:
        items: list = []
        feed = self.parser.feed
        for line in lines:
            got = feed(line)
            if got:
                items.extend(got)
        return self._add(items)

    def feed_items(self, items) -> list[AlertChange]:
        return self._add(list(items))

    def _add(self, items: list) -> list[AlertChange]:
        """Store and judge one rollout at a time: the engine's trend rules see the same
        sequence of updates whatever the read batch size (a whole file at once otherwise
        skips rules that judge rollout by rollout)."""
        ch: list[AlertChange] = []
        start = 0
        last_n = None
        seen = False          # a rollout record is in items[start:]
        for i, it in enumerate(items):
            n = getattr(it, "n", None)
            if getattr(it, "kind", None) == "rollout" and n != last_n:
                # Split before the 2nd, 3rd... rollout record only: what precedes the first
                # (the rollout manager's perf line) joins it, so one new rollout costs one
                # engine update (each update reads Segment.last_rollout = max(ids), O(history)).
                if seen and i > start:
                    ch += self.engine.update(self.store.add(items[start:i]))
                    start = i
                seen = True
                last_n = n
        if start < len(items):
            ch += self.engine.update(self.store.add(items[start:]))
        self.changes += len(ch)
        return ch

    def finish(self) -> list[AlertChange]:
        ch = self._add(self.parser.flush())
        ch += self.engine.finalize()
        self.changes += len(ch)
        return ch


def resolve_path(path: str | None) -> str | None:
    """A folder means its newest *.log (by mtime); a file (existing or not) is itself."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        logs = sorted(p.glob("*.log"), key=lambda f: f.stat().st_mtime)
        return str(logs[-1]) if logs else str(p / "train.log")
    return str(p)


def read_range(path: str, start: int, end: int, chunk: int = 1 << 20):
    """Complete lines of bytes [start, end): start is moved past the first newline if >0."""
    yield from iter_line_blocks(path, chunk, start=start, end=end)


def last_newline_before(path: str, size: int) -> int:
    """Offset just after the last b'\\n' in the first `size` bytes (0 if none)."""
    with open(path, "rb") as fh:
        end = size
        while end > 0:
            start = max(0, end - (1 << 16))
            fh.seek(start)
            b = fh.read(end - start)
            i = b.rfind(b"\n")
            if i >= 0:
                return start + i + 1
            end = start
    return 0


def parse_bytes(path: str, start: int, end: int, ranges: RangeSet | None, progress=None) -> Feed:
    """A fresh Feed from the complete lines in [start, end) of a file (history fill)."""
    feed = Feed(ranges)
    done = 0
    span = max(1, end - start)
    for lines in read_range(path, start, end):
        feed.feed_lines(lines)
        done += sum(len(x) + 1 for x in lines)
        if progress is not None:
            progress(min(1.0, done / span))
    feed.engine.update(feed.store.add(feed.parser.flush()))
    return feed


def load_whole(path: str, ranges: RangeSet | None) -> Feed:
    """Non-live: the whole file parsed and judged like `check` does."""
    feed = Feed(ranges)
    batch: list[str] = []
    for line in iter_lines(path):
        batch.append(line)
        if len(batch) >= 512:
            feed.feed_lines(batch)
            batch = []
    feed.feed_lines(batch)
    feed.finish()
    return feed


def downsample(x: np.ndarray, y: np.ndarray, limit: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Min/max buckets: at most ~limit points, and every spike (and nan gap) survives.

    Vectorised (reshape into equal buckets, argmin/argmax per row): no Python loop over
    points or buckets, so a 100k-point chart costs a few numpy passes.
    """
    x = np.asarray(x)
    y = np.asarray(y, dtype=float)
    n = len(x)
    if n <= limit:
        return x, y
    buckets = max(1, limit // 2)
    size = -(-n // buckets)                     # ceil: at most `buckets` buckets
    m = -(-n // size)
    pad = m * size - n
    yy = np.concatenate([y, np.full(pad, np.nan)]) if pad else y
    yy = yy.reshape(m, size)
    fin = np.isfinite(yy)
    lo = np.argmin(np.where(fin, yy, np.inf), axis=1)
    hi = np.argmax(np.where(fin, yy, -np.inf), axis=1)
    ok = fin.any(axis=1)
    base = np.arange(m) * size
    idx = np.concatenate([(base + lo)[ok], (base + hi)[ok]])
    idx = np.unique(idx)                        # sorted, a flat bucket keeps one point
    return x[idx], y[idx]


def quick_report(feed: Feed) -> Report:
    """HealthEngine.report() without its O(history) reads (Segment.last_rollout is max(ids)):
    per-signal status reads only the newest 64 rows, the newest id is O(1) when ordered."""
    eng = feed.engine
    seg = feed.store.current
    sigs = {s.id: eng.signal_status(s.id) for s in SIGNALS}
    alerts = sorted(eng.alerts, key=lambda a: -a.seq)
    if alerts:
        status = max((a.severity for a in alerts), key=lambda s: SEVERITY_ORDER[s])
    else:
        status = "unknown" if seg.records == 0 else "ok"
    return Report(status, len(seg.ids), newest_id(seg), seg.steps_per_rollout, sigs, alerts,
                  segments=len(feed.store.segments))


def newest_id(seg) -> int | None:
    """The segment's highest rollout id in O(1) when rows arrived in order."""
    if not seg.ids:
        return None
    return int(seg.ids[-1]) if seg.ordered else int(max(seg.ids))


def sorted_ids(seg) -> list[int]:
    """Rollout ids ascending: the store's own list (no copy) when rows arrived in order."""
    return seg.ids if seg.ordered else sorted(seg.ids)


def id_position(seg, rollout: int) -> tuple[list[int], int]:
    """(sorted ids, index of the first id >= rollout); O(1)/O(log n) for ordered segments."""
    ids = sorted_ids(seg)
    if seg.ordered:
        row = seg.row_of.get(rollout)
        if row is not None:
            return ids, row
    return ids, bisect.bisect_left(ids, rollout)


def fmt_value(v: object, fmt: str = "{:.4g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            return str(f)
        try:
            return fmt.format(f)
        except (ValueError, TypeError):
            return f"{f:.4g}"
    return clean(v)


def fmt_range(rng, fmt: str = "{:.3g}") -> str:
    fmt = "{:.3g}"       # one short format: ranges must fit their column
    if rng is None:
        return "-"
    lo, hi = rng
    if lo == hi:
        return fmt_value(lo, fmt)
    return f"{fmt_value(lo, fmt)}-{fmt_value(hi, fmt)}"


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return -1
