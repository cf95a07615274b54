"""`grpo-tui export`: the store as CSV or JSON rows (design.md §6).

Numbers keep full precision; nan/inf become JSON null with the raw token in `_nonfinite`;
strings and bools are kept.  Columns are the union of metric names in first-seen order.
CSV text cells (and names) that a spreadsheet would run as a formula get a leading `'`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any, TextIO

from .output import csv_safe
from .store.metric_store import MetricStore, Segment


_RAW = "\x00raw"  # internal: raw nan/inf tokens of a row, never a column


def _rollout_rows(seg: Segment) -> list[dict[str, Any]]:
    rows = []
    for rid in seg.rollout_ids().tolist():
        row = {"rollout": rid, **seg.rollout_dict(rid)}
        raw = seg.nonfinite.get(seg.row_of[rid])
        if raw:
            row[_RAW] = raw
        rows.append(row)
    return rows


def _step_rows(seg: Segment) -> list[dict[str, Any]]:
    rows = []
    for key in sorted(seg.step_order, key=lambda k: (k[1], k[0])):
        st = seg.steps[key]
        row: dict[str, Any] = {"step": st.n, "rollout": st.rollout}
        if st.role:
            row["role"] = st.role
        row.update(st.metrics)
        if st.nonfinite:
            row[_RAW] = st.nonfinite
        rows.append(row)
    return rows


def rows(store: MetricStore, axis: str = "rollout") -> list[dict[str, Any]]:
    """Every segment's rows; a `segment` field appears only when the log restarted."""
    segs = [s for s in store.segments if s.has_data]
    out: list[dict[str, Any]] = []
    for seg in segs:
        part = _rollout_rows(seg) if axis == "rollout" else _step_rows(seg)
        if len(segs) > 1:
            part = [{"segment": seg.index, **r} for r in part]
        out.extend(part)
    return out


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """A row JSON accepts (design.md §6): every nan/inf, also inside a list, becomes null and the
    metric's raw token (for a list, its text as logged) goes to the `_nonfinite` map."""
    out: dict[str, Any] = {}
    bad: dict[str, str] = {}
    raw = row.get(_RAW, {})
    for k, v in row.items():
        if k == _RAW:
            continue
        out[k], first_bad = _json_value(v)
        if first_bad is not None:
            bad[k] = raw.get(k) or _token(first_bad)
    if bad:
        out["_nonfinite"] = bad
    return out


def _token(v: float) -> str:
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _json_value(value: Any) -> tuple[Any, float | None]:
    """`value` with nested non-finite floats as None, and the first such float (None if none).

    A loop over an explicit stack, not recursion: a deeply nested list can't hit the recursion
    limit.  Lists and tuples come back as lists, dicts as dicts; scalars are not copied.
    """
    if isinstance(value, float):
        return (value, None) if math.isfinite(value) else (None, value)
    if not isinstance(value, (list, tuple, dict)):
        return value, None
    first: float | None = None
    top = [value]
    todo: list[tuple[Any, Any]] = [(top, 0)]      # (container, index or key) still to convert
    while todo:
        box, i = todo.pop()
        v = box[i]
        if isinstance(v, float):
            if not math.isfinite(v):
                box[i] = None
                first = v if first is None else first
        elif isinstance(v, (list, tuple)):
            box[i] = copy = list(v)
            todo.extend((copy, j) for j in reversed(range(len(copy))))
        elif isinstance(v, dict):
            box[i] = copy = dict(v)
            todo.extend((copy, j) for j in reversed(list(copy)))
    return top[0], first


def write_json(data: list[dict[str, Any]], fh: TextIO) -> None:
    json.dump([_jsonable(r) for r in data], fh, indent=None, allow_nan=False)
    fh.write("\n")


def columns(data: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for r in data:
        for k in r:
            if k != _RAW:
                seen.setdefault(k, None)
    return list(seen)


def _csv_cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return csv_safe(v)


def write_csv(data: list[dict[str, Any]], fh: TextIO) -> None:
    cols = columns(data)
    w = csv.writer(fh, lineterminator="\n")
    w.writerow([csv_safe(c) for c in cols])
    for r in data:
        w.writerow([_csv_cell(r.get(c)) for c in cols])


def render(store: MetricStore, fmt: str = "csv", axis: str = "rollout") -> str:
    buf = io.StringIO()
    data = rows(store, axis)
    (write_json if fmt == "json" else write_csv)(data, buf)
    return buf.getvalue()
