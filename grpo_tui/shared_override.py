"""A process-wide setting changed while a whole file is read, shared by concurrent readers.

Why one mechanism: whole-file reads change the collector's thresholds and the GIL's switch
interval (pipeline/whole_file.py), and the runs overview reads several files at once, so the first reader
in must save the setting and the last one out must put it back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class SharedOverride:
    """`with override():` sets `change(saved)` (None: leave it) while any holder is inside."""

    def __init__(
        self, read: Callable[[], Any], write: Callable[[Any], None], change: Callable[[Any], Any | None]
    ) -> None:
        self._read, self._write, self._change = read, write, change
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: Any = None
        self._changed = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._holders == 0:
                self._saved = self._read()
                new = self._change(self._saved)
                self._changed = new is not None
                if self._changed:
                    self._write(new)
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0 and self._changed:
                    self._write(self._saved)
                    self._changed = False
