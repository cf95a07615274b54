"""The runs overview: one row per run (badge, name, state, rollouts, last data age, a reward
sparkline, top alert), most severe first, then the most recent. The app owns the data (a
RunSet read by a worker thread, posted as immutable RunRows); this screen only paints them.

Keys: enter opens the run's dashboard (esc there comes back), space selects runs for `c`
compare, b marks runs as the baseline (2-3 seeds: every run is judged against their envelope).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ..judge.baseline import Baseline
from ..output import fmt_age
from ..runs import RunRow
from .model import clean
from .text_line import TextLine
from .themes import uses_ascii

if TYPE_CHECKING:
    from .runs_app import RunsApp

BADGE = {
    "ok": ("✓ ok", "+ ok"),
    "warning": ("! warn", "! warn"),
    "critical": ("✗ crit", "x crit"),
    "unknown": ("? n/a", "? n/a"),
    "loading": ("… load", "~ load"),
}
BLOCKS = "▁▂▃▄▅▆▇█"
ASCII = ".:-=+*#%@"
MAX_COMPARE = 4


@dataclass
class RunsChanged(Message):
    """The reader thread's newest rows (all runs, overview order)."""

    rows: list


@dataclass
class BaselineChanged(Message):
    """A baseline was built from the marked runs (or dropped); error: why not."""

    baseline: Baseline | None
    error: str | None = None


def spark(values, width: int, ascii: bool = False) -> str:
    """The last `width` values as block glyphs scaled to their own min..max."""
    vals = [v for v in values[-width:]] if width > 0 else []
    glyphs = ASCII if ascii else BLOCKS
    fin = [v for v in vals if math.isfinite(v)]
    if not fin:
        return "".rjust(width)
    lo, hi = min(fin), max(fin)
    out = []
    for v in vals:
        if not math.isfinite(v):
            out.append("!")
        elif hi <= lo:
            out.append(glyphs[len(glyphs) // 2 - 1])
        else:
            out.append(glyphs[max(0, min(len(glyphs) - 1, round((v - lo) / (hi - lo) * (len(glyphs) - 1))))])
    return "".join(out).rjust(width)


def columns(width: int, longest_name: int) -> list[tuple[str, str, int]]:
    """(key, label, width) of each column for a table `width` cells wide; the top alert
    takes what is left (at 80 columns about 20 cells)."""
    name_w = max(8, min(longest_name, 18 if width < 100 else 32))
    spark_w = 8 if width < 100 else min(30, 10 + (width - 100) // 5)
    cols = [
        ("mark", "", 3),
        ("status", "status", 7),
        ("run", "run", name_w + 1),
        ("state", "state", 9),
        ("rollouts", "roll", 5),
        ("age", "data", 7),
        ("reward", "reward", spark_w + 1),
    ]
    used = sum(c[2] for c in cols)
    cols.append(("alert", "top alert", max(10, width - used)))
    return cols


class RunsTable(DataTable):
    """The overview's table: the cursor stays on the top (most severe) row while rows load and
    re-sort, until the user moves it; then it stays on the run the user chose."""

    BINDINGS = [
        Binding("home", "scroll_top", "first run", show=False),
        Binding("end", "scroll_bottom", "last run", show=False),
    ]
    user_moved = False

    def _moved(self) -> None:
        self.user_moved = True

    def action_cursor_up(self) -> None:
        self._moved()
        super().action_cursor_up()

    def action_cursor_down(self) -> None:
        self._moved()
        super().action_cursor_down()

    def action_page_up(self) -> None:
        self._moved()
        super().action_page_up()

    def action_page_down(self) -> None:
        self._moved()
        super().action_page_down()

    def action_scroll_top(self) -> None:
        self._moved()
        super().action_scroll_top()

    def action_scroll_bottom(self) -> None:
        self._moved()
        super().action_scroll_bottom()

    async def _on_click(self, event) -> None:
        self._moved()
        await super()._on_click(event)


class OverviewScreen(Screen):
    CSS_PATH = "overview.tcss"
    BINDINGS = [
        Binding("enter", "open", "open run"),
        Binding("space", "select", "select"),
        Binding("c", "compare", "compare"),
        Binding("b", "baseline", "mark baseline"),
        Binding("escape", "clear", "clear the selection", show=False),
        Binding("j", "cursor(1)", "next run", show=False),
        Binding("k", "cursor(-1)", "previous run", show=False),
    ]

    @property
    def _runs(self) -> RunsApp:
        """The runs overview app this screen belongs to (it opens runs, comparisons, baselines)."""
        return cast("RunsApp", self.app)

    def __init__(self, title: str = "") -> None:
        super().__init__(id="overview")
        self.title_text = title
        self.rows: list[RunRow] = []
        self.selected: list[str] = []  # compare, in selection order
        self.baseline_marks: list[str] = []
        self.baseline_names: list[str] = []  # the seeds of the baseline in use
        self.message = ""
        self._ov_layout: tuple = ()
        self._order: list[str] = []
        self._cells: dict[str, tuple] = {}
        self._ages: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield TextLine(id="ov-header")
        yield RunsTable(id="ov-table", cursor_type="row", zebra_stripes=False, cell_padding=0)
        yield Static(id="ov-status")
        yield Footer()

    @property
    def table(self) -> RunsTable:
        return self.query_one("#ov-table", RunsTable)

    @property
    def live(self) -> bool:
        return bool(getattr(self.app, "runs_live", False))

    def on_mount(self) -> None:
        if self.live:
            self.set_interval(1.0, self._tick)
        self.watch(self.app, "theme", self._on_theme, init=False)
        self.set_rows(self.rows)

    def _on_theme(self, _theme) -> None:
        self._cells = {}  # badge and sparkline colours come from the theme
        self._ov_layout = ()
        self._paint()

    def on_screen_resume(self) -> None:
        rows = getattr(self.app, "run_rows", None)
        self.set_rows(self.rows if rows is None else rows)

    def on_resize(self, _event) -> None:
        self._ov_layout = ()
        self.set_rows(self.rows)

    def _tick(self) -> None:
        """Ages move with the clock: repaint the age cells whose text changed, nothing else."""
        if not (self.is_current and self.rows and self._order):
            return
        t = self.table
        width = {k: w for k, _, w in self._ov_layout[1]}["age"] if self._ov_layout else 7
        for r in self.rows:
            text = self._age(r)
            if self._ages.get(r.path) != text and r.path in self._cells:
                self._ages[r.path] = text
                t.update_cell(r.path, "age", Text(text.rjust(width - 1) + " ", style="dim"))

    # ------------------------------------------------------------------ painting
    @property
    def cursor_path(self) -> str | None:
        t = self.table
        if not self._order or t.cursor_row is None or not (0 <= t.cursor_row < len(self._order)):
            return None
        return self._order[t.cursor_row]

    def set_rows(self, rows: list[RunRow]) -> None:
        self.rows = list(rows)
        if not self.is_mounted:
            return
        self._paint()

    def _ascii(self) -> bool:
        return uses_ascii(self.app.current_theme) or bool(getattr(self.app, "force_ascii", False))

    def _age(self, r: RunRow) -> str:
        """Since the newest metric (live only: tests and snapshots show no clock)."""
        if self.live and r.last_data_at is not None:
            return fmt_age(time.time() - r.last_data_at)
        return "-"

    def _paint(self) -> None:
        t = self.table
        width = max(40, (self.size.width or 80) - 1)
        longest = max([len(clean(r.name)) for r in self.rows] + [8])
        cols = columns(width, longest)
        layout = (width, tuple(cols))
        keep = self.cursor_path
        if layout != self._ov_layout:
            t.clear(columns=True)
            for key, label, w in cols:
                label = label.rjust(w - 1) + " " if key in ("rollouts", "age") else label
                t.add_column(Text(label, style="bold", no_wrap=True), width=w, key=key)
            self._ov_layout = layout
            self._order, self._cells = [], {}
        order = [r.path for r in self.rows]
        if order != self._order:
            t.clear()
            self._cells = {}
            for r in self.rows:
                t.add_row(*self._row_cells(r, cols), key=r.path)
                self._cells[r.path] = self._sig(r)
            self._order = order
            if keep in order and t.user_moved:
                t.move_cursor(row=order.index(keep), animate=False)
            else:
                t.move_cursor(row=0, animate=False)
        else:
            for r in self.rows:
                sig = self._sig(r)
                if sig == self._cells.get(r.path):
                    continue
                for (key, _, _), cell in zip(cols, self._row_cells(r, cols)):
                    t.update_cell(r.path, key, cell)
                self._cells[r.path] = sig
        self._paint_header()
        self._paint_status()

    def _sig(self, r: RunRow) -> tuple:
        return (r, r.path in self.selected, r.path in self.baseline_marks, self._ascii(), self.app.theme)

    def _row_cells(self, r: RunRow, cols) -> list[Text]:
        w = {k: width for k, _, width in cols}
        theme = self.app.current_theme
        ascii = self._ascii()
        mark = ("B" if r.path in self.baseline_marks else " ") + ("*" if ascii else "●") * (r.path in self.selected)
        cells: list[Text] = [Text(mark.ljust(3), style="bold")]
        colour = {"ok": theme.success, "warning": theme.warning, "critical": theme.error}.get(r.status)
        blocks, plain = BADGE.get(r.status, BADGE["unknown"])
        cells.append(Text((plain if ascii else blocks).ljust(w["status"]), style=f"bold {colour}" if colour else "dim"))
        name = clean(r.name)
        nw = w["run"] - 1
        if len(name) > nw:
            keep = nw - 1
            name = name[: keep - keep // 2] + "…" + name[len(name) - keep // 2 :]
        cells.append(Text(name.ljust(w["run"]), style="bold" if r.status in ("critical", "warning") else ""))
        if r.status == "loading":
            state = f"load {r.loaded:.0%}"
        elif r.error and r.rollouts == 0:
            state = "no file" if r.error == "no such file" else "error"
        else:
            state = r.state
        state_style = {"live": f"bold {theme.success}" if theme.success else "bold"}.get(state, "")
        cells.append(Text(state[: w["state"] - 1].ljust(w["state"]), style=state_style))
        cells.append(Text(str(r.rollouts).rjust(w["rollouts"] - 1) + " "))
        age = self._ages[r.path] = self._age(r)
        cells.append(Text(age.rjust(w["age"] - 1) + " ", style="dim"))
        cells.append(Text(spark(list(r.reward), w["reward"] - 1, ascii).ljust(w["reward"]), style=theme.primary or ""))
        alert = Text(no_wrap=True, overflow="ellipsis")
        if r.error and r.rollouts == 0:
            alert.append(clean(r.error), style="dim")
        elif r.top:
            sev = {"critical": theme.error, "warning": theme.warning}.get(r.top_severity or "")
            rule, _, rest = clean(r.top).partition(":")
            alert.append(rule, style=f"bold {sev}" if sev else "bold")
            alert.append(":" + rest if rest else "")
            if r.alerts > 1:
                alert.append(f" (+{r.alerts - 1})", style="dim")
        alert.truncate(w["alert"], overflow="ellipsis")
        cells.append(alert)
        return cells

    def _paint_header(self) -> None:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.status] = counts.get(r.status, 0) + 1
        ascii = self._ascii()
        theme = self.app.current_theme
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" grpo-tui runs", style="bold")
        if self.title_text:
            t.append("  " + clean(self.title_text))
        t.append(f"  {len(self.rows)} run{'s' if len(self.rows) != 1 else ''}:")
        for st in ("critical", "warning", "unknown", "ok", "loading"):
            if counts.get(st):
                colour = {"ok": theme.success, "warning": theme.warning, "critical": theme.error}.get(st)
                label = BADGE[st][1 if ascii else 0].split()[0]
                t.append(f" {label} {counts[st]}", style=f"bold {colour}" if colour else "dim")
        if self.baseline_names:
            t.append(
                f"   baseline of {len(self.baseline_names)} seeds: " + clean(", ".join(self.baseline_names)),
                style="dim",
            )
        self.query_one("#ov-header", TextLine).update(t)

    def _paint_status(self) -> None:
        t = Text(no_wrap=True, overflow="ellipsis", style="dim")
        if self.message:
            t.append(" " + clean(self.message))
        elif self.selected:
            names = [self._run_name(p) for p in self.selected]
            t.append(f" selected {len(names)}: " + ", ".join(names) + "  (c: compare, esc: clear)")
        elif not self.rows:
            t.append(" no *.log here yet: new logs appear as they are written")
        else:
            t.append(
                " most severe first, then the newest data · enter: the run's dashboard, esc: back · "
                "space: select 2-4 runs, c: compare them · b: mark 2-3 seeds as the baseline"
            )
        self.query_one("#ov-status", Static).update(t)

    def _run_name(self, path: str) -> str:
        for r in self.rows:
            if r.path == path:
                return clean(r.name)
        return clean(path)

    def say(self, message: str) -> None:
        self.message = message
        if self.is_mounted:
            self._paint_status()

    # ------------------------------------------------------------------ actions
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        path = self.cursor_path
        if path is not None:
            self._runs.open_run(path)

    def action_cursor(self, step: int) -> None:
        t = self.table
        t.action_cursor_down() if step > 0 else t.action_cursor_up()

    def action_select(self) -> None:
        path = self.cursor_path
        if path is None:
            return
        if path in self.selected:
            self.selected.remove(path)
        elif len(self.selected) >= MAX_COMPARE:
            self.say(f"compare takes at most {MAX_COMPARE} runs: space on a selected one unselects it")
            return
        else:
            self.selected.append(path)
        self.message = ""
        self._paint()
        self.action_cursor(1)

    def action_clear(self) -> None:
        self.selected = []
        self.message = ""
        self._paint()

    def action_compare(self) -> None:
        paths = list(self.selected)
        if len(paths) < 2:
            self.say("select 2-4 runs with space first, then c")
            return
        self._runs.open_compare(paths)

    def action_baseline(self) -> None:
        path = self.cursor_path
        if path is None:
            return
        marks = list(self.baseline_marks)
        marks.remove(path) if path in marks else marks.append(path)
        self.baseline_marks = marks
        self.message = ""
        self._paint()
        self._runs.set_baseline(marks)
