"""Evidence numbers are rounded to 4 digits; a value near the largest float must not round up
to inf (check --json then failed: "Out of range float values are not JSON compliant")."""

from __future__ import annotations

import json

from grpo_tui.judge.rules.base import _r
from grpo_tui.pipeline import judge_path


def test_rounding_never_makes_inf():
    assert _r(1.79751e308) == 1.79751e308
    assert _r(0.123456) == 0.1235
    assert _r(float("inf")) is None


def test_check_json_of_a_huge_reward(tmp_path):
    log = tmp_path / "huge.log"
    log.write_text("rollout 0: {'rollout/raw_reward':1.79751e308}\n", encoding="utf-8")
    obj = judge_path(str(log)).report().to_json(str(log))
    json.dumps(obj, allow_nan=False)
