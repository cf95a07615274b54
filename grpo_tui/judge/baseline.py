"""A baseline from reference runs: the seeds' envelope per rollout, used as a run's ranges.

It is the envelope `grpo-tui calibrate SEED... -o FILE` writes (docs/health-signs.md §6: step-aligned
centre, pooled robust noise, leave-one-seed-out widening), computed on the fly from the seeds'
stores (runs.load_baseline reads the seed logs and caches the result by their file identity), so
marking runs as baseline in the overview or `check RUN --baseline SEED...` never writes a ranges file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..lines.files import InputError
from .calibration import Envelope
from .ranges import RangeSet
from .signals import SIGNALS, signal_series

MIN_SEEDS = 2


@dataclass
class Baseline:
    """The seeds' envelopes as a RangeSet, what calibrating said, and the seeds' raw curves."""

    names: list[str]
    ranges: RangeSet
    notes: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    # signal id -> [(seed name, rollout ids, values)]: the dimmed curves a chart overlays
    series: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return "baseline"


def seed_envelopes(stores) -> tuple[dict[str, Envelope], dict[str, str], list[str]]:
    """Per signal, the envelope of the seeds' current segments: exactly what `calibrate` writes
    (judge/seeds.py: domains, minimum widths). Returns (envelopes, notes, one line per signal)."""
    from .seeds import seed_envelopes as calibrated

    cal = calibrated(stores)
    return dict(cal.envelopes), dict(cal.notes), [line.strip() for line in cal.lines]


def as_ranges(envelopes: dict[str, Envelope], base: RangeSet | None = None, names: list[str] | None = None) -> RangeSet:
    """The seeds' envelopes over `base` (a --ranges file or the defaults) for what they cover."""
    base = base or RangeSet()
    return RangeSet(
        envelopes={**{k: v for k, v in base.envelopes.items() if k not in envelopes}, **envelopes},
        constant={k: v for k, v in base.constant.items() if k not in envelopes},
        sigmas={k: v for k, v in base.sigmas.items() if k not in envelopes},
        path=None,
        meta={"baseline": list(names or [])},
        use_defaults=base.use_defaults,
    )


def from_stores(stores, names: list[str], base: RangeSet | None = None) -> Baseline:
    if len(stores) < MIN_SEEDS:
        raise InputError(f"a baseline needs at least {MIN_SEEDS} seed runs of the same setup (got {len(stores)})")
    envelopes, notes, lines = seed_envelopes(stores)
    if not envelopes:
        raise InputError("no signal found in the baseline runs: nothing to compare against")
    series: dict[str, list] = {}
    for sig in SIGNALS:
        for name, st in zip(names, stores):
            ids, vals = signal_series(st.current, sig)
            if len(ids):
                series.setdefault(sig.id, []).append((name, np.array(ids), np.array(vals, float)))
    return Baseline(list(names), as_ranges(envelopes, base, names), notes, lines, series)


__all__ = ["Baseline", "seed_envelopes", "as_ranges", "from_stores", "MIN_SEEDS"]
