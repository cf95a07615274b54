"""rules.hacking.HackingTest over the whole history answers what rule_length_hacking answers
at each rollout alone.

At every rollout past the 40-row window of several long runs - repeated blocks (the alert opens
and clears again and again), a hacking run whose alert stays open for hundreds of rollouts,
other setups, and runs with reward/length/cut share rewritten at random (ties from rounding,
gaps, trends up and down):

- the sign: over the history exactly where over the rollout's window alone, and the rule
  returns a condition exactly there (with its alert open: or where its latch holds);
- the latch: over the history exactly where the rule, its alert open, answers by it;
- the row statistics both use equal the scalar ones, bit for bit.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from grpo_tui.judge import rules
from grpo_tui.judge.ranges import defaults
from grpo_tui.judge.rules import hacking
from grpo_tui.judge.rules.base import own_base
from grpo_tui.pipeline import Pipeline
from grpo_tui.simulate import SETUPS, generate

# one RangeSet, as the engine holds one: the rules' defaults-fit memo is kept per RangeSet
RS = defaults()

NOW = 1.9e9
_ID = re.compile(r"\b(rollout|perf|step|eval) (\d+): ")
_VALUE = {
    "R": re.compile(r"('rollout/raw_reward': )([^,}]*)"),
    "L": re.compile(r"('rollout/response_lengths': )([^,}]*)"),
    "T": re.compile(r"('rollout/truncated': )([^,}]*)"),
}


def repeated(scen: str, block: int, times: int, seed: int, **kw) -> list[str]:
    """One simulated block written `times` times with the ids shifted (benchmarks/make_big_log):
    at each seam reward drops and length jumps, so length-hacking opens and clears each time."""
    lines = [line for _, line in generate(scen, block, seed, noise_per_rollout=0, **kw)]
    out = [line for line in lines if line.startswith("EXEC:")]  # the launch: once
    lines = [line for line in lines if not line.startswith(("EXEC:", "Job '", "---"))]
    k = kw.get("steps_per_rollout") or SETUPS[kw.get("setup", "manual")].steps_per_rollout
    for rep in range(times):
        shift = {"step": rep * block * k}
        out += [
            _ID.sub(lambda m: f"{m.group(1)} {int(m.group(2)) + shift.get(m.group(1), rep * block)}: ", line)
            for line in lines
        ]
    return out


def rewritten(n: int, seed: int) -> list[str]:
    """A healthy run whose reward, length and cut share are replaced by random walks with trend
    changes, rounded (ties) and sometimes left out of a rollout line (gaps)."""
    rng = np.random.default_rng(seed)
    lines = [line for _, line in generate("healthy", n, seed, noise_per_rollout=0)]
    steps = {"R": rng.normal(0, 0.02, n), "L": rng.normal(0, 12.0, n), "T": rng.normal(0, 0.01, n)}
    for k in steps:  # piecewise trends: up, flat, down
        for a in range(0, n, int(rng.integers(20, 60))):
            steps[k][a : a + 40] += rng.choice([-1.0, 0.0, 1.0]) * {"R": 0.01, "L": 8.0, "T": 0.006}[k]
    series = {
        "R": np.clip(0.6 + np.cumsum(steps["R"]), 0.0, 1.0),
        "L": np.maximum(50.0, 500 + np.cumsum(steps["L"])),
        "T": np.clip(0.1 + np.cumsum(steps["T"]), 0.0, 1.0),
    }
    digits = {"R": 2, "L": 0, "T": 2}
    out = []
    for line in lines:
        m = re.search(r"\brollout (\d+): ", line)
        if m and "'rollout/raw_reward'" in line:
            i = int(m.group(1))
            for k, rx in _VALUE.items():
                if rng.random() < 0.004:
                    line = rx.sub(lambda mm: mm.group(1) + "nan", line)  # a gap
                else:
                    v = round(float(series[k][i]), digits[k])
                    line = rx.sub(lambda mm, v=v: mm.group(1) + repr(v), line)
        out.append(line)
    return out


def _store(lines: list[str]):
    pipe = Pipeline(clock=lambda: NOW, judging=False)
    for i in range(0, len(lines), 500):
        pipe.feed(lines[i : i + 500], written_at=NOW - 30)
    pipe.finish(NOW)
    return pipe.store.current


def _conds(seg, upto: int, open_rules: frozenset) -> list:
    ctx = rules.RuleContext(seg, RS, upto, open_rules)
    try:
        got = rules.rule_length_hacking(ctx)
    except (ValueError, FloatingPointError, IndexError, ZeroDivisionError):
        got = []
    return [(c.rule, c.severity, c.start, c.message, repr(c.evidence)) for c in got]


CASES = {
    "repeated-blocks": lambda: repeated("healthy", 200, 3, 1),
    "repeated-k2": lambda: repeated("healthy", 150, 3, 2, steps_per_rollout=2),
    "hacking-stays-open": lambda: [
        line for _, line in generate("length-hacking", 420, 5, noise_per_rollout=0, onset=100)
    ],
    "hacking-reasoning": lambda: [
        line for _, line in generate("length-hacking", 300, 6, noise_per_rollout=0, onset=120, setup="reasoning-4b")
    ],
    "rewritten-a": lambda: rewritten(360, 11),
    "rewritten-b": lambda: rewritten(360, 12),
}


def _test(seg, rows: np.ndarray):
    """rules.hacking.HackingTest over these rows, as judge/bulk_answers.Answers makes it: the
    baselines of the first full rollout."""
    from grpo_tui.judge.rules.base import own_base

    ctx = rules.RuleContext(seg, RS, int(seg.ids[rules.WINDOW]))
    lb, rb = own_base(ctx, "length", log=False), own_base(ctx, "reward", log=False)
    return hacking.HackingTest(seg, rows, ctx.ranges, lb, rb)


@pytest.mark.parametrize("case", list(CASES))
def test_the_sign_over_the_history_is_the_rules(case):
    """HackingTest's sign over the whole history shows at exactly the rollouts where it shows
    over each rollout's window alone, and the rule answers by it: with its alert open it returns
    a condition exactly where the latch holds or the sign shows; with none open, only where the
    sign shows, and there unless a reward dip in reasoning growth explains it."""
    seg = _store(CASES[case]())
    rows = np.arange(len(seg.ids))
    test = _test(seg, rows)
    full = rows[rows >= rules.WINDOW]
    signs, holds = test.signs(full), test.holds(full)
    held_open = frozenset({"length-hacking"})
    for k, sign, hold in zip(full.tolist(), signs.tolist(), holds.tolist()):
        upto = int(seg.ids[k])
        ctx = rules.RuleContext(seg, RS, upto)
        window = seg.rows_upto(rules.WINDOW, upto)
        alone = hacking.HackingTest(seg, window, ctx.ranges).sign(len(window) - 1)
        assert sign == (alone is not None), f"rollout {upto}: over the history {sign}, alone {alone}"
        assert (alone is not None) == bool(test.signs(np.array([k]))[0])
        assert bool(_conds(seg, upto, held_open)) == (hold or sign), f"rollout {upto}"
        closed = _conds(seg, upto, frozenset())
        if closed or not sign:
            assert bool(closed) == sign, f"rollout {upto}: the rule {closed}, the sign {sign}"
        else:
            assert hacking._growth_dip(ctx, int(alone[0][-alone[3]])), f"rollout {upto}"
    assert signs.any() or not case.startswith("hacking"), "the sign never showed"


@pytest.mark.parametrize("case", list(CASES))
def test_the_latch_over_the_history_is_the_rules(case):
    """HackingTest's latch over the whole history holds at exactly the rollouts where the
    rule, its alert open, answers by its latch - the same condition, every field - and its
    answer over the history is its answer over each rollout's window alone."""
    seg = _store(CASES[case]())
    rows = np.arange(len(seg.ids))
    test = _test(seg, rows)
    full = rows[rows >= rules.WINDOW]
    holds = test.holds(full)
    held_open = frozenset({"length-hacking"})
    for k, h in zip(full.tolist(), holds.tolist()):
        upto = int(seg.ids[k])
        ctx = rules.RuleContext(seg, RS, upto, held_open)
        window = seg.rows_upto(rules.WINDOW, upto)
        lb, rb = own_base(ctx, "length", log=False), own_base(ctx, "reward", log=False)
        alone = hacking.HackingTest(seg, window, ctx.ranges, lb, rb).latch(len(window) - 1)
        assert h == (alone is not None), f"rollout {upto}: over the history {h}, alone {alone}"
        if h:
            assert test.latch(k) == alone
            got = rules.rule_length_hacking(rules.RuleContext(seg, RS, upto, held_open))
            assert got == [alone]
    assert holds.any() or not case.startswith("hacking"), "the latch never held"


def _scalar_resid_sigma(s: np.ndarray, v: np.ndarray) -> float:
    """The spread around the Theil-Sen line from the scalar statistics, one window."""
    from grpo_tui.judge import stats

    if len(v) < 4:
        return float("nan")
    r = v - stats.theil_sen_slope(s, v) * s
    return stats.robust_sigma(r - stats.median(r))


def _scalar_noise(s: np.ndarray, v: np.ndarray, floor: float) -> float:
    from grpo_tui.judge import stats

    diff = stats.robust_sigma(np.diff(v)) / math.sqrt(2.0) if len(v) >= 5 else float("nan")
    return max([floor, *(x for x in (_scalar_resid_sigma(s, v), diff) if math.isfinite(x))])


def test_window_statistics_equal_the_scalar_ones():
    from grpo_tui.judge import stats

    rng = np.random.default_rng(7)
    for n in (4, 5, 8, 9, 10, 12, 16, 24, 32, 39, 40):
        v = np.round(rng.normal(size=(64, n)), 1)
        v[::9] = 0.0
        s = np.sort(rng.choice(500, (64, n), replace=True), axis=1).astype(float) + np.arange(n)
        p_up, p_down, med, slope = (
            stats.rows_mk_p_up(v),
            stats.rows_mk_p_up(-v),
            stats.rows_median(v),
            stats.rows_ts_slope(s, v),
        )
        rs = stats.rows_resid_sigma(s, v)
        floor = np.abs(rng.normal(size=64)) * 0.1
        noise = stats.rows_noise(s, v, floor)
        below = {a: stats.rows_mk_p_below(v, a) for a in (0.01, 0.05, 0.10)}
        for i in range(len(v)):
            assert noise[i] == _scalar_noise(s[i], v[i], float(floor[i])) == stats.noise(s[i], v[i], float(floor[i]))
            for a, got in below.items():
                assert got[i] == (p_up[i] < a)
            assert stats.median(v[i]) == np.median(v[i])
            assert p_up[i] == stats.mk_p_up(v[i]) and p_down[i] == stats.mk_p_down(v[i])
            assert med[i] == float(np.median(v[i]))
            assert slope[i] == stats.theil_sen_slope(s[i], v[i])
            assert rs[i] == _scalar_resid_sigma(s[i], v[i]) == stats.resid_sigma(s[i], v[i])


def test_scalar_median_is_numpys():
    from grpo_tui.judge import stats

    rng = np.random.default_rng(5)
    for n in range(1, 50):
        for t in range(20):
            v = np.round(rng.normal(size=n), int(rng.integers(0, 3)))
            if t % 5 == 0:
                v[rng.integers(0, n)] = np.nan
            if t % 7 == 0:
                v[rng.integers(0, n)] = np.inf
            a, b = stats.median(v), np.median(v)
            assert (np.isnan(a) and np.isnan(b)) or (a == b and type(a) is type(b))


def test_pair_gaps_shortcut_gives_the_same_slopes():
    """Consecutive steps share one row of gaps: the same numbers as the full matrix."""
    from grpo_tui.judge import stats

    rng = np.random.default_rng(11)
    for n in (8, 12, 32, 40):
        i, j = stats._upper_pairs(n)
        v = np.round(rng.normal(size=(16, n)), 2)
        starts = rng.integers(0, 10_000, 16).astype(float)
        s = starts[:, None] + np.arange(n)[None, :]
        assert stats.pair_gaps(s, i, j).shape == (1, len(i))
        assert np.array_equal(
            stats.rows_ts_slope(s, v), np.array([stats.theil_sen_slope(s[r], v[r]) for r in range(16)])
        )
        for bad in (s + np.r_[np.zeros(n - 1), 0.5], s[:, ::-1], np.c_[s[:, :-2], s[:, -1:] - 0.5, s[:, -1:]]):
            assert np.array_equal(np.broadcast_to(stats.pair_gaps(bad, i, j), (16, len(i))), bad[:, j] - bad[:, i])


def _two_kth_median(m: np.ndarray) -> np.ndarray:
    """stats.rows_median as it was: both middle values from one partition with two kth."""
    n = m.shape[1]
    h = n // 2
    if n % 2:
        out = np.partition(m, h, axis=1)[:, h]
    else:
        part = np.partition(m, (h - 1, h), axis=1)
        out = (part[:, h - 1] + part[:, h]) / 2
    return np.where(np.isnan(m).any(axis=1), np.nan, out)


def test_row_median_with_one_kth_is_the_two_kth_one_bit_for_bit():
    """stats.rows_median (one partition, the lower middle value the largest below the upper one) gives
    the numbers of the two-kth partition it replaced, the sign of a zero included, and the
    scalar rules' stats.median's numbers: rows of signed zeros, ties, NaN, inf."""
    from grpo_tui.judge import stats

    rng = np.random.default_rng(5)
    pools = ([-0.0, 0.0], [-0.0, 0.0, 1.0, -1.0], [-0.0, 0.0, 2.5, np.nan, np.inf, -np.inf])
    for t in range(600):
        rows, n = int(rng.integers(1, 24)), int(rng.integers(1, 41))
        if t % 4 == 3:
            m = np.round(rng.normal(size=(rows, n)), int(rng.integers(0, 3)))
        else:
            m = rng.choice(pools[t % 4], size=(rows, n))
        with np.errstate(invalid="ignore"):  # (inf + -inf in a middle pair)
            got, want = stats.rows_median(m), _two_kth_median(m)
            scalar = np.array([stats.median(row) for row in m])
        assert np.array_equal(got, want, equal_nan=True), (rows, n)
        assert np.array_equal(np.signbit(got), np.signbit(want)), (rows, n)
        assert np.array_equal(got, scalar, equal_nan=True), (rows, n)


def test_pair_slopes_by_lag_are_the_gathered_ones(monkeypatch):
    """pair_slopes groups a big batch's pairs by lag: each row holds the same slopes as through
    _upper_pairs' index arrays (so the same median), steps consecutive or not."""
    from grpo_tui.judge import stats

    monkeypatch.setattr(stats, "LAG_MIN_N", 2)  # every window by lag, 40 rows and up
    monkeypatch.setattr(stats, "LAG_MIN_CELLS", 1)
    rng = np.random.default_rng(12)
    for n in (2, 3, 8, 16, 24, 32, 40):
        i, j = stats._upper_pairs(n)
        rows = 40 + n
        v = np.round(rng.normal(size=(rows, n)), 2)
        s = rng.integers(0, 10_000, rows).astype(float)[:, None] + np.arange(n)[None, :]
        for steps in (s, s + np.r_[np.zeros(n // 2), np.full(n - n // 2, 3.0)]):
            got, want = stats.pair_slopes(steps, v), (v[:, j] - v[:, i]) / (steps[:, j] - steps[:, i])
            assert got.shape == want.shape
            assert np.array_equal(np.sort(got, axis=1), np.sort(want, axis=1))
            assert np.array_equal(stats.rows_ts_slope(steps, v), stats.rows_median(want))


@pytest.mark.parametrize("case", list(CASES))
def test_the_gate_never_hides_a_sign(case):
    """Answers.hacking_signs asks HackingTest only where the vectorised gate says the rule may
    fire: wherever the gate says no, the sign itself (not only the rule's answer) is absent."""
    from grpo_tui.judge.bulk_answers import Answers

    seg = _store(CASES[case]())
    rows = np.arange(len(seg.ids))
    ans = Answers(seg, RS, rows)
    full = np.flatnonzero(ans.full)
    no = full[~ans.may("rule_length_hacking")[full]]
    signs = ans._hacking().signs(rows[no])
    assert not signs.any(), f"rollouts {seg.ids_at(rows[no][signs])[:5]}: the gate said no, the sign shows"
    assert len(no) > 0.3 * len(full), "the gate said no nowhere: the case tests nothing"
