"""Every alert, newest first, with the selected one's check and evidence under the table; a sign
raised again and again on one rule and signal is one row with its count (judge.engine.group_alerts).

All log-derived text goes in as rich Text objects, so "[bold]" in a message stays literal.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from ..judge.engine import Alert, AlertGroup, group_alerts
from .model import clean

SEV = {"critical": ("✗ crit", "x crit"), "warning": ("! warn", "! warn")}


class AlertTable(DataTable):
    """DataTable of alerts; enter moves the app cursor to the alert's rollout."""

    user_moved = False  # the selection follows the top alert until the user moves it
    # the keys it adds to DataTable's, as the help screen lists them
    HELP_BINDINGS: ClassVar[list[tuple[str, str, str]]] = [
        ("enter", "select", "move cursor to the alert's rollout"),
        ("up,down", "move", "select alert"),
    ]

    def action_cursor_up(self) -> None:
        self.user_moved = True
        super().action_cursor_up()

    def action_cursor_down(self) -> None:
        self.user_moved = True
        super().action_cursor_down()


class AlertPane(Vertical):
    DEFAULT_CSS = """
    AlertPane { height: 1fr; }
    AlertPane > AlertTable { height: 1fr; }
    AlertPane > AlertTable { min-height: 3; }
    AlertPane > #evidence { height: auto; max-height: 6; color: $text-muted; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(id="alerts", **kw)
        self.alerts: list[Alert] = []  # each row's alert: its group's latest
        self.groups: list[AlertGroup] = []
        self._sig: tuple = ()

    def compose(self) -> ComposeResult:
        t = AlertTable(id="alert-table", cursor_type="row", zebra_stripes=False)
        t.add_columns("sev", "rule", "at", "message")
        yield t
        yield Static(Text("no alerts"), id="evidence")

    @property
    def table(self) -> AlertTable:
        return self.query_one(AlertTable)

    @property
    def selected(self) -> Alert | None:
        g = self.selected_group
        return None if g is None else g.latest

    @property
    def selected_group(self) -> AlertGroup | None:
        t = self.table
        if not self.groups or t.cursor_row is None or not (0 <= t.cursor_row < len(self.groups)):
            return None
        return self.groups[t.cursor_row]

    def set_alerts(self, alerts: list[Alert], ascii: bool = False, force: bool = False) -> None:
        # Criticals first (a small terminal must show the broken-run sign), see _order.
        alerts = sorted(alerts, key=_order)
        sig = tuple((a.seq, a.active, a.acknowledged, a.severity, a.message) for a in alerts)
        if sig == self._sig and not force:
            return
        keep = self.selected.key if self.selected else None
        self._sig = sig
        self.groups = sorted(group_alerts(alerts), key=lambda g: _order(g.latest))
        self.alerts = [g.latest for g in self.groups]
        t = self.table
        t.clear()
        theme = self.app.current_theme
        for g in self.groups:
            a = g.latest
            dim = a.acknowledged or not a.active
            col = theme.error if a.severity == "critical" else theme.warning
            label = SEV.get(a.severity, ("? " + a.severity, "? " + a.severity))[1 if ascii else 0]
            sev = Text(label, style=("dim " if dim else "bold ") + (col or ""))
            rest = "dim" if dim else ""
            state = "" if a.active else " (cleared)"
            state += " (ack)" if a.acknowledged else ""
            rule = ("ack " if a.acknowledged else "") + clean(a.rule)  # a text marker, not only dim
            times = f"{g.count}× " if g.count > 1 else ""
            t.add_row(
                sev,
                Text(rule, style=rest),
                Text("-" if a.rollout is None else str(a.rollout), style=rest),
                Text(times + clean(a.message) + state, style=rest),
                key=str(a.seq),
            )
        if keep is not None and t.user_moved:
            for i, a in enumerate(self.alerts):
                if a.key == keep:
                    t.move_cursor(row=i)
        elif alerts:
            t.move_cursor(row=0)  # the top item: an open critical when there is one
        self.show_evidence()

    def show_evidence(self) -> None:
        a = self.selected
        ev = self.query_one("#evidence", Static)
        if a is None:
            ev.update(Text("no alerts" if not self.alerts else ""))
            return
        t = Text(no_wrap=False)
        g = self.selected_group
        if g is not None and g.count > 1:
            t.append(g.words() + ": ", style="bold")
        t.append(clean(a.message) + "\n")
        t.append("check: ", style="bold")
        t.append(clean(a.check))
        t.append("  meaning: ", style="bold")
        t.append(clean(a.meaning))
        t.append("\nevidence: ", style="bold")
        t.append(", ".join(f"{clean(k)}={clean(v)}" for k, v in (a.evidence or {}).items()))
        ev.update(t)

    def on_data_table_row_highlighted(self, _event) -> None:
        self.show_evidence()


def _order(a: Alert) -> tuple[int, int, int]:
    """Criticals (even cleared: the run was broken), then warnings, then acknowledged ones;
    open before cleared, newest first."""
    group = 2 if a.acknowledged else (0 if a.severity == "critical" else 1)
    return (group, 0 if a.active else 1, -a.seq)
