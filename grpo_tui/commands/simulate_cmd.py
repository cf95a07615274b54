"""`grpo-tui simulate [--scenario NAME] [--setup NAME] [--rollouts N] [--seed S] [--rate SECONDS] [-o FILE]`."""

from __future__ import annotations

import sys

from ..lines.files import InputError
from ..output import atomic_open, safe_text
from ..simulate import FORMATS, SCENARIOS, SETUPS, generate, onset_of, write_log


def run(args) -> int:
    if args.list:
        print("scenarios:")
        for name, what in SCENARIOS.items():
            print(f"  {name:<18} {what}")
        print("setups (--setup):")
        for name, su in SETUPS.items():
            print(f"  {name:<18} {su.what}")
        return 0
    if args.scenario not in SCENARIOS:
        raise InputError(f"unknown scenario `{args.scenario}` (known: {', '.join(SCENARIOS)})")
    setup = getattr(args, "setup", None) or "manual"
    if setup not in SETUPS:
        raise InputError(f"unknown setup `{setup}` (known: {', '.join(SETUPS)})")
    k = args.steps_per_rollout if args.steps_per_rollout is not None else SETUPS[setup].steps_per_rollout
    if args.rollouts < 1 or k < 1:
        raise InputError("--rollouts and --steps-per-rollout must be at least 1")
    kw = dict(steps_per_rollout=k, fmt=args.fmt, setup=setup)
    if args.output and args.rate:
        # A live log must grow in place, so a reader can follow it: no temporary file here.
        try:
            write_log(args.output, args.scenario, args.rollouts, args.seed, rate=args.rate, **kw)
        except OSError as exc:
            raise InputError(f"{args.output}: cannot write: {exc.strerror or exc}") from None
    elif args.output:
        with atomic_open(args.output) as fh:
            for _, line in generate(args.scenario, args.rollouts, args.seed, **kw):
                fh.write(line + "\n")
    if args.output:
        onset = onset_of(args.scenario, args.rollouts)
        print(
            f"grpo-tui simulate: wrote {safe_text(args.output)} ({args.scenario}, setup {setup}, {args.rollouts} rollouts, "
            f"seed {args.seed}" + (f", break at rollout {onset}" if onset is not None else "") + ")",
            file=sys.stderr,
        )
        return 0
    if args.rate:
        raise InputError("--rate needs -o FILE (a live log is a file that grows)")
    out = sys.stdout
    for _, line in generate(args.scenario, args.rollouts, args.seed, **kw):
        out.write(line + "\n")
    return 0


__all__ = ["run", "FORMATS"]
