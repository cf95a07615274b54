"""Tests for grpo_tui.judge.calibration (docs/health-signs.md §6)."""

import json
import math

import numpy as np
import pytest

from grpo_tui.judge.calibration import Envelope, calibrate, calibrate_with_check, leave_one_out

STEPS = np.arange(40)


def reward_like(rng, sigma=0.03, steps=STEPS):
    """A rising, reward-like curve plus iid noise: one simulated seed."""
    return steps, 0.55 + 0.006 * steps + rng.normal(0, sigma, steps.size)


def seeds(n, seed=0, **kw):
    rng = np.random.default_rng(seed)
    return [reward_like(rng, **kw) for _ in range(n)]


def inside(env, steps, values):
    lo, hi = env.bounds_at(steps)
    return (values >= lo) & (values <= hi)


# ---------------------------------------------------------------- hand-computed envelope


def test_trending_envelope_hand_values():
    a = np.arange(7.0)
    env = calibrate([(np.arange(7), a), (np.arange(7), a + 1)], "trending")
    # per-step median = t + 0.5 (linear, so the centred median keeps it);
    # residuals are all +-0.5 -> MAD 0.5; two seeds -> x sqrt(2)
    sigma0 = 1.4826 * 0.5 * math.sqrt(2)
    assert env.sigma0 == pytest.approx(sigma0)
    np.testing.assert_allclose(env.centre, a + 0.5)
    t = np.arange(7)
    np.testing.assert_allclose(env.hi, np.minimum(t + 2, 6) + 1 + 2 * sigma0)
    np.testing.assert_allclose(env.lo, np.maximum(t - 2, 0) - 2 * sigma0)
    assert env.kind == "trending" and env.log is False and env.margin == 2.0


def test_envelope_contains_every_seed():
    data = seeds(3)
    env = calibrate(data, "trending")
    for s, v in data:
        assert inside(env, s, v).all()


def test_sigma0_recovers_noise_scale():
    env = calibrate(seeds(3, sigma=0.03), "trending")
    assert 0.02 < env.sigma0 < 0.045


def test_new_seed_from_same_process_stays_mostly_inside():
    env = calibrate(seeds(3, seed=10), "trending")
    rng = np.random.default_rng(11)
    fracs = [1 - inside(env, *reward_like(rng)).mean() for _ in range(50)]
    assert np.mean(fracs) < 0.03
    assert max(fracs) <= 0.10


def test_stuck_run_leaves_trending_envelope():
    """A run-wide range would accept reward stuck at 0.55; the step-aligned one does not."""
    env = calibrate(seeds(3), "trending")
    lo, _ = env.bounds_at(np.arange(30, 40))
    assert np.all(lo > 0.55)


def test_missing_steps_are_aligned_on_union():
    rng = np.random.default_rng(4)
    s1, v1 = reward_like(rng)
    s2, v2 = reward_like(rng)
    keep = np.ones(40, bool)
    keep[[5, 6, 20]] = False
    v1 = v1.copy()
    v1[10] = np.nan
    env = calibrate([(s1, v1), (s2[keep], v2[keep])], "trending")
    np.testing.assert_array_equal(env.steps, np.arange(40.0))
    assert np.all(np.isfinite(env.lo)) and np.all(np.isfinite(env.hi))


def test_bad_input():
    with pytest.raises(ValueError):
        calibrate(seeds(2), "wiggly")
    with pytest.raises(ValueError):
        calibrate([(np.arange(3), np.full(3, np.nan))])


# ---------------------------------------------------------------- floors and special cases


def test_sigma0_relative_floor():
    env = calibrate([(STEPS, np.full(40, 5.0)), (STEPS, np.full(40, 5.0))], "flat")
    assert env.sigma0 == pytest.approx(0.1)  # 0.02 * |median c|
    assert env.bounds_at(3) == pytest.approx((4.8, 5.2))


def test_sigma0_absolute_floor():
    env = calibrate([(STEPS, np.full(40, 1e-6)), (STEPS, np.full(40, 1e-6))], "flat")
    assert env.sigma0 == pytest.approx(1e-4)
    env = calibrate([(STEPS, np.full(40, 1e-6))] * 2, "flat", abs_floor=1e-3)
    assert env.sigma0 == pytest.approx(1e-3)


def test_zero_metric_gives_zero_band():
    zero = [(STEPS, np.zeros(40)), (STEPS, np.zeros(40)), (STEPS, np.zeros(40))]
    for log in (False, True):
        env = calibrate(zero, "flat", log=log)
        assert env.sigma0 == 0.0
        assert np.all(env.lo == 0) and np.all(env.hi == 0)
        assert env.bounds_at(5) == (0.0, 0.0)
        assert env.bounds_at(500) == (0.0, 0.0)  # no widening from sigma0 = 0
        assert env.log is False  # log(0) has no scale
    lo, hi = env.bounds_at(np.arange(40))
    assert np.all(hi < 0.01) and np.all(lo == 0)  # any clip fraction > 0 is outside


# ---------------------------------------------------------------- flat metrics


def test_flat_band_is_constant_and_skips_warmup():
    rng = np.random.default_rng(5)
    data = []
    for _ in range(3):
        v = 0.015 + rng.normal(0, 0.0005, 40)
        v[0] = 0.03  # warm-up spike
        data.append((STEPS, v))
    env = calibrate(data, "flat")
    assert np.ptp(env.hi[2:]) == 0 and np.ptp(env.lo[2:]) == 0
    body = np.concatenate([v[2:] for _, v in data])
    assert env.hi[5] == pytest.approx(body.max() + 2 * env.sigma0)
    assert env.lo[5] == pytest.approx(body.min() - 2 * env.sigma0)
    assert env.hi[5] < 0.03 <= env.hi[0]  # warm-up step still covers its own values
    for s, v in data:
        assert inside(env, s, v).all()


def test_flat_short_series_keeps_all_points():
    v = np.array([1.0, 1.2, 1.1, 1.0, 1.1])
    env = calibrate([(np.arange(5), v), (np.arange(5), v)], "flat")
    assert env.hi[3] == pytest.approx(1.2 + 2 * env.sigma0)


# ---------------------------------------------------------------- log space


def grad_norm_like(rng, scale=1.0):
    return STEPS, scale * np.exp(rng.normal(0, 0.3, 40))


def test_log_envelope_contains_seeds_and_stays_positive():
    rng = np.random.default_rng(6)
    data = [grad_norm_like(rng) for _ in range(3)]
    env = calibrate(data, "flat", log=True)
    assert env.log and env.eps > 0
    assert np.all(env.lo > 0) and np.all(env.hi > env.lo)
    assert 0.2 < env.sigma0 < 0.45  # log units
    for s, v in data:
        assert inside(env, s, v).all()


def test_log_envelope_is_scale_equivariant():
    rng = np.random.default_rng(7)
    data = [grad_norm_like(rng) for _ in range(3)]
    env1 = calibrate(data, "trending", log=True)
    env100 = calibrate([(s, 100 * v) for s, v in data], "trending", log=True)
    assert env100.sigma0 == pytest.approx(env1.sigma0)
    np.testing.assert_allclose(env100.hi, 100 * env1.hi, rtol=1e-9)
    np.testing.assert_allclose(env100.lo, 100 * env1.lo, rtol=1e-9)


def test_log_band_is_multiplicative():
    rng = np.random.default_rng(8)
    data = [grad_norm_like(rng) for _ in range(3)]
    env = calibrate(data, "flat", log=True)
    hi_log = env.transform(env.hi)
    assert np.log(env.hi[10] + env.eps) == pytest.approx(hi_log[10])
    np.testing.assert_allclose(env.inverse(env.transform(env.hi)), env.hi)


def test_log_floor_is_relative():
    env = calibrate([(STEPS, np.full(40, 3.0))] * 2, "flat", log=True)
    assert env.sigma0 == pytest.approx(0.02)


# ---------------------------------------------------------------- beyond the horizon


def test_bounds_at_within_horizon_and_interpolates_gaps():
    data = [(np.arange(0, 40, 2), v[::2]) for _, v in seeds(3)]
    env = calibrate(data, "trending")
    assert env.bounds_at(10) == pytest.approx((env.lo[5], env.hi[5]))
    lo, hi = env.bounds_at(11)
    assert lo == pytest.approx((env.lo[5] + env.lo[6]) / 2)
    assert hi == pytest.approx((env.hi[5] + env.hi[6]) / 2)
    assert env.bounds_at(-3) == pytest.approx((env.lo[0], env.hi[0]))
    assert not env.extrapolated(38) and env.extrapolated(39)


def test_bounds_at_beyond_horizon_holds_last_five_and_widens():
    env = calibrate(seeds(3), "trending")
    extra = 0.1 * env.sigma0 * 10
    lo, hi = env.bounds_at(49)
    assert hi == pytest.approx(env.hi[-5:].max() + extra)
    assert lo == pytest.approx(env.lo[-5:].min() - extra)
    w = [np.subtract(*env.bounds_at(s)[::-1]) for s in (39, 40, 45, 60)]
    assert w == sorted(w) and w[-1] > w[0]
    arr_lo, arr_hi = env.bounds_at(np.array([39, 49]))
    assert arr_hi[1] == pytest.approx(hi) and arr_lo[1] == pytest.approx(lo)


def test_bounds_at_beyond_horizon_log_widens_in_log_space():
    rng = np.random.default_rng(9)
    env = calibrate([grad_norm_like(rng) for _ in range(3)], "flat", log=True)
    _, hi = env.bounds_at(49)
    expected = np.exp(np.log(env.hi[-5:].max() + env.eps) + 0.1 * env.sigma0 * 10) - env.eps
    assert hi == pytest.approx(expected)


# ---------------------------------------------------------------- serialisation


def test_to_dict_from_dict_round_trip():
    rng = np.random.default_rng(12)
    env = calibrate([grad_norm_like(rng) for _ in range(3)], "trending", log=True, margin=3.0)
    d = json.loads(json.dumps(env.to_dict()))
    assert all(isinstance(x, float) for x in d["hi"])
    back = Envelope.from_dict(d)
    for name in ("steps", "lo", "hi", "centre"):
        np.testing.assert_array_equal(getattr(back, name), getattr(env, name))
    assert (back.sigma0, back.kind, back.log, back.eps, back.margin) == (
        env.sigma0,
        env.kind,
        env.log,
        env.eps,
        env.margin,
    )
    assert back.bounds_at(55) == env.bounds_at(55)


# ---------------------------------------------------------------- leave-one-seed-out


def test_leave_one_out_healthy_seeds_pass():
    data = seeds(3, seed=13)
    report = leave_one_out(data, "trending", False, 2.0)
    assert [r["held_out"] for r in report["seeds"]] == [0, 1, 2]
    assert report["any_persistent"] is False
    assert report["max_frac_outside"] < 0.1
    assert all(r["n_points"] == 40 for r in report["seeds"])
    env, widened, _ = calibrate_with_check(data, "trending")
    assert widened is False and env.margin == 2.0


def test_leave_one_out_flags_an_odd_seed_and_widens():
    data = seeds(3, seed=14)
    s, v = data[2]
    data[2] = (s, v + np.where(s >= 20, 0.3, 0.0))  # jumps and stays ~10 sigma up
    report = leave_one_out(data, "trending", False, 2.0)
    odd = report["seeds"][2]
    assert odd["persistent_hit"] and 20 <= odd["first_hit_step"] <= 24
    assert odd["frac_outside"] > 0.3
    env, widened, rep = calibrate_with_check(data, "trending")
    assert widened is True and env.margin == 3.0 and rep["margin"] == 2.0
    env2 = calibrate(data, "trending", margin=2.0)
    assert np.all(env.hi - env2.hi == pytest.approx(env.sigma0))


def test_leave_one_out_two_seeds_and_one_seed():
    two = seeds(2, seed=15)
    assert len(leave_one_out(two, "trending")["seeds"]) == 2
    one = leave_one_out(seeds(1), "trending")
    assert one["seeds"] == [] and one["any_persistent"] is False


# ---------------------------------------------------------------- domains, minimum width, seed checks


def test_bands_respect_the_domain():
    rng = np.random.default_rng(3)
    share = [(STEPS, np.clip(0.02 + rng.normal(0, 0.03, 40), 0, 1)) for _ in range(2)]
    env = calibrate(share, "trending", domain=(0.0, 1.0))
    assert np.all(env.lo >= 0) and np.all(env.hi <= 1)
    lo, _ = env.bounds_at(np.arange(200))
    assert np.all(lo >= 0)


def test_log_band_stays_positive_with_zeros_among_the_values():
    rng = np.random.default_rng(4)
    kl = [(STEPS, np.where(STEPS % 9 == 0, 0.0, 7e-4 * np.exp(rng.normal(0, 0.05, 40)))) for _ in range(2)]
    env = calibrate(kl, "flat", log=True, domain=(0.0, None))
    assert env.log and np.all(env.lo >= 0) and np.all(env.hi > 6e-4)


def test_a_share_the_seeds_never_hit_gets_a_measurement_floor_not_a_zero_band():
    never = [(STEPS, np.zeros(40))] * 2
    env = calibrate(never, "trending", abs_floor=1 / 256, domain=(0.0, 1.0), zero_band=False)
    assert env.sigma0 == pytest.approx(1 / 256)
    lo, hi = env.bounds_at(10)
    assert lo == 0.0 and hi == pytest.approx(2 / 256)


def test_calibrate_names_a_broken_seed_and_writes_nothing_unless_forced(tmp_path, capsys):
    from pathlib import Path

    from grpo_tui.cli import main

    samples = Path(__file__).resolve().parents[3] / "sample_logs"
    out = tmp_path / "r.toml"
    args = ["calibrate", str(samples / "gap-jump.log"), str(samples / "healthy-seed2.log"), "-o", str(out)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "seed gap-jump.log shows a broken-run sign: gap-jump" in err and not out.exists()
    assert main(args + ["--force"]) == 0 and out.exists()


def test_calibrate_writes_healthy_reasoning_seeds_with_dips_and_notes_one_that_sits_apart(tmp_path, capsys):
    """Seeds of a long-reasoning setup whose reward dips while length grows are healthy (no
    length-hacking); one whose log-prob gap sits apart from the others is named in a note and
    widens the band, but only a sign `check` calls critical refuses a seed."""
    from grpo_tui.cli import main

    paths = []
    for seed in (1003, 1005, 1006):  # each dips 0.08-0.12 mid-run (simulate/series.py: _dip)
        p = tmp_path / f"r{seed}.log"
        assert (
            main(["simulate", "--setup", "reasoning-8b", "--seed", str(seed), "--rollouts", "160", "-o", str(p)]) == 0
        )
        paths.append(str(p))
    out = tmp_path / "out" / "r.toml"
    out.parent.mkdir()
    capsys.readouterr()
    assert main(["calibrate", *paths, "-o", str(out)]) == 0 and out.exists()
    err = capsys.readouterr().err
    assert "note: seed r1003.log gap:" in err and "broken-run sign" not in err
