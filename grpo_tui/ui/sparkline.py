"""Sparkline text from a window of rollout ids: block glyphs, or ASCII when asked.

A custom renderer (not Textual's Sparkline) so the step cursor can be highlighted at its
rollout and all nine rows line up on the same rollout ids.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

BLOCKS = "▁▂▃▄▅▆▇█"
ASCII = " .:-=+*#%@"


def values_at(win_ids: np.ndarray, sig_ids: np.ndarray, sig_vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, present) of a signal at each window rollout id (gaps -> present False)."""
    out = np.full(len(win_ids), np.nan)
    present = np.zeros(len(win_ids), dtype=bool)
    if len(win_ids) and len(sig_ids):
        idx = np.searchsorted(sig_ids, win_ids)
        ok = idx < len(sig_ids)
        hit = np.zeros(len(win_ids), dtype=bool)
        hit[ok] = sig_ids[idx[ok]] == win_ids[ok]
        out[hit] = sig_vals[idx[hit]]
        present = hit
    return out, present


def spark_text(
    win_ids: np.ndarray,
    sig_ids: np.ndarray,
    sig_vals: np.ndarray,
    cursor: int | None,
    *,
    ascii: bool = False,
    width: int | None = None,
    bad_style: str = "bold red",
    cursor_style: str = "reverse",
    band: tuple[np.ndarray, np.ndarray] | None = None,
    log: bool = False,
    out_style: str = "bold underline yellow",
) -> Text:
    """One glyph per window rollout.

    The scale spans the values AND the healthy band (a jump far above the band reads as a
    jump, not as noise scaled to fill the row); log-scale signals are drawn on log10. Cells
    outside the band are drawn in `out_style` (underlined: visible without colour) and, in
    ASCII, as `^` (above) or `v` (below); a non-finite value is `!`."""
    glyphs = ASCII[1:] if ascii else BLOCKS
    vals, present = values_at(win_ids, sig_ids, sig_vals)
    fin = present & np.isfinite(vals)
    lo_b: np.ndarray | None = None
    hi_b: np.ndarray | None = None
    if band is not None:
        lo_b, hi_b = (np.asarray(b, dtype=float) for b in band)
    use_log = log and fin.any() and bool(np.all(vals[fin] > 0))
    scaled = _scale(vals, use_log)
    pool = [scaled[fin]]
    if lo_b is not None and hi_b is not None:
        for edge in (lo_b, hi_b):
            e = _scale(edge, use_log)
            pool.append(e[np.isfinite(e)])
    allv = np.concatenate(pool) if pool else np.empty(0)
    lo, hi = (float(np.min(allv)), float(np.max(allv))) if len(allv) else (0.0, 0.0)
    span = hi - lo
    text = Text(no_wrap=True, overflow="crop")
    for i, rid in enumerate(win_ids):
        style = ""
        if not present[i]:
            ch = " "
        elif not fin[i]:
            ch, style = "!", bad_style
        else:
            if span <= 0:
                ch = glyphs[len(glyphs) // 2 - 1]
            else:
                k = int(round((scaled[i] - lo) / span * (len(glyphs) - 1)))
                ch = glyphs[max(0, min(len(glyphs) - 1, k))]
            side = _outside(vals[i], lo_b, hi_b, i)
            if side:
                style = out_style
                if ascii:
                    ch = "^" if side > 0 else "v"
        if cursor is not None and int(rid) == cursor:
            style = (style + " " + cursor_style).strip()
        text.append(ch, style or None)
    if width is not None and len(win_ids) < width:
        text.pad_left(width - len(win_ids))
    return text


def _scale(x: np.ndarray, log: bool) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if not log:
        return x
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log10(np.where(x > 0, x, 1.0)), np.nan)


def _outside(v: float, lo_b, hi_b, i: int) -> int:
    """+1 above the band, -1 below, 0 inside (or no band at this cell)."""
    if lo_b is None or i >= len(lo_b):
        return 0
    lo, hi = lo_b[i], hi_b[i]
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return 0
    tol = 1e-9 * max(abs(lo), abs(hi), 1e-12)
    if v > hi + tol:
        return 1
    if v < lo - tol:
        return -1
    return 0


def whole_run_cells(
    all_ids: np.ndarray, sig_ids: np.ndarray, sig_vals: np.ndarray, width: int, log: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The whole run in `width` cells: (first id of each cell, its value, last id of each cell).

    Each cell keeps the value of its bucket that lies furthest from the run's median (on a
    log scale for log signals), so a spike or a jump survives any amount of history; a
    non-finite value in a bucket wins (it is the broken step)."""
    n = len(all_ids)
    if n == 0 or width <= 0:
        e = np.empty(0)
        return e.astype(np.int64), e, e.astype(np.int64)
    cells = min(width, n)
    edges = np.linspace(0, n, cells + 1).astype(int)
    vals, present = values_at(all_ids, sig_ids, sig_vals)
    fin = present & np.isfinite(vals)
    sv = _scale(vals, log and fin.any() and bool(np.all(vals[fin] > 0)))
    med = float(np.nanmedian(sv[fin])) if fin.any() else 0.0
    dev = np.where(fin, np.abs(sv - med), -1.0)
    dev = np.where(present & ~np.isfinite(vals), np.inf, dev)
    first = all_ids[edges[:-1]]
    last = all_ids[edges[1:] - 1]
    out = np.full(cells, np.nan)
    for c in range(cells):
        a, b = edges[c], edges[c + 1]
        j = a + int(np.argmax(dev[a:b]))
        out[c] = vals[j] if dev[j] >= 0 else np.nan
    return first.astype(np.int64), out, last.astype(np.int64)
