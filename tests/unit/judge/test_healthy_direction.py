"""Ranges know their healthy direction (issue #40, item 3): reward above its band, and answer
length or cut share below theirs while reward holds, are not warnings, neither as an alert nor
as a signal's badge; the same signals beyond the other side still are."""

from __future__ import annotations

import re

import numpy as np
import pytest

from grpo_tui.judge.signals import BY_ID, beyond_is_healthy, reward_holds
from grpo_tui.simulate import generate
from tests.unit.judge.test_kl_ref_no_update import judge


def _set(lines: list[str], metric: str, value: float, start: int = 20) -> list[str]:
    """Every `rollout N:` / `perf N:` value of `metric` from rollout `start` on set to `value`."""
    rx = re.compile(r"((?:rollout|perf) (\d+): \{.*?'" + re.escape(metric) + r"': )([-0-9.e]+)")
    out = []
    for line in lines:
        m = rx.search(line)
        if m and int(m.group(2)) >= start:
            line = line[: m.start(3)] + repr(value) + line[m.end(3) :]
        out.append(line)
    return out


@pytest.fixture(scope="module")
def healthy() -> list[str]:
    return [line for _, line in generate("healthy", 60, 7)]


def _oor(rep, sig_id: str) -> list:
    return [a for a in rep.alerts if a.rule == "out-of-range" and a.signal == sig_id]


def test_reward_above_its_band_is_no_warning(healthy):
    rep = judge(_set(healthy, "rollout/raw_reward", 0.95))
    assert not _oor(rep, "reward") and rep.signals["reward"].status == "ok"
    assert rep.signals["reward"].mean5 > rep.signals["reward"].range[1]
    rep = judge(_set(healthy, "rollout/raw_reward", 0.40))  # below it still is
    assert _oor(rep, "reward") and rep.signals["reward"].status == "warning"


@pytest.mark.parametrize(
    ("sig_id", "metric", "low"),
    [("length", "rollout/response_lengths", 300.0), ("truncated", "rollout/truncated", 0.005)],
)
def test_length_or_cut_share_below_while_reward_holds_is_no_warning(healthy, sig_id, metric, low):
    rep = judge(_set(healthy, metric, low))
    assert not _oor(rep, sig_id) and rep.signals[sig_id].status == "ok"
    assert rep.signals[sig_id].mean5 < rep.signals[sig_id].range[0]
    # ... and a warning where reward falls below its own band with it
    rep = judge(_set(_set(healthy, metric, low), "rollout/raw_reward", 0.40))
    assert _oor(rep, sig_id) and rep.signals[sig_id].status == "warning"


def test_above_the_band_is_still_a_warning_for_length(healthy):
    rep = judge(_set(healthy, "rollout/response_lengths", 950.0))
    assert _oor(rep, "length")


def test_the_predicates():
    ids = np.arange(10.0)
    assert reward_holds(ids, np.full(10, 0.6), 9, (0.53, 0.87))
    assert not reward_holds(ids, np.full(10, 0.5), 9, (0.53, 0.87))
    assert not reward_holds(ids, np.full(10, 0.6), 10, (0.53, 0.87))  # no value at the rollout
    assert not reward_holds(ids, np.full(10, 0.6), 9, None)  # no band
    assert beyond_is_healthy(BY_ID["reward"], True, False)  # (above its band)
    assert not beyond_is_healthy(BY_ID["reward"], False, True)
    assert beyond_is_healthy(BY_ID["truncated"], False, True)
    assert not beyond_is_healthy(BY_ID["truncated"], False, False)
    assert not beyond_is_healthy(BY_ID["gap"], False, True)
    # element by element, as RangeTest asks it for many rollouts at once
    got = beyond_is_healthy(BY_ID["truncated"], np.array([True, False, False]), np.array([True, True, False]))
    assert got.tolist() == [False, True, False]
