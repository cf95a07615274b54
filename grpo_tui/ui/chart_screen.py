"""Chart of one signal: raw values dim, trailing five-step mean bright, healthy band,
alert rollouts marked; min/max-bucket downsampling keeps spikes at <= ~400 points."""

from __future__ import annotations

import math

import numpy as np
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot
from rich.text import Text

from ..signals import BY_ID, signal_series
from ..stats import trailing_mean
from .model import clean, downsample


def draw(plot: PlotextPlot, feed, sig_id: str, *, log: bool = False, cursor: int | None = None) -> None:
    """Redraw `plot` for one signal from the feed's current segment."""
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    sig = BY_ID[sig_id]
    seg = feed.store.current
    ids, vals = signal_series(seg, sig)
    title = sig.label + (f" ({sig.unit})" if sig.unit else "") + ("  [log y]" if log else "")
    plt.title(clean(title))
    plt.xlabel("rollout")
    ids = np.asarray(ids, dtype=float)
    vals = np.asarray(vals, dtype=float)
    if log:
        vals = np.where(vals > 0, vals, np.nan)
    fin = np.isfinite(vals)
    if not fin.any():
        plot.refresh()
        return
    x, y = ids[fin], vals[fin]
    mean = trailing_mean(y, 5)
    xd, yd = downsample(x, y)
    xm, ym = downsample(x, mean)
    if log:
        plt.yscale("log")
    plt.plot(xd.tolist(), yd.tolist(), color="gray", marker="dot", label="raw")
    plt.plot(xm.tolist(), ym.tolist(), color="cyan+", marker="braille", label="mean5")
    band = feed.engine.ranges.bounds_many(sig_id, x)
    if band is not None:
        lo, hi = band
        for edge, name in ((lo, "healthy lo"), (hi, "healthy hi")):
            ok = np.isfinite(edge) & ((edge > 0) if log else True)
            if ok.any():
                xe, ye = downsample(x[ok], edge[ok])
                plt.plot(xe.tolist(), ye.tolist(), color="green", marker="-" if not log else "dot",
                         label=name)
    for a in feed.engine.alerts:
        if a.rollout is not None and (a.signal in (None, sig_id) or a.signal == sig_id):
            plt.vline(float(a.rollout), "red" if a.severity == "critical" else "orange")
    if cursor is not None:
        plt.vline(float(cursor), "white")
    plot.refresh()


class ChartScreen(Screen):
    BINDINGS = [
        Binding("escape,c", "close", "close chart"),
        Binding("y", "toggle_log", "log scale y"),
    ]
    DEFAULT_CSS = """
    ChartScreen #chart-title { height: 1; background: $panel; }
    ChartScreen PlotextPlot { height: 1fr; }
    """

    def __init__(self, feed, sig_id: str, log: bool = False, cursor: int | None = None) -> None:
        super().__init__()
        self.feed, self.sig_id, self.log_y, self.cursor = feed, sig_id, log, cursor

    def compose(self) -> ComposeResult:
        yield Static(id="chart-title")
        yield PlotextPlot(id="chart-plot")
        yield Footer()

    def on_mount(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        sig = BY_ID[self.sig_id]
        t = Text(no_wrap=True)
        t.append(f" {sig.label}", style="bold")
        t.append(f"  ·  {clean(sig.tells)}")
        self.query_one("#chart-title", Static).update(t)
        draw(self.query_one(PlotextPlot), self.feed, self.sig_id, log=self.log_y, cursor=self.cursor)

    def action_toggle_log(self) -> None:
        self.log_y = not self.log_y
        self.redraw()

    def action_close(self) -> None:
        self.app.pop_screen()
