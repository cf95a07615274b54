"""The Notifier against a local receiver: a burst is one message, a 500 is retried and reported,
a receiver that hangs never blocks submit(), an overflow is counted, no secret in errors."""

from __future__ import annotations

import json
import threading

from grpo_tui.notify.deliver import Notifier
from grpo_tui.notify.targets import make_target
from tests.webhook import Receiver


def _note(i: int) -> dict:
    return {"type": "alert", "rule": f"rule-{i}", "severity": "critical", "rollout": i, "message": "m", "host": "h"}


class _Outcomes(list):
    def __init__(self) -> None:
        super().__init__()
        self.cond = threading.Condition()

    def __call__(self, outcome) -> None:
        with self.cond:
            self.append(outcome)
            self.cond.notify_all()

    def wait(self, n: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self) >= n, 30)


def test_a_burst_is_one_message_with_its_count():
    with Receiver() as rx:
        got = _Outcomes()
        n = Notifier([make_target(rx.url + "/hook", "json")], got, window=60.0)
        n.submit([_note(0)])
        n.submit([_note(1), _note(2)])
        n.close()  # sends what is queued now, without waiting out the window
    assert len(rx.posts) == 1
    body = json.loads(rx.posts[0][2])
    assert body["count"] == 3 and len(body["others"]) == 2
    assert [o.to_json()["outcome"] for o in got] == ["ok"] and got[0].count == 3


def test_a_500_is_retried_then_reported_failed():
    with Receiver([500]) as rx:
        got = _Outcomes()
        n = Notifier([make_target(rx.url + "/secret-path?token=abc", "slack")], got, window=0.0, backoff=0.0)
        n.submit([_note(0)])
        got.wait(1)
        n.close()
    assert len(rx.posts) == 3
    obj = got[0].to_json()
    assert obj["outcome"] == "failed" and obj["status"] == 500 and obj["tries"] == 3
    assert obj["target"] == rx.url + "/…"
    assert "secret" not in json.dumps(obj) and "token" not in got[0].words()


def test_a_404_is_not_retried():
    with Receiver([404]) as rx:
        out = Notifier([make_target(rx.url + "/x", "json")], backoff=0.0).send_now([_note(0)])
    assert len(rx.posts) == 1 and not out[0].ok and out[0].status == 404


def test_a_hanging_receiver_blocks_nothing_and_times_out():
    with Receiver("hang") as rx:
        got = _Outcomes()
        n = Notifier([make_target(rx.url + "/hook", "json")], got, window=0.0, timeout=0.3, tries=1)
        n.submit([_note(0)])  # returns at once: the send is the lane's
        assert rx.wait(lambda r: r.connections >= 1)
        assert got == []  # the receiver has not answered, and the caller went on
        got.wait(1)
        n.close()
    assert got[0].ok is False and got[0].error == "timed out"


def test_overflow_is_counted_not_dropped_silently():
    with Receiver() as rx:
        n = Notifier([make_target(rx.url + "/hook", "json")], window=60.0, capacity=2)
        n.submit([_note(i) for i in range(5)])
        n.close()
    body = json.loads(rx.posts[0][2])
    assert body["count"] == 5 and body["dropped"] == 3


def test_an_unreachable_target_fails_with_a_redacted_reason():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    url = f"http://127.0.0.1:{port}/services/T000/B000/supersecret"
    out = Notifier([make_target(url, "slack")], tries=2, backoff=0.0).send_now([_note(0)])
    assert not out[0].ok and out[0].tries == 2 and out[0].error
    assert "supersecret" not in out[0].words() and "supersecret" not in json.dumps(out[0].to_json())
