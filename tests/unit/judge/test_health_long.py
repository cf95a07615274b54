"""Long healthy runs (past the 48-rollout baseline, K = 1 and K = 4) stay free of alerts."""

from __future__ import annotations

import pytest

from grpo_tui.simulate import generate
from tests.unit.judge.test_health import judge_lines


@pytest.mark.parametrize("seed,k,rollouts", [(202, 1, 150), (211, 1, 150), (217, 1, 150), (205, 4, 60)])
def test_long_healthy_run_has_no_critical_alert(seed, k, rollouts):
    lines = [line for _, line in generate("healthy", rollouts, seed, steps_per_rollout=k, noise_per_rollout=2)]
    rep = judge_lines(lines)
    assert [a.rule for a in rep.alerts if a.severity == "critical"] == []
