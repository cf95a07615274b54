"""What the bulk replay asks at each recorded rollout (Answers): the vectorised gates' answers,
and which open alerts surely hold there, so judge/bulk.py runs a rule only where it may change
something."""

from __future__ import annotations

import numpy as np

from ..store.metric_store import Segment
from .bulk_vec import (
    BASE_ROWS,
    MAYBE,
    NO,
    START,
    UNKNOWN,
    _base_min,
    _boom_may,
    _bounds,
    _dense,
    _drift_vec,
    _DriftMay,
    _entropy_high_vec,
    _entropy_vec,
    _hacking_vec,
    _kl_ref_vec,
    _last4,
    _log,
    _no_update_vec,
    _or,
    _reward_variance_vec,
    _slowdown_vec,
    _surely_above,
    _vals,
)
from .ranges import RangeSet
from .rules import COMPUTED
from .rules.base import (
    ABSURD,
    RHO,
    RuleContext,
    own_base,
    ranges_for,
)
from .rules.learning_signal import NoSignalTest
from .rules.rollout import OffPolicyTest
from .rules.values import RangeTest
from .signals import BY_ID, metric_for


class Answers:
    """The gates' answers for every recorded rollout, as arrays (one entry per judged op):
    per rule MAYBE / NO / UNKNOWN (scalar gate), rule_out_of_range's own answer (`oor`, a
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
        self.mk: dict = {}  # _mk_memo's (shared with judge/held.py)
        self.seg = seg
        self._drift: _DriftMay | None = None  # _no_drift's arrays, made on first use
        self._held: tuple | None = None  # held_rules' arrays, made on first use
        # the rules written over columns, over the whole history (their answers at full ops)
        self.oor: RangeTest | None = None
        self.off_policy: OffPolicyTest | None = None
        self.no_signal: NoSignalTest | None = None
        if not n_ops or not full.any():
            return
        res, self.resolved = _gate_arrays(seg, ranges, rows, self.mk)
        history = np.arange(int(rows.max()) + 1)
        self.oor = RangeTest(seg, self.resolved, history, rows)
        self.off_policy = OffPolicyTest(seg, history, rows)
        self.no_signal = NoSignalTest(seg, history, rows)
        for name, test in (("rule_off_policy", self.off_policy), ("rule_no_signal", self.no_signal)):
            res[name] = np.where(test.fires, MAYBE, NO).astype(np.int8)  # (the rule's own answer)
        self.names = list(res)
        unknown = np.int8(UNKNOWN)
        self.mat = np.where(full[:, None], np.stack([res[nm] for nm in self.names], axis=1), unknown)
        calm = full & ~self.oor.any_fires()
        self.quiet = calm & (self.mat == NO).all(axis=1)
        others = [j for j, nm in enumerate(self.names) if nm != "rule_length_hacking"]
        self.quiet_but_hacking = calm & (self.mat[:, others] == NO).all(axis=1)

    def _drift_may(self) -> _DriftMay:
        if self._drift is None:
            self._drift = _DriftMay(self.seg, self.rows, self.mk)
        return self._drift

    def held_rules(
        self, k: int, open_rules: frozenset, critical: frozenset
    ) -> dict[str, tuple[tuple[str, str], ...]] | None:
        """rules.HELD_RULES at op k: the rules (rule_gap, rule_grad_norm) that
        need not run because each alert they could return is open and critical (`critical`: of
        `open_rules`, those) and holds anyway, with those alerts.

        While such an alert is open its rule runs at every rollout, yet to the state machine only
        presence matters (a critical alert keeps the message of its raise).
        - gap-rising, gap-jump, grad-norm-rising are present whenever rules.drift.still_outside finds
          them: 3 of the last 4 values above the band or the own baseline's edge (surely, with a
          margin; else the rule runs).  rule_grad_norm returns only grad-norm-rising; rule_gap
          only gap-rising while that is open, and otherwise also gap-jump (open) or a new
          gap-rising, which needs an explosion (_drift_vec's test of it) or a drift_up window
          whose test may pass (_DriftMay): neither may happen where it is left out."""
        if not self.full[k] or not critical:
            return None
        still_gap, calm_gap, still_grad = self.held_arrays()
        out: dict[str, tuple[tuple[str, str], ...]] = {}
        gap_open = tuple(a for a in ("gap-rising", "gap-jump") if a in open_rules)
        if (
            gap_open
            and all(a in critical for a in gap_open)
            and still_gap[k]
            and ("gap-rising" in critical or (calm_gap[k] and self._no_drift(k, ("gap", "kl"))))
        ):
            out["rule_gap"] = tuple((a, "critical") for a in gap_open)
        if "grad-norm-rising" in critical and still_grad[k]:
            out["rule_grad_norm"] = (("grad-norm-rising", "critical"),)
        return out or None

    def held_arrays(self) -> tuple[np.ndarray, ...]:
        """_held_arrays' answers for every op, made on first use (held_rules, judge/steady.py)."""
        if self._held is None:
            self._held = _held_arrays(self.seg, self.resolved, self.rows, self.mk)
        return self._held

    def _no_drift(self, k: int, sig_ids: tuple[str, ...]) -> bool:
        """drift_up surely finds no drift at op k for these signals: no window's test may pass."""
        drift = self._drift_may()
        return not any(drift.windows(sig_id, k) for sig_id in sig_ids)

    def may(self, rule: str) -> np.ndarray:
        """Per op: the rule may fire there (its gate says maybe, or a scalar gate decides)."""
        if rule not in self.names:
            return np.ones(len(self.rows), bool)
        return self.mat[:, self.names.index(rule)] != NO

    def at(self, k: int) -> dict:
        """{rule: True/False/None (None = scalar gate), rules.COMPUTED: {rule: its conditions}
        of the rules over columns, "quiet": bool}."""
        if not self.full[k]:
            return {}
        row = self.mat[k].tolist()
        d: dict = {nm: (None if v == UNKNOWN else bool(v)) for nm, v in zip(self.names, row)}
        if self.oor is not None and self.off_policy is not None and self.no_signal is not None:
            d[COMPUTED] = {
                "rule_no_signal": self.no_signal.conditions(k),
                "rule_off_policy": self.off_policy.conditions(k),
                "rule_out_of_range": self.oor.conditions(k),
            }
        d["quiet"] = bool(self.quiet[k])
        return d


def _gate_arrays(seg: Segment, ranges, rows: np.ndarray, memo: dict) -> tuple[dict, RangeSet]:
    full = rows >= START
    end = int(rows.max()) + 1
    ids = seg.id_array()[:end]
    rs = ranges_for(seg, ranges, int(ids[rows[full][0]]))
    res: dict[str, np.ndarray] = {}
    res["rule_gap"] = _or(
        _drift_vec(seg, rs, ids, rows, "gap", True, None, memo), _drift_vec(seg, rs, ids, rows, "kl", True, None, memo)
    )
    res["rule_grad_norm"] = _drift_vec(seg, rs, ids, rows, "grad_norm", False, ABSURD.get("grad_norm"), memo)
    res["rule_length_hacking"] = _hacking_vec(seg, rs, ids, rows, memo)
    res["rule_rollout_slowdown"] = _slowdown_vec(seg, rows, memo)
    res["rule_entropy_collapse"] = _entropy_vec(seg, rows)
    res["rule_kl_ref"] = _kl_ref_vec(seg, rows)
    res["rule_entropy_high"] = _entropy_high_vec(seg, rows)
    res["rule_reward_variance"] = _reward_variance_vec(seg, rows)
    res["rule_no_update"] = _no_update_vec(seg, rows)
    return res, rs


def _held_arrays(seg: Segment, rs, rows: np.ndarray, memo: dict) -> tuple[np.ndarray, ...]:
    """Per op (Answers.held_rules): _still_outside surely finds gap or KL above; rule_gap
    surely returns no new gap-rising by an explosion (for gap and KL); _still_outside surely
    finds grad_norm above."""
    end = int(rows.max()) + 1
    ids = seg.id_array()[:end]
    full = rows >= START
    # the own baseline is the segment's first rollouts at every full op: the rule's, exactly
    ctx = RuleContext(seg, rs, int(ids[rows[full][0]]))
    ctx.ranges = rs  # (rs is ranges_for's answer on the full windows already)
    still = {sig_id: _still_sure(seg, rs, ids, rows, sig_id, ctx) for sig_id in ("gap", "kl", "grad_norm")}
    calm = full.copy()  # (and no drift window may pass: Answers.held_rules asks _DriftMay)
    for sig_id in ("gap", "kl"):
        name = metric_for(seg, BY_ID[sig_id])
        if name is None:
            continue  # the rule's series is empty: it returns nothing for this signal
        v = _vals(seg, name, end)
        b = _bounds(rs, sig_id, ids)
        calm &= ~_boom_may(_log(v), rows, _base_min(v[:BASE_ROWS]), None if b is None else _log(b[1]), None)
    return (
        full & (still["gap"] | still["kl"]),
        calm,
        full & still["grad_norm"],
    )


def _still_sure(seg: Segment, rs, ids: np.ndarray, rows: np.ndarray, sig_id: str, ctx) -> np.ndarray:
    """rules.drift.still_outside surely returns a condition for `sig_id` at each op: its last four
    values (rows all finite and positive: the rule's own last four) with 3 above the band's top,
    or 3 above the own baseline's edge in log units, each by a margin."""
    out = np.zeros(len(rows), bool)
    name = metric_for(seg, BY_ID[sig_id])
    if name is None:
        return out
    v = _vals(seg, name, len(ids))
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(v) & (v > 0)
    dense = (rows >= 3) & _dense(ok, rows, 4)
    if not dense.any():
        return out
    sel = rows[dense]
    v4 = _last4(v, sel)
    sure = np.zeros(len(sel), bool)
    b = _bounds(rs, sig_id, ids)
    if b is not None:
        h4 = _last4(np.asarray(b[1], float), sel)
        sure |= _surely_above(v4, h4).sum(axis=1) >= 3
    base = own_base(ctx, sig_id, log=True)
    if base is not None and sig_id in RHO:
        sure |= _surely_above(_log(v4), np.float64(base.centre + RHO[sig_id])).sum(axis=1) >= 3
    out[dense] = sure
    return out
