"""One notification batch as each service wants it: Slack (text + blocks), Discord (content +
embeds), ntfy (a plain body with Title/Priority/Tags headers) or our own JSON alert object.

A batch is a list of notes (alert, cleared, state or test objects, each with its host and log
path) that arrived together; it is one message with a count, short enough to read on a phone.
Log text is neutralised here: no control characters, Slack's `<!channel>` and Discord's
`@everyone` can't ping anyone."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from ..output import safe_text

SHOWN = 5  # notes listed one by one in a message; the rest are counted
# documented limits (Slack Block Kit, Discord's webhook and embed objects, ntfy's message size)
SLACK_SECTION = 3000
SLACK_HEADER = 150
DISCORD_CONTENT = 2000
DISCORD_TITLE = 256
DISCORD_DESCRIPTION = 4096
DISCORD_FOOTER = 2048
DISCORD_EMBEDS = 10
DISCORD_TOTAL = 6000
NTFY_BODY = 4096
COLOURS = {"critical": 0xD7263D, "warning": 0xF4A261, "cleared": 0x2A9D8F, "state": 0x457B9D, "test": 0x457B9D}


@dataclass(frozen=True)
class Message:
    body: bytes
    headers: dict[str, str]


def cut(text: str, n: int, *, multiline: bool = False) -> str:
    """At most n characters, one line unless `multiline` (control characters always removed)."""
    text = safe_multiline(text) if multiline else safe_text(text)
    return text if len(text) <= n else text[: max(0, n - 1)] + "…"


def where(note: dict[str, Any]) -> str:
    """`gpu-box:/runs/a/train.log`: the machine and the log a phone reader needs to act."""
    host = note.get("host") or "?"
    path = note.get("path")
    return f"{host}:{path}" if path else str(host)


def kind(note: dict[str, Any]) -> str:
    """critical | warning | cleared | state | test: what colours and ranks a note."""
    t = note.get("type")
    if t == "alert":
        return "critical" if note.get("severity") == "critical" else "warning"
    return str(t or "test")


def headline(note: dict[str, Any]) -> str:
    """One line per note: `CRITICAL gap-jump from rollout 16`."""
    t = note.get("type")
    if t == "alert":
        sig = f" ({note['signal']})" if note.get("signal") else ""
        at = f" from rollout {note['rollout']}" if note.get("rollout") is not None else ""
        gone = f" (cleared at rollout {note['cleared_at']})" if note.get("cleared_at") is not None else ""
        return f"{str(note.get('severity', '')).upper()} {note.get('rule')}{sig}{at}{gone}"
    if t == "cleared":
        return f"cleared: {note.get('rule')} (from rollout {note.get('rollout')}, gone at {note.get('cleared_at')})"
    if t == "state":
        name = note.get("state")
        by = note.get("finished_by") or note.get("note")
        return f"run {name}" + (f": {by}" if by else "")
    return str(note.get("message") or "test message from grpo-tui")


def _details(note: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) pairs under a headline: message, meaning, first check, run state."""
    if note.get("type") not in ("alert", "cleared"):
        return []
    out = [("", str(note.get("message") or ""))]
    if note.get("meaning"):
        out.append(("means", str(note["meaning"])))
    if note.get("first_check"):
        out.append(("check first", str(note["first_check"])))
    if note.get("run_state"):
        out.append(("state", str(note["run_state"])))
    return out


def title(notes: list[dict[str, Any]], total: int) -> str:
    """`grpo-tui: CRITICAL gap-jump · train.log` or `grpo-tui: 3 alerts · train.log`."""
    files = {os.path.basename(str(n.get("path"))) for n in notes if n.get("path")}
    on = f" · {next(iter(files))}" if len(files) == 1 else (f" · {len(files)} runs" if files else "")
    if total == 1 and notes:
        return f"grpo-tui: {headline(notes[0])}{on}"
    crit = sum(1 for n in notes if kind(n) == "critical")
    what = f"{total} notifications" + (f", {crit} critical" if crit else "")
    return f"grpo-tui: {what}{on}"


def _ordered(notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rank = {"critical": 0, "warning": 1, "state": 2, "cleared": 3, "test": 4}
    return sorted(notes, key=lambda n: rank.get(kind(n), 5))  # (stable: arrival order within a kind)


def _more(total: int, shown: int, dropped: int) -> str | None:
    rest = total - shown
    if rest <= 0:
        return None
    lost = f" ({dropped} of them beyond the queue's bound: see the log)" if dropped else ""
    return f"+{rest} more{lost}"


# ----------------------------------------------------------------------------------- Slack


def _mrkdwn(text: str) -> str:
    """Slack's three escapes: log text can't become a link or an @channel mention."""
    return safe_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack(notes: list[dict[str, Any]], total: int, dropped: int = 0) -> dict[str, Any]:
    shown = _ordered(notes)[:SHOWN]
    head = title(notes, total)
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": cut(head, SLACK_HEADER)}}]
    for n in shown:
        lines = [f"*{_mrkdwn(headline(n))}*"]
        for label, text in _details(n):
            lines.append((f"_{label}:_ " if label else "") + _mrkdwn(cut(text, 600)))
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": cut("\n".join(lines), SLACK_SECTION, multiline=True)},
            }
        )
    places = sorted({where(n) for n in notes})
    foot = [_mrkdwn(cut(p, 300)) for p in places[:3]]
    more = _more(total, len(shown), dropped)
    if more:
        foot.append(_mrkdwn(more))
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": t} for t in foot[:10]]})
    first = shown[0] if shown else {}
    said = first.get("message") and total == 1 and kind(first) != "test"  # (a test's message is its headline)
    text = head + (f": {cut(str(first.get('message')), 200)}" if said else "")
    return {"text": _mrkdwn(cut(f"{text} ({where(first) if first else ''})", 2000)), "blocks": blocks}


# --------------------------------------------------------------------------------- Discord


def discord(notes: list[dict[str, Any]], total: int, dropped: int = 0) -> dict[str, Any]:
    shown = _ordered(notes)[:SHOWN]
    embeds = []
    for n in shown:
        desc = "\n".join((f"**{label}:** " if label else "") + cut(text, 500) for label, text in _details(n))
        embed: dict[str, Any] = {
            "title": cut(headline(n), 200),
            "color": COLOURS.get(kind(n), COLOURS["state"]),
            "footer": {"text": cut(where(n), 200)},
        }
        if desc:  # (5 embeds of at most 1,100 characters stay under Discord's 6,000 in all)
            embed["description"] = cut(desc, 700, multiline=True)
        embeds.append(embed)
    content = title(notes, total)
    more = _more(total, len(shown), dropped)
    if more:
        content += f" ({more})"
    return {
        "content": cut(content, DISCORD_CONTENT),
        "embeds": embeds[:DISCORD_EMBEDS],
        "username": "grpo-tui",
        "allowed_mentions": {"parse": []},  # log text must never ping @everyone
    }


# ------------------------------------------------------------------------------------ ntfy

_PRIORITY = {"critical": "urgent", "warning": "high", "cleared": "default", "state": "default", "test": "low"}
_TAGS = {"critical": "rotating_light", "warning": "warning", "cleared": "white_check_mark", "state": "checkered_flag"}


def _ascii(text: str) -> str:
    """HTTP header values are Latin-1 on the wire; ASCII keeps every proxy happy."""
    return safe_text(text).encode("ascii", "replace").decode("ascii")


def ntfy(notes: list[dict[str, Any]], total: int, dropped: int = 0) -> Message:
    shown = _ordered(notes)[:SHOWN]
    parts = []
    for n in shown:
        lines = [headline(n)] + [(f"{label}: " if label else "") + cut(text, 400) for label, text in _details(n)]
        lines.append(where(n))
        parts.append("\n".join(lines))
    more = _more(total, len(shown), dropped)
    if more:
        parts.append(more)
    body = safe_multiline("\n\n".join(parts))
    raw = body.encode("utf-8")
    if len(raw) > NTFY_BODY:  # (ntfy turns a longer body into an attachment)
        raw = raw[: NTFY_BODY - 3].decode("utf-8", "ignore").encode("utf-8") + "…".encode()
    top = kind(shown[0]) if shown else "test"
    tags = ["grpo-tui", _TAGS.get(top, "bell")]
    return Message(
        raw,
        {
            "Content-Type": "text/plain; charset=utf-8",
            "Title": cut(_ascii(title(notes, total)), 200),
            "Priority": _PRIORITY.get(top, "default"),
            "Tags": ",".join(tags),
        },
    )


def safe_multiline(text: str) -> str:
    return "\n".join(safe_text(line) for line in text.split("\n"))


# ------------------------------------------------------------------------------------ JSON


def json_object(notes: list[dict[str, Any]], total: int, dropped: int = 0) -> dict[str, Any]:
    """Our alert object (what --on-critical gets, with host and path), plus `count`; the other
    notes of a burst in `others`, and `dropped` when the queue overflowed."""
    ordered = _ordered(notes)
    obj: dict[str, Any] = dict(ordered[0]) if ordered else {"type": "test"}
    obj["count"] = total
    if len(ordered) > 1:
        obj["others"] = ordered[1:]
    if dropped:
        obj["dropped"] = dropped
    return obj


def build(fmt: str, notes: list[dict[str, Any]], total: int | None = None, dropped: int = 0) -> Message:
    """The HTTP body and headers of one message for `fmt` (slack, discord, ntfy, json)."""
    total = len(notes) + dropped if total is None else total
    if fmt == "ntfy":
        return ntfy(notes, total, dropped)
    make = {"slack": slack, "discord": discord, "json": json_object}[fmt]
    body = json.dumps(_finite(make(notes, total, dropped)), allow_nan=False, default=str, ensure_ascii=False)
    return Message(body.encode("utf-8"), {"Content-Type": "application/json; charset=utf-8"})


def _finite(obj: Any) -> Any:
    """nan/inf (an alert's evidence can hold them) as null: strict JSON, as `tail` prints."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
