"""Fast judging gives exactly the verdicts of plain judging (issue #11, "fast core").

The gates (judge/gates.py) skip a rule only where it cannot fire.  Here every rollout of every
simulated scenario (several seeds, every training setup, K = 1/2/4) and of every sample log is
judged both ways - the rules with their gates and without - and the conditions must be the same,
rule for rule: ids, severities, start rollouts, messages and evidence.  The alerts then follow.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grpo_tui.judge import engine as engine_mod
from grpo_tui.judge import rules
from grpo_tui.lines.files import iter_line_blocks
from grpo_tui.pipeline import Pipeline
from grpo_tui.simulate import SCENARIOS, SETUPS, generate

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted((ROOT / "sample_logs").glob("*.log")) + sorted((ROOT / "tests" / "fixtures").glob("*.log"))
SCEN = list(SCENARIOS)
# every scenario on every setup (one seed each), and on the manual's setup with more seeds and K
CASES = [(scen, setup, 101 + i * 7 + j, None) for i, scen in enumerate(SCEN) for j, setup in enumerate(SETUPS)]
CASES += [(scen, "manual", seed, k) for i, scen in enumerate(SCEN) for seed, k in ((5 + i, 2), (61 + i, 4))]


def _key(conds) -> list:
    return [(c.rule, c.severity, c.start, c.signal, c.message, repr(c.evidence)) for c in conds]


class _Both:
    """evaluate_metrics with and without gates at every judged rollout; they must agree."""

    def __init__(self):
        self.calls = 0
        self.skipped = 0

    def __call__(self, seg, ranges, upto, open_rules=frozenset()):
        plain = _plain(seg, ranges, upto, open_rules)
        fast = rules.evaluate_metrics(seg, ranges, upto, open_rules)
        assert _key(fast) == _key(plain), f"rollout {upto}: gated {_key(fast)} != plain {_key(plain)}"
        self.calls += 1
        return fast


def _plain(seg, ranges, upto, open_rules):
    old = rules.USE_GATES
    rules.USE_GATES = False
    try:
        return rules.evaluate_metrics(seg, ranges, upto, open_rules)
    finally:
        rules.USE_GATES = old


def _judge(lines, monkeypatch, batch=500) -> _Both:
    both = _Both()
    monkeypatch.setattr(rules, "USE_GATES", True)
    monkeypatch.setattr(engine_mod, "evaluate_metrics", both)
    pipe = Pipeline()
    for i in range(0, len(lines), batch):
        pipe.feed(lines[i:i + batch])
    pipe.finish()
    return both


@pytest.mark.parametrize("scen,setup,seed,k", CASES, ids=[f"{s}-{u}-{seed}-k{k}" for s, u, seed, k in CASES])
def test_gated_rules_equal_plain_rules_on_simulated_runs(scen, setup, seed, k, monkeypatch):
    kw = {"setup": setup, "noise_per_rollout": 0}
    if k is not None:
        kw["steps_per_rollout"] = k
    n = 48 if setup == "manual" else min(SETUPS[setup].rollouts, 90)
    lines = [line for _, line in generate(scen, n, seed, **kw)]
    both = _judge(lines, monkeypatch)
    assert both.calls > 0 or scen == "no-steps"


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_gated_rules_equal_plain_rules_on_sample_logs(path, monkeypatch):
    lines = [line for block in iter_line_blocks(str(path)) for line in block]
    _judge(lines, monkeypatch)


def test_long_run_past_the_window(monkeypatch):
    """Past the 40-rollout window and the 10-rollout baseline, with slow drifts and heat."""
    lines = [line for _, line in generate("gap-rising", 160, 9, setup="long", noise_per_rollout=0, pace=0.3)]
    both = _judge(lines, monkeypatch, batch=97)
    assert both.calls >= 150
