"""The raw log one key away: L at the cursor's rollout, enter on an alert at its line, / search,
ANSI stripped, lazy (a line index built in a thread, lines read when drawn)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from grpo_tui.ui.app import GrpoApp
from grpo_tui.ui.log_index import LineIndex, plain
from grpo_tui.ui.log_screen import LogScreen, LogView

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


async def _until(pilot, cond, timeout: float = 10.0) -> None:
    """Wait for a condition (a fixed pause is a race under load); the assert after it says what."""
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        await pilot.pause(0.05)


def _wait_index(idx: LineIndex) -> None:
    end = time.monotonic() + 10
    while not idx.done and time.monotonic() < end:
        time.sleep(0.01)


def test_line_index_reads_lines_lazily_and_finds(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(100_000)) + b"x" * 3_000_000 + b"\nlast")
    idx = LineIndex(str(log))
    _wait_index(idx)
    assert idx.lines == 100_002
    assert idx.read(0) == "line 0" and idx.read(99_999) == "line 99999" and idx.read(100_001) == "last"
    assert len(idx.read(100_000)) == 4096  # a 3 MB line is shown cut, never read whole
    assert idx.find(re.compile(rb"line 777\b"), 0) == 777
    assert idx.find(re.compile(rb"line 5\b"), 777, backwards=True) == 5
    assert idx.find(re.compile(rb"nothing here"), 0) is None


def test_plain_strips_ansi_and_controls():
    assert plain(b"\x1b[36m(Actor pid=1)\x1b[0m ok\x07\x1b]0;title\x07 \xe2\x80\xae") == "(Actor pid=1) ok? ?"


async def test_enter_on_the_crash_alert_opens_the_log_at_its_line():
    app = GrpoApp(str(LOGS / "crashed.log"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("tab", "enter")
        await _until(
            pilot,
            lambda: (
                isinstance(app.screen, LogScreen)
                and app.screen.query(LogView)
                and app.screen.query_one(LogView).target is not None
            ),
        )
        assert isinstance(app.screen, LogScreen)
        view = app.screen.query_one(LogView)
        assert view.target == 469  # evidence line 470, 1-based
        assert "\x1b" not in app.screen.index.read(469)
        await pilot.press("slash", *"OutOfMemoryError", "enter")
        await _until(pilot, lambda: view.target != 469)
        assert "OutOfMemoryError" in app.screen.index.read(view.target)
        await pilot.press("escape", "escape")
        assert not isinstance(app.screen, LogScreen)


async def test_L_opens_the_log_at_the_cursor_rollout():
    app = GrpoApp(str(LOGS / "gap-jump.log"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app._set_cursor(16)
        await pilot.press("L")
        await _until(
            pilot,
            lambda: (
                isinstance(app.screen, LogScreen)
                and app.screen.query(LogView)
                and app.screen.query_one(LogView).target is not None
            ),
        )
        view = app.screen.query_one(LogView)
        assert re.search(r"\b(rollout|step) 16: ", app.screen.index.read(view.target))
