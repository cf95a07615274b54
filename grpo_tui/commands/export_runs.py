"""`grpo-tui export A B [DIR ...]`: several runs as one table with a `run` column first.

Each run goes through the one pipeline (store only) and `export.rows`, so a run's rows are the
ones `export RUN` gives, with its name in front. Runs with no metric line are skipped with a
warning (a folder may hold other logs); none at all is an error. `-o` is refused onto an input
log or into its folder (--force), and written atomically.
"""

from __future__ import annotations

import io
import os
import sys

from ..export import rows, write_csv, write_json
from ..lines.files import InputError
from ..output import check_output_path, safe_text, write_text_atomic
from ..pipeline import judge_path
from ..runs import discover, display_names


def run(args) -> int:
    paths = discover(args.paths, getattr(args, "recursive", False))
    if not paths:
        raise InputError(", ".join(args.paths) + ": no *.log or *.jsonl files")
    if args.output:  # before reading: never onto an input log or into its folder (--force)
        check_output_path(args.output, paths)
    names = display_names(paths, [p for p in args.paths if os.path.isdir(p)])
    data: list[dict] = []
    done = 0
    for p in paths:
        try:
            loaded = judge_path(p, judging=False, rows_only=True)
        except InputError as exc:
            print(f"grpo-tui export: skipped {safe_text(exc)}", file=sys.stderr)
            continue
        if not any(seg.has_data for seg in loaded.store.segments):
            print(f"grpo-tui export: skipped {safe_text(p)}: no metric lines found", file=sys.stderr)
            continue
        data.extend({"run": names[p], **r} for r in rows(loaded.store, args.axis))
        done += 1
    if not done:
        raise InputError("no run with metric lines to export")
    buf = io.StringIO()
    (write_json if args.format == "json" else write_csv)(data, buf)
    text = buf.getvalue()
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    print(f"grpo-tui export: {done} runs, {len(data)} rows", file=sys.stderr)
    return 0
