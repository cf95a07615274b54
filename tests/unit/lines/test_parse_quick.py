"""The noise fast path (quick_reject) must give exactly what the full per-line path gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

from grpo_tui.lines import patterns
from grpo_tui.lines.files import iter_lines
from grpo_tui.lines.parse import LineParser

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted((ROOT / "sample_logs").glob("*.log")) + [ROOT / "tests" / "fixtures" / "miles-log-sample.log"]


def _run(lines, quick: bool):
    p = LineParser(quick_reject=quick)
    items = []
    for line in lines:
        items.extend(p.feed(line))
    items.extend(p.flush())
    return [_key(x) for x in items], p


def _key(x):
    return (
        type(x).__name__,
        x.kind,
        getattr(x, "n", None),
        x.time,
        getattr(x, "metrics", None),
        getattr(x, "data", None),
        getattr(x, "lines", None),
        getattr(x, "cut", None),
    )


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fast_path_matches_full_path_on_real_shaped_logs(path):
    lines = list(iter_lines(str(path)))
    a, pa = _run(lines, False)
    b, pb = _run(lines, True)
    assert a == b
    assert pa.counts == pb.counts
    assert (pa.first_ts, pa.last_ts) == (pb.first_ts, pb.last_ts)


SAMPLE = list(iter_lines(str(ROOT / "tests" / "fixtures" / "miles-log-sample.log")))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(SAMPLE))), st.integers(0, 400)), min_size=1, max_size=40))
def test_fast_path_matches_full_path_on_shuffled_and_cut_lines(picks):
    lines = [SAMPLE[i][:cut] if cut < 300 else SAMPLE[i] for i, cut in picks]
    a, pa = _run(lines, False)
    b, pb = _run(lines, True)
    assert a == b and pa.counts == pb.counts


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(list(patterns._QUICK_ANCHORS) + ["x", " ", "Job", "..", "ft", "Error"]), max_size=6).map(
        "".join
    )
    | st.text(max_size=40)
)
def test_quick_anchor_is_any_of_the_anchors(msg):
    assert patterns._quick_anchor(msg) == any(a in msg for a in patterns._QUICK_ANCHORS)


def _ts_reference(date, time, ms):
    """_fast_ts before its cache (calendar.timegm per call)."""
    import calendar

    try:
        y, mo, d = int(date[0:4]), int(date[5:7]), int(date[8:10])
        h, mi, s = int(time[0:2]), int(time[3:5]), int(time[6:8])
        return (
            calendar.timegm((y, mo, d, 0, 0, 0, 0, 0, 0)) + h * 3600 + mi * 60 + s + (int(ms) / 1000.0 if ms else 0.0)
        )
    except (ValueError, OverflowError):
        return None


@pytest.mark.parametrize(
    "date,time,ms",
    [
        ("2026-08-21", "10:00:00", "123"),
        ("2026-08-21", "10:00:00", None),
        ("2026-13-01", "10:00:00", "5"),
        ("2026-08-21", "10:00:00", "000"),
        ("\u0662026-08-21", "10:00:00", None),
        ("2026-08-21", "1x:00:00", None),
        ("0000-01-01", "00:00:00", None),
        ("2026-02-31", "23:59:59", "999"),
        ("9999-12-31", "99:99:99", "001"),
    ],
)
def test_fast_ts_cache_gives_the_uncached_time(date, time, ms):
    for _ in range(2):  # the second call reads the cache
        assert patterns._fast_ts(date, time, ms) == _ts_reference(date, time, ms)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 9999), st.integers(0, 99), st.integers(0, 99))
def test_day_arithmetic_is_calendar_timegm(y, mo, d):
    """_whole_seconds' own day count (no calendar import) is timegm's, its errors too (month 0 or
    13+, year 0)."""
    date = f"{y:04d}-{mo:02d}-{d:02d}"
    patterns._day_cache.clear()
    assert patterns._whole_seconds(date, "01:02:03") == _ts_reference(date, "01:02:03", None)


class _OldEvents(LineParser):
    """_events before its ": {" shortcut: the reference it must agree with."""

    def _events(self, msg, pre, line_no, time_text, ts, out, header):
        if not any(a in msg for a in patterns._QUICK_ANCHORS) and not patterns._ARG_DUMP.match(msg):
            return False
        ev = self._classify(msg, pre, line_no, time_text, ts, header)
        if ev is None:
            return False
        self.counts.event_lines += 1
        out.extend(ev) if isinstance(ev, list) else out.append(ev)
        return True


_PIECES = list(patterns._QUICK_ANCHORS) + [
    "train_async.py",
    " --rollout-batch-size 8",
    "Traceback (most recent call last)",
    "retrying... (attempt 1/3)",
    "Max retries (3)",
    "EXEC: python train.py --x 1",
    "ft op=train phase=start attempt=1",
    " ft ok=false",
    "eval 3 skipped: x",
    "Recovered 2 dead rollout engines",
    "CUDA out of memory",
    "Job 'x' failed",
    "Fatal async misuse",
    "successfully saved checkpoint at iteration 3",
    "W&B mode enabled",
    "wandb: x",
    "Saving tensorboard log to x",
    "  rollout_batch_size ...... 32",
    "Memory-Usage: {'gpu': '0'}",
    "x",
    " ",
    "{",
    ":",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=5).map("".join), st.booleans())
@example("cfg: {'a': 1} python3 train_async.py --rollout-batch-size 8", False)
@example("cfg: {'a': 1} python3 train_async.py --rollout-batch-size 8", True)
@example("Memory-Usage: {'gpu': '0'}", True)
def test_events_shortcut_agrees_with_classify(msg, header):
    got = []
    for cls in (LineParser, _OldEvents):
        p = cls()
        out = []
        pre = patterns._Line(msg)
        got.append((p._events(msg, pre, 1, None, None, out, header), repr(out), p.counts.as_dict(), p._pending is None))
    assert got[0] == got[1]
