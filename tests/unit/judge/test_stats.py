"""Tests for grpo_tui.judge.stats: hand-computed values and the table of docs/health-signs.md §4.2."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grpo_tui.judge import stats
from grpo_tui.judge.stats import (
    cusum_up,
    falls,
    grows,
    is_flat,
    kendall_tau,
    mk_p_down,
    mk_p_two_sided,
    mk_p_up,
    mk_s,
    persistent_above,
    persistent_below,
    robust_sigma,
    theil_sen_rise,
    theil_sen_slope,
    trailing_mean,
)


def perm_with_inversions(n: int, k: int) -> list[int]:
    """A permutation of range(n) with exactly k inversions (greedy Lehmer code)."""
    code = []
    for i in range(n):
        c = min(k, n - 1 - i)
        code.append(c)
        k -= c
    assert k == 0
    free = list(range(n))
    return [free.pop(c) for c in code]


def norm_sf(z):
    return 0.5 * math.erfc(z / math.sqrt(2))


# ---------------------------------------------------------------- trailing_mean


def test_trailing_mean_hand_values():
    out = trailing_mean([1, 2, 3, 4, 5, 6], window=3)
    np.testing.assert_allclose(out, [1, 1.5, 2, 3, 4, 5])


def test_trailing_mean_skips_nan_and_carries_forward():
    out = trailing_mean([np.nan, 2, np.nan, 4, np.inf, 8], window=2)
    assert math.isnan(out[0])
    np.testing.assert_allclose(out[1:], [2, 2, 3, 3, 6])


def test_trailing_mean_all_nan():
    assert np.all(np.isnan(trailing_mean([np.nan, np.nan])))
    assert trailing_mean([]).size == 0


def test_trailing_mean_is_causal():
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    base = trailing_mean(x, 5)
    for i in (0, 3, 10, 25, 38):
        y = x.copy()
        y[i + 1 :] = rng.normal(100, 50, size=y.size - i - 1)
        assert np.array_equal(trailing_mean(y, 5)[: i + 1], base[: i + 1])


def test_trailing_mean_exact_on_long_offset_series():
    x = 1e9 + np.arange(10_000) % 3
    out = trailing_mean(x, 3)
    assert np.all(out[2:] == 1e9 + 1)


# ---------------------------------------------------------------- Mann-Kendall


def test_mk_s_hand():
    assert mk_s([1, 3, 2]) == 1
    assert mk_s([1, np.nan, 2]) == 1
    assert mk_s([5, 4, 3, 2]) == -6
    assert mk_s([1, 1, 1]) == 0


# (n, S, exact p) from docs/health-signs.md §4.2, both alpha columns.
TABLE = [
    (4, 6, 0.042),
    (5, 8, 0.042),
    (5, 10, 0.008),
    (6, 11, 0.028),
    (6, 13, 0.008),
    (7, 13, 0.035),
    (7, 17, 0.005),
    (8, 16, 0.031),
    (8, 20, 0.007),
    (9, 18, 0.038),
    (9, 24, 0.006),
    (10, 21, 0.036),
    (10, 27, 0.008),
]


@pytest.mark.parametrize("n,s,p", TABLE)
def test_mk_exact_matches_table(n, s, p):
    pairs = n * (n - 1) // 2
    x = perm_with_inversions(n, (pairs - s) // 2)
    assert mk_s(x) == s
    assert round(mk_p_up(x), 3) == p
    assert round(mk_p_down([-v for v in x]), 3) == p


@pytest.mark.parametrize("n,s,p", TABLE)
def test_mk_exact_one_more_discordant_is_above_alpha_boundary(n, s, p):
    """The table gives the *smallest* S reaching each alpha: S - 2 must not."""
    pairs = n * (n - 1) // 2
    x = perm_with_inversions(n, (pairs - s) // 2 + 1)
    assert mk_p_up(x) > (0.05 if p > 0.01 else 0.01)


def test_mk_exact_small_hand_values():
    assert mk_p_up([1, 2, 3, 4]) == pytest.approx(1 / 24)
    assert mk_p_up([1, 2]) == pytest.approx(0.5)
    assert mk_p_up([4, 3, 2, 1]) == pytest.approx(1.0)
    assert mk_p_up([3]) == 1.0
    assert mk_p_up([]) == 1.0


def test_mk_ties_use_normal_with_tie_variance():
    x = [0, 0, 1, 2, 3]  # S = 9; Var = (5*4*15 - 2*1*9)/18 = 282/18
    expected = norm_sf(8 / math.sqrt(282 / 18))
    assert mk_p_up(x) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.02163, abs=1e-4)


def test_mk_normal_for_n_above_10():
    x = perm_with_inversions(12, 20)  # S = 66 - 40 = 26; Var = 12*11*29/18
    assert mk_s(x) == 26
    assert mk_p_up(x) == pytest.approx(norm_sf(25 / math.sqrt(12 * 11 * 29 / 18)), rel=1e-12)


def test_mk_all_ties_is_no_evidence():
    assert mk_p_up([0.0] * 12) == 1.0
    assert mk_p_two_sided([0.0] * 12) == 1.0


def test_mk_two_sided():
    x = perm_with_inversions(8, 6)
    assert mk_p_two_sided(x) == pytest.approx(2 * mk_p_up(x))
    zero_s = perm_with_inversions(4, 3)
    assert mk_s(zero_s) == 0 and mk_p_two_sided(zero_s) == 1.0


VALUES = st.one_of(st.floats(-1e6, 1e6), st.just(float("nan")), st.sampled_from([0.0, 1.0]))


@settings(max_examples=200, deadline=None)
@given(st.lists(VALUES, max_size=25))
def test_mk_properties(x):
    up, down = mk_p_up(x), mk_p_down(x)
    assert 0.0 <= up <= 1.0 and 0.0 <= down <= 1.0
    assert up == mk_p_down([-v for v in x])
    assert up + down >= 1.0 - 1e-12  # both tails include the observed S
    assert 0.0 <= mk_p_two_sided(x) <= 1.0


# ---------------------------------------------------------------- Theil-Sen, tau, sigma


def test_theil_sen_ignores_outliers():
    steps = np.arange(10)
    x = 2.0 * steps + 1
    x[3] = 100.0
    x[7] = -50.0
    assert theil_sen_slope(steps, x) == pytest.approx(2.0)
    assert theil_sen_rise(steps, x) == pytest.approx(18.0)


def test_theil_sen_uses_real_steps_with_gaps_and_nan():
    steps = np.array([0, 1, 2, 5, 6, 9, 10])
    x = 3.0 * steps
    x[-1] = np.nan
    assert theil_sen_slope(steps, x) == pytest.approx(3.0)
    assert theil_sen_rise(steps, x) == pytest.approx(27.0)  # 3 * (9 - 0)


def test_theil_sen_degenerate():
    assert math.isnan(theil_sen_slope([1], [1.0]))
    assert math.isnan(theil_sen_rise([2, 2], [1.0, 5.0]))


def test_kendall_tau():
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert kendall_tau([1, 2, np.nan, 3], [1, 2, 0, 3]) == pytest.approx(1.0)
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))


def test_robust_sigma():
    assert robust_sigma([1, 2, 3, 4, 100]) == pytest.approx(1.4826)
    assert robust_sigma([5, 5, 5, np.nan]) == 0.0
    assert math.isnan(robust_sigma([np.nan]))


# ---------------------------------------------------------------- grows / falls


def test_grows_fires_on_clear_trend():
    rng = np.random.default_rng(1)
    steps = np.arange(16)
    fired = sum(grows(steps, 0.4 * steps + rng.normal(size=16), delta=3.0) is not None for _ in range(200))
    assert fired >= 190


def test_grows_false_alarm_rate_on_iid_noise():
    rng = np.random.default_rng(2)
    steps = np.arange(16)
    fired = sum(grows(steps, rng.normal(size=16), delta=3.0) is not None for _ in range(200))
    assert fired <= 4  # <= 2 % of single evaluations


def test_grows_without_magnitude_gate_alarms_far_more():
    """Why delta is mandatory: MK alone fires at about its alpha per evaluation."""
    rng = np.random.default_rng(2)
    steps = np.arange(16)
    fired = sum(grows(steps, rng.normal(size=16), delta=-np.inf) is not None for _ in range(400))
    assert fired >= 12


def test_grows_evidence_and_gates():
    steps = np.arange(10)
    x = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9.0])
    ev = grows(steps, x, delta=3.0)
    assert ev is not None
    assert ev["window"] == 8
    assert ev["rise"] == pytest.approx(7.0)  # last 8 points: steps 2..9
    assert ev["p"] == pytest.approx(1 / math.factorial(8))
    assert (ev["first"], ev["last"], ev["median_last3"]) == (2.0, 9.0, 8.0)
    assert grows(steps, x, delta=7.5) is None  # rise 7 < delta
    assert grows(steps, x, delta=3.0, hi=8.5) is None  # median(last 3) = 8 under hi
    assert grows(steps, x, delta=3.0, hi=7.9) is not None
    hi = np.full(10, 100.0)
    hi[-1] = 7.0  # array edge: the value at the last point counts
    assert grows(steps, x, delta=3.0, hi=hi) is not None


def test_grows_uses_16_window_when_8_is_not_enough():
    steps = np.arange(16)
    x = np.r_[np.arange(8.0), np.arange(8.0) + 6]  # rise, drop, rise again
    assert grows(steps, x, delta=7.0, windows=(8,)) is None  # last 8 rise only 7
    ev = grows(steps, x, delta=7.0)
    assert ev is not None and ev["window"] == 16


def test_grows_needs_eight_finite_points():
    steps = np.arange(10)
    x = np.arange(10.0)
    x[[1, 4, 6]] = np.nan
    assert grows(steps, x, delta=0.1) is None
    assert grows(steps[:7], x[:7], delta=0.1) is None


def test_falls_mirrors_grows():
    steps = np.arange(12)
    x = 10 - steps.astype(float)
    ev = falls(steps, x, delta=3.0, lo=5.0)
    assert ev is not None and ev["rise"] == pytest.approx(-7.0)
    assert falls(steps, x, delta=3.0, lo=0.0) is None
    assert grows(steps, x, delta=3.0) is None


# ---------------------------------------------------------------- persistence, CUSUM, flat


def test_persistent_above_and_below():
    assert persistent_above([0, 3, 3, 0, 3], 2)
    assert not persistent_above([0, 3, 0, 0, 3], 2)
    assert persistent_above([3, 3, np.nan, 0, 3], 2)  # NaN skipped: last 4 finite = 3,3,0,3
    assert not persistent_above([3, 3], 2)  # fewer than m points
    assert persistent_below([5, -1, -1, -1], 0)
    assert not persistent_below([-1, -1, 5, 5], 0)
    edge = np.array([0, 0, 10, 10, 10, 0])
    assert not persistent_above([1, 1, 1, 1, 1, 1], edge)
    assert persistent_above([1, 1, 1, 1, 1, 1], edge, m=1, n=1)
    assert persistent_above([5, 5, 5, 5], 2, m=4, n=4)


def test_persistent_nan_edge_is_not_beyond():
    assert not persistent_above([5, 5, 5, 5], [np.nan, np.nan, 1, 1])


def test_cusum_up():
    z = [0, 0, 2, 2, 2, 2, 2, 2]  # S: 0,0,1,2,3,4,5,6 -> first > 5 at index 7
    assert cusum_up(z) == 7
    assert cusum_up([0.0] * 50) is None
    assert cusum_up([np.nan, 7.0]) == 1
    assert cusum_up([3, -10, 3, 3, 3, 3], k=1.0, h=5.0) == 4  # S: 2, 0, 2, 4, 6
    assert cusum_up(z, k=0.5, h=4.0) == 4  # S: 0, 0, 1.5, 3, 4.5


def test_is_flat():
    rng = np.random.default_rng(3)
    steps = np.arange(20)
    assert is_flat(steps[:7], np.zeros(7), 1.0) is None
    flat_hits = sum(bool(is_flat(steps, rng.normal(size=20), 2.0)) for _ in range(100))
    assert flat_hits >= 80
    assert is_flat(steps, 0.5 * steps + rng.normal(size=20), 2.0) is False


def test_is_flat_needs_equivalence_margin():
    steps = np.arange(16)
    x = np.array([0, 3, 1, 4, 2, 5, 0, 3, 1, 4, 2, 5, 0, 3, 1, 4.0])  # sawtooth
    assert mk_p_two_sided(x) > 0.10
    assert theil_sen_rise(steps, x) == pytest.approx(7.5 / 14)
    assert is_flat(steps, x, 1.0) is True
    assert is_flat(steps, x, 0.3) is False  # no trend found, but the rise is too big to claim flat


def test_module_exports():
    for name in stats.__all__:
        assert callable(getattr(stats, name))


# -- numpy's set routines without np.unique (judge/stats.py) ------------------------------------
_IDS = st.lists(st.integers(-5, 60), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_IDS, _IDS, st.booleans())
def test_sorted_set_helpers_equal_numpy(a, b, floats):
    dt = float if floats else np.int64
    for x, y in (
        (np.unique(np.array(a, dt)), np.unique(np.array(b, dt))),  # the shortcut
        (np.array(a, dt), np.array(b, dt)),
    ):  # any order: numpy
        got, want = stats.intersect_sorted(x, y), np.intersect1d(x, y)
        assert got.dtype == want.dtype and np.array_equal(got, want)
    keys = np.array(a, np.int64)
    u, inv = stats.unique_inverse(keys)
    nu, ninv = np.unique(keys, return_inverse=True)
    assert np.array_equal(u, nu) and np.array_equal(inv, np.ravel(ninv))


def test_tie_counts_equal_numpys():
    rng = np.random.default_rng(3)
    for n in range(45):
        v = np.round(rng.normal(size=n), 1)
        assert np.array_equal(stats._tie_counts(v), np.unique(v, return_counts=True)[1])


def test_percentile_is_numpys_bit_for_bit():
    """stats.percentile gives np.percentile's value (method 'linear') to the bit, zero signs,
    NaN and infinities included, on 8,000 arrays of 1-70 values: ties, logs, huge and tiny."""
    import warnings

    import numpy as np

    from grpo_tui.judge import stats

    rng = np.random.default_rng(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf: both warn
        for trial in range(8_000):
            n = int(rng.integers(1, 70))
            kind = trial % 5
            if kind == 0:
                v = rng.normal(size=n)
            elif kind == 1:
                v = np.round(rng.normal(size=n), 1)  # ties and signed zeros
            elif kind == 2:
                v = np.log(rng.uniform(1e-6, 10, size=n))
            elif kind == 3:
                v = rng.choice([0.0, -0.0, 1.0, -2.5, 1e300, -1e-300, 3.3], size=n)
            else:
                v = rng.normal(size=n) * 10.0 ** int(rng.integers(-300, 300))
            for every, bad in ((97, np.nan), (89, np.inf), (83, -np.inf)):
                if trial % every == 0:
                    v[rng.integers(0, n)] = bad
            p = (20, 50, 80, 0, 100, 33, 2.5, 97.5)[trial % 8]
            want, got = np.percentile(v, p), stats.percentile(v, p)
            assert (np.isnan(want) and np.isnan(got)) or (want == got and np.signbit(want) == np.signbit(got)), (
                v.tolist(),
                p,
                want,
                got,
            )
    assert stats.percentile(np.array([2.0, 1.0]), 20) == np.percentile([2.0, 1.0], 20)


def test_trailing_run_counts_the_true_values_at_the_end():
    import numpy as np

    from grpo_tui.judge.stats import trailing_run

    assert trailing_run(np.array([True, False, True, True])) == 2
    assert trailing_run(np.array([True, True])) == 2
    assert trailing_run(np.array([True, False])) == 0
    assert trailing_run(np.array([], bool)) == 0


def test_rows_percentile_is_numpys_on_every_row():
    """rows_percentile on a stack of windows gives each row's np.percentile to the bit (zero
    signs and NaN rows too): the jump test asks it for many rollouts at once."""
    import warnings

    import numpy as np

    from grpo_tui.judge import stats

    rng = np.random.default_rng(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for n in (1, 2, 3, 5, 12, 37):
            m = np.round(rng.normal(size=(300, n)), 1)  # ties and signed zeros
            m[rng.random(m.shape) < 0.05] = -0.0
            m[rng.integers(0, 300, 9), rng.integers(0, n, 9)] = np.nan
            for p in (20, 50, 0, 100, 2.5):
                got = stats.rows_percentile(m, p)
                for row, g in zip(m, got):
                    want = np.percentile(row, p)
                    assert (np.isnan(want) and np.isnan(g)) or (want == g and np.signbit(want) == np.signbit(g))
