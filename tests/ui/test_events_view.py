"""Events on the timeline: `e` lists weight updates, retry bursts (folded with a count), engine
health, the launch line; enter opens the raw log at the event's line."""

from __future__ import annotations

import time
from pathlib import Path

from grpo_tui.pipeline import judge_path
from grpo_tui.ui.app import GrpoApp
from grpo_tui.ui.events_screen import EventsScreen, fold
from grpo_tui.ui.log_screen import LogScreen

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


def test_retry_storm_is_folded_with_its_count_and_rollout():
    seg = judge_path(str(LOGS / "engine-down.log")).store.current
    rows = fold(seg.events)
    kinds = [r.kind for r in rows]
    assert "launch" in kinds and "health_check_failed" in kinds and "max_retries" in kinds
    storms = [r for r in rows if r.kind == "engine_retry"]
    assert storms and all(r.count >= 2 and r.rollout == 15 for r in storms)
    assert sum(r.count for r in storms) == sum(1 for e in seg.events if e.kind == "engine_retry")


async def test_events_screen_opens_the_log_at_an_event():
    app = GrpoApp(str(LOGS / "engine-down.log"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EventsScreen)
        scr = app.screen
        i = next(k for k, r in enumerate(scr.rows) if r.kind == "max_retries")
        scr.query_one("DataTable").move_cursor(row=i)
        await pilot.press("enter")
        end = time.monotonic() + 10  # wait for the screen, not a fixed pause
        while not isinstance(app.screen, LogScreen) and time.monotonic() < end:
            await pilot.pause(0.05)
        assert isinstance(app.screen, LogScreen) and app.screen.start_line == scr.rows[i].line
