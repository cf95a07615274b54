"""`grpo-tui export A B [DIR ...]`: several runs as one table with a `run` column first.

Each run goes through the one pipeline (store only) and `export.rows`, so a run's rows are the
ones `export RUN` gives, with its name in front. Runs with no metric line are skipped with a
warning (a folder may hold other logs); none at all is an error.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile

from ..export import rows, write_csv, write_json
from ..lines.files import InputError
from ..pipeline import judge_path
from ..runs import discover, display_names


def run(args) -> int:
    paths = discover(args.paths, getattr(args, "recursive", False))
    if not paths:
        raise InputError(", ".join(args.paths) + ": no *.log files")
    names = display_names(paths, [p for p in args.paths if os.path.isdir(p)])
    data: list[dict] = []
    done = 0
    for p in paths:
        try:
            loaded = judge_path(p, judging=False)
        except InputError as exc:
            print(f"grpo-tui export: skipped {exc}", file=sys.stderr)
            continue
        if not any(seg.has_data for seg in loaded.store.segments):
            print(f"grpo-tui export: skipped {p}: no metric lines found", file=sys.stderr)
            continue
        data.extend({"run": names[p], **r} for r in rows(loaded.store, args.axis))
        done += 1
    if not done:
        raise InputError("no run with metric lines to export")
    buf = io.StringIO()
    (write_json if args.format == "json" else write_csv)(data, buf)
    text = buf.getvalue()
    if args.output:
        _write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    print(f"grpo-tui export: {done} runs, {len(data)} rows", file=sys.stderr)
    return 0


def _write_atomic(path: str, text: str) -> None:
    """The whole table or nothing: a temporary file in the same folder, then a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".grpo-tui-export-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
