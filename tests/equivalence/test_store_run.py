"""_scan.c's store_run files records exactly as MetricStore.add's own loop does.

store_run takes MetricStore.add's common records in C and hands back every other item (events,
odd records, restarts, verl/trl, nan/inf tokens): a store fed with it and one fed without it
must end up the same in every field, with the same updates, whatever the batches.
"""

from __future__ import annotations

import copy
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grpo_tui.lines.records import Event, MetricRecord
from grpo_tui.store import metric_store
from grpo_tui.store.columns import _Column
from grpo_tui.store.metric_store import MetricStore, StepRow, StoreUpdate

# the built scanner, or CI's ASan/UBSan build of it (GRPO_TUI_SCAN_SO), as the scanner tests load it
from tests.equivalence.test_scan_equivalence import _scan

STORE_RUN = getattr(_scan, "store_run", None)

# accel: C against Python in one process whatever GRPO_TUI_PURE says (CI's pure pass leaves it out)
pytestmark = [pytest.mark.accel, pytest.mark.skipif(STORE_RUN is None, reason="the C accelerator is not built")]

_NAMES = [
    "rollout/raw_reward",
    "rollout/response_lengths",
    "perf/train_time",
    "perf/rollout_time",
    "train/grad_norm",
    "passrate/pass@1",
    "a",
    "b",
]
_VALUES = st.one_of(
    st.floats(-9, 9),
    st.integers(-9, 9),
    st.sampled_from([0.0, -0.0, 1.5, 3, True, None, "x", 10**400, float("nan"), float("inf"), 2**53 + 1]),
)


@st.composite
def _record(draw):
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=0, max_size=5, unique=True))
    if draw(st.booleans()):  # most runs repeat a few shapes: the short paths then apply
        names = draw(st.sampled_from([["rollout/raw_reward", "a"], ["perf/train_time", "b"], ["a", "b"]]))
    typed = draw(st.sampled_from(["float", "float", "int", "any"]))
    values = [
        draw(st.floats(-9, 9) if typed == "float" else st.integers(-9, 9) if typed == "int" else _VALUES) for _ in names
    ]
    metrics = dict(zip(names, values))
    nonfinite = (
        {k: repr(v) for k, v in metrics.items() if isinstance(v, float) and not math.isfinite(v)}
        if draw(st.booleans())
        else {}
    )
    return MetricRecord(
        kind=draw(st.sampled_from(["rollout", "rollout", "perf", "perf", "step", "eval", "passrate"])),
        n=draw(st.integers(0, 9)),
        metrics=metrics,
        role=draw(st.sampled_from(["", "", "critic"])),
        ts=draw(st.sampled_from([None, 1.0, 5.0, 2.5, float("nan")])),
        proc=draw(st.sampled_from(["actor_cell0_rank0", "rollout_manager", None])),
        actor=draw(st.sampled_from([None, "RolloutManager", "MegatronTrainRayActor"])),
        source=draw(st.sampled_from([None, "log_utils.py", "verl", "trl"])),
        line_no=draw(st.integers(0, 50)),
        nonfinite=nonfinite,
        time=draw(st.sampled_from([None, "10:00:00"])),
    )


_EVENTS = st.sampled_from(
    [
        ("launch", {"flags": {"rollout-batch-size": "8", "n-samples-per-prompt": "4", "global-batch-size": "16"}}),
        ("launch", {}),
        ("arg", {"name": "global_batch_size", "value": "32"}),
        ("job_succeeded", {}),
        ("weight_update_end", {"ok": True}),
        ("train_retry", {"after_rollout": 3}),
    ]
)


@st.composite
def _item(draw):
    if draw(st.integers(0, 5)) == 0:
        kind, data = draw(_EVENTS)
        return Event(
            kind=kind,
            time=None,
            ts=draw(st.sampled_from([None, 3.0])),
            line_no=draw(st.integers(0, 50)),
            text=kind,
            data=copy.deepcopy(data),
        )
    return draw(_record())


def _plain(v):
    """A field as comparable text (columns as their filled cells; memoryviews left out)."""
    if isinstance(v, _Column):
        return repr(v.data.tolist())
    if isinstance(v, StepRow):
        return repr((v.role, v.n, v.rollout, v.metrics, v.time, v.ts, v.nonfinite))
    if isinstance(v, dict):
        return repr({k: _plain(x) for k, x in v.items()})
    if isinstance(v, (list, tuple)):
        return repr([_plain(x) for x in v])
    if isinstance(v, memoryview):
        return "view"
    if isinstance(v, np.ndarray):
        return repr(v.tolist())
    return repr(v)


def _state(store: MetricStore) -> list:
    out = [_plain(store.events), _plain(store.pending_flags)]
    for seg in store.segments:
        for name, value in sorted(vars(seg).items()):
            if name in ("_shapes", "_step_shapes"):  # views of the columns: their keys only
                value = list(value)
            elif name == "_flag_memo":
                continue
            out.append((seg.index, name, _plain(value)))
    return out


def _updates(ups) -> list:
    return [
        u
        if isinstance(u, str)
        else (sorted(u.rollouts), [id(r) for r in u.records], [id(e) for e in u.events], u.new_segment)
        for u in ups
    ]


def _feed(items, cuts, run) -> tuple:
    old = metric_store._store_run
    metric_store._store_run = run
    try:
        store = MetricStore()
        ups, start = [], 0
        for cut in sorted(cuts) + [len(items)]:
            try:
                ups.append(store.add(items[start:cut]))
            except OverflowError as e:  # an int past float64 (not from the parser): the same failure
                ups.append(repr(e))
            start = max(start, cut)
        return _state(store), _updates(ups)
    finally:
        metric_store._store_run = old


# 400 examples; CI's sanitized run sets GRPO_TUI_SCAN_EXAMPLES (40 there) as for the scanner's fuzz
@settings(max_examples=int(os.environ.get("GRPO_TUI_SCAN_EXAMPLES", "400")), deadline=None)
@given(st.lists(_item(), max_size=60), st.lists(st.integers(0, 60), max_size=4))
def test_store_run_files_like_the_python_loop(items, cuts):
    c_items, py_items = items, copy.deepcopy(items)
    got_c = _feed(c_items, cuts, STORE_RUN)
    got_py = _feed(py_items, cuts, None)
    assert got_c[0] == got_py[0]
    # the same items in the same updates (ids of the items each store got)
    ids_c = {id(x): k for k, x in enumerate(c_items)}
    ids_py = {id(x): k for k, x in enumerate(py_items)}
    as_idx = lambda ups, ids: [
        u if isinstance(u, str) else (u[0], [ids[i] for i in u[1]], [ids[i] for i in u[2]], u[3]) for u in ups
    ]
    assert as_idx(got_c[1], ids_c) == as_idx(got_py[1], ids_py)


def _run(seg, store, up, items, i):
    """store_run called as MetricStore.add calls it."""
    return STORE_RUN(
        seg.__dict__, items, i, up.rollouts, up.records, metric_store._RM_KEYS, seg, store.events, up.events
    )


def test_store_run_takes_the_common_records():
    """It does take them: a run of plain rollout, perf and step records is filed in one call."""
    recs = []
    for n in range(20):
        recs.append(MetricRecord("perf", n, {"rollout/raw_reward": 0.5, "a": 1.0}, proc="rollout_manager", ts=1.0 + n))
        recs.append(MetricRecord("rollout", n, {"rollout/raw_reward": 0.5}, proc="actor", ts=1.0 + n))
        recs.append(MetricRecord("step", n, {"train/grad_norm": 1.0}, proc="actor", ts=1.0 + n))
        recs.append(MetricRecord("step", n, {"train/grad_norm": 1.0}, proc="actor", ts=1.0 + n))  # doubled
    store = MetricStore()
    up = StoreUpdate()
    seg = store.current
    assert _run(seg, store, up, recs, 0) == len(recs)
    assert seg.records == 80 and seg.duplicate_steps == 20 and len(seg.ids) == 20
    assert up.rollouts == set(range(20)) and len(up.records) == 80


def test_store_run_stops_before_what_python_decides():
    """A restart (a rollout id going back), a nan token or a launch: filed by Python, not C; an
    event that is only listed: by C."""
    store = MetricStore()
    seg = store.current
    recs = [MetricRecord("rollout", n, {"a": 1.0}, proc="actor", ts=1.0) for n in (0, 1, 2, 1)]
    up = StoreUpdate()
    assert _run(seg, store, up, recs, 0) == 3
    nan = MetricRecord("rollout", 5, {"a": float("nan")}, proc="actor", ts=1.0, nonfinite={"a": "nan"})
    assert _run(seg, store, up, [nan], 0) == 0
    launch = Event("launch", None, None, 1, "EXEC: ...", {"flags": {}})
    assert _run(seg, store, up, [launch], 0) == 0
    assert seg.records == 3 and not store.events
    done = Event("job_succeeded", None, None, 1, "Job 'x' succeeded")
    assert _run(seg, store, up, [done], 0) == 1
    assert store.events == seg.events == up.events == [done] and done.data == {"after_rollout": 2}


def _long_run(n_rollouts: int, k: int) -> list:
    items = [
        Event(
            "launch",
            None,
            None,
            1,
            "EXEC: ...",
            {"flags": {"rollout-batch-size": "8", "n-samples-per-prompt": "4", "global-batch-size": str(32 // k)}},
        )
    ]
    for n in range(n_rollouts):
        items.append(MetricRecord("perf", n, {"rollout/raw_reward": 0.5, "c": n}, proc="rollout_manager", ts=1.0 + n))
        items.append(MetricRecord("rollout", n, {"rollout/raw_reward": 0.25 * n}, proc="actor", ts=1.5 + n))
        for s in range(k):
            step = {"train/grad_norm": 1.0 + s, "train/step": n * k + s}
            items.append(MetricRecord("step", n * k + s, step, proc="actor", ts=2.0 + n))
            items.append(MetricRecord("step", n * k + s, dict(step), proc="actor", ts=2.0 + n))  # doubled
    return items


@pytest.mark.parametrize("k", [1, 3])
def test_store_run_files_long_runs_like_the_python_loop(k):
    """Past the columns' first capacity (new rows in C until they must grow, then Python's _row)
    and with K steps per rollout from the launch flags."""
    items = _long_run(300, k)
    assert _feed(items, [], STORE_RUN)[0] == _feed(copy.deepcopy(items), [], None)[0]
    assert _feed(items, [7, 100, 641], STORE_RUN)[0] == _feed(copy.deepcopy(items), [7, 100, 641], None)[0]


def test_store_run_files_new_steps_and_rows_in_c(monkeypatch):
    """The common step and the common new row are filed without the segment's Python methods."""

    def refuse(*_):
        raise AssertionError("the Python path")

    items = _long_run(40, 2)
    store = MetricStore()
    store.add(items[:3])  # the launch (Python's), the first shapes learnt
    monkeypatch.setattr(metric_store.Segment, "_add_step", refuse)
    monkeypatch.setattr(metric_store.Segment, "_row", refuse)
    store.add(items[3:])
    seg = store.current
    assert len(seg.ids) == 40 and len(seg.steps) == 80 and seg.duplicate_steps == 80
    assert seg.steps_of_rollout[39] == 2 and seg.rollout_steps[39] == [("", 78), ("", 79)]
