"""GrpoApp: the live dashboard. Workers feed lines into one parser -> store -> engine chain
(ui.model.Feed) on the event loop and post DataChanged; the UI repaints at most ~4x/s.

Modes: follow a file live (Follower + 1 s health tick), --replay a finished file by its own
log timestamps, no path = a demo run simulated into a temp file, live=False = load the whole
file once and never watch (tests, snapshots: no clocks on screen).
"""

from __future__ import annotations

import asyncio
import bisect
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from ..follow.follower import FileEvent, Follower, Lines
from ..lines.files import iter_lines
from ..judge.ranges import RangeSet
from ..judge.signals import SIGNALS, signal_series
from .alert_pane import AlertPane, AlertTable
from .chart_screen import ChartScreen, Sketch, draw
from .detail_screen import DetailScreen
from .goto_screen import GotoScreen
from .help_screen import HelpScreen
from .messages import DataChanged, FileEventMsg, LoadProgress
from .model import (BIG_FILE, TAIL_BYTES, Feed, clean, file_size, id_position, last_newline_before,
                    load_whole, newest_id, parse_bytes, quick_report, resolve_path, sorted_ids)
from .text_line import TextLine
from .signal_row import SignalRow, badge, header_text, layout
from .themes import ORDER, load_themes, resolve, uses_ascii

REFRESH_S = 0.25
MARGIN = 16          # rows fetched before the sparkline window (mean5 at a cursor on its left edge)
WIDE = 160
MAIN_ONLY = {"cursor", "cursor_home", "cursor_end", "goto", "focus_signal", "detail", "chart", "follow",
             "ack", "switch_pane", "alert_jump", "log_scale"}


class GrpoApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "grpo-tui"
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help"),
        Binding("left,h", "cursor(-1)", "cursor back one rollout", show=False),
        Binding("right,l", "cursor(1)", "cursor forward one rollout", show=False),
        Binding("home", "cursor_home", "first rollout", show=False),
        Binding("end", "cursor_end", "last rollout", show=False),
        Binding("g", "goto", "go to rollout"),
        Binding("up,k", "focus_signal(-1)", "previous signal", show=False),
        Binding("down,j", "focus_signal(1)", "next signal", show=False),
        Binding("enter,d", "detail", "detail"),
        Binding("c", "chart", "chart"),
        Binding("f", "follow", "follow/pause"),
        Binding("a", "ack", "acknowledge alert"),
        Binding("tab", "switch_pane", "signals <-> alerts", priority=True, show=False),
        Binding("left_square_bracket", "alert_jump(-1)", "previous alert rollout", show=False),
        Binding("right_square_bracket", "alert_jump(1)", "next alert rollout", show=False),
        Binding("t", "cycle_theme", "theme"),
        Binding("y", "log_scale", "log scale (chart)", show=False),
    ]

    def __init__(self, path: str | None = None, *, live: bool = True, replay: float | None = None,
                 theme: str | None = None, ranges: RangeSet | None = None, demo_rate: float = 0.5,
                 force_ascii: bool | None = None) -> None:
        super().__init__()
        self.ranges = ranges
        self.live = live
        self.replay = replay
        self.demo = path is None and live and replay is None
        self.path = resolve_path(path)
        self.demo_rate = demo_rate
        self.feed = Feed(ranges)
        self.cursor: int | None = None
        self.following = True
        self.pause_last: int | None = None
        self.focus_index = 0
        self.log_scale = False
        self.force_ascii = bool(os.environ.get("GRPO_TUI_ASCII")) if force_ascii is None else force_ascii
        self.state = "starting"
        self.last_event = ""
        self.last_data_wall: float | None = None
        self.start_wall = time.time()
        self.growing = False
        self.loading: float | None = None      # history fill progress (huge files)
        self._skip_until: int | None = None    # follower bytes already covered by the history fill
        self._held: list[str] = []             # lines that arrived during the history fill
        self._painted = threading.Event()      # the history thread waits for the tail's paint
        self._dirty = True
        self._n = 0                            # rollouts in the current segment
        self._last: int | None = None          # newest rollout id
        self._win: tuple = ((), np.empty(0, np.int64))   # (key, window ids) cache
        self._rows: list[SignalRow] = []
        self.fetched_w: int | None = None      # sparkline width the rows' data was read for
        self._follower: Follower | None = None
        self._side_key: tuple = ()
        self._sketch = Sketch()                # the side chart's incremental downsample
        for th in load_themes():
            self.register_theme(th)
        self._theme_name = resolve(theme)
        self.requested_theme = theme

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield TextLine(id="header")
        with Horizontal(id="top"):
            with Vertical(id="signals"):
                yield Static(id="colhdr")
                for sig in SIGNALS:
                    yield SignalRow(sig)
            yield PlotextPlot(id="side-chart")
        yield AlertPane()
        yield Static(id="status")
        yield Footer()

    def on_mount(self) -> None:
        try:
            self.theme = self._theme_name
        except Exception:
            self.notify(f"unknown theme {self.requested_theme!r}; using grpo-dark", severity="warning",
                        markup=False)
            self.theme = "grpo-dark"
        self.rows[0].focus()
        self._apply_width()
        if not self.live:
            if self.path and os.path.exists(self.path):
                self.feed = load_whole(self.path, self.ranges)
                self.state = "finished"
            else:
                self.state = "waiting for file"
            self._on_new_data()
            self.refresh_view()
        else:
            self._refresh_timer = self.set_interval(REFRESH_S, self._throttled)
            if self.replay is not None and self.path:
                self.state = f"replay {self.replay:g}x" if self.replay else "replay max"
                self._replay_worker(self.path, float(self.replay))
            else:
                if self.demo:
                    self.path = self._start_demo()
                self.state = "waiting for file"
                self.set_interval(1.0, self._health_tick)
                big = file_size(self.path) > BIG_FILE
                if big:
                    self._skip_until = last_newline_before(self.path, file_size(self.path))
                    self._history_worker(self.path, self._skip_until)
                # A huge file: the history thread parses what is there; the follower starts
                # at its last line (reading 1 GB on the event loop only to drop it delayed
                # the first paint by seconds).
                self._follow_worker(self.path, from_start=not big)

    @property
    def rows(self) -> list[SignalRow]:
        if not self._rows:
            self._rows = list(self.query(SignalRow))
        return self._rows

    def on_resize(self, _event) -> None:
        self._apply_width()
        self._dirty = True

    def _apply_width(self) -> None:
        wide = self.size.width >= WIDE
        if wide != self.screen_stack[0].has_class("wide"):
            self.screen_stack[0].set_class(wide, "wide")
            self._side_key = ()
            self._dirty = True

    # ------------------------------------------------------------------ data workers
    def _start_demo(self) -> str:
        from ..simulate import write_log
        folder = tempfile.mkdtemp(prefix="grpo-tui-demo-")
        path = str(Path(folder) / "demo-gap-jump.log")
        threading.Thread(target=write_log, args=(path, "gap-jump", 60, 1), kwargs={"rate": self.demo_rate},
                         daemon=True, name="demo-writer").start()
        return path

    @work(exclusive=True, group="follow")
    async def _follow_worker(self, path: str, from_start: bool = True) -> None:
        self._follower = Follower(path, from_start=from_start, poll_interval=1.0)
        try:
            async for item in self._follower.events():
                if isinstance(item, Lines):
                    lines = self._past_history(item)
                    if not lines:
                        continue
                    self.growing = True
                    if self.loading is not None:
                        self._held.extend(lines)
                        continue
                    self.feed.feed_lines(lines)
                    self.last_data_wall = time.time()
                    self.post_message(DataChanged(len(self.feed.store.current.ids)))
                elif isinstance(item, FileEvent):
                    self.post_message(FileEventMsg(item.event, item.detail))
        finally:
            self._follower = None

    def _past_history(self, item: Lines) -> list[str]:
        """Drop follower lines the history fill already parsed (bytes < _skip_until)."""
        if self._skip_until is None:
            return item.lines
        if item.offset <= self._skip_until:
            return []
        end = item.offset
        keep: list[str] = []
        for line in reversed(item.lines):
            start = end - len(line.encode("utf-8", "replace")) - 1
            if start < self._skip_until:
                break
            keep.append(line)
            end = start
        self._skip_until = None
        return keep[::-1]

    @work(thread=True, exclusive=True, group="history")
    def _history_worker(self, path: str, end: int) -> None:
        self.call_from_thread(setattr, self, "loading", 0.0)
        quick = parse_bytes(path, max(0, end - TAIL_BYTES), end, self.ranges)
        self._painted.clear()
        self.post_message(LoadProgress(0.0, feed=quick))
        # Let the UI paint the tail before the full parse takes the GIL (at most 1 s).
        self._painted.wait(1.0)
        last = [0.0]

        def progress(f: float) -> None:
            if f - last[0] >= 0.02:
                last[0] = f
                self.post_message(LoadProgress(f))

        full = parse_bytes(path, 0, end, self.ranges, progress)
        self.post_message(LoadProgress(1.0, feed=full, done=True))

    def on_load_progress(self, msg: LoadProgress) -> None:
        if msg.feed is not None:
            self.feed = msg.feed
            self.last_data_wall = time.time()
        self.loading = None if msg.done else msg.fraction
        if msg.done and self._held:
            held, self._held = self._held, []
            self.feed.feed_lines(held)
        self._on_new_data()
        if msg.feed is not None:             # a new feed: paint now, not on the next tick
            self.refresh_view()
            self.call_after_refresh(self._painted.set)

    @work(exclusive=True, group="replay")
    async def _replay_worker(self, path: str, speed: float) -> None:
        parser = self.feed.parser
        pending: list = []
        prev_ts: float | None = None
        n = 0
        for line in iter_lines(path):
            n += 1
            for item in parser.feed(line):
                ts = getattr(item, "ts", None)
                if speed > 0 and ts is not None:
                    if prev_ts is not None and ts > prev_ts:
                        if pending:
                            self.feed.feed_items(pending)
                            pending = []
                            self.post_message(DataChanged())
                        await asyncio.sleep(min((ts - prev_ts) / speed, 5.0))
                    prev_ts = ts if prev_ts is None else max(prev_ts, ts)
                pending.append(item)
            if speed <= 0 and n % 2000 == 0:
                self.feed.feed_items(pending)
                pending = []
                self.post_message(DataChanged())
                await asyncio.sleep(0)
        self.feed.feed_items(pending)
        self.feed.finish()
        self.state = "finished"
        self.post_message(DataChanged())

    def on_data_changed(self, _msg: DataChanged) -> None:
        self._on_new_data()

    def on_file_event_msg(self, msg: FileEventMsg) -> None:
        self.last_event = msg.event + (f" ({msg.detail})" if msg.detail else "")
        if msg.event == "waiting":
            self.state = "waiting for file"
        elif msg.event in ("truncated", "replaced"):
            self.feed = Feed(self.ranges)     # a new log: start over
            self.cursor = None
            self._skip_until = None
        self._dirty = True

    def _on_new_data(self) -> None:
        """O(1) per update: the rollout count and the newest id, never the id array."""
        seg = self.feed.store.current
        old_last = self._last
        self._n = len(seg.ids)
        self._last = last = newest_id(seg)
        if self.cursor is None or (self.following and self.cursor == old_last):
            self.cursor = last
        elif self.cursor is not None and self._n and self.cursor not in seg.row_of:
            self.cursor = last
        if self.live and self.state == "waiting for file" and seg.records:
            self.state = "live"
        self._dirty = True
        if not self.live:
            self.refresh_view()

    def _health_tick(self) -> None:
        if self.replay is None:
            ch = self.feed.engine.tick(time.time(), self.growing, self.last_data_wall, self.start_wall)
            self.growing = False
            if ch:
                self._dirty = True
        if not self._dirty:
            self._refresh_header()    # only the age text moves: don't repaint the rows

    def _refresh_header(self) -> None:
        ascii = uses_ascii(self.current_theme) or self.force_ascii
        self.query_one("#header", TextLine).update(self._header_text(quick_report(self.feed), ascii))

    @property
    def _dirty(self) -> bool:
        return self._dirty_flag

    @_dirty.setter
    def _dirty(self, value: bool) -> None:
        """Marking the view dirty wakes the repaint timer; it sleeps while nothing changes."""
        self._dirty_flag = value
        timer = getattr(self, "_refresh_timer", None)
        if value and timer is not None:
            timer.resume()

    def _throttled(self) -> None:
        if self._dirty:
            self.refresh_view()
        else:
            self._refresh_timer.pause()   # idle: no 4 Hz wake-ups

    # ------------------------------------------------------------------ painting
    def window_ids(self, width: int) -> np.ndarray:
        """The rollout ids the sparklines show: ends at the newest (or the pause point),
        scrolled so the cursor is always visible. Same for all rows, so they line up.
        Reads only `width` rows (O(1) in the history length while following)."""
        seg = self.feed.store.current
        key = (id(self.feed), id(seg), len(seg.ids), width, self.cursor, self.following, self.pause_last)
        if self._win[0] == key:
            return self._win[1]
        ids = self._compute_window(seg, width)
        self._win = (key, ids)
        return ids

    def _compute_window(self, seg, width: int) -> np.ndarray:
        n = len(seg.ids)
        if n == 0 or width <= 0:
            return np.empty(0, np.int64)
        upto = self.pause_last if not self.following and self.pause_last is not None else None
        ids = seg.ids_at(seg.rows_upto(width, upto))
        c = self.cursor
        if c is not None and len(ids):
            if c > ids[-1]:
                ids = seg.ids_at(seg.rows_upto(width, c))
            elif c < ids[0]:                      # cursor left of the window: centre it
                sids, i = id_position(seg, c)
                ids = seg.ids_at(seg.rows_upto(width, int(sids[min(n - 1, i + width // 2)])))
        return ids

    def refresh_view(self) -> None:
        self._dirty = False
        feed = self.feed
        report = quick_report(feed)
        seg = feed.store.current
        ascii = uses_ascii(self.current_theme) or self.force_ascii
        rows = self.rows
        # Before the first layout the rows have no width yet: guess it from the screen
        # (a row repaints through refresh_view if its real width differs, see SignalRow).
        row_w = rows[0].size.width or (100 if self.size.width >= WIDE else self.size.width) or 80
        spark_w, _ = layout(row_w)
        self.fetched_w = spark_w
        win = self.window_ids(spark_w)
        at_newest = not len(win) or int(win[-1]) == self._last
        upto = None if at_newest else int(win[-1])
        need = max(len(win), spark_w, layout(self.size.width)[0]) + MARGIN
        for row in rows:
            ids, vals = signal_series(seg, row.sig, last=need, upto=upto)
            row.set_data(report.signals[row.sig.id], np.asarray(ids), np.asarray(vals), at_newest)
        self.query_one("#colhdr", Static).update(header_text(row_w))
        self.query_one("#header", TextLine).update(self._header_text(report, ascii))
        self.query_one(AlertPane).set_alerts(report.alerts, ascii)
        self.query_one("#status", Static).update(self._status_text())
        if self.screen_stack[0].has_class("wide"):
            key = (feed.changes, self._n, self.focus_index, self.cursor, self.log_scale, id(feed))
            if key != self._side_key:
                self._side_key = key
                draw(self.query_one("#side-chart", PlotextPlot), feed, SIGNALS[self.focus_index].id,
                     log=self.log_scale, cursor=self.cursor, sketch=self._sketch)

    def display_state(self) -> str:
        if self.loading is not None:
            return f"loading history {self.loading:.0%}"
        if not self.live or self.state == "finished":
            return "finished"
        if self.state == "waiting for file":
            return "waiting for file"
        if not self.following:
            return f"paused (+{self.pending_new()} new)"
        if any(a.rule == "stalled" for a in self.feed.engine.open_alerts):
            return "stalled"
        if self.replay is not None:
            return "▶ " + self.state
        return "● live"

    def pending_new(self) -> int:
        seg = self.feed.store.current
        if self.pause_last is None or not seg.ids:
            return 0
        if seg.ordered and seg.ids[-1] <= self.pause_last:
            return 0
        ids = sorted_ids(seg)
        return len(ids) - bisect.bisect_right(ids, self.pause_last)

    def _header_text(self, report, ascii: bool) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" ")
        t.append_text(badge(report.status if report.status != "warning" else "warning", self.current_theme,
                            ascii))
        t.append("  ")
        name = clean(Path(self.path).name if self.path else "(no file)")
        rest = self._header_rest(report)
        room = (self.size.width or 80) - t.cell_len - len(rest) - 2
        if len(name) > room:               # a long file name must not push the state off screen
            keep = max(8, room - 1)
            name = name[: keep - keep // 2] + "…" + name[len(name) - keep // 2:]
        t.append(name, style="bold")
        t.append("  " + self.display_state())
        last = report.last_rollout
        t.append(f"  rollout {'-' if last is None else last}")
        if self.cursor is not None and self.cursor != last:
            t.append(f"  cursor {self.cursor}", style="reverse")
        t.append(f"  K={report.steps_per_rollout}")
        if self.live and self.last_data_wall is not None and self.replay is None:
            t.append(f"  {time.time() - self.last_data_wall:.0f}s ago", style="dim")
        return t

    def _header_rest(self, report) -> str:
        """The header after the file name, as plain text (its length sizes the name)."""
        last = report.last_rollout
        out = f"  {self.display_state()}  rollout {'-' if last is None else last}"
        if self.cursor is not None and self.cursor != last:
            out += f"  cursor {self.cursor}"
        out += f"  K={report.steps_per_rollout}"
        if self.live and self.last_data_wall is not None and self.replay is None:
            out += f"  {time.time() - self.last_data_wall:.0f}s ago"
        return out

    def _status_text(self) -> Text:
        c = self.feed.parser.counts
        t = Text(no_wrap=True, overflow="ellipsis", style="dim")
        t.append(f" lines {c.lines}  records {c.records}  unreadable {c.unreadable}  cut {c.cut_records}")
        if len(self.feed.store.segments) > 1:
            t.append(f"  segments {len(self.feed.store.segments)}")
        if self.last_event:
            t.append("  file: " + clean(self.last_event))
        return t

    # ------------------------------------------------------------------ actions
    def check_action(self, action: str, parameters) -> bool | None:
        if action in MAIN_ONLY and len(self.screen_stack) > 1:
            return False
        return True

    def _set_cursor(self, rollout: int | None) -> None:
        self.cursor = rollout
        self._side_key = ()
        self.refresh_view()

    def _nearest_id(self, rollout: int, step: int = 0) -> int | None:
        """The id `step` places after the first id >= rollout (clamped); O(1) when ordered."""
        seg = self.feed.store.current
        if not seg.ids:
            return None
        ids, i = id_position(seg, rollout)
        return int(ids[max(0, min(len(ids) - 1, i + step))])

    def action_cursor(self, step: int) -> None:
        if self._last is None:
            return
        r = self._nearest_id(self.cursor if self.cursor is not None else self._last, step)
        if r is not None:
            self._set_cursor(r)

    def action_cursor_home(self) -> None:
        seg = self.feed.store.current
        if seg.ids:
            self._set_cursor(int(seg.ids[0]) if seg.ordered else int(min(seg.ids)))

    def action_cursor_end(self) -> None:
        if self._last is not None:
            self._set_cursor(self._last)

    def action_goto(self) -> None:
        def done(r: int | None) -> None:
            if r is None:
                return
            got = self._nearest_id(r)
            if got is not None:
                self._set_cursor(got)
        self.push_screen(GotoScreen(), done)

    def action_focus_signal(self, step: int) -> None:
        self.focus_index = (self.focus_index + step) % len(SIGNALS)
        self.rows[self.focus_index].focus()
        self._side_key = ()
        self._dirty = True
        if not self.live:
            self.refresh_view()

    def on_descendant_focus(self, event) -> None:
        w = event.widget
        if isinstance(w, SignalRow):
            self.focus_index = [s.id for s in SIGNALS].index(w.sig.id)

    def action_detail(self) -> None:
        if self.cursor is None:
            self.notify("no rollout yet")
            return
        self.push_screen(DetailScreen(self.feed, self.cursor))

    def action_chart(self) -> None:
        self.push_screen(ChartScreen(self.feed, SIGNALS[self.focus_index].id, self.log_scale, self.cursor))

    def action_log_scale(self) -> None:
        self.log_scale = not self.log_scale
        self._side_key = ()
        self.refresh_view()

    def action_follow(self) -> None:
        self.following = not self.following
        if self.following:
            self.pause_last = None
            if self._last is not None:
                self.cursor = self._last
        else:
            self.pause_last = self._last
        self.refresh_view()

    def action_ack(self) -> None:
        pane = self.query_one(AlertPane)
        a = pane.selected
        if a is None:
            self.notify("no alert selected")
            return
        a.acknowledged = True
        pane.set_alerts(self.feed.engine.report().alerts, force=True)

    def action_switch_pane(self) -> None:
        if isinstance(self.focused, AlertTable):
            self.rows[self.focus_index].focus()
        else:
            self.query_one(AlertTable).focus()

    def on_data_table_row_selected(self, event) -> None:
        if isinstance(event.data_table, AlertTable):
            a = self.query_one(AlertPane).selected
            if a is not None and a.rollout is not None:
                self._set_cursor(a.rollout)

    def action_alert_jump(self, direction: int) -> None:
        rs = sorted({a.rollout for a in self.feed.engine.alerts if a.rollout is not None})
        if not rs:
            self.notify("no alerts")
            return
        cur = self.cursor if self.cursor is not None else (self._last if self._last is not None else 0)
        cands = [r for r in rs if r < cur] if direction < 0 else [r for r in rs if r > cur]
        if not cands:
            self.notify("no earlier alert" if direction < 0 else "no later alert")
            return
        self._set_cursor(cands[-1] if direction < 0 else cands[0])

    def action_cycle_theme(self) -> None:
        names = [n for n in ORDER if n in self.available_themes]
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"theme: {self.theme}", markup=False, timeout=1.5)
        self.query_one(AlertPane)._sig = ()
        self._side_key = ()
        self.refresh_view()

    def action_help(self) -> None:
        sections = [("dashboard", self.BINDINGS)]
        if len(self.screen_stack) > 1:
            sections.insert(0, ("this view", list(getattr(self.screen, "BINDINGS", []))))
        sections.append(("alert list", AlertTable.HELP_BINDINGS))
        self.push_screen(HelpScreen(sections))

    def on_unmount(self) -> None:
        if self._follower is not None:
            self._follower.stop()
