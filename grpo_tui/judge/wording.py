"""How the judge says things in words: an event's kind, a crash's cause (ages: output.fmt_age)."""

from __future__ import annotations

import re

from ..lines.records import Event

_EVENT_LABELS = {
    "traceback": "traceback",
    "ft_fail": "process failed (ok=false / phase=fail)",
    "oom": "out of memory",
    "nccl_timeout": "NCCL watchdog timeout",
    "job_failed": "Ray job failed",
    "fatal": "fatal error",
    "train_retry": "training retried after a failure",
}
# a crash's cause, found in its text: the first match names it
_CAUSES = (
    ("cuda out of memory", "CUDA out of memory"),
    ("outofmemoryerror", "CUDA out of memory"),
    ("watchdog caught collective operation timeout", "NCCL timeout"),
    ("nccl timeout", "NCCL timeout"),
    ("nccl error", "NCCL error"),
    ("illegal memory access", "CUDA illegal memory access"),
    ("device-side assert", "CUDA device-side assert"),
    ("max retries", "engine requests exhausted"),
)
_PREFIX = re.compile(r"^(?:\d+[:-]|>\s*|\s+)+|\x1b\[[0-9;]*m|\([A-Za-z_]\w* pid=\d+[^)]*\)\s*")


def event_label(ev: Event) -> str:
    return _EVENT_LABELS.get(ev.kind, ev.kind)


def crash_headline(crash: Event, cause: Event | None) -> str:
    """What failed, in words: the cause when known (CUDA OOM, NCCL timeout), else the
    exception line, cut at a word boundary."""
    events = [e for e in (cause, crash) if e is not None]
    texts = [e.data.get("exception") or e.text for e in events]
    texts += [line for e in events for line in e.lines[-3:]]
    low = " ".join(texts).lower()
    for needle, name in _CAUSES:
        if needle in low:
            return name
    return cut_words(strip_prefixes(texts[0]), 160)


def strip_prefixes(text: str) -> str:
    """Drop paste prefixes (`grep -n`, `> `), ANSI colours and Ray actor prefixes."""
    prev = None
    while prev != text:
        prev, text = text, _PREFIX.sub("", text, count=1).strip()
    return text


def cut_words(text: str, n: int) -> str:
    if len(text) <= n:
        return text
    cut = text[:n].rsplit(" ", 1)[0]
    return (cut if len(cut) > n // 2 else text[:n]) + " …"


__all__ = ["crash_headline", "cut_words", "event_label", "strip_prefixes"]
