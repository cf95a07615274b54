"""Real output of other frameworks (tests/fixtures/real/, sources in its README) is read: the
rollouts found, the framework known, the signals mapped - the held-out real logs' stand-in (#41)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from grpo_tui.judge.rules.policy import ENTROPY
from grpo_tui.judge.signals import BY_ID, metric_for
from grpo_tui.lines.parse import LineParser
from grpo_tui.lines.records import MetricRecord
from grpo_tui.pipeline import judge_path

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"

# file -> (framework, rollout ids, signals (and "entropy") that must be mapped)
CASES = {
    "ms-swift/logging.jsonl": ("trl", [1, 2], {"reward", "length", "truncated", "grad_norm", "clipfrac", "entropy"}),
    "ms-swift/megatron-8173.log": ("trl", [2], {"reward", "length", "grad_norm", "clipfrac", "zero_std"}),
    "ms-swift/megatron-6718.log": ("trl", [7], {"reward", "length", "grad_norm", "clipfrac", "zero_std"}),
    "ms-swift/console.log": ("trl", [5], {"reward", "length", "truncated", "grad_norm", "clipfrac", "zero_std"}),
    "prime-rl/orchestrator.log": ("prime-rl", [28, 29, 30, 31], {"reward", "length"}),
    "prime-rl/orchestrator-2.log": ("prime-rl", [9, 10], {"reward", "length"}),
    "trl-table/unsloth-grpo.md": ("trl", list(range(1, 12)), {"reward", "length"}),
    "verl-file/exp.jsonl": ("verl", list(range(1, 9)), {"reward", "length", "truncated", "grad_norm", "clipfrac"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_output_is_read(name: str):
    framework, ids, signals = CASES[name]
    pipe = judge_path(str(REAL / name))
    seg = pipe.store.segments[-1]
    assert seg.framework == framework
    assert sorted(seg.ids) == ids
    for sig in signals:
        assert metric_for(seg, ENTROPY if sig == "entropy" else BY_ID[sig]) is not None, sig
    assert pipe.parser.counts.unreadable == 0
    assert pipe.report().rollouts == len(ids)


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_output_same_records_with_and_without_the_c_scanner(name: str):
    lines = (REAL / name).read_text(encoding="utf-8").split("\n")
    got = []
    for accel in (True, False):
        p = LineParser(accel=accel)
        items = p.feed_lines(lines) + p.flush()
        got.append([(i.kind, i.n, i.source, sorted(i.metrics.items())) for i in items if isinstance(i, MetricRecord)])
    assert got[0] == got[1] and got[0]


def test_prime_rl_values_and_verl_nulls():
    p = LineParser()
    recs = [
        i
        for i in p.feed_lines((REAL / "prime-rl/orchestrator.log").read_text().split("\n"))
        if isinstance(i, MetricRecord)
    ]
    first = recs[0].metrics
    assert first["reward/mean"] == 0.3887 and first["seq_len/mean"] == 345.6
    assert first["orchestrator/time/step"] == 73.77 and first["off_policy_level/max"] == 0
    p = LineParser()
    recs = [
        i for i in p.feed_lines((REAL / "verl-file/exp.jsonl").read_text().split("\n")) if isinstance(i, MetricRecord)
    ]
    four = recs[3]
    assert math.isnan(four.metrics["actor/grad_norm"]) and four.nonfinite == {
        "actor/grad_norm": "null",
        "critic/score/mean": "null",
    }
