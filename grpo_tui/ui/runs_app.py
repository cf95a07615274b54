"""The many-runs app: the runs overview over the single-run dashboard, and the dashboard of one
run judged against a baseline.

The dashboard stays GrpoApp's own screen. RunsApp pushes the overview over it; `enter` points
the dashboard at the chosen run as if grpo-tui had been started on it (every per-run attribute
GrpoApp.__init__ sets is taken from a fresh GrpoApp for that run, so whatever the dashboard
grows later comes along), and `esc` brings the overview back while the run keeps following
underneath (enter on it again is instant). The overview's data comes from a RunSet read by one
worker thread that posts immutable rows: the overview paints at once (rows say "load"), each
run's history loads in the background, round robin, and new logs in a folder appear.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import App
from textual.binding import Binding, BindingType

from ..judge.baseline import Baseline, from_stores
from ..judge.ranges import RangeSet
from ..judge.signals import SIGNALS
from ..lines.files import InputError
from ..pipeline import judge_path
from ..runs import RunRow, RunSet
from .app import REFRESH_S, GrpoApp
from .compare_screen import BaselineChartScreen, CompareScreen
from .model import clean
from .overview import BaselineChanged, OverviewScreen, RunsChanged

POST_EVERY = 0.25  # s between row posts while histories load
_RUN_KEYS: set[str] | None = None


def run_keys() -> set[str]:
    """The attributes GrpoApp.__init__ sets for its run (all but the App's own)."""
    global _RUN_KEYS
    if _RUN_KEYS is None:
        _RUN_KEYS = set(vars(GrpoApp(None, live=False))) - set(vars(App()))
    return _RUN_KEYS


class BaselineApp(GrpoApp):
    """One run judged against a baseline: the seeds' envelope is its ranges (range column,
    badges, the chart's band), and its charts overlay the seeds' raw curves, dimmed."""

    def __init__(self, path: str | None, *, baseline: Baseline | None = None, **kw) -> None:
        if baseline is not None:
            kw["ranges"], kw["ranges_label"] = baseline.ranges, "baseline"
        super().__init__(path, **kw)
        self.baseline = baseline

    def action_chart(self) -> None:
        if self.baseline is None:
            return super().action_chart()
        self.push_screen(
            BaselineChartScreen(
                self.feed, SIGNALS[self.focus_index].id, self.log_scale, self.cursor, baseline=self.baseline
            )
        )

    def _status_text(self):
        t = super()._status_text()
        if self.baseline is None:
            return t
        head = Text(
            f" ranges: baseline ({len(self.baseline.names)} seeds) ", no_wrap=True, overflow="ellipsis", style="dim"
        )
        head.append_text(t)
        return head


class RunsApp(BaselineApp, inherit_bindings=False):
    BINDINGS: ClassVar[list[BindingType]] = [*GrpoApp.BINDINGS, Binding("escape", "overview", "runs overview")]

    def __init__(
        self,
        paths: list[str],
        *,
        recursive: bool = False,
        live: bool = True,
        theme: str | None = None,
        ranges: RangeSet | None = None,
        ranges_label: str | None = None,
        baseline: Baseline | None = None,
        baseline_paths: list[str] | tuple = (),
        force_ascii: bool | None = None,
        poll_s: float = 1.0,
        notify: bool = True,
        on_critical: str | None = None,
        notify_targets: list | tuple = (),
        notify_on: frozenset[str] | None = None,
    ) -> None:
        self._alerting: dict[str, Any] = dict(notify=notify, on_critical=on_critical)  # each opened run's
        if notify_targets:
            self._alerting["notify_targets"] = notify_targets
        if notify_on:
            self._alerting["notify_on"] = notify_on
        super().__init__(
            None,
            live=False,
            theme=theme,
            ranges=ranges,
            ranges_label=ranges_label,
            force_ascii=force_ascii,
            **self._alerting,
        )
        self.baseline = baseline
        self.base_ranges = ranges
        self.base_label = ranges_label or ("defaults" if ranges is None else "file")
        self.runs_live = live
        self.poll_s = poll_s
        self.runset = RunSet(
            paths,
            recursive=recursive,
            ranges=baseline.ranges if baseline else ranges,
            ranges_label="baseline" if baseline else self.base_label,
        )
        self.run_rows: list[RunRow] = self.runset.rows()
        self.open_path: str | None = None
        self._open_key: tuple = ()
        self._run_timers = False
        self._stop_runs = threading.Event()
        self._wake_runs = threading.Event()
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._pending_baseline: list[str] | None = None
        title = " ".join(clean(p) for p in paths) if len(paths) <= 2 else f"{clean(paths[0])} +{len(paths) - 1}"
        self.overview = OverviewScreen(title)
        self.overview.rows = self.run_rows
        known = {os.path.realpath(p): p for p in self.runset.paths_now()}
        self.overview.baseline_marks = [
            known[os.path.realpath(p)] for p in baseline_paths if os.path.realpath(p) in known
        ]
        if baseline is not None:
            self.overview.baseline_names = list(baseline.names)
        # --baseline seeds that are not rows of the overview: marks can replace that baseline
        # (2-3 marks) but fewer marks do not drop it
        self._fixed_baseline = baseline is not None and not self.overview.baseline_marks

    # ------------------------------------------------------------------ start and stop
    def on_mount(self) -> None:
        super().on_mount()  # themes, signal handlers, an empty dashboard underneath
        self.install_screen(self.overview, name="overview")
        if not self.runs_live:
            self.run_rows = self.runset.load_all()
            self.overview.rows = self.run_rows
        self.push_screen("overview")
        if self.runs_live:
            # after the first paint: the reader's first pass parses histories and would hold
            # the GIL while the overview's rows are laid out
            self.call_after_refresh(self._runs_worker)

    def on_unmount(self) -> None:
        super().on_unmount()
        self._stop_runs.set()
        self._wake_runs.set()

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def _runs_worker(self) -> None:
        """Read every run (round robin, at most a few MiB each per pass), post the rows."""
        state = {"posted": 0.0, "pending": True}  # the first pass always posts
        failed = ""

        def post(force: bool = False) -> None:
            now = time.monotonic()
            if state["pending"] and (force or now - state["posted"] >= POST_EVERY):
                self.post_message(RunsChanged(self.runset.rows()))
                state["posted"], state["pending"] = now, False

        def progress() -> None:  # rows while a long first pass loads histories
            state["pending"] = True
            post()

        try:
            while not self._stop_runs.is_set():
                try:
                    self._handle_commands()
                    loading = not self.runset.all_loaded()
                    if self.runset.pass_once(after_run=progress if loading else None):
                        state["pending"] = True
                except Exception as exc:
                    if str(exc) != failed:
                        failed = str(exc)
                        with contextlib.suppress(Exception):
                            self.call_from_thread(self.notify, f"reading runs: {exc}", severity="error", markup=False)
                loading = not self.runset.all_loaded() or self._pending_baseline is not None
                post(force=not loading)
                if not loading:
                    self._wake_runs.wait(self.poll_s)
                    self._wake_runs.clear()
                else:
                    time.sleep(0.005)  # let the UI thread have the GIL between passes
        finally:
            self.runset.close()

    def on_runs_changed(self, msg: RunsChanged) -> None:
        self.run_rows = msg.rows
        if self.overview.is_current:
            self.overview.set_rows(msg.rows)
        else:
            self.overview.rows = msg.rows

    # ------------------------------------------------------------------ baseline
    def set_baseline(self, marks: list[str]) -> None:
        """The overview's baseline marks changed: build (or drop) the baseline off the UI thread."""
        if len(marks) == 1:
            self.overview.say("mark one more run as baseline (2-3 seeds of the same setup)")
        else:
            self.overview.say(f"building the baseline from {len(marks)} seeds…" if marks else "")
        if len(marks) < 2 and self._fixed_baseline:
            return  # the command line's baseline stays until marks replace it
        self._fixed_baseline = False
        if self.runs_live:
            self._commands.put(("baseline", list(marks)))
            self._wake_runs.set()
        else:
            self._baseline_now(list(marks))
            self.run_rows = self.runset.load_all()
            self.overview.set_rows(self.run_rows)

    def _handle_commands(self) -> None:
        while True:
            try:
                cmd, arg = self._commands.get_nowait()
            except queue.Empty:
                break
            if cmd == "baseline":
                self._pending_baseline = arg
        if self._pending_baseline is not None:
            marks = self._pending_baseline
            if all(self.runset.loaded(p) for p in marks):
                self._pending_baseline = None
                self._baseline_now(marks)

    def _baseline_now(self, marks: list[str]) -> None:
        """Worker thread (or non-live): the seeds' envelope from their loaded stores, then
        every run is judged again against it. Fewer than 2 marks: back to the plain ranges."""
        post = self.post_message
        if len(marks) < 2:
            if self.runset.ranges_label == "baseline":
                self.runset.set_ranges(self.base_ranges, self.base_label)
            post(BaselineChanged(None))
            return
        runs = self.runset.runs
        try:
            got = from_stores([runs[p].pipe.store for p in marks], [runs[p].name for p in marks], self.base_ranges)
        except InputError as exc:
            post(BaselineChanged(None, str(exc)))
            return
        self.runset.set_ranges(got.ranges, "baseline")
        post(BaselineChanged(got))

    def on_baseline_changed(self, msg: BaselineChanged) -> None:
        self.baseline = msg.baseline
        ov = self.overview
        ov.baseline_names = list(msg.baseline.names) if msg.baseline is not None else []
        if msg.error:
            ov.say(msg.error)
        elif msg.baseline is not None:
            ov.say(f"every run is judged against the envelope of {len(msg.baseline.names)} seeds")
        elif len(ov.baseline_marks) != 1:
            ov.say("")
        if ov.is_mounted:
            ov.set_rows(self.run_rows)

    # ------------------------------------------------------------------ the dashboard
    def open_run(self, path: str) -> None:
        key = (path, id(self.baseline))
        if self.open_path == path and self._open_key == key:
            self._show_dashboard()
            return
        self.run_worker(self._switch(path, key), exclusive=True, group="switch")

    def _show_dashboard(self) -> None:
        if self.screen is self.overview:
            self.pop_screen()

    async def _switch(self, path: str, key: tuple) -> None:
        await self._stop_run()
        gen = self._generation
        ranges, label = (
            (self.baseline.ranges, "baseline") if self.baseline is not None else (self.base_ranges, self.base_label)
        )
        fresh = GrpoApp(
            path,
            live=self.runs_live,
            theme=self.requested_theme,
            ranges=ranges,
            ranges_label=label,
            force_ascii=self.force_ascii,
            **self._alerting,
        )
        for k in run_keys():
            setattr(self, k, getattr(fresh, k))
        self._generation = gen + 1
        self.open_path, self._open_key = path, key
        self._show_dashboard()
        self.rows[0].focus()
        self._start_run(path)

    async def _stop_run(self) -> None:
        """Stop following the open run: its history thread sees a new generation, its
        follower and workers end (awaited, so nothing of it lands on the next run)."""
        self._generation += 1
        self._quitting = True
        if self._follower is not None:
            self._follower.stop()
        old = [w for w in self.workers if w.group in ("follow", "history", "replay") and not w.is_finished]
        for w in old:
            w.cancel()
        for w in old:
            if w.group != "history":
                with contextlib.suppress(Exception):
                    await w.wait()

    def _start_run(self, path: str) -> None:
        """What GrpoApp.on_mount does for a file."""
        if not self.live:
            try:
                self.feed = judge_path(path, self.ranges, ranges_label=self.ranges_label)
            except InputError as exc:
                self.notify(str(exc), severity="error", markup=False)
            self._on_new_data()
            self.refresh_view()
            return
        if not self._run_timers:
            self._run_timers = True
            self._refresh_timer = self.set_interval(REFRESH_S, self._throttled)
            self.set_interval(1.0, self._health_tick)
        self._follow(path)
        self._dirty = True
        self.refresh_view()

    def _status_text(self):
        t = super()._status_text()
        head = Text(" esc: runs ·", no_wrap=True, overflow="ellipsis", style="dim")
        head.append_text(t)
        return head

    def action_overview(self) -> None:
        if len(self.screen_stack) == 1:
            self.push_screen("overview")

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "overview":
            return len(self.screen_stack) == 1
        return super().check_action(action, parameters)

    def open_compare(self, paths: list[str]) -> None:
        names = {r.path: r.name for r in self.run_rows}
        self.push_screen(
            CompareScreen(self.runset, paths, names, "reward", baseline=self.baseline, live=self.runs_live)
        )
