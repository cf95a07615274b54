"""Tell a user who looked away that the run just broke: a terminal bell, a desktop notification
escape (OSC 9 and OSC 777: terminals that don't know them ignore them), and `--on-critical CMD`
(run with the alert as JSON on stdin, for Slack/webhook scripts). Core: no Textual here."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f;]")


def osc_notification(title: str, body: str) -> str:
    """BEL + OSC 9 (iTerm2, Windows Terminal, kitty...) + OSC 777 (VTE, foot...).

    Log text never reaches the terminal raw: control characters (and ';', the OSC field
    separator) are replaced."""
    t = _UNSAFE.sub(" ", title)[:80]
    b = _UNSAFE.sub(" ", body)[:200]
    return f"\a\x1b]9;{t}: {b}\x07\x1b]777;notify;{t};{b}\x07"


def alert_payload(alert, path: str | None) -> dict[str, Any]:
    obj = alert.to_json()
    obj["path"] = path
    return obj


class Hook:
    """Runs CMD once per new critical alert, the alert's JSON on its stdin; never blocks the
    caller (the child is reaped on the next call) and never raises."""

    def __init__(self, cmd: str | None) -> None:
        import shlex  # (here: every command imports this module; few run a hook)

        self.argv = shlex.split(cmd) if cmd else None
        self.children: list[subprocess.Popen] = []
        self.errors = 0

    def __call__(self, payload: dict[str, Any]) -> None:
        self.children = [c for c in self.children if c.poll() is None]
        if not self.argv:
            return
        import subprocess

        try:
            child = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            assert child.stdin is not None
            child.stdin.write(json.dumps(payload, default=str).encode() + b"\n")
            child.stdin.close()
            self.children.append(child)
        except (OSError, ValueError, BrokenPipeError):
            self.errors += 1


def new_criticals(changes) -> list:
    """Alerts that just became critical (raised critical, or escalated to critical): each once,
    also when it was raised as a warning and escalated in the same batch."""
    return [ch.alert for ch in changes if ch.kind in ("raised", "escalated") and ch.severity == "critical"]
