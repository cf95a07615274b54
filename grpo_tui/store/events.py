"""A segment's events in arrival order, the routine ones kept as bare fields.

A long run logs a weight update's start and end at every rollout (and a checkpoint's start and
save every few): on a 1 GB log ~70,000 events, most of the store's memory as objects.  Those
whose fields follow the routine pattern (a kind of ROUTINE, no traceback lines, data the strings
the line gave, then where the event sits on the timeline) are kept as a tuple of their fields and
made into an Event again when read (an equal one, not the same object); every other event is kept
as it came."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from sys import intern
from typing import Any, overload

from ..lines.records import Event

ROUTINE = ("weight_update_start", "weight_update_end", "checkpoint_start", "checkpoint_saved")
_CODE = {kind: k for k, kind in enumerate(ROUTINE)}
_KEYS: dict[tuple[str, ...], tuple[str, ...]] = {}  # data key tuples, one object each (bounded)


def _compact(ev: Event) -> tuple[int, tuple[str, ...], tuple[Any, ...]] | None:
    """(kind code, data's keys, their values) when `ev` is routine (its data the strings the line
    gave, then after_rollout) and comes back exactly as kept."""
    code = _CODE.get(ev.kind)
    if code is None or ev.lines or type(ev.ts) is not float or type(ev.line_no) is not int or type(ev.text) is not str:
        return None
    if ev.time is not None and type(ev.time) is not str:
        return None
    data = ev.data
    keys = tuple(data)
    if keys[-1:] != ("after_rollout",):
        return None
    values = tuple(data.values())
    for v in values[:-1]:
        if type(v) is not str:
            return None
    shared = _KEYS.get(keys)
    if shared is None:
        if len(_KEYS) >= 1024:
            return None
        shared = _KEYS[keys] = keys
    return code, shared, values


class EventLog:
    """A list of Events to its readers (len, iteration, indexing, append)."""

    def __init__(self) -> None:
        # per event: the Event, or for a routine one the tuple of its fields (an Event and its
        # data dict are ~300 bytes more): (kind code, ts, line_no, data keys, data values, time, text)
        self._items: list[Event | tuple] = []

    def append(self, ev: Event) -> None:
        got = _compact(ev)
        if got is None:
            self._items.append(ev)
        else:
            # a routine event's text and time repeat (a 1 GB log: 67,000 such events, 427 texts,
            # 802 times): one object each (sys.intern's strings go when nothing holds them)
            time = None if ev.time is None else intern(ev.time)
            self._items.append((got[0], ev.ts, ev.line_no, got[1], got[2], time, intern(ev.text)))

    def extend(self, events: Iterable[Event]) -> None:
        for ev in events:
            self.append(ev)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    @staticmethod
    def _event(x: Event | tuple) -> Event:
        if type(x) is not tuple:
            return x  # type: ignore[return-value]
        code, ts, line_no, keys, values, time, text = x
        return Event(ROUTINE[code], time, ts, line_no, text, dict(zip(keys, values)))

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...
    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        if isinstance(i, slice):
            return [self._event(x) for x in self._items[i]]
        return self._event(self._items[i])

    def __iter__(self) -> Iterator[Event]:
        return map(self._event, self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (EventLog, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))

    def of_kinds(self, kinds: frozenset[str]) -> Iterator[Event]:
        """The events of these kinds, in order, without making the routine ones of other kinds."""
        for x in self._items:
            if (ROUTINE[x[0]] if type(x) is tuple else x.kind) in kinds:  # type: ignore[union-attr]
                yield self._event(x)

    def kinds_after(self) -> Iterator[tuple[str, Any]]:
        """(kind, data["after_rollout"]) of each event, without making the routine ones."""
        for x in self._items:
            if type(x) is tuple:
                yield ROUTINE[x[0]], x[4][-1]
            else:
                yield x.kind, x.data.get("after_rollout")  # type: ignore[union-attr]


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
