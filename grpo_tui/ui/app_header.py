"""The dashboard's header and status line (a mixin of GrpoApp, as app_keys.py holds its keys): the run's
state from the pipeline, the file name cut to fit, the data's age, what was read and skipped."""

from __future__ import annotations

import bisect
from pathlib import Path

from rich.text import Text

from ..output import fmt_age
from .app_state import AppState
from .model import clean, sorted_ids
from .signal_row import badge


class HeaderLines(AppState):
    """GrpoApp's header and status texts (a mixin: `self` is the app)."""

    def display_state(self, report=None) -> str:
        """The run's state as the header shows it: from the pipeline (the log's and the
        file's time), never from when the dashboard opened the file."""
        if self.loading is not None:
            return f"loading {self.loading:.0%}"
        if self.replay is not None and self.state != "finished":
            return "▶ " + (f"replay {self.replay:g}x" if self.replay else "replay max")
        st = report.run_state if report is not None else self.feed.state()
        if st.name == "waiting":
            return "waiting for file" if not self.feed.fed else "empty file"
        if not self.following and st.name != "finished":
            return f"paused (+{self.pending_new()} new)"
        dot = "* " if self._ascii() else "● "
        return (dot + "live") if st.name == "live" else st.label

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
        if self.loading is not None:  # no verdict the loaded part does not support
            t.append("… load" if not ascii else "~ load", style="dim")
        else:
            t.append_text(badge(report.status, self.current_theme, ascii))
        t.append("  ")
        name = clean(Path(self.path).name if self.path else "(no file)")
        rest = self._header_rest(report)
        room = (self.size.width or 80) - t.cell_len - len(rest) - 2
        if len(name) > room:  # a long file name must not push the state off screen
            keep = max(8, room - 1)
            name = name[: keep - keep // 2] + "…" + name[len(name) - keep // 2 :]
        t.append(name, style="bold")
        t.append(rest[: len(rest) - len(self._age_text(report))])
        t.append(self._age_text(report), style="dim")
        return t

    def _header_rest(self, report) -> str:
        """The header after the file name, as plain text (its length sizes the name)."""
        last = report.last_rollout
        out = f"  {self.display_state(report)}  rollout {'-' if last is None else last}"
        if self.cursor is not None and self.cursor != last:
            out += f"  cursor {self.cursor}"
        out += f"  K={report.steps_per_rollout}"
        if report.input is not None:
            out += f"  {report.input.label}, {report.input.lag}"
        return out + self._age_text(report)

    def _age_text(self, report) -> str:
        """How old the newest metric is, by the log and the file (not by our clock)."""
        st = report.run_state
        if not self.live or (self.replay is not None and self.state != "finished"):
            return ""  # tests and snapshots: no clock on screen
        if st.data_age is not None:
            return f"  data {fmt_age(st.data_age)} ago"
        if st.line_age is not None:
            return f"  line {fmt_age(st.line_age)} ago"
        return ""

    def _status_text(self) -> Text:
        c = self.feed.parser.counts
        t = Text(no_wrap=True, overflow="ellipsis", style="dim")
        for words in self.notify_failed.values():  # first: it must show on an 80-column terminal too
            t.append(" " + clean(words) + " ", style="bold red")
        if self.feed.input is not None:  # a TensorBoard folder or W&B run: no lines, its files' records
            recs = sum(seg.records for seg in self.feed.store.segments)
            t.append(f" {self.feed.input.label}  records {recs}")
        else:
            t.append(f" lines {c.lines}  records {c.records}  unreadable {c.unreadable}  cut {c.cut_records}")
        if getattr(c, "long_lines", 0):
            t.append(f"  long lines {c.long_lines}")
        if getattr(c, "dropped_metrics", 0):
            t.append(f"  dropped values {c.dropped_metrics}")
        if len(self.feed.store.segments) > 1:
            t.append(f"  segments {len(self.feed.store.segments)}")
        label, _ = self.feed.ranges_in_use()
        if label == "none":
            t.append("  no range fits: trends only")
        if self.last_event:
            t.append("  file: " + clean(self.last_event))
        return t
