"""`grpo-tui tail` end to end: a real writer process, file events, nothing lost or doubled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

PY = sys.executable


def _start_tail(path: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [PY, "-m", "grpo_tui", "tail", str(path), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


def _read_until(proc: subprocess.Popen, cond, timeout: float = 30.0) -> list[dict]:
    """Read JSON lines (through a reader thread: pipes + buffered readers + select don't mix)."""
    import queue
    import threading

    q = getattr(proc, "_q", None)
    if q is None:
        q = proc._q = queue.Queue()
        proc._objs = []

        def pump():
            for line in proc.stdout:
                q.put(line)
            q.put(None)

        threading.Thread(target=pump, daemon=True).start()
    objs = proc._objs
    end = time.monotonic() + timeout
    while not cond(objs):
        left = end - time.monotonic()
        assert left > 0, f"timed out; got {len(objs)} objects, last: {objs[-3:]}"
        try:
            line = q.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if line is None:
            break
        objs.append(json.loads(line))
    return objs


def _rollout(n: int) -> str:
    return (
        f"\x1b[36m(MegatronTrainRayActor pid=7)\x1b[0m [2026-08-21 10:00:{n % 60:02d}.000 actor_cell0_rank0] "
        f"log_utils.py:123 - rollout {n}: {{'rollout/raw_reward': {0.5 + n * 1e-6!r}, 'x': {n}}}\n"
    )


def _noise(i: int) -> str:
    return f"[2026-08-21 10:00:00] Decode batch, #running-req: {i}, #token: 9, gen throughput (token/s): 1.0\n"


def _records(objs):
    return [o["n"] for o in objs if o["type"] == "record"]


def test_tail_survives_partial_writes_bursts_truncation_rename_and_delete(tmp_path):
    log = tmp_path / "train.log"
    proc = _start_tail(log)
    try:
        written: list[int] = []
        n = 0

        def write(path, text, mode="a"):
            with open(path, mode, encoding="utf-8", newline="") as fh:
                fh.write(text)

        time.sleep(0.3)  # tail starts before the file exists
        # Partial writes: one record cut in three pieces.
        line = _rollout(n)
        write(log, line[:20])
        write(log, line[20:70])
        write(log, line[70:])
        written.append(n)
        n += 1
        _read_until(proc, lambda o: len(_records(o)) >= 1)
        # A burst: 2,000 records among 20,000 noise lines in one write.
        chunk = []
        for i in range(22000):
            if i % 11 == 5:
                chunk.append(_rollout(n))
                written.append(n)
                n += 1
            else:
                chunk.append(_noise(i))
        write(log, "".join(chunk))
        _read_until(proc, lambda o: len(_records(o)) >= len(written))
        # copytruncate: copy away, truncate in place, keep writing.
        os.truncate(log, 0)
        write(log, _rollout(n))
        written.append(n)
        n += 1
        # rename + recreate
        time.sleep(0.3)
        os.rename(log, tmp_path / "train.log.1")
        write(log, _rollout(n), "w")
        written.append(n)
        n += 1
        # delete + recreate
        time.sleep(0.3)
        os.unlink(log)
        time.sleep(0.3)
        write(log, _rollout(n), "w")
        written.append(n)
        n += 1
        objs = _read_until(proc, lambda o: len(_records(o)) >= len(written))
        got = _records(objs)
        assert sorted(got) == written, "lost or doubled records"
        assert len(set(got)) == len(got)
        events = [o["event"] for o in objs if o["type"] == "file"]
        assert "created" in events and "truncated" in events
        assert "replaced" in events or "deleted" in events
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_tail_new_only_prints_only_new_records(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("".join(_rollout(i) for i in range(5)))
    proc = _start_tail(log, "--new-only")
    try:
        # the history is read once tail prints the run's state (a slow start must not count
        # the new line as history)
        _read_until(proc, lambda o: any(x["type"] == "state" for x in o))
        with open(log, "a") as fh:
            fh.write(_rollout(5))
        objs = _read_until(proc, lambda o: len(_records(o)) >= 1)
        assert _records(objs) == [5]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_tail_reads_a_pipe_and_reports_eof():
    data = "".join(_rollout(i) for i in range(3)) + _noise(1)
    r = subprocess.run([PY, "-m", "grpo_tui", "tail", "-"], input=data, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert _records(objs) == [0, 1, 2]
    assert objs[-1] == {"type": "file", "event": "eof"}


def test_tail_doubled_step_line_is_one_record_and_alerts_are_printed(tmp_path):
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run(
        [PY, "-m", "grpo_tui", "tail", "--replay", "0", str(root / "sample_logs" / "gap-jump.log")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    steps = [o["n"] for o in objs if o["type"] == "record" and o["kind"] == "step"]
    assert steps == list(range(48))  # each printed twice in the log, once here
    alerts = [o for o in objs if o["type"] == "alert"]
    assert any(a["rule"] == "gap-jump" and a["severity"] == "critical" for a in alerts)
    summary = objs[-1]
    assert summary["type"] == "summary" and summary["first_critical"]["rule"] == "gap-jump"
    assert 16 <= summary["first_critical"]["seen_at_rollout"] <= 20


def test_tail_on_a_directory_is_a_clear_error(tmp_path):
    r = subprocess.run([PY, "-m", "grpo_tui", "tail", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "directory" in r.stderr and "Traceback" not in r.stderr


def test_tail_prints_an_alert_raised_and_escalated_in_one_read_as_each_was(tmp_path):
    """Two TRL dicts with reward exactly 0 read at once: no-signal is raised at the first (a
    warning) and escalated at the second; tail prints the raise as the warning it was and the
    escalation as critical (not the live alert twice), and judges the newest TRL line at once."""
    line = (
        "{{'loss': 0.0, 'grad_norm': 0.0, 'reward': 0.0, 'reward_std': 0.0, 'frac_reward_zero_std': 1.0, "
        "'epoch': {:.2f}}}"
    )
    log = tmp_path / "trl.log"
    log.write_text(line.format(0.01) + "\n" + line.format(0.02) + "\n")
    proc = _start_tail(log)
    try:
        objs = _read_until(proc, lambda o: any(x["type"] == "state" for x in o))
    finally:
        proc.kill()
    alerts = [o for o in objs if o["type"] == "alert"]
    assert [(a["rule"], a["severity"], a.get("escalated", False)) for a in alerts] == [
        ("no-signal", "warning", False),
        ("no-signal", "critical", True),
    ]
    assert "first rollout" in alerts[0]["message"] and "for 2 rollouts" in alerts[1]["message"]
