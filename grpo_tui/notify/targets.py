"""Where a notification goes: a webhook URL, its payload format, and the URL as it may be shown.

A webhook URL is a password (Slack's and Discord's path, an ntfy topic, a token in the query), so
only `redact(url)` ever reaches a terminal, a log line or a status bar.  Stdlib only: the
config loader and the CLI read this before any command runs."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

FORMATS = ("slack", "discord", "ntfy", "json")
# what can notify; `all` means every one of them (default: new criticals only)
EVENTS = ("critical", "warning", "finished", "quiet", "cleared")
DEFAULT_ON = frozenset({"critical"})


class TargetError(ValueError):
    """A URL, format or event list that can't be used; the text never holds the URL's secret."""


@dataclass(frozen=True)
class Target:
    url: str
    format: str

    @property
    def shown(self) -> str:
        return redact(self.url)


def redact(url: str) -> str:
    """`https://hooks.slack.com/…`: scheme, host and port only; user, path and query hidden."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(a bad URL)"
    if not parts.scheme or not host:
        return "(a bad URL)"
    if ":" in host:
        host = f"[{host}]"
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    hidden = (parts.path not in ("", "/")) or parts.query or parts.fragment or parts.username
    return shown + ("/…" if hidden else "/")


def check_url(url: str) -> str:
    """The URL when it is an http(s) URL with a host; TargetError (URL redacted) otherwise.

    Why strict: urllib would also open file:// and ftp:// URLs, and a typo'd scheme must not
    send the alert somewhere else or nowhere silently."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        raise TargetError("not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        scheme = parts.scheme or "no scheme"
        raise TargetError(f"only http:// and https:// URLs can be notified ({scheme[:20]}:…)")
    if not host:
        raise TargetError(f"{redact(url)}: the URL has no host")
    return url.strip()


def guess_format(url: str) -> str:
    """The payload a URL's service takes: Slack and Discord webhooks by host and path, ntfy.sh
    or a host named ntfy* with one topic in the path; anything else gets our JSON object."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return "json"
    path = parts.path
    if host == "hooks.slack.com":
        return "slack"
    if host.split(".", 1)[-1] in ("discord.com", "discordapp.com") or host in ("discord.com", "discordapp.com"):
        if path.startswith("/api/webhooks/"):
            return "discord"
    segments = [s for s in path.split("/") if s]
    if host == "ntfy.sh" or (host.split(".")[0].startswith("ntfy") and len(segments) == 1):
        return "ntfy"
    return "json"


def make_target(url: str, fmt: str | None = None) -> Target:
    url = check_url(url)
    if fmt is not None and fmt not in FORMATS:
        raise TargetError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
    return Target(url, fmt or guess_format(url))


def parse_on(values: list[str] | str) -> frozenset[str]:
    """`critical,warning` or several values; `all` is every event.  TargetError on a bad word."""
    words: list[str] = []
    for v in [values] if isinstance(values, str) else values:
        words += [w.strip().lower() for w in v.replace(" ", ",").split(",") if w.strip()]
    if not words:
        raise TargetError(f"name at least one event ({', '.join(EVENTS)} or all)")
    out: set[str] = set()
    for w in words:
        if w == "all":
            out.update(EVENTS)
        elif w in EVENTS:
            out.add(w)
        else:
            raise TargetError(f"unknown event {w[:40]!r} (events: {', '.join(EVENTS)}, all)")
    return frozenset(out)


def split_urls(text: str) -> list[str]:
    """GRPO_TUI_NOTIFY: URLs separated by spaces or commas (a comma is not valid inside a
    webhook URL's host, and the services' paths never hold one)."""
    return [u for u in text.replace(",", " ").split() if u]
