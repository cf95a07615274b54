"""Rows read back from a run's metric files made into the console's records (sidecar/assemble.py)."""

from __future__ import annotations

import math

import numpy as np

from grpo_tui.pipeline import judge_path
from grpo_tui.sidecar import tensorboard as tb
from grpo_tui.sidecar.assemble import Merger, framework_of, history_row, record_of, tensorboard_rows


def test_the_framework_is_told_by_its_names():
    assert framework_of(["rollout/raw_reward", "train/grad_norm"]) == "miles"
    assert framework_of(["critic/score/mean", "actor/grad_norm"]) == "verl"
    assert framework_of(["train/reward", "train/completions/mean_length", "train/grad_norm"]) == "trl"
    assert framework_of(["train/reward", "train/vllm_kl", "train/ppo_clip_ratio"]) == "openrlhf"


def test_a_tensorboard_file_is_cut_into_log_calls():
    """One dict per add_scalar loop: a new row where the axis or the step changes, or a second passes."""
    tags = ["rollout/raw_reward", "rollout/response_lengths", "perf/train_time", "train/grad_norm"]
    ids = np.array([0, 1, 2, 3, 3, 0, 1], np.int32)
    steps = np.array([5, 5, 5, 10, 11, 6, 6], np.int64)
    wall = np.array([100.0, 100.0, 160.0, 130.0, 140.0, 200.0, 200.0])
    vals = np.array([0.5, 600.0, 30.0, 1.0, math.inf, 0.6, 610.0])
    rows = tensorboard_rows("train", tags, ids, steps, wall, vals)
    got = [(r.axis, r.step, sorted(r.values)) for r in rows]
    assert got == [
        ("rollout", 5, ["rollout/raw_reward", "rollout/response_lengths"]),
        ("rollout", 5, ["perf/train_time"]),  # (the trainer's timers: a minute later, another log call)
        ("train", 10, ["train/grad_norm"]),
        ("train", 11, ["train/grad_norm"]),
        ("rollout", 6, ["rollout/raw_reward", "rollout/response_lengths"]),
    ]
    recs = [record_of(r, "miles") for r in rows]
    assert [(r.kind, r.n) for r in recs] == [("rollout", 5), ("perf", 5), ("step", 10), ("step", 11), ("rollout", 6)]
    assert recs[3].nonfinite == {"train/grad_norm": "inf"} and recs[2].metrics["train/step"] == 10


def test_a_wandb_row_takes_its_step_from_its_step_key_never_from_step():
    row = history_row("rm", {"_step": 99, "_timestamp": 1.5e9, "rollout/step": 7, "perf/rollout_time": 80.0})
    rec = record_of(row, "miles")
    assert (rec.kind, rec.n, rec.ts) == ("perf", 7, 1.5e9) and "_step" not in rec.metrics
    trl = history_row("p", {"_step": 3, "train/global_step": 40, "train/reward": 0.5, "train/loss": None})
    rec = record_of(trl, "trl")
    assert (rec.kind, rec.n, rec.source) == ("rollout", 40, "trl")
    assert rec.metrics["reward"] == 0.5 and math.isnan(rec.metrics["loss"]) and rec.nonfinite == {"loss": "nan"}


def test_the_merger_waits_for_the_lagging_file():
    m = Merger()
    m.add("a", [_Stamped(1.0), _Stamped(3.0)], 3.0)
    m.add("b", [_Stamped(2.0)], 2.0)
    assert [it.ts for it in m.release()] == [1.0, 2.0]  # b has reached 2: 3.0 waits
    assert [it.ts for it in m.release(quiet=["b"])] == [3.0]  # b went quiet: it holds nothing back
    m.add("b", [_Stamped(4.0)], 4.0)
    assert [it.ts for it in m.release(final=True)] == [4.0]


class _Stamped:
    def __init__(self, ts: float) -> None:
        self.ts = ts


def test_an_openrlhf_tensorboard_folder_is_read_with_its_own_names(tmp_path):
    """OpenRLHF writes `train/<name>` at the global step: a framework of its own, no Miles ranges."""
    with open(tmp_path / "events.out.tfevents.1.node0.1.0", "wb") as f:
        f.write(tb.frame(tb.version_event(1.0)))
        for step in range(1, 30):
            wall = 1000.0 + 60 * step
            for tag, value in (
                ("train/reward", 0.3 + 0.01 * step),
                ("train/response_length", 500.0 - step),
                ("train/vllm_kl", 0.001),
                ("train/actor_grad_norm", 0.5),
                ("train/ppo_clip_ratio", 0.01),
                ("train/policy_loss", 0.02),
            ):
                f.write(tb.frame(tb.scalar_event(tag, value, step, wall)))
    pipe = judge_path(str(tmp_path))
    seg = pipe.store.current
    assert seg.framework == "openrlhf" and len(seg.ids) == 29
    rep = pipe.report()
    assert rep.ranges == "none"  # (the manual's ranges are Miles')
    assert rep.signals["kl"].metric == "vllm_kl" and rep.signals["grad_norm"].metric == "actor_grad_norm"
    assert rep.signals["length"].last == 471.0
