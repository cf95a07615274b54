"""GrpoApp: the live dashboard. Workers feed lines into the one pipeline (pipeline.Pipeline:
parser -> store -> engine) on the event loop and post DataChanged; the UI repaints at most ~4x/s.

Modes: follow a file live (Follower + 1 s health tick), --replay a finished file by its own
log timestamps, no path = a demo run simulated into a temp file, live=False = load the whole
file once and never watch (tests, snapshots: no clocks on screen).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import queue
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from ..follow.follower import FileEvent, Follower, Lines
from ..follow.metric_files import POLL_S, MetricFilesFollower
from ..follow.replay import replay_lines
from ..judge.ranges import RangeSet
from ..judge.signals import SIGNALS, signal_series
from ..notify import Hook, alert_payload, new_criticals, osc_notification
from ..notify.deliver import Notifier, Outcome
from ..notify.notes import notes_for, state_note
from ..notify.targets import DEFAULT_ON, Target
from ..pipeline import (
    InputError,
    Pipeline,
    RunReport,
    feed_file,
    judge_path,
    named_inputs,
    open_input,
    read_judged,
)
from .alert_pane import AlertPane
from .app_header import HeaderLines
from .app_keys import KEYS, KeyActions
from .chart_screen import Sketch, draw
from .messages import DataChanged, FileEventMsg, LoadProgress
from .model import (
    BIG_FILE,
    TAIL_BYTES,
    clean,
    file_size,
    id_position,
    last_newline_before,
    newest_id,
    resolve_path,
)
from .signal_row import SignalRow, header_text, layout
from .sparkline import whole_run_cells
from .text_line import TextLine
from .themes import ORDER, load_themes, resolve, uses_ascii

REFRESH_S = 0.25
MARGIN = 16  # rows fetched before the sparkline window (mean5 at a cursor on its left edge)
WIDE = 160


class GrpoApp(HeaderLines, KeyActions, App):
    CSS_PATH = "app.tcss"
    TITLE = "grpo-tui"
    BINDINGS = KEYS

    def __init__(
        self,
        path: str | None = None,
        *,
        live: bool = True,
        replay: float | None = None,
        theme: str | None = None,
        ranges: RangeSet | None = None,
        demo_rate: float = 0.5,
        force_ascii: bool | None = None,
        ranges_label: str | None = None,
        notify: bool = True,
        on_critical: str | None = None,
        notify_targets: list[Target] | tuple = (),
        notify_on: frozenset[str] = DEFAULT_ON,
    ) -> None:
        super().__init__()
        self.notify_terminal = notify  # bell + desktop notification on a new critical
        self.hook = Hook(on_critical)
        # --notify URL: delivered off the UI thread; outcomes come back through a queue the
        # health tick drains (a failure stays on the status line until that target works again)
        self._outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self.notifier = Notifier(list(notify_targets), self._outcomes.put) if notify_targets else None
        self.notify_on = notify_on
        self.notify_failed: dict[str, str] = {}  # target shown -> what went wrong
        self._told_state: str | None = None  # the run state last seen (finished/quiet are news)
        self._armed_at: int | None = None  # follower offset from which alerts are news
        self._ticked = False  # a health tick judged the file as first read
        self.ranges = ranges
        self.ranges_label = ranges_label
        self.live = live
        self.replay = replay
        self.demo = path is None and live and replay is None
        self.path = resolve_path(path)
        self.demo_rate = demo_rate
        self.feed = self._new_pipeline()
        self.cursor: int | None = None
        self.following = True
        self.pause_last: int | None = None
        self.focus_index = 0
        self.log_scale = False
        self.whole_run = False  # sparklines summarise the whole run (w)
        self.force_ascii = bool(os.environ.get("GRPO_TUI_ASCII")) if force_ascii is None else force_ascii
        self.state = "starting"  # replay / finished; the run's own state is the pipeline's
        self.last_event = ""
        self._told_inputs = False  # the metric folders the log names, said once
        self.loading: float | None = None  # history fill progress (huge files)
        self._skip_until: int | None = None  # follower bytes already covered by the history fill
        self._held: list = []  # follower items that arrived during the history fill
        self._generation = 0  # bumped when the file restarts: stale history is dropped
        self._quitting = False  # background loading stops when this is set
        self._demo_folder: str | None = None  # the demo's temporary folder (removed on exit)
        self._report: RunReport | None = None  # the verdict of the last repaint (header reuses it)
        self._report_of: dict = {}
        self._painted = threading.Event()  # the history thread waits for the tail's paint
        self._dirty = True
        self._n = 0  # rollouts in the current segment
        self._last: int | None = None  # newest rollout id
        self._win: tuple = ((), np.empty(0, np.int64))  # (key, window ids) cache
        self._rows: list[SignalRow] = []
        self.fetched_w: int | None = None  # sparkline width the rows' data was read for
        self._follower: Follower | None = None
        self._side_key: tuple = ()
        self._sketch = Sketch()  # the side chart's incremental downsample
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

    def get_system_commands(self, screen):
        """The command palette (ctrl+p) offers the app's own actions first."""
        from textual.app import SystemCommand

        yield SystemCommand("Go to rollout…", "move the step cursor to a rollout", self.action_goto)
        yield SystemCommand("Raw log at the cursor", "the log file at the cursor's rollout", self.action_log)
        yield SystemCommand("Events timeline", "weight updates, checkpoints, retries, restarts", self.action_events)
        yield SystemCommand("Sparklines: whole run / last N", "toggle the sparkline span", self.action_whole_run)
        for i, sig in enumerate(SIGNALS):
            yield SystemCommand(f"Chart: {sig.label}", sig.tells, lambda i=i: self._chart_of(i))
        for name in ORDER:
            yield SystemCommand(
                f"Theme: {name.removeprefix('grpo-')}",
                "switch the colour theme",
                lambda name=name: self._set_theme(name),
            )
        yield from super().get_system_commands(screen)

    def _chart_of(self, index: int) -> None:
        self.focus_index = index
        self.rows[index].focus()
        self.action_chart()

    def _set_theme(self, name: str) -> None:
        self.theme = name
        self._sync_ascii()
        self._side_key = ()
        self.refresh_view()

    def _announce(self, changes) -> None:
        """A new critical while watching: bell + desktop notification escape (unless
        --no-notify), the --on-critical hook, and a toast; --notify targets get what
        --notify-on asks for."""
        if self.notifier is not None:
            self.notifier.submit(notes_for(changes, self.notify_on, self.path, self.feed.state().label))
        for alert in new_criticals(changes):
            if self.notify_terminal and self._driver is not None:
                self._driver.write(
                    osc_notification(f"grpo-tui: {alert.rule}", f"{Path(self.path or '').name}: {alert.message}")
                )
                self._driver.flush()
            self.hook(alert_payload(alert, self.path))
            self.notify(
                f"{alert.rule}: {clean(alert.message)}",
                title="new critical alert",
                severity="error",
                markup=False,
                timeout=8,
            )

    def _on_signal(self, signum: int) -> None:
        """SIGTERM / SIGHUP / SIGINT: leave like `q` does, so the terminal is restored
        (alternate screen left, cursor shown, mouse tracking off)."""
        self._quitting = True
        self.exit(return_code=128 + signum)

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._on_signal, int(sig))
            except (ValueError, RuntimeError, NotImplementedError):
                pass  # not the main thread (tests), or no such signal here

    def on_mount(self) -> None:
        self._install_signal_handlers()
        try:
            self.theme = self._theme_name
        except Exception:
            self.notify(f"unknown theme {self.requested_theme!r}; using grpo-dark", severity="warning", markup=False)
            self.theme = "grpo-dark"
        self.rows[0].focus()
        self._sync_ascii()
        self._apply_width()
        if not self.live:
            if self.path and os.path.exists(self.path):
                self.feed = judge_path(self.path, self.ranges, ranges_label=self.ranges_label)
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
                assert self.path is not None  # (a file, or the demo's)
                self.set_interval(1.0, self._health_tick)
                self._follow(self.path)

    def _follow(self, path: str) -> None:
        """Start following a run live: a log (its history first, on a thread when it is huge), or
        a TensorBoard folder or W&B run (follow/metric_files.py)."""
        try:
            side = open_input(path) if os.path.isdir(path) or path.endswith(".wandb") else None
        except InputError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        if side is not None:
            self._sidecar_worker(side)
            return
        big = file_size(path) > BIG_FILE
        if big:
            self._skip_until = last_newline_before(path, file_size(path))
            self._history_worker(path, self._skip_until)
        # A huge file: the history thread parses what is there; the follower starts
        # at its last line (reading 1 GB on the event loop only to drop it delayed
        # the first paint by seconds).
        self._follow_worker(path, from_start=not big)

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

        folder = self._demo_folder = tempfile.mkdtemp(prefix="grpo-tui-demo-")
        path = str(Path(folder) / "demo-gap-jump.log")

        def writer() -> None:
            try:
                write_log(path, "gap-jump", 60, 1, rate=self.demo_rate)
            except OSError:  # the folder went with the app (q before the first write): nothing to say
                pass

        threading.Thread(target=writer, daemon=True, name="demo-writer").start()
        return path

    def _new_pipeline(self) -> Pipeline:
        return Pipeline(self.ranges, ranges_label=self.ranges_label)

    @work(exclusive=True, group="follow")
    async def _follow_worker(self, path: str, from_start: bool = True) -> None:
        """Lines and file events go into the pipeline here, in file order (a restart's
        event is never handled later than the lines that follow it)."""
        self._follower = Follower(path, from_start=from_start, poll_interval=1.0)
        self._armed_at = max(0, file_size(path))  # what the file holds now is history, not news
        try:
            async for item in self._follower.events():
                if isinstance(item, Lines):
                    lines = self._past_history(item)
                    if not lines:
                        continue
                    if self.loading is not None:
                        self._held.append(Lines(lines, item.offset, item.written_at))
                        continue
                    up = self.feed.feed(lines, item.written_at)
                    if self._armed_at is not None and item.offset > self._armed_at:
                        self._announce(up.changes)
                    self.post_message(DataChanged(len(self.feed.store.current.ids)))
                elif isinstance(item, FileEvent):
                    if item.event in ("truncated", "replaced", "created") and self.loading is not None:
                        self._drop_history()  # the history being read is no longer the file
                    self.feed.file_event(item.event)
                    self.post_message(FileEventMsg(item.event, item.detail))
        finally:
            self._follower = None

    @work(exclusive=True, group="follow")
    async def _sidecar_worker(self, side) -> None:
        """A TensorBoard folder or W&B run, followed (follow/metric_files.py); the first read
        is history, not news."""
        self.feed.input = side.kind
        follower = MetricFilesFollower(side)
        while True:
            for rec in await asyncio.to_thread(follower.poll):
                up = self.feed.feed_items(rec.items, rec.written_at)
                if self._armed_at is not None:
                    self._announce(up.changes)
                self.post_message(DataChanged(len(self.feed.store.current.ids)))
            self._armed_at = 0
            await asyncio.sleep(POLL_S)

    def _drop_history(self) -> None:
        """The file restarted while its history was loading: keep what the follower reads."""
        self._generation += 1
        self.loading = None
        self._skip_until = None
        for held in self._held:
            self.feed.feed(held.lines, held.written_at)
        self._held = []

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
        gen = self._generation
        self.call_from_thread(setattr, self, "loading", 0.0)
        stale = lambda: gen != self._generation or self._quitting

        def judged(start: int, progress=None) -> Pipeline | None:
            """Bytes [start, end) judged in bulk, as `check` judges a file (None: cancelled)."""
            return read_judged(
                self._new_pipeline,
                lambda pipe: feed_file(pipe, path, start, end, progress, cancelled=stale),
                Pipeline.settle,
            )

        quick = judged(max(0, end - TAIL_BYTES))  # the tail first, painted before the history
        if quick is None:
            return
        self._painted.clear()
        self.post_message(LoadProgress(0.0, feed=quick, generation=gen))
        # Let the UI paint the tail before the full parse takes the GIL (at most 1 s).
        self._painted.wait(1.0)
        last = [0.0]

        def progress(f: float) -> None:
            if abs(f - last[0]) >= 0.02:  # (back to 0: the history read again, read_judged)
                last[0] = f
                self.post_message(LoadProgress(f, generation=gen))

        # the whole history; the header says `loading N %` with no verdict until it is judged
        full = judged(0, progress)
        if full is not None and not stale():
            self.post_message(LoadProgress(1.0, feed=full, done=True, generation=gen))

    def on_load_progress(self, msg: LoadProgress) -> None:
        if msg.generation != self._generation:
            return  # the file restarted: this history is stale
        if msg.feed is None and not msg.done:
            # only the fraction moved (the shown feed is the same): the header alone, not a
            # repaint of every row at 4 Hz, which took the GIL from the fill and slowed it
            self.loading = msg.fraction
            self._refresh_header()
            return
        if msg.feed is not None:
            self.feed = msg.feed
        self.loading = None if msg.done else msg.fraction
        if msg.done and self._held:
            held, self._held = self._held, []
            for item in held:
                self.feed.feed(item.lines, item.written_at)
        self._on_new_data()
        if msg.feed is not None:  # a new feed: paint now, not on the next tick
            self.refresh_view()
            self.call_after_refresh(self._painted.set)

    @work(exclusive=True, group="replay")
    async def _replay_worker(self, path: str, speed: float) -> None:
        """Replay by the log's clock (time rules judged on it), then judged at the file's real
        age exactly as `check` does."""
        pipe = self.feed
        pipe.clock = lambda: pipe.parser.sync_time() or 0.0
        async for batch in replay_lines(path, speed):
            pipe.feed(batch)
            if speed > 0:
                pipe.tick()
            self.post_message(DataChanged())
        try:
            pipe.anchor(os.stat(path).st_mtime)
        except OSError:
            pass
        pipe.clock = time.time
        pipe.finish()
        self.state = "finished"
        self.post_message(DataChanged())

    def on_data_changed(self, _msg: DataChanged) -> None:
        self._on_new_data()

    def on_file_event_msg(self, msg: FileEventMsg) -> None:
        self.last_event = msg.event + (f" ({msg.detail})" if msg.detail else "")
        if msg.event in ("truncated", "replaced"):
            self.cursor = None  # the pipeline started a new segment: follow it
        self._on_new_data()

    def _on_new_data(self) -> None:
        """O(1) per update: the rollout count and the newest id, never the id array."""
        seg = self.feed.store.current
        old_last = self._last
        self._n = len(seg.ids)
        self._last = last = newest_id(seg)
        if (
            self.cursor is None
            or (self.following and self.cursor == old_last)
            or (self.cursor is not None and self._n and self.cursor not in seg.row_of)
        ):
            self.cursor = last
        self._dirty = True
        if not self.live:
            self.refresh_view()
        if (
            self.live
            and not self._told_inputs
            and self._n
            and self.loading is None
            and self.feed.input is None
            and self.path
        ):
            self._told_inputs = True
            for kind, folder, found in named_inputs(self.feed, self.path):
                label = "TensorBoard" if kind == "tensorboard" else "W&B"
                how = f"`grpo-tui {folder}` reads it" if found else "not found from here"
                self.notify(f"this run also writes {label} to {folder} ({how})", markup=False, timeout=8)

    def _health_tick(self) -> None:
        try:
            self._health_tick_once()
        except NoMatches:
            pass  # the app is shutting down: its widgets are already gone

    def _health_tick_once(self) -> None:
        if self.replay is None and self.loading is None:
            changes = self.feed.tick()
            if changes:
                self._dirty = True
                if self._armed_at is not None and self._ticked:
                    self._announce(changes)
            # the first tick after the file was read judges its past (an old hung log's
            # stall): history, not news
            self._ticked = self._ticked or (self._armed_at is not None and self.feed.fed)
            self._tell_state()
        self._take_outcomes()
        if not self._dirty:
            self._refresh_header()  # only the age text moves: don't repaint the rows

    def _tell_state(self) -> None:
        """The run finished or went quiet while watched: news for --notify-on finished/quiet."""
        if self.notifier is None or not self.feed.fed:
            return
        st = self.feed.state()
        before, self._told_state = self._told_state, st.name
        if before is not None and st.name != before and self._ticked:
            note = state_note(st, self.notify_on, self.path)
            if note is not None:
                self.notifier.submit([note])

    def _take_outcomes(self) -> None:
        while True:
            try:
                out = self._outcomes.get_nowait()
            except queue.Empty:
                return
            if out.ok:
                self.notify_failed.pop(out.target.shown, None)
            else:
                self.notify_failed[out.target.shown] = out.words()
            self._dirty = True

    def _refresh_header(self) -> None:
        """Only the state and the ages move between data updates: reuse the last verdict
        (nine signal statuses are not recomputed every second on an idle run)."""
        ascii = uses_ascii(self.current_theme) or self.force_ascii
        rep = self._report if self._report is not None and self._report.report is not None else None
        if rep is None or rep.report is not self._report_of.get(id(self.feed)):
            rep = self.feed.report()
        else:
            rep = dataclasses.replace(rep, run_state=self.feed.state())
        self.query_one("#header", TextLine).update(self._header_text(rep, ascii))

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
            try:
                self.refresh_view()
            except NoMatches:
                pass  # shutting down
        else:
            self._refresh_timer.pause()  # idle: no 4 Hz wake-ups

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
            elif c < ids[0]:  # cursor left of the window: centre it
                sids, i = id_position(seg, c)
                ids = seg.ids_at(seg.rows_upto(width, int(sids[min(n - 1, i + width // 2)])))
        return ids

    def refresh_view(self) -> None:
        self._dirty = False
        self._apply_width()  # the app's own resize handler is not called: check here
        feed = self.feed
        report = feed.report()
        self._report = report
        self._report_of = {id(feed): report.report}
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
        all_ids = np.sort(seg.id_array()) if self.whole_run and len(seg.ids) else None
        for row in rows:
            ids, vals = signal_series(seg, row.sig, last=need, upto=upto)
            cells = None
            if all_ids is not None:
                sid, sval = signal_series(seg, row.sig)
                cells = whole_run_cells(all_ids, np.asarray(sid), np.asarray(sval), spark_w, row.sig.log)
            row.set_data(report.signals[row.sig.id], np.asarray(ids), np.asarray(vals), at_newest, cells)
        self.query_one("#colhdr", Static).update(header_text(row_w, self.whole_run))
        self.query_one("#header", TextLine).update(self._header_text(report, ascii))
        self.query_one(AlertPane).set_alerts(report.alerts, ascii)
        self.query_one("#status", Static).update(self._status_text())
        if self.screen_stack[0].has_class("wide"):
            key = (feed.changes, self._n, self.focus_index, self.cursor, self.log_scale, id(feed))
            if key != self._side_key:
                self._side_key = key
                draw(
                    self.query_one("#side-chart", PlotextPlot),
                    feed,
                    SIGNALS[self.focus_index].id,
                    log=self.log_scale,
                    cursor=self.cursor,
                    sketch=self._sketch,
                    ascii=ascii,
                )

    def _ascii(self) -> bool:
        return uses_ascii(self.current_theme) or self.force_ascii

    def _sync_ascii(self) -> None:
        """The ascii theme draws ASCII only: borders, footer keys, toasts, charts (CSS `.ascii`)."""
        a = self._ascii()
        for scr in self.screen_stack:
            scr.set_class(a, "ascii")

    def push_screen(self, screen, *args, **kwargs):
        if not isinstance(screen, str):
            screen.set_class(self._ascii(), "ascii")
        return super().push_screen(screen, *args, **kwargs)

    def get_key_display(self, binding: Binding) -> str:
        shown = super().get_key_display(binding)
        if self._ascii() and not shown.isascii():
            return binding.key.split(",")[0].replace("_", " ")
        return shown

    async def action_quit(self) -> None:
        self._quitting = True
        await super().action_quit()

    def on_unmount(self) -> None:
        self._quitting = True
        if self.notifier is not None:
            self.notifier.close(1.0)  # what is queued gets a last chance, bounded
        if self._follower is not None:
            self._follower.stop()
        if self._demo_folder is not None:  # the demo's log goes with it (its writer, a daemon
            shutil.rmtree(self._demo_folder, ignore_errors=True)  # thread, writes to an unlinked file)
            self._demo_folder = None
