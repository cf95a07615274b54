"""SVG snapshots of the dashboard (non-live: no clocks on screen). Sync tests: snap_compare
runs its own event loop. Regenerate with `pytest tests/ui/test_ui_snapshots.py --snapshot-update`."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpo_tui.ui.app import GrpoApp

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"
GAP = str(LOGS / "gap-jump.log")
HEALTHY = str(LOGS / "healthy-seed1.log")


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_healthy(snap_compare, size):
    assert snap_compare(GrpoApp(HEALTHY, live=False), terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_gap_jump(snap_compare, size):
    assert snap_compare(GrpoApp(GAP, live=False), terminal_size=size)


def test_main_gap_jump_cursor_on_alert(snap_compare):
    assert snap_compare(
        GrpoApp(GAP, live=False), press=["left_square_bracket", "down", "down", "down"], terminal_size=(80, 24)
    )


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_detail(snap_compare, size):
    assert snap_compare(GrpoApp(GAP, live=False), press=["left_square_bracket", "d"], terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_chart(snap_compare, size):
    assert snap_compare(GrpoApp(GAP, live=False), press=["down", "down", "down", "c"], terminal_size=size)


def test_help(snap_compare):
    assert snap_compare(GrpoApp(GAP, live=False), press=["question_mark"], terminal_size=(80, 24))


def test_high_contrast_theme(snap_compare):
    assert snap_compare(GrpoApp(GAP, live=False, theme="high-contrast"), terminal_size=(80, 24))


def test_ascii_glyphs(snap_compare):
    assert snap_compare(GrpoApp(GAP, live=False, theme="ascii"), terminal_size=(80, 24))


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_main_gap_jump_whole_run(snap_compare, size):
    """`w`: every sparkline summarises the whole run; the gap's jump at rollout 16 is visible."""
    assert snap_compare(GrpoApp(GAP, live=False), press=["w"], terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_log_view(snap_compare, size):
    """enter on the crash alert: the raw log at the traceback's first line, ANSI stripped."""
    assert snap_compare(GrpoApp(str(LOGS / "crashed.log"), live=False), run_before=_open_log, terminal_size=size)


async def _open_log(pilot):
    import asyncio

    await pilot.press("tab", "enter")
    for _ in range(200):
        scr = pilot.app.screen
        if scr.query("LogView") and _settled(scr.query_one("LogView")) and scr.index.done:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)  # one more poll: the title says the index is complete
    await pilot.pause()


def _settled(view) -> bool:
    """The target is placed and the scrollbar has caught up with it (it repaints a frame later)."""
    bar = view.vertical_scrollbar
    return (
        view.target is not None
        and not view._unplaced
        and view.scroll_y > 0
        and bar.position == view.scroll_y
        and bar.window_virtual_size == view.virtual_size.height
    )


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_events_view(snap_compare, size):
    assert snap_compare(GrpoApp(str(LOGS / "engine-down.log"), live=False), press=["e"], terminal_size=size)
