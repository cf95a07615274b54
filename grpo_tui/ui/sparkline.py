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


def spark_text(win_ids: np.ndarray, sig_ids: np.ndarray, sig_vals: np.ndarray, cursor: int | None,
               *, ascii: bool = False, width: int | None = None, bad_style: str = "bold red",
               cursor_style: str = "reverse") -> Text:
    glyphs = ASCII[1:] if ascii else BLOCKS
    vals, present = values_at(win_ids, sig_ids, sig_vals)
    fin = present & np.isfinite(vals)
    text = Text(no_wrap=True, overflow="crop")
    if fin.any():
        lo, hi = float(np.min(vals[fin])), float(np.max(vals[fin]))
    else:
        lo = hi = 0.0
    span = hi - lo
    for i, rid in enumerate(win_ids):
        style = ""
        if not present[i]:
            ch = " "
        elif not fin[i]:
            ch, style = "!", bad_style
        elif span <= 0:
            ch = glyphs[len(glyphs) // 2 - 1]
        else:
            k = int(round((vals[i] - lo) / span * (len(glyphs) - 1)))
            ch = glyphs[max(0, min(len(glyphs) - 1, k))]
        if cursor is not None and int(rid) == cursor:
            style = (style + " " + cursor_style).strip()
        text.append(ch, style or None)
    if width is not None and len(win_ids) < width:
        text.pad_left(width - len(win_ids))
    return text
