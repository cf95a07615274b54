"""Events on the timeline (`e`): weight updates, checkpoints, evals, 503 retry bursts, engine
health, restarts, crashes, the job's end; each with its log time, the rollout it follows and its
line (enter opens the raw log there). Runs of the same event (a retry storm, one weight update per
rollout) are folded into one row with a count."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from .log_screen import LogScreen
from .model import clean

LABELS = {
    "launch": "launch / restart",
    "engine_retry": "engine retries (503)",
    "max_retries": "retries exhausted",
    "traceback": "traceback",
    "ft_fail": "process failed",
    "train_retry": "training retried",
    "health_check_failed": "engine health check failed",
    "engines_recovered": "engines recovered",
    "oom": "out of memory",
    "nccl_timeout": "NCCL timeout",
    "job_failed": "job failed",
    "job_succeeded": "job succeeded",
    "job_stopped": "job stopped",
    "train_done": "training done",
    "fatal": "fatal error",
    "weight_update_start": "weight update",
    "weight_update_end": "weight update done",
    "checkpoint_start": "checkpoint",
    "checkpoint_saved": "checkpoint saved",
    "eval_skipped": "eval skipped",
    "eval": "eval",
}
SKIP = {"arg", "wandb", "tensorboard", "weight_update_end"}
FOLD_GAP = 60.0  # s: events of one kind closer than this are one row


@dataclass
class EventRow:
    kind: str
    time: str | None
    rollout: int | None
    line: int
    count: int
    text: str
    ts: float | None = None


def fold(events, eval_rollouts=()) -> list[EventRow]:
    """Events in file order, runs of one kind folded; eval records added as events."""
    rows: list[EventRow] = []
    for ev in events:
        if ev.kind in SKIP:
            continue
        r = ev.data.get("after_rollout")
        last = rows[-1] if rows else None
        if (
            last is not None
            and last.kind == ev.kind
            and ev.ts is not None
            and last.ts is not None
            and ev.ts - last.ts <= FOLD_GAP
        ) or (last is not None and last.kind == ev.kind and ev.kind.startswith("weight_update")):
            last.count += 1
            last.ts = ev.ts
            continue
        rows.append(EventRow(ev.kind, ev.time, r, ev.line_no, 1, (ev.data.get("exception") or ev.text).strip(), ev.ts))
    for r, line, time in eval_rollouts:
        rows.append(EventRow("eval", time, r, line, 1, f"eval {r}"))
    rows.sort(key=lambda e: e.line)
    return rows


class EventsScreen(Screen):
    BINDINGS = [
        Binding("escape,e", "close", "close events"),
        Binding("enter", "open", "open the log at the event"),
    ]
    DEFAULT_CSS = """
    EventsScreen #events-title { height: 1; background: $panel; }
    EventsScreen DataTable { height: 1fr; }
    """

    def __init__(self, feed, path: str | None) -> None:
        super().__init__()
        self.feed, self.path = feed, path
        self.rows: list[EventRow] = []

    def compose(self) -> ComposeResult:
        yield Static(id="events-title")
        yield DataTable(id="events-table", cursor_type="row", zebra_stripes=False)
        yield Footer()

    def on_mount(self) -> None:
        seg = self.feed.store.current
        evals = [(rec_r, 0, None) for rec_r in sorted({r for r in seg.ids if seg.has_kinds(seg.row_of[r], "eval")})]
        self.rows = fold(seg.events, evals)
        t = self.query_one(DataTable)
        t.add_columns("time", "after", "event", "n", "text")
        for e in self.rows:
            t.add_row(
                Text(clean(e.time or "-")),
                Text("-" if e.rollout is None else str(e.rollout)),
                Text(LABELS.get(e.kind, e.kind)),
                Text(str(e.count) if e.count > 1 else ""),
                Text(clean(e.text)[:200]),
            )
        title = Text(no_wrap=True)
        title.append(" events ", style="bold")
        title.append(f"{len(self.rows)} (runs of one kind folded)", style="dim")
        self.query_one("#events-title", Static).update(title)
        t.focus()

    def action_open(self) -> None:
        t = self.query_one(DataTable)
        if not self.rows or t.cursor_row is None or not self.path:
            return
        e = self.rows[t.cursor_row]
        if e.line:
            self.app.push_screen(LogScreen(self.path, line=e.line))
        else:
            self.app.push_screen(LogScreen(self.path, rollout=e.rollout))

    def on_data_table_row_selected(self, _event) -> None:
        self.action_open()

    def action_close(self) -> None:
        self.app.pop_screen()
