"""`check --notify`'s memory: what it already told about each log, so a cron line notifies only
what is new since the last `check` of the same files (a cron job is then a complete pager).

State: `$XDG_STATE_HOME/grpo-tui/notified.json` (default ~/.local/state), written atomically:
  {"version": 1, "files": {"<real path>": {"id": [dev, inode],
                                           "told": {"<target hash>": ["<key>", ...]}}}}
A key is `rule|signal|onset rollout|severity` (an escalation is news), `...|cleared`, or
`state|finished` / `state|quiet`.  Targets are keyed by a hash of the URL, never the URL (a
secret).  A file with another identity (replaced, rotated) starts afresh.  What a target
failed to get stays untold and is sent again next time."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from ..output import write_text_atomic, xdg_dir
from .deliver import Notifier
from .notes import alert_note, state_note
from .targets import Target

VERSION = 1


def state_path(environ=None) -> str:
    return os.path.join(xdg_dir("XDG_STATE_HOME", os.path.join(".local", "state"), environ), "notified.json")


def alert_key(a) -> str:
    return f"{a.rule}|{a.signal or ''}|{a.rollout}|{a.severity}"


def _target_key(t: Target) -> str:
    return hashlib.sha256(t.url.encode("utf-8")).hexdigest()[:16]


def _identity(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


class Memory:
    def __init__(self, path: str) -> None:
        self.path = path
        self.problem: str | None = None
        self.files: dict[str, Any] = {}
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            if isinstance(doc, dict) and doc.get("version") == VERSION and isinstance(doc.get("files"), dict):
                self.files = doc["files"]
            else:
                self.problem = f"{path}: not a grpo-tui state file; starting afresh"
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            self.problem = f"{path}: unreadable ({type(exc).__name__}); starting afresh"

    def _entry(self, path: str) -> dict[str, Any]:
        real = os.path.realpath(path)
        ident = _identity(path)
        entry = self.files.get(real)
        if not isinstance(entry, dict) or entry.get("id") != ident or not isinstance(entry.get("told"), dict):
            entry = self.files[real] = {"id": ident, "told": {}}
        return entry

    def news(self, path: str, report, on: frozenset[str], target: Target) -> tuple[list[dict], set[str]]:
        """(notes not yet told to `target` about this run, the keys to remember once told)."""
        told = set(self._entry(path)["told"].get(_target_key(target), []))
        st = report.run_state
        notes: list[dict] = []
        keys: set[str] = set()
        for a in sorted(report.alerts, key=lambda a: a.seq):
            if a.severity not in on:
                continue
            key = alert_key(a)
            gone = a.cleared_at is not None
            if key not in told:
                notes.append(alert_note(a, path, severity=a.severity, state=st.label))
                keys.add(key)
                if gone:
                    keys.add(key + "|cleared")  # (its note says it cleared)
            elif gone and "cleared" in on and key + "|cleared" not in told:
                notes.append(alert_note(a, path, kind="cleared", state=st.label))
                keys.add(key + "|cleared")
        name = "finished" if st.name in ("finished", "ended") else st.name
        if f"state|{name}" not in told:
            note = state_note(st, on, path)
            if note is not None:
                notes.append(note)
                keys.add(f"state|{name}")
        return notes, keys

    def remember(self, path: str, target: Target, keys: set[str], live: bool) -> None:
        told = self._entry(path)["told"]
        h = _target_key(target)
        now = set(told.get(h, [])) | keys
        if live:
            now.discard("state|quiet")  # it may go quiet again: that is news again
        told[h] = sorted(now)

    def save(self) -> None:
        """Atomically; entries of logs that no longer exist are dropped."""
        self.files = {p: e for p, e in self.files.items() if os.path.exists(p)}
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        write_text_atomic(self.path, json.dumps({"version": VERSION, "files": self.files}, indent=1) + "\n")


def tell_news(runs: list[tuple[str, Any]], targets: list[Target], on: frozenset[str]) -> list[str]:
    """Send each target one message with what is new in these runs (path, RunReport or None);
    remember what was delivered.  Returns lines for stderr (failures, state problems)."""
    from ..lines.files import InputError

    mem = Memory(state_path())
    said = [mem.problem] if mem.problem else []
    sender = Notifier(targets)
    for t in targets:
        notes: list[dict] = []
        todo: list[tuple[str, set[str], bool]] = []
        for path, report in runs:
            if report is None:
                continue
            got, keys = mem.news(path, report, on, t)
            notes += got
            todo.append((path, keys, report.run_state.name == "live"))
        if notes:
            out = sender.send(t, notes, len(notes), 0)
            if not out.ok:
                said.append(out.words())
                continue
        for path, keys, live in todo:
            mem.remember(path, t, keys, live)
    try:
        mem.save()
    except (OSError, InputError) as exc:
        said.append(f"cannot save what was notified: {exc}")
    return said
