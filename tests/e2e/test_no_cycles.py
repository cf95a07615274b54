"""Reading a log makes no cyclic garbage: what `process.one_shot` relies on to run `check`,
`export` and `calibrate` without automatic collection (nothing would ever free a cycle there).

Each case runs with the collector off, drops what it made, then counts what only the
collector could free (gc.collect()'s unreachable objects): it must be none.
"""

from __future__ import annotations

import gc
import io
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from grpo_tui import cli, process
from grpo_tui.lines.parse import LineParser
from grpo_tui.pipeline import Pipeline, judge_path
from grpo_tui.simulate import FORMATS, SETUPS, generate, write_log

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted((ROOT / "sample_logs").glob("*.log")) + sorted((ROOT / "tests" / "fixtures").glob("*.log"))


def _cyclic_garbage(work) -> int:
    """Unreachable objects left by work() run without automatic collection.  work() runs once
    before, so the modules it imports lazily are imported: a @dataclass(slots=True) leaves the
    class it replaces as cyclic garbage once, at import (this file run alone showed it)."""
    work()
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        work()
        return gc.collect()
    finally:
        if was:
            gc.enable()


def _write(path: Path, lines) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    return path


def test_one_shot_turns_collection_off_only_for_commands_that_leave():
    """... and keeps a command's judged log to the end (process.spare: freeing it object by object
    cost ~60 ms of a big log's check), only in such a process."""
    was = gc.isenabled()
    try:
        gc.enable()
        process.spare(obj := object())
        assert not process._SPARED
        process.one_shot("tail")
        assert gc.isenabled()
        process.spare(obj)
        assert not process._SPARED
        process.one_shot("check")
        assert not gc.isenabled()
        process.spare(obj)
        assert [obj] == process._SPARED
    finally:
        (gc.enable if was else gc.disable)()
        process._ONE_SHOT = False
        process._SPARED.clear()


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_reading_a_sample_log_leaves_no_cycles(log):
    def work():
        for kw in ({}, {"bulk": False}):  # judged in bulk, and rollout by rollout
            pipe = judge_path(str(log), now=2e9, **kw)
            pipe.report(now=2e9)
            del pipe

    assert _cyclic_garbage(work) == 0


def test_other_setups_formats_and_a_restart_leave_no_cycles(tmp_path):
    logs = [
        _write(tmp_path / f"{name}.log", (line for _, line in generate("healthy", 12, setup=name))) for name in SETUPS
    ]
    logs += [
        _write(tmp_path / f"{fmt}.log", (line for _, line in generate("gap-jump", 14, fmt=fmt))) for fmt in FORMATS
    ]
    first = [line for _, line in generate("healthy", 10, seed=1)]
    logs.append(_write(tmp_path / "restart.log", first + [line for _, line in generate("crashed", 12, seed=2)]))

    def work():
        for log in logs:
            judge_path(str(log), now=2e9).report(now=2e9)

    assert _cyclic_garbage(work) == 0


def test_hostile_bytes_and_lines_leave_no_cycles(tmp_path):
    junk = tmp_path / "junk.log"
    good = [line for _, line in generate("non-finite", 10, seed=3)]
    hostile = [
        "\x1b[31m(RolloutManager pid=1)\x1b[0m " + good[5][:40],
        "rollout 3: {'rollout/raw_reward': nan, ",
        "step 1: {'train/loss': np.float64(0.5), 'train/grad_norm': 1e999999}",
        "\x00\xff" * 300,
        "perf 2: {" + "'k': 1, " * 5000,
        "[2026-08-21 10:00:00.000 x] y.py:1 - ft attempt=1 phase=fail ok=false",
    ]
    junk.write_bytes(os.urandom(20_000) + "\n".join(good[:40] + hostile + good[40:]).encode("utf-8", "replace"))

    def work():
        judge_path(str(junk), now=2e9).report(now=2e9)
        pipe = Pipeline()
        for line in good + hostile:  # line by line, as a live follow feeds it
            pipe.feed([line])
        pipe.finish(2e9)
        LineParser().feed_lines(hostile * 3)

    assert _cyclic_garbage(work) == 0


def test_the_one_shot_commands_leave_only_their_argument_parsers(tmp_path):
    """A command's own cycles are its argparse parser's (built once per command, cli.build_parser),
    whatever the logs: the same count for logs of 8 and 32 rollouts, and for a missing log."""
    for n in (8, 32):
        for seed in (1, 2, 3):
            write_log(tmp_path / f"seed{seed}_{n}.log", "healthy", n, seed=seed)
    parsers = {cmd: _cyclic_garbage(lambda: cli.build_parser(cmd)) for cmd in ("check", "export", "calibrate")}
    assert min(parsers.values()) > 0  # (argparse's parsers do hold cycles: the count means something)

    def commands(n: int):
        logs = [str(tmp_path / f"seed{seed}_{n}.log") for seed in (1, 2, 3)]
        out = tmp_path / f"out{n}"
        out.mkdir(exist_ok=True)
        return [
            ["check", *logs],
            ["check", "--json", logs[0]],
            ["export", logs[1], "-o", str(out / "a.csv")],
            ["export", "--format", "json", "--axis", "step", logs[2], "-o", str(out / "a.json")],
            ["calibrate", *logs, "-o", str(out / "ranges.toml")],
            ["check", str(tmp_path / "missing.log")],
        ]

    def run(args):
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            cli.main(args)

    for args in commands(8):  # (modules imported once, before counting)
        run(args)
    for small, big in zip(commands(8), commands(32)):
        assert _cyclic_garbage(lambda: run(small)) == parsers[small[0]], small
        assert _cyclic_garbage(lambda: run(big)) == parsers[big[0]], big
