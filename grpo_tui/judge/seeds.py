"""Healthy ranges from the user's own seed runs, and a check that the seeds are healthy.

`calibrate` used to trust its seeds: a broken run given as a seed widened every band around its
break, and `check --ranges` then called that very break OK.  Here each seed is judged twice
before its numbers are used:

1. by the rule engine on its own (default ranges where they fit it, its own baseline always):
   a critical alert is a broken-run sign;
2. against bands calibrated from the other seeds (leave one out), again with the rule engine,
   and point by point: a critical alert, or most of its points outside the others' bands on
   some signal, means the seeds disagree and that seed is named.

Bands respect each signal's domain (ratios in [0, 1], log signals > 0, counts >= 0) and get a
minimum width from the measurement's own noise: a share of B answers cannot be known better
than sqrt(p (1 - p) / B), nor a count better than one group.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..store.metric_store import MetricStore
from .calibration import Envelope, calibrate_with_check
from .ranges import RangeSet
from .signals import SIGNALS, Signal, groups_of, signal_series

MOSTLY_OUTSIDE = 0.5  # a held-out seed with more of its points outside the others' bands is named
DEFAULT_ANSWERS = 256  # answers per rollout when the launch line does not say

__all__ = ["SeedProblem", "Calibrated", "seed_envelopes", "check_seeds"]


@dataclass
class SeedProblem:
    seed: int  # index into the paths
    path: str
    why: str
    # a sign `check` calls critical (alone, or against the other seeds' bands): the seed is refused;
    # else a note (its points mostly outside the others' band: the band was widened for it)
    critical: bool = True


@dataclass
class Calibrated:
    envelopes: dict[str, Envelope] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # one per signal, for stderr
    outside: dict[str, list[dict]] = field(default_factory=dict)  # signal -> leave-one-out report per seed


def _flag_int(flags: dict, name: str) -> int | None:
    try:
        v = int(float(flags.get(name)))  # type: ignore[arg-type]  # (None: TypeError)
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None


def _answers(store: MetricStore) -> int:
    f = store.current.flags
    g, n = _flag_int(f, "rollout-batch-size"), _flag_int(f, "n-samples-per-prompt")
    return g * n if g and n else DEFAULT_ANSWERS


def _floor(sig: Signal, series: list[tuple[np.ndarray, np.ndarray]], stores: list[MetricStore], log: bool) -> float:
    """Measurement noise of one rollout's value: the least width a band may have."""
    allv = np.concatenate([v for _, v in series])
    med = float(np.median(allv)) if allv.size else 0.0
    b = min(_answers(st) for st in stores)
    if log:
        return 0.02  # 2 % (log units): a rate or a time is never exact
    if sig.id in ("reward", "truncated"):
        p = min(max(abs(med), 1.0 / b), 1.0 - 1.0 / b) if 0.0 <= med <= 1.0 else 0.5
        return max(math.sqrt(p * (1 - p) / b), 1.0 / b)
    if sig.id == "zero_std":
        gs = [groups_of(st.current) or 0 for st in stores]
        return 1.0 / max(gs) if all(g > 1 for g in gs) else (0.02 if all(gs) else 1.0)
    if sig.id == "length":
        return max(0.5 * abs(med) / math.sqrt(b), 1.0)
    return 1e-4


def _domain(sig: Signal, series) -> tuple[float | None, float | None]:
    lo, hi = sig.domain
    if sig.id == "reward":
        allv = np.concatenate([v for _, v in series])
        if allv.size and float(allv.min()) >= 0.0:
            lo = 0.0
            if float(allv.max()) <= 1.0:
                hi = 1.0
    return lo, hi


def seed_envelopes(stores: list[MetricStore]) -> Calibrated:
    """Envelopes for every signal at least 2 seeds log (docs/health-signs.md §6)."""
    out = Calibrated()
    for sig in SIGNALS:
        series = []
        for st in stores:
            ids, vals = signal_series(st.current, sig)
            ok = np.isfinite(vals)
            if ok.sum() >= 3:
                series.append((ids[ok].astype(float), vals[ok]))
        if len(series) < 2:
            out.lines.append(f"  {sig.id:<13} skipped (fewer than 2 seeds log it)")
            continue
        kind = "flat" if sig.flat else "trending"
        allv = np.concatenate([v for _, v in series])
        # log scale when (almost) every value can be logged; the rest are gaps
        log = sig.log and allv.size > 0 and float(np.mean(allv > 0)) >= 0.9
        floor = _floor(sig, series, stores, log)
        env, widened, report = calibrate_with_check(
            series, kind, log=log, abs_floor=floor, domain=_domain(sig, series), zero_band=sig.id == "clipfrac"
        )
        out.envelopes[sig.id] = env
        out.outside[sig.id] = report["seeds"]
        frac = report.get("max_frac_outside", 0.0)
        line = (
            f"  {sig.id:<13} {kind:<8} sigma0={env.sigma0:.3g}{' (log)' if env.log else ''} "
            f"held-out points outside: {frac:.0%}"
        )
        if widened:
            line += f"  -> margin widened to {env.margin:g} sigma0 (a held-out seed stayed outside)"
            out.notes[sig.id] = "margin widened by the leave-one-seed-out check"
        out.lines.append(line)
    return out


def _criticals(report) -> list:
    return [a for a in report.alerts if a.severity == "critical"]


def check_seeds(
    paths: list[str], stores: list[MetricStore], reports: list, judge: Callable[[str, RangeSet], object]
) -> list[SeedProblem]:
    """Name the seeds that are not healthy runs of one setup.

    `reports` are the engine reports of each seed judged alone; `judge(path, ranges)` judges a
    seed again against other ranges and returns its report.
    """
    problems: list[SeedProblem] = []
    for i, (path, rep) in enumerate(zip(paths, reports)):
        for a in _criticals(rep):
            problems.append(
                SeedProblem(i, path, f"shows a broken-run sign: {a.rule} from rollout {a.rollout}: {a.message}")
            )
            break
    if len(stores) < 2:
        return problems
    for i, path in enumerate(paths):
        if any(p.seed == i for p in problems):
            continue
        others = stores[:i] + stores[i + 1 :]
        cal = seed_envelopes(others) if len(others) >= 2 else _one_seed_envelopes(others[0], stores[i])
        crit = _criticals(judge(path, RangeSet(envelopes=cal.envelopes, path="(the other seeds)")))
        if crit:
            a = crit[0]
            problems.append(
                SeedProblem(
                    i, path, f"judged against the other seeds' bands: {a.rule} from rollout {a.rollout}: {a.message}"
                )
            )
    full = seed_envelopes(stores)
    for sig_id, per_seed in full.outside.items():
        for r in per_seed:
            i = r["held_out"]
            if r["frac_outside"] > MOSTLY_OUTSIDE and not any(
                p.seed == i and p.why.startswith(f"{sig_id}:") for p in problems
            ):
                problems.append(
                    SeedProblem(
                        i,
                        paths[i],
                        f"{sig_id}: {r['frac_outside']:.0%} of its points lie outside the band of the other seed(s)",
                        critical=False,
                    )
                )
    return problems


def _one_seed_envelopes(other: MetricStore, this: MetricStore) -> Calibrated:
    """With two seeds, the other seed's band alone (calibrate needs two: it is given twice,
    which keeps its noise scale and does not narrow the band)."""
    return seed_envelopes([other, other])
