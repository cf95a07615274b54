"""Hypothesis state machine: a real Follower on a real file vs. a line model.

Each rule changes the file the way loggers and log rotation do; afterwards
the test waits until the follower has read everything and compares the lines
it emitted with the lines the model says were completed.
Model rules: a partial last line is dropped on truncation (it was never
finished) and emitted as a line on rename/delete/replace (it never will be).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from grpo_tui.follow.follower import FileEvent, Follower, Lines

ALPHABET = st.sampled_from(list("ab z09{}:,.-_'\t\r\n\n\n") + ["é", "ß", "中", "😀", "\u200b"])
PAYLOAD = st.text(ALPHABET, max_size=300) | st.text(ALPHABET, min_size=1000, max_size=4000)
CUTS = st.lists(st.tuples(st.integers(0, 1 << 16), st.booleans()), max_size=4)


class FollowerMachine(RuleBasedStateMachine):
    """Drives file operations and checks the follower's output after each."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="follow-sm-")
        self.path = os.path.join(self.dir, "train.log")
        self.loop = asyncio.new_event_loop()
        self.items: list[Lines | FileEvent] = []
        self.expected: list[str] = []
        self.partial = b""  # model of the current file's unfinished line
        self.generation = 0
        self.truncations = 0
        self.rotations = 0
        self.follower: Follower | None = None
        self.task: asyncio.Task | None = None

    # ------------------------------------------------------------ helpers
    def _new_generation_bytes(self, text: str) -> bytes:
        """Each file version starts with a distinct header, as real logs do
        (a rewrite starting with the same bytes is undetectable: stack-check)."""
        self.generation += 1
        return f"gen {self.generation}\n".encode() + text.encode()

    def _model_append(self, data: bytes) -> None:
        done, sep, rest = (self.partial + data).rpartition(b"\n")
        if sep:
            self.expected.extend(done.decode().split("\n"))
            self.partial = rest
        else:
            self.partial = rest

    def _model_flush(self) -> None:
        if self.partial:
            self.expected.append(self.partial.decode())
        self.partial = b""

    def _write(self, data: bytes, mode: str = "ab") -> None:
        with open(self.path, mode) as fh:
            fh.write(data)

    def _caught_up(self) -> bool:
        stats = self.follower.stats
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return False
        return (
            stats["inode"] == now.st_ino
            and stats["position"] == now.st_size
            and stats["events"].get("truncated", 0) == self.truncations
        )

    def _wait_caught_up(self, timeout: float = 10) -> None:
        async def poll() -> None:
            end = time.monotonic() + timeout
            while not self._caught_up():
                assert time.monotonic() < end, f"follower stuck: {self.follower.stats}"
                await asyncio.sleep(0.005)

        self.loop.run_until_complete(poll())

    @property
    def emitted(self) -> list[str]:
        return [ln for it in self.items if isinstance(it, Lines) for ln in it.lines]

    # -------------------------------------------------------------- rules
    @initialize(chunk_bytes=st.sampled_from([5, 64, 4096, 1 << 20]), first=PAYLOAD)
    def start(self, chunk_bytes: int, first: str) -> None:
        data = self._new_generation_bytes(first)
        self._write(data, "wb")
        self._model_append(data)
        self.follower = Follower(self.path, poll_interval=0.1, debounce_ms=10, chunk_bytes=chunk_bytes)

        async def consume() -> None:
            async for item in self.follower:
                self.items.append(item)

        async def launch() -> None:
            self.task = asyncio.create_task(consume())

        self.loop.run_until_complete(launch())
        self._wait_caught_up()

    @rule(text=PAYLOAD, cuts=CUTS)
    def append(self, text: str, cuts: list[tuple[int, bool]]) -> None:
        """Write in pieces cut anywhere (inside lines and multibyte chars)."""
        data = text.encode()
        points = sorted({p % (len(data) + 1) for p, _ in cuts} | {len(data)})
        waits = {p % (len(data) + 1): w for p, w in cuts}
        start = 0
        for point in points:
            self._write(data[start:point])
            self._model_append(data[start:point])
            start = point
            if waits.get(point):
                self._wait_caught_up()

    @rule(text=PAYLOAD)
    def truncate_and_rewrite(self, text: str) -> None:
        data = self._new_generation_bytes(text)
        with open(self.path, "r+b") as fh:  # copytruncate: same inode
            fh.truncate(0)
            fh.write(data)
        self.truncations += 1
        self.partial = b""
        self._model_append(data)

    @rule(unread=PAYLOAD, text=PAYLOAD)
    def rename_and_recreate(self, unread: str, text: str) -> None:
        """The logger writes a last bit the follower has not read, then rotates."""
        self._write(unread.encode())
        self._model_append(unread.encode())
        os.rename(self.path, f"{self.path}.{self.generation}")
        self._recreate(text)

    @rule(unread=PAYLOAD, text=PAYLOAD)
    def delete_and_recreate(self, unread: str, text: str) -> None:
        self._write(unread.encode())
        self._model_append(unread.encode())
        os.unlink(self.path)
        self._recreate(text)

    @rule(text=PAYLOAD)
    def atomic_replace(self, text: str) -> None:
        tmp = self.path + ".tmp"
        data = self._new_generation_bytes(text)
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, self.path)
        self.rotations += 1
        self._model_flush()
        self._model_append(data)

    def _recreate(self, text: str) -> None:
        data = self._new_generation_bytes(text)
        self._write(data, "wb")
        self.rotations += 1
        self._model_flush()
        self._model_append(data)

    # ---------------------------------------------------------- checks
    @invariant()
    def lines_match_model(self) -> None:
        if self.follower is None:
            return
        self._wait_caught_up()
        assert self.emitted == self.expected
        assert self.follower.stats["buffered"] == len(self.partial)
        events = self.follower.stats["events"]
        assert events.get("truncated", 0) == self.truncations
        # A rotation is seen as "replaced", or as "deleted" then "created".
        assert events.get("replaced", 0) + events.get("deleted", 0) == self.rotations
        assert events.get("deleted", 0) == events.get("created", 0)
        assert not events.get("error") and not events.get("waiting")

    def teardown(self) -> None:
        try:
            if self.follower is not None:
                self.follower.stop()
                self.loop.run_until_complete(asyncio.wait_for(self.task, 5))
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)


FollowerMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestFollowerMachine = FollowerMachine.TestCase
