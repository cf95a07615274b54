"""Read a log file as blocks of complete lines: one pass, bounded memory, binary-safe.

`read_blocks` is the one reader: the pipeline (grpo_tui/pipeline/whole_file.py) feeds its blocks
to the parser for `check`, `export`, `calibrate` and the dashboard's history fill, with the
optional read-ahead thread (ScannedReader; lines/prefetch.py starts one before the imports are
done).  `iter_lines` decodes its blocks for line-by-line readers (replay).  A live file is followed
by follow/follower.py, which reads only what was appended.
"""

from __future__ import annotations

import io
import mmap
import os
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator
from typing import Any, BinaryIO, cast

from ..shared_override import SharedOverride

CHUNK = 4 << 20
MAX_LINE = 1 << 20  # bytes kept of one line; the reader never holds more of it

# judge_path's blocks: twice CHUNK.  Why: the reader thread takes the GIL back a few times per
# block, and smaller blocks left the parser waiting for them (benchmarks/README.md).  The
# dashboard's fill keeps CHUNK: 8 MiB blocks there cost 16-19 MB of peak memory on a 1 GB log.
BULK_CHUNK = 2 * CHUNK


HANDOFF_S = 0.00025  # the GIL switch interval while a whole file is read (Python's default: 0.005)

# A shorter GIL switch interval while judge_path reads a file (and while lines/prefetch.py reads
# ahead).  Why: the reader thread holds the GIL only a moment per block, but waits up to the interval
# each time it wants it back, and the parser then waits for blocks (benchmarks/README.md).  Not in
# the dashboard's fill, where it bought under 10 % alone (benchmarks/README.md).
quick_handoff = SharedOverride(
    sys.getswitchinterval, sys.setswitchinterval, lambda saved: HANDOFF_S if saved > HANDOFF_S else None
)


class InputError(Exception):
    """A clear one-line reason the input can't be read (shown as is, never a traceback)."""


def check_readable(path: str) -> None:
    """Raise InputError unless `path` is `-` or an existing, readable regular file.

    Decided by stat alone, before any open(): opening a FIFO blocks until a writer comes,
    and /dev/zero or /dev/urandom never end, so those are refused here, not read.
    """
    if path == "-":
        return
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory (give a log file)")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")


def open_regular(path: str) -> io.BufferedReader:
    """Open a regular file for reading in binary, or raise InputError; `-` is stdin.

    check_readable first (stat), then open with O_NONBLOCK so that a file swapped for a FIFO
    in between can't block us, then fstat the open descriptor to close that race.
    """
    if path == "-":
        return os.fdopen(os.dup(0), "rb")
    check_readable(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{path}: not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_blocks(
    path: str,
    chunk: int = CHUNK,
    *,
    start: int = 0,
    end: int | None = None,
    max_line: int | None = None,
    scan: Callable[[Any], tuple] | None = None,
    read_scan: Callable[..., tuple] | None = None,
    ahead: int = 0,
    untimed: bool = False,
) -> Iterator[tuple[Any, Any]]:
    """The one way a file (or `-`, stdin) is read: its complete lines in blocks, as
    (block, scanned) pairs.

    A block is the lines of one read joined by b'\\n' without the last one's newline (it holds
    block.count(b'\\n') + 1 lines; b'' is one empty line), each line cut to `max_line` bytes
    (default MAX_LINE: memory stays bounded whatever the input; the rest of a longer line is
    skipped unread into memory).  A block is a view of a reused buffer, valid only until the
    next is asked for (LineParser.feed_block reads what it keeps before it returns), or bytes.
    With `start` > 0 reading begins at the first line that starts at or after it; with `end`
    it stops there and a last line without its newline is left out (the dashboard reads a
    file's tail first, then the rest).

    `scanned` is None unless `scan` (the C scanner's block walk, LineParser.block_scan) is
    given: then a reader thread reads and scans up to `ahead` (at least 1) blocks ahead of the
    caller (ScannedReader), and `read_scan` lets it read and walk a block in one call."""
    if scan is not None:
        yield from ScannedReader(
            path,
            scan,
            chunk,
            end,
            ahead=max(1, ahead),
            read_scan=read_scan,
            untimed=untimed,
            start=start,
            max_line=max_line,
        ).blocks()
        return
    for block in _views(path, chunk, max_line=max_line, start=start, end=end):
        yield block, None


def iter_lines(path: str, chunk: int = CHUNK, *, start: int = 0, end: int | None = None) -> Iterator[str]:
    """The complete lines of read_blocks, decoded one by one (invalid UTF-8 becomes U+FFFD)."""
    for block, _ in read_blocks(path, chunk, start=start, end=end):
        yield from str(block, "utf-8", "replace").split("\n")


def _views(
    path: str,
    chunk: int = CHUNK,
    max_line: int | None = None,
    end: int | None = None,
    buffers: int = 1,
    taken: Callable[[], int] | None = None,
    walk: Callable[..., tuple] | None = None,
    start: int = 0,
) -> Generator[Any, None, None]:
    """read_blocks' blocks (without a scan: the blocks alone), read into one reused buffer: no
    new 4 MiB object and no copy per block, which made reading cost three times what the
    kernel's copy does.

    A block is a memoryview of that buffer, valid only until the next one is asked for: the
    caller must keep nothing that reads it later (LineParser.feed_block reads what it keeps
    from a block that is not bytes before it returns).  Each view is released when the next
    is read, so a reference kept by mistake fails loudly instead of reading other bytes.  A
    block holding a line longer than `max_line` (default MAX_LINE) comes as bytes (its lines cut).
    Each read takes at most `chunk` bytes (the dashboard's progress and `q` are per block).
    With `buffers` > 1 the buffers take turns: a block stays valid until `buffers` more are
    asked for (ScannedReader reads ahead of its consumer this way).  With `taken` (how
    many blocks a consumer in another thread has taken so far), a buffer whose block may still
    be read there (the consumer's current one, or one not taken yet) is not reused: the next
    block goes to a new buffer and the old one is freed when its block is dropped (a reader
    running many blocks ahead at the start, ScannedReader's `ahead`).

    With `walk` (the C scanner's read_scan), each read and the walk of the block it completes
    are one call, and the blocks come as (block, its walk or None).  None, for the caller to
    scan itself: a block of bytes (a long line cut), the block read while the rest of a cut line
    was dropped, and the last line without its newline.  A walk that gives a fourth value,
    `mid` >= 0, walked only the lines before buf[mid] (a newline): the block comes in two, the
    lines walked and then the rest, as (block, LEFT): unwalked, for whoever parses it to walk
    (the same lines: a block may end at any newline); the buffer is kept for both."""
    max_line = MAX_LINE if max_line is None else max_line
    cap = max(chunk, max_line + 2)  # room to read past a cut line and its newline
    f = open_regular(path)
    fill = _fills(f, cap, end)
    try:
        mvs = [memoryview(_buffer(cap, fill)) for _ in range(max(1, buffers))]
    except BaseException:
        f.close()
        raise
    views: list[list[memoryview] | None] = [None] * len(mvs)  # the block(s) given out of each buffer
    given = [-1] * len(mvs)  # (with `taken`) the number of the block each buffer gave out
    blocks = 0  # blocks given out so far
    cur = 0
    mv = mvs[0]
    buf = cast(mmap.mmap, mv.obj)
    fd = f.fileno() if walk is not None else -1  # (read there directly: f's buffer stays unused)
    walked, mid = None, -1
    with f:
        if start > 0:
            pos = _seek_line_start(f, start, chunk)
            if pos is None or (end is not None and pos >= end):
                return
            end = None if end is None else end - pos
        have = 0  # buf[:have]: the start of the current line (no newline in it)
        skipping = False  # that line was cut at max_line: drop its bytes up to the next newline
        left = end  # bytes still to read before `end` (None: to the end of the file)
        while left is None or left > 0:
            try:
                want = min(cap - have, chunk if left is None else min(chunk, left))
                if walk is None:
                    n = f.readinto(mv[have : have + want])
                elif skipping:
                    n, walked = _read_full(fd, mv[have : have + want]), None
                else:
                    n, cut, walked, *split = walk(fd, mv, have, want, max_line)
                    mid = split[0] if split and walked is not None else -1
            except OSError as exc:
                raise InputError(f"{path}: read failed: {exc.strerror or exc}") from None
            if not n:
                break
            if left is not None:
                left -= n
            stop = have + n  # buf[:stop] holds what is read
            if skipping:
                i = buf.find(b"\n", have, stop)
                if i < 0:
                    continue
                # the cut line ends here: buf[:have] is that line, then what follows it
                mv[have + 1 : have + stop - i] = mv[i + 1 : stop]
                stop = have + stop - i
                buf[have] = 0x0A
                skipping = False
            if walked is None:
                cut = buf.rfind(b"\n", 0, stop)
            if cut >= 0:
                blocks += 1  # (every block counts: `taken` counts them all)
                if walked is None and _has_long_line(buf, max_line, cut):
                    block = b"\n".join(ln[:max_line] for ln in buf[:cut].split(b"\n"))
                    yield block if walk is None else (block, None)
                elif mid >= 0:  # (set only by a walk that split the block)
                    blocks += 1  # (two blocks: the buffer is kept until the second is done)
                    pair = views[cur] = [mv[:mid], mv[mid + 1 : cut]]
                    given[cur] = blocks - 1
                    yield pair[0], walked
                    yield pair[1], LEFT
                else:
                    one = views[cur] = [mv[:cut]]
                    given[cur] = blocks - 1
                    yield one[0] if walk is None else (one[0], walked)
                walked, mid = None, -1
            rest = stop - cut - 1
            if rest > max_line:
                rest, skipping = max_line, True
            # the line begun goes to the start of the next buffer (once that one's block is done)
            # when this one's block was given out; else it stays in this one
            nxt = (cur + 1) % len(mvs) if views[cur] is not None else cur
            if views[nxt] is not None:
                if taken is not None and given[nxt] >= taken() - 1:
                    # its block may still be read: that buffer is left to it, the next block goes
                    # to a new one, mapped on its own so that its memory goes back to the system
                    # once its last block is dropped (a freed bytearray this big stays in the heap)
                    mvs[nxt] = memoryview(_buffer(cap, fill))
                else:
                    for view in views[nxt] or ():
                        view.release()
                views[nxt] = None
            mvs[nxt][:rest] = mv[cut + 1 : cut + 1 + rest]
            cur, mv = nxt, mvs[nxt]
            buf = cast(mmap.mmap, mv.obj)
            have = rest
        if have and end is None:
            yield bytes(mv[:have]) if walk is None else (bytes(mv[:have]), None)


_PRIVATE = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def _buffer(cap: int, fill: bool) -> mmap.mmap:
    """A read buffer of `cap` bytes, mapped on its own (its memory goes back to the system when
    it is dropped; a freed bytearray this big stays in the heap), private (mmap's default for
    anonymous memory, shared, is shmem: slower to fault in).  `fill`: reads will fill it whole,
    so its pages are mapped at once (MAP_POPULATE, where there is one).  Why: shared buffers
    read slowest and private populated ones fastest where page faults are dear (a VM:
    benchmarks/README.md); bytearray zeroed all three of a reader's buffers even for
    a small file, which touches only the pages it reads now."""
    if _PRIVATE:
        try:
            return mmap.mmap(-1, cap, flags=_PRIVATE | (_POPULATE if fill else 0))
        except OSError:
            pass
    return mmap.mmap(-1, cap)


def _fills(f: BinaryIO, cap: int, end: int | None) -> bool:
    """Whether reading f (to `end`) fills buffers of `cap` bytes: a regular file at least that
    long (stdin and anything fstat can't size: no)."""
    try:
        st = os.fstat(f.fileno())
    except (OSError, ValueError):
        return False
    size = st.st_size if end is None else min(end, st.st_size)
    return stat.S_ISREG(st.st_mode) and size >= cap


def _read_full(fd: int, mv: memoryview) -> int:
    """Read into mv until it is full or the file ends, as BufferedReader.readinto does (a pipe's
    reads are short): the bytes read."""
    got = 0
    while got < len(mv):
        k = os.readv(fd, [mv[got:]])
        if not k:
            break
        got += k
    return got


class ScannedReader:
    """A reader thread, started at once, that reads and scans blocks for one consumer (`blocks()`,
    read_blocks' read-ahead), up to `ahead` blocks before it.  Why a thread: the C scanner lets go
    of the GIL while it walks a block, so reading and scanning the next block costs no time of the
    thread parsing this one.  Three buffers take turns: one being parsed, one waiting, one being
    read.  Errors of the reader come out of `blocks()`; stopping early stops the reader.  Why `ahead`: started while the program
    still imports (lines/prefetch.py), the reader gets that far before parsing begins; the lead
    it may keep then shrinks by one per block taken, down to the one block ahead it keeps after
    (_lead).  A buffer whose block may still be read is not reused (_views' `taken`):
    memory grows by at most `ahead` blocks at the start, given back as the parser drops them.
    `read_scan` (the C scanner's, for its scan_raw): each read and `scan` of the block it
    completes in one call (_views' `walk`), the same blocks and walks.  While the
    consumer is busy (not waiting for a block), that walk also reads the block's metric dicts
    (read_scan's `pairs`), work the parsing thread would do.  Why: which thread is the slower
    one depends on the machine and the log; on a 2-core EPYC a 540 MB export kept the parsing
    thread busy nearly all along and the reader ~60 % of the time, so the reader takes some of
    the parser's work whenever the parser has not caught up with it.  `untimed`: `scan` is the
    C scanner's scan_raw_untimed, and read_scan walks as it does (LineParser.noise_times); then
    the other way round too: while the consumer waits for blocks, the reader leaves the walk of
    a share of each block (its last lines) to it (_steer; the block comes in two parts)."""

    def __init__(
        self,
        path: str,
        scan: Callable[[Any], tuple],
        chunk: int = CHUNK,
        end: int | None = None,
        ahead: int = 1,
        read_scan: Callable[..., tuple] | None = None,
        untimed: bool = False,
        share: float | None = None,
        start: int = 0,
        max_line: int | None = None,
    ) -> None:
        self.path, self.chunk, self.end, self.start, self.max_line = path, chunk, end, start, max_line
        self.scan, self.read_scan = scan, read_scan
        self.untimed = untimed
        self._waiting = False  # the consumer waits for a block (read without the lock: a hint)
        self.spared = 0  # blocks walked with their dicts read (the tests look)
        self.left = 0  # blocks whose tail the consumer walked (the tests look)
        # the part of each block (its last lines) the consumer walks itself: moved by SHARE_STEP
        # per block (_steer) in an untimed read, or fixed (`share`: the tests).  Why untimed only:
        # a split block moves a judging round's end, and with it the log time an alert is raised
        # at (Pipeline._add); in a read that keeps no time (export's rows) nothing depends on
        # where blocks end, and a timed one must not depend on how the threads ran
        self._share, self._steered = (0.0, untimed) if share is None else (share, False)
        self._ahead = max(1, ahead)
        self._items: deque = deque()
        self._cv = threading.Condition()
        self._stopped = False
        self._taken = 0  # blocks the consumer has taken (the reader keeps their buffers)
        self._on_close: list[Callable[[], None]] = []
        self._thread = threading.Thread(target=self._produce, name="grpo-tui-reader", daemon=True)
        self._thread.start()

    def _lead(self) -> int:
        """Blocks the reader may hold ahead: `ahead` before the first is taken, one fewer per block
        taken since, down to one.  Why shrinking: the lead covers the start; kept after it, a
        reader faster than the parser held `ahead` blocks all along (a 1 GB check's peak RSS
        196 -> 214 MB), where one block ahead is as good."""
        return max(1, self._ahead - self._taken)

    def on_close(self, fn: Callable[[], None]) -> None:
        """Run fn once the reader is stopped (close)."""
        self._on_close.append(fn)

    def _put(self, item: Any, lead: bool = True) -> bool | None:
        """Queue item (within the lead, unless `lead` is False); None when stopped, else whether
        the consumer was waiting for it and the reader not for room (the reader the slower)."""
        with self._cv:
            waited = False
            while lead and not self._stopped and len(self._items) >= self._lead():
                waited = True
                self._cv.wait()
            if self._stopped:
                return None
            idle = self._waiting and not waited
            self._items.append(item)
            self._cv.notify_all()
        return idle

    def _steer(self, consumer_idle: bool) -> None:
        """Move the consumer's share of the walk: up after a block it was waiting for (the reader
        is the slower thread), down after one it was not.  Why: on a log whose lines name
        anchors (a quarter of them) the reader walked ~0.6 s of a 540 MB export while its
        consumer waited ~0.15 s for blocks."""
        if self._steered:
            step = SHARE_STEP if consumer_idle else -SHARE_STEP
            self._share = min(SHARE_MAX, max(0.0, self._share + step))

    def _produce(self) -> None:
        walk = self._walk if self.read_scan is not None else None
        blocks = _views(
            self.path,
            self.chunk,
            self.max_line,
            end=self.end,
            buffers=3,
            taken=lambda: self._taken,
            walk=walk,
            start=self.start,
        )
        try:
            for item in blocks:
                block, scanned = item if walk is not None else (item, None)
                if scanned is LEFT:  # the tail of the block before: the consumer walks it
                    self.left += 1
                    if self._put((block, None), lead=False) is None:
                        return
                    continue
                if scanned is None:
                    scanned = self.scan(block)
                idle = self._put((block, scanned))
                if idle is None:
                    return
                self._steer(idle)
            self._put(_END)
        except BaseException as exc:  # handed to the consumer, raised there
            self._put(exc)
        finally:
            blocks.close()

    def _walk(self, fd: int, mv: memoryview, have: int, want: int, max_line: int) -> tuple:
        assert self.read_scan is not None  # (the reader walks only with read_scan)
        spare = not self._waiting and self._share == 0  # (a share given away: the reader is the slower)
        if self._share > 0:
            got = self.read_scan(
                fd, mv, have, want, max_line, spare, self.untimed, int((have + want) * (1 - self._share))
            )
        elif self.untimed:
            got = self.read_scan(fd, mv, have, want, max_line, spare, True)
        else:
            got = self.read_scan(fd, mv, have, want, max_line, spare)
        self.spared += spare and got[2] is not None
        return got

    def blocks(self) -> Iterator[tuple]:
        """The (block, scanned) pairs in order; the reader's error is raised here; leaving early
        (or finishing) stops the reader."""
        try:
            while True:
                with self._cv:
                    while not self._items:
                        self._waiting = True
                        self._cv.wait()
                    self._waiting = False
                    item = self._items.popleft()
                    self._taken += 1
                    self._cv.notify_all()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.close()

    def close(self) -> None:
        """Stop the reader and drop what it read ahead."""
        with self._cv:
            self._stopped = True
            self._items.clear()
            self._cv.notify_all()
        self._thread.join()
        fns, self._on_close = self._on_close, []
        for fn in fns:
            fn()


_END = object()
LEFT = object()  # _views: a block's lines left unwalked by a walk that split it
SHARE_STEP = 1 / 32  # ScannedReader._steer
SHARE_MAX = 0.5


def _has_long_line(b: bytes | bytearray | mmap.mmap, max_line: int | None = None, end: int | None = None) -> bool:
    """Whether some line of b[:end] is longer than max_line (default MAX_LINE), in a few rfind
    calls per block."""
    max_line = MAX_LINE if max_line is None else max_line
    end = len(b) if end is None else end
    p = 0
    while end - p > max_line:
        q = b.rfind(b"\n", p, min(p + max_line + 1, end))
        if q < 0:
            return True
        p = q + 1
    return False


def _seek_line_start(f, start: int, chunk: int) -> int | None:
    """Position f at the first line beginning at or after `start`; None if there is none."""
    pos = start - 1
    f.seek(pos)
    while True:
        b = f.read(chunk)
        if not b:
            return None
        i = b.find(b"\n")
        if i >= 0:
            pos += i + 1
            f.seek(pos)
            return pos
        pos += len(b)
