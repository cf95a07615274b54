"""`grpo-tui calibrate A B [C ...] -o ranges.toml`: healthy ranges from the user's own seeds.

grpo-health.md §3.3: step-aligned centre, pooled robust noise, widened envelope, and a
leave-one-seed-out check that widens (and says so) any margin a held-out seed would break.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from ..judge.calibration import calibrate_with_check
from ..lines.files import InputError
from ..judge.ranges import dump_ranges
from ..output import check_output_path, safe_text, write_text_atomic
from ..judge.signals import SIGNALS, signal_series
from ..pipeline import judge_path


def run(args) -> int:
    if len(args.paths) < 2:
        raise InputError("calibrate needs at least 2 seed runs of the same config")
    check_output_path(args.output, args.paths, force=getattr(args, "force", False))
    stores = [judge_path(p).store for p in args.paths]
    envelopes, notes = {}, {}
    print(f"calibrating from {len(stores)} seeds:", file=sys.stderr)
    for sig in SIGNALS:
        series = []
        for st in stores:
            ids, vals = signal_series(st.current, sig)
            ok = np.isfinite(vals)
            if ok.sum() >= 3:
                series.append((ids[ok].astype(float), vals[ok]))
        if len(series) < 2:
            print(f"  {sig.id:<13} skipped (fewer than 2 seeds log it)", file=sys.stderr)
            continue
        kind = "flat" if sig.flat else "trending"
        log = sig.log and all(np.all(v > 0) for _, v in series)
        env, widened, report = calibrate_with_check(series, kind, log=log)
        envelopes[sig.id] = env
        frac = report.get("max_frac_outside", 0.0)
        line = (f"  {sig.id:<13} {kind:<8} sigma0={env.sigma0:.3g}{' (log)' if env.log else ''} "
                f"held-out points outside: {frac:.0%}")
        if widened:
            line += f"  -> margin widened to {env.margin:g} sigma0 (a held-out seed stayed outside)"
            notes[sig.id] = "margin widened by the leave-one-seed-out check"
        print(line, file=sys.stderr)
    if not envelopes:
        raise InputError("no signal found in the seed logs: nothing to calibrate")
    meta = {"created": time.strftime("%Y-%m-%d %H:%M:%S"), "seeds": [os.path.basename(p) for p in args.paths],
            "rollouts": [len(st.current.ids) for st in stores],
            "steps_per_rollout": [st.current.steps_per_rollout for st in stores]}
    text = dump_ranges(envelopes, meta, notes)
    write_text_atomic(args.output, text, newline=None)
    out = safe_text(args.output)
    print(f"wrote {out} ({len(envelopes)} signals); use it with --ranges {out}", file=sys.stderr)
    return 0
