"""`grpo-tui export PATH [--format csv|json] [--axis rollout|step] [-o FILE]`."""

from __future__ import annotations

import sys

from ..export import render, render_to
from ..lines.files import InputError
from ..output import atomic_open, check_output_path, safe_text
from ..pipeline import judge_path, one_run
from ..process import spare


def run(args) -> int:
    if len(args.paths) > 1 or not one_run(args.paths[0]):
        from .export_runs import run as run_many  # several runs: one table, a `run` column

        return run_many(args)
    args.path = args.paths[0]
    if args.output:  # before reading: a refused path should not cost a parse of a big log
        check_output_path(args.output, [args.path])
    loaded = judge_path(args.path, judging=False, rows_only=True)  # (no time, no event in its rows)
    spare(loaded)
    c = loaded.parser.counts
    if not any(seg.has_data for seg in loaded.store.segments):
        # An empty, binary or metric-free file is almost always the wrong path: say so.
        raise InputError(
            f"{safe_text(args.path)}: no metric lines found ({c.lines} lines read, {c.unreadable} unreadable)"
        )
    if args.output:  # (written as it is made: the file appears only once it is whole)
        with atomic_open(args.output) as fh:
            render_to(fh, loaded.store, args.format, args.axis)
    else:  # (made whole first: an error midway prints nothing)
        sys.stdout.write(render(loaded.store, args.format, args.axis))
    if loaded.input is not None:
        recs = sum(seg.records for seg in loaded.store.segments)
        print(f"grpo-tui export: {recs} metric records from {loaded.input.label}", file=sys.stderr)
        return 0
    print(
        f"grpo-tui export: {c.lines} lines, {c.records} metric records, "
        f"{c.unreadable} unreadable lines, {c.cut_records} cut records",
        file=sys.stderr,
    )
    return 0
