"""Read a log file as blocks of complete lines: one pass, bounded memory, binary-safe.

The pipeline (grpo_tui/pipeline.py) feeds these blocks to the parser for `check`, `export`,
`calibrate` and the dashboard's history fill.
"""

from __future__ import annotations

import os
import queue
import stat
import threading
from typing import Any, BinaryIO, Callable, Iterator


CHUNK = 4 << 20
MAX_LINE = 1 << 20   # bytes kept of one line; the reader never holds more of it


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


def open_regular(path: str) -> BinaryIO:
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


def iter_line_blocks(path: str, chunk: int = CHUNK, start: int = 0,
                     end: int | None = None) -> Iterator[list[str]]:
    """Lists of complete lines, one list per read chunk (split on b'\\n' only): the blocks of
    iter_byte_blocks decoded (invalid UTF-8 becomes U+FFFD)."""
    for block in iter_byte_blocks(path, chunk, start, end):
        yield block.decode("utf-8", "replace").split("\n")


def iter_byte_blocks(path: str, chunk: int = CHUNK, start: int = 0,
                     end: int | None = None) -> Iterator[bytes]:
    """Blocks of complete lines as bytes, one per read chunk: the lines joined by b'\\n'
    without the last one's newline (a block holds block.count(b'\\n') + 1 lines; b'' is one
    empty line).  The parser decodes only the lines it reads (LineParser.feed_block).

    With `start` > 0 reading begins at the first line that starts at or after it; with `end`
    it stops there and a last line without its newline is left out (the dashboard reads a
    file's tail first, then the rest, this way).  Memory stays bounded whatever the input:
    a line longer than MAX_LINE bytes keeps its first MAX_LINE bytes and the rest, up to
    the next newline, is skipped unread into memory (stdin `-` included).
    """
    f = open_regular(path)
    with f:
        pos = _seek_line_start(f, start, chunk) if start > 0 else 0
        if pos is None:
            return
        rest = b""          # the current line's start (at most MAX_LINE bytes)
        skipping = False    # `rest` is a cut line: drop bytes until the next newline
        while end is None or pos < end:
            try:
                block = f.read(chunk if end is None else min(chunk, end - pos))
            except OSError as exc:
                raise InputError(f"{path}: read failed: {exc.strerror or exc}") from None
            if not block:
                break
            pos += len(block)
            head: list[bytes] = []
            if skipping:
                i = block.find(b"\n")
                if i < 0:
                    continue
                head, block, rest, skipping = [rest], block[i + 1:], b"", False
            block = rest + block
            cut = block.rfind(b"\n")
            rest = block[cut + 1:]
            if len(rest) > MAX_LINE:
                rest, skipping = rest[:MAX_LINE], True
            if cut < 0:
                if head:
                    yield head[0]
                continue
            done = block[:cut]
            if head or _has_long_line(done):
                yield b"\n".join(ln[:MAX_LINE] for ln in head + done.split(b"\n"))
            else:
                yield done
        if rest and end is None:
            yield rest


def iter_block_views(path: str, chunk: int = CHUNK, max_line: int | None = None,
                     end: int | None = None, buffers: int = 1) -> Iterator[memoryview | bytes]:
    """The lines of a file as iter_byte_blocks gives them (each cut to `max_line` bytes; with
    `end`, those of bytes [0, end), a last line without its newline left out),
    in blocks read into one reused buffer: no new 4 MiB object and no copy per block, which
    made reading cost three times what the kernel's copy does.

    A block is a memoryview of that buffer, valid only until the next one is asked for: the
    caller must keep nothing that reads it later (LineParser.feed_block reads what it keeps
    from a block that is not bytes before it returns).  Each view is released when the next
    is read, so a reference kept by mistake fails loudly instead of reading other bytes.  A
    block holding a line longer than `max_line` (default MAX_LINE) comes as bytes (its lines cut).
    Each read takes at most `chunk` bytes (the dashboard's progress and `q` are per block).
    With `buffers` > 1 the buffers take turns: a block stays valid until `buffers` more are
    asked for (iter_scanned_blocks reads ahead of its consumer this way)."""
    max_line = MAX_LINE if max_line is None else max_line
    cap = max(chunk, max_line + 2)   # room to read past a cut line and its newline
    mvs = [memoryview(bytearray(cap)) for _ in range(max(1, buffers))]
    views: list[memoryview | None] = [None] * len(mvs)   # the block given out of each buffer
    cur = 0
    mv, buf = mvs[0], mvs[0].obj
    f = open_regular(path)
    with f:
        have = 0          # buf[:have]: the start of the current line (no newline in it)
        skipping = False  # that line was cut at max_line: drop its bytes up to the next newline
        left = end        # bytes still to read before `end` (None: to the end of the file)
        while left is None or left > 0:
            try:
                want = min(cap - have, chunk if left is None else min(chunk, left))
                n = f.readinto(mv[have:have + want])
            except OSError as exc:
                raise InputError(f"{path}: read failed: {exc.strerror or exc}") from None
            if not n:
                break
            if left is not None:
                left -= n
            stop = have + n   # buf[:stop] holds what is read
            if skipping:
                i = buf.find(b"\n", have, stop)
                if i < 0:
                    continue
                # the cut line ends here: buf[:have] is that line, then what follows it
                mv[have + 1:have + stop - i] = mv[i + 1:stop]
                stop = have + stop - i
                buf[have] = 0x0A
                skipping = False
            cut = buf.rfind(b"\n", 0, stop)
            if cut >= 0:
                if _has_long_line(buf, max_line, cut):
                    yield b"\n".join(ln[:max_line] for ln in buf[:cut].split(b"\n"))
                else:
                    views[cur] = mv[:cut]
                    yield views[cur]
            rest = stop - cut - 1
            if rest > max_line:
                rest, skipping = max_line, True
            # the line begun goes to the start of the next buffer (once that one's block is done)
            # when this one's block was given out; else it stays in this one
            nxt = (cur + 1) % len(mvs) if views[cur] is not None else cur
            if views[nxt] is not None:
                views[nxt].release()
                views[nxt] = None
            mvs[nxt][:rest] = mv[cut + 1:cut + 1 + rest]
            cur, mv = nxt, mvs[nxt]
            buf = mv.obj
            have = rest
        if have and end is None:
            yield bytes(mv[:have])


def iter_scanned_blocks(path: str, scan: Callable[[Any], tuple], chunk: int = CHUNK,
                        end: int | None = None) -> Iterator[tuple]:
    """(block, scan(block)) for the blocks of iter_block_views(path, chunk, end=end), read and scanned by
    another thread one block ahead of the caller.

    Why: the C scanner lets go of the GIL while it walks a block, so reading and scanning the
    next block costs no time of the thread parsing this one (on two cores a finished log is
    judged that much sooner).  Three buffers take turns: one being parsed, one waiting, one
    being read; a block stays valid until the caller asks for the one after the next.  Errors
    of the reader come out here; stopping early (an exception in the caller) stops the reader."""
    q: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        blocks = iter_block_views(path, chunk, end=end, buffers=3)
        try:
            for block in blocks:
                if not put((block, scan(block))):
                    return
            put(_END)
        except BaseException as exc:      # handed to the caller, raised there
            put(exc)
        finally:
            blocks.close()

    reader = threading.Thread(target=produce, name="grpo-tui-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        reader.join()


_END = object()


def _has_long_line(b: bytes | bytearray, max_line: int | None = None, end: int | None = None) -> bool:
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


def iter_lines(path: str, chunk: int = CHUNK) -> Iterator[str]:
    """Complete lines one by one (see iter_line_blocks)."""
    for block in iter_line_blocks(path, chunk):
        yield from block
