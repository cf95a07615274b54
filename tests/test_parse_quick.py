"""The noise fast path (quick_reject) must give exactly what the full per-line path gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_tui.lines.files import iter_lines
from grpo_tui.lines.parse import LineParser

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "sample_logs").glob("*.log")) + [ROOT / "tests" / "fixtures" / "miles-log-sample.log"]


def _run(lines, quick: bool):
    p = LineParser(quick_reject=quick)
    items = []
    for line in lines:
        items.extend(p.feed(line))
    items.extend(p.flush())
    return [_key(x) for x in items], p


def _key(x):
    return (type(x).__name__, x.kind, getattr(x, "n", None), x.time, getattr(x, "metrics", None),
            getattr(x, "data", None), getattr(x, "lines", None), getattr(x, "cut", None))


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
