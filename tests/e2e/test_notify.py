"""--notify end to end, against a local receiver on 127.0.0.1: one well-formed Slack message per
new critical from `tail` on a run that breaks, a receiver that hangs delays none of tail's lines,
a 500 is retried and reported, `check` twice on an unchanged folder posts once, and the config
file is honoured (a bad one is FILE:LINE: reason, no traceback).  Ordered by events, never by
wall-clock thresholds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_tail import _read_until, _start_tail
from tests.unit.notify.test_payloads import _slack_valid
from tests.webhook import Receiver

PY = sys.executable
LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


def _grpo(*args: str, env: dict | None = None, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "-m", "grpo_tui", *args], capture_output=True, text=True, timeout=120, env=env, stdin=stdin
    )


def _broken_log(tmp_path: Path) -> tuple[Path, str, str]:
    """A simulated gap-jump run: (its path, the lines before the break, the rest)."""
    log = tmp_path / "run.log"
    r = _grpo("simulate", "--scenario", "gap-jump", "--rollouts", "24", "-o", str(tmp_path / "full.log"))
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "full.log").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if "rollout 6:" in ln)
    return log, "".join(lines[:cut]), "".join(lines[cut:])


def test_tail_posts_one_slack_message_per_new_critical(tmp_path):
    log, history, rest = _broken_log(tmp_path)
    log.write_text(history, encoding="utf-8")
    with Receiver() as rx:
        proc = _start_tail(log, "--notify", rx.url + "/services/T0/B0/secret", "--notify-format", "slack")
        try:
            _read_until(proc, lambda o: any(x["type"] == "state" for x in o))  # the history is read
            with log.open("a", encoding="utf-8") as fh:
                fh.write(rest)
            objs = _read_until(proc, lambda o: any(x["type"] == "notify" for x in o))
            crit = [o for o in objs if o["type"] == "alert" and o["severity"] == "critical"]
            assert [o["rule"] for o in crit] == ["gap-jump"]
            # a later delivery would print its own notify object; the run ends with its finish line
            objs = _read_until(proc, lambda o: any(x.get("state") == "finished" for x in o))
        finally:
            proc.terminate()
            proc.wait(10)
    notes = [o for o in objs if o["type"] == "notify"]
    assert notes == [
        {
            "type": "notify",
            "outcome": "ok",
            "target": rx.url + "/…",
            "format": "slack",
            "status": 200,
            "error": None,
            "count": 1,
            "tries": 1,
        }
    ]
    assert len(rx.posts) == 1
    path, headers, body = rx.posts[0]
    assert path == "/services/T0/B0/secret" and headers["Content-Type"].startswith("application/json")
    msg = json.loads(body)
    _slack_valid(msg)
    assert "gap-jump" in msg["text"] and str(log) in json.dumps(msg)
    assert "secret" not in proc.stderr.read()


def test_a_receiver_that_never_answers_delays_none_of_tails_lines(tmp_path):
    with Receiver("hang") as rx:
        with (LOGS / "gap-jump.log").open("rb") as src:
            proc = subprocess.Popen(
                [PY, "-m", "grpo_tui", "tail", "-", "--notify", rx.url + "/hook"],
                stdin=src,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
        try:
            # stdin is news: the critical is posted while tail reads on; the whole log, its alerts
            # and its final state come out while the receiver still holds the request
            objs = _read_until(proc, lambda o: any(x["type"] == "state" and x["state"] == "finished" for x in o))
            assert rx.wait(lambda r: r.connections >= 1)
            assert not rx.posts and not any(o["type"] == "notify" for o in objs)
            assert any(o["type"] == "alert" and o["rule"] == "gap-jump" for o in objs)
        finally:
            proc.kill()
            proc.wait(10)


def test_a_receiver_answering_500_is_retried_and_reported(tmp_path):
    with Receiver([500]) as rx, (LOGS / "gap-jump.log").open("rb") as src:
        r = _grpo("tail", "-", "--notify", rx.url + "/hook?token=s3cret", stdin=src)
    assert r.returncode == 0, r.stderr
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    notes = [o for o in objs if o["type"] == "notify"]
    assert len(notes) == 1 and notes[0]["outcome"] == "failed" and notes[0]["status"] == 500
    assert notes[0]["tries"] == 3 and len(rx.posts) == 3
    assert "s3cret" not in r.stdout + r.stderr
    assert json.loads(rx.posts[0][2])["rule"] == "gap-jump"  # JSON: our alert object


def test_check_twice_on_an_unchanged_folder_notifies_once(tmp_path):
    runs = tmp_path / "runs"
    (runs / "sub").mkdir(parents=True)
    for name in ("gap-jump.log", "healthy-seed1.log"):
        (runs / name).write_bytes((LOGS / name).read_bytes())
    (runs / "sub" / "crashed.log").write_bytes((LOGS / "crashed.log").read_bytes())
    with Receiver() as rx:
        first = _grpo("check", str(runs), "-r", "--notify", rx.url + "/hook", "--notify-format", "ntfy")
        second = _grpo("check", str(runs), "-r", "--notify", rx.url + "/hook", "--notify-format", "ntfy")
        plain = _grpo("check", str(runs), "-r")
    assert first.returncode == second.returncode == plain.returncode == 2
    ages = lambda text: re.sub(r"[\d.]+ (s|min|h|d) ago", "AGE", text)
    assert ages(first.stdout) == ages(plain.stdout)  # the verdict is unchanged
    assert first.stderr == second.stderr == ""
    assert len(rx.posts) == 1
    _, headers, body = rx.posts[0]
    assert headers["Priority"] == "urgent" and "2 notifications" in headers["Title"]
    assert "gap-jump" in body.decode() and "crashed" in body.decode()
    state = Path(os.environ["XDG_STATE_HOME"]) / "grpo-tui" / "notified.json"
    assert rx.url not in state.read_text()  # targets are kept by hash, never by URL


def test_config_file_is_honoured_and_env_overrides_it(tmp_path):
    cfg = tmp_path / "config.toml"
    (tmp_path / "r.toml").write_text("[signals.gap]\nlo = 0.0\nhi = 1.0\n", encoding="utf-8")
    log = str(LOGS / "gap-jump.log")
    with Receiver() as rx:
        cfg.write_text(
            f'ranges = "r.toml"\n\n[notify]\nurls = ["{rx.url}/from-file"]\non = ["critical", "warning"]\n',
            encoding="utf-8",
        )
        env = {**os.environ, "GRPO_TUI_NOTIFY_ON": "critical"}
        r = _grpo("check", log, "--config", str(cfg), env=env)
        shown = _grpo("config", "--config", str(cfg), env=env).stdout
        again = _grpo("check", log, "--config", str(cfg))  # the file's `on`: the warnings are news
    assert r.returncode == again.returncode == 2
    assert f"ranges: {tmp_path / 'r.toml'}" in r.stdout  # relative to the config file
    assert len(rx.posts) == 2 and {p[0] for p in rx.posts} == {"/from-file"}
    first, second = (json.loads(p[2]) for p in rx.posts)
    assert first["rule"] == "gap-jump" and first["count"] == 1
    assert second["severity"] == "warning" and second["signal"] == "kl"  # r.toml: gap has no warning
    assert "others" not in second
    assert "notify_on      critical " in shown and "env GRPO_TUI_NOTIFY_ON" in shown
    assert f"{cfg}:4" in shown and rx.url + "/… (json)" in shown and "from-file" not in shown


def test_a_bad_config_file_is_file_line_reason_without_a_traceback(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('theme = "dark"\n\n[notify]\nurls = ["https://hooks.slack.com/services/X/Y/Z"]\nonn = ["all"]\n')
    for cmd, code in (("tail", 2), ("check", 3), ("config", 2)):
        args = [cmd, str(LOGS / "gap-jump.log")] if cmd != "config" else [cmd]
        r = _grpo(*args, "--config", str(cfg))
        assert r.returncode == code
        assert r.stderr.strip().endswith(f"{cfg}:5: unknown key `onn` in [notify] (known: format, on, urls)")
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    cfg.write_text('[serve]\nport = "8765"\n')
    r = _grpo("config", "--config", str(cfg))
    assert r.returncode == 2 and f"{cfg}:2: `port` must be an integer" in r.stderr


def test_notify_test_prints_the_answer_and_fails_on_non_2xx():
    with Receiver([204]) as ok, Receiver([404]) as bad:
        good = _grpo("notify", "--test", ok.url + "/x/secret")
        wrong = _grpo("notify", "--test", bad.url + "/x/secret", "--notify-format", "discord")
    assert good.returncode == 0 and good.stdout.strip() == f"{ok.url}/… (json): HTTP 204 ok"
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert wrong.stderr.strip() == f"grpo-tui notify: {bad.url}/… (discord): failed: HTTP 404 server error"
    assert json.loads(ok.posts[0][2])["type"] == "test"
