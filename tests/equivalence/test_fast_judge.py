"""Fast judging gives exactly the verdicts of plain judging (issue #11, "fast core").

Bulk judging (whole histories, judge/bulk.py: the rules over columns, vectorised gates that skip
a rule only where it cannot fire, steady stretches) must give the alerts of judging rollout by
rollout, every field: on every simulated scenario (several seeds, every training setup, K =
1/2/4), every sample log, and long runs that hold, open and clear alerts again and again.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from grpo_tui.judge import bulk as bulk_mod, bulk_answers, engine as engine_mod, rules
from grpo_tui.judge.bulk import BulkMismatch
from grpo_tui.lines.files import iter_lines
from grpo_tui.pipeline import Pipeline
from grpo_tui.simulate import SCENARIOS, SETUPS, generate

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted((ROOT / "sample_logs").glob("*.log")) + sorted((ROOT / "tests" / "fixtures").glob("*.log"))
SCEN = list(SCENARIOS)
# every scenario on three setups, every setup under five or more scenarios (one seed each; the
# setups j = i mod 3 of scenario i: tests/equivalence/test_bulk_gates.py takes j = i + 1 mod 3),
# and every scenario on the manual's setup with K = 2 or 4
_SETUP_NAMES = list(SETUPS)
CASES = [
    (scen, _SETUP_NAMES[j], 101 + i * 7 + j, None)
    for i, scen in enumerate(SCEN)
    for j in range(len(_SETUP_NAMES))
    if j % 3 == i % 3
]
CASES += [(scen, "manual", 61 + i, (2, 4)[i % 2]) for i, scen in enumerate(SCEN)]


def _key(conds) -> list:
    return [(c.rule, c.severity, c.start, c.signal, c.message, repr(c.evidence)) for c in conds]


class _Calls:
    """evaluate_metrics rollout by rollout, counted (the plain run must judge)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, seg, ranges, upto, open_rules=frozenset()):
        self.calls += 1
        return rules.evaluate_metrics(seg, ranges, upto, open_rules)


NOW = 1.9e9  # judge time: a fixed clock, so the three judgements see the same ages


def _run(lines, batch, defer=False) -> Pipeline:
    pipe = Pipeline(clock=lambda: NOW)
    if defer:
        pipe.defer()
    for i in range(0, len(lines), batch):
        pipe.feed(lines[i : i + batch], written_at=NOW - 30)
    pipe.finish(NOW)
    return pipe


def _alerts(pipe: Pipeline) -> list:
    return [
        (
            a.rule,
            a.signal,
            a.severity,
            a.rollout,
            a.first_seen,
            a.cleared_at,
            a.active,
            a.seq,
            a.time,
            a.message,
            repr(a.evidence),
        )
        for a in pipe.engine.alerts
    ]


def _judge(lines, monkeypatch, batch=500) -> _Calls:
    """Bulk judging (whole histories: judge/bulk.py) gives the alerts and verdict of judging
    rollout by rollout."""
    bulk = _run(lines, batch, defer=True)
    both = _Calls()
    monkeypatch.setattr(engine_mod, "evaluate_metrics", both)
    plain = _run(lines, batch)
    assert _alerts(bulk) == _alerts(plain)
    assert plain.report().status == bulk.report().status
    return both


@pytest.mark.parametrize("scen,setup,seed,k", CASES, ids=[f"{s}-{u}-{seed}-k{k}" for s, u, seed, k in CASES])
def test_bulk_equals_rollout_by_rollout_on_simulated_runs(scen, setup, seed, k, monkeypatch):
    kw = {"setup": setup, "noise_per_rollout": 0}
    if k is not None:
        kw["steps_per_rollout"] = k
    n = 48 if setup == "manual" else 60
    lines = [line for _, line in generate(scen, n, seed, **kw)]
    both = _judge(lines, monkeypatch)
    assert both.calls > 0 or scen == "no-steps"


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_bulk_equals_rollout_by_rollout_on_sample_logs(path, monkeypatch):
    lines = list(iter_lines(str(path)))
    _judge(lines, monkeypatch)


@pytest.mark.parametrize("scen", SCEN)
def test_long_runs_past_the_window(scen, monkeypatch):
    """Past the 40-rollout window and the 10-rollout baseline (where the bulk gates take over),
    breaks late and slow, every scenario; the bulk path must really be taken."""
    lines = [line for _, line in generate(scen, 140, 9, setup="long", noise_per_rollout=0, pace=0.3, onset=90)]
    replays = []
    orig = bulk_mod.replay

    def counting(eng, tape, *a):
        replays.append(sum(1 for op in tape if op[0] != 0))
        return orig(eng, tape, *a)

    monkeypatch.setattr(bulk_mod, "replay", counting)
    both = _judge(lines, monkeypatch, batch=97)
    assert both.calls >= 80 or scen == "no-steps"
    assert sum(replays) >= 80 or scen in ("no-steps",), "the bulk path was not taken"


def rewritten_row_log(n: int = 60) -> list[str]:
    """A healthy run whose `step 5` line comes late, after rollouts long recorded."""
    lines = [line for _, line in generate("healthy", n, 4, noise_per_rollout=0)]
    late = next(i for i, line in enumerate(lines) if "step 5:" in line)
    moved = lines[:late] + lines[late + 1 :]
    moved.insert(len(moved) - 5, lines[late])
    return moved


def declining_log(n: int = 60) -> list[str]:
    """A healthy run whose rollout lines carry `rollout/response_len/max` only from rollout 30 on:
    what rule_rollout_slowdown reads changes under the rollouts recorded before - bulk declines."""
    strip = re.compile(r"'rollout/response_len/max': [^,}]*, ")
    out = []
    for line in (line for _, line in generate("healthy", n, 4, noise_per_rollout=0)):
        m = re.search(r"\bperf (\d+): ", line)
        out.append(strip.sub("", line) if m and int(m.group(1)) < 30 else line)
    return out


@pytest.mark.parametrize("batch", [1, 7, 50, 500])
@pytest.mark.parametrize("late", [r"model\.py:\d+ - step", r"train_metric_utils\.py:\d+ - perf"])
def test_a_late_line_is_judged_in_bulk_as_rollout_by_rollout(late, batch, monkeypatch):
    """A line for a rollout already recorded (a trainer's step or perf line come late, or
    doubled late): bulk judging judges what it recorded first, then goes on - the alerts of
    rollout by rollout, and it never declines.  (A rollout line or the rollout manager's perf
    line going back is a restart: a new run.)"""
    lines = [line for _, line in generate("length-hacking", 160, 4, noise_per_rollout=0, onset=60)]
    for at in (5, 70, 120):
        i = next(i for i, line in enumerate(lines) if re.search(rf"{late} {at}: ", line))
        line = lines.pop(i) if at != 120 else lines[i]  # (the last one doubled: a repeat, late)
        lines.insert(min(len(lines), i + 40), line)
    _bulk_never_declines(lines, batch, monkeypatch)


def _bulk_never_declines(lines: list[str], batch: int, monkeypatch) -> Pipeline:
    """Bulk judging takes the whole input (no BulkMismatch anywhere) and gives the alerts and
    verdict of rollout by rollout without gates; returns the plain pipeline."""
    declined = []
    orig = bulk_mod.replay

    def replay(*a, **k):
        try:
            return orig(*a, **k)
        except BulkMismatch:
            declined.append(True)
            raise

    monkeypatch.setattr(bulk_mod, "replay", replay)
    bulk = _run(lines, batch, defer=True)
    plain = _run(lines, batch)
    assert not declined
    assert _alerts(bulk) == _alerts(plain)
    assert bulk.report().status == plain.report().status
    return plain


def test_a_changed_shape_falls_back_to_rollout_by_rollout(monkeypatch):
    """What a rule reads changed under rollouts already recorded: the bulk path declines."""
    lines = declining_log()
    pipe = Pipeline(clock=lambda: NOW).defer()
    with pytest.raises(BulkMismatch):
        for i in range(0, len(lines), 50):
            pipe.feed(lines[i : i + 50], written_at=NOW - 30)
        pipe.finish(NOW)


def _restarted(first: str, second: str, n: int, resume: int, seed: int) -> list[str]:
    """Two runs in one file: the second resumes from a checkpoint at rollout `resume` of the
    first, so its rollout ids repeat ones the first already logged."""
    shift = re.compile(r"\b(rollout|perf|step|eval) (\d+): ")
    a = [line for _, line in generate(first, n, seed, noise_per_rollout=0)]
    b = [line for _, line in generate(second, n, seed + 1, noise_per_rollout=0, onset=40)]
    return a + [shift.sub(lambda m: f"{m.group(1)} {int(m.group(2)) + resume}: ", line) for line in b]


@pytest.mark.parametrize("batch", [37, 500])
@pytest.mark.parametrize("second", ["healthy", "gap-jump"])
def test_a_restart_with_reused_ids_is_judged_in_bulk(second, batch, monkeypatch):
    """A restart in the same file (ids going back) is a new run: the first run's rows are not
    rewritten, so bulk judging does not decline - and it gives the alerts of rollout by rollout,
    on whichever block the restart falls."""
    lines = _restarted("healthy", second, 160, 100, 21)
    plain = _bulk_never_declines(lines, batch, monkeypatch)
    assert len(plain.store.segments) == 2
    assert any(a.rule == "gap-jump" for a in plain.engine.alerts) == (second == "gap-jump")


def _repeated(scen, block, times, seed, **kw):
    from tests.equivalence.test_hacking_columns import repeated

    return repeated(scen, block, times, seed, **kw)


LONG = {
    # at every seam of a repeated block reward drops and length jumps: length-hacking opens and
    # clears again and again (benchmarks/make_big_log's shape)
    "open-close-cycles": lambda: _repeated("healthy", 200, 4, 1),
    "open-close-cycles-k2": lambda: _repeated("healthy", 120, 4, 3, steps_per_rollout=2),
    # the alert opens at the onset and holds for the rest of the run
    "stays-open": lambda: [line for _, line in generate("length-hacking", 700, 5, noise_per_rollout=0, onset=100)],
}


def _bulk_equals_plain(lines, monkeypatch, steady: tuple[bool, ...] = (True,)) -> Pipeline:
    """Bulk judging with the gates - with steady stretches (judge/steady.py) and/or op by op,
    each of `steady` - against rollout by rollout without any gate, judged once: the same
    alerts, every field, and the same verdict; returns the plain pipeline."""
    plain = _run(lines, 500)
    for st in steady:
        monkeypatch.setattr(bulk_mod, "USE_STEADY", st)
        bulk = _run(lines, 500, defer=True)
        assert _alerts(bulk) == _alerts(plain), f"steady stretches {st}"
        assert [a.to_json() for a in bulk.engine.alerts] == [a.to_json() for a in plain.engine.alerts]
        assert bulk.report().status == plain.report().status
    return plain


def _both_ways(case: str, lines, monkeypatch) -> Pipeline:
    """_bulk_equals_plain op by op and with steady stretches; stretches must have been stepped
    over (the cases hold alerts open for hundreds of rollouts)."""
    stepped = _count_steady(monkeypatch)
    plain = _bulk_equals_plain(lines, monkeypatch, steady=(False, True))
    assert plain.report().status != "ok"
    # (length-hacking's short episodes: a few rollouts each between its raise and its clear)
    least = 10 if case.startswith("open-close-cycles") else 50
    assert sum(stepped) >= least, f"no steady stretch was stepped over ({sum(stepped)} ops)"
    return plain


@pytest.mark.parametrize("case", list(LONG))
def test_bulk_equals_plain_rollout_by_rollout_on_long_runs(case, monkeypatch):
    """Bulk judging (gates, an open alert's rule asked only whether it holds), op by op and with
    steady stretches, against rollout by rollout without any gate: the same alerts, every field."""
    from grpo_tui.judge.bulk_answers import Answers

    lines = LONG[case]()
    asked = []
    orig = Answers.hacking_present

    def counting(self, ks):
        if not bulk_mod.USE_STEADY:
            asked.extend(ks.tolist())
        return orig(self, ks)

    monkeypatch.setattr(Answers, "hacking_present", counting)
    plain = _both_ways(case, lines, monkeypatch)
    assert any(a.rule == "length-hacking" for a in plain.engine.alerts)
    assert len(asked) >= 20, "the held path was not taken"


DRIFT_HELD = {
    # a jump in the gap and KL at the onset, held for the rest of the run
    "gap-jump-held": lambda: [line for _, line in generate("gap-jump", 500, 7, noise_per_rollout=0, onset=60)],
    "gap-jump-held-k2": lambda: [
        line for _, line in generate("gap-jump", 300, 8, noise_per_rollout=0, onset=40, steps_per_rollout=2)
    ],
    # a steady rise: gap-rising opens and stays
    "gap-rising-held": lambda: [line for _, line in generate("gap-rising", 300, 9, noise_per_rollout=0, onset=60)],
    "grad-norm-rising-held": lambda: [
        line for _, line in generate("grad-norm-rising", 300, 10, noise_per_rollout=0, onset=60)
    ],
}


LATCHED_CYCLES = {
    # the gap jumps at every block's onset and falls back at every seam: gap-jump (and the gap's
    # and KL's out-of-range warnings) open, hold for 60 rollouts and clear, again and again
    "gap-jump-cycles": lambda: _repeated("gap-jump", 120, 4, 11, onset=60),
    "gap-jump-cycles-k2": lambda: _repeated("gap-jump", 100, 3, 12, onset=50, steps_per_rollout=2),
    "grad-norm-cycles": lambda: _repeated("grad-norm-rising", 120, 4, 13, onset=50),
}
NO_SIGNAL_HELD = {
    "no-signal-cycles": lambda: _repeated("no-signal", 120, 4, 16, onset=60),
    # most groups score the same from the onset on: no-signal opens and holds
    "no-signal-held": lambda: [line for _, line in generate("no-signal", 300, 14, noise_per_rollout=0, onset=60)],
    # length-hacking's falling reward drives the all-wrong groups up: no-signal opens beside it
    "no-signal-beside-length-hacking": lambda: [
        line for _, line in generate("length-hacking", 400, 15, noise_per_rollout=0, onset=60)
    ],
}
OFF_POLICY_HELD = {
    "off-policy-cycles": lambda: _repeated("off-policy", 120, 4, 17, onset=60),
    "off-policy-cycles-k2": lambda: _repeated("off-policy", 120, 4, 20, onset=60, steps_per_rollout=2),
    "off-policy-held": lambda: [line for _, line in generate("off-policy", 300, 18, noise_per_rollout=0, onset=60)],
    # K updates per rollout: the first update clips (not on fresh weights)
    "off-policy-held-k4": lambda: [
        line for _, line in generate("off-policy", 300, 19, setup="k4", noise_per_rollout=0, onset=60)
    ],
}
HELD_CASES = {**DRIFT_HELD, **LATCHED_CYCLES}


@pytest.mark.parametrize("case", list(HELD_CASES))
def test_drift_alerts_held_open_by_their_rules_as_rollout_by_rollout(case, monkeypatch):
    """gap-jump, gap-rising and grad-norm-rising held open for hundreds of rollouts (and opened
    and cleared again), with out-of-range warnings beside them, their rules run at every
    rollout (a held drift alert's rule answers by its latch, rules.drift.LatchTest, first): the
    same alerts, every field, as rollout by rollout without any gate."""
    plain = _both_ways(case, HELD_CASES[case](), monkeypatch)
    assert plain.report().status == "critical"
    if case.startswith("gap"):
        assert any(a.rule == "out-of-range" for a in plain.engine.alerts)
    if case in LATCHED_CYCLES:
        cleared = [a for a in plain.engine.alerts if a.rule != "out-of-range" and a.cleared_at is not None]
        assert len(cleared) >= 2, "the case does not open and clear its alert"


def test_a_slowdown_that_stopped_growing_is_judged_without_its_rule(monkeypatch):
    """rollout-slowdown over a whole history is SlowdownTest's answer (the rule is not asked
    rollout by rollout), also where the slowdown plateaued and its alert clears: the alerts are
    those of judging rollout by rollout."""
    lines = [line for _, line in generate("rollout-slowdown", 400, 21, noise_per_rollout=0, onset=60)]
    calls = []
    orig = rules.rule_rollout_slowdown

    def counting(ctx):
        calls.append(ctx.upto)
        return orig(ctx)

    monkeypatch.setattr(rules, "rule_rollout_slowdown", counting)
    monkeypatch.setattr(rules, "METRIC_RULES", tuple(counting if f is orig else f for f in rules.METRIC_RULES))
    _run(lines, 500, defer=True)
    ran = len(calls)
    plain = _bulk_equals_plain(lines, monkeypatch)
    assert any(a.rule == "rollout-slowdown" for a in plain.engine.alerts)
    assert ran < 100, f"the rule ran at {ran} of 400 rollouts"


SATURATED = {
    # K=4: most groups all-right (saturated data) from the onset: a no-signal warning held open
    "no-signal-saturated-held": lambda: [
        line for _, line in generate("no-signal", 300, 22, setup="k4", noise_per_rollout=0, onset=60)
    ],
    # ... cleared where groups learn again, escalated where reward is exactly 0 for a while
    "no-signal-saturated-cycles": lambda: _groups_learn_again(
        [line for _, line in generate("no-signal", 330, 22, setup="k4", noise_per_rollout=0, onset=60)],
        ((140, 170), (230, 260)),
        (300, 304),
    ),
}


def _groups_learn_again(lines: list[str], spans, zero_reward: tuple[int, int]) -> list[str]:
    """The zero-std group counts of the rollouts in `spans` set low (groups learn again there):
    an open no-signal alert clears in each span and opens again after it; reward exactly 0 on
    the rollouts of `zero_reward` (every answer wrong: no-signal turns critical)."""
    out = []
    for line in lines:
        m = re.search(r"\b(perf|rollout) (\d+): ", line)
        n = int(m.group(2)) if m else -1
        if m and m.group(1) == "perf" and any(a <= n < b for a, b in spans):
            line = re.sub(r"'rollout/zero_std/count_0': [^,}]+", "'rollout/zero_std/count_0': 2", line)
            line = re.sub(r"'rollout/zero_std/count_1': [^,}]+", "'rollout/zero_std/count_1': 3", line)
        if m and zero_reward[0] <= n < zero_reward[1]:
            line = re.sub(r"'rollout/raw_reward': [^,}]+", "'rollout/raw_reward': 0.0", line)
        out.append(line)
    return out


COLUMN_CASES = {**NO_SIGNAL_HELD, **OFF_POLICY_HELD, **SATURATED}


@pytest.mark.parametrize("case", list(COLUMN_CASES))
def test_rules_over_columns_as_rollout_by_rollout(case, monkeypatch):
    """no-signal and off-policy held for hundreds of rollouts, opened and cleared again and
    again, beside length-hacking, at one or K updates, as a saturation warning that escalates
    where reward is exactly 0: bulk judging takes each rule's answer over the whole history
    (NoSignalTest, OffPolicyTest), with no stand-in and no gate - the same alerts, every field,
    as rollout by rollout without any gate."""
    plain = _both_ways(case, COLUMN_CASES[case](), monkeypatch)
    rule = "off-policy" if case.startswith("off-policy") else "no-signal"
    got = [a for a in plain.engine.alerts if a.rule == rule]
    assert got, f"no {rule} alert"
    if "cycles" in case:
        assert sum(a.cleared_at is not None for a in got) >= 2, "the case does not open and clear its alert"
    if case in SATURATED:
        assert any(a.severity == "warning" for a in got)


def test_a_wrong_column_answer_would_be_caught(monkeypatch):
    """... and the comparison has teeth: a no-signal over the history that never says critical
    keeps the saturation warning a warning where rollout by rollout escalates it (reward
    exactly 0)."""

    class NeverCritical(bulk_answers.NoSignalTest):
        def __init__(self, *a) -> None:
            super().__init__(*a)
            self.critical[:] = False

    lines = SATURATED["no-signal-saturated-cycles"]()
    monkeypatch.setattr(bulk_answers, "NoSignalTest", NeverCritical)
    with pytest.raises(AssertionError):
        _bulk_equals_plain(lines, monkeypatch)


def test_rows_of_ids_takes_only_exact_int_ids():
    """_rows_of_ids finds touched rollouts by binary search only where every id is a plain int
    below 2**53 (a bool, a float or a bigger int: None, the caller loops), and then finds
    exactly the rows the segment's own row_of gives."""
    pipe = _run([line for _, line in generate("healthy", 30, 5, noise_per_rollout=0)], 500)
    seg = pipe.store.current
    ids = list(seg.row_of)
    touch = {rid: i for i, rid in enumerate(ids[::3])}
    rows, stamps = bulk_mod._rows_of_ids(seg, touch)
    assert rows.tolist() == [seg.row_of[r] for r in touch]
    assert stamps.tolist() == list(touch.values())
    for odd in (True, 2**53, -(2**53), 3.5):
        assert bulk_mod._rows_of_ids(seg, {**touch, odd: 1}) is None, odd
    assert bulk_mod._rows_of_ids(seg, {**touch, 2**53 - 1: 1}) is not None


def _with_engine_events(lines: list[str], at: dict[int, str]) -> list[str]:
    """A RolloutManager line with this text after the `step N:` line of each rollout N in
    `at`, at that line's time: events the engine acts on while alerts are open."""
    out = []
    for line in lines:
        out.append(line)
        m = re.search(r"\[(\d{4}-\d\d-\d\d [\d:.]+) [^\]]*\] \S+ - step (\d+): ", line)
        if m and int(m.group(2)) in at:
            out.append(
                f"(RolloutManager pid=55433) [{m.group(1)} rollout_manager] health_monitor.py:154 - "
                + at.pop(int(m.group(2)))
            )
    return out


_ENGINE_EVENTS = {
    150: "Health check failed for rollout engine 1 (ray timeout or error). Killing actor.",
    190: "Recovered 1 dead rollout engines",
    230: "Error: retrying... (attempt 1/60, url=http://10.0.0.5:30000/generate)",
}
STEADY_CASES = {
    **LONG,
    **HELD_CASES,
    **COLUMN_CASES,
    # engine-down warnings open and clear while gap-jump and its warnings are held
    "gap-jump-held-engine-events": lambda: _with_engine_events(DRIFT_HELD["gap-jump-held"](), dict(_ENGINE_EVENTS)),
}


def _count_steady(monkeypatch) -> list:
    """The ops replay stepped over while alerts were open (judge/steady.py), per stretch."""
    from grpo_tui.judge import steady as steady_mod

    stepped = []
    orig = steady_mod.Steady.next_busy

    def counting(self, t, open_alerts):
        to = orig(self, t, open_alerts)
        stepped.append((self.k_of[to] if to < self.n else self.n_ops) - self.k_of[t])
        return to

    monkeypatch.setattr(steady_mod.Steady, "next_busy", counting)
    return stepped


def test_steady_stretches_beside_engine_events(monkeypatch):
    """Where the open alerts surely hold and nothing else may fire, replay steps over the
    rollouts at once (judge/steady.py): the same alerts, every field, as rollout by rollout
    without any gate - here with engine-down warnings opening and clearing while gap-jump and
    its warnings are held (the cases above, held for hundreds of rollouts, opened and cleared
    again and again, each run op by op and with steady stretches: _both_ways)."""
    plain = _both_ways("gap-jump-held-engine-events", STEADY_CASES["gap-jump-held-engine-events"](), monkeypatch)
    assert any(a.rule == "engine-down" for a in plain.engine.alerts), "no engine event was judged"


STEADY_WRONG = {  # a wrong answer inside Steady's mask, and a case where it shows
    # every op steady whatever the values: an alert that rollout by rollout clears stays open
    "always steady": ("gap-jump-cycles", lambda self, opened, lo, hi, none: self.clean[lo:hi].copy()),
    # gap-jump held without its test (still_gap): it holds where its values fell back
    "no still_gap": ("gap-jump-cycles", "still_gap"),
    # length-hacking held without asking whether it holds (its latch or its sign)
    "no presence": ("open-close-cycles", "presence"),
}


@pytest.mark.parametrize("name", list(STEADY_WRONG))
def test_a_wrong_steady_stretch_would_be_caught(name, monkeypatch):
    """The comparison has teeth for steady stretches too: a mask that steps over rollouts where
    an alert would clear (or escalate) gives other alerts than rollout by rollout."""
    from grpo_tui.judge import steady as steady_mod

    case, wrong = STEADY_WRONG[name]
    if wrong == "still_gap":
        orig = bulk_mod.Answers.held_arrays

        def no_still_gap(self):
            got = orig(self)
            return (np.ones_like(got[0]),) + tuple(got[1:])

        monkeypatch.setattr(bulk_mod.Answers, "held_arrays", no_still_gap)
    elif wrong == "presence":
        monkeypatch.setattr(bulk_mod.Answers, "hacking_present", lambda self, ks: np.ones(len(ks), bool))
    else:
        monkeypatch.setattr(steady_mod.Steady, "_mask_decided", wrong)
    with pytest.raises(AssertionError):
        _bulk_equals_plain(STEADY_CASES[case](), monkeypatch)


_METRIC_SCEN = [
    "healthy",
    "gap-rising",
    "gap-jump",
    "grad-norm-rising",
    "length-hacking",
    "off-policy",
    "rollout-slowdown",
    "no-signal",
    "non-finite",
]
_ONE_STEP = [name for name, s in SETUPS.items() if s.steps_per_rollout == 1]  # (repeated K > 1: out of order)
REPEATED_BROKEN = [
    (scen, _ONE_STEP[i % len(_ONE_STEP)], (97, 500, 5000)[i % 3], 300 + i) for i, scen in enumerate(_METRIC_SCEN)
]


@pytest.mark.parametrize(
    "scen,setup,batch,seed", REPEATED_BROKEN, ids=[f"{s}-{u}-{b}" for s, u, b, _ in REPEATED_BROKEN]
)
def test_steady_stretches_on_repeated_broken_runs(scen, setup, batch, seed, monkeypatch):
    """Every metric scenario broken again in each of three repeated blocks (alerts opened,
    held and cleared at each seam), on every setup, read in blocks of 97 to 5000 lines: bulk
    judging with steady stretches gives the alerts of rollout by rollout without any gate, read
    the same way.  (An ad-hoc run of 1,649 such random runs found no difference.)"""
    from tests.equivalence.test_hacking_columns import repeated

    lines = repeated(scen, 120, 3, seed, onset=70, setup=setup)
    bulk = _run(lines, batch, defer=True)
    plain = _run(lines, batch)
    assert [a.to_json() for a in bulk.engine.alerts] == [a.to_json() for a in plain.engine.alerts]
    assert _alerts(bulk) == _alerts(plain)


def _set_from(lines: list[str], metric: str, value_at, start: int) -> list[str]:
    rx = re.compile(r"((?:rollout|perf) (\d+): \{.*?'" + re.escape(metric) + r"': )([-0-9.e]+)")
    out = []
    for line in lines:
        m = rx.search(line)
        if m and int(m.group(2)) >= start:
            line = line[: m.start(3)] + repr(value_at(int(m.group(2)))) + line[m.end(3) :]
        out.append(line)
    return out


DIRECTION_CASES = {
    # length below its band throughout; reward drops below its band at 150 and recovers at 220
    "length-low-reward-dips": lambda: _set_from(
        _set_from([x for _, x in generate("healthy", 300, 11)], "rollout/response_lengths", lambda n: 300.0, 20),
        "rollout/raw_reward",
        lambda n: 0.40 if 150 <= n < 220 else 0.62,
        20,
    ),
    # reward far above its band, cut share below its band, both held for hundreds of rollouts
    "reward-high-cut-low": lambda: _set_from(
        _set_from([x for _, x in generate("healthy", 300, 12)], "rollout/raw_reward", lambda n: 0.95, 20),
        "rollout/truncated",
        lambda n: 0.005,
        20,
    ),
}


@pytest.mark.parametrize("case", list(DIRECTION_CASES))
def test_bulk_equals_plain_where_a_band_is_left_the_healthy_way(case, monkeypatch):
    """Signals beyond their band on the healthy side (signals.beyond_is_healthy), held for
    hundreds of rollouts: bulk judging (its out-of-range stand-in never sure there unless reward
    surely fails) gives the alerts rollout by rollout gives."""
    plain = _bulk_equals_plain(DIRECTION_CASES[case](), monkeypatch)
    oor = {(a.signal, a.rollout) for a in plain.engine.alerts if a.rule == "out-of-range"}
    if case == "length-low-reward-dips":
        assert {s for s, _ in oor} >= {"length", "reward"}  # while reward is down, length warns too
        assert all(150 <= r < 230 for s, r in oor if s == "length")
    else:
        assert not {s for s, _ in oor} & {"reward", "truncated"}


def _new_rule_cases() -> dict:
    from tests.unit.judge.test_kl_ref_no_update import trl_log, verl_log

    ramp = [0.002] * 20 + [0.01, 0.05, 0.2, 0.5, 0.8] + [2.0, 2.5, 3.0, 2.2, 2.8] * 40
    grad_rx = re.compile(r"(step (\d+): \{.*?'train/grad_norm': )([-0-9.e]+)")

    def miles_zero_grad() -> list[str]:
        out = []
        for _, line in generate("healthy", 300, 6):
            m = grad_rx.search(line)
            if m and (100 <= int(m.group(2)) < 160 or int(m.group(2)) >= 250):
                line = line[: m.start(3)] + "0.0" + line[m.end(3) :]
            out.append(line)
        return out

    return {
        "kl-ref-runs-away": lambda: trl_log(len(ramp), kl=lambda i: ramp[i]),
        "kl-ref-spikes": lambda: trl_log(400, kl=lambda i: 0.5 if i % 97 == 50 else 0.001 + 0.00001 * i),
        "no-update-cycles": lambda: trl_log(400, grad=lambda i: 0.0 if (i // 25) % 3 == 1 else 0.4),
        "miles-no-update-held": miles_zero_grad,
        "entropy-high-cycles": lambda: verl_log(300, lambda i: 9.49 if (i // 20) % 2 else 0.6),
        "reward-variance-held": lambda: trl_log(300, std=lambda i: 0.9 if 100 <= i < 250 else 0.05),
        # entropy collapses twice: while reward still rises (a warning), then with reward flat
        # (critical), and recovers in between
        "entropy-collapse-cycles": lambda: [
            f"step:{i} - actor/entropy:{0.02 if 60 <= i < 120 or 200 <= i < 260 else 0.5!r} - actor/grad_norm:0.5 - "
            f"critic/score/mean:{(0.3 + 0.002 * i) if i < 150 else 0.6 + 0.01 * (i % 3)!r} - response_length/mean:{400 + i}"
            for i in range(1, 301)
        ],
    }


@pytest.mark.parametrize("case", list(_new_rule_cases()))
def test_bulk_equals_plain_on_the_kl_ref_and_no_update_rules(case, monkeypatch):
    """kl-ref, entropy-high, entropy-collapse, reward-variance and no-update over columns
    (rules.policy: KlRefTest, EntropyHighTest, EntropyCollapseTest; rules.learning_signal:
    RewardVarianceTest, NoUpdateTest) give the alerts rollout by rollout gives, held and cycling."""
    plain = _bulk_equals_plain(_new_rule_cases()[case](), monkeypatch)
    rule = next(r for r in ("kl-ref", "entropy-high", "entropy-collapse", "reward-variance", "no-update") if r in case)
    assert any(a.rule == rule for a in plain.engine.alerts)
    if case == "entropy-collapse-cycles":
        got = {(a.severity, a.first_seen) for a in plain.engine.alerts if a.rule == rule}
        assert len(got) >= 2 and {"warning", "critical"} <= {sev for sev, _ in got}, got
