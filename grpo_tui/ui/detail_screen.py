"""Every metric of one rollout (and its per-step values when K>1), with ranges and deviation
from the five-step mean; `/` filters metric names by regex. A DataTable virtualises rows."""

from __future__ import annotations

import math
import re

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from ..judge.signals import SIGNALS, Signal, metric_for
from .model import clean, fmt_range, fmt_value, id_position

LOOKBACK = 32  # rows read before the rollout for its five-step mean (not the whole history)


def _rows_before(seg, rollout: int) -> np.ndarray:
    """Row indices of the newest LOOKBACK rollouts up to `rollout`, in id order."""
    row = seg.row_of.get(rollout)
    if seg.ordered and row is not None:
        return np.arange(max(0, row + 1 - LOOKBACK), row + 1)
    return seg.rows_upto(LOOKBACK, rollout)


def _mean5_at(seg, name: str, rollout: int, rows: np.ndarray | None = None) -> float | None:
    rows = _rows_before(seg, rollout) if rows is None else rows
    if not len(rows):
        return None
    vals = seg.values_at_rows(name, rows)
    window = vals[np.isfinite(vals)][-5:]
    return float(np.mean(window)) if len(window) else None


class DetailScreen(Screen):
    BINDINGS = [
        Binding("escape", "close", "close / clear filter"),
        Binding("slash", "filter", "filter metrics (regex)"),
        Binding("left,h", "move(-1)", "previous rollout"),
        Binding("right,l", "move(1)", "next rollout"),
    ]
    DEFAULT_CSS = """
    DetailScreen #detail-title { height: 1; background: $panel; text-style: bold; }
    DetailScreen #detail-table { height: 1fr; }
    DetailScreen #detail-filter { display: none; dock: bottom; }
    DetailScreen.filtering #detail-filter { display: block; }
    """

    def __init__(self, feed, rollout: int) -> None:
        super().__init__()
        self.feed = feed
        self.rollout = rollout
        self.pattern: re.Pattern | None = None
        self.rows: list[tuple] = []

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        t: DataTable = DataTable(id="detail-table", cursor_type="row")
        t.add_columns("metric", "value", "healthy", "mean5", "dev")
        yield t
        yield Input(placeholder="regex on metric names (enter keeps it, escape clears)", id="detail-filter")
        yield Footer()

    def on_mount(self) -> None:
        self.rebuild()
        self.query_one("#detail-table", DataTable).focus()

    def _collect(self) -> list[tuple]:
        seg = self.feed.store.current
        r = self.rollout
        ranges = self.feed.engine.ranges.for_framework(seg.framework)
        sig_of: dict[str, Signal] = {}
        for s in SIGNALS:
            m = metric_for(seg, s)
            if m:
                sig_of[m] = s
        rows = []
        before = _rows_before(seg, r)
        for name, v in seg.rollout_dict(r).items():
            sig = sig_of.get(name)
            rng = ranges.bounds(sig.id, r) if sig and self.feed.engine.range_applies(sig.id) else None
            m5 = _mean5_at(seg, name, r, before) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
            dev = None
            if m5 is not None and isinstance(v, (int, float)) and math.isfinite(float(v)):
                dev = float(v) - m5
            rows.append((name, v, rng, m5, dev, sig.fmt if sig else "{:.4g}"))
        if seg.steps_per_rollout > 1:
            for st in seg.steps_of(r):
                role = f"{st.role}-" if st.role else ""
                for name, v in st.metrics.items():
                    rows.append((f"{role}step {st.n}: {name}", v, None, None, None, "{:.4g}"))
        return rows

    def rebuild(self) -> None:
        seg = self.feed.store.current
        self.rows = self._collect()
        t = self.query_one("#detail-table", DataTable)
        t.clear()
        shown = 0
        for name, v, rng, m5, dev, fmt in self.rows:
            if self.pattern is not None and not self.pattern.search(name):
                continue
            shown += 1
            t.add_row(
                Text(clean(name)),
                Text(fmt_value(v, fmt)),
                Text(fmt_range(rng, fmt), style="dim"),
                Text(fmt_value(m5, fmt)),
                Text("-" if dev is None else (("+" if dev >= 0 else "") + fmt_value(dev, "{:.3g}"))),
            )
        title = Text(no_wrap=True)
        title.append(f" rollout {self.rollout}", style="bold")
        title.append(f"  ·  {shown}/{len(self.rows)} metrics  ·  K={seg.steps_per_rollout} steps/rollout")
        if self.pattern is not None:
            title.append("  ·  filter /")
            title.append(clean(self.pattern.pattern))
            title.append("/")
        self.query_one("#detail-title", Static).update(title)

    def action_filter(self) -> None:
        self.add_class("filtering")
        self.query_one("#detail-filter", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._apply(event.value, quiet=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._apply(event.value, quiet=False)
        self.query_one("#detail-table", DataTable).focus()

    def _apply(self, text: str, quiet: bool) -> None:
        if not text:
            self.pattern = None
        else:
            try:
                self.pattern = re.compile(text, re.IGNORECASE)
            except re.error as exc:
                if not quiet:
                    self.notify(f"bad regex: {exc}", severity="warning", markup=False)
                return
        self.rebuild()

    def action_move(self, step: int) -> None:
        seg = self.feed.store.current
        if not seg.ids:
            return
        ids, i = id_position(seg, self.rollout)
        i = max(0, min(len(ids) - 1, i + step))
        self.rollout = int(ids[i])
        self.rebuild()

    def action_close(self) -> None:
        """esc leaves the filter first (typing or applied), then the view."""
        inp = self.query_one("#detail-filter", Input)
        if self.has_class("filtering") or self.pattern is not None:
            inp.value = ""
            self.remove_class("filtering")
            self.pattern = None
            self.rebuild()
            self.query_one("#detail-table", DataTable).focus()
            return
        self.app.pop_screen()
