"""A segment's rollout axis as whole columns: the values `Segment.value` gives cell by cell.

Why: `export` of a big log asked `value(rollout, name)` once per cell (11,800 rollouts × 60
metrics took ~2 s, more than parsing the file should). Here each metric is one numpy slice
turned into a list, and only the cells that are not plain floats are looked at one by one:
objects (strings, bools, lists), ints kept as ints, a train metric logged once per rollout as an
int or a nan (returned exactly as logged), and nan cells (a value only where the log said nan).
`tests/test_export_table.py` checks it equals `value()` on every cell of many stores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .metric_store import Segment, _is_number


@dataclass(slots=True)
class RolloutTable:
    """Rows in rollout-id order; `cells[name][i]` is row i's value of `name` (None: no value)."""

    ids: list[int]
    rows: list[int]                 # the segment's row index of each output row
    cells: dict[str, list[Any]]     # names in the segment's first-seen order


def _logged_exceptions(seg: Segment) -> dict[str, dict[int, Any]]:
    """Per train metric, the rows where `value()` returns a step's value as logged and that
    value is not what sum/count gives as a float: an int (kept an int) or a nan."""
    out: dict[str, dict[int, Any]] = {}
    row_of = seg.row_of
    for st in seg.steps.values():
        for name, v in st.metrics.items():
            if type(v) is float and v == v:
                continue
            if _is_number(v):
                out.setdefault(name, {}).setdefault(row_of[st.rollout], v)
    return out


def _column(seg: Segment, name: str, order: np.ndarray, pos: np.ndarray,
            logged: dict[int, Any] | None) -> list[Any]:
    vals = seg.values_at_rows(name, order)
    cells: list[Any] = vals.tolist()
    train = name in seg.train_sum
    nan_at = np.flatnonzero(np.isnan(vals))
    if len(nan_at):
        nonfinite = seg.nonfinite
        for i in nan_at.tolist():
            if name not in nonfinite.get(int(order[i]), ()):
                cells[i] = None
    if train:
        if logged:
            cnt = seg.train_cnt[name].data
            for row, v in logged.items():
                if cnt[row] == 1.0:            # value(): one step, its value exactly as logged
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


def rollout_table(seg: Segment) -> RolloutTable:
    order = seg._order()
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    exceptions = _logged_exceptions(seg) if seg.steps else {}
    cells = {name: _column(seg, name, order, pos, exceptions.get(name)) for name in seg.names}
    return RolloutTable(seg.ids_at(order).tolist(), order.tolist(), cells)
