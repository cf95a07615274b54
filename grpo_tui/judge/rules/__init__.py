"""Broken-run rules (ids are a contract, docs/contracts.md §5): each looks at a short window of the
current segment and says whether its sign is there now, with evidence.

Judging that transfers across setups (issue #10):

- A drift is judged against the run's own early baseline (the median of its first rollouts,
  on a log scale for heavy-tailed signals) as well as against a range when one applies.  The
  noise scale comes from the run itself: the robust spread of the window around its
  Theil-Sen line, floored per signal.
- A trend needs statistical evidence (one-sided Mann-Kendall) AND a size that matters over
  its window (Theil-Sen rise above both a minimum ratio and the rise's own noise, which
  shrinks as the window grows to 32 rollouts) AND a level that stayed up (3 of the last 4
  values beyond the baseline edge).  Slow drifts are caught on the long windows, fast ones
  on the short, noisy setups later than quiet ones.
- A value orders of magnitude beyond its band and its own baseline is an explosion: critical
  at once.
- When the manual's default ranges don't fit the run (judge/setup.py), their range warnings
  and range gates are dropped; ranges from a file still apply.

Each rule only reads the newest WINDOW rollouts plus the segment's first BASELINE_ROWS, so a
live update costs the same at 100 and at 100,000 rollouts.
"""

from __future__ import annotations

from ...store.metric_store import Segment
from ..ranges import RangeSet
from . import drift, events, hacking, learning_signal, policy, rollout, values
from .base import WINDOW, Condition, RuleContext, RuleInfo, defaults_fit_memo, ranges_for
from .drift import LATCHED, rule_gap, rule_grad_norm, still_outside
from .hacking import rule_length_hacking
from .learning_signal import REWARD_STD, rule_no_signal, rule_no_update, rule_reward_variance
from .policy import ENTROPY, KL_REF, rule_entropy_collapse, rule_entropy_high, rule_kl_ref
from .rollout import rule_off_policy, rule_rollout_slowdown
from .values import rule_non_finite, rule_out_of_range

__all__ = [
    "ENTROPY",
    "HACKING_HELD",
    "HELD",
    "KL_REF",
    "METRIC_RULES",
    "COMPUTED",
    "REWARD_STD",
    "RULES",
    "WINDOW",
    "Condition",
    "RuleContext",
    "RuleInfo",
    "defaults_fit_memo",
    "evaluate_metrics",
    "kept_open",
    "ranges_for",
]


# every rule's description, each kept beside its rule (the events' in events.py); the order is the
# one docs/contracts.md lists
_ORDER = [
    "no-steps",
    "engine-down",
    "gap-rising",
    "gap-jump",
    "grad-norm-rising",
    "length-hacking",
    "off-policy",
    "rollout-slowdown",
    "no-signal",
    "non-finite",
    "crashed",
    "stalled",
    "out-of-range",
    "entropy-collapse",
    "kl-ref",
    "entropy-high",
    "reward-variance",
    "no-update",
]
_INFOS = {i.id: i for fam in (values, drift, hacking, rollout, learning_signal, policy, events) for i in fam.INFO}
RULES: dict[str, RuleInfo] = {rid: _INFOS[rid] for rid in _ORDER}

METRIC_RULES = (
    rule_non_finite,
    rule_gap,
    rule_grad_norm,
    rule_length_hacking,
    rule_off_policy,
    rule_rollout_slowdown,
    rule_no_signal,
    rule_entropy_collapse,
    rule_kl_ref,
    rule_entropy_high,
    rule_reward_variance,
    rule_no_update,
    rule_out_of_range,
)


# the alerts that hold on other tests while they are open: a rollout where every gate says no is
# still judged for them (the drift alerts by their latch, still_outside, below; length-hacking by
# its rule, whose gate speaks only for a new sign and so must not skip it while it is open)
HELD = frozenset({"gap-rising", "gap-jump", "grad-norm-rising", "length-hacking"})
_HOLDS = {"rule_length_hacking": ("length-hacking",)}


def kept_open() -> Condition:
    """The condition of an open length-hacking alert where the bulk replay knows that its rule
    returns one (its latch holds or its sign shows: rules.hacking.HackingTest over the history):
    it keeps the alert open, and its message and evidence are never read (AlertBook keeps
    those of the rollout that raised it unless the alert escalates, and length-hacking is
    always critical)."""
    return Condition("length-hacking", "critical", None, "length-hacking holds", {}, signal="length")


HACKING_HELD = "length-hacking held"
# a rule whose alert, while open, it holds by its latch first: its answer computed over the
# history (with no alert open) does not stand for it then
_HELD_BY = {"rule_grad_norm": frozenset({"grad-norm-rising"}), "rule_gap": frozenset({"gap-rising"})}
_NOT_HELD: frozenset = frozenset()
COMPUTED = "computed"  # pre: {rule name: its conditions here}, the rule computed over the whole history


def evaluate_metrics(
    seg: Segment, ranges: RangeSet, upto: int, open_rules: frozenset[str] = frozenset(), pre: dict | None = None
) -> list[Condition]:
    """Every metric rule's condition at rollout `upto`.  `pre`: the answers for this rollout
    computed in bulk (judge/bulk.py): {rule name: False} where its gate says it cannot fire
    (an open alert it holds itself still asks it, _HOLDS); "quiet" = no rule can fire; HACKING_HELD: whether
    rule_length_hacking returns a condition while its (always critical) alert is open, where
    only that matters (rules.hacking.HackingTest over the history) - kept_open() then keeps the
    alert open;
    COMPUTED: {rule name: its conditions here} for the rules written over columns, computed over
    the whole history at once (values.RangeTest, rollout.OffPolicyTest,
    learning_signal.NoSignalTest: the same arithmetic as at one rollout).  The rules themselves
    take nothing but the RuleContext."""
    gated = bool(pre) and seg.ordered
    if (
        gated
        and pre
        and pre.get("quiet")
        and not (open_rules & HELD)
        and not seg.nonfinite.get(seg.row_of.get(upto, -1))
    ):
        return []
    ctx = RuleContext(seg, ranges, upto, open_rules)
    computed = pre.get(COMPUTED) if pre else None
    out: list[Condition] = []
    held = pre.get(HACKING_HELD) if gated and pre and "length-hacking" in open_rules else None
    for rule in METRIC_RULES:
        if held is not None and rule is rule_length_hacking:
            if held:  # the open alert holds; what it says is the raise's
                out.append(kept_open())
            continue
        if (
            computed is not None
            and rule.__name__ in computed
            and not (open_rules & _HELD_BY.get(rule.__name__, _NOT_HELD))
        ):
            out.extend(computed[rule.__name__])  # (the rule's answer with none of its held alerts open)
            continue
        if (
            gated
            and pre
            and pre.get(rule.__name__) is False
            and not any(a in open_rules for a in _HOLDS.get(rule.__name__, ()))
        ):
            continue  # its bulk gate says it cannot fire here (a necessary condition, judge/bulk_vec.py)
        try:
            out.extend(rule(ctx))
        except (ValueError, FloatingPointError, IndexError, ZeroDivisionError):
            continue  # a degenerate window is not a verdict
    fired = {c.rule for c in out}
    if ("no-signal" in fired or "no-signal" in open_rules) and "length-hacking" not in open_rules:
        # reward collapsed with the groups: that explains a falling reward, not longer answers
        out = [c for c in out if c.rule != "length-hacking"]
    for rule_id, sig_ids in LATCHED.items():
        if rule_id in open_rules and rule_id not in fired:
            for sig_id in sig_ids:
                c = still_outside(ctx, rule_id, sig_id)
                if c is not None:
                    out.append(c)
                    break
    return out
