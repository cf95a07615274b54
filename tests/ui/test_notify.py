"""Notifications: a new critical rings the bell, sends OSC 9/777 (log text sanitised) and runs
--on-critical CMD with the alert as JSON; the history of a file already written is not news."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from grpo_tui.notify import Hook, osc_notification
from grpo_tui.ui.app import GrpoApp

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


def test_osc_sequences_carry_no_raw_control_characters():
    seq = osc_notification("grpo-tui: crashed", "evil\x1b[2J\x07;text\x9b")
    assert seq.startswith("\a\x1b]9;") and "\x1b]777;notify;" in seq
    inner = seq[1:].replace("\x1b]9;", "").replace("\x1b]777;notify;", "").replace("\x07", "")
    assert "\x1b" not in inner and "\x9b" not in inner
    assert inner.count(";") == 1  # only 777's own title/body separator


def test_hook_runs_the_command_with_the_alert_on_stdin(tmp_path):
    out = tmp_path / "got.json"
    hook = Hook(f"{shlex.quote(sys.executable)} -c \"import sys; open({str(out)!r}, 'w').write(sys.stdin.read())\"")
    hook({"rule": "gap-jump", "severity": "critical"})
    for c in hook.children:
        c.wait(10)
    assert json.loads(out.read_text())["rule"] == "gap-jump"
    Hook("/nonexistent/command")({"rule": "x"})  # a missing command never raises


def _hook_cmd(out: Path) -> str:
    return f"{shlex.quote(sys.executable)} -c \"import sys; open({str(out)!r}, 'a').write(sys.stdin.read())\""


def test_tail_on_critical_fires_for_new_criticals_only(tmp_path):
    log = tmp_path / "run.log"
    lines = (LOGS / "gap-jump.log").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if "rollout 14:" in ln)
    log.write_text("".join(lines[:cut]), encoding="utf-8")
    out = tmp_path / "hook.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "grpo_tui", "tail", str(log), "--on-critical", _hook_cmd(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(1.5)
        with log.open("a", encoding="utf-8") as fh:
            fh.write("".join(lines[cut:]))
        end = time.monotonic() + 30
        while time.monotonic() < end and not (out.exists() and "gap-jump" in out.read_text()):
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(10)
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [g["rule"] for g in got] == ["gap-jump"] and got[0]["severity"] == "critical"
    assert got[0]["path"] == str(log)


async def test_dashboard_announces_a_new_critical_not_the_history(tmp_path):
    log = tmp_path / "run.log"
    lines = (LOGS / "gap-jump.log").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if "rollout 14:" in ln)
    log.write_text("".join(lines[:cut]), encoding="utf-8")
    out = tmp_path / "hook.jsonl"
    app = GrpoApp(str(log), live=True, on_critical=_hook_cmd(out))
    async with app.run_test(size=(80, 24)) as pilot:
        # the history is read (its last rollout is 14: "perf 14" comes before "rollout 14")
        end = time.monotonic() + 10
        while not (app.feed.lines_seen >= cut and app.cursor is not None) and time.monotonic() < end:
            await pilot.pause(0.05)
        assert app.feed.lines_seen >= cut and app.cursor is not None
        with log.open("a", encoding="utf-8") as fh:
            fh.write("".join(lines[cut:]))
        end = time.monotonic() + 20
        while not any(a.rule == "gap-jump" for a in app.feed.engine.alerts) and time.monotonic() < end:
            await pilot.pause(0.05)
        for c in app.hook.children:
            c.wait(10)
    assert [json.loads(x)["rule"] for x in out.read_text().splitlines()] == ["gap-jump"]


async def test_opening_a_broken_log_is_not_announced(tmp_path):
    out = tmp_path / "hook.jsonl"
    app = GrpoApp(str(LOGS / "gap-jump.log"), live=True, on_critical=_hook_cmd(out))
    async with app.run_test(size=(80, 24)) as pilot:
        end = time.monotonic() + 10
        while not any(a.rule == "gap-jump" for a in app.feed.engine.alerts) and time.monotonic() < end:
            await pilot.pause(0.05)
        await pilot.pause(1.2)
        assert any(a.rule == "gap-jump" for a in app.feed.engine.alerts)
    assert not out.exists()


async def test_an_old_hung_log_is_critical_but_not_announced(tmp_path):
    import os
    import shutil

    log = tmp_path / "stalled.log"
    shutil.copyfile(LOGS / "stalled.log", log)
    t = time.time() - 3600
    os.utime(log, (t, t))
    out = tmp_path / "hook.jsonl"
    app = GrpoApp(str(log), live=True, on_critical=_hook_cmd(out))
    async with app.run_test(size=(80, 24)) as pilot:
        end = time.monotonic() + 10
        while not any(a.rule == "stalled" for a in app.feed.engine.alerts) and time.monotonic() < end:
            await pilot.pause(0.05)
        await pilot.pause(1.5)
        assert any(a.rule == "stalled" for a in app.feed.engine.alerts)
    assert not out.exists()


def test_an_alert_raised_and_escalated_in_one_batch_is_one_new_critical():
    """A warning raised at one rollout and escalated at the next, both in one read: one hook call,
    one toast, one bell (the live alert is critical at both changes; the raise was a warning)."""
    from grpo_tui.notify import new_criticals
    from grpo_tui.pipeline import Pipeline

    line = "{{'loss': 0.0, 'grad_norm': 0.0, 'reward': 0.0, 'reward_std': 0.0, 'epoch': {:.2f}}}"
    pipe = Pipeline()
    up = pipe.feed([line.format(0.01), line.format(0.02)], written_at=1_000_000.0)
    assert [(ch.kind, ch.severity) for ch in up.changes] == [("raised", "warning"), ("escalated", "critical")]
    assert [a.rule for a in new_criticals(up.changes)] == ["no-signal"]


async def test_a_failed_delivery_shows_on_the_status_line(tmp_path, monkeypatch):
    """--notify to a receiver answering 500: the dashboard goes on and its status line names the
    target (redacted) and the failure; a later success clears it."""
    from grpo_tui.notify import deliver
    from grpo_tui.notify.targets import make_target
    from tests.webhook import Receiver

    monkeypatch.setattr(deliver, "WINDOW_S", 0.0)
    monkeypatch.setattr(deliver, "BACKOFF_S", 0.0)
    log = tmp_path / "run.log"
    lines = (LOGS / "gap-jump.log").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if "rollout 14:" in ln)
    log.write_text("".join(lines[:cut]), encoding="utf-8")
    with Receiver([500, 500, 500, 200]) as rx:
        target = make_target(rx.url + "/services/T/B/secret", "slack")
        app = GrpoApp(str(log), live=True, notify=False, notify_targets=[target])
        async with app.run_test(size=(120, 30)) as pilot:
            end = time.monotonic() + 10
            while not (app.feed.lines_seen >= cut and app.cursor is not None) and time.monotonic() < end:
                await pilot.pause(0.05)
            with log.open("a", encoding="utf-8") as fh:
                fh.write("".join(lines[cut:]))
            end = time.monotonic() + 30
            while not app.notify_failed and time.monotonic() < end:
                await pilot.pause(0.05)
            end = time.monotonic() + 10  # (the status line is repainted on the next refresh)
            while "notify failed" not in str(app.query_one("#status").render()) and time.monotonic() < end:
                await pilot.pause(0.05)
            status = str(app.query_one("#status").render())
            assert f"notify failed: {rx.url}/… HTTP 500" in status and "secret" not in status
            assert len(rx.posts) == 3
            await pilot.press("right")  # the UI still answers
            app.notifier.submit([{"type": "test", "message": "again", "host": "h"}])
            end = time.monotonic() + 30
            while app.notify_failed and time.monotonic() < end:
                await pilot.pause(0.05)
            assert not app.notify_failed and len(rx.posts) == 4
