"""A segment's events in arrival order, the routine ones kept as columns.

A long run logs a weight update's start and end at every rollout (and a checkpoint's start and
save every few): on a 1 GB log ~70,000 events, most of the store's memory as objects.  Those
whose fields follow the routine pattern (a kind of ROUTINE, no traceback lines, data the strings
the line gave, then where the event sits on the timeline) are kept as columns and made into an
Event again when read (an equal one, not the same object); every other event is kept as it came."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any, overload

from ..lines.records import Event

ROUTINE = ("weight_update_start", "weight_update_end", "checkpoint_start", "checkpoint_saved")
_CODE = {kind: k for k, kind in enumerate(ROUTINE)}
_NONE = -(2**63)  # after_rollout None
_SHARED: dict[Any, Any] = {}  # key tuples and short values, one object each (bounded)


def _shared(x: Any) -> Any:
    got = _SHARED.get(x)
    if got is None:
        if len(_SHARED) >= 4096:
            return x
        got = _SHARED[x] = x
    return got


def _compact(ev: Event) -> tuple[int, tuple[str, ...], tuple[str, ...], int] | None:
    """(kind code, data's keys, their values, after_rollout) when `ev` is routine (its data
    strings, then where it sits on the timeline) and comes back exactly as kept."""
    code = _CODE.get(ev.kind)
    if code is None or ev.lines or type(ev.ts) is not float or type(ev.line_no) is not int:
        return None
    if type(ev.text) is not str or (ev.time is not None and type(ev.time) is not str):
        return None
    data = ev.data
    keys = tuple(data)
    if not keys or keys[-1] != "after_rollout" or len(keys) > 8:
        return None
    values = tuple(data.values())[:-1]
    if any(type(v) is not str for v in values):
        return None
    after = data["after_rollout"]
    if after is None:
        after = _NONE
    elif type(after) is not int or not _NONE < after < 2**63:
        return None
    return code, _shared(keys[:-1]), tuple(_shared(v) if len(v) <= 8 else v for v in values), after


class EventLog:
    """A list of Events to its readers (len, iteration, indexing, append)."""

    def __init__(self) -> None:
        # per event: the Event, or None where it is kept in the columns below (at index slot[i])
        self._kept: list[Event | None] = []
        self._slot = array("q")  # event -> its row in the columns (-1: kept as an object)
        self._code = array("b")
        self._ts = array("d")
        self._line = array("q")
        self._after = array("q")
        self._keys: list[tuple[str, ...]] = []
        self._values: list[tuple[str, ...]] = []
        self._time: list[str | None] = []
        self._text: list[str] = []

    def append(self, ev: Event) -> None:
        got = _compact(ev)
        if got is None:
            self._kept.append(ev)
            self._slot.append(-1)
            return
        self._kept.append(None)
        self._slot.append(len(self._code))
        self._code.append(got[0])
        self._ts.append(ev.ts)  # type: ignore[arg-type]  # (a float: _compact checked)
        self._line.append(ev.line_no)
        self._keys.append(got[1])
        self._values.append(got[2])
        self._after.append(got[3])
        self._time.append(ev.time)
        self._text.append(ev.text)

    def extend(self, events: Iterable[Event]) -> None:
        for ev in events:
            self.append(ev)

    def __len__(self) -> int:
        return len(self._kept)

    def __bool__(self) -> bool:
        return bool(self._kept)

    def _after_at(self, j: int) -> int | None:
        after = self._after[j]
        return None if after == _NONE else after

    def _event(self, i: int) -> Event:
        ev = self._kept[i]
        if ev is not None:
            return ev
        j = self._slot[i]
        data: dict[str, Any] = dict(zip(self._keys[j], self._values[j]))
        data["after_rollout"] = self._after_at(j)
        return Event(ROUTINE[self._code[j]], self._time[j], self._ts[j], self._line[j], self._text[j], data)

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...
    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        if isinstance(i, slice):
            return [self._event(k) for k in range(len(self._kept))[i]]
        return self._event(range(len(self._kept))[i])

    def __iter__(self) -> Iterator[Event]:
        return (self._event(i) for i in range(len(self._kept)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (EventLog, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))

    def kinds_after(self) -> Iterator[tuple[str, Any]]:
        """(kind, data["after_rollout"]) of each event, without making the routine ones."""
        for i, ev in enumerate(self._kept):
            if ev is not None:
                yield ev.kind, ev.data.get("after_rollout")
            else:
                j = self._slot[i]
                yield ROUTINE[self._code[j]], self._after_at(j)


class EventChain:
    """The events of several logs (a store's segments) as one read-only sequence."""

    def __init__(self, logs: list) -> None:
        self._logs = logs  # objects with an `events` EventLog (the store's segments)

    def __len__(self) -> int:
        return sum(len(s.events) for s in self._logs)

    def __bool__(self) -> bool:
        return any(s.events for s in self._logs)

    def __iter__(self) -> Iterator[Event]:
        for s in self._logs:
            yield from s.events

    def __getitem__(self, i: int) -> Event:
        if i < 0:
            i += len(self)
        for s in self._logs:
            if 0 <= i < len(s.events):
                return s.events[i]
            i -= len(s.events)
        raise IndexError("event index out of range")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (EventChain, EventLog, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))
