"""What is worth telling: notes made from a batch of alert changes or a change of run state,
filtered by `--notify-on`.  The dashboard and `tail` call these only for news (lines that
arrived after the file was opened), `check` for what it has not told before (memory.py)."""

from __future__ import annotations

import os
import socket
from functools import cache
from typing import Any

from . import alert_payload, new_criticals


@cache
def host() -> str:
    try:
        return socket.gethostname() or "?"
    except OSError:
        return "?"


def full_path(path: str | None) -> str | None:
    return os.path.abspath(path) if path and path != "-" else path


def alert_note(alert, path: str | None, *, kind: str = "alert", severity: str | None = None, message=None, state=None):
    """The alert's object (as --on-critical gets it) with its type, host and run state."""
    obj: dict[str, Any] = {"type": kind, **alert_payload(alert, full_path(path)), "host": host()}
    if severity is not None:
        obj["severity"] = severity
    if message is not None:
        obj["message"] = message
    if state is not None:
        obj["run_state"] = state
    return obj


def notes_for(changes, on: frozenset[str], path: str | None, state: str | None = None) -> list[dict[str, Any]]:
    """New criticals (raised or escalated, each once), new warnings, cleared alerts: those `on` names."""
    out: list[dict[str, Any]] = []
    crit = new_criticals(changes)
    crit_ids = {id(a) for a in crit}
    if "critical" in on:
        out += [alert_note(a, path, severity="critical", state=state) for a in crit]
    for ch in changes:
        if ch.kind == "raised" and ch.severity == "warning" and "warning" in on and id(ch.alert) not in crit_ids:
            out.append(alert_note(ch.alert, path, severity="warning", message=ch.message, state=state))
        elif ch.kind == "cleared" and "cleared" in on:
            out.append(alert_note(ch.alert, path, kind="cleared", state=state))
    return out


def state_note(st, on: frozenset[str], path: str | None) -> dict[str, Any] | None:
    """The run finished (or crashed, or ended) or went quiet, when `on` asks for it."""
    name = getattr(st, "name", None)
    if (name in ("finished", "ended") and "finished" in on) or (name == "quiet" and "quiet" in on):
        return {
            "type": "state",
            "state": st.label if name == "quiet" else name,
            "finished_by": st.finished_by,
            "note": st.note,
            "path": full_path(path),
            "host": host(),
        }
    return None


def trial_note() -> dict[str, Any]:
    return {
        "type": "test",
        "message": "test message from grpo-tui: notifications reach you here",
        "host": host(),
        "path": None,
    }
