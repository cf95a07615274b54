"""Tests of grpo_tui.follow.follower against real files, pipes and a real watcher.

Waits poll a condition (collect_until); no fixed sleeps, no timing asserts.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from grpo_tui.follow.follower import FileEvent, Follower, Lines, follow_stdin, read_lines_once

FAST = {"poll_interval": 0.1, "debounce_ms": 10}


async def collect_until(cond, timeout: float = 5) -> None:
    """Poll ``cond`` until true; fail with a message after ``timeout`` s."""
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out waiting for the follower"
        await asyncio.sleep(0.01)


class Run:
    """A Follower consumed by a background task into ``items``."""

    def __init__(self, follower: Follower) -> None:
        self.follower = follower
        self.items: list[Lines | FileEvent] = []
        self.task = asyncio.create_task(self._consume())

    async def _consume(self) -> None:
        async for item in self.follower:
            self.items.append(item)

    @property
    def lines(self) -> list[str]:
        return [ln for it in self.items if isinstance(it, Lines) for ln in it.lines]

    @property
    def events(self) -> list[str]:
        return [it.event for it in self.items if isinstance(it, FileEvent)]

    def caught_up(self, path) -> bool:
        """True once the follower has read every byte of the file at ``path``."""
        st = self.follower.stats
        try:
            now = os.stat(path)
        except FileNotFoundError:
            return False
        return st["inode"] == now.st_ino and st["position"] == now.st_size

    async def close(self) -> None:
        self.follower.stop()
        await asyncio.wait_for(self.task, 5)


@pytest.fixture
async def follow():
    """Factory: start a Follower with fast test settings; stop it afterwards."""
    runs: list[Run] = []

    def start(path, **kw) -> Run:
        run = Run(Follower(str(path), **{**FAST, **kw}))
        runs.append(run)
        return run

    yield start
    for run in runs:
        await run.close()


def append(path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


async def test_partial_line_completes_later(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    run = follow(log)
    append(log, b"hel")
    await collect_until(lambda: run.caught_up(log))
    assert run.lines == []
    append(log, b"lo\nwor")
    await collect_until(lambda: run.lines == ["hello"])
    await collect_until(lambda: run.caught_up(log))
    append(log, b"ld\n")
    await collect_until(lambda: run.lines == ["hello", "world"])
    assert run.events == []
    last = [it for it in run.items if isinstance(it, Lines)][-1]
    assert last.offset == log.stat().st_size


async def test_multibyte_char_split_across_writes(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    run = follow(log)
    text = "café 😀 ok\n".encode()
    for piece in (text[:4], text[4:8], text[8:]):  # cuts inside é and inside 😀
        append(log, piece)
        await collect_until(lambda: run.caught_up(log))
    assert run.lines == ["café 😀 ok"]


async def test_carriage_return_stays_inside_line(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"a\rb\r\n\rc\n")
    run = follow(log)
    await collect_until(lambda: len(run.lines) == 2)
    assert run.lines == ["a\rb\r", "\rc"]


async def test_invalid_utf8_is_replaced_not_fatal(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"ok\xff\n")
    run = follow(log)
    await collect_until(lambda: len(run.lines) == 1)
    assert run.lines == ["ok\ufffd"]


async def test_file_created_after_start(tmp_path, follow):
    log = tmp_path / "later.log"
    run = follow(log)
    await collect_until(lambda: run.events == ["waiting"])
    log.write_bytes(b"first\n")
    await collect_until(lambda: run.lines == ["first"])
    assert run.events == ["waiting", "created"]
    assert run.items[1] == FileEvent("created", str(log))


async def test_parent_folder_created_after_start(tmp_path, follow):
    log = tmp_path / "sub" / "later.log"
    run = follow(log)
    await collect_until(lambda: run.events == ["waiting"])
    log.parent.mkdir()
    log.write_bytes(b"x\n")
    await collect_until(lambda: run.lines == ["x"])
    assert run.events == ["waiting", "created"]


async def test_copytruncate(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"old 1\nold 2\npartial")
    run = follow(log)
    await collect_until(lambda: run.caught_up(log))
    with open(log, "r+b") as fh:  # copytruncate: truncate in place, keep writing
        fh.truncate(0)
    append(log, b"new 1\n")
    await collect_until(lambda: run.lines[-1:] == ["new 1"])
    assert run.lines == ["old 1", "old 2", "new 1"]  # partial dropped
    assert run.events == ["truncated"]


async def test_rewrite_in_place_longer_than_offset(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"1\n")
    run = follow(log)
    await collect_until(lambda: run.lines == ["1"])
    with open(log, "r+b") as fh:  # size grows past the old offset: head differs
        fh.truncate(0)
        fh.write(b"101\n")
    await collect_until(lambda: run.lines == ["1", "101"])
    assert run.events == ["truncated"]


async def test_os_replace_drains_old_file_first(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"a\n")
    run = follow(log)
    await collect_until(lambda: run.lines == ["a"])
    append(log, b"b\nunfinished")
    tmp = tmp_path / "train.log.tmp"
    tmp.write_bytes(b"c\n")
    os.replace(tmp, log)
    await collect_until(lambda: run.lines[-1:] == ["c"])
    assert run.lines == ["a", "b", "unfinished", "c"]
    assert run.events == ["replaced"]
    kinds = [type(it).__name__ if isinstance(it, Lines) else it.event for it in run.items]
    assert kinds.index("replaced") > 0 and kinds[-1] == "Lines"


async def test_rename_then_recreate(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"1\n")
    run = follow(log)
    await collect_until(lambda: run.lines == ["1"])
    append(log, b"2\n")
    os.rename(log, tmp_path / "train.log.1")
    log.write_bytes(b"3\n")
    await collect_until(lambda: run.lines[-1:] == ["3"])
    assert run.lines == ["1", "2", "3"]
    # The follower may or may not look while the name is missing.
    assert run.events in (["replaced"], ["deleted", "created"])


async def test_delete_then_recreate(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"1\n")
    run = follow(log)
    await collect_until(lambda: run.lines == ["1"])
    append(log, b"tail")
    os.unlink(log)
    await collect_until(lambda: run.events == ["deleted"])
    assert run.lines == ["1", "tail"]
    log.write_bytes(b"2\n")
    await collect_until(lambda: run.lines == ["1", "tail", "2"])
    assert run.events == ["deleted", "created"]


async def test_from_start_false_reads_only_new_lines(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"old 1\nold 2\nhalf ")
    run = follow(log, from_start=False)
    await collect_until(lambda: run.follower.stats["inode"] is not None)
    append(log, b"line\nnew\n")
    await collect_until(lambda: run.lines == ["half line", "new"])
    with open(log, "r+b") as fh:
        fh.truncate(0)
    append(log, b"again\n")
    await collect_until(lambda: run.lines[-1:] == ["again"])
    assert run.events == ["truncated"]


async def test_from_start_false_missing_file_reads_from_zero(tmp_path, follow):
    log = tmp_path / "train.log"
    run = follow(log, from_start=False)
    await collect_until(lambda: run.events == ["waiting"])
    log.write_bytes(b"a\nb\n")
    await collect_until(lambda: run.lines == ["a", "b"])


async def test_burst_comes_in_few_batches(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    run = follow(log, chunk_bytes=64 * 1024)
    await collect_until(lambda: run.follower.stats["inode"] is not None)
    expected = [f"rollout {i}: {{'x': {i * 0.5}}}" for i in range(10_000)]
    append(log, ("\n".join(expected) + "\n").encode())
    await collect_until(lambda: len(run.lines) >= 10_000)
    assert run.lines == expected
    batches = [it for it in run.items if isinstance(it, Lines)]
    assert len(batches) <= log.stat().st_size // (64 * 1024) + 2
    assert run.follower.stats["lines"] == 10_000


async def test_polling_fallback_without_watcher(tmp_path, follow, monkeypatch):
    async def no_watch(self):  # as if inotify were unavailable or silent
        await self._stop.wait()

    monkeypatch.setattr(Follower, "_watch", no_watch)
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    run = follow(log)
    await collect_until(lambda: run.follower.stats["inode"] is not None)
    append(log, b"a\n")
    await collect_until(lambda: run.lines == ["a"])
    append(log, b"b\n")
    await collect_until(lambda: run.lines == ["a", "b"])


@pytest.mark.skipif(bool(os.environ.get("WATCHFILES_FORCE_POLLING")), reason="checks the inotify path")
async def test_symlink_target_appends(tmp_path, follow):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "run.log"
    target.write_bytes(b"a\n")
    link = tmp_path / "link.log"
    link.symlink_to(target)
    run = follow(link, poll_interval=30)  # must come from the watcher
    await collect_until(lambda: run.lines == ["a"])
    append(target, b"b\n")
    await collect_until(lambda: run.lines == ["a", "b"])


async def test_directory_path_reports_error_and_recovers(tmp_path, follow):
    log = tmp_path / "train.log"
    log.mkdir()
    run = follow(log)
    await collect_until(lambda: "error" in run.events)
    assert "directory" in run.items[0].detail
    log.rmdir()
    log.write_bytes(b"ok\n")
    await collect_until(lambda: run.lines == ["ok"])
    assert run.events.count("error") == 1  # reported once, not every poll


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
async def test_permission_denied_reports_error_and_retries(tmp_path, follow):
    log = tmp_path / "train.log"
    log.write_bytes(b"secret\n")
    log.chmod(0)
    run = follow(log)
    await collect_until(lambda: run.events == ["error"])
    log.chmod(0o644)
    await collect_until(lambda: run.lines == ["secret"])


async def test_open_error_is_reported_once_and_retried(tmp_path, follow, monkeypatch):
    log = tmp_path / "train.log"
    log.write_bytes(b"secret\n")
    real_open, denied = os.open, [True]

    def fake_open(path, *args, **kw):  # works as root too, unlike chmod
        if denied[0] and os.fspath(path) == str(log):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kw)

    monkeypatch.setattr(os, "open", fake_open)
    run = follow(log)
    await collect_until(lambda: run.events == ["error"])
    assert "Permission denied" in run.items[0].detail
    denied[0] = False  # no file change: only the periodic retry can see this
    await collect_until(lambda: run.lines == ["secret"])
    assert run.events == ["error"]


async def test_stop_ends_iteration_and_stats(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"a\nb\n")
    follower = Follower(str(log), **FAST)
    got = []
    async for item in follower:
        got.append(item)
        follower.stop()
    assert got == [Lines(["a", "b"], 4)]
    stats = follower.stats
    assert stats["bytes_read"] == 4 and stats["lines"] == 2 and stats["batches"] == 1
    with pytest.raises(RuntimeError):
        async for _ in follower:
            pass


async def test_stop_before_start_returns_at_once(tmp_path):
    follower = Follower(str(tmp_path / "none.log"), **FAST)
    follower.stop()
    assert [item async for item in follower] == []


async def test_stdin_over_pipe_with_eof():
    read_fd, write_fd = os.pipe()
    items: list[Lines | FileEvent] = []

    async def consume():
        with os.fdopen(read_fd, "rb", buffering=0) as stream:
            async for item in follow_stdin(stream):
                items.append(item)

    task = asyncio.create_task(consume())
    lines = lambda: [ln for it in items if isinstance(it, Lines) for ln in it.lines]
    os.write(write_fd, b"one\ntw")
    await collect_until(lambda: lines() == ["one"])
    os.write(write_fd, "o\nmulti\xc3".encode("latin-1"))
    await collect_until(lambda: lines() == ["one", "two"])
    os.write(write_fd, b"\xa9\nlast")
    os.close(write_fd)
    await asyncio.wait_for(task, 5)
    assert lines() == ["one", "two", "multi\u00e9", "last"]
    assert items[-1] == FileEvent("eof", "-")


async def test_stdin_from_regular_file(tmp_path):
    src = tmp_path / "in.log"
    src.write_bytes(b"a\nb\n")
    with open(src, "rb") as stream:
        items = [item async for item in follow_stdin(stream, chunk_bytes=2)]
    assert items == [Lines(["a"], 2), Lines(["b"], 4), FileEvent("eof", "-")]


def test_read_lines_once(tmp_path):
    log = tmp_path / "done.log"
    text = "α line\r\nβ\n\nlast é"
    log.write_bytes(text.encode())
    batches = list(read_lines_once(str(log), chunk_bytes=3))  # cuts inside α, β, é
    assert [ln for b in batches for ln in b] == ["α line\r", "β", "", "last é"]
    assert all(batches)
    assert list(read_lines_once(str(log))) == [["α line\r", "β", ""], ["last é"]]


def test_rewrite_keeping_the_head_is_seen_as_truncation(tmp_path):
    """A restart that rewrites the file with the same launch line (same first 64 bytes) and
    grows past the read offset before the next poll: the bytes before the offset changed, so
    it is a truncation and every new line is read from the start (issue #9: 96 of 300 lost)."""
    log = tmp_path / "train.log"
    head = "EXEC: python3 train.py --rollout-batch-size 32 --n-samples-per-prompt 8 " + "x" * 40 + "\n"
    old = head + "".join(f"old {i}\n" for i in range(100))
    new = head + "".join(f"new {i}\n" for i in range(300))
    log.write_text(old)
    f = Follower(str(log), **FAST)
    got = []
    for item in f._poll():
        got.append(item)
    assert sum(len(i.lines) for i in got if isinstance(i, Lines)) == 101
    log.write_text(new)  # in place (same inode), longer than the old offset
    items = []
    for _ in range(5):
        items += f._poll()
    events = [i.event for i in items if isinstance(i, FileEvent)]
    lines = [ln for i in items if isinstance(i, Lines) for ln in i.lines]
    assert events == ["truncated"]
    assert lines == new.splitlines()
