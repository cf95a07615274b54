"""`grpo-tui [PATH]`: start the Textual dashboard (Textual is imported only here, lazily)."""

from __future__ import annotations

import os
import sys

from ..lines.files import InputError


def run(args) -> int:
    from ..judge.ranges import RangesError, load_ranges

    try:
        ranges = load_ranges(args.ranges) if getattr(args, "ranges", None) else None
    except RangesError as exc:
        raise InputError(str(exc)) from None
    paths = list(getattr(args, "paths", None) or [])
    path = paths[0] if paths else None
    replay = getattr(args, "replay", None)
    if replay is not None:
        if path is None:
            raise InputError("--replay needs a PATH")
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file")
        if replay < 0:
            raise InputError("--replay SPEED must be >= 0")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError("the dashboard needs a terminal (stdin and stdout); for scripts use "
                         "`grpo-tui check PATH` or `grpo-tui tail PATH`")
    from ..ui.app import GrpoApp

    app = GrpoApp(path, live=True, replay=replay, theme=getattr(args, "theme", None), ranges=ranges,
                  ranges_label=getattr(args, "ranges", None), notify=not getattr(args, "no_notify", False),
                  on_critical=getattr(args, "on_critical", None))
    app.run()
    return app.return_code or 0
