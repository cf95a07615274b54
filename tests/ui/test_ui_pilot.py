"""Pilot tests of the dashboard in non-live mode: every binding changes the state it claims."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input

from grpo_tui.judge.signals import SIGNALS
from grpo_tui.ui.alert_pane import AlertPane, AlertTable
from grpo_tui.ui.app import GrpoApp
from grpo_tui.ui.chart_screen import ChartScreen
from grpo_tui.ui.detail_screen import DetailScreen
from grpo_tui.ui.help_screen import HelpScreen
from grpo_tui.ui.signal_row import SignalRow

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"
GAP = str(LOGS / "gap-jump.log")
HEALTHY = str(LOGS / "healthy-seed1.log")
SIZES = [(80, 24), (200, 50)]


@pytest.mark.parametrize("size", SIZES)
async def test_nine_rows_and_rule_id(size):
    app = GrpoApp(GAP, live=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        rows = app.query(SignalRow)
        assert [r.sig.id for r in rows] == [s.id for s in SIGNALS]
        assert all(r.region.height == 1 and r.region.y < size[1] for r in rows)  # all visible
        rules = [a.rule for a in app.query_one(AlertPane).alerts]
        assert "gap-jump" in rules
        assert app.display_state() == "finished"
        assert app.screen.has_class("wide") == (size[0] >= 160)


async def test_cursor_keys():
    app = GrpoApp(GAP, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.cursor == 47
        await pilot.press("left")
        assert app.cursor == 46
        await pilot.press("h", "h")
        assert app.cursor == 44
        await pilot.press("right")
        assert app.cursor == 45
        await pilot.press("l")
        assert app.cursor == 46
        await pilot.press("home")
        assert app.cursor == 0
        await pilot.press("end")
        assert app.cursor == 47
        await pilot.press("g")
        assert app.screen.query_one(Input)
        await pilot.press("1", "2", "enter")
        await pilot.pause()
        assert app.cursor == 12


async def test_alert_jumps_and_enter_on_alert():
    app = GrpoApp(GAP, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("left_square_bracket")
        assert app.cursor == 16
        await pilot.press("home", "right_square_bracket")
        assert app.cursor == 16
        await pilot.press("end", "tab")
        assert isinstance(app.focused, AlertTable)
        await pilot.press("enter")
        assert app.cursor == app.query_one(AlertPane).selected.rollout
        # enter also opened the raw log at the alert; esc comes back to the alert list
        from grpo_tui.ui.log_screen import LogScreen

        assert isinstance(app.screen, LogScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, LogScreen)
        await pilot.press("tab")
        assert isinstance(app.focused, SignalRow)


async def test_focus_signal_rows():
    app = GrpoApp(GAP, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused.sig.id == "reward"
        await pilot.press("down", "j")
        assert app.focused.sig.id == SIGNALS[2].id
        await pilot.press("k")
        assert app.focus_index == 1 and app.focused.sig.id == SIGNALS[1].id
        await pilot.press("up", "up")
        assert app.focused.sig.id == SIGNALS[-1].id


async def test_detail_filter_and_close():
    app = GrpoApp(GAP, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("left", "d")
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.rollout == 46
        table = app.screen.query_one("#detail-table", DataTable)
        total = table.row_count
        assert total > 20
        await pilot.press("slash")
        await pilot.press(*"grad_norm")
        await pilot.pause()
        assert 0 < table.row_count < total
        await pilot.press("enter")
        await pilot.press("slash", "ctrl+u", "[", "enter")  # invalid regex: message, no crash
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("escape")  # clears filter
        await pilot.press("escape")  # closes
        assert not isinstance(app.screen, DetailScreen)
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen)


async def test_chart_and_log_scale():
    app = GrpoApp(GAP, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("down", "down", "down", "c")
        assert isinstance(app.screen, ChartScreen)
        assert app.screen.sig_id == "gap"
        await pilot.press("y")
        assert app.screen.log_y is True
        await pilot.press("escape")
        assert not isinstance(app.screen, ChartScreen)
        await pilot.press("y")
        assert app.log_scale is True


async def test_help_follow_ack_theme_quit():
    app = GrpoApp(GAP, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").content)
        assert "acknowledge alert" in text and "go to rollout" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f")
        assert app.following is False and app.display_state().startswith("finished")
        await pilot.press("f")
        assert app.following is True
        pane = app.query_one(AlertPane)
        first = pane.selected
        assert not first.acknowledged
        await pilot.press("a")
        assert first.acknowledged
        before = app.theme
        await pilot.press("t")
        assert app.theme != before
        await pilot.press("q")
    assert not app.is_running


async def test_paused_counts_new(tmp_path):
    """Paused: the cursor stays and the header counts rollouts that arrive (a run not finished)."""
    from grpo_tui.lines.files import iter_lines

    lines = [ln for ln in iter_lines(GAP) if "Job '" not in ln]
    log = tmp_path / "running.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    app = GrpoApp(str(log), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("f")
        assert app.display_state() == "paused (+0 new)"
        more = [ln.replace("rollout 47:", "rollout 48:") for ln in lines if "rollout 47:" in ln]
        app.feed.feed(more)
        app._on_new_data()
        assert app.cursor == 47
        assert app.display_state() == "paused (+1 new)"


MARKUP_LOG = (
    "[2026-08-21 10:00:00] rollout.py:1 - rollout 0: {'rollout/raw_reward': 0.6, '[bold]x[/]': 1.5, "
    "'rollout/[red]evil': 2.0}\n"
)


async def test_markup_in_metric_key_is_literal(tmp_path):
    log = tmp_path / "markup[bold].log"
    log.write_text(MARKUP_LOG, encoding="utf-8")
    app = GrpoApp(str(log), live=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        names = list(app.feed.store.current.names)
        assert "[bold]x[/]" in names, names
        await pilot.press("d")
        table = app.screen.query_one("#detail-table", DataTable)
        cells = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert "[bold]x[/]" in cells
        assert "rollout/[red]evil" in cells
        svg = app.export_screenshot()
        assert "[bold]x[/]" in svg.replace("&#160;", " ")
        await pilot.press("escape")
        header = str(app.query_one("#header").content)
        assert "markup[bold].log" in header


async def test_open_criticals_are_listed_above_warnings_at_80x24():
    app = GrpoApp(str(LOGS / "length-hacking.log"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        alerts = app.query_one(AlertPane).alerts
        assert alerts[0].rule == "length-hacking" and alerts[0].severity == "critical"
        assert len(alerts) > 1 and all(a.severity == "warning" for a in alerts[1:])
        table = app.query_one(AlertTable)
        assert table.region.height >= 2  # the first (critical) row is on screen


async def test_sigterm_handler_leaves_like_q():
    """SIGTERM/SIGHUP/SIGINT run the same exit as `q` (Textual restores the terminal on exit);
    the process exit code says which signal (128 + n). Background loading is told to stop."""
    import signal as _signal

    app = GrpoApp(GAP, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app._on_signal(int(_signal.SIGTERM))
        await pilot.pause()
    assert app.return_code == 128 + int(_signal.SIGTERM) and app._quitting
