"""Help overlay generated from the live BINDINGS (app + the screen below), never hand-written."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.keys import format_key
from textual.screen import ModalScreen
from textual.widgets import Static


def _key(name: str) -> str:
    """A key as typed ("?", "[", "enter", "up"), ASCII only (a 16-colour terminal draws it)."""
    shown = format_key(name)
    return shown if shown.isascii() else name


def _rows(bindings) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for b in bindings:
        if isinstance(b, tuple):
            b = Binding(*b)
        desc = b.description or b.action
        keys = ",".join(_key(k.strip()) for k in b.key.split(","))  # "?" not "question_mark"
        if desc in seen:  # merge keys that share one action description
            i = seen[desc]
            out[i] = (out[i][0] + "," + keys, desc)
            continue
        seen[desc] = len(out)
        out.append((keys, desc))
    return out


class HelpScreen(ModalScreen[None]):
    """Every key of every view, in two columns: fits 80x24 without scrolling."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close help")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1; }
    HelpScreen.ascii > VerticalScroll { border: ascii $primary; }
    HelpScreen Horizontal { height: auto; }
    HelpScreen .help-col { width: 1fr; height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, sections: list[tuple[str, list]], ascii: bool = False) -> None:
        super().__init__()
        self.sections = sections
        self.ascii = ascii
        self.set_class(ascii, "ascii")

    def compose(self) -> ComposeResult:
        lines: list[tuple[str, str | None]] = []  # (text, None) is a section title
        for title, bindings in self.sections:
            rows = _rows(bindings)
            if rows:
                if lines:
                    lines.append(("", ""))
                lines.append((title, None))
                lines.extend(rows)
        half = (len(lines) + 1) // 2
        if lines[half - 1][1] is None or lines[half - 1] == ("", ""):  # no title at a column's foot
            half -= 1
        texts = []
        for part in (lines[:half], lines[half:]):
            while part and part[0] == ("", ""):
                part = part[1:]
            t = Text(no_wrap=True, overflow="ellipsis")
            for keys, desc in part:
                if desc is None:
                    t.append(keys + "\n", style="bold underline")
                elif keys or desc:
                    t.append(f"{keys:<10}", style="bold")
                    t.append(f" {desc}\n")
                else:
                    t.append("\n")
            texts.append(t)
        badges = (
            "+ ok  ! warn  x crit  ? n/a   ^ v: outside the band"
            if self.ascii
            else "✓ ok  ! warn  ✗ crit  ? n/a   underlined: outside the band"
        )
        with VerticalScroll():
            yield Static(Text("grpo-tui keys    " + badges, style="bold", no_wrap=True), id="help-title")
            with Horizontal():
                yield Static(texts[0], id="help-text", classes="help-col")
                yield Static(texts[1], id="help-text-2", classes="help-col")

    def action_dismiss(self, result=None) -> None:  # type: ignore[override]
        self.dismiss(None)
