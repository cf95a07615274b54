"""Delivery of notifications over HTTP, off the caller's path: the one class the dashboard,
`tail` and `check` share.

Each target has its own worker thread and bounded queue, so a receiver that hangs delays
neither the UI nor `tail`'s output, nor the other targets.  Notes that arrive within the
coalescing window (or while a send is in flight) go as one message with a count; a note that
finds the queue full is counted and the next message says how many.  A send has a timeout and
is retried with backoff on a network error, a 5xx or a 429; every batch ends in one Outcome
(ok or failed) given to `report`, so nothing is dropped silently.  Stdlib (urllib) only."""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..output import safe_text
from .payloads import Message, build
from .targets import Target

WINDOW_S = 2.0  # a burst within this (or during a send) is one message
TIMEOUT_S = 5.0
TRIES = 3
BACKOFF_S = 1.0  # then doubled each retry
CAPACITY = 64  # notes queued per target; more are counted, not listed
USER_AGENT = "grpo-tui"


@dataclass(frozen=True)
class Outcome:
    """How one message to one target went: what `tail` prints and the dashboard shows."""

    target: Target
    ok: bool
    status: int | None
    error: str | None
    count: int  # notes in the message (those past the queue's bound included)
    tries: int
    dropped: int = 0

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "type": "notify",
            "outcome": "ok" if self.ok else "failed",
            "target": self.target.shown,
            "format": self.target.format,
            "status": self.status,
            "error": self.error,
            "count": self.count,
            "tries": self.tries,
        }
        if self.dropped:
            obj["dropped"] = self.dropped
        return obj

    def words(self) -> str:
        """`notify failed: https://hooks.slack.com/… HTTP 500 after 3 tries (2 notes)`."""
        what = f" ({self.count} notes)" if self.count != 1 else ""
        if self.ok:
            return f"notify ok: {self.target.shown} HTTP {self.status}{what}"
        why = self.error or (f"HTTP {self.status}" if self.status else "failed")
        tries = f" after {self.tries} tries" if self.tries > 1 else ""
        return f"notify failed: {self.target.shown} {why}{tries}{what}"


class _Failed(Exception):
    def __init__(self, status: int | None, error: str, retry: bool, wait: float | None = None) -> None:
        super().__init__(error)
        self.status, self.error, self.retry, self.wait = status, error, retry, wait


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """urllib turns a redirected POST into a GET without the body: report the 3xx instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _scrub(text: str, url: str) -> str:
    """An error text with the URL's secret parts (path, query, user) taken out."""
    text = safe_text(text)
    try:
        parts = urlsplit(url)
        secrets = [url, parts.path, parts.query, parts.username or "", parts.password or ""]
    except ValueError:
        secrets = [url]
    for s in sorted(secrets, key=len, reverse=True):
        if len(s) > 1:
            text = text.replace(s, "…")
    return text[:200]


def _reason(exc: BaseException | str) -> str:
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return "timed out"
    words = getattr(exc, "strerror", None)
    return str(words or exc or type(exc).__name__).lower()


def post(url: str, msg: Message, timeout: float) -> int:
    """POST one message; the HTTP status of a 2xx answer, else _Failed (never another error)."""
    req = urllib.request.Request(url, data=msg.body, headers={"User-Agent": USER_AGENT, **msg.headers}, method="POST")
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            resp.read(1 << 16)
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        code = int(exc.code)
        try:
            said = exc.read(200).decode("utf-8", "replace").strip()
        except Exception:
            said = ""
        wait = None
        try:
            wait = float(exc.headers.get("Retry-After", "")) if exc.headers else None
        except ValueError:
            pass
        text = f"HTTP {code}" + (f" {said.splitlines()[0][:80]}" if said else "")
        if 300 <= code < 400:
            text += " (a redirect: give the final URL)"
        raise _Failed(code, _scrub(text, url), code >= 500 or code == 429, wait) from None
    except urllib.error.URLError as exc:
        raise _Failed(None, _scrub(_reason(exc.reason) if exc.reason else "cannot connect", url), True) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise _Failed(None, _scrub(_reason(exc), url), True) from None


class Notifier:
    """Sends note batches to every target in the background (`submit`), or now (`send_now`)."""

    def __init__(
        self,
        targets: list[Target],
        report: Callable[[Outcome], None] | None = None,
        *,
        window: float | None = None,
        timeout: float | None = None,
        tries: int | None = None,
        backoff: float | None = None,
        capacity: int | None = None,
    ) -> None:
        self.targets = list(targets)
        self.report = report
        # (the module's constants read here, not bound as defaults: a test may set them)
        self.window = WINDOW_S if window is None else window
        self.timeout = TIMEOUT_S if timeout is None else timeout
        self.tries = TRIES if tries is None else tries
        self.backoff = BACKOFF_S if backoff is None else backoff
        self.capacity = CAPACITY if capacity is None else capacity
        self._lanes = [_Lane(self, t) for t in self.targets]

    def __bool__(self) -> bool:
        return bool(self.targets)

    def submit(self, notes: list[dict[str, Any]]) -> None:
        """Queue notes for every target; returns at once."""
        if notes:
            for lane in self._lanes:
                lane.put(notes)

    def send_now(self, notes: list[dict[str, Any]]) -> list[Outcome]:
        """Send one message per target and wait for the outcomes (check, notify --test)."""
        return [self.send(t, notes, len(notes), 0) for t in self.targets]

    def close(self, wait: float | None = None) -> None:
        """Send what is queued now (no window) and wait up to `wait` s (None: until done); a
        batch still not sent is reported as failed, never left out."""
        deadline = None if wait is None else time.monotonic() + wait
        for lane in self._lanes:
            lane.closing()
        for lane in self._lanes:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            lane.join(left)

    def send(self, target: Target, notes: list[dict[str, Any]], total: int, dropped: int) -> Outcome:
        """One message with its retries; never raises."""
        try:
            msg = build(target.format, notes, total, dropped)
        except Exception as exc:  # a note we can't encode must not end the watcher
            return Outcome(target, False, None, f"cannot build the message: {type(exc).__name__}", total, 0, dropped)
        status: int | None = None
        error: str | None = None
        tries = 0
        for i in range(max(1, self.tries)):
            tries += 1
            try:
                status = post(target.url, msg, self.timeout)
                return Outcome(target, True, status, None, total, tries, dropped)
            except _Failed as f:
                status, error = f.status, f.error
                if not f.retry or tries >= self.tries:
                    break
                pause = self.backoff * 2**i
                if f.wait is not None:
                    pause = min(max(pause, f.wait), 30.0)
                time.sleep(pause)
            except Exception as exc:  # (post maps every error; this is the last guard)
                status, error = None, _scrub(f"{type(exc).__name__}: {exc}", target.url)
                break
        return Outcome(target, False, status, error, total, tries, dropped)

    def _report(self, outcome: Outcome) -> None:
        if self.report is not None:
            try:
                self.report(outcome)
            except Exception:
                pass  # (a closed stdout, an app shutting down: the watcher goes on)


class _Lane:
    """One target's queue and worker thread (started on the first note)."""

    def __init__(self, owner: Notifier, target: Target) -> None:
        self.owner, self.target = owner, target
        self.cond = threading.Condition()
        self.queue: list[dict[str, Any]] = []
        self.dropped = 0
        self.in_flight = 0
        self.closed = False
        self.abandoned = False
        self.thread: threading.Thread | None = None

    def put(self, notes: list[dict[str, Any]]) -> None:
        with self.cond:
            for n in notes:
                if len(self.queue) < self.owner.capacity:
                    self.queue.append(n)
                else:
                    self.dropped += 1
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, daemon=True, name=f"notify {self.target.shown}")
                self.thread.start()
            self.cond.notify_all()

    def closing(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def join(self, wait: float | None) -> None:
        if self.thread is None:
            return
        self.thread.join(wait)
        if self.thread.is_alive():
            with self.cond:
                left = len(self.queue) + self.dropped + self.in_flight
                self.abandoned = True
            if left:
                self.owner._report(Outcome(self.target, False, None, "not sent: grpo-tui exited", left, 0))

    def _run(self) -> None:
        while True:
            with self.cond:
                while not (self.queue or self.dropped) and not self.closed:
                    self.cond.wait()
                if not (self.queue or self.dropped):
                    return
                deadline = time.monotonic() + self.owner.window
                while not self.closed and (left := deadline - time.monotonic()) > 0:
                    self.cond.wait(left)
                batch, dropped = self.queue, self.dropped
                self.queue, self.dropped = [], 0
                self.in_flight = len(batch) + dropped
            outcome = self.owner.send(self.target, batch, len(batch) + dropped, dropped)
            with self.cond:
                self.in_flight = 0
                if self.abandoned:
                    return
            self.owner._report(outcome)
