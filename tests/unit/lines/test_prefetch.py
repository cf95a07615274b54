"""Reading ahead: ScannedReader running many blocks before its consumer, and lines/prefetch.py,
which starts it while the CLI imports (`check`, `export`) for judge_path to take over."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from grpo_tui import cli, pipeline as pl
from grpo_tui.lines import files, prefetch
from grpo_tui.lines.files import BULK_CHUNK, InputError, ScannedReader, _views
from grpo_tui.lines.parse import LineParser

LINE = "[2026-08-21 10:00:{s:02d}.000 main] x.py:1 - noise line {n} " + "pad " * 8 + "\n"


def _log(tmp_path, n=4000, name="x.log"):
    p = tmp_path / name
    p.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(n)))
    return p


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "grpo-tui-reader"]


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\n\n", b"\xff", b"long" * 5]), max_size=120).map(b"".join),
    chunk=st.integers(1, 40),
    ahead=st.integers(1, 6),
    pause=st.booleans(),
)
def test_reading_ahead_gives_the_same_blocks_and_keeps_the_held_one(tmp_path_factory, data, chunk, ahead, pause):
    """However far the reader runs ahead, the blocks are _views' blocks, and the block
    the consumer holds stays as read until it takes the next (its buffer is not reused under it,
    the reader let run ahead meanwhile).  The block before it may be: with one block read ahead
    and three buffers, block k + 2 is read into block k - 1's buffer once k is taken, and the
    parser keeps nothing of a block once it returns (LineParser.feed_block).  (This test used to
    hold the block before too, and failed once in a loaded run: the reader had reused it.)"""
    p = tmp_path_factory.mktemp("r") / "x.log"
    p.write_bytes(data)
    want = [bytes(b) for b in _views(str(p), chunk=chunk)]
    r = ScannedReader(str(p), lambda b: len(b), chunk, ahead=ahead)
    if pause:
        time.sleep(0.01)  # the reader fills its lead first
    got = []
    for block, scanned in r.blocks():
        assert scanned == len(block)
        copy = bytes(block)
        time.sleep(0.0005)  # the reader runs as far ahead as it may
        assert bytes(block) == copy
        got.append(copy)
    assert got == want
    assert not _readers()


def test_a_reader_ahead_takes_at_most_its_lead_and_gives_buffers_back(tmp_path):
    """Before the first block is taken the reader stops at `ahead` blocks; the blocks it read
    into new buffers are freed once dropped (nothing else keeps them)."""
    p = _log(tmp_path, 20000)
    r = ScannedReader(str(p), lambda b: None, 4096, ahead=5)
    deadline = time.monotonic() + 5
    while len(r._items) < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)
    assert len(r._items) == 5
    blocks = r.blocks()
    first = next(blocks)[0]
    assert bytes(first).startswith(b"[2026")
    rest = sum(1 for _ in blocks)
    assert rest > 10 and not _readers()


def test_closing_a_reader_ahead_stops_it_and_runs_its_hooks(tmp_path):
    p = _log(tmp_path, 20000)
    done = []
    r = ScannedReader(str(p), lambda b: None, 4096, ahead=3)
    r.on_close(lambda: done.append(1))
    r.close()
    r.close()
    assert done == [1] and not _readers()
    with pytest.raises(InputError):
        list(ScannedReader(str(tmp_path / "gone.log"), lambda b: None).blocks())


@pytest.fixture
def no_pending():
    prefetch.cancel()
    yield
    prefetch.cancel()


@pytest.mark.accel
def _spy_claims(monkeypatch) -> list[bool]:
    """Whether each prefetch.claim from now on handed a read ahead over, in order."""
    taken: list[bool] = []
    real = prefetch.claim

    def spy(*a):
        got = real(*a)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(prefetch, "claim", spy)
    return taken


def test_judge_path_takes_over_the_prefetch_and_judges_the_same(tmp_path, no_pending, monkeypatch):
    """A prefetch of the very read judge_path makes is used (once), and the verdict, counts and
    store are those of a read of its own; the GIL switch interval is shortened while it reads and
    put back after."""
    monkeypatch.delenv("GRPO_TUI_PURE", raising=False)
    if prefetch.scanner() is None or LineParser().block_scan is None:
        pytest.skip("no C scanner built")
    p = tmp_path / "run.log"
    from grpo_tui.simulate import generate

    p.write_text("".join(line + "\n" for _, line in generate("grad-norm-rising", 60, 1, noise_per_rollout=30)))
    now = p.stat().st_mtime + 60
    own = pl.judge_path(str(p), now=now)
    saved = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.004)
        assert prefetch.start(str(p), BULK_CHUNK)
        assert sys.getswitchinterval() == files.HANDOFF_S
        taken = _spy_claims(monkeypatch)
        ahead = pl.judge_path(str(p), now=now)
        again = pl.judge_path(str(p), now=now)  # nothing pending any more: a read of its own
        assert taken == [True, False]
        assert sys.getswitchinterval() == 0.004 and not _readers()
    finally:
        sys.setswitchinterval(saved)
    for got in (ahead, again):
        assert got.report(now).to_json("run.log") == own.report(now).to_json("run.log")
        assert got.parser.counts == own.parser.counts
        assert [s.rollout_ids().tolist() for s in got.store.segments] == [
            s.rollout_ids().tolist() for s in own.store.segments
        ]


def test_export_takes_over_its_untimed_read_ahead_and_exports_the_same(tmp_path, no_pending, monkeypatch):
    """export's read ahead (untimed: LineParser.noise_times off) is claimed by export's own read
    (judge_path(rows_only=True)) and gives the rows a read of its own gives; a read that keeps the
    times (check) never takes it, nor export a timed one."""
    monkeypatch.delenv("GRPO_TUI_PURE", raising=False)
    if prefetch.scanner() is None or LineParser().block_scan is None:
        pytest.skip("no C scanner built")
    from grpo_tui.export import render
    from grpo_tui.simulate import generate

    p = tmp_path / "run.log"
    p.write_text("".join(line + "\n" for _, line in generate("length-hacking", 60, 2, noise_per_rollout=30)))
    own = pl.judge_path(str(p), judging=False, rows_only=True)
    taken = _spy_claims(monkeypatch)
    assert prefetch.start(str(p), BULK_CHUNK, untimed=True)
    pl.judge_path(str(p))  # check's read: not this one
    ahead = pl.judge_path(str(p), judging=False, rows_only=True)
    assert taken == [False, True]
    assert prefetch.start(str(p), BULK_CHUNK)  # a timed one: not export's
    pl.judge_path(str(p), judging=False, rows_only=True)
    prefetch.cancel()
    assert taken == [False, True, False] and not _readers()
    assert ahead.parser.counts == own.parser.counts
    for fmt in ("csv", "json"):
        for axis in ("rollout", "step"):
            assert render(ahead.store, fmt, axis) == render(own.store, fmt, axis)


def test_a_prefetch_is_only_for_its_own_read(tmp_path, no_pending, monkeypatch):
    """Another path, block size, scanner or an end: not claimed (the prefetch stays for its own
    read); a missing or special file, '-' or the pure path: nothing started."""
    monkeypatch.delenv("GRPO_TUI_PURE", raising=False)
    scan = prefetch.scanner()
    if scan is None:
        pytest.skip("no C scanner built")
    p, q = _log(tmp_path), _log(tmp_path, name="y.log")
    assert prefetch.start(str(p), 4096)
    assert prefetch.claim(str(q), scan, 4096, None) is None
    assert prefetch.claim(str(p), scan, 8192, None) is None
    assert prefetch.claim(str(p), lambda b: None, 4096, None) is None
    assert prefetch.claim(str(p), scan, 4096, 100) is None
    assert prefetch.claim(str(p), None, 4096, None) is None
    blocks = prefetch.claim(str(p), scan, 4096, None)
    assert blocks is not None and prefetch.claim(str(p), scan, 4096, None) is None
    assert b"".join(bytes(b) + b"\n" for b, _ in blocks) == p.read_bytes()
    assert not prefetch.start(str(tmp_path / "gone.log"), 4096)
    assert not prefetch.start(str(tmp_path), 4096)
    assert not prefetch.start("-", 4096)
    monkeypatch.setenv("GRPO_TUI_PURE", "1")
    assert not prefetch.start(str(p), 4096)
    assert not _readers()


def test_an_unclaimed_prefetch_is_stopped_and_the_interval_put_back(tmp_path, no_pending, monkeypatch):
    monkeypatch.delenv("GRPO_TUI_PURE", raising=False)
    if prefetch.scanner() is None:
        pytest.skip("no C scanner built")
    saved = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.004)
        p = _log(tmp_path)
        assert prefetch.start(str(p), 4096)
        assert prefetch.start(str(p), 4096)  # a second start replaces the first
        assert len(_readers()) <= 1
        prefetch.cancel()
        assert not _readers() and sys.getswitchinterval() == 0.004
    finally:
        sys.setswitchinterval(saved)


@pytest.mark.parametrize(
    "argv, started",
    [
        (["check", "{p}"], "timed"),
        (["export", "{p}", "-o", "{out}"], "untimed"),
        (["check", "{p}", "{p}"], None),
        (["check", "{dir}"], None),
        (["tail", "{p}"], None),
    ],
)
def test_the_cli_reads_ahead_for_one_file_of_check_and_export(tmp_path, no_pending, monkeypatch, argv, started):
    """check's read keeps the noise lines' times, export's does not (its rows hold none): each
    read ahead is walked as its command's parser walks (claim() matches them)."""
    p = tmp_path / "logs" / "run.log"
    p.parent.mkdir()
    p.write_text("rollout 0: {'rollout/raw_reward': 0.5}\n")
    calls = []
    monkeypatch.setattr(
        prefetch,
        "start",
        lambda path, chunk, ahead=prefetch.AHEAD, untimed=False: calls.append((path, chunk, untimed)) or True,
    )
    monkeypatch.setattr(cli, "_run", lambda cmd, args: 0)
    args = [a.format(p=p, dir=p.parent, out=tmp_path / "o.csv") for a in argv]
    assert cli.main(args) == 0
    assert calls == ([(str(p), BULK_CHUNK, started == "untimed")] if started else [])


def test_a_read_ahead_the_command_never_takes_is_stopped(tmp_path, no_pending, monkeypatch):
    """check with a bad --ranges file (or export refusing -o) never claims the read ahead: the
    reader is stopped when the command returns, not left blocked on a big file."""
    monkeypatch.delenv("GRPO_TUI_PURE", raising=False)
    if prefetch.scanner() is None:
        pytest.skip("no C scanner built")
    p = _log(tmp_path, 200_000)  # far more than AHEAD blocks of 4 KiB
    monkeypatch.setattr("grpo_tui.lines.files.BULK_CHUNK", 4096)
    bad = tmp_path / "bad.toml"
    bad.write_text("this is [not toml")
    import io
    from contextlib import redirect_stderr

    with redirect_stderr(io.StringIO()):
        assert cli.main(["check", str(p), "--ranges", str(bad)]) == 3
        assert cli.main(["export", str(p), "-o", str(p)]) == 1
    assert not _readers() and prefetch._pending is None
