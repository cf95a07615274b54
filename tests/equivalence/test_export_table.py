"""The column-wise rollout table (store/rollout_table.py) equals `Segment.value` cell by cell, and
the column-wise CSV writer equals the row-wise one (`write_csv(rows)` built from `rollout_dict`)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grpo_tui import export
from grpo_tui.lines.records import MetricRecord
from grpo_tui.pipeline import judge_path
from grpo_tui.simulate import SCENARIOS, generate
from grpo_tui.store.metric_store import MetricStore
from grpo_tui.store.rollout_table import number_cells, rollout_table

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted((ROOT / "sample_logs").glob("*.log")) + [ROOT / "tests" / "fixtures" / "miles-log-sample.log"]


def same(a, b) -> bool:
    """Equal values of the same type (nan equals nan; an int is not a float)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def reference_rows(store: MetricStore) -> list[dict]:
    """export.rows as it was built before the table: one `rollout_dict` per rollout."""
    segs = [s for s in store.segments if s.has_data]
    out = []
    for seg in segs:
        for rid in seg.rollout_ids().tolist():
            row = {"rollout": rid, **seg.rollout_dict(rid)}
            raw = seg.nonfinite.get(seg.row_of[rid])
            if raw:
                row[export._RAW] = raw
            out.append({"segment": seg.index, **row} if len(segs) > 1 else row)
    return out


def assert_table_matches(store: MetricStore) -> None:
    for seg in store.segments:
        table = rollout_table(seg)
        assert table.ids == seg.rollout_ids().tolist()
        for i, rid in enumerate(table.ids):
            for name in seg.names:
                want = seg.value(rid, name)
                got = table.cells[name][i]
                assert same(got, want), (seg.index, rid, name, got, want)
        # the columns of plain numbers as arrays (export's CSV): the same cells
        for name, col in rollout_table(seg, numbers=True).cells.items():
            cells = number_cells(col) if type(col) is tuple else col
            assert len(cells) == len(table.ids)
            assert all(same(a, b) for a, b in zip(cells, table.cells[name])), (seg.index, name)
    want_rows = reference_rows(store)
    assert repr(export.rows(store)) == repr(want_rows)
    buf = io.StringIO()
    export.write_csv(want_rows, buf)
    assert export.render(store, "csv") == buf.getvalue()
    # the column-wise JSON writer: the text json.dumps gives the row-wise rows
    buf = io.StringIO()
    export.write_json(want_rows, buf)
    assert export.render(store, "json") == buf.getvalue()


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_sample_logs(path):
    assert_table_matches(judge_path(str(path), judging=False).store)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_simulated_runs(tmp_path, scenario):
    log = tmp_path / "run.log"
    log.write_text("\n".join(line for _, line in generate(scenario, 40, 3, noise_per_rollout=2)) + "\n")
    assert_table_matches(judge_path(str(log), judging=False).store)


# -- generated records: ints, floats, nan/inf, big ints, objects, K steps, restarts ----------
_NAMES = [
    "rollout/raw_reward",
    "rollout/response_len/max",
    "perf/rollout_time",
    "train/grad_norm",
    "train/loss",
    "rollout/zero_std/count_0",
]
_VALUES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.5, 2**53 + 1, 1e308]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**60), 2**60),
    st.booleans(),
    st.text(max_size=4),
    st.none(),
    st.lists(st.floats(allow_nan=True), max_size=2),
)
_RECORD = st.tuples(
    st.sampled_from(["rollout", "perf", "step", "eval"]),
    st.integers(0, 12),
    st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=4),
    st.sampled_from(["", "critic"]),
    st.booleans(),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_RECORD, max_size=40))
def test_generated_records(recs):
    store = MetricStore()
    for line_no, (kind, n, metrics, role, mark_nan) in enumerate(recs, 1):
        nonfinite = {
            k: repr(v) for k, v in metrics.items() if mark_nan and isinstance(v, float) and not math.isfinite(v)
        }
        store.add(
            [
                MetricRecord(
                    kind, n, dict(metrics), role=role if kind == "step" else "", line_no=line_no, nonfinite=nonfinite
                )
            ]
        )
    assert_table_matches(store)


def test_plain_column_is_the_csv_cell_text():
    """The fast column text equals `_csv_cell` cell by cell, and declines what csv must look at."""
    cells = [0.5, None, -0.0, math.nan, math.inf, -math.inf, 1e-07, 2**64, -3, 1e22]
    assert export._plain_column(cells) == [str(export._csv_cell(v)) for v in cells]
    assert export._plain_column([]) == []
    assert export._plain_column([None, None]) == ["", ""]
    for odd in (True, "a,b", [0.5], "-1"):
        assert export._plain_column([0.5, odd]) is None


@pytest.mark.parametrize("rows", [1, 3, 7])
def test_rows_written_a_slice_at_a_time(monkeypatch, rows):
    """The CSV is formatted `_CSV_ROWS` rows at a time (bounded memory on a big export): any
    slice size gives the text of the row-wise writer, across segments and quoted cells too."""
    monkeypatch.setattr(export, "_CSV_ROWS", rows)
    store = MetricStore()
    for line_no, (n, v) in enumerate([(0, 0.5), (1, "a,b"), (2, 1.5), (3, 2), (1, 0.25), (2, None), (5, 1e-9)], 1):
        store.add(
            [MetricRecord("rollout", n, {"rollout/raw_reward": v, "perf/rollout_time": 3.0 * n}, line_no=line_no)]
        )
    assert len(store.segments) == 2
    assert_table_matches(store)
    for path in LOGS[:3]:
        assert_table_matches(judge_path(str(path), judging=False).store)


def _every_logged_exception(seg) -> dict:
    """rollout_table._logged_exceptions as it was: every step value read."""
    out: dict = {}
    for st_ in seg.steps.values():
        for name, v in st_.metrics.items():
            if type(v) is float and v == v:
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.setdefault(name, {}).setdefault(seg.row_of[st_.rollout], v)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, 150), st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=4)), max_size=60
    ),
    st.integers(0, 140),
)
def test_logged_exceptions_read_only_what_can_hold_one(steps, plain):
    """_logged_exceptions reads only the names some step logged as an int and those whose sum is
    nan, and finds what reading every step value finds: steps of the same shape (filed by the
    shape's short path), of new shapes and types, past the columns' growth (shapes forgotten)."""
    from grpo_tui.store.rollout_table import _logged_exceptions

    store = MetricStore()
    recs = [MetricRecord("step", n, {"train/loss": 0.5 + n, "train/step": n}, line_no=n + 1) for n in range(plain)]
    recs += [MetricRecord("step", 1000 + k, dict(m), line_no=1000 + k) for k, (_, m) in enumerate(steps)]
    for rec in recs:
        store.add([rec])
    for seg in store.segments:
        text = lambda got: repr(sorted(got.items()))  # (nan == nan: by text)
        assert text(_logged_exceptions(seg)) == text(_every_logged_exception(seg))
