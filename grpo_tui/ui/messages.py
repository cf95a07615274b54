"""Messages from the data workers to the UI (dataclass style, like toolong's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from ..pipeline import Pipeline


@dataclass
class DataChanged(Message):
    """New records/alerts are in the store; the UI refreshes on its next throttle tick."""

    rollouts: int = 0


@dataclass
class FileEventMsg(Message):
    """created | truncated | replaced | deleted | waiting | error | eof."""

    event: str
    detail: str = ""


@dataclass
class LoadProgress(Message):
    """History fill of a huge file: fraction done (0..1), or done=True with the full feed."""

    fraction: float
    feed: Pipeline | None = None
    done: bool = False
    generation: int = 0  # the file restarted since: the app drops this history
