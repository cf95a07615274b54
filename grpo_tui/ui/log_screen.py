"""The raw log, one key away (toolong-like): lazy on a 1 GB file, plain text only.

Opened at the cursor's rollout (`L`) or at an alert's line (`enter` on an alert). Lines are read
from the file when drawn (LineIndex); ANSI colours are stripped and control characters shown as
'?'; `/` searches (a regex over the bytes), `n`/`N` next/previous match.
"""

from __future__ import annotations

import os
import re

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Input, Static

from .log_index import LineIndex
from .model import clean

GUTTER = 9


class LogView(ScrollView, can_focus=True):
    """Draws only the visible lines of the index."""

    DEFAULT_CSS = "LogView { height: 1fr; }"

    def __init__(self, index: LineIndex, **kw) -> None:
        super().__init__(**kw)
        self.index = index
        self.target: int | None = None  # highlighted line (0-based)
        self._unplaced = False  # goto() came before the view had a height
        self.pattern: re.Pattern[str] | None = None

    def sync_size(self) -> None:
        self.virtual_size = Size(GUTTER + 400, max(1, self.index.lines))

    def goto(self, line: int) -> None:
        """Highlight a line and put it a third of the way down, once the view's height is known
        (placing it earlier would depend on how fast the first layout came)."""
        self.target = max(0, line)
        self._unplaced = True
        self.sync_size()
        # after the next layout: by then the new virtual size has shown the scrollbar, which
        # only follows scrolls made while it is shown
        self.call_after_refresh(self._place_target)

    def _place_target(self) -> None:
        if self.target is None or not self._unplaced or self.size.height == 0:
            return
        self._unplaced = False
        self.scroll_to(y=max(0, self.target - self.size.height // 3), animate=False, force=True)
        self.vertical_scrollbar.position = self.scroll_y
        self.refresh()

    def on_resize(self) -> None:
        self._place_target()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        i = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if i >= self.index.lines:
            return Strip.blank(width, base)
        text = Text(f"{i + 1:>{GUTTER - 1}} ", style="dim", no_wrap=True)
        body = Text(self.index.read(i), no_wrap=True)
        if self.pattern is not None:
            for m in self.pattern.finditer(body.plain):
                body.stylize("reverse", m.start(), m.end())
        text.append_text(body)
        if i == self.target:
            text.stylize("bold underline")
        segs = list(text.render(self.app.console))
        strip = Strip(segs).crop_extend(scroll_x, scroll_x + width, base)
        return strip.apply_style(base) if base else strip


class LogScreen(Screen):
    BINDINGS = [
        Binding("escape", "close", "close log / clear search"),
        Binding("slash", "search", "search (regex)"),
        Binding("n", "next(1)", "next match"),
        Binding("N", "next(-1)", "previous match"),
        Binding("g", "top", "first line"),
        Binding("G", "bottom", "last line"),
    ]
    DEFAULT_CSS = """
    LogScreen #log-title { height: 1; background: $panel; }
    LogScreen #log-search { display: none; }
    LogScreen.searching #log-search { display: block; }
    """

    def __init__(self, path: str, *, line: int | None = None, rollout: int | None = None) -> None:
        super().__init__()
        self.path = path
        self.index = LineIndex(path)
        self.start_line = line  # 1-based, as alerts' evidence says
        self.rollout = rollout
        self._placed = False

    def compose(self) -> ComposeResult:
        yield Static(id="log-title")
        yield LogView(self.index, id="log-view")
        yield Input(placeholder="regex (enter searches, escape cancels)", id="log-search")
        yield Footer()

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    def on_mount(self) -> None:
        self.view.focus()
        self.set_interval(0.2, self._poll)
        self._poll()

    def on_unmount(self) -> None:
        self.index.stop()

    def _poll(self) -> None:
        """Follow the index as it grows; place the view once the target is indexed."""
        self.index.grow()
        self.view.sync_size()
        if not self._placed:
            if self.start_line is not None and (self.index.lines >= self.start_line or self.index.done):
                self._placed = True
                self.view.goto(self.start_line - 1)
            elif self.rollout is not None and self.index.done:
                self._placed = True
                hit = self.index.find(re.compile(rb"\b(?:rollout|step) %d: " % self.rollout), -1)
                self.view.goto(hit if hit is not None else 0)
            elif self.start_line is None and self.rollout is None:
                self._placed = True
        self._title()
        self.view.refresh()

    def _title(self) -> None:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" log ", style="bold")
        t.append(clean(os.path.basename(self.path)))
        t.append(f"  {self.index.lines:,} lines" + ("" if self.index.done else " (indexing…)"), style="dim")
        if self.view.pattern is not None:
            t.append(f"  /{self.view.pattern.pattern}/", style="bold")
        self.query_one("#log-title", Static).update(t)

    def action_search(self) -> None:
        self.add_class("searching")
        self.query_one("#log-search", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.remove_class("searching")
        self.view.focus()
        try:
            self.view.pattern = re.compile(event.value, re.IGNORECASE) if event.value else None
        except re.error as exc:
            self.notify(f"bad regex: {exc}", severity="warning", markup=False)
            return
        self.action_next(1)

    def action_next(self, direction: int) -> None:
        pat = self.view.pattern
        if pat is None:
            self.action_search()
            return
        here = self.view.target if self.view.target is not None else self.view.scroll_offset.y
        rx = re.compile(pat.pattern.encode("utf-8", "replace"), re.IGNORECASE)
        hit = self.index.find(rx, here, backwards=direction < 0)
        if hit is None:
            self.notify("no more matches", timeout=1.5)
        else:
            self.view.goto(hit)
        self._title()

    def action_top(self) -> None:
        self.view.goto(0)

    def action_bottom(self) -> None:
        self.view.goto(max(0, self.index.lines - 1))

    def action_close(self) -> None:
        if self.has_class("searching") or self.view.pattern is not None:
            self.remove_class("searching")
            self.view.pattern = None
            self.view.focus()
            self._title()
            self.view.refresh()
            return
        self.app.pop_screen()
