"""Absolute signs at a run's first rollouts (issue #40, item 2): one rollout already shows that no
group can teach anything (reward exactly 0 or 1, every group all-same) or that the output is
near-random.  A warning at the first rollout, critical at the second, and nothing for a run
whose first rollout is ordinary or that shows such a value once later on."""

from __future__ import annotations

from grpo_tui.pipeline import Pipeline


def trl_line(i: int, reward: float = 0.0, zero_std: float = 1.0, entropy: float = 0.6) -> str:
    """One TRL console dict (its logging step i), as a one-step excerpt from a thread shows it."""
    return (
        f"{{'loss': 0.0, 'grad_norm': 0.0, 'learning_rate': 1e-06, 'completions/mean_length': 512.0, "
        f"'reward': {reward!r}, 'reward_std': 0.0, 'frac_reward_zero_std': {zero_std!r}, 'kl': 0.0, "
        f"'entropy': {entropy!r}, 'epoch': {i / 100!r}}}"
    )


def alerts(lines: list[str]) -> dict[str, tuple[str, str]]:
    pipe = Pipeline()
    pipe.feed(lines, written_at=1_000_000.0)
    pipe.finish(1_000_000.0)
    return {a.rule: (a.severity, a.message) for a in pipe.report(1_000_000.0).alerts}


def test_reward_exactly_zero_at_the_first_rollout_warns_and_the_second_is_critical():
    sev, msg = alerts([trl_line(1)])["no-signal"]
    assert sev == "warning" and "first rollout" in msg and "all wrong" in msg
    sev, msg = alerts([trl_line(1), trl_line(2)])["no-signal"]
    assert sev == "critical" and "for 2 rollouts" in msg


def test_reward_exactly_one_at_the_first_rollout_warns():
    sev, msg = alerts([trl_line(1, reward=1.0)])["no-signal"]
    assert sev == "warning" and "all right" in msg


def test_every_group_zero_std_at_the_first_rollout_warns_then_critical():
    """Reward 0.5 but every group all-same (half the groups all right, half all wrong)."""
    sev, msg = alerts([trl_line(1, reward=0.5)])["no-signal"]
    assert sev == "warning" and "every group scores the same at the first rollout" in msg
    # TRL's share does not say which way the groups scored: the message must not claim it
    assert "not whether those groups were all right or all wrong" in msg
    sev, msg = alerts([trl_line(1, reward=0.5), trl_line(2, reward=0.5)])["no-signal"]
    assert sev == "critical" and "on 2 rollouts at the start" in msg


def test_near_random_entropy_at_the_first_rollout_warns_then_critical():
    line = "step:1 - actor/entropy:9.49 - actor/grad_norm:0.5 - critic/score/mean:0.12 - response_length/mean:1024.0"
    sev, msg = alerts([line])["entropy-high"]
    assert sev == "warning" and "first rollout" in msg
    got = alerts([line, line.replace("step:1", "step:2")])
    assert got["entropy-high"][0] == "critical"


def test_an_ordinary_first_rollout_raises_nothing():
    assert alerts([trl_line(1, reward=0.4, zero_std=0.25)]) == {}


def test_such_a_value_later_in_a_run_is_not_a_first_rollout_sign():
    """A single rollout at reward 0, or with every group all-same, in the middle of a run: the
    usual tests (two rollouts in a row, 3 of the last 4) judge it, not the first-rollout sign."""
    lines = [trl_line(i, reward=0.4 + 0.001 * i, zero_std=0.2) for i in range(1, 30)]
    lines.append(trl_line(30, reward=0.0, zero_std=1.0))
    assert "no-signal" not in alerts(lines)


def test_a_live_trl_or_verl_line_is_judged_when_it_is_read():
    """One TRL dict (or verl step line) holds the whole step: the newest is judged at once, not when
    the next line comes, so a live surface says what `check` says of the same bytes."""
    pipe = Pipeline()
    pipe.feed([trl_line(1), trl_line(2)], written_at=1_000_000.0)  # (live: no finish)
    (a,) = pipe.report(1_000_000.0).alerts
    assert (a.rule, a.severity) == ("no-signal", "critical")
