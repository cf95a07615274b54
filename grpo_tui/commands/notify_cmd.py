"""`grpo-tui notify --test [URL ...] [--notify-format F]`: send a test message to each URL (or to
the configured targets) through the same Notifier the watchers use, and print the answer.
Exit 0 when every target answered 2xx, else 1 with one line per failure on stderr."""

from __future__ import annotations

import sys

from ..lines.files import InputError
from ..notify.deliver import Notifier
from ..notify.notes import trial_note


def run(args) -> int:
    targets = list(getattr(args, "notify_targets", None) or [])
    if not targets:
        raise InputError(
            "no URL to test: give one (grpo-tui notify --test URL), or set GRPO_TUI_NOTIFY or [notify] urls"
        )
    failed = 0
    for out in Notifier(targets).send_now([trial_note()]):
        if out.ok:
            print(f"{out.target.shown} ({out.target.format}): HTTP {out.status} ok", flush=True)
        else:
            failed += 1
            why = out.error or f"HTTP {out.status}"
            tries = f" after {out.tries} tries" if out.tries > 1 else ""
            print(f"grpo-tui notify: {out.target.shown} ({out.target.format}): failed: {why}{tries}", file=sys.stderr)
    return 1 if failed else 0
