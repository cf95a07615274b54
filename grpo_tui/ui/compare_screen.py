"""Charts of several runs: `c` in the overview compares 2-4 selected runs on one signal
(aligned by rollout id, one colour each, a legend); a run's chart with a baseline overlays the
seeds' raw curves, dimmed, on top of its band (the band is the baseline's envelope, drawn by
the ordinary chart since the baseline is the run's ranges)."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from ..judge.signals import BY_ID, SIGNALS
from .chart_screen import ChartScreen
from .model import clean, downsample

# one colour per run (Okabe-Ito, colour-blind safe): plotext takes RGB, the legend the same hex
COLOURS = (
    ((86, 180, 233), "#56b4e9"),
    ((230, 159, 0), "#e69f00"),
    ((204, 121, 167), "#cc79a7"),
    ((240, 228, 66), "#f0e442"),
)
SEED_COLOUR = (110, 110, 150)  # the seeds' curves: dim, under the run's own


def _finite(ids, vals, log: bool) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(ids, dtype=float)
    y = np.asarray(vals, dtype=float)
    ok = np.isfinite(y) & ((y > 0) if log else True)
    return x[ok], y[ok]


class CompareScreen(Screen):
    """Curves of 2-4 runs for one signal, by rollout. The data is read from the app's RunSet
    (under each run's lock); a live overview redraws it every 2 s."""

    BINDINGS = [
        Binding("escape,c", "close", "close compare"),
        Binding("down,j", "signal(1)", "next signal"),
        Binding("up,k", "signal(-1)", "previous signal"),
        Binding("y", "toggle_log", "log scale y"),
    ]
    DEFAULT_CSS = """
    CompareScreen #cmp-title { height: 1; background: $panel; }
    CompareScreen #cmp-legend { height: auto; max-height: 2; }
    CompareScreen PlotextPlot { height: 1fr; }
    """

    def __init__(
        self,
        runs,
        paths: list[str],
        names: dict[str, str],
        sig_id: str = "reward",
        *,
        baseline=None,
        live: bool = False,
    ) -> None:
        super().__init__()
        self.runs, self.paths, self.names = runs, list(paths), names
        self.sig_index = [s.id for s in SIGNALS].index(sig_id)
        self.baseline = baseline
        self.live = live
        self.log_y = False

    @property
    def sig_id(self) -> str:
        return SIGNALS[self.sig_index].id

    def compose(self) -> ComposeResult:
        yield Static(id="cmp-title")
        yield Static(id="cmp-legend")
        yield PlotextPlot(id="cmp-plot")
        yield Footer()

    def on_mount(self) -> None:
        self.redraw()
        if self.live:
            self.set_interval(2.0, self.redraw)

    def redraw(self) -> None:
        sig = BY_ID[self.sig_id]
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f" compare: {sig.label}", style="bold")
        t.append(f"  ·  {len(self.paths)} runs by rollout" + ("  [log y]" if self.log_y else ""))
        t.append("  ·  ↑/↓ signal", style="dim")
        self.query_one("#cmp-title", Static).update(t)
        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(clean(sig.label + (f" ({sig.unit})" if sig.unit else "")))
        plt.xlabel("rollout")
        if self.log_y:
            plt.yscale("log")
        limit = 2 * max(50, min(200, plot.size.width or 200))
        legend = Text(no_wrap=False)
        xs_all = []
        for i, path in enumerate(self.paths):
            colour, term = COLOURS[i % len(COLOURS)]
            ids, vals = self.runs.series(path, self.sig_id)
            x, y = _finite(ids, vals, self.log_y)
            name = clean(self.names.get(path, path))
            legend.append(" ━━ ", style=f"bold {term}")
            legend.append(name + (f" ({len(x)})" if len(x) else " (no data)"))
            if not len(x):
                continue
            xs_all.append(x)
            xd, yd = downsample(x, y, limit)
            plt.plot(xd.tolist(), yd.tolist(), color=colour, marker="braille")
        if self.baseline is not None and xs_all:
            x = np.unique(np.concatenate(xs_all))
            band = self.baseline.ranges.bounds_many(self.sig_id, x)
            if band is not None:
                legend.append("  ┄┄ ", style="green")
                legend.append("baseline band", style="dim")
                for edge in band:
                    ok = np.isfinite(edge) & ((edge > 0) if self.log_y else True)
                    if ok.any():
                        plt.plot(x[ok].tolist(), edge[ok].tolist(), color="green", marker="dot")
        self.query_one("#cmp-legend", Static).update(legend)
        plot.refresh()

    def action_signal(self, step: int) -> None:
        self.sig_index = (self.sig_index + step) % len(SIGNALS)
        self.redraw()

    def action_toggle_log(self) -> None:
        self.log_y = not self.log_y
        self.redraw()

    def action_close(self) -> None:
        self.app.pop_screen()


class BaselineChartScreen(ChartScreen):
    """The run's chart (band = the baseline's envelope) with the seeds' raw curves dimmed."""

    def __init__(self, feed, sig_id: str, log: bool = False, cursor: int | None = None, *, baseline=None) -> None:
        super().__init__(feed, sig_id, log, cursor)
        self.baseline = baseline

    def redraw(self) -> None:
        """The seeds first, then the ordinary chart over them (its own clearing is held off
        for that call), so the run's raw points and mean are never hidden by the seeds'."""
        seeds = self.baseline.series.get(self.sig_id, []) if self.baseline is not None else []
        if not seeds:
            return super().redraw()
        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        limit = 2 * max(50, min(200, plot.size.width or 200))
        for _name, ids, vals in seeds:
            x, y = _finite(ids, vals, self.log_y)
            if len(x):
                xd, yd = downsample(x, y, limit)
                plt.plot(xd.tolist(), yd.tolist(), color=SEED_COLOUR, marker="dot")
        for name in ("clear_data", "clear_figure"):  # (the chart's redraw keeps the seeds drawn above)
            setattr(plt, name, lambda *a, **k: None)
        try:
            super().redraw()
        finally:
            del plt.clear_data, plt.clear_figure
        title = self.query_one("#chart-title", Static)
        base = title.content
        t = Text(f" baseline: {len(seeds)} seeds dimmed ·", style="dim", no_wrap=True, overflow="ellipsis")
        t.append_text(base if isinstance(base, Text) else Text(str(base)))
        title.update(t)
