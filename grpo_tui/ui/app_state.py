"""The dashboard's state as its mixins (app_keys.KeyActions, app_header.HeaderLines) read it: declared
once, for mypy, which reads a mixin as the app it is mixed into. At run time this is a plain object."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App

    from ..pipeline import Pipeline
    from .signal_row import SignalRow

    _AppBase = App
else:
    _AppBase = object


class AppState(_AppBase):
    """What GrpoApp.__init__ sets and the mixins read and change."""

    if TYPE_CHECKING:
        feed: Pipeline
        path: str | None
        live: bool
        cursor: int | None
        following: bool
        pause_last: int | None
        focus_index: int
        log_scale: bool
        whole_run: bool
        loading: float | None
        replay: float | None
        state: str
        last_event: str
        notify_failed: dict[str, str]
        _last: int | None
        _side_key: tuple
        _dirty: bool

        @property
        def rows(self) -> list[SignalRow]: ...
        def refresh_view(self) -> None: ...
        def _sync_ascii(self) -> None: ...
        def _ascii(self) -> bool: ...
