"""A segment's optimizer steps (after dedup) as columns: step i's role, number, rollout, time and
each metric's float64 cell, with the few values a float cannot hold exactly kept aside.

A step's dict is made only when someone reads that step (`row`, `rows_of`): a long run has one
step per rollout or more, and a dict per step was most of the store's memory."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..lines.native import PACKED
from .columns import _NAN, _Column, _put_row, grown

_SHAPES_MAX = 64  # step shapes remembered for the short path (a real run logs one or two)
_EXACT = 2**53  # ints past this are kept as objects: a float64 cell would round them


@dataclass(slots=True)
class StepRow:
    """One optimizer step as read back from the table: its rollout and metrics."""

    role: str
    n: int
    rollout: int
    metrics: dict[str, Any]
    time: str | None
    ts: float | None
    nonfinite: dict[str, str]


class StepTable:
    """Steps in arrival order; a mapping (role, n) -> StepRow for readers."""

    def __init__(self) -> None:
        self.index: dict[tuple[str, int], int] = {}  # (role, n) -> step
        self.roles: list[str] = []
        self.ns: list[int] = []
        self.rollouts: list[int] = []
        self.times: list[str | None] = []
        self.shape_of: list[tuple[str, ...]] = []  # the step's names in logged order (shared tuples)
        self._cap = 64
        self.ts = _Column(self._cap)
        self.columns: dict[str, _Column] = {}
        self.ints: dict[str, bytearray] = {}  # name -> per step, 1 where it was logged as an int
        self.objects: dict[str, dict[int, Any]] = {}  # name -> step -> a value no cell holds
        self.nonfinite: dict[int, dict[str, str]] = {}  # step -> metric -> raw token
        self.of_rollout: dict[int, list[int]] = {}  # rollout -> its steps
        self.most_per_rollout = 0
        # the short path: names in order -> (the interned names, their value types, their columns'
        # views, the int names' (cells, flags)) for a step of plain numbers; forgotten when the
        # columns grow
        self._shapes: dict[tuple, tuple[tuple[str, ...], tuple, tuple, tuple]] = {}
        self._interned: dict[tuple, tuple[str, ...]] = {}

    # -- the mapping readers use ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ns)

    def __bool__(self) -> bool:
        return bool(self.ns)

    def __contains__(self, key: object) -> bool:
        return key in self.index

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self.index)

    def __getitem__(self, key: tuple[str, int]) -> StepRow:
        return self.row(self.index[key])

    def values(self) -> Iterator[StepRow]:
        return (self.row(i) for i in range(len(self.ns)))

    def row(self, i: int) -> StepRow:
        ts = self.ts.cells[i]
        return StepRow(
            self.roles[i],
            self.ns[i],
            self.rollouts[i],
            {name: self.value(name, i) for name in self.shape_of[i]},
            self.times[i],
            None if ts != ts else ts,
            dict(self.nonfinite.get(i, {})),
        )

    def rows_of(self, rollout: int) -> list[StepRow]:
        return [self.row(i) for i in self.of_rollout.get(rollout, ())]

    def get_value(self, i: int, name: str, default: Any = None) -> Any:
        """Step i's value of `name` as logged, or `default` when the step did not log it."""
        return self.value(name, i) if name in self.shape_of[i] else default

    def value(self, name: str, i: int) -> Any:
        """Step i's value of `name` exactly as logged (an int stays an int)."""
        objs = self.objects.get(name)
        if objs and i in objs:
            return objs[i]
        v = self.columns[name].cells[i]
        ints = self.ints.get(name)
        return int(v) if ints is not None and ints[i] else v

    # -- writes ----------------------------------------------------------------------------
    def add(
        self,
        key: tuple[str, int],
        rollout: int,
        metrics: Any,
        time: str | None,
        ts: float | None,
        nonfinite: dict[str, str],
    ) -> int:
        """File a new step (the caller checked `key` is new); returns its index."""
        i = len(self.ns)
        if i >= self._cap:
            self._grow()
        self.index[key] = i
        self.roles.append(key[0])
        self.ns.append(key[1])
        self.rollouts.append(rollout)
        self.times.append(time)
        if ts is not None:
            self.ts.cells[i] = ts
        mine = self.of_rollout.get(rollout)
        if mine is None:
            self.of_rollout[rollout] = [i]
            count = 1
        else:
            mine.append(i)
            count = len(mine)
        if count > self.most_per_rollout:
            self.most_per_rollout = count
        if nonfinite:
            self.nonfinite[i] = dict(nonfinite)
        shape = metrics.shape if type(metrics) is PACKED else tuple(metrics)
        known = self._shapes.get(shape)
        if known is not None and _put_row(known[2], i, metrics, known[1]):
            exact = True
            for cells, flags in known[3]:  # (an int column: Miles' train/step)
                flags[i] = 1
                exact = exact and -_EXACT <= cells[i] <= _EXACT
            if exact:
                self.shape_of.append(known[0])
                return i
        if type(metrics) is PACKED:
            metrics = metrics.dict()
        self.shape_of.append(self._add_values(i, shape, metrics))
        return i

    def _grow(self) -> None:
        self._cap = grown(self._cap)
        for col in (self.ts, *self.columns.values()):
            col.ensure(self._cap)
        for flags in self.ints.values():
            flags.extend(bytes(self._cap - len(flags)))
        self._shapes.clear()  # they hold the old arrays' views

    def _add_values(self, i: int, shape: tuple, metrics: dict) -> tuple[str, ...]:
        interned = self._interned.get(shape)
        if interned is None:
            interned = shape if len(self._interned) >= 16 * _SHAPES_MAX else self._interned.setdefault(shape, shape)
        plain = True
        for name, value in metrics.items():
            t = type(value)
            col = self.columns.get(name)
            if col is None:
                col = self.columns[name] = _Column(self._cap)
            flags = self.ints.get(name)
            if flags is not None:
                flags[i] = 0  # (a step the short path flagged before an int past 2**53 came)
            if t is float or (t is int and -_EXACT <= value <= _EXACT):
                col.cells[i] = value
                if t is int:
                    if flags is None:
                        flags = self.ints[name] = bytearray(self._cap)
                    flags[i] = 1
            else:
                col.cells[i] = _NAN
                self.objects.setdefault(name, {})[i] = value
                plain = False
        if plain and (len(self._shapes) < _SHAPES_MAX or shape in self._shapes):
            types = tuple(map(type, metrics.values()))
            ints = tuple((self.columns[name].cells, self.ints[name]) for name, t in zip(shape, types) if t is int)
            self._shapes[shape] = (interned, types, tuple(self.columns[name].view for name in shape), ints)
        return interned

    def logged_exceptions(self, name: str) -> dict[int, Any]:
        """Rollout -> the value of its first step (arrival order) that logged `name` as an int or
        a nan: what a one-step rollout's mean cannot give back as logged."""
        col = self.columns.get(name)
        if col is None:
            return {}
        n = len(self.ns)
        flags = self.ints.get(name)
        ints = {i for i in range(n) if flags[i]} if flags is not None else set()
        objs = self.objects.get(name, {})
        cells, shapes = col.cells, self.shape_of
        nans = [i for i in range(n) if cells[i] != cells[i] and i not in objs and name in shapes[i]]
        numbers = [i for i, v in objs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        out: dict[int, Any] = {}
        for i in sorted(ints.union(nans, numbers)):
            r = self.rollouts[i]
            if r not in out:
                out[r] = objs[i] if i in objs else int(cells[i]) if i in ints else cells[i]
        return out
