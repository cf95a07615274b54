"""The store's float64 columns, and the row writers of its short paths: the C kernels put_row and
add_row (lines/native.py) or their Python twins here, which tests/equivalence compares."""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING, Any

from ..lazy_numpy import LazyNumpy
from ..lines.native import SCAN

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyNumpy(globals())  # (imported where a method first needs it: see lazy_numpy.py)

_NAN = math.nan
_NAN_CELL = array("d", [_NAN])


class _Column:
    """A growable float64 column, NaN where a row has no value.

    `cells` is an array of doubles: filling a store needs no numpy (a read that is not judged,
    `export`, never imports it), and a cell takes and gives a value as numpy's float64 array
    did (an int converted by its __float__, the same error past float64's range).  `view` is a
    memoryview of it for the store's per-cell writes (a plain int or float goes in, a cell comes
    out as a float) at a fraction of the indexing cost; `data` is numpy's array over the same
    memory (made when first read: the judge's and the table's vector reads)."""

    __slots__ = ("cells", "view", "_data")

    def __init__(self, capacity: int) -> None:
        self.cells = _NAN_CELL * capacity
        self.view = memoryview(self.cells)
        self._data: np.ndarray | None = None

    @property
    def data(self) -> np.ndarray:
        d = self._data
        if d is None:
            d = self._data = np.frombuffer(self.cells)  # float64, writable, the same cells
        return d

    def ensure(self, capacity: int) -> None:
        n = len(self.cells)
        if capacity > n:
            new = _NAN_CELL * capacity
            new[:n] = self.cells
            self.cells, self.view, self._data = new, memoryview(new), None


def grown(capacity: int) -> int:
    """The next capacity of a store's columns: a quarter more, so a long run's columns hold at
    most a fifth of unused cells (doubling left up to half: ~40 MB of a 1 GB log's store)."""
    return capacity + max(64, capacity // 4)


def _put_row_py(views: tuple, row: int, metrics: dict, types: tuple) -> bool:
    """add_record's short path: the values into their columns' cells at `row` when each is of
    the type the shape remembers (else False, nothing written: the long path decides)."""
    if tuple(map(type, metrics.values())) != types:
        return False
    for view, value in zip(views, metrics.values()):
        try:
            view[row] = value
        except ValueError:  # an int past float64's range: the column's own conversion
            view.obj[row] = value
    return True


def _add_row_py(sums: tuple, counts: tuple, row: int, metrics: dict, types: tuple) -> bool:
    """_add_step's short path: each value into its rollout's sum and count (the mean of its K
    steps) when each is of the type the shape remembers (else False, nothing written)."""
    if tuple(map(type, metrics.values())) != types:
        return False
    for total, count_view, value in zip(sums, counts, metrics.values()):
        count = count_view[row]
        try:
            if count != count:  # NaN: the rollout's first step with it
                total[row], count_view[row] = value, 1.0
            else:
                total[row] += value
                count_view[row] = count + 1.0
        except (ValueError, OverflowError):  # an int past float64's range: as the column does
            _add_to_cell(total.obj, count_view.obj, row, value)
    return True


# The C accelerator's versions (_scan.c: put_row, add_row) read the values straight into the
# float64 cells, with the same type checks and the same arithmetic (tests/test_scan_equivalence.py).
_put_row = SCAN.put_row if SCAN is not None else _put_row_py
_add_row = SCAN.add_row if SCAN is not None else _add_row_py


def _add_to_cell(total: array, count: array, row: int, value: Any) -> None:
    """One step's value into its rollout's sum and count (the mean of its K steps)."""
    if math.isnan(count[row]):
        total[row], count[row] = value, 1.0
    else:
        total[row] += value
        count[row] += 1.0
