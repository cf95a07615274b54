"""`check -` is judged in bulk as a file is (pipeline._judge_stdin): the same verdict as judging
standard input rollout by rollout, also where bulk judging declines (BulkMismatch: the blocks are
fed again from the spool) and where the spool can't be written (a full disk)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grpo_tui import pipeline
from grpo_tui.judge import bulk as bulk_mod
from grpo_tui.pipeline import judge_path, whole_file
from grpo_tui.simulate import generate
from tests.equivalence.test_fast_judge import _alerts, declining_log as _rewritten

ROOT = Path(__file__).resolve().parents[2]
NOW = 2e9


def _log(scenario: str, n: int, seed: int) -> list[str]:
    return [line for _, line in generate(scenario, n, seed, noise_per_rollout=3)]


class _Clocked(pipeline.Pipeline):
    """A pipeline whose lines all arrive 30 s before NOW (the verdicts then don't hang on when
    each test ran: `stalled` reads the arrival times of a pipe's lines)."""

    def __init__(self, *a, **kw):
        kw.setdefault("clock", lambda: NOW - 30)
        super().__init__(*a, **kw)


def _stdin(monkeypatch, lines: list[str], per_block: int = 40) -> list[bytes]:
    """Standard input as blocks of complete lines (what the reader gives judge_path)."""
    blocks = [("\n".join(lines[i : i + per_block])).encode() for i in range(0, len(lines), per_block)]
    monkeypatch.setattr(whole_file, "_file_blocks", lambda pipe, path, *a, **k: ((b, None) for b in blocks))
    monkeypatch.setattr(whole_file, "Pipeline", _Clocked)
    return blocks


def _verdict(pipe) -> tuple:
    rep = pipe.report(NOW).report
    return rep.status, _alerts(pipe), {k: s.status for k, s in rep.signals.items()}, pipe.parser.counts.as_dict()


def _replays(monkeypatch) -> list:
    calls = []
    orig = bulk_mod.replay

    def counting(*a, **k):
        calls.append(1)
        return orig(*a, **k)

    monkeypatch.setattr(bulk_mod, "replay", counting)
    return calls


@pytest.mark.parametrize(
    "scenario,seed", [("healthy", 1), ("length-hacking", 2), ("gap-jump", 3), ("non-finite", 4), ("crashed", 5)]
)
def test_stdin_in_bulk_equals_rollout_by_rollout(monkeypatch, scenario, seed):
    _stdin(monkeypatch, _log(scenario, 48, seed))
    plain = judge_path("-", now=NOW, bulk=False)
    replays = _replays(monkeypatch)
    fast = judge_path("-", now=NOW)
    assert replays, "the bulk path was not taken"
    assert _verdict(fast) == _verdict(plain)


def test_stdin_that_bulk_declines_is_judged_again_from_the_spool(monkeypatch):
    _stdin(monkeypatch, _rewritten())
    plain = judge_path("-", now=NOW, bulk=False)
    raised = []
    orig = _Clocked.finish

    def finish(self, now=None):
        try:
            return orig(self, now)
        except bulk_mod.BulkMismatch:
            raised.append(1)
            raise

    monkeypatch.setattr(_Clocked, "finish", finish)
    fast = judge_path("-", now=NOW)
    assert raised, "bulk judging did not decline: the case tests nothing"
    assert _verdict(fast) == _verdict(plain)


@pytest.mark.parametrize("lines", [_log("length-hacking", 48, 2), _rewritten()], ids=["plain", "declined"])
@pytest.mark.parametrize("full_after", [0, 1, 3])
def test_a_full_spool_ends_the_bulk_part_and_loses_nothing(monkeypatch, lines, full_after):
    """The spool fails after `full_after` blocks (0: it can't be made): what was read is judged
    then, from the spool again where bulk declines, and the rest rollout by rollout."""
    blocks = _stdin(monkeypatch, lines)
    assert len(blocks) > full_after + 2
    plain = judge_path("-", now=NOW, bulk=False)
    orig = whole_file._spool_block
    written = []

    def spool_block(spool, kept, block, at):
        if len(written) >= full_after:
            return False
        written.append(1)
        return orig(spool, kept, block, at)

    monkeypatch.setattr(whole_file, "_spool_block", spool_block)
    if full_after == 0:
        monkeypatch.setattr(whole_file, "_open_spool", lambda: None)
    assert _verdict(judge_path("-", now=NOW)) == _verdict(plain)


def test_spool_block_cuts_back_what_a_failed_write_left(tmp_path):
    class Full:
        def __init__(self):
            self.data, self.pos = bytearray(), 0

        def tell(self):
            return self.pos

        def write(self, b):
            self.data[self.pos :] = bytes(b)[:3]  # part of it, then the disk is full
            self.pos += 3
            raise OSError(28, "No space left on device")

        def flush(self):
            pass

        def seek(self, p):
            self.pos = p

        def truncate(self):
            del self.data[self.pos :]

    kept: list = []
    spool = Full()
    assert not whole_file._spool_block(spool, kept, b"abcdef", 1.0)
    assert kept == [] and spool.data == b"" and spool.pos == 0


def test_check_of_a_pipe_gives_the_files_verdict(tmp_path):
    """End to end, a real pipe: `check -` prints the file's verdict, its signals and alerts (its
    times differ: a pipe's lines are as old as their arrival)."""
    log = tmp_path / "run.log"
    log.write_text("\n".join(_log("length-hacking", 60, 5)) + "\n")
    code = (
        "import json, sys; from grpo_tui.pipeline import judge_path; p = judge_path(sys.argv[1], now=2e9); "
        "j = p.report(2e9).to_json(sys.argv[1]); print(json.dumps([j['status'], j['signals'], j['alerts']]))"
    )
    outs = []
    for arg in (str(log), "-"):
        with open(log, "rb") as fh:
            src = subprocess.Popen(["cat"], stdin=fh, stdout=subprocess.PIPE)
            r = subprocess.run(
                [sys.executable, "-c", code, arg],
                stdin=src.stdout,
                capture_output=True,
                text=True,
                timeout=120,
                cwd=ROOT,
            )
            src.stdout.close()
            src.wait()
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1] and "length-hacking" in outs[0]
