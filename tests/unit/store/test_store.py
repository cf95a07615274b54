"""MetricStore: rollout axis, K steps per rollout, dedup, perf merge, segments (docs/contracts.md §3)."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

from grpo_tui.lines.parse import parse_lines
from grpo_tui.pipeline import judge_path
from grpo_tui.store.metric_store import MetricStore

H = "[2026-08-21 10:00:{s:02d}.000 {proc}] {file} - "


def line(
    kind_n: str, d: str, proc: str = "actor_cell0_rank0", file: str = "log_utils.py:542", s: int = 0, prefix: str = ""
) -> str:
    return prefix + H.format(s=s, proc=proc, file=file) + f"{kind_n}: {d}"


def store_of(*lines: str) -> MetricStore:
    items, _ = parse_lines(list(lines))
    st = MetricStore()
    st.add(items)
    return st


def launch(**flags) -> str:
    args = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in flags.items())
    return f"EXEC: ray job submit --address=http://127.0.0.1:8265 -- python3 /root/miles/train.py {args}"


# --------------------------------------------------------------------------------------------
# the sample log
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_store(sample_path):
    return judge_path(str(sample_path), judging=False).store


def test_sample_single_segment_rollouts(sample_store):
    assert len(sample_store.segments) == 1
    seg = sample_store.current
    assert seg.rollout_ids().tolist() == [3, 4, 19]


def test_sample_k_from_flags(sample_store):
    seg = sample_store.current
    # 32 prompts x 8 samples / 128 global batch = 2 optimizer steps per rollout
    assert seg.steps_per_rollout == 2
    assert seg.k_source == "flags"
    assert seg.groups == 32
    assert [(s.n, s.rollout) for s in seg.steps_of(3)] == [(6, 3), (7, 3)]


def test_sample_doubled_step_deduplicated(sample_store):
    seg = sample_store.current
    assert seg.duplicate_steps == 1
    assert sorted(seg.steps) == [("", 6), ("", 7)]


def test_sample_perf_merged(sample_store):
    seg = sample_store.current
    d = seg.rollout_dict(3)
    assert d["perf/rollout_time"] == 187.2291259765625  # rollout manager perf 3
    assert d["perf/train_time"] == 60.3  # trainer perf 3
    assert d["perf/wait_time_ratio"] == 0.7713
    assert d["rollout/zero_std/count_0"] == 5 and type(d["rollout/zero_std/count_0"]) is int
    assert d["rollout/raw_reward"] == 0.4453125
    assert d["rollout/response_len/max"] == 8192


def test_sample_train_metric_is_mean_of_k_steps(sample_store):
    seg = sample_store.current
    assert seg.value(3, "train/loss") == pytest.approx((-0.00213 + 0.00102) / 2)
    assert seg.value(3, "train/ess_ratio") == pytest.approx((0.9981 + 0.9954) / 2)
    assert math.isnan(seg.value(3, "train/grad_norm"))  # one of its steps is nan
    steps = seg.steps_of(3)
    assert steps[0].metrics["train/grad_norm"] == 0.2144
    assert math.isnan(steps[1].metrics["train/grad_norm"])
    assert steps[1].nonfinite == {"train/grad_norm": "nan"}


def test_sample_series(sample_store):
    seg = sample_store.current
    ids, vals = seg.series("perf/rollout_time")
    assert ids.tolist() == [3, 4]
    assert vals.tolist() == [187.2291259765625, 181.93]
    ids, vals = seg.series("passrate/pass@2")
    assert ids.tolist() == [4] and vals.tolist() == [0.5848214285714286]
    ids, vals = seg.series("eval/aime")
    assert ids.tolist() == [19] and vals.tolist() == [0.2302]
    ids, vals = seg.series("train/grad_norm")
    assert ids.tolist() == [3] and math.isnan(vals[0])  # nan is a value, not a gap
    ids, vals = seg.series("no/such_metric")
    assert len(ids) == 0 and len(vals) == 0


def test_sample_events_in_store(sample_store):
    kinds = [e.kind for e in sample_store.events]
    assert kinds[0] == "launch"
    assert kinds.count("engine_retry") == 3
    assert "traceback" in kinds and "oom" in kinds and "ft_fail" in kinds
    assert "checkpoint_saved" in kinds and "engines_recovered" in kinds and "health_check_failed" in kinds
    assert "weight_update_start" in kinds and "weight_update_end" in kinds
    assert "wandb" in kinds and "tensorboard" in kinds


# --------------------------------------------------------------------------------------------
# K, steps, dedup
# --------------------------------------------------------------------------------------------


def test_k_inferred_from_step_and_rollout_ids():
    st = store_of(
        line("rollout 3", "{'rollout/raw_reward': 0.5}", file="log_utils.py:123"),
        line("step 6", "{'train/loss': 1.0, 'train/step': 6}"),
        line("step 7", "{'train/loss': 3.0, 'train/step': 7}"),
        line("rollout 4", "{'rollout/raw_reward': 0.6}", file="log_utils.py:123"),
        line("step 8", "{'train/loss': 5.0, 'train/step': 8}"),
        line("step 9", "{'train/loss': 7.0, 'train/step': 9}"),
    )
    seg = st.current
    assert seg.steps_per_rollout == 2
    assert seg.k_source == "inferred"
    assert seg.value(3, "train/loss") == 2.0
    assert seg.value(4, "train/loss") == 6.0
    assert seg.rollout_ids().tolist() == [3, 4]


def test_k_one_by_default():
    st = store_of(line("step 5", "{'train/loss': 1.5, 'train/step': 5}"))
    seg = st.current
    assert seg.steps_per_rollout == 1
    assert seg.rollout_ids().tolist() == [5]
    assert seg.value(5, "train/loss") == 1.5


def test_k_from_num_steps_per_rollout_flag():
    st = store_of(
        launch(num_steps_per_rollout=4),
        *[line(f"step {n}", f"{{'train/loss': {float(n)}, 'train/step': {n}}}") for n in range(8, 16)],
    )
    seg = st.current
    assert seg.steps_per_rollout == 4
    assert seg.rollout_ids().tolist() == [2, 3]
    assert seg.value(2, "train/loss") == (8 + 9 + 10 + 11) / 4
    assert seg.value(3, "train/loss") == (12 + 13 + 14 + 15) / 4


def test_k_from_bash_launch_line():
    st = store_of(
        "+ ray job submit --address=http://127.0.0.1:8265 -- python3 train.py --rollout-batch-size 16 "
        "--n-samples-per-prompt 8 --global-batch-size 32",
        line("step 8", "{'train/loss': 1.0, 'train/step': 8}"),
    )
    assert st.current.steps_per_rollout == 4
    assert st.current.rollout_ids().tolist() == [2]


def test_k_from_megatron_arg_dump():
    st = store_of(
        "------------------------ arguments ------------------------",
        "  global_batch_size ............................... 64",
        "  n_samples_per_prompt ............................ 8",
        "  rollout_batch_size .............................. 32",
        "-------------------- end of arguments ---------------------",
        line("step 9", "{'train/loss': 1.0, 'train/step': 9}"),
    )
    assert st.current.steps_per_rollout == 4
    assert st.current.groups == 32
    assert st.current.rollout_ids().tolist() == [2]


def test_step_dedup_on_role_and_n():
    d = "{'train/loss': 2.0, 'train/step': 7}"
    st = store_of(
        line("step 7", d, file="log_utils.py:542"),
        line("step 7", d, file="model.py:854"),
        line("critic-step 7", "{'train/critic-value_loss': 0.5, 'train/step': 7}", proc="critic_cell0_rank0"),
    )
    seg = st.current
    assert seg.duplicate_steps == 1
    assert sorted(seg.steps) == [("", 7), ("critic", 7)]
    assert seg.value(7, "train/loss") == 2.0  # not doubled, not averaged with a copy
    assert seg.value(7, "train/critic-value_loss") == 0.5


def test_non_numeric_values_kept():
    st = store_of(
        line(
            "eval 0",
            "{'eval/aime': 0.25, 'eval/name': 'aime', 'eval/ok': True, 'eval/none': None}",
            proc="rollout_manager",
            file="metrics.py:53",
        )
    )
    d = st.current.rollout_dict(0)
    assert d["eval/aime"] == 0.25
    assert d["eval/name"] == "aime"
    assert d["eval/ok"] is True


def test_look_alike_keys_stay_apart():
    st = store_of(
        line(
            "perf 0",
            "{'rollout/zero_std/count_0.1': 3, 'rollout/zero_std/count_0': 7, "
            "'rollout/episode_raw_reward': 0.9, 'rollout/truncated_ratio': 0.25}",
            proc="rollout_manager",
            file="metrics.py:89",
        ),
        line("rollout 0", "{'rollout/raw_reward': 0.125}", file="log_utils.py:123"),
        line("eval 0", "{'eval/x/truncated_ratio': 0.5}", proc="rollout_manager", file="metrics.py:53"),
    )
    d = st.current.rollout_dict(0)
    assert d["rollout/zero_std/count_0.1"] == 3
    assert d["rollout/zero_std/count_0"] == 7
    assert d["rollout/episode_raw_reward"] == 0.9
    assert d["rollout/raw_reward"] == 0.125
    assert d["rollout/truncated_ratio"] == 0.25
    assert d["eval/x/truncated_ratio"] == 0.5


def test_two_eval_0_lines_are_not_a_restart():
    st = store_of(
        line("eval 0", "{'eval/aime': 0.1}", proc="rollout_manager", file="metrics.py:53"),
        line("perf 0", "{'rollout/raw_reward': 0.2}", proc="rollout_manager", file="metrics.py:89"),
        line("eval 0", "{'eval/aime': 0.3}", proc="rollout_manager", file="metrics.py:53"),
        line("perf 1", "{'rollout/raw_reward': 0.4}", proc="rollout_manager", file="metrics.py:89"),
    )
    assert len(st.segments) == 1
    assert st.current.rollout_ids().tolist() == [0, 1]


def test_out_of_order_rollouts_sorted_in_series():
    # async: rollout manager perf 4 arrives before trainer rollout 3
    st = store_of(
        line("perf 4", "{'perf/rollout_time': 40.0}", proc="rollout_manager", file="metrics.py:89"),
        line("rollout 3", "{'rollout/raw_reward': 0.3}", file="log_utils.py:123"),
        line("perf 3", "{'perf/train_time': 30.0}", file="train_metric_utils.py:56"),
    )
    seg = st.current
    assert len(st.segments) == 1
    assert seg.rollout_ids().tolist() == [3, 4]
    ids, vals = seg.series("perf/rollout_time")
    assert ids.tolist() == [4] and vals.tolist() == [40.0]


# --------------------------------------------------------------------------------------------
# restarts
# --------------------------------------------------------------------------------------------


def test_second_exec_line_starts_a_new_segment():
    st = store_of(
        launch(rollout_batch_size=32, n_samples_per_prompt=8, global_batch_size=128),
        line("perf 0", "{'rollout/raw_reward': 0.1}", proc="rollout_manager", file="metrics.py:89"),
        line("perf 1", "{'rollout/raw_reward': 0.2}", proc="rollout_manager", file="metrics.py:89"),
        launch(rollout_batch_size=32, n_samples_per_prompt=8, global_batch_size=256),
        line("perf 2", "{'rollout/raw_reward': 0.3}", proc="rollout_manager", file="metrics.py:89"),
    )
    assert len(st.segments) == 2
    a, b = st.segments
    assert a.rollout_ids().tolist() == [0, 1] and a.steps_per_rollout == 2
    assert b.rollout_ids().tolist() == [2] and b.steps_per_rollout == 1
    assert b.start_line == 4
    assert st.current is b


def test_rollout_ids_going_back_start_a_new_segment():
    items, _ = parse_lines(
        [
            line("perf 5", "{'rollout/raw_reward': 0.5}", proc="rollout_manager", file="metrics.py:89"),
            line("perf 6", "{'rollout/raw_reward': 0.6}", proc="rollout_manager", file="metrics.py:89"),
            line("perf 0", "{'rollout/raw_reward': 0.0}", proc="rollout_manager", file="metrics.py:89"),
        ]
    )
    st = MetricStore()
    ups = [st.add([it]) for it in items]
    assert [u.new_segment for u in ups] == [False, False, True]
    assert ups[2].rollouts == {0}
    assert [s.rollout_ids().tolist() for s in st.segments] == [[5, 6], [0]]
    assert st.segments[1].value(0, "rollout/raw_reward") == 0.0


def test_launch_before_any_data_does_not_start_a_segment():
    st = store_of(
        launch(rollout_batch_size=8),
        launch(rollout_batch_size=16, n_samples_per_prompt=2, global_batch_size=16),
        line("step 3", "{'train/loss': 1.0, 'train/step': 3}"),
    )
    assert len(st.segments) == 1
    assert st.current.steps_per_rollout == 2


def test_store_update_reports_changes():
    st = MetricStore()
    items, _ = parse_lines(
        [line("rollout 2", "{'rollout/raw_reward': 0.5}", file="log_utils.py:123"), "Job 'raysubmit_X' failed"]
    )
    up = st.add(items)
    assert up
    assert up.rollouts == {2}
    assert len(up.records) == 1 and [e.kind for e in up.events] == ["job_failed"]
    assert not st.add([])


def test_many_rollouts_grow_columns():
    lines = [
        line(f"perf {i}", f"{{'perf/rollout_time': {i + 0.5}}}", proc="rollout_manager", file="metrics.py:89")
        for i in range(300)
    ]
    st = store_of(*lines)
    ids, vals = st.current.series("perf/rollout_time")
    assert ids.tolist() == list(range(300))
    assert np.array_equal(vals, np.arange(300) + 0.5)
    ids, vals = st.current.series("perf/rollout_time", last=5)
    assert ids.tolist() == [295, 296, 297, 298, 299]


# -- add_record's short path (a record shaped like an earlier one) changes nothing but speed ------

from hypothesis import given, settings, strategies as st

from grpo_tui.lines.records import MetricRecord
from grpo_tui.store import metric_store, steps as step_table

_SHAPE_NAMES = [("a", "b", "c"), ("a", "b"), ("b", "a", "c"), ("c",), ("a", "d")]
_SHAPE_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-5, 5),
    st.booleans(),
    st.sampled_from(["x", None, 1.5, 2.5, 3, 0.0, -0.0]),
)


@st.composite
def _records(draw):
    names = draw(st.sampled_from(_SHAPE_NAMES))
    kind = draw(st.sampled_from(["rollout", "perf", "eval", "step"]))
    typed = draw(st.sampled_from(["float", "int", "any"]))
    values = [
        draw(st.floats(-9, 9) if typed == "float" else st.integers(-9, 9) if typed == "int" else _SHAPE_VALUES)
        for _ in names
    ]
    metrics = dict(zip(names, values))
    nonfinite = {k: repr(v) for k, v in metrics.items() if isinstance(v, float) and not math.isfinite(v)}
    return MetricRecord(
        kind=kind, n=draw(st.integers(0, 6)), metrics=metrics, ts=1.0, nonfinite=nonfinite, proc="p", line_no=1
    )


def _store_state(store: MetricStore):
    out = []
    for seg in store.segments:
        n = len(seg.ids)
        cols = {k: repr(c.data[:n].tolist()) for k, c in seg.columns.items()}
        out.append(
            (
                seg.ids,
                cols,
                {k: repr(c.data[:n].tolist()) for k, c in seg.train_sum.items()},
                repr(seg.objects),
                repr(seg.int_state),
                list(seg.names),
                repr(seg.nonfinite),
                repr(seg.nonfinite_rows),
                bytes(seg.kind_mask[:n]),
                [seg.value(r, k) for r in seg.ids for k in seg.names],
                [repr(s) for s in seg.steps.values()],
            )
        )
    return repr(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(_records(), max_size=40))
def test_shaped_records_store_like_any_others(recs):
    _assert_shapes_change_nothing(recs, _store_state)


def _assert_shapes_change_nothing(recs, state) -> None:
    """The store `recs` leave behind, as `state` reads it, is the same with the short paths for
    records shaped like earlier ones on (_SHAPES_MAX) and off (0)."""
    import copy

    states = []
    for shapes_max in (metric_store._SHAPES_MAX, 0):
        with _shapes_max(shapes_max):
            store = MetricStore()
            store.add(copy.deepcopy(recs))
        states.append(state(store))
    assert states[0] == states[1]


@contextlib.contextmanager
def _shapes_max(n: int):
    """metric_store._SHAPES_MAX set to n (0: the short paths for known shapes are off)."""
    old = metric_store._SHAPES_MAX, step_table._SHAPES_MAX
    metric_store._SHAPES_MAX = step_table._SHAPES_MAX = n
    try:
        yield
    finally:
        metric_store._SHAPES_MAX, step_table._SHAPES_MAX = old


# -- K and groups are remembered per flags dict (FlagsMemo): every write to a flag is seen ---------

from grpo_tui.lines.launch import FlagsMemo, groups_per_rollout, steps_per_rollout


def test_k_read_again_when_an_arg_dump_adds_the_flag_after_steps():
    st = store_of(
        launch(rollout_batch_size=16, n_samples_per_prompt=8, global_batch_size=64),
        line("step 4", "{'train/loss': 1.0, 'train/step': 4}"),
    )
    seg = st.current
    assert seg.steps_per_rollout == 2 and seg.k_source == "flags" and seg.rollout_ids().tolist() == [2]
    items, _ = parse_lines(
        [
            "------------------------ arguments ------------------------",
            "  num_steps_per_rollout ........................... 4",
            "-------------------- end of arguments ---------------------",
            line("step 8", "{'train/loss': 2.0, 'train/step': 8}"),
        ]
    )
    st.add(items)
    assert seg.flags["num-steps-per-rollout"] == "4"
    assert seg.steps_per_rollout == 4
    assert seg.rollout_ids().tolist() == [2]  # step 8 // 4: the new K maps it
    assert seg.value(2, "train/loss") == 1.5


def test_k_and_groups_read_again_when_a_launch_before_data_rewrites_the_flags():
    st = store_of(launch(rollout_batch_size=8, n_samples_per_prompt=4, global_batch_size=16))
    seg = st.current
    assert (seg.steps_per_rollout, seg.groups) == (2, 8)
    st.add(parse_lines([launch(rollout_batch_size=32, n_samples_per_prompt=4, global_batch_size=16)])[0])
    assert (seg.steps_per_rollout, seg.groups) == (8, 32)
    seg.flags["num-steps-per-rollout"] = "3"  # any writer, not only the store
    assert seg.steps_per_rollout == 3 and seg.k_source == "flags"
    del seg.flags["num-steps-per-rollout"], seg.flags["rollout-batch-size"]
    assert (seg.steps_per_rollout, seg.groups) == (1, None)  # no flags, no steps: the default


_FLAG_NAMES = ("num-steps-per-rollout", "rollout-batch-size", "n-samples-per-prompt", "global-batch-size", "other")
_FLAG_VALUES = st.one_of(
    st.sampled_from([True, False, 1, 1.0, 0, 0.0, 2, "1", "2", "4", "0", "-3", "1e999", "x"]),
    st.integers(-3, 70).map(str),
)


def test_flags_memo_sees_a_value_replaced_by_an_equal_one_of_another_type():
    memo = FlagsMemo()
    flags = {"num-steps-per-rollout": True}
    assert memo.steps_per_rollout(flags) is None  # a bare flag says nothing
    flags["num-steps-per-rollout"] = 1  # == True, and hashes alike
    assert memo.steps_per_rollout(flags) == 1
    flags["rollout-batch-size"] = 0.0
    assert memo.groups_per_rollout(flags) == 0
    flags["rollout-batch-size"] = False  # == 0.0
    assert memo.groups_per_rollout(flags) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_FLAG_NAMES), _FLAG_VALUES, st.booleans()), max_size=30))
def test_flags_memo_answers_like_reading_the_flags(writes):
    """Writes of equal values in new objects (True and 1, '2' and a fresh '2'), deletions and
    writes of other flags: the memo always answers what reading the dict now gives."""
    flags: dict = {}
    memo = FlagsMemo()
    for name, value, delete in writes:
        if delete:
            flags.pop(name, None)
        else:
            flags[name] = value if not isinstance(value, str) else "".join(list(value))  # a new object
        assert memo.steps_per_rollout(flags) == steps_per_rollout(flags)
        assert memo.groups_per_rollout(flags) == groups_per_rollout(flags)


# -- _add_step's short path (a step shaped like an earlier one) changes nothing but speed ----------


@st.composite
def _steps(draw):
    names = draw(st.sampled_from(_SHAPE_NAMES))
    typed = draw(st.sampled_from(["float", "int", "mixed", "any"]))
    num = st.one_of(st.floats(-9, 9), st.integers(-9, 9))
    values = [
        draw(
            st.floats(-9, 9)
            if typed == "float"
            else st.integers(-9, 9)
            if typed == "int"
            else num
            if typed == "mixed"
            else _SHAPE_VALUES
        )
        for _ in names
    ]
    metrics = dict(zip(names, values))
    nonfinite = {k: repr(v) for k, v in metrics.items() if isinstance(v, float) and not math.isfinite(v)}
    kind = draw(st.sampled_from(["step", "step", "step", "rollout"]))
    return MetricRecord(
        kind=kind,
        n=draw(st.integers(0, 12)),
        metrics=metrics,
        ts=draw(st.sampled_from([None, 2.0])),
        nonfinite=nonfinite,
        proc="p",
        role=draw(st.sampled_from(["", "critic"])),
        line_no=1,
    )


def _step_state(store: MetricStore):
    out = [_store_state(store)]
    for seg in store.segments:
        n = len(seg.ids)
        out.append(
            (
                {k: repr(c.data[:n].tolist()) for k, c in seg.train_cnt.items()},
                list(seg.train_names),
                [(key, repr(seg.steps[key])) for key in seg.steps],
                seg.steps.of_rollout,
                seg.duplicate_steps,
                seg.steps_per_rollout,
                repr(seg.first_ts.data[:n].tolist()),
                repr(seg.last_ts.data[:n].tolist()),
            )
        )
    return repr(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(_steps(), max_size=40))
def test_shaped_steps_store_like_any_others(recs):
    _assert_shapes_change_nothing(recs, _step_state)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(
                    ["perf/train_time", "rollout/raw_reward", "passrate/pass@1", "perf/x", "rollout", "passrate"]
                ),
                unique=True,
                max_size=4,
            ),
            st.sampled_from([None, "RolloutManager", "MegatronTrainRayActor"]),
        ),
        max_size=20,
    )
)
def test_rm_perf_memo_answers_like_reading_the_keys(recs):
    """The trainer/rollout-manager test of a perf record, remembered per key tuple, is the
    test of its keys (also once the memo was cleared: _SHAPES_MAX bounds it)."""
    for keys, actor in recs:
        rec = MetricRecord(kind="perf", n=0, metrics=dict.fromkeys(keys, 1.0), actor=actor, proc="p")
        want = actor == "RolloutManager" or any(k.startswith(("rollout/", "passrate/")) for k in keys)
        assert metric_store._rm_perf(rec) == want
        assert metric_store._rm_perf(rec) == want


@pytest.mark.parametrize("kind,first_rollout", [("rollout", None), ("step", None), ("step", 0)])
def test_an_int_past_float64_fails_on_the_short_path_as_on_the_long_one(kind, first_rollout):
    """Not from the parser (it reads such a token as a float), but a caller's record: the cell
    writes through memoryviews fail like numpy's, leaving the same store behind (a step into a
    new rollout, and one adding to its rollout's sums: every step maps to rollout 0)."""
    states = []
    for shapes_max in (metric_store._SHAPES_MAX, 0):
        with _shapes_max(shapes_max):
            store = MetricStore()
            if first_rollout is not None:
                store.add([MetricRecord(kind="rollout", n=first_rollout, metrics={"z": 1.0}, proc="p")])
            store.add([MetricRecord(kind=kind, n=n, metrics={"a": 1, "b": 2.5}, proc="p", ts=1.0) for n in range(3)])
            with pytest.raises(OverflowError):
                store.add([MetricRecord(kind=kind, n=3, metrics={"a": 2, "b": 10**400}, proc="p", ts=1.0)])
        states.append(_step_state(store))
    assert states[0] == states[1]


@settings(max_examples=60, deadline=None)
@given(marks=st.lists(st.integers(0, 300), max_size=400), lo=st.integers(0, 300), span=st.integers(0, 120))
def test_nonfinite_rows_stay_sorted_and_the_mask_matches_a_plain_scan(marks, lo, span):
    """nonfinite_rows is kept sorted without repeats whatever order rows are marked in, and
    _nonfinite_mask (found by bisection) marks exactly the window's rows logged as nan."""
    seg = MetricStore().current
    for row in marks:
        seg._mark_nonfinite(row, {"train/grad_norm": "nan"})
    got = seg.nonfinite_rows.get("train/grad_norm", [])
    assert got == sorted(set(marks))
    rows = np.arange(lo, lo + span, dtype=np.int64)
    want = np.array([r in set(marks) for r in rows.tolist()], dtype=bool)
    assert seg._nonfinite_mask("train/grad_norm", rows).tolist() == want.tolist()
    assert not seg._nonfinite_mask("train/loss", rows).any()
