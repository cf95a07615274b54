"""MetricStore: records and events -> float64 columns keyed by rollout id, per run segment.

Facts it must get right (docs/contracts.md §3): the x-axis is the rollout id; `step N:` lines are
optimizer steps (K per rollout) whose per-rollout value is the mean of its K steps; Megatron
prints each step twice (dedup on (role, N)); one rollout has two `perf N:` records (merged);
a new launch or rollout ids going back start a new segment, the latest being current.
Built incrementally: `add()` takes a few items at a time and says what changed.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..lazy_numpy import LazyNumpy
from ..lines.formats import OTHER_FRAMEWORKS
from ..lines.launch import FlagsMemo, arg_dump_to_flag
from ..lines.native import PACKED
from ..lines.records import Event, Item, MetricRecord
from .columns import _NAN, _add_row, _add_to_cell, _Column, _put_row, grown
from .events import EventChain, EventLog
from .steps import StepRow, StepTable

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyNumpy(globals())  # (imported where a method first needs it: see lazy_numpy.py)


_SHAPES_MAX = 64  # record shapes a segment remembers (a real run logs a handful)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_RM_KEYS: dict[tuple, bool] = {}  # perf records' key tuples -> any rollout-manager key


def _rm_perf(rec: MetricRecord) -> bool:
    """The rollout manager's perf line (sample stats), as opposed to the trainer's timers."""
    if rec.actor == "RolloutManager" or rec.proc == "rollout_manager":
        return True
    metrics = rec.metrics
    keys = metrics.shape if type(metrics) is PACKED else tuple(metrics)  # type: ignore[attr-defined]
    known = _RM_KEYS.get(keys)
    if known is None:
        known = any(k.startswith(("rollout/", "passrate/")) for k in keys)
        if len(_RM_KEYS) >= 4 * _SHAPES_MAX:  # hostile logs: new keys on every line
            _RM_KEYS.clear()
        _RM_KEYS[keys] = known
    return known


# a record kind's bit in a row's kind mask (the parser's kinds; anything else shares the last bit)
KIND_BITS = {"rollout": 1, "perf": 2, "step": 4, "eval": 8, "multi_turn": 16, "passrate": 32}
_OTHER_KIND = 128


class Segment:
    """One run (between restarts): every rollout row, every step, every event."""

    def __init__(self, index: int, start_line: int, flags: dict | None = None) -> None:
        self.index = index
        self.start_line = start_line
        self.flags: dict = dict(flags or {})
        self._flag_memo = FlagsMemo()  # K and groups, read again when a flag changes
        self.row_of: dict[int, int] = {}
        self.ids: list[int] = []
        self.ordered = True
        self._cap = 64
        self.columns: dict[str, _Column] = {}  # rollout-level numbers, name -> column
        self.train_sum: dict[str, _Column] = {}
        self.train_cnt: dict[str, _Column] = {}
        self.objects: dict[str, dict[int, Any]] = {}  # non-numeric values: name -> row -> value
        self.nonfinite: dict[int, dict[str, str]] = {}  # row -> metric -> raw token
        # metric -> rows holding nan/inf, sorted (a window's rows are found by bisection: a
        # run that logs nan at every other step has thousands, read at every rollout judged)
        self.nonfinite_rows: dict[str, list[int]] = {}
        # Which cells were logged as ints (kept ints in export): per column "i" (all ints),
        # "f" (no ints) or a set of the int rows when a column mixes both (rare).
        self.int_state: dict[str, str | set[int]] = {}
        self._int_version = 0  # bumped at every int_state change
        # add_record's short path: names in order -> (_int_version, value types, their columns'
        # views); _add_step's: names in order -> (value types, their sums' and counts' views).
        # Forgotten when the columns grow (new arrays, new views).
        self._shapes: dict[tuple, tuple[int, tuple, tuple[memoryview, ...]]] = {}
        self._step_shapes: dict[tuple, tuple[tuple, tuple[memoryview, ...], tuple[memoryview, ...]]] = {}
        self.names: dict[str, None] = {}  # rollout-axis names, first-seen order
        self.train_names: dict[str, None] = {}  # step-axis names, first-seen order
        # step-axis names some step logged as a number that is not a float (an int): export keeps
        # those cells as logged (rollout_table._logged_exceptions looks only at these, and at the
        # sums a nan made nan, instead of at every step value).  _add_step_values sees them all:
        # a step shape's short path (_add_row) takes only the types of the step it learned from.
        self.step_int_names: set[str] = set()
        self.kind_mask = bytearray(self._cap)  # row -> the record kinds seen, as KIND_BITS
        self.first_ts = _Column(self._cap)
        self.last_ts = _Column(self._cap)
        self._max_id: int | None = None  # running max: O(1) for every live update
        self._idcol = _Column(self._cap)  # ids as numbers: O(1) access for live reads
        self.steps = StepTable()
        self.duplicate_steps = 0
        self.events = EventLog()
        # what the judge derives from this run's shape, kept with the run (judge/rules/, engine.py)
        self.judge_memo: dict[str, Any] = {}
        self.records = 0
        self.framework = "miles"  # verl / trl console lines switch it
        self.first_record_ts: float | None = None
        self.last_record_ts: float | None = None
        self.last_record_line = 0
        self._stream_max: dict[tuple, int] = {}
        self._last_train_rollout: int | None = None
        self._k_inferred: int | None = None
        # before a record is written to a rollout at or below `guard`: call on_guard() once
        # (deferred judging judges what it recorded first: pipeline.Pipeline._store)
        self.guard: int | None = None
        self.on_guard: Callable[[], object] | None = None

    # -- shape ----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def steps_per_rollout(self) -> int:
        """K: from the launch flags, else inferred from step and rollout ids, else 1."""
        return self._flag_memo.steps_per_rollout(self.flags) or self._k_inferred or max(1, self.steps.most_per_rollout)

    @property
    def k_source(self) -> str:
        if self._flag_memo.steps_per_rollout(self.flags):
            return "flags"
        return "inferred" if (self._k_inferred or self.steps) else "default"

    @property
    def groups(self) -> int | None:
        return self._flag_memo.groups_per_rollout(self.flags)

    @property
    def has_data(self) -> bool:
        return bool(self.ids) or bool(self.steps)

    def _row(self, rollout: int) -> int:
        row = self.row_of.get(rollout)
        if row is not None:
            return row
        row = len(self.ids)
        if self.ids and rollout < self.ids[-1]:
            self.ordered = False
        self.ids.append(rollout)
        self.row_of[rollout] = row
        if self._max_id is None or rollout > self._max_id:
            self._max_id = rollout
        if row >= self._cap:
            self._cap = grown(self._cap)
            for col in (
                *self.columns.values(),
                *self.train_sum.values(),
                *self.train_cnt.values(),
                self.first_ts,
                self.last_ts,
                self._idcol,
            ):
                col.ensure(self._cap)
            self.kind_mask.extend(bytes(self._cap - len(self.kind_mask)))
            self._shapes.clear()  # they hold the old arrays' views
            self._step_shapes.clear()
        self._idcol.cells[row] = rollout
        return row

    def _col(self, table: dict[str, _Column], name: str) -> _Column:
        col = table.get(name)
        if col is None:
            col = table[name] = _Column(self._cap)
        return col

    # -- writes -----------------------------------------------------------------------
    def add_record(self, rec: MetricRecord) -> int:
        """Store one record; returns the rollout id it touched."""
        self.records += 1
        if rec.source in OTHER_FRAMEWORKS:
            self.framework = rec.source
        ts = rec.ts
        if ts is not None:
            if self.first_record_ts is None:
                self.first_record_ts = ts
            self.last_record_ts = ts
        self.last_record_line = rec.line_no
        kind = rec.kind
        if kind == "step":
            return self._add_step(rec)
        n = rec.n
        if self.guard is not None and n <= self.guard:
            self._tripped()
        if kind == "rollout":
            self._last_train_rollout = n
        row = self.row_of.get(n)
        if row is None:
            row = self._row(n)
        self.kind_mask[row] |= KIND_BITS.get(kind, _OTHER_KIND)
        self._stamp(row, ts)
        metrics = rec.metrics
        packed = type(metrics) is PACKED  # (a whole-file read's: see LineParser.packed)
        shape = metrics.shape if packed else tuple(metrics)  # type: ignore[attr-defined]
        known = self._shapes.get(shape)
        # A record shaped like one before (the same names in order, the same number types) while
        # no column's int/float state changed: only the values are new (_put_row writes them).
        if (
            known is None
            or known[0] != self._int_version
            or self.objects
            or not _put_row(known[2], row, metrics, known[1])
        ):
            if packed:
                metrics = rec.metrics = metrics.dict()  # type: ignore[attr-defined]
            self._add_values(row, metrics)
            self._learn_shape(shape, metrics)
        if rec.nonfinite:
            self._mark_nonfinite(row, rec.nonfinite)
        return n

    def _tripped(self) -> None:
        hook, self.guard, self.on_guard = self.on_guard, None, None
        if hook is not None:
            hook()

    def has_kinds(self, row: int, *kinds: str) -> bool:
        want = 0
        for kind in kinds:
            want |= KIND_BITS.get(kind, _OTHER_KIND)
        return self.kind_mask[row] & want == want

    def _learn_shape(self, shape: tuple, metrics: dict) -> None:
        """Remember a record's shape for add_record's short path: only when every value is a plain
        int or float whose column already holds that type alone (so storing the next such value
        changes nothing but the cell).  Bounded: hostile logs may give each record new names."""
        if self.objects or (len(self._shapes) >= _SHAPES_MAX and shape not in self._shapes):
            return
        types = tuple(map(type, metrics.values()))
        int_state = self.int_state
        for name, t in zip(shape, types):
            if not ((t is float and int_state.get(name) == "f") or (t is int and int_state.get(name) == "i")):
                return
        self._shapes[shape] = (self._int_version, types, tuple(self.columns[name].view for name in shape))

    def _add_values(self, row: int, metrics: dict) -> None:
        names, columns, objects, int_state = self.names, self.columns, self.objects, self.int_state
        for name, value in metrics.items():
            if name not in names:
                names[name] = None
            t = type(value)
            if t is float or t is int or _is_number(value):
                col = columns.get(name)
                if col is None:
                    col = columns[name] = _Column(self._cap)
                col.cells[row] = value
                if objects:
                    objs = objects.get(name)
                    if objs:
                        objs.pop(row, None)
                is_int = isinstance(value, int)
                if int_state.get(name) != ("i" if is_int else "f"):  # the common case: nothing changes
                    self._note_int(name, row, is_int)
            else:
                objects.setdefault(name, {})[row] = value

    def _note_int(self, name: str, row: int, is_int: bool) -> None:
        self._int_version += 1  # add_record's remembered shapes are checked against this
        state = self.int_state.get(name)
        if state is None:
            self.int_state[name] = "i" if is_int else "f"
        elif isinstance(state, set):
            (state.add if is_int else state.discard)(row)
        elif (state == "i") != is_int:
            # The column turns mixed: remember the int rows explicitly from now on.
            col = self.columns[name].data[: len(self.ids)]
            rows = set(np.flatnonzero(~np.isnan(col)).tolist()) if state == "i" else set()
            rows.discard(row)
            if is_int:
                rows.add(row)
            self.int_state[name] = rows

    def _stamp(self, row: int, ts: float | None) -> None:
        if ts is None:
            return
        if type(ts) is float:  # (the parser's): through the views
            first: Any = self.first_ts.view  # (a memoryview of doubles)
            old = first[row]
            if old != old:
                first[row] = ts
            last: Any = self.last_ts.view
            last[row] = ts
            return
        if math.isnan(self.first_ts.cells[row]):
            self.first_ts.cells[row] = ts
        self.last_ts.cells[row] = ts

    def _step_rollout(self, n: int) -> int:
        k = self._flag_memo.steps_per_rollout(self.flags)
        if k:
            return n // k
        r = self._last_train_rollout
        if r is not None:
            if r > 0 and self._k_inferred is None and n >= r:
                self._k_inferred = max(1, n // r)
            if self._k_inferred and n // self._k_inferred != r:
                return n // self._k_inferred
            return r
        return n // (self._k_inferred or 1)

    def _add_step(self, rec: MetricRecord) -> int:
        steps = self.steps
        key = (rec.role, rec.n)
        known = steps.index.get(key)
        if known is not None:
            if self.guard is not None and steps.rollouts[known] <= self.guard:
                self._tripped()  # (a doubled line writes nothing, but it marks its rollout)
            self.duplicate_steps += 1
            return steps.rollouts[known]
        rollout = self._step_rollout(rec.n)
        if self.guard is not None and rollout <= self.guard:
            self._tripped()
        metrics = rec.metrics
        steps.add(key, rollout, metrics, rec.time, rec.ts, rec.nonfinite)
        row = self.row_of.get(rollout)
        if row is None:
            row = self._row(rollout)
        self.kind_mask[row] |= 4  # KIND_BITS["step"]
        if rec.ts is not None:
            self._stamp(row, rec.ts)
        packed = type(metrics) is PACKED
        shape = metrics.shape if packed else tuple(metrics)  # type: ignore[attr-defined]
        known_shape = self._step_shapes.get(shape)
        # A step shaped like one before (the same names in order, plain numbers only): its names
        # are known and its columns exist; only the sums and counts change (_add_row).
        if known_shape is None or not _add_row(known_shape[1], known_shape[2], row, metrics, known_shape[0]):
            if packed:
                metrics = rec.metrics = metrics.dict()  # type: ignore[attr-defined]
            self._add_step_values(row, metrics)
            self._learn_step_shape(shape, metrics)
        if rec.nonfinite:
            self._mark_nonfinite(row, rec.nonfinite)
        return rollout

    def _learn_step_shape(self, shape: tuple, metrics: dict) -> None:
        """Remember a step's shape for _add_step's short path when every value is a plain int or
        float (bounded like _learn_shape)."""
        if len(self._step_shapes) >= _SHAPES_MAX and shape not in self._step_shapes:
            return
        types = tuple(map(type, metrics.values()))
        if all(t is float or t is int for t in types):
            self._step_shapes[shape] = (
                types,
                tuple(self.train_sum[name].view for name in shape),
                tuple(self.train_cnt[name].view for name in shape),
            )

    def _add_step_values(self, row: int, metrics: dict) -> None:
        train_names, names = self.train_names, self.names
        for name, value in metrics.items():
            if name not in train_names:
                train_names[name] = None
            if name not in names:
                names[name] = None
            t = type(value)
            if t is not float and (t is int or _is_number(value)):
                self.step_int_names.add(name)
            if t is float or t is int or _is_number(value):
                _add_to_cell(self._col(self.train_sum, name).cells, self._col(self.train_cnt, name).cells, row, value)
            else:
                self.objects.setdefault(name, {})[row] = value

    def is_restart(self, rec: MetricRecord) -> bool:
        """Rollout ids going back (or repeating) within one stream means the run restarted."""
        kind = rec.kind
        stream: tuple[str | None, ...]
        if kind == "rollout":
            stream = ("rollout", rec.proc, rec.role)
        elif kind == "perf" and _rm_perf(rec):
            stream = ("perf_rm", rec.proc)
        else:
            return False
        n = rec.n
        prev = self._stream_max.get(stream)
        if prev is None:
            self._stream_max[stream] = n
            return False
        if n > prev:
            self._stream_max[stream] = n
            return False
        return True

    def _mark_nonfinite(self, row: int, tokens: dict[str, str]) -> None:
        self.nonfinite.setdefault(row, {}).update(tokens)
        for name in tokens:
            rows = self.nonfinite_rows.get(name)
            if rows is None:
                self.nonfinite_rows[name] = [row]
            elif rows[-1] < row:  # (rows come in order: the common case)
                rows.append(row)
            else:
                i = bisect.bisect_left(rows, row)
                if i == len(rows) or rows[i] != row:
                    rows.insert(i, row)

    def id_array(self) -> np.ndarray:
        """Rollout ids by row (a view; rows are in arrival order)."""
        return self._idcol.data[: len(self.ids)].astype(np.int64)

    def ids_at(self, rows: np.ndarray) -> np.ndarray:
        return self._idcol.data[rows].astype(np.int64)

    # -- reads ---------------------------------------------------------------------------
    def _order(self) -> np.ndarray:
        ids = self.id_array()
        return np.arange(len(ids)) if self.ordered else np.argsort(ids, kind="stable")

    def rollout_ids(self) -> np.ndarray:
        ids = self.id_array()
        return ids if self.ordered else ids[self._order()]

    def rows_upto(self, last: int | None = None, upto: int | None = None) -> np.ndarray:
        """Row indices sorted by rollout id, ending at rollout `upto` (inclusive), at most `last`."""
        n = len(self.ids)
        if self.ordered:
            end = n
            if upto is not None:
                end = _end_upto(self.ids, upto)
            return np.arange(0 if last is None else max(0, end - last), end)
        order = self._order()
        if upto is not None:
            ids = self.ids_at(order)
            order = order[: int(np.searchsorted(ids, upto, side="right"))]
        return order if last is None else order[-last:]

    def series(self, name: str, last: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rollout ids, values) sorted by id, rows without the metric dropped.

        `last` limits the work to the newest rows, so a live update costs the same at
        100 rollouts and at 100,000.
        """
        n = len(self.ids)
        if n == 0:
            return np.empty(0, np.int64), np.empty(0)
        if self.ordered:
            lo = 0 if last is None else max(0, n - last)
            rows = np.arange(lo, n)
        else:
            rows = self._order()
            if last is not None:
                rows = rows[-last:]
        vals = self.values_at_rows(name, rows)
        if self.ordered:
            ids = self.ids_at(rows)
        else:
            ids = self.ids_at(rows)
        keep = ~np.isnan(vals) | self._nonfinite_mask(name, rows)
        return ids[keep], vals[keep]

    def values_at_rows(self, name: str, rows: np.ndarray) -> np.ndarray:
        if name in self.train_sum:
            s = self.train_sum[name].data[rows]
            c = self.train_cnt[name].data[rows]
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(c > 0, s / np.where(c > 0, c, 1), _NAN)
        col = self.columns.get(name)
        if col is None:
            return np.full(len(rows), _NAN)
        return col.data[rows]

    def _nonfinite_mask(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Rows where the metric was logged as nan (kept: nan is a value, not a gap)."""
        bad = self.nonfinite_rows.get(name)
        if not bad or not len(rows):
            return np.zeros(len(rows), dtype=bool)
        lo, hi = int(rows.min()), int(rows.max())
        near = bad[bisect.bisect_left(bad, lo) : bisect.bisect_right(bad, hi)]
        return np.isin(rows, np.asarray(near, dtype=np.int64))

    def value(self, rollout: int, name: str) -> Any:
        """One rollout's value of one metric (train metrics: mean over its K steps)."""
        row = self.row_of.get(rollout)
        if row is None:
            return None
        obj = self.objects.get(name)
        if obj and row in obj:
            return obj[row]
        cnt = self.train_cnt.get(name)
        if cnt is not None and cnt.cells[row] == 1.0:
            # One step in this rollout: its value exactly as logged (an int stays an int).
            for i in self.steps.of_rollout.get(rollout, ()):
                if name in self.steps.shape_of[i]:
                    got = self.steps.value(name, i)
                    if _is_number(got):
                        return got
        v = self.values_at_rows(name, np.asarray([row]))[0]
        if math.isnan(v) and name not in self.nonfinite.get(row, {}):
            return None
        return float(v) if not _intlike(self, name, row) else int(v)

    def rollout_dict(self, rollout: int) -> dict[str, Any]:
        """Every metric of one rollout, names in first-seen order."""
        out: dict[str, Any] = {}
        for name in self.names:
            v = self.value(rollout, name)
            if v is not None:
                out[name] = v
        return out

    def steps_of(self, rollout: int) -> list[StepRow]:
        return self.steps.rows_of(rollout)

    def steps_in(self, rollout: int) -> int:
        """How many steps a rollout has (after dedup)."""
        return len(self.steps.of_rollout.get(rollout, ()))

    @property
    def last_rollout(self) -> int | None:
        return self._max_id


def _intlike(seg: Segment, name: str, row: int) -> bool:
    """Ints stay ints in export when the logged value was an int (counts, max/min lengths)."""
    if name in seg.train_sum:
        return False
    state = seg.int_state.get(name)
    if isinstance(state, set):
        return row in state
    return state == "i"


@dataclass(slots=True)
class StoreUpdate:
    """What one `add()` changed: the views redraw only this."""

    rollouts: set[int] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    records: list[MetricRecord] = field(default_factory=list)  # without doubled step lines
    new_segment: bool = False
    old_run: set[int] | None = None  # with new_segment: the rollouts written before the first new one

    def __bool__(self) -> bool:
        return bool(self.rollouts or self.events or self.records or self.new_segment)

    def mark_new_segment(self) -> None:
        if not self.new_segment:
            self.new_segment = True
            self.old_run = set(self.rollouts)


class MetricStore:
    """All segments of one log; the last is current."""

    def __init__(self) -> None:
        self.segments: list[Segment] = [Segment(0, 1)]
        self.events = EventChain(self.segments)  # every segment's, in order
        self.pending_flags: dict = {}

    @property
    def current(self) -> Segment:
        return self.segments[-1]

    def _new_segment(self, line_no: int, flags: dict | None) -> None:
        self.segments.append(Segment(len(self.segments), line_no, flags))

    def start_segment(self) -> bool:
        """The file was rewritten or replaced: what comes next is a new run (a restart).

        Returns whether a segment was started (not when the current one is still empty)."""
        if not self.current.has_data:
            return False
        self._new_segment(0, self.current.flags)
        return True

    def add(self, items: Iterable[Item], up: StoreUpdate | None = None) -> StoreUpdate:
        """Store items in order; what changed (into `up` when given)."""
        if up is None:
            up = StoreUpdate()
        rollouts, records = up.rollouts, up.records
        seg = self.segments[-1]
        if type(items) is not list:
            items = list(items)
        for item in items:
            if type(item) is MetricRecord:
                kind = item.kind  # (only rollout and perf ids can go back: see is_restart)
                if (kind == "rollout" or kind == "perf") and (seg.ids or seg.steps) and seg.is_restart(item):
                    self._new_segment(item.line_no, seg.flags)
                    up.mark_new_segment()
                    seg = self.segments[-1]
                    seg.is_restart(item)
                doubled = seg.duplicate_steps
                rollouts.add(seg.add_record(item))
                if seg.duplicate_steps == doubled:  # (a doubled step line is no news)
                    records.append(item)
            else:
                self._add_event(item, up)  # type: ignore[arg-type]
                seg = self.segments[-1]
        return up

    def _add_event(self, ev: Event, up: StoreUpdate) -> None:
        if ev.kind == "launch":
            if self.current.has_data:
                self._new_segment(ev.line_no, ev.data.get("flags"))
                up.mark_new_segment()
            else:
                self.current.flags.update(ev.data.get("flags") or {})
        elif ev.kind == "arg":
            name = arg_dump_to_flag(ev.data["name"])
            self.current.flags.setdefault(name, ev.data["value"])
        ev.data.setdefault("after_rollout", self.current._max_id)  # where it sits on the timeline
        self.current.events.append(ev)
        up.events.append(ev)


def _end_upto(ids: list[int], upto: int) -> int:
    """Rows are in id order: index after the last row with id <= upto (binary search)."""
    return bisect.bisect_right(ids, upto)
