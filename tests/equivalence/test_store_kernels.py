"""The store files records the same with the C row kernels (put_row, add_row) as with their
Python twins (store/columns.py), and a record whose values came packed (a whole-file read's) the
same as its dict: a store fed either way must end up the same in every field, with the same
updates, whatever the batches.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grpo_tui.lines.records import Event, MetricRecord
from grpo_tui.store import columns, metric_store, steps as step_table
from grpo_tui.store.columns import _Column
from grpo_tui.store.metric_store import MetricStore
from grpo_tui.store.steps import StepRow, StepTable

# the built scanner, or CI's ASan/UBSan build of it (GRPO_TUI_SCAN_SO), as the scanner tests load it
from tests.equivalence.test_scan_equivalence import _scan

# accel: C against Python in one process whatever GRPO_TUI_PURE says (CI's pure pass leaves it out)
pytestmark = [pytest.mark.accel, pytest.mark.skipif(_scan is None, reason="the C accelerator is not built")]

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
    if isinstance(v, StepTable):
        return repr([(key, _plain(v[key])) for key in v]) + repr(v.of_rollout) + repr(v.most_per_rollout)
    if isinstance(v, dict):
        return repr({k: _plain(x) for k, x in v.items()})
    if isinstance(v, (list, tuple)):
        return repr([_plain(x) for x in v])
    if isinstance(v, memoryview):
        return "view"
    if isinstance(v, np.ndarray):
        return repr(v.tolist())
    if isinstance(v, bytearray):
        return repr(bytes(v))
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


@contextlib.contextmanager
def _kernels(native: bool):
    """The store's row writers: the C kernels and Packed type of the scanner under test (CI's
    sanitized build is another module than native.SCAN) or the Python twins."""
    put = _scan.put_row if native else columns._put_row_py
    add = _scan.add_row if native else columns._add_row_py
    old = metric_store._put_row, metric_store._add_row, step_table._put_row, metric_store.PACKED, step_table.PACKED
    metric_store._put_row, metric_store._add_row, step_table._put_row = put, add, put
    metric_store.PACKED = step_table.PACKED = _scan.Packed
    try:
        yield
    finally:
        (
            metric_store._put_row,
            metric_store._add_row,
            step_table._put_row,
            metric_store.PACKED,
            step_table.PACKED,
        ) = old


def _feed(items, cuts, native: bool) -> tuple:
    with _kernels(native):
        store = MetricStore()
        ups, start = [], 0
        for cut in sorted(cuts) + [len(items)]:
            try:
                ups.append(store.add(items[start:cut]))
            except OverflowError as e:  # an int past float64 (not from the parser): the same failure
                ups.append(repr(e))
            start = max(start, cut)
        return _state(store), _updates(ups)


def _packed(items, rnd) -> list:
    """The items with most records' values packed as a whole-file read packs them."""
    for it in items:
        if isinstance(it, MetricRecord) and rnd.random() < 0.8:
            p = _scan.pack(it.metrics)
            if p is not None:
                it.metrics = p
    return items


# 400 examples; CI's sanitized run sets GRPO_TUI_SCAN_EXAMPLES (40 there) as for the scanner's fuzz
@settings(max_examples=int(os.environ.get("GRPO_TUI_SCAN_EXAMPLES", "400")), deadline=None)
@given(st.lists(_item(), max_size=60), st.lists(st.integers(0, 60), max_size=4), st.randoms())
def test_kernels_and_packed_values_file_like_the_python_twins(items, cuts, rnd):
    c_items, py_items = _packed(copy.deepcopy(items), rnd), items
    got_c = _feed(c_items, cuts, True)
    got_py = _feed(py_items, cuts, False)
    assert got_c[0] == got_py[0]
    # the same items in the same updates (ids of the items each store got)
    ids_c = {id(x): k for k, x in enumerate(c_items)}
    ids_py = {id(x): k for k, x in enumerate(py_items)}
    as_idx = lambda ups, ids: [
        u if isinstance(u, str) else (u[0], [ids[i] for i in u[1]], [ids[i] for i in u[2]], u[3]) for u in ups
    ]
    assert as_idx(got_c[1], ids_c) == as_idx(got_py[1], ids_py)


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
            step = {"train/grad_norm": 1.0 + s, "train/loss": 0.5 * n - s}
            items.append(MetricRecord("step", n * k + s, step, proc="actor", ts=2.0 + n))
            items.append(MetricRecord("step", n * k + s, dict(step), proc="actor", ts=2.0 + n))  # doubled
    return items


@pytest.mark.parametrize("k", [1, 3])
def test_long_runs_file_alike(k):
    """Past the columns' first capacity (the short paths' views forgotten as they grow), with K
    steps per rollout from the launch flags, packed and not."""
    import random

    items = _long_run(300, k)
    for cuts in ([], [7, 100, 641]):
        want = _feed(copy.deepcopy(items), cuts, False)[0]
        assert _feed(copy.deepcopy(items), cuts, True)[0] == want
        assert _feed(_packed(copy.deepcopy(items), random.Random(k)), cuts, True)[0] == want


def test_the_common_records_take_the_short_paths(monkeypatch):
    """A run of plain records of known shapes is filed without the long paths."""

    def refuse(*_):
        raise AssertionError("the long path")

    items = _long_run(30, 2)  # (60 steps: within the columns' first capacity, 64)
    store = MetricStore()
    store.add(items[:9])  # the launch, the first shapes learnt
    for name in ("_add_values", "_add_step_values"):
        monkeypatch.setattr(metric_store.Segment, name, refuse)
    monkeypatch.setattr(StepTable, "_add_values", refuse)
    with _kernels(True):
        up = store.add(_packed(items[9:], __import__("random").Random(0)))
    seg = store.current
    assert len(seg.ids) == 30 and len(seg.steps) == 60 and seg.duplicate_steps == 60
    assert seg.steps_in(29) == 2 and [(s.n, s.rollout) for s in seg.steps_of(29)] == [(58, 29), (59, 29)]
    assert len(up.records) == len(items[9:]) - 58  # doubled step lines are no news
