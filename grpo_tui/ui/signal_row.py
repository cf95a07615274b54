"""One compact, focusable row per signal: label, sparkline, last, five-step mean, range, badge."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.text import Text
from textual.widget import Widget

from ..judge.engine import SignalStatus
from ..judge.signals import Signal
from .model import clean, fmt_range, fmt_value
from .sparkline import spark_text
from .themes import uses_ascii

BADGES = {
    "ok": ("✓ ok", "+ ok"),
    "warning": ("! warn", "! warn"),
    "critical": ("✗ crit", "x crit"),
    "unknown": ("? n/a", "? n/a"),
}
LABEL_W, NUM_W, RANGE_W, BADGE_W = 14, 9, 15, 6


def badge(status: str, theme, ascii: bool = False) -> Text:
    """Shape AND colour: readable with NO_COLOR or for colour-blind users."""
    blocks, plain = BADGES.get(status, BADGES["unknown"])
    colour = {
        "ok": getattr(theme, "success", None),
        "warning": getattr(theme, "warning", None),
        "critical": getattr(theme, "error", None),
    }.get(status)
    style = f"bold {colour}" if colour else "dim"
    return Text(plain if ascii else blocks, style=style)


def layout(width: int) -> tuple[int, bool]:
    """(sparkline width, show range column) for a row of `width` cells."""
    show_range = width >= 64
    fixed = LABEL_W + 1 + NUM_W * 2 + 2 + BADGE_W + 2 + (RANGE_W + 1 if show_range else 0)
    return max(4, width - fixed), show_range


def header_text(width: int, whole_run: bool = False) -> Text:
    spark_w, show_range = layout(width)
    t = Text(no_wrap=True, overflow="crop", style="bold")
    t.append("signal".ljust(LABEL_W) + " ")
    t.append(("whole run (w)" if whole_run else "trend (w: whole run)")[:spark_w].ljust(spark_w) + " ")
    t.append("at cursor".rjust(NUM_W) + " " + "mean5".rjust(NUM_W) + " ")
    if show_range:
        t.append("healthy".rjust(RANGE_W) + " ")
    t.append("status")
    return t


class SignalRow(Widget, can_focus=True):
    """Renders from data the app pushes in (`set_data`); the window comes from the app."""

    DEFAULT_CSS = """
    SignalRow { height: 1; width: 1fr; }
    """

    def __init__(self, sig: Signal, **kw) -> None:
        super().__init__(id=f"sig-{sig.id}", classes="signal-row", **kw)
        self.sig = sig
        self.status: SignalStatus | None = None
        self.ids = np.empty(0, np.int64)
        self.vals = np.empty(0)
        self.at_newest = True
        self.cells: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # whole-run summary

    def set_data(
        self, status: SignalStatus, ids: np.ndarray, vals: np.ndarray, at_newest: bool = True, cells=None
    ) -> None:
        """ids/vals: only the rows around the sparkline window (not the whole history);
        at_newest: they end at the segment's newest rollout; cells: the whole-run summary
        (first ids, values, last ids) the sparkline draws instead of the window."""
        self.status, self.ids, self.vals, self.at_newest = status, ids, vals, at_newest
        self.cells = cells
        self.refresh()

    def render(self) -> Text:
        app: Any = self.app  # (the dashboard: read duck-typed, a test may mount the row alone)
        width = self.size.width or 80
        spark_w, show_range = layout(width)
        theme = app.current_theme
        ascii = uses_ascii(theme) or getattr(app, "force_ascii", False)
        st = self.status
        t = Text(no_wrap=True, overflow="crop")
        t.append(clean(self.sig.label)[:LABEL_W].ljust(LABEL_W))
        # focus is marked by a glyph, not only by bold/colour (NO_COLOR, ascii)
        t.append((">" if ascii else "▸") if self.has_focus else " ", style="bold")
        win = app.window_ids(spark_w) if hasattr(app, "window_ids") else np.empty(0, np.int64)
        fetched = getattr(app, "fetched_w", None)
        if fetched is not None and fetched != spark_w:  # laid out wider/narrower than read
            app.fetched_w = spark_w
            app.call_later(app.refresh_view)
        cursor = getattr(app, "cursor", None)
        feed = getattr(app, "feed", None)
        spark_ids, spark_vals, spark_cursor = self.ids, self.vals, cursor
        if self.cells is not None:  # whole run: one cell per bucket of rollouts
            win, spark_vals, ends = self.cells
            spark_ids = win
            if cursor is not None and len(win):
                k = int(np.searchsorted(ends, cursor))
                spark_cursor = int(win[min(k, len(win) - 1)])
        band = feed.engine.band(self.sig.id, win) if feed is not None and len(win) else None
        warn = theme.warning or "yellow"
        t.append_text(
            spark_text(
                win,
                spark_ids,
                spark_vals,
                spark_cursor,
                ascii=ascii,
                width=spark_w,
                bad_style=f"bold {theme.error}" if theme.error else "bold",
                band=band,
                log=self.sig.log,
                out_style=f"bold underline {warn}",
            )
        )
        t.append(" ")
        fmt = self.sig.fmt
        cur_val = None
        mean5 = st.mean5 if st else None
        rng = st.range if st else None
        status = st.status if st else "unknown"
        if cursor is not None and len(self.ids):
            i = int(np.searchsorted(self.ids, cursor))
            if i < len(self.ids) and self.ids[i] == cursor:
                cur_val = self.vals[i]
            past = i < len(self.ids) - 1 or not self.at_newest
            if past or cur_val is None:  # cursor in the past: all of it there
                w = self.vals[max(0, i + 1 - 5) : i + 1] if cur_val is not None else self.vals[max(0, i - 5) : i]
                w = w[np.isfinite(w)]
                mean5 = float(np.mean(w)) if len(w) else None
                if feed is not None:
                    rng, status = feed.engine.judge_at(
                        self.sig.id, int(cursor), mean5, None if cur_val is None else float(cur_val)
                    )
        last = cur_val if cur_val is not None else (st.last if st else None)
        t.append(fmt_value(last, fmt)[:NUM_W].rjust(NUM_W) + " ")
        t.append(fmt_value(mean5, fmt)[:NUM_W].rjust(NUM_W) + " ", style="bold")
        if show_range:
            t.append(fmt_range(rng, fmt)[:RANGE_W].rjust(RANGE_W) + " ", style="dim")
        t.append_text(badge(status, theme, ascii))
        return t
