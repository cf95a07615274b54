"""Follow a run's metric files (a TensorBoard folder, a W&B offline run) as the follower follows a log.

Their writers flush every 15 s to 2 min, so polling is enough: each poll reads what every file added
since the last one (sidecar.source), and hands over the records that are ready. The dashboard, `tail`
and the runs overview poll it as they poll a log's follower."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..sidecar.source import Sidecar

POLL_S = 2.0  # s between polls while following


@dataclass(frozen=True, slots=True)
class Records:
    """Records and events read from the metric files, in the order they were logged."""

    items: list
    written_at: float | None = field(default=None, compare=False)  # the files' newest mtime


class MetricFilesFollower:
    """A Sidecar read again at each poll; the first poll is its history."""

    more = False  # (a poll reads everything there is)

    def __init__(self, side: Sidecar) -> None:
        self.side = side
        self.polls = 0
        self.stats: dict = {"position": None}

    def poll(self) -> list[Records]:
        items = self.side.read()
        self.polls += 1
        if not items and self.polls > 1:
            return []
        return [Records(items, self.side.written_at())]

    def close(self) -> None:
        pass
