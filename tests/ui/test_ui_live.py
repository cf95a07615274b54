"""Live modes through the real Follower: follow a growing file, the huge-file history fill,
and replay. Waits poll a condition (never a fixed sleep)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from grpo_tui.ui import app as app_mod
from grpo_tui.ui.alert_pane import AlertPane
from grpo_tui.ui.app import GrpoApp

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


async def wait_for(pilot, cond, timeout=15.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        await pilot.pause(0.05)


async def test_follow_growing_file(tmp_path):
    log = tmp_path / "run.log"
    lines = (LOGS / "gap-jump.log").read_text(encoding="utf-8").splitlines(keepends=True)
    app = GrpoApp(str(log), live=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.display_state() == "waiting for file")
        log.write_text("".join(lines[:300]), encoding="utf-8")
        await wait_for(pilot, lambda: app.cursor is not None)
        first = app.cursor
        assert app.display_state() == "● live"
        with log.open("a", encoding="utf-8") as fh:
            fh.write("".join(lines[300:]))
        await wait_for(pilot, lambda: app.cursor == 47)
        assert first < 47
        await wait_for(pilot, lambda: any(a.rule == "gap-jump" for a in app.feed.engine.alerts))
        await wait_for(pilot, lambda: "gap-jump" in [a.rule for a in app.query_one(AlertPane).alerts])


async def test_huge_file_history_fill(tmp_path, monkeypatch):
    monkeypatch.setattr(app_mod, "BIG_FILE", 1000)
    monkeypatch.setattr(app_mod, "TAIL_BYTES", 60_000)
    log = tmp_path / "big.log"
    shutil.copy(LOGS / "gap-jump.log", log)
    app = GrpoApp(str(log), live=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.loading is None and len(app.feed.store.current.ids) == 48)
        assert app.feed.store.current.rollout_ids()[0] == 0
        assert any(a.rule == "gap-jump" for a in app.feed.engine.alerts)
        records = app.feed.parser.counts.records
        assert records == 240  # nothing parsed twice by the follower
        with log.open("a", encoding="utf-8") as fh:
            fh.write("[2026-08-21 12:00:00] rollout.py:1 - rollout 48: {'rollout/raw_reward': 0.7}\n")
        await wait_for(pilot, lambda: app.feed.store.current.last_rollout == 48)


async def test_replay_max_speed():
    app = GrpoApp(str(LOGS / "gap-jump.log"), live=True, replay=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.display_state() == "finished")
        assert app.cursor == 47
        assert any(a.rule == "gap-jump" for a in app.feed.engine.alerts)


# --- one verdict: the dashboard header shows exactly `check`'s status, and time from the file ---
import os as _os

import pytest as _pytest

from grpo_tui.pipeline import judge_path

TWO_DAYS = 2 * 86400
OLD_FILES = ["gap-jump.log", "healthy-seed1.log", "stalled.log", "crashed.log", "no-steps.log", "engine-down.log"]


def _aged_copy(src: Path, tmp_path: Path, age: float) -> Path:
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    t = time.time() - age
    _os.utime(dst, (t, t))
    return dst


def _alert_set(alerts):
    return {(a.rule, a.signal, a.severity, a.rollout, a.cleared_at) for a in alerts}


@_pytest.mark.parametrize("name", OLD_FILES)
@_pytest.mark.parametrize("big", [False, True], ids=["follow", "history-fill"])
async def test_old_finished_log_matches_check_and_is_never_live(name, big, tmp_path, monkeypatch):
    """A log last written two days ago: the header shows check's status, never `live`, at once
    (through the follower, and through the huge-file history fill)."""
    if big:
        monkeypatch.setattr(app_mod, "BIG_FILE", 1000)
        monkeypatch.setattr(app_mod, "TAIL_BYTES", 5000)
    log = _aged_copy(LOGS / name, tmp_path, TWO_DAYS)
    expected = judge_path(str(log)).report()
    n_lines = log.read_bytes().count(b"\n")
    app = GrpoApp(str(log), live=True)
    async with app.run_test(size=(80, 24)) as pilot:
        # the whole file is in, and the health tick gave the silent file its final pass
        await wait_for(
            pilot, lambda: app.loading is None and app.feed.lines_seen >= n_lines and app.feed._final_done, timeout=30
        )
        end = time.monotonic() + 5  # ... and a tick judged time after it (a condition, not a pause)
        while (
            app.feed.report().status != expected.status
            or _alert_set(app.feed.report().alerts) != _alert_set(expected.alerts)
        ) and time.monotonic() < end:
            await pilot.pause(0.05)
        report = app.feed.report()
        assert report.status == expected.status
        assert _alert_set(report.alerts) == _alert_set(expected.alerts)
        state = app.display_state()
        assert "live" not in state and state in ("finished", "ended 2.0 d ago")
        badge = {"ok": "✓ ok", "warning": "! warn", "critical": "✗ crit", "unknown": "? n/a"}[expected.status]
        assert badge in str(app._header_text(report, False))
        assert "data 2.0 d ago" in str(app._header_text(report, False)) or expected.rollouts == 0


async def test_hung_log_opened_an_hour_later_is_critical_at_once(tmp_path):
    """stalled.log with mtime an hour ago: `stalled` is open the moment the file is read."""
    log = _aged_copy(LOGS / "stalled.log", tmp_path, 3600)
    app = GrpoApp(str(log), live=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: any(a.rule == "stalled" for a in app.feed.engine.alerts), timeout=5)
        assert app.feed.report().status == "critical"
        assert app.display_state().startswith("quiet")


@_pytest.mark.parametrize("how", ["rewrite-in-place", "replace"])
async def test_restart_into_the_same_file_shows_the_new_run_whole(how, tmp_path):
    """A restart rewritten into the same path (truncate + write, or a new file renamed over it)
    while the dashboard follows: the new run is shown whole, nothing fed after the event is lost."""
    log = tmp_path / "run.log"
    old = (LOGS / "healthy-seed1.log").read_text(encoding="utf-8")
    new = (LOGS / "gap-jump.log").read_text(encoding="utf-8")
    log.write_text(old, encoding="utf-8")
    app = GrpoApp(str(log), live=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.cursor == 47)
        if how == "rewrite-in-place":
            with log.open("r+", encoding="utf-8") as fh:  # same first bytes: same launch line
                fh.truncate(0)
                fh.write(new)
        else:
            tmp = tmp_path / "run.log.new"
            tmp.write_text(new, encoding="utf-8")
            _os.replace(tmp, log)
        await wait_for(
            pilot,
            lambda: (
                app.feed.store.current.index >= 1
                and app.cursor == 47
                and any(a.rule == "gap-jump" for a in app.feed.engine.alerts)
            ),
        )
        seg = app.feed.store.current
        assert len(seg.ids) == 48, "the restarted run must be shown whole"
        assert app.feed.report().status == judge_path(str(log)).report().status == "critical"


async def test_history_fill_shows_loading_no_verdict_and_q_quits_at_once(tmp_path, monkeypatch):
    """While a huge file's history is read and judged, the header shows `loading N %` and no
    verdict (the tail alone would say OK on a run that broke earlier); `q` stops the fill."""
    from grpo_tui.ui.signal_row import BADGES
    from grpo_tui.ui.text_line import TextLine

    monkeypatch.setattr(app_mod, "BIG_FILE", 1000)
    monkeypatch.setattr(app_mod, "TAIL_BYTES", 60_000)
    log = tmp_path / "big.log"
    shutil.copy(LOGS / "gap-jump.log", log)
    chunks: list[int] = []
    results: list[bool] = []
    real = app_mod.feed_file

    def slow_feed(pipe, path, start=0, end=None, progress=None, cancelled=None, chunk=1 << 20):
        if start > 0:  # the quick tail: as is
            return real(pipe, path, start, end, progress, cancelled, chunk)

        def slow_cancelled():
            chunks.append(1)
            time.sleep(0.02)  # a slow disk: ~85 chunks of 4 KiB take ~2 s
            return cancelled()

        ok = real(pipe, path, start, end, progress, slow_cancelled, chunk=4096)
        results.append(ok)
        return ok

    monkeypatch.setattr(app_mod, "feed_file", slow_feed)
    app = GrpoApp(str(log), live=True)
    async with app.run_test(size=(100, 24)) as pilot:
        await wait_for(pilot, lambda: app.loading is not None and len(chunks) > 5)
        await pilot.pause(0.1)
        assert app.display_state().startswith("loading ")
        header = app.query_one("#header", TextLine).content.plain
        assert "load" in header
        assert not any(
            plain in header or blocks in header
            for blocks, plain in BADGES.values()
            if plain.strip() not in ("", "load", "~ load", "… load")
        )
        # the percentage moves in the header alone: progress repaints no row (the rows' repaint
        # took the GIL from the fill)
        repaints: list[int] = []
        real_refresh = app.refresh_view
        app.refresh_view = lambda *a, **k: (repaints.append(1), real_refresh(*a, **k))[1]
        first = int(header.split("loading ")[1].split("%")[0])
        await wait_for(pilot, lambda: len(chunks) > 40)
        await pilot.pause(0.1)
        header = app.query_one("#header", TextLine).content.plain
        assert int(header.split("loading ")[1].split("%")[0]) > first and repaints == []
        seen = len(chunks)
        await pilot.press("q")
    for _ in range(100):  # the history thread notices within one chunk
        if results:
            break
        time.sleep(0.02)
    assert results == [False], "the history fill did not stop on q"
    assert len(chunks) <= seen + 10


async def test_demo_shows_a_live_run_and_leaves_no_temporary_folder(tmp_path, monkeypatch):
    """No PATH: a simulated live run, written into a folder of its own that goes when the app does."""
    monkeypatch.setattr(app_mod.tempfile, "tempdir", str(tmp_path))
    app = GrpoApp(None, live=True, demo_rate=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.cursor is not None and app.cursor >= 2)
        assert app.display_state() == "● live"
        folders = list(tmp_path.glob("grpo-tui-demo-*"))
        assert len(folders) == 1 and (folders[0] / "demo-gap-jump.log").stat().st_size > 0
        await pilot.press("q")
    assert not list(tmp_path.glob("grpo-tui-demo-*"))
