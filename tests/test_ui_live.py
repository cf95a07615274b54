"""Live modes through the real Follower: follow a growing file, the huge-file history fill,
and replay. Waits poll a condition (never a fixed sleep)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from grpo_tui.ui import app as app_mod
from grpo_tui.ui.alert_pane import AlertPane
from grpo_tui.ui.app import GrpoApp

LOGS = Path(__file__).resolve().parents[1] / "sample_logs"


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
        assert records == 240             # nothing parsed twice by the follower
        with log.open("a", encoding="utf-8") as fh:
            fh.write("[2026-08-21 12:00:00] rollout.py:1 - rollout 48: {'rollout/raw_reward': 0.7}\n")
        await wait_for(pilot, lambda: app.feed.store.current.last_rollout == 48)


async def test_replay_max_speed():
    app = GrpoApp(str(LOGS / "gap-jump.log"), live=True, replay=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.display_state() == "finished")
        assert app.cursor == 47
        assert any(a.rule == "gap-jump" for a in app.feed.engine.alerts)
