"""Judgement that transfers across setups (issue #10): own-baseline drift, explosions,
setup awareness, no-signal without a group count, and a small false-alarm sweep."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.false_alarm_sweep import Run, plan, run_one
from grpo_tui.judge.ranges import RangeSet
from grpo_tui.judge.setup import defaults_fit, launch_differs
from grpo_tui.lines.parse import LineParser
from grpo_tui.simulate import SETUPS, generate
from grpo_tui.store.metric_store import MetricStore
from tests.unit.judge.test_health import judge_lines

MANUAL_EXEC = (
    "EXEC: python3 /root/miles/train.py --hf-checkpoint /root/models/Qwen3-0.6B "
    "--prompt-data /root/datasets/gsm8k/train.parquet --rollout-batch-size 32 "
    "--n-samples-per-prompt 8 --global-batch-size 256 --rollout-max-response-len 1024"
)


def synth(
    n,
    *,
    reward=None,
    length=None,
    grad=None,
    gap=None,
    kl=None,
    rt=None,
    trunc=None,
    c0=None,
    c1=None,
    entropy=None,
    exec_line=MANUAL_EXEC,
    seed=0,
    percentages=True,
):
    """A minimal Miles log, one value per rollout from the given functions of r (defaults: the manual's
    healthy levels with mild noise)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 8))
    f = {
        "reward": reward or (lambda r: 0.63 + 0.003 * r + 0.03 * z[r, 0]),
        "length": length or (lambda r: 700 - 3 * r + 15 * z[r, 1]),
        "grad": grad or (lambda r: 1.2 * math.exp(0.25 * z[r, 2])),
        "gap": gap or (lambda r: 0.0152 * math.exp(0.03 * z[r, 3])),
        "kl": kl or (lambda r: 0.00069 * math.exp(0.03 * z[r, 4])),
        "rt": rt or (lambda r: 90.0 * math.exp(0.03 * z[r, 5])),
        "trunc": trunc or (lambda r: 0.25),
        "c0": c0 or (lambda r: 7),
        "c1": c1 or (lambda r: 3),
        "entropy": entropy or (lambda r: 0.0),
    }
    lines = [exec_line] if exec_line else []
    for r in range(n):
        t = f"[2026-08-21 {10 + r // 60:02d}:{r % 60:02d}:00.000 rollout_manager] metrics.py:89 - "
        perf = {
            "rollout/response_len/mean": float(f["length"](r)),
            "rollout/response_len/max": 1024,
            "rollout/truncated_ratio": float(f["trunc"](r)),
            "perf/rollout_time": float(f["rt"](r)),
        }
        for key, name in (("c0", "rollout/zero_std/count_0"), ("c1", "rollout/zero_std/count_1")):
            if f[key](r):
                perf[name] = int(f[key](r))
        if percentages:
            perf["rollout/zero_std/all_zero_percentage"] = f["c0"](r) / 32
        lines.append(t + f"perf {r}: {perf!r}")
        tr = f"[2026-08-21 {10 + r // 60:02d}:{r % 60:02d}:30.000 actor_cell0_rank0] "
        lines.append(
            tr + f"log_utils.py:123 - rollout {r}: {{'rollout/raw_reward': {float(f['reward'](r))!r}, "
            f"'rollout/response_lengths': {float(f['length'](r))!r}}}"
        )
        step = {
            "train/pg_clipfrac": 0.0,
            "train/ppo_kl": 0.0,
            "train/train_rollout_logprob_abs_diff": float(f["gap"](r)),
            "train/train_rollout_kl": float(f["kl"](r)),
            "train/grad_norm": float(f["grad"](r)),
            "train/entropy_loss": float(f["entropy"](r)),
            "train/step": r,
        }
        lines.append(tr + f"log_utils.py:542 - step {r}: {step!r}")
    return lines


def critical(rep):
    return sorted({a.rule for a in rep.alerts if a.severity == "critical"})


def first(rep, rule):
    return min((a for a in rep.alerts if a.rule == rule), key=lambda a: a.seq)


def _segment(lines):
    parser, store = LineParser(), MetricStore()
    items = []
    for line in lines:
        items.extend(parser.feed(line))
    items.extend(parser.flush())
    store.add(items)
    return store.current


# ---------------------------------------------------------------- setup awareness


def test_defaults_fit_the_manuals_own_runs():
    seg = _segment([line for _, line in generate("healthy", 12, 3, noise_per_rollout=0)])
    assert defaults_fit(seg, RangeSet()) == (True, "")


def test_defaults_do_not_fit_another_model_named_on_the_launch_line():
    su = SETUPS["math-7b"]
    seg = _segment(
        [
            line
            for _, line in generate(
                "healthy", 3, 3, noise_per_rollout=0, setup="math-7b", steps_per_rollout=su.steps_per_rollout
            )
        ]
    )
    fit, why = defaults_fit(seg, RangeSet())
    assert not fit and "Qwen2.5-7B" in why and "4096" in why
    assert launch_differs({"hf-checkpoint": "/m/Qwen3-0.6B/", "rollout-max-response-len": "1024"}) is None


def test_defaults_do_not_fit_when_the_first_rollouts_sit_outside_on_several_signals():
    # no launch line: gap x0.4, KL x0.5 (one mismatch signal) and grad norm x0.15 from rollout 0
    lines = synth(12, exec_line=None, gap=lambda r: 0.006, kl=lambda r: 0.00035, grad=lambda r: 0.17)
    fit, why = defaults_fit(_segment(lines), RangeSet())
    assert not fit and "gradient norm" in why and "log-prob gap" in why
    # one signal off is not "another setup"
    assert defaults_fit(_segment(synth(12, exec_line=None, grad=lambda r: 0.17)), RangeSet())[0]
    # the launch line names the manual's setup: two views off are not enough, three are
    lines = synth(12, gap=lambda r: 0.006, grad=lambda r: 0.17)
    assert defaults_fit(_segment(lines), RangeSet())[0]
    lines = synth(12, gap=lambda r: 0.006, grad=lambda r: 0.17, reward=lambda r: 0.2)
    assert not defaults_fit(_segment(lines), RangeSet())[0]


@pytest.mark.parametrize("setup", ["math-7b", "reasoning-4b", "puzzles-3b"])
def test_healthy_run_of_another_setup_is_ok_not_warning(setup):
    su = SETUPS[setup]
    lines = [
        line
        for _, line in generate(
            "healthy", 40, 11, steps_per_rollout=su.steps_per_rollout, noise_per_rollout=2, setup=setup
        )
    ]
    rep = judge_lines(lines)
    assert rep.status == "ok", [(a.rule, a.message) for a in rep.alerts]


def test_ranges_from_a_file_still_apply_when_defaults_do_not_fit():
    lines = synth(20, exec_line=MANUAL_EXEC.replace("Qwen3-0.6B", "Qwen2.5-7B"))
    rs = RangeSet(constant={"reward": (0.9, 1.0)}, path="mine.toml")
    rep = judge_lines(lines, rs)
    assert {a.signal for a in rep.alerts if a.rule == "out-of-range"} == {"reward"}


# ---------------------------------------------------------------- drift against the own baseline


def test_grad_norm_drift_inside_the_manuals_band_is_caught():
    # x10 over 40 rollouts from 0.45 to 4.5, every value inside 0.35-4.95
    lines = synth(56, grad=lambda r: 0.45 * (10 ** (min(max(r - 12, 0), 40) / 40)))
    rep = judge_lines(lines)
    a = first(rep, "grad-norm-rising")
    assert a.severity == "critical" and a.first_seen - 12 <= 24
    assert critical(rep) == ["grad-norm-rising"]


def test_gradient_norm_explosion_is_critical_at_once():
    lines = synth(20, grad=lambda r: 2.96e9 if r == 15 else 1.2)
    rep = judge_lines(lines)
    a = first(rep, "grad-norm-rising")
    assert a.severity == "critical" and a.first_seen == 15 and "exploded" in a.message
    assert a.evidence["times_beyond"]["own baseline"] > 1e8


def test_a_gap_that_rises_ten_percent_and_plateaus_is_healthy():
    for seed in range(2):
        lines = synth(60, seed=seed, gap=lambda r: 0.0152 * (1 + 0.10 * min(max(r - 20, 0) / 5, 1)))
        assert critical(judge_lines(lines)) == []


def test_a_slow_gap_rise_is_caught_through_the_gap_itself():
    # x3 over 30 rollouts (x1.037 a rollout); KL flat
    lines = synth(60, gap=lambda r: 0.0152 * 3 ** (min(max(r - 20, 0), 30) / 30))
    rep = judge_lines(lines)
    a = first(rep, "gap-rising")
    assert a.evidence["signal"] == "gap" and a.first_seen - 20 <= 10
    assert "->" in a.message


def test_rollout_time_heat_of_x13_is_healthy_and_a_slow_doubling_is_not():
    heat = synth(60, rt=lambda r: 90.0 * (1 + 0.3 * min(max(r - 20, 0) / 16, 1)))
    assert critical(judge_lines(heat)) == []
    slow = synth(80, rt=lambda r: 90.0 * 2 ** (min(max(r - 16, 0), 48) / 48))
    rep = judge_lines(slow)
    assert first(rep, "rollout-slowdown").first_seen <= 16 + 44


# ---------------------------------------------------------------- length hacking


def test_answers_that_grow_while_reward_rises_noisily_are_not_length_hacking():
    for seed in range(3):
        rep = judge_lines(
            [line for _, line in generate("healthy", 70, 300 + seed, noise_per_rollout=0, setup="reasoning-4b")]
        )
        assert "length-hacking" not in critical(rep), seed


def test_length_hacking_message_numbers_follow_its_words_and_it_holds_at_the_cap():
    rep = judge_lines([line for _, line in generate("length-hacking", 48, 3, noise_per_rollout=2)])
    a = first(rep, "length-hacking")
    r0, r1 = (float(x) for x in a.message.split("reward falls (")[1].split(")")[0].split(" -> "))
    l0, l1 = (float(x) for x in a.message.split("length rises (")[1].split(")")[0].split(" -> "))
    assert r0 > r1 and l0 < l1
    # length sits at the cap (cut share ~0.77) with reward down until the end: never cleared
    assert a.active and a.cleared_at is None


# ---------------------------------------------------------------- no signal


def test_reward_exactly_zero_with_unknown_group_count_is_no_signal():
    lines = synth(
        12,
        exec_line=None,
        percentages=False,
        reward=lambda r: 0.0 if r >= 4 else 0.4,
        c0=lambda r: 32 if r >= 4 else 7,
        c1=lambda r: 0 if r >= 4 else 3,
    )
    rep = judge_lines(lines)
    a = first(rep, "no-signal")
    assert a.severity == "critical" and a.first_seen == 5
    zs = rep.signals["zero_std"]
    assert zs.extra["groups"] == 32 and zs.last == pytest.approx(1.0) and zs.status == "critical"


def test_saturated_but_learning_run_is_not_no_signal():
    # reward 0.85, about 60 % of groups all right: saturating, still a signal
    lines = synth(48, reward=lambda r: 0.85 + 0.03 * math.sin(r), c0=lambda r: 0, c1=lambda r: 19 + r % 3)
    assert "no-signal" not in {a.rule for a in judge_lines(lines).alerts}
    # 85 % all right: little left to learn, a warning (saturation is not breakage)
    lines = synth(48, reward=lambda r: 0.93 + 0.02 * math.sin(r), c0=lambda r: 0, c1=lambda r: 27 + r % 2)
    a = first(judge_lines(lines), "no-signal")
    assert a.severity == "warning" and "too easy" in a.message


# ---------------------------------------------------------------- the sweep, small


def test_small_false_alarm_sweep():
    """Two healthy runs on every setup raise nothing; trend breaks on a few setups are caught by
    their own rule, with no unrelated critical (benchmarks/false_alarm_sweep.py is the full one)."""
    runs = plan(quick=True, healthy_per_setup=1, broken_seeds=0)
    runs = [Run(r.setup, r.scenario, r.seed, r.k, min(r.rollouts, 48)) for r in runs]
    for setup, scenarios in (
        ("puzzles-3b", ("gap-rising", "grad-norm-rising")),
        ("reasoning-4b", ("rollout-slowdown", "no-signal")),
        ("k4", ("grad-norm-rising", "gap-jump")),
        ("reasoning-8b", ("no-update", "entropy-high")),
    ):
        su = SETUPS[setup]
        for sc in scenarios:
            runs.append(Run(setup, sc, 2100, su.steps_per_rollout, 36, 16))
    # a long-reasoning run whose reward dips 0.08 over 22 rollouts from rollout 39 while length
    # grows (two trends on one window called it length-hacking)
    runs.append(Run("distill-1.5b", "healthy", 1036, 2, 72))
    done = [run_one(r) for r in runs]
    false = [
        (r.setup, r.seed, r.critical, r.warning) for r in done if r.scenario == "healthy" and (r.critical or r.warning)
    ]
    assert false == []
    missed = [(r.setup, r.scenario, r.critical) for r in done if r.scenario != "healthy" and not r.caught]
    assert missed == []
    other = [
        (r.setup, r.scenario, r.critical) for r in done if r.scenario != "healthy" and set(r.critical) != {r.scenario}
    ]
    assert other == []
    slow = [
        (r.setup, r.scenario, r.own_at - r.onset) for r in done if r.scenario != "healthy" and r.own_at - r.onset > 8
    ]
    assert slow == []


# ---------------------------------------------------------------- entropy


def test_entropy_collapse_with_a_flat_reward_is_critical():
    lines = synth(40, entropy=lambda r: 0.5 if r < 15 else 0.5 * 0.6 ** (r - 14), reward=lambda r: 0.6)
    rep = judge_lines(lines)
    a = first(rep, "entropy-collapse")
    assert a.severity == "critical" and 18 <= a.first_seen <= 22 and "exploration" in a.message


def test_a_normal_early_entropy_fall_and_an_unlogged_entropy_are_fine():
    healthy = synth(60, entropy=lambda r: 0.5 * (0.4 + 0.6 * math.exp(-r / 10)))
    assert "entropy-collapse" not in {a.rule for a in judge_lines(healthy).alerts}
    assert "entropy-collapse" not in {a.rule for a in judge_lines(synth(30)).alerts}  # Miles' constant 0.0


def _growth(n, *, dip=None, fall_from=None, hack_from=None, seed=0):
    """A long-reasoning run: length grows 500 -> 1,500 with reward 0.30 -> 0.60 over 100 rollouts;
    `dip` = (start, span, depth) lowers reward by a half sine, `fall_from` makes reward fall
    0.006 a rollout from there with length on its pace, `hack_from` makes length grow 4 % a
    rollout from there with reward falling 0.01."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 2))

    def reward(r):
        v = 0.30 + 0.003 * r + 0.015 * z[r, 0]
        if dip is not None and dip[0] < r < dip[0] + dip[1]:
            v -= dip[2] * math.sin(math.pi * (r - dip[0]) / dip[1])
        if fall_from is not None and r > fall_from:
            v -= 0.009 * (r - fall_from)
        if hack_from is not None and r > hack_from:
            v -= 0.013 * (r - hack_from)
        return v

    def length(r):
        base = 500 + 10 * min(r, hack_from or r)
        if hack_from is not None and r > hack_from:
            base *= 1.04 ** (r - hack_from)
        return base * math.exp(0.03 * z[r, 1])

    return synth(n, reward=reward, length=length, trunc=lambda r: 0.0)


def test_a_reward_dip_while_length_keeps_growing_is_not_length_hacking():
    # a dip of 0.09 over 24 rollouts (the case), a deeper longer one earlier, a short one
    # later: two trends on one window call each of them length-hacking
    for dip in ((50, 24, 0.09), (40, 30, 0.12), (60, 16, 0.08)):
        rep = judge_lines(_growth(100, dip=dip, seed=0))
        assert "length-hacking" not in critical(rep), (dip, [(a.rule, a.first_seen, a.message) for a in rep.alerts])


def test_length_hacking_at_the_runs_own_pace_is_called_once_the_dip_outlasts_and_gives_back():
    # reward falls for good while length keeps its pace: called, once the dip has lasted longer
    # than 24 rollouts and the five-step mean is back below where the run began
    rep = judge_lines(_growth(110, fall_from=50))
    a = first(rep, "length-hacking")
    assert a.severity == "critical" and 50 + 24 < a.first_seen <= 50 + 45, a.first_seen


def test_length_hacking_that_outgrows_the_trend_is_called_as_before():
    rep = judge_lines(_growth(80, hack_from=50))
    a = first(rep, "length-hacking")
    assert a.severity == "critical" and a.first_seen <= 50 + 14, a.first_seen


def test_the_fit_memo_follows_a_first_rollout_written_again():
    """ranges_for keeps defaults_fit's answer per segment; a line that writes one of the first
    rollouts again (a doubled rollout line) must be read again, while an unchanged store is not."""
    from grpo_tui.judge.rules.base import defaults_fit_memo

    healthy = synth(12, exec_line=None)
    broken = synth(12, exec_line=None, reward=lambda r: 0.05, length=lambda r: 3000.0, trunc=lambda r: 0.9)
    store, p = MetricStore(), LineParser()
    store.add(p.feed_lines(healthy) + p.flush())
    seg = store.current
    rs = RangeSet().for_framework(seg.framework)
    assert defaults_fit_memo(seg, rs) == (True, "")
    kept = seg.judge_memo["fit"]
    assert defaults_fit_memo(seg, rs) == (True, "") and seg.judge_memo["fit"] is kept  # from the memo
    # the first five rollouts logged again by other processes (doubled lines of other ranks, not
    # a restart), at another setup's levels: the store changed, and so does the answer
    again = [
        ln.replace("actor_cell0_rank0]", "actor_cell1_rank0]").replace("rollout_manager]", "rollout_manager_1]")
        for ln in broken
        if any(f" - {kind} {r}: " in ln for kind in ("rollout", "perf") for r in range(5))
    ]
    assert len(again) == 10
    store.add(p.feed_lines(again) + p.flush())
    assert store.current is seg
    assert defaults_fit_memo(seg, rs) == defaults_fit(seg, rs)
    assert not defaults_fit_memo(seg, rs)[0]
