"""A one-line text widget that repaints without a layout pass.

The header's age text changes every second; `Static.update` would reflow the whole screen
each time (280 widgets), which made an idle dashboard cost several % of a core.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class TextLine(Widget):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._text = Text()

    @property
    def content(self) -> Text:
        return self._text

    def update(self, text: Text) -> None:
        if text.plain == self._text.plain and text.spans == self._text.spans:
            return
        self._text = text
        self.refresh()  # same size (one line): repaint only, no layout

    def render(self) -> Text:
        return self._text
