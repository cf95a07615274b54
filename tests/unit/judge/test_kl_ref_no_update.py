"""Signs beyond the nine (issue #40, item 2): KL to the reference running away (`kl-ref`), updates
that do nothing (`no-update`), and a non-finite KL (`non-finite`), on TRL-style logs and a Miles run."""

from __future__ import annotations

import math
import re

from grpo_tui.pipeline import Pipeline
from grpo_tui.simulate import generate


def trl_log(n: int = 60, kl=lambda i: 0.0005 + 0.0001 * i, grad=lambda i: 0.4, std=lambda i: 0.13) -> list[str]:
    """TRL's console dicts, one per logging step."""
    out = []
    for i in range(n):
        k = kl(i)
        ktext = "nan" if isinstance(k, float) and math.isnan(k) else repr(k)
        out.append(
            f"{{'loss': 0.01, 'grad_norm': {grad(i)!r}, 'learning_rate': 1e-06, 'reward': {0.5 + 0.001 * i!r}, "
            f"'reward_std': {std(i)!r}, 'kl': {ktext}, 'epoch': {i / 100!r}}}"
        )
    return out


def judge(lines: list[str]):
    pipe = Pipeline()
    pipe.feed(lines, written_at=1_000_000.0)
    pipe.finish(1_000_000.0)
    return pipe.report(1_000_000.0)


def rules_of(rep) -> dict[str, str]:
    return {a.rule: a.severity for a in rep.alerts}


def test_a_healthy_kl_that_grows_slowly_raises_nothing():
    rep = judge(trl_log(300, kl=lambda i: 0.0005 + 0.00015 * i))  # 0.0005 -> 0.045
    assert rep.status == "ok", rep.alerts


def test_kl_that_climbs_to_two_is_critical_within_a_few_logs():
    """The real TRL run's shape: 0.002 for 20 logs, then up to 0.8 within five and 2-3 after."""
    ramp = [0.002] * 20 + [0.01, 0.05, 0.2, 0.5, 0.8] + [2.0, 2.5, 3.0, 2.2, 2.8] * 4
    rep = judge(trl_log(len(ramp), kl=lambda i: ramp[i]))
    (a,) = [a for a in rep.alerts if a.rule == "kl-ref"]
    assert a.severity == "critical" and a.first_seen <= 27
    assert "early level" in a.message or "jumped" in a.message


def test_a_one_step_spike_x500_is_critical():
    rep = judge(trl_log(40, kl=lambda i: 0.5 if i == 30 else 0.001))
    (a,) = [a for a in rep.alerts if a.rule == "kl-ref"]
    assert a.severity == "critical" and a.rollout == 30 and "x500" in a.message


def test_kl_above_ten_is_critical_at_once_and_a_slow_rise_to_a_tenth_warns():
    rep = judge(trl_log(30, kl=lambda i: 12.0 if i == 25 else 0.002 * (1 + i)))
    assert rules_of(rep).get("kl-ref") == "critical"
    rep = judge(trl_log(40, kl=lambda i: 0.002 if i < 20 else 0.15))  # x75 its early level, at 0.15
    assert rules_of(rep).get("kl-ref") == "warning"


def test_a_nan_kl_on_every_step_is_non_finite():
    rep = judge(trl_log(20, kl=lambda i: math.nan))
    assert rules_of(rep).get("non-finite") == "critical"


def test_zero_gradient_while_groups_disagree_is_critical_and_without_variance_nothing():
    rep = judge(trl_log(40, grad=lambda i: 0.0 if i >= 20 else 0.4))
    (a,) = [a for a in rep.alerts if a.rule == "no-update"]
    assert a.severity == "critical" and a.rollout == 20 and a.first_seen == 21
    rep = judge(trl_log(40, grad=lambda i: 0.0 if i >= 20 else 0.4, std=lambda i: 0.0 if i >= 20 else 0.13))
    assert "no-update" not in rules_of(rep)  # all groups alike: no gradient by design (no-signal's)
    rep = judge(trl_log(40, grad=lambda i: 0.0 if i == 20 else 0.4))
    assert "no-update" not in rules_of(rep)  # one step is not a sign


def test_zero_gradient_in_a_miles_run_is_critical():
    rx = re.compile(r"(step (\d+): \{.*?'train/grad_norm': )([-0-9.e]+)")
    lines = []
    for _, line in generate("healthy", 48, 5):
        m = rx.search(line)
        if m and int(m.group(2)) >= 30:
            line = line[: m.start(3)] + "0.0" + line[m.end(3) :]
        lines.append(line)
    rep = judge(lines)
    assert rules_of(rep).get("no-update") == "critical"


def test_a_logged_zero_std_share_does_not_claim_which_way_the_groups_scored():
    """TRL's frac_reward_zero_std is a share: the message said "100% all wrong, 100% all right"."""
    lines = [
        f"{{'loss': 0.0, 'grad_norm': 0.3, 'reward': 0.5, 'reward_std': 0.0, 'frac_reward_zero_std': 1.0, "
        f"'epoch': {i / 100!r}}}"
        for i in range(30)
    ]
    (a,) = [a for a in judge(lines).alerts if a.rule == "no-signal"]
    # (raised at the first rollout, critical at the second: the alert keeps that message)
    assert a.message.startswith("every group scores the same on 2 rollouts at the start") and a.rollout == 0
    assert "all wrong," not in a.message and "not whether those groups were all right or all wrong" in a.message


def verl_log(n: int, entropy) -> list[str]:
    return [
        f"step:{i} - actor/entropy:{entropy(i)!r} - actor/grad_norm:0.5 - critic/score/mean:{0.3 + 0.001 * i!r} - "
        f"response_length/mean:{400 + i}"
        for i in range(1, n + 1)
    ]


def test_near_random_entropy_is_critical_and_a_healthy_entropy_is_not():
    """The real verl LoRA run logs actor/entropy 9.49; healthy runs sit far below 1-2 nats."""
    rep = judge(verl_log(30, lambda i: 9.49 if i >= 20 else 0.6))
    (a,) = [a for a in rep.alerts if a.rule == "entropy-high"]
    assert a.severity == "critical" and a.rollout == 20 and "near-random" in a.message
    assert "entropy-high" not in rules_of(judge(verl_log(60, lambda i: 0.4 + 0.02 * i)))  # rises to 1.6
    assert "entropy-high" not in rules_of(judge(verl_log(30, lambda i: 9.49 if i == 20 else 0.6)))  # one step


def test_reward_std_x10_its_start_is_critical():
    rep = judge(trl_log(40, std=lambda i: 0.8 if i >= 25 else 0.05))
    (a,) = [a for a in rep.alerts if a.rule == "reward-variance"]
    assert a.severity == "critical" and "x16" in a.message
    assert "reward-variance" not in rules_of(judge(trl_log(40, std=lambda i: 0.05 + 0.004 * i)))  # x4 over the run


def test_kl_to_the_reference_in_a_simulated_miles_run():
    """math-7b logs train/kl_loss (--use-kl-loss, K = 2): its healthy slow climb raises nothing;
    the same run with the KL x100 from rollout 30 on is critical kl-ref."""
    lines = [line for _, line in generate("healthy", 48, 5, setup="math-7b", steps_per_rollout=2)]
    assert sum("'train/kl_loss'" in line for line in lines) > 100
    assert "kl-ref" not in rules_of(judge(lines))

    def run_away(line: str) -> str:
        m = re.search(r"step (\d+): .*'train/kl_loss': ([0-9.e-]+)", line)
        if not m or int(m.group(1)) < 60:  # (step 60 = rollout 30 with K = 2)
            return line
        return line.replace(f"'train/kl_loss': {m.group(2)}", f"'train/kl_loss': {float(m.group(2)) * 100!r}")

    assert rules_of(judge([run_away(line) for line in lines])).get("kl-ref") == "critical"
