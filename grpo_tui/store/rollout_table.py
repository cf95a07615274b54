"""A segment's rollout axis as whole columns: the values `Segment.value` gives cell by cell.

Why: `export` of a big log asked `value(rollout, name)` once per cell (11,800 rollouts × 60
metrics took ~2 s, more than parsing the file should). Here each metric is one numpy slice
turned into a list, and only the cells that are not plain floats are looked at one by one:
objects (strings, bools, lists), ints kept as ints, a train metric logged once per rollout as an
int or a nan (returned exactly as logged), and nan cells (a value only where the log said nan).
`tests/test_export_table.py` checks it equals `value()` on every cell of many stores.

The table export's CSV asks for (`numbers`) of a segment whose rows are in id order (every
common log's) is read without numpy: the store's cells, a train metric's means and nan check in
C (_scan.c: col_means, counted_nan), so such an export never pays for importing it at start;
a segment out of order, and the other tables, import it where they first use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..lazy_numpy import LazyNumpy
from ..lines.native import SCAN
from .columns import _NAN_CELL
from .metric_store import Segment

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyNumpy(globals())  # (imported where a column first needs it: see the docstring)

_COL_MEANS = getattr(SCAN, "col_means", None)
_COUNTED_NAN = getattr(SCAN, "counted_nan", None)


@dataclass(slots=True)
class RolloutTable:
    """Rows in rollout-id order; `cells[name][i]` is row i's value of `name` (None: no value)."""

    ids: list[int]
    rows: list[int]  # the segment's row index of each output row
    cells: dict[str, list[Any]]  # names in the segment's first-seen order


def _logged_exceptions(seg: Segment) -> dict[str, dict[int, Any]]:
    """Per train metric, the rows where `value()` returns a step's value as logged and that
    value is not what sum/count gives as a float: an int (kept an int) or a nan.

    Only the names that can have one are read step by step: those some step logged as an int
    (Segment.step_int_names) and those whose sum a nan made nan."""
    n = len(seg.ids)
    names = set(seg.step_int_names)
    for name, total in seg.train_sum.items():
        if name not in names:
            if _COUNTED_NAN is not None:
                bad = _COUNTED_NAN(total.cells, seg.train_cnt[name].cells, n)
            else:
                sums, counts = total.data[:n], seg.train_cnt[name].data[:n]
                bad = np.isnan(sums[~np.isnan(counts)]).any()
            if bad:
                names.add(name)
    out: dict[str, dict[int, Any]] = {}
    row_of = seg.row_of
    for name in names:
        got = seg.steps.logged_exceptions(name)
        if got:
            out[name] = {row_of[r]: v for r, v in got.items()}
    return out


def _column(
    seg: Segment, name: str, order: np.ndarray | range, pos: np.ndarray | range, logged: dict[int, Any] | None
) -> list[Any]:
    """A column as a list.  `order` a range: an id-ordered segment's rows, read without numpy."""
    if type(order) is range:
        vals = _quick_values(seg, name, len(order))
        cells: list[Any] = vals.tolist()
        nan_at = [i for i, x in enumerate(cells) if x != x]
    else:
        vals = seg.values_at_rows(name, order)
        cells = vals.tolist()
        nan_at = np.flatnonzero(np.isnan(vals)).tolist()
    train = name in seg.train_sum
    if nan_at:
        nonfinite = seg.nonfinite
        for i in nan_at:
            if name not in nonfinite.get(int(order[i]), ()):
                cells[i] = None
    if train:
        if logged:
            cnt = seg.train_cnt[name].cells
            for row, v in logged.items():
                if cnt[row] == 1.0:  # value(): one step, its value exactly as logged
                    cells[pos[row]] = v
    else:
        state = seg.int_state.get(name)
        if state == "i":
            cells = [c if c is None else int(c) for c in cells]
        elif isinstance(state, set):
            for row in state:
                i = pos[row]
                if cells[i] is not None:
                    cells[i] = int(cells[i])
    objs = seg.objects.get(name)
    if objs:
        for row, v in objs.items():
            cells[pos[row]] = v
    return cells


def rollout_table(seg: Segment, numbers: bool = False) -> RolloutTable:
    """The table; with `numbers`, a column whose every cell is a float or None (or an int or
    None) comes as (float64 array, "f" or "i"), NaN for None, instead of a list: what
    _column's list would be, without a Python object per cell (export's CSV, ~700,000 cells of
    a big log, writes such columns in C: _scan.c csv_rows)."""
    n = len(seg.ids)
    exceptions = _logged_exceptions(seg) if seg.steps else {}
    cells: dict[str, Any] = {}
    if numbers and seg.ordered and _COL_MEANS is not None:
        # rows already in id order (order and pos: the row numbers): read without numpy
        rows = range(n)
        for name in seg.names:
            logged = exceptions.get(name)
            got = _quick_number_column(seg, name, n, logged)
            cells[name] = got if got is not None else _column(seg, name, rows, rows, logged)
        # (ids_at(arange(n)).tolist(): the ids' float cells as ints)
        return RolloutTable(list(map(int, seg._idcol.cells[:n])), list(rows), cells)
    order = seg._order()
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    for name in seg.names:
        got = _number_column(seg, name, order, exceptions.get(name)) if numbers else None
        cells[name] = got if got is not None else _column(seg, name, order, pos, exceptions.get(name))
    return RolloutTable(seg.ids_at(order).tolist(), order.tolist(), cells)


def _quick_number_column(seg: Segment, name: str, n: int, logged: dict[int, Any] | None):
    """_number_column of a segment whose rows are in id order, without numpy: the same
    decision, the same float64 values (the store's cells; a train metric's means by col_means),
    as an array or memoryview of doubles."""
    if seg.objects.get(name) or seg.nonfinite_rows.get(name):
        return None
    vals = _quick_values(seg, name, n)
    if name in seg.train_sum:
        if not logged:
            return vals, "f"
        have = [i for i, x in enumerate(vals) if x == x]  # (rows with a value: NaN != NaN)
        return (vals, "i") if _logged_ints(seg, name, have, [vals[i] for i in have], logged) else None
    state = seg.int_state.get(name)
    if state == "i":
        return vals, "i"
    return None if isinstance(state, set) else (vals, "f")


def _quick_values(seg: Segment, name: str, n: int):
    """values_at_rows(name, arange(n)) without numpy, as doubles: a copy of the cells, or the
    means of a train metric's steps (the same division, in C)."""
    total = seg.train_sum.get(name)
    if total is not None:
        assert _COL_MEANS is not None  # (rollout_table takes this path only with col_means)
        return memoryview(_COL_MEANS(total.cells, seg.train_cnt[name].cells, n)).cast("d")
    col = seg.columns.get(name)
    return _NAN_CELL * n if col is None else col.cells[:n]


def _all_logged_ints(seg: Segment, name: str, order: np.ndarray, vals: np.ndarray, logged: dict[int, Any]) -> bool:
    """Every cell of a train metric with a value is its rollout's only step's value as logged,
    an int (`train/step`): _column writes those ints, an "i" column the same (exact below 2**53)."""
    have = np.flatnonzero(~np.isnan(vals))
    return _logged_ints(seg, name, order[have].tolist(), vals[have].tolist(), logged)


def _logged_ints(seg: Segment, name: str, rows: list[int], values: list[float], logged: dict[int, Any]) -> bool:
    """_all_logged_ints of the rows with a value and their values."""
    if len(rows) != len(logged):
        return False
    if not rows:
        return True
    # (each test over all rows at once, in C, not a row at a time in Python)
    got: list[Any] = list(map(logged.get, rows))
    return (
        set(map(type, got)) == {int}
        and set(map(seg.train_cnt[name].cells.__getitem__, rows)) == {1.0}
        and min(got) > -(2**53)
        and max(got) < 2**53
        and values == got
    )


def _number_column(seg: Segment, name: str, order: np.ndarray, logged: dict[int, Any] | None):
    """_column's cells as (values, "f" | "i") when they are all floats or None ("f") or ints or
    None ("i"): no object, no nan kept as a value (a nan/inf token), no step value logged as an
    int or a nan, no mix of ints and floats; else None (the list then)."""
    if seg.objects.get(name) or seg.nonfinite_rows.get(name):
        return None
    vals = np.ascontiguousarray(seg.values_at_rows(name, order), dtype=np.float64)
    if name in seg.train_sum:
        if not logged:
            return vals, "f"
        return (vals, "i") if _all_logged_ints(seg, name, order, vals, logged) else None
    state = seg.int_state.get(name)
    if state == "i":
        return vals, "i"
    return None if isinstance(state, set) else (vals, "f")


def number_cells(col) -> list[Any]:
    """A (values, kind) column as _column's list."""
    vals, kind = col
    cells: list[Any] = [None if c != c else c for c in vals.tolist()]  # (NaN != NaN: blank)
    if kind == "i":
        cells = [c if c is None else int(c) for c in cells]
    return cells
