"""Where each line of a (possibly 1 GB) log starts, and searches over its bytes: no Textual here.

The index grows in a background thread (numpy finds the newlines of 16 MB at a time), so the log
view opens at once and can show the lines indexed so far; a line is read with one pread when it
is drawn, never the whole file.
"""

from __future__ import annotations

import os
import re
import threading

import numpy as np

BLOCK = 16 << 20
MAX_SHOWN = 4096  # a longer line is shown cut (the file is never read whole)
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_CTRL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def plain(raw: bytes) -> str:
    """A log line as plain text: ANSI colours stripped, other control characters shown as '?'."""
    text = raw.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
    return _CTRL_RE.sub("?", _ANSI_RE.sub("", text))


class LineIndex:
    """Offsets of line starts in `path`, built in a thread; `starts[i]` is line i+1's offset."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._parts: list[np.ndarray] = [np.zeros(1, np.int64)]
        self._starts: np.ndarray | None = self._parts[0]
        self.size = 0  # bytes indexed
        self.done = False
        self.error: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._build, daemon=True, name="log-index")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def grow(self) -> None:
        """The file grew (a live log): index the new part."""
        if not self.done or self._stop.is_set():
            return
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return
        if size < self.size:  # truncated / rewritten: index it anew
            with self._lock:
                self._parts, self._starts, self.size = [np.zeros(1, np.int64)], None, 0
        elif size == self.size:
            return
        self.done = False
        self._thread = threading.Thread(target=self._build, daemon=True, name="log-index")
        self._thread.start()

    def _build(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                pos = self.size
                fh.seek(pos)
                while not self._stop.is_set():
                    block = fh.read(BLOCK)
                    if not block:
                        break
                    nl = np.flatnonzero(np.frombuffer(block, np.uint8) == 10).astype(np.int64) + pos + 1
                    pos += len(block)
                    with self._lock:
                        self._parts.append(nl)
                        self._starts = None
                        self.size = pos
        except OSError as exc:
            self.error = exc.strerror or str(exc)
        self.done = True

    @property
    def starts(self) -> np.ndarray:
        with self._lock:
            if self._starts is None:
                self._starts = np.concatenate(self._parts)
                self._parts = [self._starts]
            return self._starts

    @property
    def lines(self) -> int:
        """Complete lines indexed so far (a last line without newline counts when done)."""
        st = self.starts
        n = len(st) - 1
        if self.done and self.size > int(st[-1]):
            n += 1
        return n

    def read(self, i: int) -> str:
        """Line i (0-based) as plain text, at most MAX_SHOWN characters."""
        st = self.starts
        if i < 0 or i >= self.lines:
            return ""
        start = int(st[i])
        end = int(st[i + 1]) if i + 1 < len(st) else self.size
        try:
            with open(self.path, "rb") as fh:
                raw = os.pread(fh.fileno(), min(end - start, MAX_SHOWN * 4), start)
        except OSError:
            return ""
        return plain(raw)[:MAX_SHOWN]

    def line_at(self, offset: int) -> int:
        """The 0-based line holding byte `offset`."""
        return max(0, int(np.searchsorted(self.starts, offset, side="right")) - 1)

    def find(self, pattern: re.Pattern[bytes], from_line: int = 0, backwards: bool = False) -> int | None:
        """The first line after `from_line` (or before it) whose bytes match; None if none."""
        st = self.starts
        if not len(st):
            return None
        try:
            with open(self.path, "rb") as fh:
                if backwards:
                    end = int(st[min(from_line, len(st) - 1)])
                    pos = end
                    while pos > 0:
                        start = max(0, pos - BLOCK)
                        data = os.pread(fh.fileno(), pos - start, start)
                        last: re.Match[bytes] | None = None
                        for m in pattern.finditer(data):
                            last = m
                        if last is not None:
                            return self.line_at(start + last.start())
                        pos = start
                    return None
                pos = int(st[min(from_line + 1, len(st) - 1)]) if from_line + 1 < len(st) else self.size
                while pos < self.size:
                    data = os.pread(fh.fileno(), BLOCK + 4096, pos)
                    if not data:
                        break
                    hit = pattern.search(data)
                    if hit is not None:
                        return self.line_at(pos + hit.start())
                    pos += BLOCK
        except OSError:
            return None
        return None
