"""Tests for the synthetic log generator: shape of the log, healthy ranges, and each break."""

from __future__ import annotations

import ast
import functools
import math
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime

import pytest

from grpo_tui import simulate as sim

ANSI = re.compile(r"\x1b\[[0-9;]*m")
METRIC = re.compile(r" - (?P<kind>rollout|perf|step) (?P<n>\d+): (?P<d>\{.*\})$")
BARE = re.compile(r"(?<=: )(-?)(nan|inf)(?=[,}])")


def _value(text: str) -> dict:
    """literal_eval after turning bare nan/inf into something it accepts."""
    fixed = BARE.sub(lambda m: "'__nan__'" if m.group(2) == "nan" else m.group(1) + "1e999", text)
    d = ast.literal_eval(fixed)
    return {k: (math.nan if v == "__nan__" else v) for k, v in d.items()}


def metrics(lines) -> list[tuple[str, int, dict]]:
    out = []
    for _, line in lines:
        m = METRIC.search(ANSI.sub("", line))
        if m:
            out.append((m["kind"], int(m["n"]), _value(m["d"])))
    return out


def by_rollout(recs, K=1) -> dict[int, dict]:
    """Merge perf/rollout dicts by rollout and average train metrics over the K steps."""
    rows: dict[int, dict] = defaultdict(dict)
    steps: dict[int, list] = defaultdict(list)
    for kind, n, d in recs:
        if kind == "step":
            steps[n // K].append(d)
        else:
            rows[n].update(d)
    for r, ds in steps.items():
        for k in ds[0]:
            rows[r][k] = sum(d[k] for d in ds) / len(ds)
    return dict(rows)


def gen(*a, **kw):
    return list(sim.generate(*a, **kw))


@functools.cache
def healthy48(seed: int) -> tuple:
    """metrics of the quiet 48-rollout healthy run of a seed: generated and parsed once for the
    range and trend tests (generate is deterministic per seed, test_deterministic_per_seed)."""
    return tuple(metrics(gen("healthy", 48, seed, noise_per_rollout=0)))


# ---------------------------------------------------------------- shape


def test_deterministic_per_seed():
    assert gen("healthy", 12, 3) == gen("healthy", 12, 3)
    assert gen("healthy", 12, 3) != gen("healthy", 12, 4)


def test_values_do_not_depend_on_noise_or_length_of_run():
    quiet = by_rollout(metrics(gen("healthy", 10, 5, noise_per_rollout=0)))
    noisy = by_rollout(metrics(gen("healthy", 20, 5, noise_per_rollout=40)))
    assert all(quiet[r] == noisy[r] for r in range(10))


@pytest.mark.parametrize("scenario", list(sim.SCENARIOS))
@pytest.mark.parametrize("fmt", sim.FORMATS)
def test_every_scenario_generates(scenario, fmt):
    lines = gen(scenario, 24, 1, fmt=fmt, noise_per_rollout=10)
    assert lines and lines[0][1].startswith("EXEC: ")
    assert all("\n" not in line for _, line in lines)
    assert all(isinstance(t, float) for t, _ in lines)
    assert not any("np.float64" in line for _, line in lines)


def test_scenarios_listed():
    names = {
        "healthy",
        "gap-rising",
        "gap-jump",
        "grad-norm-rising",
        "length-hacking",
        "off-policy",
        "rollout-slowdown",
        "no-signal",
        "non-finite",
        "crashed",
        "engine-down",
        "no-steps",
        "stalled",
        "kl-ref",
        "no-update",
        "entropy-high",
    }
    assert names == set(sim.SCENARIOS)
    with pytest.raises(ValueError):
        gen("nope", 2)
    with pytest.raises(ValueError):
        gen("healthy", 2, fmt="json")


@pytest.mark.parametrize("K", [1, 2, 4])
def test_each_rollout_has_its_lines(K):
    n = 10
    recs = metrics(gen("healthy", n, 2, steps_per_rollout=K, noise_per_rollout=15))
    count = Counter((kind, n_) for kind, n_, _ in recs)
    for r in range(n):
        assert count[("rollout", r)] == 1
        assert count[("perf", r)] == 2
        assert sum(count[("step", s)] for s in range(r * K, r * K + K)) == 2 * K
        assert all(count[("step", s)] == 2 for s in range(r * K, r * K + K))
    assert sum(c for (kind, _), c in count.items() if kind == "step") == 2 * K * n


def test_step_lines_are_doubled_identically():
    lines = [ANSI.sub("", line) for _, line in gen("healthy", 3, 0)]
    steps = [line for line in lines if " - step " in line]
    assert [s.split(" - ", 1)[1] for s in steps[0::2]] == [s.split(" - ", 1)[1] for s in steps[1::2]]
    assert "log_utils.py:542 - step 0:" in steps[0] and "model.py:854 - step 0:" in steps[1]


def test_launch_line_gives_K():
    for K in (1, 2, 4):
        first = gen("healthy", 2, 0, steps_per_rollout=K)[0][1]
        assert f"--global-batch-size {256 // K}" in first
        assert "--rollout-batch-size 32 --n-samples-per-prompt 8" in first
        assert "--num-rollout 2 " in first and "python3 /root/miles/train.py" in first


def test_noise_zero_still_has_metrics_and_noise_count_roughly_matches():
    quiet = gen("healthy", 6, 0, noise_per_rollout=0)
    assert len(metrics(quiet)) == 6 * 5
    assert len(quiet) == 3 + 6 * 5  # EXEC, W&B, tensorboard, then metric lines only
    noisy = gen("healthy", 48, 0, noise_per_rollout=30)
    per = (len(noisy) - len(metrics(noisy))) / 48
    assert 28 <= per <= 34


def test_escape_bytes_and_noise_kinds_present():
    text = "\n".join(line for _, line in gen("healthy", 4, 0, noise_per_rollout=30))
    assert "\x1b[36m(RolloutManager pid=" in text and "\x1b[36m(MegatronTrainRayActor pid=" in text
    assert "\x1b[0m [" in text
    assert "\x1b[32m [repeated 7x across cluster]" in text
    assert "Ray deduplicates logs by default" in text
    assert "\rRollout generation: 100%|" in text
    for needle in (
        "Decode batch, #running-req:",
        '"GET /health HTTP/1.1" 200 OK',
        "Timer actor_train start",
        "ft op=train phase=start rollout=0 attempt=0",
        "fn=update_weights phase=end ok=true",
        "W&B offline mode enabled",
        "Saving tensorboard log to",
    ):
        assert needle in text, needle


def test_driver_lines_unprefixed():
    for _, line in gen("healthy", 2, 0):
        if " main] " in line:
            assert line.startswith("[2026-")


def test_header_formats():
    def first_perf(fmt):
        return next(ANSI.sub("", line) for _, line in gen("healthy", 1, 0, fmt=fmt) if "perf 0:" in line)

    assert re.match(
        r"\(RolloutManager pid=\d+\) \[2026-08-21 \d\d:\d\d:\d\d\.\d{3} rollout_manager\] metrics\.py:89 - perf 0:",
        first_perf("miles"),
    )
    assert re.match(
        r"\(RolloutManager pid=\d+\) \[2026-08-21 \d\d:\d\d:\d\d\] rollout\.py:1193 - perf 0:", first_perf("slime")
    )
    assert re.match(
        r"\(RolloutManager pid=\d+\) \[2026-08-21 \d\d:\d\d:\d\d\] INFO metrics\.py:89 - perf 0:", first_perf("level")
    )


def test_times_match_headers_and_advance():
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    lines = gen("healthy", 6, 0, start=start)
    for t, line in lines[1:]:
        stamp = re.search(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?)", line)
        if stamp:
            fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in stamp[1] else "%Y-%m-%d %H:%M:%S"
            assert datetime.strptime(stamp[1], fmt).replace(tzinfo=UTC).timestamp() == pytest.approx(t, abs=1e-6)
    perf_times = [t for t, line in lines if "metrics.py:89 - perf" in line]
    gaps = [b - a for a, b in zip(perf_times, perf_times[1:])]
    assert all(80 < g < 170 for g in gaps)  # ~60-120 s generation plus ~20-40 s training


# ---------------------------------------------------------------- healthy values


@pytest.mark.parametrize("seed", range(20))
def test_healthy_values_inside_design_ranges(seed):
    rows = by_rollout(healthy48(seed))
    steps = [d for kind, _, d in healthy48(seed) if kind == "step"]
    for r, row in rows.items():
        early = r < 10
        assert 0.53 <= row["rollout/raw_reward"] <= (0.74 if early else 0.87)
        assert (626 if early else 396) <= row["rollout/response_len/mean"] <= 787
        assert row["rollout/response_lengths"] == row["rollout/response_len/mean"]
        assert (0.19 if early else 0.02) <= row["rollout/truncated_ratio"] <= 0.43
        assert abs(row["rollout/rewards"]) < 1e-7
        assert row["rollout/response_len/max"] == 1024
        assert 0 < row["perf/rollout_time"] < 200
    for d in steps:
        assert 0.0136 <= d["train/train_rollout_logprob_abs_diff"] <= 0.0164
        assert 0.00063 <= d["train/train_rollout_kl"] <= 0.00076
        assert 0.35 <= d["train/grad_norm"] <= 4.95
        assert d["train/pg_clipfrac"] == 0.0 and d["train/ppo_kl"] == 0.0
    early_gap = [d["train/train_rollout_logprob_abs_diff"] for d in steps if d["train/step"] < 10]
    assert all(0.0141 <= g <= 0.0164 for g in early_gap)
    assert all(0.00063 <= d["train/train_rollout_kl"] <= 0.00075 for d in steps)


@pytest.mark.parametrize("seed", range(20))
def test_healthy_trends(seed):
    rows = by_rollout(healthy48(seed))
    mean = lambda key, rs: sum(rows[r][key] for r in rs) / len(rs)
    first, last = range(8), range(40, 48)
    assert mean("rollout/raw_reward", last) > mean("rollout/raw_reward", first) + 0.08
    assert mean("rollout/response_len/mean", last) < mean("rollout/response_len/mean", first) - 150
    assert mean("rollout/truncated_ratio", last) < 0.08
    assert mean("perf/rollout_time", last) < mean("perf/rollout_time", first)
    assert 0.60 <= mean("rollout/raw_reward", range(10)) <= 0.67
    swings = [abs(rows[r + 1]["rollout/raw_reward"] - rows[r]["rollout/raw_reward"]) for r in range(47)]
    assert max(swings) <= 0.2
    grads = sorted(rows[r]["train/grad_norm"] for r in range(48))
    assert 0.8 < grads[24] < 1.8
    assert rows[47]["rollout/zero_std/count_1"] > rows[0]["rollout/zero_std/count_1"]


def test_zero_std_counts_at_rollout_zero():
    for seed in range(20):
        row = by_rollout(metrics(gen("healthy", 2, seed, noise_per_rollout=0)))[0]
        assert row["rollout/zero_std/count_0"] == 7 and row["rollout/zero_std/count_1"] == 3
        assert row["rollout/zero_std/all_zero_percentage"] == 7 / 32


def test_zero_std_keys_omitted_when_zero():
    for kind, _, d in metrics(gen("healthy", 100, 0, noise_per_rollout=0)):
        if kind == "perf" and "rollout/zero_std/all_zero_percentage" in d:
            assert ("rollout/zero_std/count_0" in d) == (d["rollout/zero_std/all_zero_percentage"] > 0)
            assert ("rollout/zero_std/count_1" in d) == (d["rollout/zero_std/all_one_percentage"] > 0)


def test_long_healthy_run_plateaus():
    rows = by_rollout(metrics(gen("healthy", 120, 1, noise_per_rollout=0)))
    tail = range(100, 120)
    assert all(0.53 <= rows[r]["rollout/raw_reward"] <= 0.87 for r in tail)
    assert all(396 <= rows[r]["rollout/response_len/mean"] <= 520 for r in tail)


def test_several_steps_per_rollout_have_small_clipfrac():
    recs = metrics(gen("healthy", 6, 0, steps_per_rollout=4, noise_per_rollout=0))
    steps = {n: d for kind, n, d in recs if kind == "step"}
    assert sorted(steps) == list(range(24))
    assert all(steps[s]["train/pg_clipfrac"] == 0.0 for s in range(0, 24, 4))
    assert all(0 < steps[s]["train/pg_clipfrac"] < 0.01 for s in range(24) if s % 4)


# ---------------------------------------------------------------- broken scenarios


def _rows(scenario, n=48, seed=7, **kw):
    kw.setdefault("noise_per_rollout", 0)
    return by_rollout(metrics(gen(scenario, n, seed, **kw)))


def test_onset_defaults():
    assert sim.onset_of("healthy", 48) is None
    assert sim.onset_of("gap-jump", 48) == 16
    assert sim.onset_of("gap-jump", 48, onset=5) == 5
    assert sim.onset_of("no-steps", 48) == 0


@pytest.mark.parametrize(
    "scenario",
    [
        "gap-rising",
        "gap-jump",
        "grad-norm-rising",
        "length-hacking",
        "off-policy",
        "rollout-slowdown",
        "no-signal",
        "non-finite",
    ],
)
def test_identical_to_healthy_before_onset(scenario):
    healthy, broken = _rows("healthy", 30, 3), _rows(scenario, 30, 3, onset=12)
    assert all(healthy[r] == broken[r] for r in range(12))
    assert healthy[12] != broken[12]


def test_gap_rising():
    rows, base = _rows("gap-rising", onset=10), _rows("healthy")
    gap = [rows[r]["train/train_rollout_logprob_abs_diff"] for r in range(48)]
    assert gap[20] > 2.5 * base[20]["train/train_rollout_logprob_abs_diff"]
    assert gap[47] > gap[30] > gap[20]
    assert rows[30]["train/train_rollout_kl"] > 0.005
    assert rows[30]["train/grad_norm"] == base[30]["train/grad_norm"]


def test_gap_jump():
    rows = _rows("gap-jump")
    assert all(rows[r]["train/train_rollout_logprob_abs_diff"] > 0.04 for r in range(16, 48))
    assert all(rows[r]["train/train_rollout_kl"] > 0.004 for r in range(16, 48))
    assert all(rows[r]["train/train_rollout_logprob_abs_diff"] < 0.0165 for r in range(16))


def test_grad_norm_rising():
    rows = _rows("grad-norm-rising")
    assert rows[47]["train/grad_norm"] > 100
    assert sum(rows[r]["train/grad_norm"] for r in range(40, 48)) > 10 * sum(
        rows[r]["train/grad_norm"] for r in range(8, 16)
    )


def test_length_hacking():
    rows = _rows("length-hacking")
    assert rows[40]["rollout/response_len/mean"] > 1.4 * rows[15]["rollout/response_len/mean"]
    assert rows[40]["rollout/raw_reward"] < rows[15]["rollout/raw_reward"] - 0.15
    assert rows[40]["rollout/truncated_ratio"] > rows[15]["rollout/truncated_ratio"] + 0.2


def test_off_policy():
    rows = _rows("off-policy")
    assert all(rows[r]["train/pg_clipfrac"] == 0.0 for r in range(16))
    assert all(0.002 <= rows[r]["train/pg_clipfrac"] <= 0.02 for r in range(16, 48))
    assert all(rows[r]["train/ppo_kl"] > 1e-6 for r in range(16, 48))


def test_rollout_slowdown():
    rows = _rows("rollout-slowdown")
    assert rows[40]["perf/rollout_time"] > 10 * rows[15]["perf/rollout_time"]
    lengths = [rows[r]["rollout/response_len/mean"] for r in range(16, 48)]
    assert max(lengths) - min(lengths) < 100


def test_no_signal():
    rows = _rows("no-signal")
    for r in range(16, 48):
        assert abs(rows[r]["rollout/raw_reward"] - 0.5) < 0.02
        same = rows[r].get("rollout/zero_std/count_0", 0) + rows[r].get("rollout/zero_std/count_1", 0)
        assert 26 <= same <= 32


def test_non_finite():
    lines = gen("non-finite", 48, 7, noise_per_rollout=0)
    recs = [(n, d) for kind, n, d in metrics(lines) if kind == "step"]
    bad = [n for n, d in recs if not (math.isfinite(d["train/grad_norm"]) and math.isfinite(d["train/loss"]))]
    assert bad and min(bad) == 16
    assert any("'train/grad_norm': nan" in line for _, line in lines)


def _last_kind(lines, kind):
    return max((n for k, n, _ in metrics(lines) if k == kind), default=None)


def test_crashed():
    lines = gen("crashed", 48, 7, noise_per_rollout=10)
    assert _last_kind(lines, "rollout") == 15 and _last_kind(lines, "step") == 15
    text = [ANSI.sub("", line) for _, line in lines]
    fail = next(i for i, line in enumerate(text) if "ft op=execute phase=fail" in line)
    assert text[fail + 1] == "Traceback (most recent call last):"
    assert any(line.startswith("torch.OutOfMemoryError: CUDA out of memory") for line in text[fail:])
    assert any("ok=false" in line for line in text)
    assert len(text) - fail < 40


def test_engine_down():
    lines = gen("engine-down", 48, 7, noise_per_rollout=10)
    assert _last_kind(lines, "rollout") == 15 and _last_kind(lines, "perf") == 15
    text = [ANSI.sub("", line) for _, line in lines]
    errs = [i for i, line in enumerate(text) if "Error: Server error '503 Service Unavailable'" in line]
    assert all(text[i + 1].startswith("(RolloutManager pid=") and "retrying... (attempt " in text[i + 1] for i in errs)
    times = [lines[i][0] for i in errs]
    assert times[-1] - times[0] > 180
    assert "Max retries (60) reached, failing..." in text[-1]


def test_no_steps():
    lines = gen("no-steps", 48, 7, noise_per_rollout=10)
    assert metrics(lines) == []
    assert lines[-1][0] - lines[1][0] > 15 * 60


def test_stalled():
    lines = gen("stalled", 48, 7, noise_per_rollout=10)
    assert _last_kind(lines, "rollout") == 15 and _last_kind(lines, "perf") == 15
    last_metric = max(i for i, (_, line) in enumerate(lines) if METRIC.search(line))
    assert 0 < len(lines) - 1 - last_metric <= 40


@pytest.mark.parametrize("scenario", ["crashed", "engine-down", "stalled", "gap-jump"])
def test_custom_onset(scenario):
    rows = _rows(scenario, 30, 1, onset=5)
    if scenario == "gap-jump":
        assert (
            rows[4]["train/train_rollout_logprob_abs_diff"] < 0.0165 < rows[5]["train/train_rollout_logprob_abs_diff"]
        )
    else:
        assert max(r for r, row in rows.items() if "rollout/raw_reward" in row) == 4


# ---------------------------------------------------------------- files


def test_write_log_rate_writes_same_bytes(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    sim.write_log(a, "healthy", 4, 1, noise_per_rollout=5)
    sim.write_log(b, "healthy", 4, 1, rate=0.01, noise_per_rollout=5)
    assert a.read_bytes() == b.read_bytes()
    data = a.read_bytes()
    assert data.endswith(b"\n") and b"\x1b[36m" in data and b"\r" in data
    expected = "".join(line + "\n" for _, line in sim.generate("healthy", 4, 1, noise_per_rollout=5))
    assert data == expected.encode()


def test_write_log_rejects_unknown_argument(tmp_path):
    with pytest.raises(TypeError):
        sim.write_log(tmp_path / "x.log", "healthy", 2, bogus=1)


def test_sample_logs(tmp_path):
    paths = sim.main_sample_logs(tmp_path)
    names = {p.name for p in paths}
    assert {"healthy-seed1.log", "healthy-seed2.log", "healthy-seed3.log", "gap-jump.log", "no-steps.log"} <= names
    assert len(paths) == 3 + len(sim.SCENARIOS) - 1
    assert all(0 < p.stat().st_size < 1_000_000 for p in paths)


# ---------------------------------------------------------------- setups beyond the manual's


def test_manual_setup_and_pace_one_are_the_default_output():
    assert gen("gap-rising", 20, 3) == gen("gap-rising", 20, 3, setup="manual", pace=1.0)
    assert gen("gap-rising", 20, 3, pace=0.3) != gen("gap-rising", 20, 3)
    with pytest.raises(ValueError):
        gen("healthy", 2, setup="nope")


@pytest.mark.parametrize("name", [n for n in sim.SETUPS if n != "manual"])
def test_every_setup_generates_its_own_launch_line_and_shape(name):
    su = sim.SETUPS[name]
    lines = gen("healthy", 12, 1, steps_per_rollout=su.steps_per_rollout, noise_per_rollout=0, setup=name)
    assert f"--hf-checkpoint /root/models/{su.model} " in lines[0][1]
    assert f"--rollout-max-response-len {su.cap} " in lines[0][1]
    rows = by_rollout(metrics(lines), K=su.steps_per_rollout)
    assert sorted(rows) == list(range(12))
    steps = [n for kind, n, _ in metrics(lines) if kind == "step"]
    assert len(steps) == 2 * 12 * su.steps_per_rollout  # doubled Megatron lines
    for row in rows.values():
        assert 0 <= row["rollout/raw_reward"] <= 1 and 0 <= row["rollout/truncated_ratio"] <= 1
        same = row.get("rollout/zero_std/count_0", 0) + row.get("rollout/zero_std/count_1", 0)
        assert same <= su.groups
        assert 0 < row["rollout/response_len/mean"] < su.cap
        assert row["train/grad_norm"] > 0 and row["perf/rollout_time"] > 0


def test_reasoning_setup_grows_length_with_reward():
    rows = by_rollout(metrics(gen("healthy", 100, 2, noise_per_rollout=0, setup="reasoning-4b")))
    mean = lambda key, rs: sum(rows[r][key] for r in rs) / len(rs)
    assert mean("rollout/response_len/mean", range(90, 100)) > 2.5 * mean("rollout/response_len/mean", range(10))
    assert mean("rollout/raw_reward", range(90, 100)) > mean("rollout/raw_reward", range(10)) + 0.2


def test_heavy_tailed_setup_has_isolated_spikes():
    rows = by_rollout(metrics(gen("healthy", 150, 4, noise_per_rollout=0, setup="puzzles-3b")))
    g = sorted(rows[r]["train/grad_norm"] for r in rows)
    assert g[-1] > 3 * g[len(g) // 2]


@pytest.mark.parametrize(
    "scenario", ["gap-rising", "grad-norm-rising", "length-hacking", "rollout-slowdown", "no-signal", "off-policy"]
)
def test_breaks_on_other_setups_start_at_the_onset(scenario):
    kw = dict(noise_per_rollout=0, setup="math-7b", steps_per_rollout=2)
    healthy = by_rollout(metrics(gen("healthy", 30, 5, **kw)), K=2)
    broken = by_rollout(metrics(gen(scenario, 30, 5, onset=12, **kw)), K=2)
    assert all(healthy[r] == broken[r] for r in range(12))
    assert healthy[14] != broken[14]


def test_slow_pace_drifts_slowly():
    fast = by_rollout(metrics(gen("grad-norm-rising", 60, 3, noise_per_rollout=0, onset=10)))
    slow = by_rollout(metrics(gen("grad-norm-rising", 60, 3, noise_per_rollout=0, onset=10, pace=0.3)))
    assert slow[45]["train/grad_norm"] < fast[45]["train/grad_norm"] / 100
    assert sum(slow[r]["train/grad_norm"] for r in range(50, 60)) > 5 * sum(
        slow[r]["train/grad_norm"] for r in range(10)
    )


def test_a_long_slowdown_stays_on_the_calendar():
    """rollout-slowdown's x1.15 a rollout is capped (simulate.SLOWDOWN_MAX): 4,000 rollouts
    used to overflow the simulated clock ("date value out of range")."""
    got = list(sim.generate("rollout-slowdown", 600, 0, noise_per_rollout=0, onset=100))
    times = [t for t, _ in got]
    assert times == sorted(times)
    times_s = [float(m.group(1)) for _, line in got if (m := re.search(r"'perf/rollout_time': ([0-9.e+]+)", line))]
    assert len(times_s) >= 600
    assert max(times_s) <= sim.SLOWDOWN_MAX * 3 * min(times_s)
    assert max(times_s) > 100 * min(times_s)


def test_no_update_and_entropy_high_break_only_their_own_series():
    """no-update zeroes the gradient norm and loss from the onset, entropy-high lifts entropy to
    ~9 nats; every other value of the run is the healthy one of the same seed."""
    for scenario, keys in (
        ("no-update", ("train/grad_norm", "train/loss", "train/pg_loss")),
        ("entropy-high", ("train/entropy_loss",)),
    ):
        broken = metrics(gen(scenario, 30, 5, onset=20, setup="reasoning-4b", noise_per_rollout=0))
        healthy = metrics(gen("healthy", 30, 5, onset=20, setup="reasoning-4b", noise_per_rollout=0))
        assert len(broken) == len(healthy)
        for (kind, n, a), (_, _, b) in zip(broken, healthy):
            for k in a:
                if k in keys and kind == "step" and n >= 20:
                    assert a[k] == 0.0 if scenario == "no-update" else a[k] > 8.0
                elif k not in keys:
                    assert a[k] == b[k], (scenario, kind, n, k)
