"""Help overlay generated from the live BINDINGS (app + the screen below), never hand-written."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.keys import format_key
from textual.screen import ModalScreen
from textual.widgets import Static


def _rows(bindings) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for b in bindings:
        if isinstance(b, tuple):
            b = Binding(*b)
        desc = b.description or b.action
        keys = ",".join(format_key(k.strip()) for k in b.key.split(","))   # "?" not "question_mark"
        if desc in seen:                # merge keys that share one action description
            i = seen[desc]
            out[i] = (out[i][0] + "," + keys, desc)
            continue
        seen[desc] = len(out)
        out.append((keys, desc))
    return out


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close help")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 70; max-width: 95%; height: auto; max-height: 90%;
        border: round $primary; background: $surface; padding: 0 1; }
    """

    def __init__(self, sections: list[tuple[str, list]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        t = Text()
        t.append("grpo-tui keys\n", style="bold")
        for title, bindings in self.sections:
            rows = _rows(bindings)
            if not rows:
                continue
            t.append(f"\n{title}\n", style="bold underline")
            for keys, desc in rows:
                t.append(f"  {keys:<18}", style="bold")
                t.append(f" {desc}\n")
        t.append("\nBadges: ✓ ok  ! warn  ✗ crit  ? n/a (no range)\n", style="dim")
        with VerticalScroll():
            yield Static(t, id="help-text")

    def action_dismiss(self, result=None) -> None:  # type: ignore[override]
        self.dismiss(None)
