"""`grpo-tui [PATH ...]`: start the Textual dashboard (Textual is imported in run(), lazily).

One file: its dashboard (`--baseline SEED...`: judged against the seeds' envelope). A folder or
several paths: the runs overview."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ..lines.files import InputError

if TYPE_CHECKING:
    from textual.app import App


def run(args) -> int:
    from ..judge.ranges import RangesError, load_ranges

    try:
        ranges = load_ranges(args.ranges) if getattr(args, "ranges", None) else None
    except RangesError as exc:
        raise InputError(str(exc)) from None
    from ..pipeline import one_run

    paths = list(getattr(args, "paths", None) or [])
    many = len(paths) > 1 or (len(paths) == 1 and not one_run(paths[0]))
    path = paths[0] if paths else None
    replay = getattr(args, "replay", None)
    if replay is not None:
        if path is None:
            raise InputError("--replay needs a PATH")
        if many:
            raise InputError("--replay plays one log file, not a folder or several runs")
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file")
        if replay < 0:
            raise InputError("--replay SPEED must be >= 0")
    seeds = list(getattr(args, "baseline", None) or [])
    if seeds and path is None:
        raise InputError("--baseline needs the run(s) to judge: grpo-tui RUN --baseline SEED SEED")
    web = "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")  # `grpo-tui serve`: a browser tab, no tty
    if not web and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError(
            "the dashboard needs a terminal (stdin and stdout); for scripts use "
            "`grpo-tui check PATH` or `grpo-tui tail PATH`"
        )
    alerting: dict[str, Any] = dict(
        notify=not getattr(args, "no_notify", False),
        on_critical=getattr(args, "on_critical", None),
        notify_targets=list(getattr(args, "notify_targets", None) or []),
    )
    if getattr(args, "notify_on", None):
        alerting["notify_on"] = args.notify_on
    baseline = None
    if seeds:
        from ..runs import load_baseline

        print(f"grpo-tui: building the baseline from {len(seeds)} seeds…", file=sys.stderr)
        baseline = load_baseline(seeds, ranges if getattr(args, "ranges", None) else None)
    app: App
    if many:
        from .runs_app import RunsApp

        app = RunsApp(
            paths,
            recursive=getattr(args, "recursive", False),
            theme=getattr(args, "theme", None),
            ranges=ranges,
            ranges_label=getattr(args, "ranges", None),
            baseline=baseline,
            baseline_paths=seeds,
            **alerting,
        )
    elif baseline is not None:
        from .runs_app import BaselineApp

        app = BaselineApp(
            path, baseline=baseline, live=True, replay=replay, theme=getattr(args, "theme", None), **alerting
        )
    else:
        from .app import GrpoApp

        app = GrpoApp(
            path,
            live=True,
            replay=replay,
            theme=getattr(args, "theme", None),
            ranges=ranges,
            ranges_label=getattr(args, "ranges", None),
            **alerting,
        )
    app.run()
    return app.return_code or 0
