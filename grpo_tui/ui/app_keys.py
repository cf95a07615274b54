"""The dashboard's keys: its bindings and the actions they run (cursor, go to, detail, chart,
follow/pause, acknowledge, alert jumps, themes, help).  GrpoApp (app.py) mixes them in; they read
and change only the app's view state and push its screens."""

from __future__ import annotations

import os
from typing import Any

from textual.binding import Binding, BindingType
from textual.widgets import Footer

from ..judge.signals import SIGNALS
from .alert_pane import AlertPane, AlertTable
from .app_state import AppState
from .chart_screen import ChartScreen
from .detail_screen import DetailScreen
from .events_screen import EventsScreen
from .goto_screen import GotoScreen
from .help_screen import HelpScreen
from .log_screen import LogScreen
from .model import id_position
from .signal_row import SignalRow
from .themes import ORDER

# the actions of the dashboard itself: not while a screen is pushed over it
MAIN_ONLY = {
    "cursor",
    "cursor_home",
    "cursor_end",
    "goto",
    "focus_signal",
    "detail",
    "chart",
    "follow",
    "ack",
    "switch_pane",
    "alert_jump",
    "log_scale",
    "whole_run",
    "log",
    "events",
}


# the dashboard's bindings (GrpoApp.BINDINGS: Textual reads bindings from DOMNode classes only)
KEYS: list[BindingType] = [
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
    Binding("w", "whole_run", "sparklines: whole run / last N"),
    Binding("L", "log", "raw log at the cursor"),
    Binding("e", "events", "events timeline"),
]


class KeyActions(AppState):
    """GrpoApp's actions (a mixin: `self` is the app)."""

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

    def action_whole_run(self) -> None:
        """Sparklines: the last N rollouts (cursor window) <-> the whole run in buckets that keep
        each bucket's most extreme value (a spike 10,000 rollouts ago stays visible)."""
        self.whole_run = not self.whole_run
        self.notify(
            "sparklines: whole run" if self.whole_run else "sparklines: last rollouts", timeout=1.5, markup=False
        )
        self.refresh_view()

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
        g = pane.selected_group
        if g is None:
            self.notify("no alert selected")
            return
        for a in g.alerts:  # the row is the sign, however often it was raised
            a.acknowledged = True
        pane.set_alerts(self.feed.engine.report().alerts, force=True)

    def action_switch_pane(self) -> None:
        if isinstance(self.focused, AlertTable):
            self.rows[self.focus_index].focus()
        else:
            self.query_one(AlertTable).focus()

    def on_data_table_row_selected(self, event) -> None:
        """enter on an alert: the cursor goes to its rollout and the raw log opens at its line."""
        if isinstance(event.data_table, AlertTable):
            a = self.query_one(AlertPane).selected
            if a is not None and a.rollout is not None:
                self._set_cursor(a.rollout)
            if a is not None and self.path and os.path.isfile(self.path):
                line = (a.evidence or {}).get("line")
                self.push_screen(
                    LogScreen(
                        self.path,
                        line=line if isinstance(line, int) else None,
                        rollout=None if isinstance(line, int) else a.rollout,
                    )
                )

    def action_events(self) -> None:
        self.push_screen(EventsScreen(self.feed, self.path))

    def action_log(self) -> None:
        if self.feed.input is not None:  # a TensorBoard folder or W&B run: metrics, no log lines
            self.notify(f"a {self.feed.input.label} input has no log lines: open the run's console log for them")
            return
        if not self.path or not os.path.isfile(self.path):
            self.notify("no log file yet")
            return
        self.push_screen(LogScreen(self.path, rollout=self.cursor))

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
        self._sync_ascii()
        self.query_one(Footer).refresh(recompose=True)  # key glyphs follow the theme
        self.notify(f"theme: {self.theme}", markup=False, timeout=1.5)
        self.query_one(AlertPane)._sig = ()
        self._side_key = ()
        self.refresh_view()

    def action_help(self) -> None:
        """Every key of every view (the bindings themselves, never a hand-written list)."""
        sections: list[tuple[str, list[Any]]] = [
            ("dashboard", list(self.BINDINGS)),
            ("alert list (tab)", AlertTable.HELP_BINDINGS),
            ("detail view (enter)", DetailScreen.BINDINGS),
            ("chart view (c)", ChartScreen.BINDINGS),
            ("raw log (L)", LogScreen.BINDINGS),
            ("events (e)", EventsScreen.BINDINGS),
            ("go to rollout (g)", GotoScreen.BINDINGS),
        ]
        here = type(self.screen)
        sections.sort(key=lambda s: 0 if s[1] is getattr(here, "BINDINGS", None) else 1)
        self.push_screen(HelpScreen(sections, ascii=self._ascii()))
