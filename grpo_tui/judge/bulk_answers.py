"""What the bulk replay asks at each recorded rollout (Answers): the answers of the rules written
over columns (RangeTest, OffPolicyTest, NoSignalTest, GapTest, GrowthTest, the drift latch,
HackingTest, EntropyCollapseTest, EntropyHighTest, KlRefTest, RewardVarianceTest, NoUpdateTest,
SlowdownTest) over the whole history, and length-hacking's vectorised gate (HackingTest's sign is
asked only where it may show), so judge/bulk.py asks a rule only where it may change something."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..store.metric_store import Segment
from .bulk_vec import (
    MAYBE,
    NO,
    START,
    UNKNOWN,
    _hacking_vec,
)
from .ranges import RangeSet
from .rules import COMPUTED
from .rules.base import (
    RuleContext,
    early_levels,
    own_base,
    ranges_for,
)
from .rules.drift import GAP_SIGNALS, GapTest, GrowthTest, LatchTest
from .rules.hacking import HackingTest
from .rules.learning_signal import REWARD_STD, NoSignalTest, NoUpdateTest, RewardVarianceTest
from .rules.policy import KL_REF, EntropyCollapseTest, EntropyHighTest, KlRefTest, entropy_start
from .rules.rollout import OffPolicyTest, SlowdownTest, slowdown_base
from .rules.values import RangeTest

HACK_CHUNK = 2048  # ops per batch of length-hacking's tests


class Answers:
    """The gates' answers for every recorded rollout, as arrays (one entry per judged op):
    per rule MAYBE / NO / UNKNOWN (the rule runs), rule_out_of_range's own answer (`oor`, a
    RangeTest: the rule itself, over the whole history), and `quiet` (no rule can fire).
    `at(k)` is the per-rollout dict evaluate_metrics reads."""

    def __init__(self, seg: Segment, ranges, rows: np.ndarray) -> None:
        self.rows = rows
        n_ops = len(rows)
        self.full = full = rows >= START  # a settled baseline (the window may be short)
        self.names: list[str] = []
        self.mat = np.zeros((n_ops, 0), np.int8)
        self.quiet = np.zeros(n_ops, bool)
        self.quiet_but_hacking = self.quiet
        self.resolved = None  # ranges_for on the full windows
        self.mk: dict = {}  # _mk_memo's
        self.seg = seg
        self._held: tuple | None = None  # _held_arrays', made on first use
        self._hack: HackingTest | None = None  # length-hacking over the history, made on first use
        self._hack_known: dict[str, np.ndarray] = {}  # its answers so far per op (-1: not asked)
        self._hack_size: dict[str, int] = {}  # (_ahead's batches)
        self._hack_next: dict[str, int] = {}
        # the rules written over columns, over the whole history (their answers at full ops)
        self.oor: RangeTest | None = None
        # rule name -> that rule over the whole history (a class of judge/rules/), where it
        # fires somewhere (elsewhere its answer is none at every rollout); its name -> None else
        self.computed: dict[str, Any] = {}
        self.no_signal: NoSignalTest | None = None  # (judge/steady.py reads its escalations)
        self.gap_rising = np.zeros(n_ops, bool)  # (rule_gap returns a gap-rising there, none open)
        if not n_ops or not full.any():
            return
        res, self.resolved = _gate_arrays(seg, ranges, rows, self.mk)
        rs, history = self.resolved, np.arange(int(rows.max()) + 1)
        self.oor = RangeTest(seg, rs, history, rows)
        # the own baseline is the segment's first rollouts at every full op: the rule's, exactly
        first = int(seg.id_array()[rows[full][0]])
        ctx = RuleContext(seg, rs, first)
        ctx.ranges = rs  # (ranges_for's answer on the full windows already)
        gap = GapTest(seg, rs, history, rows, {s: own_base(ctx, s, log=True) for s in GAP_SIGNALS})
        self.gap_rising = gap.rising
        tests: dict[str, Any] = {
            "rule_off_policy": OffPolicyTest(seg, history, rows),
            "rule_no_signal": NoSignalTest(seg, history, rows),
            "rule_grad_norm": GrowthTest(seg, rs, history, rows, own_base(ctx, "grad_norm", log=True)),
            "rule_gap": gap,
            "rule_entropy_collapse": EntropyCollapseTest(seg, history, rows, entropy_start(seg, first)),
            "rule_entropy_high": EntropyHighTest(seg, history, rows, rows < 3),
            "rule_kl_ref": KlRefTest(seg, history, rows, early_levels(seg, KL_REF, rows)),
            "rule_reward_variance": RewardVarianceTest(seg, history, rows, early_levels(seg, REWARD_STD, rows)),
            "rule_no_update": NoUpdateTest(seg, history, rows),
            "rule_rollout_slowdown": SlowdownTest(seg, history, rows, slowdown_base(seg, first)),
        }
        for name, test in tests.items():
            res[name] = np.where(test.fires, MAYBE, NO).astype(np.int8)  # (the rule's own answer)
            # a rule that fires nowhere has no words to give: its columns need not be kept
            self.computed[name] = test if test.fires.any() else None
        self.no_signal = self.computed["rule_no_signal"]
        self.names = list(res)
        unknown = np.int8(UNKNOWN)
        self.mat = np.where(full[:, None], np.stack([res[nm] for nm in self.names], axis=1), unknown)
        calm = full & ~self.oor.any_fires()
        self.quiet = calm & (self.mat == NO).all(axis=1)
        others = [j for j, nm in enumerate(self.names) if nm != "rule_length_hacking"]
        self.quiet_but_hacking = calm & (self.mat[:, others] == NO).all(axis=1)

    def _hacking(self) -> HackingTest:
        if self._hack is None:
            assert self.resolved is not None  # (asked only at full ops)
            end = int(self.rows.max()) + 1
            ctx = RuleContext(self.seg, self.resolved, int(self.seg.id_array()[self.rows[self.full][0]]))
            ctx.ranges = self.resolved  # (ranges_for's answer on the full windows already)
            lb, rb = own_base(ctx, "length", log=False), own_base(ctx, "reward", log=False)
            self._hack = HackingTest(self.seg, np.arange(end), self.resolved, lb, rb)
        return self._hack

    def _hacking_known(self, name: str, ks: np.ndarray) -> np.ndarray:
        """HackingTest's `name` answer (holds, signs) over the history at full ops ks, each op
        computed once, when first asked."""
        known = self._hack_known.get(name)
        first = known is None
        if known is None:
            known = self._hack_known[name] = np.full(len(self.rows), -1, np.int8)
        todo = ks[known[ks] < 0]
        if len(todo):
            todo = self._ahead(name, todo, known, first)
            ask = getattr(self._hacking(), name)
            for a in range(0, len(todo), HACK_CHUNK):  # (bounded memory: a 40-row window per op)
                part = todo[a : a + HACK_CHUNK]
                known[part] = ask(self.rows[part])
        return known[ks] == 1

    def _ahead(self, name: str, todo: np.ndarray, known: np.ndarray, first: bool) -> np.ndarray:
        """The ops to compute along with `todo`, as one batch (a batch costs little more than
        one op): at the first question for the sign, every op where its gate lets it fire;
        for a single op, the full ops after it - 32, doubling while the questions go on
        op after op (an alert held open), up to HACK_CHUNK."""
        want = np.zeros(len(self.rows), bool)
        want[todo] = True
        if name == "signs":
            if first:
                want |= self.may("rule_length_hacking")
            want &= self.may("rule_length_hacking")
        if len(todo) == 1:
            k = int(todo[0])
            go_on = self._hack_next.get(name) == k
            size = min(HACK_CHUNK, 2 * self._hack_size.get(name, 16)) if go_on else 32
            self._hack_size[name], self._hack_next[name] = size, k + size
            want[k : k + size] = True
        return np.flatnonzero(want & self.full & (known < 0))

    def hacking_signs(self, ks: np.ndarray) -> np.ndarray:
        """Per full op of `ks`: length-hacking's sign shows (rules.hacking.HackingTest.signs;
        the rule returns nothing where it does not) - never where its gate says it cannot."""
        out = self.may("rule_length_hacking")[ks]
        out[out] = self._hacking_known("signs", ks[out])
        return out

    def hacking_present(self, ks: np.ndarray) -> np.ndarray:
        """Per full op of `ks`: rule_length_hacking returns a condition there while its alert is
        open - its latch holds or its sign shows."""
        out = self._hacking_known("holds", ks)
        rest = np.flatnonzero(~out)
        out[rest] = self.hacking_signs(ks[rest])
        return out

    def held_arrays(self) -> tuple[np.ndarray, ...]:
        """_held_arrays' answers for every op, made on first use (judge/steady.py)."""
        if self._held is None:
            self._held = _held_arrays(self.seg, self.resolved, self.rows)
        return self._held

    def may(self, rule: str) -> np.ndarray:
        """Per op: the rule may fire there (its gate does not say no)."""
        if rule not in self.names:
            return np.ones(len(self.rows), bool)
        return self.mat[:, self.names.index(rule)] != NO

    def at(self, k: int) -> dict:
        """{rule: True/False/None (None = no answer: the rule runs), rules.COMPUTED: {rule: its conditions}
        of the rules over columns, "quiet": bool}."""
        if not self.full[k]:
            return {}
        row = self.mat[k].tolist()
        d: dict = {nm: (None if v == UNKNOWN else bool(v)) for nm, v in zip(self.names, row)}
        if self.oor is not None:
            d[COMPUTED] = {name: test.conditions(k) if test is not None else [] for name, test in self.computed.items()}
            d[COMPUTED]["rule_out_of_range"] = self.oor.conditions(k)
        d["quiet"] = bool(self.quiet[k])
        return d


def _gate_arrays(seg: Segment, ranges, rows: np.ndarray, memo: dict) -> tuple[dict, RangeSet]:
    full = rows >= START
    end = int(rows.max()) + 1
    ids = seg.id_array()[:end]
    rs = ranges_for(seg, ranges, int(ids[rows[full][0]]))
    res: dict[str, np.ndarray] = {}
    res["rule_length_hacking"] = _hacking_vec(seg, rs, ids, rows, memo)
    return res, rs


def _held_arrays(seg: Segment, rs, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per op: the drift latch (rules.drift.LatchTest) holds for gap or KL; it holds for grad_norm."""
    end = int(rows.max()) + 1
    ids = seg.id_array()[:end]
    full = rows >= START
    # the own baseline is the segment's first rollouts at every full op: the rule's, exactly
    ctx = RuleContext(seg, rs, int(ids[rows[full][0]]))
    ctx.ranges = rs  # (rs is ranges_for's answer on the full windows already)
    history = np.arange(end)
    still = {
        sig_id: LatchTest(seg, rs, history, rows, sig_id, own_base(ctx, sig_id, log=True)).holds
        for sig_id in ("gap", "kl", "grad_norm")
    }
    return full & (still["gap"] | still["kl"]), full & still["grad_norm"]
