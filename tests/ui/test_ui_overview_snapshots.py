"""SVG snapshots of the runs overview, a run judged against a baseline, and the compare chart
(non-live: no clocks on screen; file mtimes are fixed with os.utime so the order is stable).
Regenerate with `pytest tests/ui/test_ui_overview_snapshots.py --snapshot-update`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from grpo_tui.runs import load_baseline
from grpo_tui.ui.runs_app import BaselineApp, RunsApp

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"
SEEDS = [str(LOGS / f"healthy-seed{i}.log") for i in (1, 2, 3)]
GAP = str(LOGS / "gap-jump.log")
OLD = 1_700_000_000
# Logs whose alerts quote an age (stalled, no-steps; engine-down ends stalled) read differently
# every minute: snapshots leave them out (the pilot tests cover them).
CLOCKED = {"stalled.log", "engine-down.log", "no-steps.log"}


@pytest.fixture
def twenty(tmp_path, monkeypatch):
    """20 runs: the sample logs plus healthy copies, in ./runs (a stable title)."""
    d = tmp_path / "runs"
    d.mkdir()
    logs = sorted(f for f in LOGS.glob("*.log") if f.name not in CLOCKED)
    for i, f in enumerate(logs):
        shutil.copy(f, d / f.name)
        os.utime(d / f.name, (OLD + i, OLD + i))
    for j in range(20 - len(logs)):
        name = f"healthy-lr{j + 1}e-6.log"
        shutil.copy(LOGS / f"healthy-seed{j % 3 + 1}.log", d / name)
        os.utime(d / name, (OLD + 100 + j, OLD + 100 + j))
    monkeypatch.chdir(tmp_path)
    return "runs"


@pytest.fixture
def four(tmp_path, monkeypatch):
    d = tmp_path / "four"
    d.mkdir()
    for i, n in enumerate(["healthy-seed1.log", "healthy-seed2.log", "gap-jump.log", "crashed.log"]):
        shutil.copy(LOGS / n, d / n)
        os.utime(d / n, (OLD + i, OLD + i))
    monkeypatch.chdir(tmp_path)
    return "four"


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_overview(snap_compare, twenty, size):
    assert snap_compare(RunsApp([twenty], live=False), terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_baseline_dashboard(snap_compare, size):
    """The seeds' envelope is the run's ranges: the healthy column and badges (and, wide, the
    side chart's band) show it."""
    app = BaselineApp(GAP, baseline=load_baseline(SEEDS), live=False)
    assert snap_compare(app, terminal_size=size)


def test_baseline_chart(snap_compare):
    app = BaselineApp(GAP, baseline=load_baseline(SEEDS), live=False)
    assert snap_compare(app, press=["down", "down", "down", "c"], terminal_size=(80, 24))


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_compare(snap_compare, four, size):
    # rows: crashed, gap-jump (critical), then the two seeds: compare crashed with a seed
    assert snap_compare(RunsApp([four], live=False), press=["space", "down", "down", "space", "c"], terminal_size=size)


def test_overview_marks(snap_compare, four):
    """Selected (●) and baseline (B) marks, and the header naming the baseline."""
    assert snap_compare(
        RunsApp([four], live=False), press=["down", "down", "b", "down", "b", "home", "space"], terminal_size=(80, 24)
    )
