"""Do the manual's default ranges fit this run? (pure; issue #10, "setup awareness")

The defaults come from one setup: Qwen3-0.6B on GSM8K, 32 prompts x 8 answers, a 1,024-token
cap (docs/contracts.md §4).  On any other setup several signals sit outside them from the first
rollout on, and range warnings then say nothing about health.  `defaults_fit` decides from
what the run itself shows:

- the launch line names another model, another answer cap or other prompt data -> no;
- otherwise, the first rollouts (the mean of up to five) lie clearly outside the manual's
  early ranges on several independent signals (gap and KL count once: they measure the same
  mismatch) -> no.  Two are enough when the launch line says nothing, three when it names the
  manual's own setup (a run of that setup broken from rollout 0 is rarer than another setup).

Only the first rollouts are read, so the answer settles after five rollouts and never flips
later because a healthy run drifts or a broken one leaves its ranges.  When the defaults don't
fit, range warnings from the defaults are not raised; ranges from a file still apply, and the
trend and event rules judge against the run's own early baseline.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..store.metric_store import Segment
from .signals import BY_ID, first_rows, signal_at_rows

FIRST = 5  # rollouts whose mean is compared with the early ranges
MANUAL_MODEL = "qwen3-0.6b"
MANUAL_CAP = 1024
MANUAL_DATA = "gsm8k"
# independent views of the run: gap and KL are one mismatch
GROUPS = (("reward",), ("length",), ("truncated",), ("gap", "kl"), ("grad_norm",))
LOG_MARGIN = math.log(1.25)  # log signals: clearly outside = beyond x1.25 of the edge
LIN_MARGIN = 0.25  # linear signals: beyond a quarter of the range's width
# what defaults_fit reads (rules.ranges_for keys its memo on exactly these)
FIT_FLAGS = ("hf-checkpoint", "load", "ref-load", "rollout-max-response-len", "prompt-data")
FIT_SIGNALS = tuple(s for g in GROUPS for s in g)

__all__ = ["defaults_fit", "launch_differs"]


def _flag(flags: dict, *names: str) -> str | None:
    for name in names:
        v = flags.get(name)
        if isinstance(v, str) and v:
            return v
    return None


def _base(path: str) -> str:
    parts = [p for p in re.split(r"[\\/]", path) if p]
    return parts[-1] if parts else path


def launch_differs(flags: dict) -> str | None:
    """What the launch line names that the manual's setup is not (model, cap, data), or None."""
    out = []
    model = _flag(flags, "hf-checkpoint", "load", "ref-load")
    if model is not None:
        name = _base(model)
        if MANUAL_MODEL not in name.lower().replace("_", "-"):
            out.append(f"model {name}")
    cap = _flag(flags, "rollout-max-response-len")
    if cap is not None:
        try:
            if int(float(cap)) != MANUAL_CAP:
                out.append(f"answer cap {int(float(cap))} tokens")
        except ValueError:
            pass
    data = _flag(flags, "prompt-data")
    if data is not None and MANUAL_DATA not in data.lower():
        parts = [q for q in re.split(r"[\\/]", data) if q]
        out.append("data " + "/".join(parts[-2:]))
    return ", ".join(out) or None


def _named_manual(flags: dict) -> bool:
    model = _flag(flags, "hf-checkpoint", "load", "ref-load")
    return model is not None and launch_differs(flags) is None


def _outside(sig_id: str, value: float, lo: float, hi: float) -> bool:
    if BY_ID[sig_id].log:
        if value <= 0 or lo <= 0:
            return False
        v, a, b = math.log(value), math.log(lo), math.log(hi)
        return v > b + LOG_MARGIN or v < a - LOG_MARGIN
    w = LIN_MARGIN * (hi - lo)
    return value > hi + w or value < lo - w


def defaults_fit(seg: Segment, ranges=None, upto: int | None = None) -> tuple[bool, str]:
    """(True, "") when the manual's default ranges can judge this run, else (False, why).

    `ranges` (a RangeSet) only matters for which signals still use a default range: a signal
    with a range from a file is not counted.  `upto` is the rollout being judged (default:
    the newest), so a replay gives the same answer at each rollout as the live run did.
    """
    if seg.framework != "miles":
        return False, f"a {seg.framework} run: the manual's ranges are Miles/slime's"
    differs = launch_differs(seg.flags)
    if differs:
        return False, f"the launch line names {differs} (defaults: Qwen3-0.6B, GSM8K, 1,024-token cap)"
    rows = first_rows(seg, FIRST, upto)
    if not len(rows):
        return True, ""
    out = []
    for group in GROUPS:
        for sig_id in group:
            if ranges is not None and ranges.source(sig_id) != "default":
                continue
            sig = BY_ID[sig_id]
            if sig.early is None:
                continue
            _, vals = signal_at_rows(seg, sig, rows)
            vals = vals[np.isfinite(vals)]
            if not len(vals):
                continue
            m = float(np.mean(vals))
            lo, hi = sig.early
            if _outside(sig_id, m, lo, hi):
                out.append(f"{sig.label} {sig.fmt.format(m)} (range {sig.fmt.format(lo)}-{sig.fmt.format(hi)})")
                break
    need = 3 if _named_manual(seg.flags) else 2
    if len(out) >= need:
        return False, "the first rollouts differ from the manual's setup: " + ", ".join(out)
    return True, ""
