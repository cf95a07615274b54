"""Payload builders against the services' documented shapes: Slack (text + Block Kit blocks),
Discord (content <= 2000, embed limits), ntfy (plain body, Title/Priority/Tags headers), and
our JSON alert object; URL redaction, format guessing and the event filter."""

from __future__ import annotations

import json

import pytest

from grpo_tui.notify.payloads import build
from grpo_tui.notify.targets import TargetError, check_url, guess_format, make_target, parse_on, redact

SECRET = "T0000/B0000/XXXXsecretXXXX"


def _alert(i: int = 0, severity: str = "critical", **kw) -> dict:
    return {
        "type": "alert",
        "rule": "gap-jump",
        "severity": severity,
        "rollout": 16 + i,
        "signal": "gap",
        "message": f"log-prob gap jumped at rollout {16 + i} <!channel> @everyone \x1b[31m" + "x" * 400,
        "meaning": "weights out of sync since that step",
        "first_check": "weight-update logs, engine restarts",
        "raised_at": 18,
        "log_time": "2026-08-21 10:33:21",
        "cleared_at": None,
        "evidence": {"before": 0.0148, "bad": float("nan")},
        "path": "/runs/a/train.log",
        "host": "gpu-box",
        "run_state": "live",
        **kw,
    }


def _slack_valid(obj: dict) -> None:
    """Slack incoming webhook: `text` (the notification fallback) and Block Kit blocks."""
    assert isinstance(obj["text"], str) and obj["text"].strip()
    blocks = obj["blocks"]
    assert isinstance(blocks, list) and 0 < len(blocks) <= 50
    for b in blocks:
        assert b["type"] in ("header", "section", "context", "divider")
        if b["type"] == "header":
            assert b["text"]["type"] == "plain_text" and 0 < len(b["text"]["text"]) <= 150
        if b["type"] == "section":
            assert b["text"]["type"] == "mrkdwn" and 0 < len(b["text"]["text"]) <= 3000
        if b["type"] == "context":
            assert 0 < len(b["elements"]) <= 10
            assert all(e["type"] == "mrkdwn" and e["text"] for e in b["elements"])
    flat = json.dumps(obj)
    assert "<!channel>" not in flat and "\\u001b" not in flat


def test_slack_message_has_text_and_valid_blocks_naming_run_rule_rollout_and_host():
    body = json.loads(build("slack", [_alert()]).body)
    _slack_valid(body)
    flat = json.dumps(body)
    for part in ("gap-jump", "rollout 16", "gpu-box:/runs/a/train.log", "weights out of sync", "weight-update logs"):
        assert part in flat
    assert "live" in flat  # the run's state


def test_a_burst_is_one_slack_message_with_a_count():
    notes = [_alert(i) for i in range(8)]
    body = json.loads(build("slack", notes, dropped=3).body)
    _slack_valid(body)
    assert "11 notifications" in body["blocks"][0]["text"]["text"]
    assert "+6 more" in json.dumps(body) and "3 of them" in json.dumps(body)


def test_discord_within_its_limits_and_pings_nobody():
    body = json.loads(build("discord", [_alert(i) for i in range(12)]).body)
    assert 0 < len(body["content"]) <= 2000
    assert body["allowed_mentions"] == {"parse": []}
    embeds = body["embeds"]
    assert 0 < len(embeds) <= 10
    total = 0
    for e in embeds:
        assert len(e["title"]) <= 256 and len(e.get("description", "")) <= 4096
        assert len(e["footer"]["text"]) <= 2048 and isinstance(e["color"], int)
        total += len(e["title"]) + len(e.get("description", "")) + len(e["footer"]["text"])
    assert total <= 6000


def test_ntfy_plain_body_with_title_priority_and_tags():
    msg = build("ntfy", [_alert(), _alert(1, severity="warning")])
    assert msg.headers["Content-Type"].startswith("text/plain")
    assert msg.headers["Priority"] in ("1", "2", "3", "4", "5", "min", "low", "default", "high", "urgent", "max")
    assert msg.headers["Priority"] == "urgent"
    assert "rotating_light" in msg.headers["Tags"].split(",")
    assert msg.headers["Title"].isascii() and "2 notifications" in msg.headers["Title"]
    text = msg.body.decode("utf-8")
    assert "CRITICAL gap-jump" in text and "gpu-box:/runs/a/train.log" in text and "\x1b" not in text
    assert len(msg.body) <= 4096


def test_json_is_our_alert_object_with_host_path_and_count():
    one = json.loads(build("json", [_alert()]).body)
    assert one["rule"] == "gap-jump" and one["host"] == "gpu-box" and one["path"] == "/runs/a/train.log"
    assert one["count"] == 1 and one["evidence"]["bad"] is None  # strict JSON
    two = json.loads(build("json", [_alert(), _alert(1)]).body)
    assert two["count"] == 2 and len(two["others"]) == 1


@pytest.mark.parametrize(
    "url, shown",
    [
        (f"https://hooks.slack.com/services/{SECRET}", "https://hooks.slack.com/…"),
        ("https://ntfy.sh/my-secret-topic", "https://ntfy.sh/…"),
        ("http://user:pw@127.0.0.1:8080/hook?token=abc", "http://127.0.0.1:8080/…"),
        ("https://example.com/", "https://example.com/"),
        ("not a url", "(a bad URL)"),
    ],
)
def test_redact_keeps_host_only(url, shown):
    assert redact(url) == shown


@pytest.mark.parametrize(
    "url, fmt",
    [
        (f"https://hooks.slack.com/services/{SECRET}", "slack"),
        ("https://discord.com/api/webhooks/1/abc", "discord"),
        ("https://discordapp.com/api/webhooks/1/abc", "discord"),
        ("https://ptb.discord.com/api/webhooks/1/abc", "discord"),
        ("https://discord.com/channels/1", "json"),
        ("https://ntfy.sh/alerts", "ntfy"),
        ("http://ntfy.lab.example:8080/grpo", "ntfy"),
        ("http://ntfy.lab.example/a/b", "json"),
        ("http://127.0.0.1:9000/hook", "json"),
    ],
)
def test_format_guessed_from_the_url(url, fmt):
    assert guess_format(url) == fmt


def test_bad_urls_formats_and_events_are_refused_without_the_secret():
    for bad in ("file:///etc/passwd", "ftp://x/y", "hooks.slack.com/services/" + SECRET, "https:///nohost"):
        with pytest.raises(TargetError) as exc:
            check_url(bad)
        assert SECRET not in str(exc.value)
    with pytest.raises(TargetError):
        make_target("https://x.example/", "email")
    assert parse_on(["critical,warning"]) == {"critical", "warning"}
    assert parse_on("all") == {"critical", "warning", "finished", "quiet", "cleared"}
    with pytest.raises(TargetError):
        parse_on(["critical", "pager"])
