"""One verdict everywhere: `check`, `tail --replay 0`, `tail` following a file written in random
chunks, and the dashboard give the same alert set (rule, signal, severity, start rollout, cleared)
and the same status on every sample log, fixture and simulated scenario (several seeds, K=1/2/4).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from grpo_tui import cli, pipeline
from grpo_tui.commands import tail_cmd
from grpo_tui.follow.follower import Follower
from grpo_tui.pipeline import core as pipeline_core
from grpo_tui.simulate import SCENARIOS, write_log

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_logs").glob("*.log"))
FIXTURES = sorted((ROOT / "tests" / "fixtures").glob("*.log"))
# Every scenario with two seeds; K cycles through 1, 2, 4 (each K meets every scenario kind).
SIMULATED = [
    (scen, seed, k)
    for i, scen in enumerate(SCENARIOS)
    for seed, k in ((11 + i, (1, 2, 4)[i % 3]), (37 + i, (4, 1, 2)[i % 3]))
]


class QuickFollower(Follower):
    """Re-stat every 0.1 s: the test's follower stops within 0.1 s, not a second."""

    def __init__(self, path, **kw):
        super().__init__(path, **{**kw, "poll_interval": 0.1})


def _copy(src: Path, tmp_path: Path) -> Path:
    """A fresh copy: its mtime is now, like a log that was just written."""
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


def _simulated(tmp_path: Path, scen: str, seed: int, k: int) -> Path:
    path = tmp_path / f"{scen}-{seed}-k{k}.log"
    write_log(str(path), scen, 36, seed, steps_per_rollout=k, noise_per_rollout=6)
    return path


def _run_cli(argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = cli.main(argv)
    return rc, buf.getvalue()


def alerts_of_check(path: Path) -> tuple[str, set]:
    rc, out = _run_cli(["check", "--json", "--all", str(path)])
    obj = json.loads(out)
    assert rc == {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}[obj["status"]]
    return obj["status"], {
        (a["rule"], a["signal"], a["severity"], a["rollout"], a["cleared_at"]) for a in obj["alerts"]
    }


def alerts_of_stream(lines: list[dict]) -> set:
    """Rebuild the alert set from tail's raised / escalated / cleared objects."""
    open_: dict = {}
    done = []
    for o in lines:
        key = (o.get("rule"), o.get("signal"), o.get("rollout"))
        if o["type"] == "alert":
            open_[key] = [o["severity"], None]
        elif o["type"] == "cleared":
            cur = open_.pop(key)
            done.append((key, cur[0], o["cleared_at"]))
    out = {(k[0], k[1], sev, k[2], None) for k, (sev, _) in open_.items()}
    out |= {(k[0], k[1], sev, k[2], cleared) for k, sev, cleared in done}
    return out


def alerts_of_replay(path: Path) -> tuple[str, set]:
    rc, out = _run_cli(["tail", "--replay", "0", str(path)])
    assert rc == 0
    objs = [json.loads(x) for x in out.splitlines()]
    summary = objs[-1]
    assert summary["type"] == "summary"
    return summary["status"], alerts_of_stream(objs)


async def _follow_while_written(path: Path, src: Path, seed: int, monkeypatch) -> list[dict]:
    """`tail` on a file that another task writes in random chunks (cut mid-line too)."""
    data = src.read_bytes()
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    pipes: list[pipeline.Pipeline] = []

    class Watched(pipeline.Pipeline):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.ticks_after_final = 0
            pipes.append(self)

        def _final_pass(self):
            self.ticks_after_final = 0
            return super()._final_pass()

        def tick(self, now=None):
            changes = super().tick(now)
            if self._final_done:  # this tick judged time after (or with) the last final pass
                self.ticks_after_final += 1
            return changes

    monkeypatch.setattr(tail_cmd, "Pipeline", Watched)
    monkeypatch.setattr(tail_cmd, "Follower", QuickFollower)
    buf = io.StringIO()
    out = tail_cmd._Out(buf)
    args = argparse.Namespace(path=str(path), new_only=False, replay=None, ranges=None)
    task = asyncio.create_task(tail_cmd._tail(args, None, out))
    rng = random.Random(seed)
    pos = 0
    with open(path, "wb") as fh:
        while pos < len(data):
            step = rng.choice((1, 7, 100, 4096, 65536, 1 << 20))
            fh.write(data[pos : pos + step])
            fh.flush()
            pos += step
            if rng.random() < 0.3:
                await asyncio.sleep(rng.choice((0, 0.01, 0.05)))
    # Wait until tail has every line (a last line without newline waits for the final pass),
    # the file's final pass is done, and one tick has judged time after it (a condition, not a
    # fixed sleep: tail's ticker runs every TICK).
    for _ in range(750):
        await asyncio.sleep(0.02)
        if pipes and pipes[0].lines_seen >= n_lines - 1 and pipes[0]._final_done and pipes[0].ticks_after_final:
            break
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return [json.loads(x) for x in buf.getvalue().splitlines()]


@pytest.fixture
def fast_clocks(monkeypatch):
    """A file that stops growing gets its final pass after 0.3 s instead of a minute."""
    monkeypatch.setattr(pipeline_core, "FINAL_PASS_AFTER", 0.3)
    monkeypatch.setattr(tail_cmd, "TICK", 0.1)


def _same_everywhere(path: Path, tmp_path: Path, seed: int, monkeypatch) -> None:
    status, check = alerts_of_check(path)
    r_status, replay = alerts_of_replay(path)
    assert replay == check, f"tail --replay 0 differs from check on {path.name}"
    assert r_status == status
    followed = tmp_path / ("followed-" + path.name)
    objs = asyncio.run(_follow_while_written(followed, path, seed, monkeypatch))
    assert alerts_of_stream(objs) == check, f"tail (following) differs from check on {path.name}"
    # The same file judged by the pipeline as the dashboard holds it (written a moment ago).
    pipe = pipeline.judge_path(str(followed))
    assert pipe.report().status == status


@pytest.mark.parametrize("src", SAMPLES + FIXTURES, ids=lambda p: p.name)
def test_sample_logs_one_verdict(src, tmp_path, fast_clocks, monkeypatch):
    _same_everywhere(_copy(src, tmp_path), tmp_path, len(src.name), monkeypatch)


@pytest.mark.parametrize("scen,seed,k", SIMULATED, ids=lambda v: str(v))
def test_simulated_runs_one_verdict(scen, seed, k, tmp_path, fast_clocks, monkeypatch):
    _same_everywhere(_simulated(tmp_path, scen, seed, k), tmp_path, seed, monkeypatch)


@pytest.mark.parametrize("block", [1 << 10, 1 << 14, 1 << 22])
def test_result_does_not_depend_on_batch_size(block, tmp_path):
    src = ROOT / "sample_logs" / "length-hacking.log"
    whole = pipeline.judge_path(str(src))
    pipe = pipeline.Pipeline()
    data = src.read_bytes().decode("utf-8").split("\n")
    size = max(1, block // 200)
    for i in range(0, len(data), size):
        pipe.feed(data[i : i + size], written_at=src.stat().st_mtime)
    pipe.finish()
    key = lambda p: [
        (a.rule, a.signal, a.severity, a.rollout, a.first_seen, a.cleared_at, a.message) for a in p.engine.alerts
    ]
    assert key(pipe) == key(whole)


def test_restart_into_the_same_file_judges_the_new_log_alone(tmp_path):
    """A log rewritten in place (truncated, then a new run written) is judged on its own clock:
    the old content's newest log time must not make the new run look quiet for hours (it said
    `stalled` and `data 89 min ago` while `check` of the same file said OK, 10 s)."""
    root = Path(__file__).resolve().parents[2] / "sample_logs"
    old = (root / "healthy-seed1.log").read_text().splitlines()
    new = (root / "gap-jump.log").read_text().splitlines()[:200]
    wall = 1_900_000_000.0
    pipe = pipeline.Pipeline(clock=lambda: wall + 5)
    pipe.feed(old, written_at=wall - 60)
    pipe.file_event("truncated")
    pipe.feed(new, written_at=wall)
    log = tmp_path / "run.log"
    log.write_text("\n".join(new) + "\n")
    alone = pipeline.Pipeline(clock=lambda: wall + 5)
    alone.feed(new, written_at=wall)
    got, want = pipe.report(), alone.report()
    assert (got.run_state.name, got.run_state.data_age, got.status) == (
        want.run_state.name,
        want.run_state.data_age,
        want.status,
    )
    assert [(a.rule, a.rollout) for a in got.alerts] == [(a.rule, a.rollout) for a in want.alerts]
    assert pipe.run_age() == alone.run_age()
    # line numbers count from the new file's first line (the log view opens them in that file)
    assert pipe.store.current.last_record_line == alone.store.current.last_record_line
