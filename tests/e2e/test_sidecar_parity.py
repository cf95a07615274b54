"""The same run read from its TensorBoard folder or W&B offline run gets its console log's verdict
(issue #41), the rules that read the console aside.

Two kinds of input: every sample log written here as Miles' TensorBoard adapter writes it (one events
file per process, one event per scalar, float32), and the committed fixtures that the real writers
made (tensorboardX, wandb offline; scripts/make_*_fixtures.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grpo_tui.lines.parse import LineParser
from grpo_tui.lines.records import MetricRecord
from grpo_tui.pipeline import judge_path
from grpo_tui.sidecar import tensorboard as tb

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"
FIXTURES = ROOT / "tests" / "fixtures" / "sidecars"
# what only the console shows: a traceback, the engines' health lines, the log going on without
# metrics, a log with no metric line at all
CONSOLE_ONLY = {"crashed", "engine-down", "stalled", "no-steps"}


def _records(log: Path) -> list[MetricRecord]:
    p = LineParser()
    items = p.feed_lines(log.read_text(encoding="utf-8", errors="replace").splitlines()) + p.flush()
    return [it for it in items if type(it) is MetricRecord]


def write_tensorboard(log: Path, out: Path) -> None:
    """As Miles' _TensorboardAdapter: a writer per process (the rollout manager's perf dicts in its
    own file), add_scalar per key at the record's step and console time."""
    out.mkdir(parents=True)
    files = {
        "train": open(out / "events.out.tfevents.1755770000.node0.101.0", "wb"),
        "rm": open(out / "events.out.tfevents.1755770000.node0.102.0", "wb"),
    }
    try:
        for f in files.values():
            f.write(tb.frame(tb.version_event(1755770000.0)))
        for rec in _records(log):
            rm = rec.kind == "perf" and any(k.startswith("rollout/") for k in rec.metrics)
            f = files["rm" if rm else "train"]
            for key, value in rec.metrics.items():
                if key == "train/step" or isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue  # (the step key is the event's step, not a scalar)
                f.write(tb.frame(tb.scalar_event(key, float(value), rec.n, rec.ts or 0.0)))
    finally:
        for f in files.values():
            f.close()


def verdict(path: Path) -> tuple[str, list[tuple]]:
    pipe = judge_path(str(path))
    alerts = sorted((a.rule, a.signal or "", a.severity, a.rollout, a.cleared_at) for a in pipe.engine.alerts)
    return pipe.report().status, alerts


def console_verdict(log: Path) -> tuple[str, list[tuple]]:
    """The console log's verdict without the console-only rules (and the status they made)."""
    status, alerts = verdict(log)
    kept = [a for a in alerts if a[0] not in CONSOLE_ONLY]
    if len(kept) != len(alerts):
        order = {"ok": 0, "warning": 1, "critical": 2}
        status = max((a[2] for a in kept), key=order.__getitem__, default="ok")
    return status, kept


@pytest.mark.parametrize("log", sorted(LOGS.glob("*.log")), ids=lambda p: p.stem)
def test_tensorboard_folder_gets_the_console_verdict(log, tmp_path):
    if not _records(log):
        pytest.skip("no metric line: nothing for a metric file to hold")
    out = tmp_path / "tb"
    write_tensorboard(log, out)
    assert verdict(out) == console_verdict(log)


def _fixture_dirs(kind: str) -> list[Path]:
    folder = FIXTURES / kind
    return sorted(p for p in folder.iterdir() if p.is_dir() and (LOGS / f"{p.name}.log").exists())


@pytest.mark.parametrize("kind", ["tensorboard", "wandb"])
def test_real_writers_fixtures_get_the_console_verdict(kind, tmp_path):
    """Folders made by tensorboardX and by wandb itself (offline mode, one run per process), copied
    as if just written: a metric folder's files are its clock (their mtimes), and a folder last
    written long ago, with no finish line in it, is a stalled or ended run."""
    dirs = _fixture_dirs(kind)
    assert len(dirs) >= 5, f"the {kind} fixtures are missing"
    for src in dirs:
        d = tmp_path / src.name
        shutil.copytree(src, d, copy_function=shutil.copyfile)
        status, alerts = verdict(d)
        want_status, want = console_verdict(LOGS / f"{d.name}.log")
        if kind == "wandb" and d.name == "crashed":
            # the W&B exit record says the run failed: `crashed`, as the console's traceback says
            assert [a[0] for a in alerts] == ["crashed"] + [a[0] for a in want], src
            continue
        assert (status, alerts) == (want_status, want), src


def test_check_names_the_input_and_what_it_cannot_judge(tmp_path):
    out = tmp_path / "run"
    write_tensorboard(LOGS / "gap-jump.log", out)
    r = subprocess.run(
        [sys.executable, "-m", "grpo_tui", "check", "--json", str(out)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2, r.stderr
    obj = json.loads(r.stdout)
    assert obj["status"] == "critical" and obj["input"]["kind"] == "tensorboard"
    assert set(obj["input"]["not_judged"]) == {"crashed", "engine-down", "no-steps"}
    r = subprocess.run(
        [sys.executable, "-m", "grpo_tui", "check", str(out)], capture_output=True, text=True, timeout=120
    )
    assert "input: TensorBoard, written every 2 min" in r.stdout
    assert "metric records read from 2 TensorBoard files; skipped: nothing" in r.stdout


def test_a_folder_of_several_runs_is_each_of_them(tmp_path):
    """Miles without TENSORBOARD_DIR spreads runs over timestamped folders; a `wandb` folder holds
    one offline run per id: `check DIR` and the overview list each run."""
    from grpo_tui.runs import RunSet

    runs = tmp_path / "runs"
    for name in ("a", "b"):
        write_tensorboard(LOGS / "healthy-seed1.log", runs / name)
    shutil.copytree(FIXTURES / "wandb" / "gap-jump" / "wandb", runs / "wandb", copy_function=shutil.copyfile)
    r = subprocess.run(
        [sys.executable, "-m", "grpo_tui", "check", "--json", str(runs)], capture_output=True, text=True, timeout=120
    )
    got = {Path(o["path"]).name: o["status"] for o in json.loads(r.stdout)["runs"]}
    assert r.returncode == 2 and got["a"] == got["b"] == "ok", r.stderr
    assert [s for n, s in got.items() if n.startswith("offline-run-")] == ["critical"]
    assert len(RunSet([str(runs)]).load_all()) == 3


def test_a_live_tensorboard_folder_is_released_up_to_every_file(tmp_path):
    """While one process's file lags (TensorBoard flushes each file on its own), the rows the other
    has written past it wait, so no rollout is judged half-written."""
    from grpo_tui.sidecar.source import open_sidecar

    out = tmp_path / "live"
    write_tensorboard(LOGS / "healthy-seed1.log", out)
    files = sorted(out.iterdir())
    whole = {f: f.read_bytes() for f in files}
    lagging = files[0]  # the train actor's file: cut to its first third
    lagging.write_bytes(whole[lagging][: len(whole[lagging]) // 3])
    side = open_sidecar(str(out))
    assert side is not None
    first = side.read()
    newest = max(it.ts for it in first if it.ts is not None)
    assert all(it.ts <= newest for it in first)
    ids = {it.n for it in first if it.kind != "step"}
    assert max(ids) < 30  # the rollout manager's file goes to 47; it waited for the train actor's
    lagging.write_bytes(whole[lagging])
    os.utime(lagging)
    rest = side.read(final=True)
    got = {(it.kind, it.n) for it in first + rest}
    assert got == {(r.kind, r.n) for r in _records(LOGS / "healthy-seed1.log")}


@pytest.mark.parametrize("kind", ["tensorboard", "wandb"])
def test_damaged_metric_files_are_one_line_not_a_traceback(kind, tmp_path):
    import random

    rnd = random.Random(41)
    junk = bytes(rnd.randrange(256) for _ in range(70_000))
    if kind == "tensorboard":
        (tmp_path / "events.out.tfevents.1.node0.1.0").write_bytes(junk)
    else:
        run = tmp_path / "wandb" / "offline-run-20260101_000000-abc"
        run.mkdir(parents=True)
        (run / "run-abc.wandb").write_bytes(junk)
    for cmd in ("check", "export"):
        r = subprocess.run(
            [sys.executable, "-m", "grpo_tui", cmd, str(tmp_path)], capture_output=True, text=True, timeout=120
        )
        assert r.returncode in (1, 3) and "no readable metric" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_runs_overview_and_check_take_metric_folders_beside_logs(tmp_path):
    """`grpo-tui TB_DIR run.log` (the runs overview) and `check` of both: each a run of its own."""
    from grpo_tui.runs import RunSet, judge_many

    write_tensorboard(LOGS / "gap-jump.log", tmp_path / "tb")
    for f in (tmp_path / "tb").iterdir():  # written a minute ago: each file's last log call is whole
        os.utime(f, (f.stat().st_mtime - 60, f.stat().st_mtime - 60))
    log = tmp_path / "logs" / "healthy.log"
    log.parent.mkdir()
    log.write_bytes((LOGS / "healthy-seed1.log").read_bytes())
    paths = [str(tmp_path / "tb"), str(log)]
    rows = {r.path: r for r in RunSet(paths).load_all()}
    assert rows[paths[0]].status == "critical" and rows[paths[0]].rollouts == 48
    assert rows[paths[1]].status == "ok"
    assert [r.status for r in judge_many(paths)] == ["critical", "ok"]
    # a folder of logs with a TensorBoard folder inside is still a folder of logs
    write_tensorboard(LOGS / "gap-jump.log", log.parent / "tensorboard_log")
    from grpo_tui.runs import discover

    assert discover([str(log.parent)]) == [str(log)]


def test_a_quiet_tensorboard_folder_is_a_stalled_warning_not_a_critical(tmp_path):
    """TensorBoard never records a run's end, so a finished run read an hour later looks hung:
    `stalled` is a warning there (a seed folder must not be refused by calibrate for it)."""
    out = tmp_path / "tb"
    write_tensorboard(LOGS / "healthy-seed1.log", out)
    for f in out.iterdir():
        os.utime(f, (f.stat().st_mtime - 3600, f.stat().st_mtime - 3600))
    pipe = judge_path(str(out))
    got = [(a.rule, a.severity) for a in pipe.engine.alerts]
    assert got == [("stalled", "warning")] and pipe.report().status == "warning"
    assert "cannot say if the run finished" in pipe.engine.alerts[0].message
