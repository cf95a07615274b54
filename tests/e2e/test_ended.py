"""Old logs (issue #40, item 1): a log silent past the horizon with no finish line is a run that
ended, judged on what it shows (as at its last line), not CRITICAL `stalled` for its age."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from grpo_tui import cli
from grpo_tui.pipeline import Pipeline, judge_path
from grpo_tui.pipeline.core import ENDED_AFTER
from grpo_tui.simulate import generate

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"
DAY = 86400.0


def _aged(tmp_path: Path, name: str, lines: list[str] | None = None, *, age: float = 3 * DAY) -> Path:
    """A copy of sample_logs/NAME (or LINES) whose last line was written `age` seconds ago."""
    path = tmp_path / name
    if lines is None:
        shutil.copyfile(LOGS / name, path)
    else:
        path.write_text("".join(line + "\n" for line in lines))
    t = time.time() - age
    os.utime(path, (t, t))
    return path


def _no_finish(scenario: str = "healthy", seed: int = 2, n: int = 48) -> list[str]:
    return [line for _, line in generate(scenario, n, seed) if "Job '" not in line]


def _check_json(capsys, *args: str) -> tuple[int, dict]:
    code = cli.main(["check", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_a_healthy_log_without_finish_line_opened_days_later_is_ended_not_stalled(tmp_path, capsys):
    log = _aged(tmp_path, "run.log", _no_finish())
    code, obj = _check_json(capsys, str(log))
    assert obj["status"] == "ok" and code == 0, obj["alerts"]
    assert obj["state"] == "ended"
    assert obj["time"]["note"] == "ends at rollout 47 without a finish line, last line 3.0 d ago"
    assert not any(a["rule"] == "stalled" for a in obj["alerts"])
    cli.main(["check", str(log)])
    out = capsys.readouterr().out
    assert "state: ended: ends at rollout 47 without a finish line, last line 3.0 d ago" in out


def test_inside_the_horizon_a_silent_log_is_still_stalled_and_the_horizon_is_settable(tmp_path, capsys):
    log = _aged(tmp_path, "run.log", _no_finish(), age=3 * 3600)
    code, obj = _check_json(capsys, str(log))
    assert code == 2 and obj["state"] == "quiet"
    assert [a["rule"] for a in obj["alerts"]] == ["stalled"]
    assert "the log is silent" in obj["alerts"][0]["message"]
    code, obj = _check_json(capsys, str(log), "--ended-after", "2h")
    assert code == 0 and obj["state"] == "ended" and obj["alerts"] == []
    old = _aged(tmp_path, "old.log", _no_finish())
    code, obj = _check_json(capsys, str(old), "--ended-after", "4d")
    assert code == 2 and obj["state"] == "quiet" and obj["alerts"][0]["rule"] == "stalled"


def test_a_log_that_shows_its_own_hang_stays_stalled_however_old(tmp_path, capsys):
    """sample_logs/stalled.log: 18 min of engine health checks after the last rollout; read as
    at its last line, that is past the limit whatever the file's age."""
    log = _aged(tmp_path, "stalled.log")
    code, obj = _check_json(capsys, str(log))
    assert code == 2 and obj["state"] == "ended"
    (alert,) = [a for a in obj["alerts"] if a["rule"] == "stalled"]
    assert alert["severity"] == "critical"
    assert alert["message"].startswith("no new rollout in the last 18 min of the log")
    assert alert["evidence"]["quiet_s"] == alert["evidence"]["log_goes_on_s"] > alert["evidence"]["limit_s"]


def test_no_steps_stays_critical_whatever_the_age(tmp_path, capsys):
    log = _aged(tmp_path, "no-steps.log", age=30 * DAY)
    code, obj = _check_json(capsys, str(log))
    assert code == 2 and obj["state"] == "ended"
    assert [a["rule"] for a in obj["alerts"]] == ["no-steps"]
    assert obj["time"]["note"].startswith("ends with no metric line and no finish line")


def test_a_finished_log_keeps_its_finish_line_past_the_horizon(tmp_path, capsys):
    log = _aged(tmp_path, "healthy-seed1.log")
    code, obj = _check_json(capsys, str(log))
    assert code == 0 and obj["state"] == "finished" and obj["time"]["finished_by"].startswith("Job '")


def test_a_watched_stall_is_withdrawn_once_the_run_counts_as_ended():
    """The dashboard's pipeline, ticked as time passes: stalled after 10 min of silence, and at
    the horizon the same answer as a fresh `check` of the file (ended, OK)."""
    lines = _no_finish()
    pipe = Pipeline()
    written = 1_000_000.0
    pipe.feed(lines, written_at=written)
    pipe.tick(written + 30)
    assert pipe.report(written + 30).status == "ok"
    pipe.tick(written + 3600)
    rep = pipe.report(written + 3600)
    assert rep.status == "critical" and [a.rule for a in rep.alerts] == ["stalled"]
    changes = pipe.tick(written + ENDED_AFTER + 60)
    assert [(c.kind, c.alert.rule) for c in changes] == [("cleared", "stalled")]
    rep = pipe.report(written + ENDED_AFTER + 60)
    assert rep.status == "ok" and rep.alerts == [] and rep.run_state.name == "ended"
    fresh = Pipeline()
    fresh.feed(lines, written_at=written)
    fresh.finish(written + ENDED_AFTER + 60)
    assert fresh.report(written + ENDED_AFTER + 60).status == "ok"


def test_a_log_without_timestamps_names_no_usual_interval(tmp_path):
    """No log time: no interval to quote (it read "usual interval 0.0 min")."""
    lines = [f"step:{i} - critic/score/mean:0.5 - actor/grad_norm:0.5 - response_length/mean:400" for i in range(1, 30)]
    log = _aged(tmp_path, "verl.log", lines, age=2 * 3600)
    rep = judge_path(str(log)).report()
    (alert,) = [a for a in rep.alerts if a.rule == "stalled"]
    assert "usual interval" not in alert.message and "the log is silent" in alert.message


TRL_SUMMARY = (
    "{'train_runtime': 812.4, 'train_samples_per_second': 1.97, 'train_steps_per_second': 0.06, "
    "'train_loss': 0.0123, 'epoch': 1.0}"
)


def test_trl_train_runtime_summary_is_a_finish_line(tmp_path):
    """(CI runs this file on the pure parser too: GRPO_TUI_PURE=1.)"""
    rows = [f"{{'loss': 0.01, 'grad_norm': 0.4, 'reward': {0.5 + i * 0.001}, 'epoch': {i / 100}}}" for i in range(30)]
    log = _aged(tmp_path, "trl.log", rows + ["100%|##########| 30/30 [13:32<00:00, 27.08s/it]" + TRL_SUMMARY])
    pipe = judge_path(str(log))
    rep = pipe.report()
    assert rep.run_state.name == "finished" and "train_runtime" in rep.run_state.finished_by
    assert rep.rollouts == 30 and rep.status == "ok"
    (ev,) = [e for e in pipe.store.events if e.kind == "train_done"]
    assert ev.data["framework"] == "trl" and ev.data["train_runtime"] == 812.4


@pytest.mark.parametrize("value", ["5", "1m", "abc", "-3h", "nanh", "1e999d"])
def test_ended_after_needs_a_duration_over_two_minutes(value, capsys):
    assert cli.main(["check", str(LOGS / "healthy-seed1.log"), f"--ended-after={value}"]) == 3
    err = capsys.readouterr().err
    assert "--ended-after" in err and len(err.strip().splitlines()) == 1


def test_serve_passes_the_horizon_to_each_session():
    from grpo_tui.web.serve import dashboard_command

    assert "--ended-after 7200s" in dashboard_command(["x.log"], ended_after=7200.0)
