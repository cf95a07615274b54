"""Pilot tests of the runs overview (issue #13): rows and badges agree with `check`, enter/esc
between the overview and a run's dashboard, live growth and new logs, compare, baseline."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from grpo_tui.judge.signals import SIGNALS
from grpo_tui.runs import judge_many, load_baseline
from grpo_tui.ui.compare_screen import BaselineChartScreen, CompareScreen
from grpo_tui.ui.overview import OverviewScreen, RunsTable
from grpo_tui.ui.runs_app import BaselineApp, RunsApp

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"
FOUR = ["healthy-seed1.log", "healthy-seed2.log", "gap-jump.log", "stalled.log"]
OLD = 1_700_000_000


def _folder(tmp_path: Path, names, sub: str = "runs") -> Path:
    d = tmp_path / sub
    d.mkdir(parents=True, exist_ok=True)
    for i, n in enumerate(names):
        src = LOGS / (n if n.endswith(".log") else n + ".log")
        dst = d / (n if n.endswith(".log") else n + ".log")
        shutil.copy(src, dst)
        os.utime(dst, (OLD + i, OLD + i))
    return d


async def _until(pilot, cond, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        await pilot.pause(0.05)


def _cells(app: RunsApp) -> list[list[str]]:
    t = app.overview.table
    return [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]


async def test_overview_lists_four_runs_with_the_right_badges(tmp_path):
    d = _folder(tmp_path, FOUR)
    app = RunsApp([str(d)], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        verdicts = {Path(r.path).name: r.status for r in judge_many(sorted(str(p) for p in d.iterdir()))}
        rows = _cells(app)
        assert len(rows) == 4
        got = {r[2].strip(): r[1].strip() for r in rows}
        badge = {"ok": "✓ ok", "critical": "✗ crit", "warning": "! warn"}
        assert got == {n: badge[s] for n, s in verdicts.items()}
        assert [r[1].strip() for r in rows] == ["✗ crit", "✗ crit", "✓ ok", "✓ ok"]  # severity first
        assert "gap-jump@16" in [r for r in rows if r[2].strip() == "gap-jump.log"][0][7]
        table = app.overview.table
        assert table.region.bottom <= 24 and table.row_count == 4


async def test_enter_opens_the_dashboard_and_esc_comes_back(tmp_path):
    d = _folder(tmp_path, FOUR)
    app = RunsApp([str(d)], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        first = app.overview.cursor_path
        await pilot.press("enter")
        await _until(pilot, lambda: app.open_path == first and len(app.screen_stack) == 1)
        assert app.path == first
        check = judge_many([first])[0].report
        rep = app.feed.report()
        assert rep.status == check.status and [a.rule for a in rep.alerts] == [a.rule for a in check.alerts]
        assert app.cursor == rep.last_rollout
        await pilot.press("left", "left")
        assert app.cursor == rep.last_rollout - 2
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("enter")  # the same run again: no reload
        await pilot.pause()
        assert len(app.screen_stack) == 1 and app.cursor == rep.last_rollout - 2
        await pilot.press("escape", "down", "down")
        second = app.overview.cursor_path
        assert second != first
        await pilot.press("enter")
        await _until(pilot, lambda: app.open_path == second and len(app.screen_stack) == 1)
        rep2 = app.feed.report()
        assert app.path == second and app.cursor == rep2.last_rollout  # a fresh dashboard
        assert rep2.status == judge_many([second])[0].status
        await pilot.press("c")  # the run's own chart still works
        await pilot.pause()
        assert type(app.screen).__name__ == "ChartScreen"
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)


async def test_live_overview_follows_growth_new_logs_and_the_open_run(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    src = (LOGS / "healthy-seed1.log").read_bytes()
    cut = src.index(b"rollout 20:")
    cut = src.rindex(b"\n", 0, cut) + 1
    (d / "a.log").write_bytes(src[:cut])
    app = RunsApp([str(d)], live=True, poll_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: app.run_rows and app.run_rows[0].status != "loading")
        n0 = app.run_rows[0].rollouts
        assert app.run_rows[0].state == "live" and n0 < 48
        assert "s" in _cells(app)[0][5]  # live: the data age is shown
        await pilot.press("enter")
        await _until(pilot, lambda: len(app.screen_stack) == 1 and app._last is not None)
        with open(d / "a.log", "ab") as fh:
            fh.write(src[cut:])
        await _until(pilot, lambda: app._last == 47)  # the open run follows its file
        await pilot.press("escape")
        await _until(pilot, lambda: app.run_rows[0].rollouts == 48)  # ... and so does its row
        shutil.copy(LOGS / "gap-jump.log", d / "b.log")
        await _until(
            pilot, lambda: len(app.run_rows) == 2 and all(r.status != "loading" for r in app.run_rows), timeout=40
        )
        assert [r.name for r in app.run_rows] == ["b.log", "a.log"]  # the critical one on top
        end = time.monotonic() + 10  # the table follows its rows
        while [r[2].strip() for r in _cells(app)] != ["b.log", "a.log"] and time.monotonic() < end:
            await pilot.pause(0.05)
        assert [r[2].strip() for r in _cells(app)] == ["b.log", "a.log"]


async def test_compare_two_runs(tmp_path):
    d = _folder(tmp_path, FOUR)
    app = RunsApp([str(d)], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        assert "select 2-4 runs" in str(app.overview.query_one("#ov-status").content)
        await pilot.press("space", "space")
        assert len(app.overview.selected) == 2
        await pilot.press("c")
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, CompareScreen) and scr.paths == app.overview.selected and scr.sig_id == "reward"
        legend = str(scr.query_one("#cmp-legend").content)
        assert all(Path(p).name in legend for p in scr.paths)
        await pilot.press("down")
        assert scr.sig_id == SIGNALS[1].id
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("escape")  # clears the selection
        assert app.overview.selected == []


async def test_baseline_marks_rejudge_and_reach_the_dashboard(tmp_path):
    d = _folder(tmp_path, ["healthy-seed1.log", "healthy-seed2.log", "gap-jump.log"])
    app = RunsApp([str(d)], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        names = [r.name for r in app.run_rows]
        assert names[0] == "gap-jump.log"
        await pilot.press("down", "b")
        assert "one more" in app.overview.message
        await pilot.press("down", "b")
        await _until(pilot, lambda: app.baseline is not None)
        assert sorted(app.baseline.names) == ["healthy-seed1.log", "healthy-seed2.log"]
        assert {r.ranges for r in app.run_rows} == {"baseline"}
        assert [r.status for r in app.run_rows][0] == "critical"
        assert "baseline" in str(app.overview.query_one("#ov-header").content.plain)
        await pilot.press("home", "enter")
        await _until(pilot, lambda: len(app.screen_stack) == 1 and app.open_path is not None)
        assert app.ranges_label == "baseline"
        gap = app.feed.report().signals["gap"].range
        assert gap == pytest.approx(app.baseline.ranges.bounds("gap", app.feed.report().last_rollout))
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, BaselineChartScreen)
        await pilot.press("escape", "escape", "down", "b")  # unmark one seed: back to the defaults
        await _until(pilot, lambda: app.baseline is None)
        assert {r.ranges for r in app.run_rows} == {"defaults"}


async def test_many_runs_scroll_at_80x24(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    for i in range(24):
        shutil.copy(LOGS / ("no-steps.log" if i % 2 else "crashed.log"), d / f"run{i:02d}.log")
        os.utime(d / f"run{i:02d}.log", (OLD + i, OLD + i))
    app = RunsApp([str(d)], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        t = app.overview.query_one(RunsTable)
        assert t.row_count == 24 and t.size.height < 25
        await pilot.press("end")
        await pilot.pause()
        assert t.cursor_row == 23 and t.scroll_y > 0
        await pilot.press("home")
        assert t.cursor_row == 0


async def test_baseline_app_judges_one_run_against_seeds():
    seeds = [str(LOGS / f"healthy-seed{i}.log") for i in (1, 2, 3)]
    base = load_baseline(seeds)
    app = BaselineApp(str(LOGS / "gap-jump.log"), baseline=base, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        rep = app.feed.report()
        assert app.feed.ranges_label == "baseline" and rep.status == "critical"
        assert rep.signals["reward"].range == pytest.approx(base.ranges.bounds("reward", rep.last_rollout))
        assert "ranges: baseline (3 seeds)" in app._status_text().plain
        await pilot.press("down", "down", "down", "c")
        await pilot.pause()
        assert isinstance(app.screen, BaselineChartScreen) and app.screen.sig_id == "gap"


def test_dashboard_command_routes_folders_and_baseline(tmp_path, monkeypatch):
    from grpo_tui.cli import main
    from grpo_tui.ui.app import GrpoApp

    d = _folder(tmp_path, FOUR[:2])
    started = []
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(GrpoApp, "run", lambda self, *a, **k: started.append(self))
    assert main([str(d)]) == 0
    assert type(started[-1]) is RunsApp
    assert main([str(d / FOUR[0]), str(d / FOUR[1])]) == 0
    assert type(started[-1]) is RunsApp
    assert main([str(d / FOUR[0])]) == 0
    assert type(started[-1]) is GrpoApp
    assert main([str(LOGS / "gap-jump.log"), "--baseline", str(d / FOUR[0]), str(d / FOUR[1])]) == 0
    assert type(started[-1]) is BaselineApp and started[-1].baseline is not None
    assert main([str(d), "--replay", "1"]) == 1  # replay takes one file


async def test_command_line_baseline_marks_its_seeds(tmp_path):
    d = _folder(tmp_path, ["healthy-seed1.log", "healthy-seed2.log", "gap-jump.log"])
    seeds = [str(d / "healthy-seed1.log"), str(d / "healthy-seed2.log")]
    app = RunsApp([str(d)], live=False, baseline=load_baseline(seeds), baseline_paths=seeds)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert sorted(app.overview.baseline_marks) == sorted(seeds)
        assert {r.ranges for r in app.run_rows} == {"baseline"}
        assert [r[0].strip() for r in _cells(app)] == ["", "B", "B"]
    # seeds outside the overview: the baseline holds until 2 marks replace it
    other = _folder(tmp_path, ["gap-jump.log", "healthy-seed3.log"], sub="other")
    app = RunsApp([str(other)], live=False, baseline=load_baseline(seeds), baseline_paths=seeds)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.overview.baseline_marks == [] and app.baseline is not None
        await pilot.press("b")
        assert app.baseline is not None and {r.ranges for r in app.run_rows} == {"baseline"}
