"""Follow a growing log file like GNU ``tail -F``, yielding complete lines.

Why this shape (see docs/stack-check.md, watchfiles gotchas):
- watchfiles watches the *parent folder*: watching the file itself fails while it
  does not exist and goes silent after an ``os.replace``.
- watchfiles only says "something changed"; truncation / replacement / deletion
  are decided here from (dev, inode), the read offset and a 64-byte head
  fingerprint.
- Polling backends miss appends, so the file is also re-stat'ed every
  ``poll_interval`` seconds whatever the watcher says.
- Bytes are split on ``b"\\n"`` only (a ``\\r`` stays inside its line) and only
  complete lines are decoded, so a multibyte character cut across two reads
  is harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import watchfiles

__all__ = ["FileEvent", "Follower", "Lines", "follow_stdin", "read_lines_once"]

HEAD_BYTES = 64
MAX_BACKOFF = 4  # an idle follower re-stats every 4 x poll_interval at most
_SCAN_BLOCK = 1 << 16


@dataclass(frozen=True, slots=True)
class Lines:
    """A batch of complete lines (no trailing newline), in file order."""

    lines: list[str]
    offset: int  # byte offset in the current file just after the last line
    written_at: float | None = field(default=None, compare=False)  # the file's mtime after the read


@dataclass(frozen=True, slots=True)
class FileEvent:
    """Something happened to the followed file rather than new lines.

    event: waiting | created | truncated | replaced | deleted | error | eof
    """

    event: str
    path: str
    detail: str = ""


Item = Lines | FileEvent


MAX_LINE = 1 << 20  # longer lines are cut here: a 200 MB line (or /dev/zero) is never held whole


class _LineSplitter:
    """Split a byte stream on b"\\n", keeping the unfinished tail buffered: at most MAX_LINE
    bytes (a longer line is emitted cut, the rest of it up to its newline is dropped)."""

    __slots__ = ("buf", "skipping", "cut_lines")

    def __init__(self) -> None:
        self.buf = b""
        self.skipping = False  # inside the dropped rest of an over-long line
        self.cut_lines = 0

    def feed(self, data: bytes) -> list[str]:
        """Return the lines completed by ``data``; decode only whole lines."""
        if self.skipping:
            nl = data.find(b"\n")
            if nl < 0:
                return []
            data, self.skipping = data[nl + 1 :], False
        cut = data.rfind(b"\n")
        if cut < 0:
            self.buf += data
            return self._bound_tail([])
        done = self.buf + data[:cut]
        self.buf = data[cut + 1 :]
        # '\n' is never part of a multibyte UTF-8 sequence, so decoding the
        # whole block and splitting on "\n" equals splitting bytes first.
        lines = done.decode("utf-8", "replace").split("\n")
        if len(done) > MAX_LINE:
            for i, line in enumerate(lines):
                if len(line) > MAX_LINE:
                    lines[i] = line[:MAX_LINE]
                    self.cut_lines += 1
        return self._bound_tail(lines)

    def _bound_tail(self, lines: list[str]) -> list[str]:
        """An unfinished line past MAX_LINE goes out cut; the rest of it is skipped."""
        if len(self.buf) > MAX_LINE:
            lines.append(self.buf[:MAX_LINE].decode("utf-8", "replace"))
            self.buf, self.skipping = b"", True
            self.cut_lines += 1
        return lines

    def flush(self) -> list[str]:
        """Emit the partial tail as a line: its file will never complete it."""
        if not self.buf:
            return []
        line = self.buf.decode("utf-8", "replace")
        self.buf = b""
        return [line]


def read_lines_once(path: str, chunk_bytes: int = 1 << 20) -> Iterator[list[str]]:
    """Read a finished file in batches, with the same splitting rules as the follower.

    A last line without a newline is yielded too: the file is complete.
    """
    splitter = _LineSplitter()
    with open(path, "rb", buffering=0) as fh:
        while data := fh.read(chunk_bytes):
            if lines := splitter.feed(data):
                yield lines
    if tail := splitter.flush():
        yield tail


def _last_line_start(fd: int, size: int, limit: int) -> int:
    """Offset after the last b"\\n" (so a half-written last line is read whole).

    Gives up after ``limit`` bytes and returns ``size`` (start at the very end).
    """
    end = size
    while end > 0 and size - end < limit:
        start = max(0, end - _SCAN_BLOCK)
        block = os.pread(fd, end - start, start)
        idx = block.rfind(b"\n")
        if idx >= 0:
            return start + idx + 1
        end = start
    return 0 if end == 0 else size


class Follower:
    """Follow ``path`` by name (``tail -F``): survives creation, truncation,
    rotation by rename, ``os.replace`` and deletion.

    Iterate with ``async for item in follower`` (or ``follower.events()``);
    call ``stop()`` from the event loop to end the iteration.
    """

    def __init__(
        self,
        path: str,
        *,
        from_start: bool = True,
        poll_interval: float = 1.0,
        chunk_bytes: int = 1 << 20,
        debounce_ms: int = 50,
    ) -> None:
        self.path = os.fspath(path)
        self.from_start = from_start
        self.poll_interval = poll_interval
        self.chunk_bytes = max(1, int(chunk_bytes))
        self.debounce_ms = max(1, int(debounce_ms))
        self._name = os.path.basename(self.path)
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None  # (dev, ino) of the open fd
        self._pos = 0  # bytes read from the open fd
        self._head = b""  # first min(64, pos) bytes, as read
        self._tail = b""  # the bytes just before _pos, as read: a rewrite that keeps the head changes them
        self._splitter = _LineSplitter()
        self._first_open = True
        self._announce_created = False  # next successful open says "created"
        self._waiting_sent = False
        self._last_error = ""
        self._more = False  # last read filled a chunk: read again at once
        self._bytes_read = 0
        self._lines = 0
        self._batches = 0
        self._events: Counter[str] = Counter()
        self._stop: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None
        self._stopped = False
        self._started = False
        self._backoff = 1

    # ------------------------------------------------------------------ API
    def __aiter__(self) -> AsyncIterator[Item]:
        return self.events()

    def stop(self) -> None:
        """Ask the iteration to end (call from the event loop thread)."""
        self._stopped = True
        if self._stop is not None and self._wake is not None:
            self._stop.set()
            self._wake.set()

    def poll(self) -> list[Item]:
        """One synchronous re-stat and read of at most one chunk, without the watcher: for a
        caller that polls many files from one thread (the runs overview). ``more`` says a
        full chunk was read (call again for the rest)."""
        return self._poll()

    @property
    def more(self) -> bool:
        return self._more

    def close(self) -> None:
        """Close the file a polled follower holds open (the watcher path closes it itself)."""
        self._stopped = True
        self._close()

    @property
    def stats(self) -> dict:
        """Counters for status bars and for tests that wait until caught up."""
        dev, ino = self._ident or (None, None)
        buffered = len(self._splitter.buf)
        return {
            "path": self.path,
            "bytes_read": self._bytes_read,
            "lines": self._lines,
            "batches": self._batches,
            "events": dict(self._events),
            "dev": dev,
            "inode": ino,
            "offset": self._pos - buffered if self._fd is not None else None,
            "position": self._pos if self._fd is not None else None,
            "buffered": buffered,
        }

    async def events(self) -> AsyncIterator[Item]:
        """Yield Lines batches and FileEvents until ``stop()``."""
        if self._started:
            raise RuntimeError("a Follower can be iterated only once")
        self._started = True
        self._stop, self._wake = asyncio.Event(), asyncio.Event()
        if self._stopped:
            return
        watcher = asyncio.create_task(self._watch(), name=f"watch {self.path}")
        try:
            while not self._stop.is_set():
                self._wake.clear()  # before polling: later changes re-set it
                for item in self._poll():
                    yield item
                if not self._more:
                    await self._wait()
        finally:
            self.stop()
            self._close()
            await self._join(watcher)

    # --------------------------------------------------------------- waking
    async def _wait(self) -> None:
        """Sleep until the watcher reports a change, stop(), or the re-stat interval.

        The re-stat is a safety net for missed watcher events: while nothing changes it backs
        off from poll_interval to MAX_BACKOFF x poll_interval (an idle follower wakes rarely),
        and any change brings it back at once."""
        woke = False
        assert self._wake is not None  # (made when the iteration began)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), self.poll_interval * self._backoff)
            woke = True
        self._backoff = 1 if woke else min(MAX_BACKOFF, self._backoff * 2)

    async def _join(self, watcher: asyncio.Task) -> None:
        """Let the watcher thread see the stop event (it checks every step)."""
        try:
            await asyncio.wait_for(watcher, timeout=2.0)
        except BaseException:
            watcher.cancel()

    def _watch_dirs(self) -> list[str]:
        """Parent folder of the path, plus the target's folder for a symlink."""
        dirs = [os.path.dirname(os.path.abspath(self.path))]
        real = os.path.dirname(os.path.realpath(self.path))
        if real not in dirs:
            dirs.append(real)
        return [d for d in dirs if os.path.isdir(d)]

    def _is_ours(self, _change: watchfiles.Change, changed: str) -> bool:
        """watch_filter: only events naming the followed file (or its target)."""
        name = os.path.basename(changed)
        return name == self._name or name == os.path.basename(os.path.realpath(self.path))

    async def _watch(self) -> None:
        """Run awatch on the parent folder(s), restarting when they vanish."""
        assert self._stop is not None  # (made when the iteration began)
        while not self._stop.is_set():
            dirs = self._watch_dirs()
            if not dirs:
                await self._sleep_or_stop(self.poll_interval)
                continue
            try:
                await self._watch_once(dirs)
            except Exception:
                await self._sleep_or_stop(self.poll_interval)

    async def _watch_once(self, dirs: list[str]) -> None:
        """Wake the reader on each change; return when the folders change."""
        assert self._wake is not None  # (made when the iteration began)
        idents = [_ident(d) for d in dirs]
        async for changes in watchfiles.awatch(
            *dirs,
            watch_filter=self._is_ours,
            recursive=False,
            debounce=self.debounce_ms,
            step=max(10, min(50, self.debounce_ms)),
            stop_event=self._stop,
            rust_timeout=max(100, int(self.poll_interval * 1000)),
            yield_on_timeout=True,
            ignore_permission_denied=True,
        ):
            if changes:
                self._wake.set()
            elif [_ident(d) for d in dirs] != idents or dirs != self._watch_dirs():
                return  # a watched folder was replaced: watch the new one

    async def _sleep_or_stop(self, seconds: float) -> None:
        assert self._stop is not None  # (made when the iteration began)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    # -------------------------------------------------------------- polling
    def _poll(self) -> list[Item]:
        """One re-stat + at most one chunk read; never raises OSError."""
        out: list[Item] = []
        self._more = False
        try:
            if self._fd is not None:
                self._check_identity(out)
            if self._fd is None:
                self._try_open(out)
            if self._fd is not None:
                self._read_chunk(out)
        except OSError as exc:
            self._error(out, f"{type(exc).__name__}: {exc.strerror or exc}")
        return out

    def _check_identity(self, out: list[Item]) -> None:
        """Detect deletion, replacement and truncation of the open file."""
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            self._drain(out)
            self._emit(out, "deleted")
            self._close()
            self._announce_created = True
            return
        except PermissionError:
            st = None  # folder no longer searchable: keep reading the open fd
        if st is not None and (st.st_dev, st.st_ino) != self._ident:
            self._drain(out)
            self._emit(out, "replaced")
            self._close()
            return
        fd = self._fd
        assert fd is not None  # (called with the file open)
        size = os.fstat(fd).st_size
        if size < self._pos:
            self._restart(out, f"size {size} < offset {self._pos}")
        elif self._head and os.pread(fd, len(self._head), 0) != self._head:
            self._restart(out, "head changed")
        elif self._tail and os.pread(fd, len(self._tail), self._pos - len(self._tail)) != self._tail:
            self._restart(out, "rewritten (bytes before the read offset changed)")

    def _restart(self, out: list[Item], why: str) -> None:
        """Truncated in place: drop the partial line, read again from 0."""
        self._emit(out, "truncated", why)
        self._splitter.buf = b""
        self._pos = 0
        self._head = b""
        self._tail = b""

    def _try_open(self, out: list[Item]) -> None:
        """Open the path if it is a readable regular file, else report once."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            if not self._waiting_sent and not self._announce_created:
                self._emit(out, "waiting")
            self._waiting_sent = True
            self._announce_created = True
            return
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            self._error(out, f"path is {kind}")
            return
        self._adopt(out, fd, st)

    def _adopt(self, out: list[Item], fd: int, st: os.stat_result) -> None:
        """Start reading a freshly opened file at 0 (or at its end)."""
        self._fd, self._ident = fd, (st.st_dev, st.st_ino)
        self._last_error = ""
        self._splitter.buf = b""
        start = 0
        if self._first_open and not self.from_start and not self._announce_created:
            start = _last_line_start(fd, st.st_size, self.chunk_bytes)
        self._pos = start
        self._head = os.pread(fd, min(HEAD_BYTES, start), 0) if start else b""
        self._tail = os.pread(fd, min(HEAD_BYTES, start), start - min(HEAD_BYTES, start)) if start else b""
        if self._announce_created:
            self._emit(out, "created")
        self._first_open = False
        self._announce_created = False

    def _read_chunk(self, out: list[Item]) -> int:
        """Read up to chunk_bytes of new data; emit one Lines batch for it."""
        assert self._fd is not None  # (called with the file open)
        data = os.pread(self._fd, self.chunk_bytes, self._pos)
        if not data:
            return 0
        self._backoff = 1
        if self._pos < HEAD_BYTES:
            self._head += data[: HEAD_BYTES - self._pos]
        self._pos += len(data)
        self._tail = (self._tail + data[-HEAD_BYTES:])[-HEAD_BYTES:]
        self._bytes_read += len(data)
        self._more = len(data) == self.chunk_bytes
        self._lines_out(out, self._splitter.feed(data))
        return len(data)

    def _drain(self, out: list[Item]) -> None:
        """Read what is left of the old file, then its partial last line."""
        if self._fd is None:
            return
        if os.fstat(self._fd).st_size >= self._pos:
            while self._read_chunk(out) == self.chunk_bytes:
                pass
        self._lines_out(out, self._splitter.flush())
        self._more = False

    def _lines_out(self, out: list[Item], lines: list[str]) -> None:
        if lines:
            self._lines += len(lines)
            self._batches += 1
            try:
                mtime = os.fstat(self._fd).st_mtime if self._fd is not None else None
            except OSError:
                mtime = None
            out.append(Lines(lines, self._pos - len(self._splitter.buf), mtime))

    def _emit(self, out: list[Item], event: str, detail: str = "") -> None:
        self._events[event] += 1
        out.append(FileEvent(event, self.path, detail))

    def _error(self, out: list[Item], detail: str) -> None:
        """Report an error once until it changes or the file opens fine."""
        if detail != self._last_error:
            self._last_error = detail
            self._emit(out, "error", detail)

    def _close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._ident = None, None
        self._pos, self._head, self._tail = 0, b"", b""


def _ident(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


async def follow_stdin(stream=None, *, chunk_bytes: int = 1 << 20) -> AsyncIterator[Item]:
    """Follow a pipe (path "-"): Lines batches, then FileEvent("eof").

    Pipes and terminals are read through the event loop (no thread left
    blocked on exit, no busy-waiting); a redirected regular file is read
    directly. ``stream`` is a binary file object or an fd (default stdin).
    """
    if stream is None:
        stream = sys.stdin.buffer
    fd = stream if isinstance(stream, int) else stream.fileno()
    splitter = _LineSplitter()
    consumed = 0
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd):
        chunks = _pipe_chunks(fd, chunk_bytes)
    else:  # a regular file, /dev/null, /dev/zero...: epoll can't watch these
        chunks = _file_chunks(fd, chunk_bytes)
    async for data in chunks:
        consumed += len(data)
        if lines := splitter.feed(data):
            yield Lines(lines, consumed - len(splitter.buf))
    if tail := splitter.flush():
        yield Lines(tail, consumed)
    yield FileEvent("eof", "-")


async def _file_chunks(fd: int, chunk_bytes: int) -> AsyncIterator[bytes]:
    """Chunks of a regular file or a character device, read in a thread: an endless device
    (/dev/zero) still lets the loop run, print and stop."""
    while data := await asyncio.to_thread(os.read, fd, chunk_bytes):
        yield data


async def _pipe_chunks(fd: int, chunk_bytes: int) -> AsyncIterator[bytes]:
    """Chunks of a pipe via the event loop, on a dup so the caller's fd stays open."""
    loop = asyncio.get_running_loop()
    was_blocking = os.get_blocking(fd)
    reader = asyncio.StreamReader(loop=loop)
    pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    try:
        while data := await reader.read(chunk_bytes):
            yield data
    finally:
        transport.close()
        with contextlib.suppress(OSError):
            os.set_blocking(fd, was_blocking)
