"""The vectorised gates of judge/bulk.py are necessary conditions of the rules (issue #11).

`Answers` says, for every rollout of a history at once, which rules may fire (MAYBE), which
surely cannot (NO) and which it does not answer (UNKNOWN: the rule runs); likewise which signals
out-of-range must look at.  Here every rollout the bulk gates decide - from the first one they
model (a settled baseline) on - is judged by the plain rules (no gate, no alert open), and a NO
must mean the rule returns nothing there: on every scenario and setup, slow late breaks past
the window, several seeds and K, and the sample logs.  A wrong NO would drop an alert; the
alert comparisons of tests/equivalence/test_fast_judge.py only see it where it changes an alert.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grpo_tui.judge import bulk, bulk_vec, rules
from grpo_tui.judge.ranges import defaults
from grpo_tui.lines.files import iter_lines
from grpo_tui.simulate import SCENARIOS, SETUPS, generate
from tests.equivalence.test_hacking_columns import _store

# one RangeSet, as the engine holds one: the rules' defaults-fit memo is kept per RangeSet
RS = defaults()

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted((ROOT / "sample_logs").glob("*.log")) + sorted((ROOT / "tests" / "fixtures").glob("*.log"))
RULE_OF = {
    "rule_gap": ("gap-rising", "gap-jump"),
    "rule_grad_norm": ("grad-norm-rising",),
    "rule_length_hacking": ("length-hacking",),
    "rule_rollout_slowdown": ("rollout-slowdown",),
    "rule_off_policy": ("off-policy",),
    "rule_no_signal": ("no-signal",),
    "rule_entropy_collapse": ("entropy-collapse",),
}
FUNCS = {f.__name__: f for f in rules.METRIC_RULES}
# every scenario on three setups (j = i + 1 mod 3: test_fast_judge takes j = i mod 3), every
# setup under five or more scenarios, and every scenario on the manual's setup with K = 2 or 4
_SETUP_NAMES = list(SETUPS)
CASES = [
    (scen, _SETUP_NAMES[j], 300 + i * 11 + j, None)
    for i, scen in enumerate(SCENARIOS)
    for j in range(len(_SETUP_NAMES))
    if j % 3 == (i + 1) % 3
]
CASES += [(scen, "manual", 40 + i, (2, 4)[i % 2]) for i, scen in enumerate(SCENARIOS)]


def _fired(fn, seg, upto: int) -> list:
    ctx = rules.RuleContext(seg, RS, upto)
    try:
        return fn(ctx)
    except (ValueError, FloatingPointError, IndexError, ZeroDivisionError):
        return []


def check_gates(seg) -> int:
    """Every NO of the bulk gates is a rollout where the plain rule returns nothing, and
    out-of-range over the history answers as at each rollout alone; returns how many (rollout,
    rule) answers were NO (the test must exercise the gates)."""
    if not seg.ordered or len(seg.ids) == 0:
        return 0
    rows = np.arange(len(seg.ids))
    ans = bulk.Answers(seg, RS, rows)
    nos = 0
    for k in np.flatnonzero(ans.full).tolist():
        upto = int(seg.ids[k])
        for j, name in enumerate(ans.names):
            if ans.mat[k, j] != bulk_vec.NO:
                continue
            nos += 1
            got = [c for c in _fired(FUNCS[name], seg, upto) if c.rule in RULE_OF[name]]
            assert not got, f"rollout {upto}: {name}'s gate says no, the rule says {got[0].message}"
        # the rules over columns have no gate: computed over the whole history they give at
        # every rollout exactly the conditions of the rule asked at that rollout alone
        for name, at_once in ans.at(k)[rules.COMPUTED].items():
            alone = _fired(FUNCS[name], seg, upto)
            assert at_once == alone, f"rollout {upto}: {name} over the history {at_once}, alone {alone}"
            nos += not alone
    return nos


@pytest.mark.parametrize("scen,setup,seed,k", CASES, ids=[f"{s}-{u}-{seed}-k{k}" for s, u, seed, k in CASES])
def test_bulk_gates_are_necessary_conditions(scen, setup, seed, k):
    kw = {"setup": setup, "noise_per_rollout": 0}
    if k is not None:
        kw["steps_per_rollout"] = k
    seg = _store([line for _, line in generate(scen, 72, seed, **kw)])
    assert check_gates(seg) > 0 or len(seg.ids) < bulk_vec.START + 1


@pytest.mark.parametrize("scen", list(SCENARIOS))
def test_bulk_gates_on_slow_late_breaks(scen):
    lines = [line for _, line in generate(scen, 140, 9, setup="long", noise_per_rollout=0, pace=0.3, onset=90)]
    check_gates(_store(lines))


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_bulk_gates_on_sample_logs(path):
    check_gates(_store(list(iter_lines(str(path)))))


def test_touched_rows_found_by_search_are_the_stores_rows():
    """_verify's binary search finds the rows row_of names; ids it cannot map exactly fall back."""
    seg = _store([line for _, line in generate("healthy", 30, 2, noise_per_rollout=0)])
    touch = {int(r): i + 1 for i, r in enumerate(seg.ids)}
    touch.update({10_000: 7, -3: 2})  # not rows of the segment
    rows, stamps = bulk._rows_of_ids(seg, touch)
    want = sorted((seg.row_of[r], st) for r, st in touch.items() if r in seg.row_of)
    assert sorted(zip(rows.tolist(), stamps.tolist())) == want
    assert bulk._rows_of_ids(seg, {2**60: 1}) is None


def _k_updates_log(
    first_cf: float, other_cf: float, k: int = 2, n: int = 90, onset: int = 40, framework_line: str | None = None
) -> list[str]:
    """A healthy run with K updates per rollout whose step lines from rollout `onset` on say
    clip fraction `first_cf` on each rollout's first update and `other_cf` on the others."""
    import re

    lines = [line for _, line in generate("healthy", n, 5, noise_per_rollout=0, steps_per_rollout=k)]
    out = []
    for line in lines:
        m = re.search(r"\bstep (\d+): ", line)
        if m and int(m.group(1)) // k >= onset:
            cf = first_cf if int(m.group(1)) % k == 0 else other_cf
            line = re.sub(r"'train/pg_clipfrac': [^,}]+", f"'train/pg_clipfrac': {cf!r}", line)
            line = re.sub(r"'train/ppo_kl': [^,}]+", "'train/ppo_kl': 0.0", line)
        out.append(line)
    return out


@pytest.mark.parametrize(
    "first_cf,other_cf,k", [(0.0, 0.9, 2), (0.0, 0.5, 4), (0.02, 0.1, 2), (0.0, 0.1, 2), (0.0, 0.3, 2)]
)
def test_off_policy_gate_with_k_updates(first_cf, other_cf, k, monkeypatch):
    """K updates per rollout: the rule over columns fires where the first update's clip fraction
    is above 0 (fresh weights) and where 3 of 4 rollouts' clip fractions pass 0.3, each alone; and
    bulk judging gives the alerts of judging rollout by rollout."""
    from tests.equivalence.test_fast_judge import _bulk_equals_plain

    lines = _k_updates_log(first_cf, other_cf, k)
    seg = _store(lines)
    assert check_gates(seg) > 0
    ans = bulk.Answers(seg, RS, np.arange(len(seg.ids)))
    col = ans.mat[:, ans.names.index("rule_off_policy")]
    fires = first_cf > 0 or (other_cf * (k - 1) + first_cf) / k > 0.3
    assert (col[60:] == bulk_vec.MAYBE).all() if fires else (col[60:] == bulk_vec.NO).all()
    plain = _bulk_equals_plain(lines, monkeypatch)
    assert any(a.rule == "off-policy" for a in plain.engine.alerts) == fires


def test_theil_sen_rises_in_chunks_are_those_of_one_batch(monkeypatch):
    """_ts_rise takes its ops TS_CHUNK at a time (bounded memory: a run holding length-hacking
    asks at nearly every op): the same numbers as one batch, on both of pair_slopes' paths."""
    rng = np.random.default_rng(3)
    s = np.arange(2000, dtype=float)
    x = rng.normal(size=2000).cumsum()
    rows = np.arange(40, 2000)
    whole = {w: bulk_vec._ts_rise(s, x, rows, w) for w in (8, 32)}
    monkeypatch.setattr(bulk_vec, "TS_CHUNK", 17)
    for w, want in whole.items():
        assert np.array_equal(bulk_vec._ts_rise(s, x, rows, w), want)


@pytest.mark.parametrize("scen", ["gap-jump", "gap-rising"])
def test_whole_windows_count_as_the_pairs_do(scen, monkeypatch):
    """Over a long history rule_gap's drift test takes the Mann-Kendall S and ties of whole
    windows from prefix sums (rules.base.WholeWindows) instead of counting each window's pairs:
    at every rollout its answer is the rule's asked there alone (which counts the pairs)."""
    from grpo_tui.judge.rules import base

    used = []
    orig = base.WholeWindows.of

    def of(self, ends):
        used.append(len(ends))
        return orig(self, ends)

    monkeypatch.setattr(base.WholeWindows, "of", of)
    lines = [line for _, line in generate(scen, 260, 23, noise_per_rollout=0, onset=90)]
    check_gates(_store(lines))
    assert sum(used) >= base.WholeWindows.MIN_ROWS, "the whole windows were not read"


def test_windowed_mann_kendall_is_the_pair_count():
    """stats.windowed_mk_s gives each whole window's S and tie flag as counting its pairs does
    (values with ties, signed zeros and steps of every size)."""
    from grpo_tui.judge import stats

    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=400), 1)
    x[rng.random(400) < 0.05] = -0.0
    got = stats.windowed_mk_s(x, (8, 16, 32))
    for w, (s, ties) in got.items():
        win = np.lib.stride_tricks.sliding_window_view(x, w)
        want_s = stats._rows_mk_s(win)
        srt = np.sort(win, axis=1)
        want_t = (srt[:, 1:] == srt[:, :-1]).any(axis=1)
        assert np.array_equal(s[w - 1 :], want_s) and np.array_equal(ties[w - 1 :], want_t)


@pytest.mark.parametrize(
    "case",
    [
        "kl-ref-runs-away",
        "kl-ref-spikes",
        "entropy-high-cycles",
        "entropy-collapse-cycles",
        "reward-variance-held",
        "no-update-cycles",
        "miles-no-update-held",
    ],
)
def test_policy_rules_over_the_history_are_the_rules(case):
    """KlRefTest, EntropyHighTest, EntropyCollapseTest, RewardVarianceTest and NoUpdateTest over a
    whole history give at every rollout the conditions of their rule asked there alone (held, cycling, escalating)."""
    from tests.equivalence.test_fast_judge import _new_rule_cases

    assert check_gates(_store(_new_rule_cases()[case]())) > 0


@pytest.mark.parametrize("scen", ["rollout-slowdown", "gap-jump", "grad-norm-rising"])
def test_rules_over_the_history_in_small_batches_answer_as_in_one(scen, monkeypatch):
    """GapTest, GrowthTest, SlowdownTest and RangeTest judge a long history CHUNK positions at a
    time (bounded memory: a 40-row window per position): batches of 7 give every answer and
    every condition's words of one batch."""
    from grpo_tui.judge.rules import drift, rollout, values

    lines = [line for _, line in generate(scen, 160, 29, noise_per_rollout=0, onset=70)]
    seg = _store(lines)
    rows = np.arange(len(seg.ids))

    def answers() -> tuple:
        ans = bulk.Answers(seg, RS, rows)
        words = {
            name: [repr(test.conditions(j)) for j in np.flatnonzero(test.fires).tolist()]
            for name, test in ans.computed.items()
            if test is not None
        }
        return ans.names, ans.mat.tobytes(), ans.oor.any_fires().tobytes(), words

    one = answers()
    assert any(one[3].values()), "no rule fired: the batches were not exercised"
    for mod in (drift, rollout, values):
        monkeypatch.setattr(mod, "CHUNK", 7)
    assert answers() == one
