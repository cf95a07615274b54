"""A one-line prompt: go to rollout N."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class GotoScreen(ModalScreen[int | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    GotoScreen { align: center middle; }
    GotoScreen > Vertical { width: 40; height: auto; border: round $primary; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("go to rollout:")
            yield Input(placeholder="rollout id", id="goto-input", type="integer")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            self.dismiss(int(event.value.strip()))
        except ValueError:
            self.notify("not a rollout number", severity="warning")

    def action_cancel(self) -> None:
        self.dismiss(None)
