"""The dashboard's data helpers with no Textual in it (the data chain itself is the one
Pipeline every command uses: grpo_tui/pipeline/)."""

from __future__ import annotations

import bisect
import math
import os
import re
from pathlib import Path

import numpy as np

BIG_FILE = 1 << 20  # above this, first paint parses only the tail, then the history in bulk
TAIL_BYTES = 2 << 20  # ~0.1 s to parse: the first paint's data (the rest fills in behind)

_CTRL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: object) -> str:
    """Log text made safe to show: control chars (escapes, CR, BEL) become visible '?'.

    Markup safety is separate: callers put this into rich Text objects, never markup strings.
    """
    return _CTRL.sub("?", str(text))


def resolve_path(path: str | None) -> str | None:
    """A folder means its newest *.log (by mtime), unless it holds one run's metric files (a
    TensorBoard folder, a W&B run: read as they are); a file (existing or not) is itself."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir() and not _metric_folder(path):
        logs = sorted(p.glob("*.log"), key=lambda f: f.stat().st_mtime)
        return str(logs[-1]) if logs else str(p / "train.log")
    return str(p)


def _metric_folder(path: str) -> bool:
    from ..pipeline import InputError, open_input

    try:
        return open_input(path) is not None
    except InputError:
        return False


def last_newline_before(path: str, size: int) -> int:
    """Offset just after the last b'\\n' in the first `size` bytes (0 if none)."""
    with open(path, "rb") as fh:
        end = size
        while end > 0:
            start = max(0, end - (1 << 16))
            fh.seek(start)
            b = fh.read(end - start)
            i = b.rfind(b"\n")
            if i >= 0:
                return start + i + 1
            end = start
    return 0


def downsample(x: np.ndarray, y: np.ndarray, limit: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Min/max buckets: at most ~limit points, and every spike (and nan gap) survives.

    Vectorised (reshape into equal buckets, argmin/argmax per row): no Python loop over
    points or buckets, so a 100k-point chart costs a few numpy passes.
    """
    x = np.asarray(x)
    y = np.asarray(y, dtype=float)
    n = len(x)
    if n <= limit:
        return x, y
    buckets = max(1, limit // 2)
    size = -(-n // buckets)  # ceil: at most `buckets` buckets
    m = -(-n // size)
    pad = m * size - n
    yy = np.concatenate([y, np.full(pad, np.nan)]) if pad else y
    yy = yy.reshape(m, size)
    fin = np.isfinite(yy)
    lo = np.argmin(np.where(fin, yy, np.inf), axis=1)
    hi = np.argmax(np.where(fin, yy, -np.inf), axis=1)
    ok = fin.any(axis=1)
    base = np.arange(m) * size
    idx = np.concatenate([(base + lo)[ok], (base + hi)[ok]])
    idx = np.unique(idx)  # sorted, a flat bucket keeps one point
    return x[idx], y[idx]


def newest_id(seg) -> int | None:
    """The segment's highest rollout id in O(1) when rows arrived in order."""
    if not seg.ids:
        return None
    return int(seg.ids[-1]) if seg.ordered else int(max(seg.ids))


def sorted_ids(seg) -> list[int]:
    """Rollout ids ascending: the store's own list (no copy) when rows arrived in order."""
    return seg.ids if seg.ordered else sorted(seg.ids)


def id_position(seg, rollout: int) -> tuple[list[int], int]:
    """(sorted ids, index of the first id >= rollout); O(1)/O(log n) for ordered segments."""
    ids = sorted_ids(seg)
    if seg.ordered:
        row = seg.row_of.get(rollout)
        if row is not None:
            return ids, row
    return ids, bisect.bisect_left(ids, rollout)


def fmt_value(v: object, fmt: str = "{:.4g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            return str(f)
        try:
            return fmt.format(f)
        except (ValueError, TypeError):
            return f"{f:.4g}"
    return clean(v)


def fmt_range(rng, fmt: str = "{:.3g}") -> str:
    fmt = "{:.3g}"  # one short format: ranges must fit their column
    if rng is None:
        return "-"
    lo, hi = rng
    if lo == hi:
        return fmt_value(lo, fmt)
    return f"{fmt_value(lo, fmt)}-{fmt_value(hi, fmt)}"


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return -1
