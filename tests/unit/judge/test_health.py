"""Health engine: each broken scenario fires its rule, healthy seeds raise no critical alert."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.false_alarm_sweep import judge_lines  # the sweep's way to judge a run: one definition
from grpo_tui.judge.engine import HealthEngine
from grpo_tui.judge.ranges import load_ranges
from grpo_tui.lines.parse import parse_lines
from grpo_tui.pipeline import judge_path
from grpo_tui.simulate import SCENARIOS, generate, onset_of
from grpo_tui.store.metric_store import MetricStore

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "sample_logs"
BROKEN = [s for s in SCENARIOS if s != "healthy"]


def sim(scenario, seed=3, **kw):
    kw.setdefault("noise_per_rollout", 4)
    return [line for _, line in generate(scenario, 48, seed, **kw)]


@pytest.mark.parametrize("scenario", BROKEN)
def test_each_scenario_fires_its_rule_and_no_unrelated_critical(scenario):
    rep = judge_lines(sim(scenario))
    critical = {a.rule for a in rep.alerts if a.severity == "critical"}
    assert scenario in critical
    assert critical == {scenario}, f"unrelated critical rules fired: {critical - {scenario}}"
    assert rep.status == "critical"
    alert = next(a for a in rep.alerts if a.rule == scenario)
    assert alert.evidence, "an alert must carry its evidence"
    assert alert.check and alert.meaning


@pytest.mark.parametrize(
    "scenario",
    [
        "gap-rising",
        "gap-jump",
        "grad-norm-rising",
        "length-hacking",
        "rollout-slowdown",
        "no-signal",
        "non-finite",
        "off-policy",
        "crashed",
    ],
)
def test_alert_fires_within_a_few_rollouts_of_the_onset(scenario):
    rep = judge_lines(sim(scenario))
    onset = onset_of(scenario, 48)
    alert = min((a for a in rep.alerts if a.rule == scenario), key=lambda a: a.seq)
    assert alert.first_seen is not None and onset <= alert.first_seen + 1
    # Length hacking needs a significant fall of reward (the noisiest signal) on the same
    # window as a significant rise of length, confirmed on two rollouts; grad norm is judged
    # on a log scale against heavy-tailed noise: both take a longer window.
    bound = {"length-hacking": 14, "grad-norm-rising": 10}.get(scenario, 8)
    assert alert.first_seen - onset <= bound, f"{scenario} first seen at {alert.first_seen}, onset {onset}"


@pytest.mark.parametrize("fmt", ["miles", "slime", "level"])
@pytest.mark.parametrize("k", [1, 2])
def test_formats_and_steps_per_rollout_still_detect(fmt, k):
    for scenario in ("gap-jump", "off-policy", "non-finite"):
        rep = judge_lines(sim(scenario, fmt=fmt, steps_per_rollout=k))
        assert scenario in {a.rule for a in rep.alerts if a.severity == "critical"}, (scenario, fmt, k)


def test_healthy_seeds_raise_no_critical_alert():
    false_alarms = []
    for seed in range(100, 123):  # 23 random healthy seeds
        rep = judge_lines(sim("healthy", seed=seed))
        crit = [a.rule for a in rep.alerts if a.severity == "critical"]
        if crit:
            false_alarms.append((seed, crit))
    assert false_alarms == []


@pytest.mark.parametrize("name", ["healthy-seed1.log", "healthy-seed2.log", "healthy-seed3.log"])
def test_bundled_healthy_samples_are_ok(name):
    rep = judge_path(str(SAMPLES / name)).report()
    assert [a.rule for a in rep.alerts if a.severity == "critical"] == []
    assert rep.status in ("ok", "warning")
    assert rep.rollouts == 48 and rep.steps_per_rollout == 1
    assert all(s.status != "unknown" for k, s in rep.signals.items() if k != "rollout_time")


def _manual_lines(rewards):
    """A log with the manual's own numbers: 32 groups, step 0 with 7 all-wrong + 3 all-right."""
    lines = ["EXEC: python3 train.py --rollout-batch-size 32 --n-samples-per-prompt 8 --global-batch-size 256"]
    for r, rew in enumerate(rewards):
        t = f"[2026-08-21 10:{r:02d}:00.000 rollout_manager] metrics.py:89 - "
        length = 787 - 8 * r
        perf = {
            "rollout/response_len/mean": float(length),
            "rollout/response_len/max": 1024,
            "rollout/zero_std/count_0": 7,
            "rollout/zero_std/count_1": 3,
            "rollout/truncated_ratio": 0.3,
            "perf/rollout_time": 90.0 - r * 0.3,
        }
        lines.append(t + f"perf {r}: {perf!r}")
        tr = f"[2026-08-21 10:{r:02d}:30.000 actor_cell0_rank0] "
        lines.append(
            tr + f"log_utils.py:123 - rollout {r}: {{'rollout/raw_reward': {rew!r}, "
            f"'rollout/response_lengths': {float(length)!r}, 'rollout/truncated': 0.3}}"
        )
        step = {
            "train/pg_clipfrac": 0.0,
            "train/train_rollout_logprob_abs_diff": 0.0150,
            "train/train_rollout_kl": 0.00069,
            "train/grad_norm": 1.1,
            "train/step": r,
        }
        lines.append(tr + f"log_utils.py:542 - step {r}: {step!r}")
    return lines


def test_manual_numbers_are_judged_healthy():
    # Reward swings of 0.14 within the first ten steps must not alarm.
    rewards = [0.60, 0.74, 0.60, 0.70, 0.56, 0.70, 0.62, 0.68, 0.58, 0.72]
    rep = judge_lines(_manual_lines(rewards))
    assert rep.status == "ok", [(a.rule, a.message) for a in rep.alerts]
    zs = rep.signals["zero_std"]
    assert zs.extra["groups"] == 32
    assert zs.last == pytest.approx(10 / 32)
    assert zs.extra["all_wrong"] == pytest.approx(7 / 32) and zs.extra["all_right"] == pytest.approx(3 / 32)


def test_reward_swing_of_021_over_48_steps_is_healthy():
    rewards = [0.62 + 0.004 * r + (0.105 if r % 2 else -0.105) * (r % 5 == 0) for r in range(48)]
    rep = judge_lines(_manual_lines(rewards))
    assert not [a for a in rep.alerts if a.severity == "critical"]


def test_zero_std_groups_from_percentage_when_no_flags():
    items, _ = parse_lines(
        [
            "[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'rollout/zero_std/count_0': 4, "
            "'rollout/zero_std/all_zero_percentage': 0.125, 'perf/rollout_time': 10.0}"
        ]
    )
    store = MetricStore()
    eng = HealthEngine(store)
    eng.update(store.add(items))
    eng.judge_rest()
    zs = eng.report().signals["zero_std"]
    assert zs.extra["groups"] == 32 and zs.last == pytest.approx(4 / 32)


def test_calibrate_on_two_seeds_accepts_the_third(tmp_path, capsys):
    """In process (cli.main): the console entry point itself is tested as a subprocess elsewhere."""
    from grpo_tui import cli

    out = tmp_path / "ranges.toml"
    rc = cli.main(["calibrate", str(SAMPLES / "healthy-seed1.log"), str(SAMPLES / "healthy-seed2.log"), "-o", str(out)])
    assert rc == 0, capsys.readouterr().err
    ranges = load_ranges(str(out))
    assert set(ranges.envelopes) >= {"reward", "length", "gap", "kl", "grad_norm"}
    capsys.readouterr()
    rc = cli.main(["check", "--ranges", str(out), "--json", str(SAMPLES / "healthy-seed3.log")])
    obj = json.loads(capsys.readouterr().out)
    assert obj["status"] in ("ok", "warning") and rc in (0, 1)
    assert not [a for a in obj["alerts"] if a["severity"] == "critical"]
    # ... and still catches a broken run.
    rc = cli.main(["check", "--ranges", str(out), "--json", str(SAMPLES / "gap-jump.log")])
    assert rc == 2 and "gap-jump" in {a["rule"] for a in json.loads(capsys.readouterr().out)["alerts"]}


def test_alerts_clear_after_the_condition_is_gone():
    lines = sim("healthy", seed=5)
    # Make rollout 20's grad norm nan, everything else healthy.
    out = []
    for line in lines:
        if "step 20:" in line:
            line = line.replace("'train/grad_norm': ", "'train/grad_norm': nan, 'x': ")
        out.append(line)
    rep = judge_lines(out)
    nf = [a for a in rep.alerts if a.rule == "non-finite"]
    assert len(nf) == 1 and nf[0].rollout == 20
    assert nf[0].active is False and nf[0].cleared_at == 23
    assert rep.status == "critical"  # a broken step is still reported after it cleared


def test_a_finished_log_that_goes_on_without_metrics_is_stalled():
    lines = sim("healthy", seed=4)[:-40]
    lines = [line for line in lines if "Job '" not in line]
    for minute in range(1, 31):  # engine chatter for 30 minutes, no metric line
        lines.append(
            f"\x1b[36m(SGLangEngine pid=1)\x1b[0m [2026-08-21 13:{minute:02d}:00] INFO:     "
            f'10.0.0.5:1 - "GET /health HTTP/1.1" 200 OK'
        )
    rep = judge_lines(lines)
    stalled = [a for a in rep.alerts if a.rule == "stalled"]
    assert stalled and stalled[0].severity == "critical"
    assert stalled[0].evidence["quiet_s"] > 600
