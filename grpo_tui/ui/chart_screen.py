"""Chart of one signal: raw values dim, trailing five-step mean bright, healthy band,
alert rollouts marked; min/max-bucket downsampling keeps spikes at <= 2 points per column."""

from __future__ import annotations

import math

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from ..judge.signals import BY_ID, signal_series
from ..judge.stats import trailing_mean
from .model import clean, downsample

EVENT_MARKS = {
    "checkpoint_saved": "c",
    "eval_skipped": "e",
    "engine_retry": "r",
    "max_retries": "r",
    "launch": "R",
    "traceback": "x",
    "oom": "x",
    "nccl_timeout": "x",
    "ft_fail": "x",
    "engines_recovered": "+",
    "health_check_failed": "h",
}
BUCKETS = 200  # at most this many buckets of rows, min and max of each plotted
SETTLE = 64  # the newest rows may still get values (late train steps): never frozen


def _pick(rows: np.ndarray, y: np.ndarray, size: int) -> np.ndarray:
    """Indices of the min and max point of each bucket of `size` rows (rows ascending)."""
    if not len(rows):
        return np.empty(0, np.int64)
    b = rows // size
    order = np.lexsort((y, b))  # by bucket, then value
    bs = b[order]
    first = np.flatnonzero(np.r_[True, bs[1:] != bs[:-1]])
    last = np.r_[first[1:] - 1, len(bs) - 1]
    return np.unique(np.concatenate([order[first], order[last]]))


class Sketch:
    """A signal's whole history reduced to <= ~2*BUCKETS points, kept up to date cheaply.

    Buckets are `size` rows wide (a power of two, so <= BUCKETS of them); a bucket whose
    rows are all older than SETTLE is reduced once and kept, so a redraw after a new
    rollout reads only the rows since the last kept bucket: O(size + SETTLE), not O(history).
    The five-step mean is causal, so its kept points never change either; the last four
    kept values carry it across the boundary.
    """

    def __init__(self) -> None:
        self.key: tuple = ()
        self.rows = 0
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.carry = np.empty(0)

    def points(self, seg, sig, log: bool, buckets: int = BUCKETS) -> tuple[np.ndarray, ...]:
        """(x, y, xm, ym): raw points and five-step mean points to plot."""
        n = len(seg.ids)
        size = 1 << max(0, math.ceil(math.log2(max(1, n) / buckets)))
        key = (id(seg), sig.id, log, size)
        if key != self.key or n < self.rows:
            self.key, self.rows, self.parts, self.carry = key, 0, [], np.empty(0)
        a = self.rows
        ids, vals = signal_series(seg, sig, last=n - a)
        ids = np.asarray(ids)
        vals = np.asarray(vals, dtype=float)
        if log:
            vals = np.where(vals > 0, vals, np.nan)
        fin = np.isfinite(vals)
        ids, y = ids[fin], vals[fin]
        rows = a + np.searchsorted(seg.ids_at(np.arange(a, n)), ids)
        k = len(self.carry)
        mean = trailing_mean(np.concatenate([self.carry, y]), 5)[k:]
        freeze = max(a, (n - SETTLE) // size * size)
        old = rows < freeze
        if freeze > a:
            i = _pick(rows[old], y[old], size)
            j = _pick(rows[old], mean[old], size)
            self.parts.append((ids[old][i], y[old][i], ids[old][j], mean[old][j]))
            self.carry = np.concatenate([self.carry, y[old]])[-4:]
            self.rows = freeze
        new = ~old
        ends = np.r_[0, new.sum() - 1] if new.any() else np.empty(0, np.int64)  # newest always shown
        i = np.union1d(_pick(rows[new], y[new], size), ends)
        j = np.union1d(_pick(rows[new], mean[new], size), ends)
        tail = (ids[new][i], y[new][i], ids[new][j], mean[new][j])
        cols = list(zip(*self.parts, tail))
        return tuple(np.concatenate(c) for c in cols)


def _series_points(seg, sig, log: bool, sketch: Sketch | None, buckets: int = BUCKETS) -> tuple[np.ndarray, ...]:
    if sketch is not None and seg.ordered and len(seg.ids) > 2 * buckets:
        return sketch.points(seg, sig, log, buckets)
    ids, vals = signal_series(seg, sig)
    ids = np.asarray(ids, dtype=float)
    vals = np.asarray(vals, dtype=float)
    if log:
        vals = np.where(vals > 0, vals, np.nan)
    fin = np.isfinite(vals)
    x, y = ids[fin], vals[fin]
    if not len(x):
        return x, y, x, y
    mean = trailing_mean(y, 5)
    xd, yd = downsample(x, y, 2 * buckets)
    xm, ym = downsample(x, mean, 2 * buckets)
    return xd, yd, xm, ym


def _steps(x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A piecewise-constant edge by its change points only (the same line, fewer points)."""
    if len(e) <= 2:
        return x, e
    keep = np.r_[True, e[1:] != e[:-1]] | np.r_[e[:-1] != e[1:], True]
    return x[keep], e[keep]


def draw(
    plot: PlotextPlot,
    feed,
    sig_id: str,
    *,
    log: bool = False,
    cursor: int | None = None,
    sketch: Sketch | None = None,
    ascii: bool = False,
) -> None:
    """Redraw `plot` for one signal from the feed's current segment.

    With a `sketch` (kept by the caller between redraws) the cost of a redraw does not
    grow with the history: see Sketch. The legend is the title line (never over the data);
    y labels are short (3 significant digits or scientific), x ticks are whole rollouts; the
    cursor and each alert's onset are labelled vertical lines. `ascii`: ASCII markers, no frame."""
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    sig = BY_ID[sig_id]
    seg = feed.store.current
    dot, line = ("*", "+") if ascii else ("dot", "braille")
    title = (
        sig.label
        + (f" ({sig.unit})" if sig.unit else "")
        + ("  [log y]" if log else "")
        + f"   {'*' if ascii else '·'} raw  {'+' if ascii else '⠿'} mean5  - band  | cursor, onsets  c/r/R/x events"
    )
    plt.title(clean(title))
    plt.xlabel("rollout")
    if ascii:
        plt.frame(False)
    # About one bucket (<= 2 points) per plot column: more points are not visible (one
    # marker per cell) and only make plotext slower.
    buckets = max(50, min(BUCKETS, plot.size.width or BUCKETS))
    xd, yd, xm, ym = _series_points(seg, sig, log, sketch, buckets)
    if not len(xd):
        plot.refresh()
        return
    xd = xd.astype(float)
    xm = xm.astype(float)
    if log:
        plt.yscale("log")
    plt.plot(xd.tolist(), yd.tolist(), color="gray", marker=dot)
    plt.plot(xm.tolist(), ym.tolist(), color="cyan+", marker=line)
    ys = [yd, ym]
    band = feed.engine.band(sig_id, xd)  # at the plotted x only; none where no range judges
    if band is not None:
        lo, hi = band
        for edge in (lo, hi):
            ok = np.isfinite(edge) & ((edge > 0) if log else True)
            if ok.any():
                xe, ye = _steps(xd[ok], edge[ok])
                plt.plot(xe.tolist(), ye.tolist(), color="green", marker="-" if not log else ".")
                ys.append(ye)
    y_all = np.concatenate([np.asarray(y, float) for y in ys])
    y_all = y_all[np.isfinite(y_all) & ((y_all > 0) if log else True)]
    if len(y_all):
        _ticks(plt, float(xd.min()), float(xd.max()), float(y_all.min()), float(y_all.max()), log)
    top = float(y_all.max()) if len(y_all) else 0.0
    bottom = float(y_all.min()) if len(y_all) else 0.0

    def vline(x: float, color: str) -> None:
        if ascii:  # plotext's vline glyph is a box-drawing character
            plt.plot([x, x], [bottom, top], color=color, marker="|")
        else:
            plt.vline(x, color)

    onsets = sorted(
        {(a.rollout, a.severity) for a in feed.engine.alerts if a.rollout is not None and a.signal in (None, sig_id)}
    )
    for r, sev in onsets:
        vline(float(r), "red" if sev == "critical" else "orange")
    for r in sorted({r for r, _ in onsets})[:4]:
        plt.text(f"onset {r}", x=float(r), y=top, color="red", alignment="left")
    # events along the bottom: c checkpoint, e eval, r retry burst, R restart/launch, x crash
    marks: dict[str, set[float]] = {}
    for kind, r in seg.events.kinds_after():
        m = EVENT_MARKS.get(kind)
        if m and r is not None:
            marks.setdefault(m, set()).add(float(r))
    for m, xs in marks.items():
        xs_l = sorted(xs)
        plt.scatter(xs_l, [bottom] * len(xs_l), marker=m, color="yellow")
    if cursor is not None:
        vline(float(cursor), "white")
        plt.text(f"cursor {cursor}", x=float(cursor), y=bottom, color="white", alignment="left")
    plot.refresh()


def eng(v: float) -> str:
    """A short axis label: 3 significant digits, scientific outside 1e-3..1e4."""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    if 1e-3 <= abs(v) < 1e4:
        return f"{v:.3g}"
    return f"{v:.1e}"


def _ticks(plt, x0: float, x1: float, y0: float, y1: float, log: bool) -> None:
    """Whole-rollout x ticks at a round step; five short y labels."""
    span = max(1.0, x1 - x0)
    raw = span / 6
    mag = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = max(1, int(next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)))
    xt = list(range(int(math.ceil(x0 / step) * step), int(x1) + 1, step))
    if xt:
        plt.xticks(xt, [str(x) for x in xt])
    if y1 <= y0:
        return
    yt = np.geomspace(y0, y1, 5) if log and y0 > 0 else np.linspace(y0, y1, 5)
    plt.yticks(yt.tolist(), [eng(float(v)) for v in yt])


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
        self.sketch = Sketch()

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
        t.append(f"  {'-' if self.has_class('ascii') else '·'}  {clean(sig.tells)}")
        self.query_one("#chart-title", Static).update(t)
        draw(
            self.query_one(PlotextPlot),
            self.feed,
            self.sig_id,
            log=self.log_y,
            cursor=self.cursor,
            sketch=self.sketch,
            ascii=self.has_class("ascii"),
        )

    def action_toggle_log(self) -> None:
        self.log_y = not self.log_y
        self.redraw()

    def action_close(self) -> None:
        self.app.pop_screen()
