"""`grpo-tui calibrate A B [C ...] -o ranges.toml [--force]`: healthy ranges from the user's own seeds.

docs/health-signs.md §6: step-aligned centre, pooled robust noise, widened envelope, and a
leave-one-seed-out check that widens (and says so) any margin a held-out seed would break.
A seed with a broken-run sign, or one that lies mostly outside the others, is named and
nothing is written (exit 1) unless --force (judge/seeds.py).
"""

from __future__ import annotations

import os
import sys
import time

from ..judge.ranges import dump_ranges
from ..judge.seeds import check_seeds, seed_envelopes
from ..lines.files import InputError
from ..output import check_output_path, safe_text, write_text_atomic
from ..pipeline import judge_path
from ..process import spare


def run(args) -> int:
    if len(args.paths) < 2:
        raise InputError("calibrate needs at least 2 seed runs of the same config")
    check_output_path(args.output, args.paths)
    judged = [judge_path(p) for p in args.paths]
    spare(judged)
    stores = [j.store for j in judged]
    print(f"calibrating from {len(stores)} seeds:", file=sys.stderr)
    cal = seed_envelopes(stores)
    envelopes, notes = cal.envelopes, cal.notes
    for line in cal.lines:
        print(line, file=sys.stderr)
    if not envelopes:
        raise InputError("no signal found in the seed logs: nothing to calibrate")
    # Seeds must be healthy runs of one setup: the rule engine judges each alone and against the others.
    problems = check_seeds(
        args.paths, stores, [j.report() for j in judged], lambda path, ranges: judge_path(path, ranges).report()
    )
    for p in problems:
        print(f"  {'seed' if p.critical else 'note: seed'} {os.path.basename(p.path)} {p.why}", file=sys.stderr)
    # refused only for a sign `check` calls critical; seeds that merely sit apart widen the bands
    refused = {p.seed for p in problems if p.critical}
    if refused and not getattr(args, "force", False):
        print(
            f"not written: {len(refused)} seed(s) are not healthy runs of one setup; "
            "drop them, or write the ranges anyway with --force",
            file=sys.stderr,
        )
        return 1
    meta = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seeds": [os.path.basename(p) for p in args.paths],
        "rollouts": [len(st.current.ids) for st in stores],
        "steps_per_rollout": [st.current.steps_per_rollout for st in stores],
    }
    text = dump_ranges(envelopes, meta, notes)
    write_text_atomic(args.output, text, newline=None)
    out = safe_text(args.output)
    print(f"wrote {out} ({len(envelopes)} signals); use it with --ranges {out}", file=sys.stderr)
    return 0
