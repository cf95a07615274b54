"""`grpo-tui export`: the store as CSV or JSON rows (docs/contracts.md §6.5).

Numbers keep full precision; nan/inf become JSON null with the raw token in `_nonfinite`;
strings and bools are kept.  Columns are the union of metric names in first-seen order.
CSV text cells (and names) that a spreadsheet would run as a formula get a leading `'`.
"""

from __future__ import annotations

import csv
import io
import math
import struct
import threading
from array import array
from typing import Any, TextIO

from .lines.native import SCAN
from .output import csv_safe
from .store.metric_store import MetricStore, Segment
from .store.rollout_table import number_cells, rollout_table

_RAW = "\x00raw"  # internal: raw nan/inf tokens of a row, never a column


def _rollout_rows(seg: Segment) -> list[dict[str, Any]]:
    table = rollout_table(seg)
    return [_table_row(table, i, seg.nonfinite) for i in range(len(table.ids))]


def _table_row(table, i: int, nonfinite: dict) -> dict[str, Any]:
    """Row i of a rollout table as export's dict: the id, each cell with a value, the raw nan/inf tokens."""
    row: dict[str, Any] = {"rollout": table.ids[i]}
    for name, col in table.cells.items():
        v = _cell(col, i)
        if v is not None:
            row[name] = v
    raw = nonfinite.get(table.rows[i])
    if raw:
        row[_RAW] = raw
    return row


def _step_rows(seg: Segment) -> list[dict[str, Any]]:
    rows = []
    for key in sorted(seg.steps, key=lambda k: (k[1], k[0])):
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
    """A row JSON accepts (docs/contracts.md §6.5): every nan/inf, also inside a list, becomes null and the
    metric's raw token (for a list, its text as logged) goes to the `_nonfinite` map."""
    if _RAW not in row and _plain(row):
        return row
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


def _plain(row: dict[str, Any]) -> bool:
    """Nothing for `_jsonable` to change: only finite floats, ints, bools, strings and None
    (the common row; checked inline, without a call per value)."""
    for v in row.values():
        t = type(v)
        if t is float:
            if v - v != 0:  # nan or inf
                return False
        elif t is not int and t is not str and t is not bool and v is not None:
            return False
    return True


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
    todo: list[tuple[Any, Any]] = [(top, 0)]  # (container, index or key) still to convert
    while todo:
        box, i = todo.pop()
        v = box[i]
        if isinstance(v, float):
            if not math.isfinite(v):
                box[i] = None
                first = v if first is None else first
        elif isinstance(v, (list, tuple)):
            items = list(v)
            box[i] = items
            todo.extend((items, j) for j in reversed(range(len(items))))
        elif isinstance(v, dict):
            box[i] = pairs = dict(v)
            todo.extend((pairs, j) for j in reversed(list(pairs)))
    return top[0], first


def write_json(data: list[dict[str, Any]], fh: TextIO) -> None:
    import json  # (here: a CSV export, the usual one, spares its import at start)

    # one dumps, not dump: dump streams through the pure-Python chunk loop (2x slower)
    fh.write(json.dumps([_jsonable(r) for r in data], allow_nan=False))
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


def _csv_column(cells: list[Any]) -> list[Any]:
    """`_csv_cell` over a column; floats (nearly every cell) without a call each."""
    return [repr(v) if type(v) is float else _csv_cell(v) for v in cells]


_PLAIN_CELLS = frozenset((float, int, type(None)))


def _plain_column(cells: list[Any]) -> list[str] | None:
    """The column's CSV text when every cell is a float, an int or empty, or None.

    Why: such cells never need quoting and are written as `repr` gives them (csv writes an
    int as str(), which is its repr), so one `repr` of the whole list and a split give every
    cell at C speed; an export of a big log has ~700,000 of them."""
    if not cells:
        return []
    if not set(map(type, cells)) <= _PLAIN_CELLS:
        return None
    text = repr(cells)[1:-1].split(", ")
    if "None" in text:
        text = ["" if t == "None" else t for t in text]
    return text


def write_rollout_csv(store: MetricStore, fh: TextIO) -> None:
    """`write_csv(rows(store))`, column by column: the same text, without a dict per row.

    Columns come in the order `columns()` finds them row by row: a name's first row with a
    value, then its place in that segment's first-seen order."""
    segs = [s for s in store.segments if s.has_data]
    # columns of plain numbers as arrays when csv_rows can write them so (no object per cell)
    tables = [rollout_table(seg, numbers=_csv_rows is not None) for seg in segs]
    first: dict[str, tuple[int, int]] = {}
    base = 0
    for table in tables:
        for j, (name, cells) in enumerate(table.cells.items()):
            if name not in first:
                if type(cells) is tuple:  # (its first number: NaN != NaN)
                    i = next((i for i, x in enumerate(cells[0]) if x == x), None)
                else:
                    i = next((i for i, v in enumerate(cells) if v is not None), None)
                if i is not None:
                    first[name] = (base + i, j)
        base += len(table.ids)
    names = sorted(first, key=first.__getitem__)
    lead = ["segment", "rollout"] if len(segs) > 1 else ["rollout"] if base else []
    w = csv.writer(fh, lineterminator="\n")
    w.writerow([csv_safe(c) for c in lead + names])
    jobs = []
    for seg, table in zip(segs, tables):
        cells = [table.cells.get(name) for name in names]
        ids = _id_column(table.ids) if _csv_rows is not None else table.ids
        for lo in range(0, len(table.ids), _CSV_ROWS):
            hi = lo + _CSV_ROWS
            n = min(hi, len(table.ids)) - lo
            lead_cols = ([_id_column([seg.index] * n)] if len(segs) > 1 else []) + [_slice(ids, lo, hi)]
            jobs.append((lead_cols, [None if c is None else _slice(c, lo, hi) for c in cells]))
    for (lead_cols, cells), text in zip(jobs, _formatted(jobs)):
        if text is not None:
            fh.write(text)
        else:
            _write_rows(fh, w, lead_cols, cells, tried=True)


_CSV_ROWS = 2048  # rows formatted at a time: the text of a whole big export is never held twice


def _slice(col, lo: int, hi: int):
    return (col[0][lo:hi], col[1]) if type(col) is tuple else col[lo:hi]


def _id_column(ids: list[int]):
    """Rollout ids (or segment numbers) as a number column for csv_rows, ("i": written as ints),
    when float64 holds each exactly (ints below 2**53); else the list."""
    if not all(type(i) is int and -(2**53) < i < 2**53 for i in ids):
        return ids
    return (array("d", ids), "i")


def _formatted(jobs: list):
    """csv_rows' text of each job's rows (None: it leaves them to the caller), in order, the
    odd jobs made by a second thread.  Why: a stretch of rows that is all numbers is written by
    csv_rows without the GIL, and when export writes its CSV the reader thread is done: two cores
    for ~700,000 cells of a 540 MB log (0.065 s on one)."""
    if _csv_rows is None:
        yield from (None for _ in jobs)
        return
    got: dict[int, Any] = {}
    ready = threading.Condition()

    def text(k: int):
        lead_cols, cells, *json_keys = jobs[k]  # (keys: JSON rows; None there: not these rows)
        n = len(lead_cols[-1][0] if type(lead_cols[-1]) is tuple else lead_cols[-1])
        if not n or json_keys == [None]:
            return None
        return _csv_rows(lead_cols + cells, n, *json_keys)

    def helper() -> None:
        for k in range(1, len(jobs), 2):
            out: tuple[Any, BaseException | None]
            try:
                out = (text(k), None)
            except BaseException as exc:  # (raised in the caller's thread)
                out = (None, exc)
            with ready:
                got[k] = out
                ready.notify()

    worker = threading.Thread(target=helper, name="grpo-tui-csv", daemon=True) if len(jobs) > 1 else None
    if worker is not None:
        worker.start()
    try:
        for k in range(len(jobs)):
            if k % 2 == 0:
                yield text(k)
                continue
            with ready:
                while k not in got:
                    ready.wait()
                out, exc = got.pop(k)
            if exc is not None:
                raise exc
            yield out
    finally:
        if worker is not None:
            worker.join()


# The C accelerator's csv_rows writes the rows of float/int/None cells in one pass (the same text:
# repr for floats, str for ints); an export of a big log has ~700,000 such cells.
_csv_rows = SCAN.csv_rows if SCAN is not None else None


_RYU_BITS = 125


def _float_tables() -> tuple[bytes, bytes]:
    """Ryu's exact tables for csv_rows' repr of floats (_scan.c: ryu_digits), as (low, high)
    uint64 pairs: floor(2^(bits(5^i) - 1 + 125) / 5^i) + 1 for i < 342, and 5^i's top 125 bits
    for i < 326.  Why here: they are big-integer arithmetic, a few lines in Python (once, when
    export is imported) where C would need a bignum of its own."""
    low = (1 << 64) - 1

    def pairs(values) -> bytes:
        return b"".join(struct.pack("<QQ", v & low, v >> 64) for v in values)

    def top_bits(v: int) -> int:  # v's top 125 bits (v shifted up when it has fewer)
        shift = v.bit_length() - _RYU_BITS
        return v >> shift if shift >= 0 else v << -shift

    powers = [5**i for i in range(342)]
    inv = pairs((1 << p.bit_length() - 1 + _RYU_BITS) // p + 1 for p in powers)
    pos = pairs(top_bits(p) for p in powers[:326])
    return inv, pos


if SCAN is not None and hasattr(SCAN, "float_tables"):
    SCAN.float_tables(*_float_tables())


def _write_rows(fh: TextIO, w, lead_cols: list, cells: list, tried: bool = False) -> None:
    """Rows of CSV from columns (None: a column this segment lacks; a tuple: a number column);
    `tried`: csv_rows has already said no to them."""
    lead_cols = [number_cells(c) if type(c) is tuple else c for c in lead_cols]
    n = len(lead_cols[-1])
    if n and _csv_rows is not None and not tried:
        text = _csv_rows(lead_cols + cells, n)
        if text is not None:
            fh.write(text)
            return
    cells = [number_cells(c) if type(c) is tuple else c for c in cells]  # (the Python writers' lists)
    blank = [""] * n
    plain = [_plain_column(c) for c in lead_cols + [c for c in cells if c is not None]]
    if n and None not in plain:
        # nothing to quote: the rows are the cells joined (what csv.writer would write)
        it = iter(plain)
        cols = [next(it) for _ in lead_cols] + [blank if c is None else next(it) for c in cells]
        fh.write("\n".join(map(",".join, zip(*cols))))
        fh.write("\n")
        return
    cols = lead_cols + [blank if c is None else _csv_column(c) for c in cells]
    w.writerows(zip(*cols))


def render(store: MetricStore, fmt: str = "csv", axis: str = "rollout") -> str:
    buf = io.StringIO()
    render_to(buf, store, fmt, axis)
    return buf.getvalue()


def write_rollout_json(store: MetricStore, fh: TextIO) -> None:
    """`write_json(rows(store))`, column by column: the same text, without a dict per row.

    A stretch of rows whose cells are all numbers or blank is written by csv_rows as JSON objects
    (its keys given), or else gets its cells' text as the CSV writer makes it (csv_rows, or its
    Python twin _plain_column: repr for floats, str for ints, exactly what json writes) and each
    row is its keys' prefixes joined with the cells it has.  A row with a nan/inf token, or a
    stretch with another kind of cell, is the dict row."""
    import json

    segs = [s for s in store.segments if s.has_data]
    fh.write("[")
    sep = ""
    for seg in segs:
        table = rollout_table(seg, numbers=True)
        lead_keys = ["segment", "rollout"] if len(segs) > 1 else ["rollout"]
        names = list(table.cells)
        prefixes = [json.dumps(k) + ": " for k in lead_keys + names]
        ids = _id_column(table.ids)
        nonfinite = seg.nonfinite
        jobs = []
        for lo in range(0, len(table.ids), _CSV_ROWS):
            hi = min(lo + _CSV_ROWS, len(table.ids))
            lead_cols = ([_id_column([seg.index] * (hi - lo))] if len(segs) > 1 else []) + [_slice(ids, lo, hi)]
            # (a stretch holding a nan/inf token's row: row by row below)
            tokens = nonfinite and any(nonfinite.get(r) for r in table.rows[lo:hi])
            jobs.append(
                (lead_cols, [_slice(table.cells[name], lo, hi) for name in names], None if tokens else prefixes)
            )
        for k, text in enumerate(_formatted(jobs)):
            if text is None:
                lo = k * _CSV_ROWS
                text = ", ".join(_json_rows(table, lo, jobs[k][0] + jobs[k][1], prefixes, seg, len(segs) > 1))
            if text:
                fh.write(sep + text)
                sep = ", "
    fh.write("]\n")


def _json_rows(table, lo: int, cols: list, prefixes: list[str], seg, multi: bool) -> list[str]:
    """write_rollout_json's rows of a stretch that csv_rows did not write as JSON: each row's
    cells as CSV text put after their keys, or the dict row through json."""
    import json

    n = len(cols[-1][0] if type(cols[-1]) is tuple else cols[-1])
    whole = "{{" + ", ".join(p.replace("{", "{{").replace("}", "}}") + "{}" for p in prefixes) + "}}"
    texts = _cell_texts(cols, n)
    nonfinite = seg.nonfinite
    out = []
    for i in range(n):
        r = table.rows[lo + i]
        # ("n": a number's text has none but nan and inf's, which JSON writes as null)
        if texts is not None and "n" not in (line := texts[i]) and not nonfinite.get(r):
            if ",," in line or line[-1] == ",":  # (a blank cell; never the first, the id)
                out.append("{" + ", ".join([p + c for p, c in zip(prefixes, line.split(",")) if c]) + "}")
            else:  # every cell there (nearly every row): one format() call
                out.append(whole.format(*line.split(",")))
            continue
        row = _table_row(table, lo + i, nonfinite)
        if multi:
            row = {"segment": seg.index, **row}
        out.append(json.dumps(_jsonable(row), allow_nan=False))
    return out


def _cell(col, i: int) -> Any:
    """Cell i of a table column (a list, or a (values, kind) number column) as the list has it."""
    if type(col) is not tuple:
        return col[i]
    v = col[0][i]
    if v != v:  # (NaN: blank)
        return None
    return int(v) if col[1] == "i" else v


def _cell_texts(cols: list, n: int) -> list[str] | None:
    """Per row, its cells as CSV text joined by commas (a blank cell: nothing), or None when a
    column holds a cell other than a float, an int or a blank (the caller writes dict rows)."""
    if _csv_rows is not None:
        text = _csv_rows(cols, n)
        return None if text is None else text[:-1].split("\n") if n else []
    plain = [_plain_column(number_cells(c) if type(c) is tuple else c) for c in cols]
    if None in plain:
        return None
    return list(map(",".join, zip(*plain)))


def render_to(fh: TextIO, store: MetricStore, fmt: str = "csv", axis: str = "rollout") -> None:
    """`render`'s text written to fh as it is made (export -o: into the atomic file, without
    the whole text held first, which a big log's export paid for)."""
    if axis == "rollout":
        (write_rollout_json if fmt == "json" else write_rollout_csv)(store, fh)
        return
    data = rows(store, axis)
    (write_json if fmt == "json" else write_csv)(data, fh)
